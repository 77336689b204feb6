#!/usr/bin/env bash
# Packs the build dependencies that a GPU machine without internet access may lack (it has CUDA, CMake
# and ninja but no Boost, GoogleTest, Google Benchmark or FFTW3) from this Debian machine into a CMake
# prefix, .deps/, to copy beside the source tree. Boost travels as the closure of the headers
# program_options needs. A tree copied without .git names its commit in .source-githash, written here too.
# Usage: bash dev/pack_deps.sh   (copy .deps and .source-githash with the tree; there
#        OCTWALK_DEPS=$PWD/.deps bash benchmarks/reproduce_gpu_figures.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
lib=/usr/lib/x86_64-linux-gnu
out=.deps
rm -rf "$out"
mkdir -p "$out/lib/x86_64-linux-gnu/cmake" "$out/include"

cp -a $lib/libbenchmark.so* $lib/libbenchmark_main.a $lib/libboost_program_options.* $lib/libgtest*.a \
      $lib/libgmock*.a $lib/libfftw3.so* "$out/lib/x86_64-linux-gnu/" 2>/dev/null || true
for d in benchmark GTest Boost-1.74.0 BoostDetectToolset-1.74.0.cmake boost_headers-1.74.0 boost_program_options-1.74.0; do
  cp -a "$lib/cmake/$d" "$out/lib/x86_64-linux-gnu/cmake/"
done
cp -a /usr/include/benchmark /usr/include/gtest /usr/include/fftw3.h "$out/include/"
[ -d /usr/include/gmock ] && cp -a /usr/include/gmock "$out/include/"

# The Boost headers that program_options pulls in, found by the preprocessor.
echo '#include <boost/program_options.hpp>' | g++ -std=c++17 -x c++ -M - \
  | tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u | while read -r h; do
    mkdir -p "$out/include/$(dirname "${h#/usr/include/}")"
    cp "$h" "$out/include/${h#/usr/include/}"
  done
# boost/version.hpp and config headers the CMake package checks.
cp /usr/include/boost/version.hpp "$out/include/boost/"
# Debian's Open MPI and the libraries it loads, as packages that dev/gpu_check.sh unpacks with dpkg -x
# into a prefix there (OPAL_PREFIX relocates it), for the distributed tests on GPU ranks.
mkdir -p "$out/openmpi"
(cd "$out/openmpi" && for p in libopenmpi3 openmpi-bin openmpi-common libopenmpi-dev libevent-2.1-7 \
    libevent-core-2.1-7 libevent-pthreads-2.1-7 libhwloc15 libpmix2 libucx0 libfabric1 libibverbs1 librdmacm1 \
    libpsm2-2 libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libxnvctrl0 libmunge2 libltdl7 libcbor0.8; do
  apt-get download "$p" >/dev/null || echo "pack_deps: could not download $p" >&2
done)
git rev-parse --short=12 HEAD >.source-githash 2>/dev/null || true
du -sh "$out"
