#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (-fsanitize=fuzzer,address,undefined) in
# build-fuzz and runs each for a bounded time:
#   bash dev/fuzz.sh [SECONDS per target, default 60] [TARGET ...]   (targets: tipsy gadget2 hdf5 cli)
# scripts/test.sh runs it for OCTWALK_FUZZ_SECONDS seconds per target when that is set above 0 (CI leaves it out).
#
# A crash, a sanitizer report, a leak, an uncaught exception, a property violation, an input slower than
# 10 s or an allocation beyond 1 GiB fails the script; libFuzzer leaves the reproducer in
# build-fuzz/artifacts/TARGET/. Copy it into tests/fuzz/regressions/TARGET/ (the FuzzReplay tests replay
# that directory and the seeds in every ordinary test run), fix the code, and re-run. Replay one input:
#   build-fuzz/tests/fuzz/fuzz_TARGET FILE
# Inputs that reach new code are kept in build-fuzz/corpus/TARGET/ for the next run; the committed seeds
# (tests/fuzz/corpus/TARGET/, dev/make_fuzz_corpus.sh) are only read.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=${*:-tipsy gadget2 hdf5 cli}
root=$(pwd)
build=${OCTWALK_FUZZ_BUILD_DIR:-build-fuzz}

command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (OCTWALK_FUZZ_PACKAGES=1 bash scripts/setup.sh installs it)" >&2; exit 1; }
# -O1 -g1, as the sanitizer stage of scripts/test.sh: what the sanitizers recommend, and about half the
# compile time of -O2 -g (the build, not the fuzzing, was most of this stage's 7 minutes in CI).
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOCTWALK_FUZZ=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DOCTWALK_WITH_CUDA=OFF -DOCTWALK_BUILD_TESTS=OFF -DOCTWALK_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target fuzz_targets

# Largest input per target: a few times the largest seed, so counts, markers and offsets can all change.
declare -A max_len=([tipsy]=2048 [gadget2]=2048 [hdf5]=16384 [cli]=512)
export OMP_NUM_THREADS=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=""
for t in $targets; do
  exe="$root/$build/tests/fuzz/fuzz_$t"
  if [ ! -x "$exe" ]; then
    echo "fuzz.sh: fuzz_$t was not built (HDF5 missing?): skipped"
    continue
  fi
  corpus="$root/$build/corpus/$t"
  artifacts="$root/$build/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  seeds=("$root/tests/fuzz/corpus/$t")
  [ -d "$root/tests/fuzz/regressions/$t" ] && seeds+=("$root/tests/fuzz/regressions/$t")
  echo "fuzz.sh: fuzz_$t for $seconds s"
  if ! "$exe" -max_total_time="$seconds" -max_len="${max_len[$t]:-4096}" -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=1024 -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "${seeds[@]}" \
      >"$root/$build/fuzz_$t.log" 2>&1; then
    failed="$failed $t"
    tail -n 60 "$root/$build/fuzz_$t.log"
    echo "fuzz.sh: fuzz_$t FAILED; reproducer: $(ls -t "$artifacts" | head -n 1 | sed "s|^|$artifacts/|")"
  else
    grep -E "^stat::number_of_executed_units|^Done" "$root/$build/fuzz_$t.log" | tr '\n' ' '
    echo
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz.sh: failures in:$failed" >&2
  exit 1
fi
