#!/usr/bin/env bash
# Runs the project's checks in order:
#   1. setup: scripts/setup.sh installs what the build needs (the fuzz packages only when fuzzing);
#   2. format check: scripts/check_format.sh against .clang-format;
#   3. build: everything that can be built here in build/ (device code too when nvcc is present);
#   4. tests: every test through ctest, the longest started first (tests/ctest_costs.txt). GPU tests
#      (label gpu) skip without a GPU;
#   5. optional fuzz stage: every libFuzzer target (dev/fuzz.sh, build-fuzz, clang) for
#      OCTWALK_FUZZ_SECONDS seconds each; the seeds and the saved failing inputs replay in both test
#      stages anyway (FuzzReplay.*);
#   6. sanitizer stage: the CPU tests again under AddressSanitizer + UndefinedBehaviorSanitizer
#      (build-asan, g++, no CUDA), less the long runs listed in `slow`. It runs last, so the log ends
#      with ctest's summary.
# Environment:
#   OCTWALK_FUZZ_SECONDS  seconds per fuzz target; 0 (the default) skips the fuzz stage.
#   OCTWALK_ASAN_TESTS    0 skips the sanitizer stage (default 1: it runs).
#   OCTWALK_REQUIRE_GPU   1 makes the GPU tests fail instead of skipping when no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=${OCTWALK_FUZZ_SECONDS:-0}
OCTWALK_FUZZ_PACKAGES=$([ "$fuzz_seconds" = 0 ] && echo 0 || echo 1) bash scripts/setup.sh
bash scripts/check_format.sh
cmake --build build -j "$(nproc)"
# A fresh build directory has no test timings, and ctest then starts the longest tests (minutes) wherever
# they fall in the list, late ones running alone at the end: tests/ctest_costs.txt (the seconds each test
# over 2 s takes on 2 cores, ctest's own CTestCostData format) lets it start them first.
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
  # The previous-accelerations runs and checks other than the restart that carries them
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
  # Pipeline.LagOneWalksAsMuchAsAFreshTreeOnAViolentMerger (interactions only: the merger's pipelined steps),
  # Hermite.PlummerEnergyErrorIsSmallAndFallsWithEta and the comoving CLI's earlier-checkpoint restart.
  slow="$slow|SlimmerTailThanBonsai|PredictedTopologyWalksAboutAsMuchAsAFreshTree|LagOneWalksAsMuchAsAFreshTree|Hermite\\.PlummerEnergyError"
  slow="$slow|RestartFromAnEarlierCheckpointEndsBitIdentical"
  # The pipelined periodic runs' longest comparisons: a comoving run and its restart (the comoving pipelined run is
  # TreePmCli.AComovingRunTakesTheBoxFromItsInput...'s, the restart with a build in flight
  # PipelinePeriodic.RestartIsBitIdenticalAlsoWithABuildInFlight's), a kept topology's forces against a fresh
  # evaluation's and the classic steps (TreePM, comoving) against the pipeline rebuilt every step (both paths run in
  # the other tests).
  slow="$slow|PipelinePeriodic\\.(ComovingRunsArePipelined|KeptTopologiesTakeTheErrorControl|RebuildEveryStepIsTheClassic)"
  # The foreground builds' decisions over a 2^13 and a 2^12 run (Pipeline.RestartIsBitIdenticalWithForegroundSteps
  # runs the foreground build under the sanitizers).
  slow="$slow|Pipeline\\.StepsBuildInTheForegroundWhereLaggedTopologiesWalkMore"
  # The Fortran client (g6.fortran_client) is a separate gfortran program, not part of octwalk_tests; it
  # runs in the first stage.
  slow="$slow|g6\.fortran_client"
  # The 32^3 linear-growth check (growth.paired32, minutes of the octwalk program) runs in the first stage;
  # its code runs under the sanitizers in the comoving tests.
  slow="$slow|growth\.paired32"
  # The far field's tree comparisons (direct sums of 2^14 and two 2^16 trees); every other tree test runs its code,
  # the far field being on by default.
  slow="$slow|FarFieldExpansion\.(TreeWithTheFarField|ProbesAndBodies|PeriodicGroupsThatExpand)"
  # The Ewald walk's and group expansion's comparisons against exact sums and the lattice under the tree; their walk
  # and expansion code runs here in EwaldWalk.ALeafOrCellAcrossTheHalfBox..., the periodic restart and the comoving
  # tests.
  slow="$slow|EwaldWalk\.(CellsAsMultipoles|EveryPathMatches)|EwaldGroup\.(ExpansionMatches|SmallBoxMixes)"
  slow="$slow|PeriodicTree\.PerfectLatticeFeelsAlmostNoForce"
  # The evolved LCDM box against the Ewald sum (167 s under the sanitizers on 2 cores); the snapshot reader
  # and the periodic walk it runs are the other periodic and snapshot tests' code.
  slow="$slow|PeriodicTree\.EvolvedCosmologicalBox"
  # The Ewald walk's cells checked body by body (its walk runs here in EwaldWalk.ALeafOrCellAcrossTheHalfBox... and the
  # periodic restart), the automatic policy's choice of step over several runs (every default run of the pipeline and
  # CLI tests takes that path) and the accuracy command on a periodic input (its Ewald reference runs here in
  # TreePm.*AgainstTheEwaldSum): 56 s of the sanitizer stage's tests on 2 cores.
  slow="$slow|EwaldWalk\.TheDescentsCellsHoldTheirBodies|Pipeline\.TheAutomaticPolicyIsThePipelinedStep"
  slow="$slow|Cli\.AccuracyOfAPeriodicInputIsMeasuredInItsBox"
  # A Hermite binary over 100 orbits (the other Hermite tests run its integrator), the pair force's error across the
  # split scale (every TreePM test evaluates those pairs) and the periodic pipeline's one-against-two-threads run (its
  # restart test runs the same steps).
  slow="$slow|Hermite\.EccentricBinaryKeepsItsElements|TreePm\.PairForceErrorAcrossTheSplitScale"
  slow="$slow|PipelinePeriodic\.IsBitIdenticalForOneAndTwoThreads"
  # -O1 -g1: what the sanitizers recommend, with line numbers in their reports; half the compile time of -O2 -g.
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
    -DOCTWALK_SANITIZE=ON -DOCTWALK_WITH_CUDA=OFF -DOCTWALK_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build build-asan -j "$(nproc)" --target octwalk_tests
  ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1:strict_init_order=1 \
    UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan -j "$(nproc)" -L cpu -E "$slow" --output-on-failure
fi
