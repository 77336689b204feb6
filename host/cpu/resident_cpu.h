#pragma once
/// @file resident_cpu.h
/// The CPU twin of device/resident_gpu.h: the state of a run (double positions, velocities and
/// masses in tree order) with the pipeline's operations on it: the fused half kick and drift, the
/// closing half kick, the gather into a new tree order, the refit of a kept topology
/// (host/cpu/refit_cpu.h) followed by the walk and the forces (host/cpu/walk_cpu.h, forces_cpu.h),
/// the diagnostics' sums and the order statistics of the radii. Every operation calls the same
/// common/ functions as the device's, in the same order, so the state after each is the device's bit
/// for bit (the device's forces differ by float round-off: rsqrt and fused multiply-adds in its
/// force kernels). Deterministic: results are bit-identical for any thread count. With a SpanLog
/// that is on, each operation logs its interval on the host's clock (the refit and the walk's phases
/// by their kPhases names), as the device's twin does.

#include <cstdint>
#include <functional>
#include <vector>

#include "common/integrate.h"
#include "common/phases.h"
#include "common/refit.h"
#include "common/span_log.h"
#include "common/tree_view.h"
#include "host/cpu/walk_cpu.h"

namespace octwalk {

/// The sum over caller's indices c in [0, n) of diagnosticTerms of body slot[c], in the fixed blocks
/// and lanes of host/core/parallel.h (interleavedSum, kDiagnosticLanes): equal to Simulation::diagnostics' sums bit
/// for bit.
/// @param[in] pos, vel, mass  the state, tree order
/// @param[in] result          the walk's results (G = 1), tree order
/// @param[in] slot            slot[c] = tree slot of the body with caller's index c
/// @param[in] n               number of bodies
/// @param[in] G               the gravitational constant
/// @param[in] scale           maps the resident state to the run's (StateScale: wrapped positions, velocities)
DiagnosticSums diagnosticSumsCpu(const Vec3d* pos, const Vec3d* vel, const double* mass, const F4* result,
                                 const int32_t* slot, int64_t n, double G, const StateScale& scale = {});

class ResidentCpu
{
public:
    /// Copies the state (tree order of the topology given next).
    /// @param[in] caller  caller[k] = the caller's index of the body in slot k (a permutation of [0, n)): the
    ///                    diagnostics sum in the caller's order, and permute moves it with the bodies
    void setState(const Vec3d* pos, const Vec3d* vel, const double* mass, const int32_t* caller, int64_t n);
    /// Copies the positions and velocities out (n each, tree order).
    void getState(Vec3d* pos, Vec3d* vel) const;
    /// Copies the positions out (the host build reads them).
    void getPositions(Vec3d* pos) const;
    /// The positions predicted `ahead` time on (as they are for ahead = 0), as the device's
    /// ResidentGpu::beginPositionDownload gives them (there asynchronously).
    void beginPositionDownload(Vec3d* pos, double ahead) const;
    /// Nothing to wait for on the host.
    void finishPositionDownload() const {}
    /// Gathers the state (and with results the last results, which TreePM's error control reads) into a new
    /// order: slot k takes what was in slot order[k]; with shift, position k then moves by shiftedByCode(shift[k],
    /// boxSize) (common/integrate.h: the lattice shift that wrapped its build position into the box).
    void permute(const int32_t* order, const uint8_t* shift = nullptr, double boxSize = 0, bool results = false);
    /// Replaces the last results (tree order, G = 1): a restart continues from the checkpoint's.
    void setResults(const F4* results);
    /// Adds TreePM's long-range accelerations and potentials (G = 1, tree order) to the results (addMeshTerm).
    void addMeshForces(const Vec3d* acc, const double* pot);
    /// Copies a packed tree's topology (children, leaf and group ranges, levels, root, depth, MAC
    /// settings); the moments, float bodies and group boxes are the refit's.
    /// @param[in] host    refitView of the packed tree (topology pointers and sizes read)
    /// @param[in] levels  the internal nodes by level
    /// @param[in] tree    the packed tree's view (rootEntry, depth, periodic read)
    void setTopology(const RefitView& host, const RefitLevels& levels, const TreeView& tree);
    /// Refits the topology to the current positions, then walks and evaluates the forces of all
    /// bodies; the results stay here (kick reads them). Returns the interaction totals (self
    /// included); times receives the refit (Phase::Packing), walk and force phases.
    /// With groupTolerance > 0 the refit sets TreePM's group tolerances from the previous results
    /// (treePmGroupTolerance, alpha = groupTolerance). afterRefit (when set) runs between the refit and the walk:
    /// the pipeline checks the drift there (driftInRange), as the device's twin does once its refit is queued.
    /// afterForces (when set) runs after the forces: the pipeline's closing kick, which the device queues before it
    /// waits for the walk's counts.
    InteractionTotals refitAndEvaluate(float eps2, float groupTolerance, PhaseTimes& times,
                                       const std::function<void()>& afterRefit  = {},
                                       const std::function<void()>& afterForces = {});
    /// v += halfStep G acc, x += h v (wrapped into [0, boxSize) when boxSize > 0); returns whether
    /// every position passes positionInRange.
    bool kickDrift(double G, double halfStep, double h, double boxSize);
    /// kickDrift, its result kept for driftInRange (the twin of the device's, which does not wait for it).
    void queueKickDrift(double G, double halfStep, double h, double boxSize);
    /// The result of the last queueKickDrift (true when none is kept), which it forgets.
    bool driftInRange();
    /// v += halfStep G acc; returns whether every position and velocity is finite.
    bool kick(double G, double halfStep);
    /// kick, its result kept for kickFinite (the twin of the device's, which does not wait for it).
    void queueKick(double G, double halfStep);
    /// The result of the last queueKick (true when none is kept), which it forgets.
    bool kickFinite();
    /// The diagnostics' sums (diagnosticSumsCpu) of the current state and results, in the caller's order.
    DiagnosticSums diagnosticSums(double G, const StateScale& scale = {}) const;
    /// The largest |G acc|^2 of the last evaluation's results (largerAccelerationSquared; 0 for no body).
    double largestAccelerationSquared(double G) const;
    /// The rank[k]-th smallest of the bodies' radii about centre (radiusAbout) into out (orderStatistics): the
    /// Lagrangian radii of equal masses at equalMassRanks. False (out untouched) when a radius is NaN.
    bool radiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank, std::vector<double>& out);
    /// radiusOrderStatistics of the current positions, kept for finishRadiusOrderStatistics (the twin of the
    /// device's, which sorts while the next step runs).
    void beginRadiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank);
    /// The radii of the last beginRadiusOrderStatistics into out, or false (out untouched) when a radius was NaN.
    /// std::logic_error without a pending begin.
    bool finishRadiusOrderStatistics(std::vector<double>& out);
    /// The last evaluation's results (acc xyz, potential; G = 1), tree order.
    void getResults(F4* out) const;
    /// The interaction lists of the last evaluation (as ResidentGpu::getLists).
    void getLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset, std::vector<int32_t>& nodeList,
                  std::vector<int32_t>& leafList) const;
    int64_t size() const { return int64_t(pos_.size()); }
    /// Where the operations log their intervals while log->on (nullptr: nowhere); the log outlives
    /// this object or is reset first.
    void setSpanLog(SpanLog* log) { log_ = log; }

private:
    /// slot_[caller_[k]] = k.
    void invertCallers();
    /// Runs work(), logging its interval as `phase` when the log is on.
    template<class Work>
    auto logged(const char* phase, Work work) const;
    void copyTopology(const RefitView& host, const RefitLevels& levels, const TreeView& tree);

    SpanLog* log_ = nullptr;
    std::vector<Vec3d> pos_, vel_, scratchVec_;
    std::vector<double> mass_, scratchMass_;
    std::vector<U4> children_;
    std::vector<I2> leafRange_, groupRange_;
    std::vector<int32_t> internalFirst_;
    /// The caller's index of each slot, and its inverse (the slot of each caller's index).
    std::vector<int32_t> caller_, slot_, scratchIndex_;
    std::vector<Moments> moments_;
    std::vector<F4> nodeMac_, nodeCom_, nodeQuad_, bodies_, groupCenter_, groupHalf_;
    RefitView refit_{};
    TreeView tree_{};
    WalkCounts counts_;
    InteractionLists lists_;
    std::vector<F4> nodeAcc_, result_, scratchResult_;
    /// The radii of radiusOrderStatistics, kept between rows (fresh pages cost their faults).
    std::vector<double> radii_;
    /// What beginRadiusOrderStatistics found, for finishRadiusOrderStatistics.
    enum class PendingRadii
    {
        None,
        Found,
        NotANumber
    };
    PendingRadii pendingRadii_ = PendingRadii::None;
    /// queueKickDrift's and queueKick's results until driftInRange and kickFinite read them.
    bool driftInRange_ = true, kickFinite_ = true;
    std::vector<double> beganRadii_;
};

} // namespace octwalk
