#!/usr/bin/env bash
# Installs the Debian packages octwalk builds with (idempotent) and configures build/.
# CUDA is used when nvcc is on the PATH (device code is then built for sm_90 unless
# CMAKE_CUDA_ARCHITECTURES is given); otherwise the CPU-only build has the same program and tests.
set -euo pipefail
cd "$(dirname "$0")/.."
packages="cmake ninja-build g++ gfortran clang-format libboost-program-options-dev libgtest-dev libbenchmark-dev libhdf5-dev libfftw3-dev libopenmpi-dev openmpi-bin"
# The Python module (python/, docs/python.md); matplotlib for scripts/plot_*.py, examples/ and the quickstart's plot.
packages="$packages pybind11-dev python3-dev python3-numpy python3-pytest python3-matplotlib"
# OCTWALK_FUZZ_PACKAGES=1 (scripts/test.sh sets it) adds what the fuzz stage needs: clang, its runtime
# libraries (libFuzzer, ASan, UBSan: only "recommended" by clang, so named here) and LLVM's OpenMP.
# (The AddressSanitizer build uses g++, whose libasan comes with it.)
if [ "${OCTWALK_FUZZ_PACKAGES:-0}" = 1 ]; then
  packages="$packages clang libclang-rt-dev libomp-dev"
fi
missing=""
for p in $packages; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends $missing
fi
build_dir="${OCTWALK_BUILD_DIR:-build}"
# The Python module is built for Debian's python3 (the one python3-numpy serves), whatever else is on the PATH.
python=()
[ -x /usr/bin/python3 ] && python=(-DPython3_EXECUTABLE=/usr/bin/python3)
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${python[@]}" "$@"
# `import octwalk` in any later shell: a .pth file in the user's site directory names the build's python/ folder
# (the module appears there once the build has run). OCTWALK_PYTHON_PATH=0 leaves the user's Python alone.
if [ "${OCTWALK_PYTHON_PATH:-1}" = 1 ] && [ -x /usr/bin/python3 ]; then
  site=$(/usr/bin/python3 -m site --user-site)
  mkdir -p "$site"
  echo "$(cd "$build_dir" && pwd)/python" >"$site/octwalk.pth"
  echo "setup: $site/octwalk.pth puts $(cd "$build_dir" && pwd)/python on python3's path"
fi
