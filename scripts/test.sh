#!/usr/bin/env bash
# Sets up, checks the sources' format (.clang-format), builds everything that can be built here
# (device code too when nvcc is present) and runs every test. GPU tests (label gpu) skip without a GPU; OCTWALK_REQUIRE_GPU=1 makes them fail instead.
# Then the two hardening stages (README: Reliability), each skippable:
#   - every libFuzzer target for OCTWALK_FUZZ_SECONDS seconds (dev/fuzz.sh, build-fuzz, clang), when
#     it is set above 0 (default 0: CI leaves it out; the seeds and every input that once failed replay in
#     both test stages, FuzzReplay.*);
#   - the CPU tests again under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan, g++, no
#     CUDA); OCTWALK_ASAN_TESTS=0 skips it. It runs last, so the log ends with ctest's summary.
# From scratch on 2 idle cores it took 19.6 minutes in session 20 (2026-11-23: `CI=true bash .ci/run` on a
# fresh clone, fuzz targets 30 s each, before the slow periodic and comoving runs left the sanitizer
# stage): building everything (CUDA included) and running the 914 tests (4.6 minutes of them testing),
# the fuzz stage (4 targets x 30 s), and the 381 tests of the sanitizer stage (5.7 minutes).
# With 20 s fuzz targets and those runs out of the sanitizer stage: 17.9 minutes. Session 21's tests (979 in the
# first stage, 387 under the sanitizers) made it 22.5 minutes, so the fuzz targets run 5 s each and the
# sanitizer stage leaves out the longest periodic and restart runs whose code its other tests reach: 16.3
# minutes (979 tests in 322 s, the sanitizer stage's 368 in 138 s).
# Session 25's tests made it 27.3 minutes (1636 s on the landing CI); session 26 (serial suite without the longest
# exact-sum comparisons, fuzz build at -O1, tests/ctest_costs.txt, more exact-sum comparisons out of the sanitizer
# stage): 23.9 minutes on a fresh clone here (build 6, first stage 8.5 with 1145 tests in 511 s, fuzz 2.5,
# sanitizer build 3.5 and its 388 tests in 207 s). Still over the 20-minute budget. Session 27 (the Plummer energy
# test at steps of 1/64, the zero-net-force test at 2^12 bodies): 23.5 minutes on a fresh clone of 780461c here
# (1151 tests in 464 s, the sanitizer stage's 388 in 198 s); still over. Session 28: the CPU twin's Ewald
# derivatives unrolled (growth.paired32 189 -> 78 s) and the OpenMP tests with OMP_WAIT_POLICY=passive: 22.2
# minutes (build 6.1, 1153 tests in 329 s, fuzz build 2.1, sanitizer build 4.7 and its 389 tests in 175 s); so
# the fuzz stage (its clang build for 4 x 5 s of fuzzing) left the default and the serial suite kept only the
# sources whose tests reach OpenMP code: 17.2 minutes on a fresh clone of de1d27f here (build 5.6, 1035 tests in
# 283 s, sanitizer build 4.1 and its 389 tests in 148 s).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${OCTWALK_FUZZ_SECONDS:-0}
OCTWALK_FUZZ_PACKAGES=$([ "$fuzz_seconds" = 0 ] && echo 0 || echo 1) bash scripts/setup.sh
bash scripts/check_format.sh
cmake --build build -j "$(nproc)"
# A fresh build directory has no test timings, and ctest then starts the longest tests (minutes) wherever
# they fall in the list, late ones running alone at the end: tests/ctest_costs.txt (the seconds each test
# over 2 s took on the 2-core development machine, ctest's own CTestCostData format) lets it start them first.
mkdir -p build/Testing/Temporary
[ -e build/Testing/Temporary/CTestCostData.txt ] || cp tests/ctest_costs.txt build/Testing/Temporary/CTestCostData.txt
ctest --test-dir build -j "$(nproc)" --output-on-failure

if [ "$fuzz_seconds" != 0 ]; then
  bash dev/fuzz.sh "$fuzz_seconds"
fi

if [ "${OCTWALK_ASAN_TESTS:-1}" != 0 ]; then
  # Only octwalk_tests is built: it holds every CPU suite plus the CLI, snapshot, simulation, study and
  # fuzz-replay tests (the serial twin differs from it only in OpenMP, which the first stage compares;
  # libgomp runs under ASan as it is). Left out here because each takes minutes under the sanitizers and
  # reaches no code that the faster tests do not: the long physics checks
  # Simulation.{PlummerEnergyConservedWithoutDrift, KeplerOrbitKeepsItsElements,
  # ZeroNetForceKeepsTheCentreOfMassInPlace, LeapfrogIsSecondOrder}, Galaxy.ComponentsAndNearEquilibrium,
  # Pipeline.ConservesEnergyAsThePerStepBuildDoes (the other Pipeline tests run the same code),
  # the comoving and periodic runs under the tree (LinearGrowth...UnderTheTree, ComovingRun.ZeldovichPancake...,
  # ...LatticeStaysPutUnderTreeForces, PeriodicTree.ClusteredBox...AtThetasCost, PeriodicErrorControl's thread
  # test: PeriodicTree.UniformBox... and the restart tests run the same code), Pipeline.LagOfTwoSteps... (the
  # other Pipeline tests run its code) and the accuracy sweeps Models/TreeVsDirect.*.
  slow='PlummerEnergyConservedWithoutDrift|KeplerOrbitKeepsItsElements|ZeroNetForceKeepsTheCentreOfMassInPlace'
  slow="$slow|LeapfrogIsSecondOrder|Galaxy\.ComponentsAndNearEquilibrium|TreeVsDirect\.|Pipeline\.ConservesEnergy"
  slow="$slow|LinearGrowth\.ALongWaveGrowsAsTheGrowthFactorUnderTheTree|ZeldovichPancake|LatticeStaysPutUnderTreeForces"
  slow="$slow|ClusteredBoxMatchesTheEwaldSumAtThetasCost|PeriodicErrorControl\.OneAndTwoThreads|Pipeline\.LagOfTwoSteps"
  # Session 21: the previous-accelerations runs and checks other than the restart that carries them
  # (PeriodicErrorControl.RestartCarriesTheLastForcesAndIsBitIdentical stays), the uniform box against the
  # Ewald sum (EwaldGroup.* and PeriodicTree.PerfectLattice... walk the same periodic code), the comoving
  # restart and the caller's-order leapfrog (Simulation.RestartIsBitIdentical and the comoving CLI restart
  # run the same restart code), the Gadget-units CLI run and the Ewald table's fourth derivatives (the
  # interpolated-correction test reads the same table).
  slow="$slow|PeriodicErrorControl\.(GroupScalesFromPrevious|APlainPeriodicRun|ARunIsTheSame|StepsTakeTheGroupForces)"
  slow="$slow|PeriodicTree\.UniformBoxMatchesTheEwaldSum|ComovingRun\.RestartIsBitIdentical"
  slow="$slow|TreeOrderedStateIsTheCallersOrderLeapfrogBitForBit|GadgetUnitsTakeTheirGAndH0|FourthDerivativesMatchDifferences"
  # and the Ewald table's and periodic pair's exact-sum comparisons (EwaldGroup.ExpansionMatches... and
  # PeriodicTree.PerfectLattice... read the same table through the walk), the random-kill restarts
  # (KillSafety.DamagedCheckpoint... runs the same restart code) and the comoving CLI's output list.
  slow="$slow|EwaldTable\\.(InterpolatedCorrection|NodeQuadrupoleTerm)|PeriodicPair\\.BodyInAPerfectLattice"
  slow="$slow|RunsKilledAtRandomTimes|RunWritesSnapshotsAtTheOutputListAndRecordsTheCosmology"
  # and the accuracy comparisons RelativeMac.SlimmerTailThanBonsai, Pipeline.PredictedTopologyWalksAboutAsMuch...,
  # Hermite.PlummerEnergyErrorIsSmallAndFallsWithEta and the comoving CLI's earlier-checkpoint restart.
  slow="$slow|SlimmerTailThanBonsai|PredictedTopologyWalksAboutAsMuchAsAFreshTree|Hermite\\.PlummerEnergyError"
  slow="$slow|RestartFromAnEarlierCheckpointEndsBitIdentical"
  # The Fortran client (g6.fortran_client) is a separate gfortran program, not part of octwalk_tests; it
  # runs in the first stage.
  slow="$slow|g6\.fortran_client"
  # The 32^3 linear-growth check (growth.paired32, minutes of the octwalk program) runs in the first stage;
  # its code runs under the sanitizers in the comoving tests.
  slow="$slow|growth\.paired32"
  # The far field's tree comparisons (direct sums of 2^14 and two 2^16 trees); every other tree test runs its code,
  # the far field being on by default.
  slow="$slow|FarFieldExpansion\.(TreeWithTheFarField|ProbesAndBodies|PeriodicGroupsThatExpand)"
  # Session 26 (this stage took 327 s of a 27-minute CI, its ten longest tests 323 of its 575 CPU-seconds): the
  # Ewald walk's and group expansion's comparisons against exact sums and the lattice under the tree; their walk
  # and expansion code runs here in EwaldWalk.{TheDescentsCellsHoldTheirBodies, ALeafOrCellAcrossTheHalfBox...},
  # the periodic restart and the comoving tests.
  slow="$slow|EwaldWalk\.(CellsAsMultipoles|EveryPathMatches)|EwaldGroup\.(ExpansionMatches|SmallBoxMixes)"
  slow="$slow|PeriodicTree\.PerfectLatticeFeelsAlmostNoForce"
  # Session 29: the evolved LCDM box against the Ewald sum (167 s here); the snapshot reader and the periodic walk
  # it runs are the other periodic and snapshot tests' code.
  slow="$slow|PeriodicTree\.EvolvedCosmologicalBox"
  # -O1 -g1: what the sanitizers recommend, with line numbers in their reports; half the compile time of -O2 -g.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DOCTWALK_SANITIZE=ON -DOCTWALK_WITH_CUDA=OFF -DOCTWALK_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build build-asan -j "$(nproc)" --target octwalk_tests
  ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1 \
    UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan -j "$(nproc)" -L cpu -E "$slow" --output-on-failure
fi
