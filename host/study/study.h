#pragma once
/// @file study.h
/// Accuracy and performance studies of the tree code: the library half of `octwalk accuracy` and
/// `octwalk profile`, so tests can call it without the command line.
///
///   DirectReference ref = directReference(bodies, 10000, 2, p.epsilon_squared, p.gravitational_constant);
///   for (const AccuracyResult& r : accuracySweep(bodies, expandGrid(p, grid), ref, 1)) r.error.median;
///
///   ProfileResult r = profileForces(bodies, p, 5, 32768, 2);   r.median[Phase::BodyNode];  r.speedup();
///   ProfileResult s = profileOfSteps(bodies, sim.solver(), timeSteps(sim, 5, false), 0, 2);
///   s.stepMedian[StepPhase::Integration];

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "host/reference/error_stats.h"
#include "host/core/params.h"
#include "host/core/phases.h"
#include "host/core/particles.h"
#include "host/solver/solver.h"

namespace octwalk {

// ---------------------------------------------------------------------------------------------
// Accuracy

/// The settings an accuracy sweep crosses (every combination is one setting); by default the one
/// setting of Parameters{}.
struct StudyGrid
{
    std::vector<double> theta{Parameters{}.opening_angle};
    std::vector<Mac> mac{Parameters{}.mac};
    std::vector<int> nLeaf{Parameters{}.n_leaf}, nGroup{Parameters{}.n_group};
    std::vector<bool> quadrupole{Parameters{}.use_quadrupole};
};

/// One Parameters per combination of the grid, the rest taken from base; ordered mac, multipole,
/// n_leaf, n_group outermost and theta innermost, so rows that differ only in theta are adjacent.
/// Each is validated (ParameterError).
std::vector<Parameters> expandGrid(const Parameters& base, const StudyGrid& grid);

/// Exact accelerations and potentials of a set of reference bodies, computed once per study.
struct DirectReference
{
    std::vector<int64_t> index; ///< reference bodies, caller's order, ascending
    std::vector<Vec3d> acc;     ///< G applied, indexed like index
    std::vector<double> pot;    ///< G applied, indexed like index
    Backend backend = Backend::Cpu;
    std::string description; ///< backend and precision, for the outputs
    double seconds    = 0;
    int64_t numBodies = 0;

    bool sampled() const { return int64_t(index.size()) < numBodies; }
};

/// Direct summation over all bodies for every body when n <= sample, else for `sample` bodies
/// drawn by sampleIndices(n, sample, seed).
/// @param[in] backend  Cpu: double throughout (directSum). Gpu: GpuSolver::direct with double
///                     accumulation (float32 positions, masses and results). Auto: Gpu when one
///                     is present. BackendError for Gpu without a device.
/// @param[in] boxSize  > 0: the periodic box; the exact Ewald sum in double on the CPU
///                     (host/reference/ewald_direct.h) whatever the backend
DirectReference directReference(const ParticleSet& bodies, int64_t sample, uint64_t seed, double eps2, double G,
                                Backend backend = Backend::Auto, double boxSize = 0.0);

/// Error and cost of one setting against the reference.
struct AccuracyResult
{
    Parameters params;
    Backend backend = Backend::Cpu; ///< where the tree forces ran
    ErrorStats error;               ///< of |a_tree - a_direct| / |a_direct| over the reference bodies
    std::vector<double> errors;     ///< per reference body, indexed like DirectReference::index
    /// W = 1/2 sum m phi over the reference bodies (all bodies: the potential energy; a sample:
    /// its estimate up to a factor N / sample, which cancels in the relative error).
    double potentialEnergy = 0, referencePotentialEnergy = 0;
    double nodesPerBody = 0, leavesPerBody = 0;
    double hostSeconds = 0, walkSeconds = 0; ///< medians over the repeats
    double walkForcesSeconds = 0;            ///< median of PhaseTimes::walkForces (the walk without its upload)

    /// (W_tree - W_direct) / |W_direct|, signed.
    double potentialError() const;
};

/// Evaluates every setting `repeat` times (>= 1) on the same bodies and measures it against ref.
/// onResult, when given, sees each result as soon as it is ready (for progress output).
std::vector<AccuracyResult> accuracySweep(const ParticleSet& bodies, const std::vector<Parameters>& settings,
                                          const DirectReference& ref, int repeat,
                                          const std::function<void(const AccuracyResult&)>& onResult = {});

// ---------------------------------------------------------------------------------------------
// Profile

/// Memory the two walk passes ask for (bytes requested by the walk, not DRAM traffic: caches
/// serve much of it). Counted exactly with the shared walk (common/walk.h) over every group:
///   per pass and group: group centre + half-size (32 B), the children words of every opened
///   internal cell (2 x U4 = 32 B each) and the nodeMac F4 of every visited entry (16 B each),
///   where visited = accepted nodes + opened leaves + opened internal cells (the root included);
///   pass 1 also writes the group's counts (4 + 4 + 8 B), pass 2 writes 4 B per list entry.
struct WalkTraffic
{
    int64_t numGroups = 0, openedCells = 0, nodeEntries = 0, leafEntries = 0;

    int64_t visitedEntries() const { return nodeEntries + leafEntries + openedCells; }
    double pass1Bytes() const;
    double pass2Bytes() const;
    double bytes() const { return pass1Bytes() + pass2Bytes(); }
};

/// The formula above, as text for the outputs.
extern const char* const kWalkTrafficFormula;

/// Walks every group of the tree once on the CPU (OpenMP) and counts what the walk reads.
WalkTraffic walkTraffic(const TreeView& tree, const GroupView& groups);

/// One direct-summation evaluation timed on a sample of targets, extrapolated to all N targets.
struct DirectTiming
{
    int64_t sample       = 0;
    double sampleSeconds = 0; ///< measured
    double seconds       = 0; ///< sampleSeconds * N / sample (extrapolated, not measured)
    std::string kernel;       ///< which kernel and precision
};

/// Times direct summation of `sample` targets (sampleIndices with seed) from all bodies, on the
/// GPU (GpuSolver::direct, float accumulation like the tree kernels, kernel time from CUDA
/// events, after a warm-up launch) when backend is Gpu, else on the CPU (directSum, double,
/// steady clock).
DirectTiming timeDirect(const ParticleSet& bodies, int64_t sample, uint64_t seed, double eps2, Backend backend);

struct ProfileResult
{
    int64_t n = 0;
    Parameters params;
    Backend backend = Backend::Cpu;
    int counted     = 0;       ///< evaluations in the medians (the warm-up excluded)
    PhaseTimes median;         ///< per phase, the median over the counted evaluations
    double total          = 0; ///< median of (host + walk) per evaluation
    double wall           = 0; ///< median wall time of computeForces (includes reordering to caller order)
    double deviceFraction = 0; ///< median of walk / (host + walk)
    InteractionStats stats;
    WalkTraffic traffic;
    DirectTiming direct; ///< sample == 0 when not measured
    /// Whole simulation steps timed (profileSteps); 0 for force evaluations (profileForces).
    int steps = 0;
    /// Per phase (force evaluation and step phases), the median over the steps; zeros without steps.
    StepTimes stepMedian;
    /// The force error of the last timed step's own forces (its tree: refitted and lagged in a pipelined
    /// run) against double direct summation; count 0 when not measured.
    ErrorStats stepError;

    double nodeGflops() const;          ///< kFlopsPerBodyNode * node interactions / median body-node time
    double leafGflops() const;          ///< kFlopsPerBodyBody * leaf interactions / median body-leaf time
    double walkBytesPerSecond() const;  ///< traffic.bytes() / (median pass 1 + median pass 2)
    double bodiesPerSecond() const;     ///< n / total
    double speedup() const;             ///< direct.seconds / total (0 when not measured)
    double stepBodiesPerSecond() const; ///< n / median step wall time (0 without steps)
};

/// Computes forces `repeat` times (>= 2; the first is a warm-up, not counted) and times direct
/// summation on directSample targets (0: skip).
ProfileResult profileForces(const ParticleSet& bodies, const Parameters& p, int repeat, int64_t directSample,
                            uint64_t seed);

/// The profile of whole simulation steps (host/sim/run.h timeSteps) with the solver that took them:
/// the force medians over the steps' evaluations (wall: the median force_wall), the step phases'
/// medians, interactions and walk traffic of the last step, and direct summation timed on
/// directSample targets (0: skip). InputError when steps is empty.
ProfileResult profileOfSteps(const ParticleSet& bodies, const GravitySolver& solver,
                             const std::vector<StepTimes>& steps, int64_t directSample, uint64_t seed);

} // namespace octwalk
