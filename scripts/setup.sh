#!/usr/bin/env bash
# Installs the Debian packages octwalk builds with (idempotent) and configures build/.
# CUDA is used when nvcc is on the PATH (device code is then built for sm_90 unless
# CMAKE_CUDA_ARCHITECTURES is given); otherwise the CPU-only build has the same program and tests.
set -euo pipefail
cd "$(dirname "$0")/.."
packages="cmake ninja-build g++ gfortran clang-format libboost-program-options-dev libgtest-dev libbenchmark-dev libhdf5-dev libfftw3-dev libopenmpi-dev openmpi-bin"
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
cmake -S . -B "${OCTWALK_BUILD_DIR:-build}" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
