#pragma once
/// @file solver.h
/// The library API: set bodies and parameters, compute accelerations and potentials (tree or
/// direct), evaluate gravity at massless probe points, and read per-phase timings and
/// interaction counts. Results are in the caller's order; G = gravitational_constant.
///
///   octwalk::Parameters p;  p.opening_angle = 0.5;  p.epsilon_squared = 1e-4;
///   octwalk::GravitySolver solver(p);
///   solver.setBodies(pos, mass);              // ids default to 0..N-1
///   solver.computeForces(acc, pot);
///   solver.timings()[Phase::Cells];  solver.stats().nodesPerBody();

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/phases.h"
#include "common/vec.h"
#include "device/gpu_solver.h"
#include "host/tree/octree.h"
#include "host/tree/packed_tree.h"
#include "host/core/params.h"
#include "host/cpu/walk_cpu.h"

namespace octwalk {

class PmMesh;
class GpuMesh;
class WorkerThread;

/// Interaction counts of the last evaluation.
struct InteractionStats
{
    int64_t numTargets = 0, numGroups = 0, numInternal = 0, numLeaves = 0, depth = 0;
    int64_t nodeInteractions = 0; ///< body-node (multipole) interactions
    int64_t leafInteractions = 0; ///< body-body interactions (self excluded)

    double nodesPerBody() const { return numTargets ? double(nodeInteractions) / double(numTargets) : 0; }
    double leavesPerBody() const { return numTargets ? double(leafInteractions) / double(numTargets) : 0; }
};

/// The tree's view of TreePM's split (common/treepm.h) for these parameters (box_size > 0, pm_grid > 0).
ShortRangeView shortRangeView(const Parameters& p);
/// The walk's periodic box under TreePM: the box and shortRangeView, no Ewald table.
PeriodicView treePmPeriodicView(const Parameters& p);

/// Flops counted per interaction, as in the Octgrav paper (Gaburov et al. 2010).
constexpr double kFlopsPerBodyBody = 38;
constexpr double kFlopsPerBodyNode = 70;

/// The backend an evaluation requested as `requested` runs on: Auto is the GPU when one is present,
/// else the CPU; Cpu and Gpu are themselves.
Backend resolveBackend(Backend requested);

/// Whether an acceleration and potential (G applied) are finite: the solver's check of its results.
inline bool finiteResult(const Vec3d& a, double pot)
{
    return std::isfinite(a.x) && std::isfinite(a.y) && std::isfinite(a.z) && std::isfinite(pot);
}

class GravitySolver
{
public:
    explicit GravitySolver(const Parameters& p = Parameters{});
    ~GravitySolver();
    GravitySolver(GravitySolver&&) noexcept;
    GravitySolver& operator=(GravitySolver&&) noexcept;

    /// Validates and stores; takes effect at the next evaluation. pm_grid auto takes automaticPmGrid of the
    /// bodies attached (now and later).
    void setParameters(const Parameters& p);
    /// The parameters in use, pm_grid auto resolved for the bodies attached.
    const Parameters& parameters() const { return params_; }

    /// Copies and validates the bodies (InputError names the first bad body). ids default to 0..N-1;
    /// with unique ids the results do not depend on the input order.
    void setBodies(const std::vector<Vec3d>& pos, const std::vector<double>& mass,
                   const std::vector<uint64_t>& ids = {});

    /// As setBodies, but the solver reads the caller's arrays in place, without a copy: they must stay
    /// alive and unchanged until the next setBodies/attachBodies (an integrator that owns its state
    /// attaches it once per step). ids are required here.
    void attachBodies(const Vec3d* pos, const double* mass, const uint64_t* ids, int64_t n);

    /// As attachBodies, for an integrator that owns its state. Ties and error messages use
    /// bodies.rank when given (host/tree/octree.h). With checked = true the bodies are not validated
    /// again (only N is): the caller vouches that every position passes positionInRange and that the
    /// masses are those an earlier validateBodies accepted (an integrator checks the positions it drifts
    /// in the drift itself).
    /// @param[in] bodies  ids required unless ranks are given (none: ties are broken by rank alone, as by
    ///                    ids that never decrease with the rank); the arrays must stay alive and unchanged until
    ///                    the next attach
    /// @param[in] checked whether the caller has already checked the bodies
    void attachBodies(const BodySpan& bodies, bool checked);

    /// Periodic error control (box_size > 0, err_tol_force_acc > 0; common/mac.h periodicGroupScale): the next
    /// body evaluation takes each group's net force |a_g| from the previous step's accelerations of its bodies
    /// instead of an estimate walk, as GADGET-2's relative criterion takes each particle's old acceleration.
    /// Used by one evaluation only; a later setBodies or attachBodies forgets them. Without them (the first
    /// evaluation of a run, single evaluations) the estimate walk stays.
    /// @param[in] acc acc[i] (xyz, w not read; G = 1, as evaluateInTreeOrder returns them) belongs to body i of
    ///                the bodies attached for the next evaluation; read before its walk writes any result, so it
    ///                may be what evaluateInTreeOrder returned last (the caller keeps it alive until then);
    ///                null: the estimate walk
    void setPreviousAccelerations(const F4* acc);

    /// As above, with accelerations as computeForces returns them (the bodies' order, G applied): copied and
    /// divided by G. InputError at the evaluation when their number is not that of the bodies.
    /// @param[in] acc one per body of the next evaluation
    void setPreviousAccelerations(const std::vector<Vec3d>& acc);

    /// Work for the next body evaluation to run once its tree is built and packed, before the walk: the
    /// distributed evaluation cuts and sends its essential trees there, so that they travel while the tree is
    /// walked. It may read packedTree() until the evaluation returns. Used by one evaluation, then forgotten.
    void setAfterBuild(std::function<void()> work) { afterBuild_ = std::move(work); }

    /// Whether the last body evaluation took its periodic group scales from previous accelerations (else from
    /// the estimate walk, or none).
    bool usedPreviousAccelerations() const { return usedPrevious_; }

    /// Tree accelerations and potentials of all bodies, caller's order.
    void computeForces(std::vector<Vec3d>& acc, std::vector<double>& pot);

    /// As computeForces, but acc[k], pot[k] belong to the k-th body in tree order, body treeOrder()[k] of
    /// the attached arrays: no scatter back to the caller's order (an integrator that keeps its state in
    /// tree order reorders it with treeOrder() instead).
    void computeForcesInTreeOrder(std::vector<Vec3d>& acc, std::vector<double>& pot);

    /// For an integrator that converts the results in its own pass over its bodies (Simulation): builds the
    /// tree and walks it for all bodies, without storing the results anywhere. Result k (acc xyz, potential;
    /// float, G = 1) belongs to the k-th body in tree order, body treeOrder()[k] of the attached arrays; valid
    /// until the next evaluation. The caller checks them with checkTreeOrderResults before using them.
    const F4* evaluateInTreeOrder();

    /// The checks computeForcesInTreeOrder applies to its results, for those of evaluateInTreeOrder: an
    /// InputError naming the body (smallest BodySpan::nameOf) whose result times G is not finite, then one
    /// when softening has left every acceleration below float32's normal range.
    /// @param[in] out          what evaluateInTreeOrder returned
    /// @param[in] anyNotFinite whether the caller found a result times G that is not finite
    void checkTreeOrderResults(const F4* out, bool anyNotFinite) const;
    /// The same checks of results in the attached bodies' own order (out[i]: attached body i, G = 1), e.g. those of
    /// a pipeline started from the attached bodies (host/sim/pipeline.h).
    void checkAttachedOrderResults(const F4* out) const;

    /// Exchanges the copies of the attached positions and masses in tree order that the last tree build made
    /// (hostTree().pos and .mass: bit-identical copies, pos[k] = attached pos[treeOrder()[k]]) with pos and
    /// mass, so that an integrator keeping its bodies in tree order takes them instead of permuting its own.
    /// The tree holds what pos and mass held until its next build (which only writes them); the arrays
    /// attached stay attached: the caller attaches the new ones.
    /// @param[in,out] pos  gets the positions in tree order
    /// @param[in,out] mass gets the masses in tree order
    void swapTreeOrderBodies(std::vector<Vec3d>& pos, std::vector<double>& mass);

    /// order[k] = index in the attached (or set) arrays of the k-th body in tree order, from the last
    /// tree evaluation.
    const std::vector<int32_t>& treeOrder() const { return tree_.order; }

    /// Tree gravity at massless probe points (they feel the bodies, the bodies do not feel them).
    void evaluateAt(const std::vector<Vec3d>& points, std::vector<Vec3d>& acc, std::vector<double>& pot);

    /// Exact direct summation on the chosen backend (double on the CPU) for the listed bodies
    /// (all when targets is empty); acc/pot indexed like targets. In a periodic box (box_size > 0) the
    /// exact Ewald sum of host/reference/ewald_direct.h.
    void computeDirect(const std::vector<int64_t>& targets, std::vector<Vec3d>& acc, std::vector<double>& pot);

    /// The backend the last or next evaluation uses (Auto resolved).
    Backend activeBackend() const;

    /// Phases of the last evaluation: the host build (steady clock), and the walk and forces
    /// (CUDA events on the GPU backend; steady clock in the CPU twin, where upload and download are 0).
    const PhaseTimes& timings() const { return times_; }
    const InteractionStats& stats() const { return stats_; }

    /// The device kernels' variants (benchmarks and twin tests; GpuSolver::setKernelConfig). Throws
    /// ParameterError for a variant that is not built.
    void setGpuKernelConfig(const GpuKernelConfig& config);

    /// How the periodic Ewald correction finds each group's sources (common/ewald.h, EwaldWalkConfig), on
    /// both backends, from the next tree on (benchmarks and twin tests). Throws ParameterError for a negative
    /// minEntries.
    void setEwaldWalkConfig(const EwaldWalkConfig& config);

    /// TreePM: whether the host computes the particle mesh on a thread of its own while the tree is walked
    /// (the default on the GPU backend, whose walk leaves the host's cores free) or after the walk (the default
    /// on the CPU backend, whose walk takes every core). The results are the same bits either way. Elsewhere:
    /// the solver returns the short-range forces only and its caller adds the long range (the bodies of several
    /// ranks share one mesh: host/mpi/distributed_mesh.h).
    enum class MeshSchedule
    {
        Automatic,
        BesideTheWalk,
        AfterTheWalk,
        Elsewhere,
    };
    void setMeshSchedule(MeshSchedule schedule) { meshSchedule_ = schedule; }

    /// TreePM (box_size > 0, pm_grid > 0): wall seconds of the last body evaluation's particle mesh on the host
    /// (on the GPU backend while the device walks the short range, on the CPU backend after the walk, which
    /// timings() holds) and of adding it to the tree's forces; 0 otherwise.
    double meshSeconds() const { return meshSeconds_; }

    /// The Ewald correction's share of timings()[Phase::BodyLeaf] in the last evaluation on the GPU backend
    /// (CUDA events; 0 when isolated or on the CPU).
    double gpuEwaldSeconds() const { return gpuResult_.ewaldSeconds; }
    /// The last evaluation on the GPU backend: its per-group counts and totals (the results are in tree order).
    const GpuEvaluation& gpuResult() const { return gpuResult_; }

    /// Internals of the last evaluation, for tests, studies and the twin comparison.
    const HostTree& hostTree() const { return tree_; }
    const PackedTree& packedTree() const { return packed_; }
    const InteractionLists& cpuLists() const { return lists_; }
    const WalkCounts& cpuCounts() const { return counts_; }

private:
    void buildTree();
    /// params_.pm_grid for the bodies attached when it was given as auto.
    void resolvePmGrid();
    /// InputError naming the body (smallest BodySpan::nameOf) whose result times G is not finite, if any; result k
    /// belongs to attached body attachedIndex(k).
    template<class AttachedIndex>
    void throwFirstNotFinite(const F4* out, AttachedIndex attachedIndex) const;
    /// Sets the periodic group scales from previousAcc_ when there are any (then usedPrevious_), and forgets them.
    void setScalesFromPrevious();
    /// Builds the tree and walks it for all bodies: G = 1 results in tree order, valid until the next
    /// evaluation.
    const F4* evaluateBodies();
    /// The walk and forces on the active backend; returns the results (indexed like targets, G = 1),
    /// valid until the next evaluation.
    F4* evaluateTargets(const TargetView& targets);
    /// TreePM: the mesh's long-range accelerations and potentials (G = 1) of the bodies in tree order, into
    /// meshAcc_ and meshPot_ (the host's mesh) or deviceMesh_ (the device's); its seconds into meshSeconds_. Reads
    /// only the tree's positions and masses, so that it may run beside the device's walk.
    void computeMeshForces();
    /// Whether computeMeshForces runs the device's mesh (pm_backend) rather than the host's.
    bool meshOnDevice() const;
    /// TreePM with the mesh elsewhere: the results are the short range alone, which is zero for bodies that
    /// have no neighbour within the cutoff (so the check that softening has not underflowed them all is not
    /// made).
    bool shortRangeOnly() const;
    /// Whether this evaluation's mesh runs beside the walk (setMeshSchedule).
    bool meshBesideTheWalk() const;
    /// TreePM: adds computeMeshForces' results to out, the tree's short-range results.
    void addMeshForces(F4* out);
    /// The walk and forces on one backend: results in cpuOut_ or gpuResult_.acc, the walk phases of
    /// times_, and the interaction totals (self included) that stats_ is made from.
    InteractionTotals evaluateCpu(const TargetView& targets);
    InteractionTotals evaluateGpu(const TargetView& targets);
    GpuSolver& gpu();

    /// The parameters in use: pm_grid auto resolved for the attached bodies (resolvePmGrid).
    Parameters params_;
    /// pm_grid as given to setParameters: kPmGridAuto takes automaticPmGrid of each set of bodies attached.
    int requestedPmGrid_ = kPmGridAuto;
    /// The bodies evaluated: the solver's own copies (setBodies) or the caller's arrays (attachBodies).
    BodySpan bodies_{nullptr, nullptr, nullptr, 0};
    std::vector<Vec3d> pos_;
    std::vector<double> mass_;
    std::vector<uint64_t> id_;
    bool treeValid_ = false;

    HostTree tree_;
    PackedTree packed_;
    WalkCounts counts_;
    InteractionLists lists_;
    GroupView currentGroups_{};
    std::unique_ptr<GpuSolver> gpu_;
    GpuKernelConfig gpuConfig_;
    EwaldWalkConfig ewaldWalk_;
    MeshSchedule meshSchedule_ = MeshSchedule::Automatic;
    /// Runs computeMeshForces beside the walk; kept, with its OpenMP team, from one evaluation to the next.
    std::unique_ptr<WorkerThread> meshThread_;
    // Result buffers kept from step to step (no per-step allocation or first touch of N-sized arrays).
    std::vector<F4> cpuOut_, cpuNodeAcc_;
    GpuEvaluation gpuResult_;
    /// TreePM's mesh, the host's or the device's (made at the first evaluation that needs it, again when its
    /// parameters or pm_backend change), and its results of the last evaluation.
    std::unique_ptr<PmMesh> mesh_;
    std::unique_ptr<GpuMesh> gpuMesh_;
    std::vector<Vec3d> meshAcc_;
    std::vector<double> meshPot_;
    /// The device's mesh reads its bodies from and writes its results into page-locked arrays.
    struct DeviceMeshArrays
    {
        PinnedVector<Vec3d> pos, acc;
        PinnedVector<double> mass, pot;
    };
    DeviceMeshArrays deviceMesh_;
    double meshSeconds_ = 0;

    /// The next evaluation's previous accelerations (setPreviousAccelerations; G = 1), the caller's or
    /// previousCopy_.
    const F4* previousAcc_ = nullptr;
    std::vector<F4> previousCopy_;
    bool usedPrevious_ = false;
    std::function<void()> afterBuild_;

    PhaseTimes times_;
    InteractionStats stats_;
};

} // namespace octwalk
