#!/usr/bin/env bash
# On a GPU machine without internet access, from a tree copied with .deps/ and .source-githash (dev/pack_deps.sh):
# builds with CUDA and MPI, runs the GPU suite and the MPI suite, and runs the same 2-rank simulation with GPU
# ranks and CPU-twin ranks (their energies should agree to rounding). Results go to OUT (default ./gpu_check).
# Usage: bash dev/gpu_check.sh [OUT]   (OCTWALK_BUILD_DIR: the build directory, default build)
set -o pipefail
cd "$(dirname "$0")/.."
OUT=$(mkdir -p "${1:-gpu_check}" && cd "${1:-gpu_check}" && pwd)
source dev/device_env.sh
BUILD=${OCTWALK_BUILD_DIR:-build}
M=$OMPI_ROOT
{ nvidia-smi -L; nproc; git_hash=$(cat .source-githash); echo "tree $git_hash"; mpirun --version | head -1; } > $OUT/machine.txt 2>&1
cmake -S . -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DMPI_CXX_COMPILER=$M/usr/bin/mpicxx.openmpi -DMPIEXEC_EXECUTABLE=$M/usr/bin/mpirun.openmpi > $OUT/build.log 2>&1 &&
  cmake --build $BUILD -j16 >> $OUT/build.log 2>&1
echo "build: $?"; grep -iE 'mpi' $OUT/build.log | head -3
OCTWALK_REQUIRE_GPU=1 timeout 300 ctest --test-dir $BUILD -L gpu -j4 --output-on-failure > $OUT/ctest_gpu.log 2>&1
echo "gpu suite: $? $(grep -E 'tests passed|tests failed' $OUT/ctest_gpu.log)"
timeout 120 ctest --test-dir $BUILD -L mpi --output-on-failure > $OUT/ctest_mpi.log 2>&1
echo "mpi suite: $? $(grep -E 'tests passed|tests failed' $OUT/ctest_mpi.log)"
R=$OUT/ranks; mkdir -p $R
for b in cpu gpu; do
  /usr/bin/time -f "%e s" timeout 200 mpirun -q -np 2 $BUILD/octwalk run --model plummer --n 65536 --seed 3 --t-end 0.25 --dt 0.015625 \
    --backend $b --energy-every 1 --output-dir /tmp/run_$b > $R/run_np2_$b.txt 2>&1
  echo "np2 $b: $?"; cp /tmp/run_$b/energy.csv $R/energy_np2_$b.csv; cp /tmp/run_$b/timing.csv $R/timing_np2_$b.csv
done
timeout 100 $BUILD/octwalk run --model plummer --n 65536 --seed 3 --t-end 0.25 --dt 0.015625 --backend gpu --energy-every 1 \
  --output-dir /tmp/run_np1 > $R/run_np1_gpu.txt 2>&1; echo "np1 gpu: $?"; cp /tmp/run_np1/energy.csv $R/energy_np1_gpu.csv
for f in $R/energy_np2_cpu.csv $R/energy_np2_gpu.csv $R/energy_np1_gpu.csv; do echo "$f: $(tail -n 1 "$f")"; done
