#pragma once
/// @file pipeline.h
/// The pipelined hybrid step: the state of a run lives with the force backend (the device,
/// device/resident_gpu.h, or its CPU twin, host/cpu/resident_cpu.h) in the tree order of a kept
/// topology. A step is the fused half kick and drift, the refit of the topology to the new positions,
/// the walk and the forces (results stay with the backend) and the closing half kick; nothing of size
/// N crosses to the host. The host builds a new topology only now and then, from positions it
/// downloads for that build, and the backend gathers its state into the new tree order.
///
/// The rebuild policy (rebuildEvery, ForceOptions in host/sim/simulation.h):
///   K = 1  every step, synchronously, from the current positions: the classic per-step host build;
///          the CPU twin then gives the classic Simulation's state bit for bit (tests/unit/test_pipeline.cpp).
///   K >= 2 a topology is adopted every K steps; it is built on a host thread from the state of
///          L (the lag, kRebuildLag unless the constructor says) steps earlier, while the backend keeps
///          stepping on the refitted old topology (a stale topology only makes cells looser: more
///          interactions, never a wrong force).
///   K = 0  automatic, continuous: the step that adopts a topology starts the next build, so one build
///          is always in flight and a topology is adopted every L steps, built L steps earlier (if the
///          host build takes longer than L device steps, the adopting step waits for it).
///          Where the lagged topologies walk much more than fresh ones, a step builds in the foreground
///          instead (foregroundDue): its topology comes from its own drifted positions (on the device: their
///          keys sorted there, as for a lagged build), so that the walk takes a fresh tree's interactions, at
///          the price of the host's build on the step's path (where the lag costs more, a foreground step starts
///          no lagged build but for a step that measures the lag, and the steps after it build in the foreground
///          until one does). A step does so when the last walk of a lagged
///          topology took more than freshRatio (kFreshTreeRatio) times the interactions of the last walk of a
///          topology built from the positions it walked (the start's, unless TreePM's error control had no
///          previous accelerations there, or a foreground step's). Every kLaggedProbeEvery-th step walks a lagged
///          topology again, started lag steps before, and every kFreshProbeEvery-th a fresh one (every
///          kLaggedProbeEvery-th where the lag already costs kFreshRecheckRatio), so that the comparison follows the
///          run (a cosmological box's late steps, a merger's violent phase that ends).
/// A lagged build (K != 1) is made from predicted positions x + t v (common/integrate.h's
/// predictPosition, computed by the backend after a drift, v the velocities of that drift; only the
/// predicted positions are downloaded), t = (L + (S - 1) / 2) h: the middle of the S steps that will walk
/// the topology (S = K, or L for the automatic policy), to O(t^2 a). A Plummer core body moves about half a
/// leaf per step at h = 1/128, N = 2^20, so a topology of x alone already costs about twice a fresh tree's
/// interactions when adopted; aimed at the middle, a topology serving S > 1 steps is as far off in its first
/// step as in its last instead of exact in the first and S - 1 steps off in the last, and a cell's box grows
/// faster than linearly in that mismatch (PipelineStepInfo's interactions). On the device the predicted
/// positions' Morton keys are also sorted there (ResidentGpu::beginPositionDownload), so that the host's
/// build starts from sorted keys (adoptSortedKeys: the order its own sort of those positions gives, which is
/// what the CPU twin's build does). Only the topology (order, cells,
/// groups) comes from the prediction: every step's refit recomputes the moments and boxes from the true
/// positions, so the forces keep the tree's accuracy.
/// Every decision is taken from step numbers and the walks' interaction counts (the same on both backends), never
/// from clocks, so a run is deterministic; with the policy's state in the checkpoint (PipelineCheckpoint) a restart
/// is bit-identical to the uninterrupted run, also with a build in flight.
///
/// With the process's timeline on (host/core/timeline.h: octwalk run --timeline, profile --timeline) a
/// step records what ran when: on lane "host" the stepping thread's phases (kick_drift, wait_build,
/// adopt, download_positions, build_foreground, start_build, evaluate, kick), on lane "host-build" the build's phases
/// (settle, the gathers of the adoption before it; wait_positions, sort, cells, groups, packing, order; wrap_shifts in
/// a periodic box) under the step that started it, and on lane "device" (the CPU twin: "host-walk") the backend's
/// operations (kick_drift, predict,
/// upload_order, permute, upload_topology, refit, the walk's and forces' phases, add_mesh, kick,
/// diagnostics, largest_acceleration, lagrangian_radii on the CPU twin, download_state), with a lagged build's
/// input and output on lane "copy" under the step that started the build (the device's copy stream, beside the
/// walk: sort_keys, download_keys, the build's input, then download_positions, and upload_adoption, the built
/// tree's arrays copied by the build's thread, after which the adoption's upload_order and upload_topology copy
/// nothing and are not logged), the device's lagrangian_radii on lane "rows" (a stream of their own, beside the next
/// step) and the device's TreePM mesh on lane "mesh" (its own stream, beside the refit and the walk). wait_positions is
/// the build's wait for its input (the sorted keys on the GPU, the positions on the CPU twin). Off, no clock is read
/// and no event recorded for it; on or off, the results are the same bits.
///
/// Periodic boxes under TreePM (pm_grid > 0): the tree is the short-range one, and each evaluation adds the mesh's
/// forces on the backend's side (the device's mesh beside the device's state, the host's beside the CPU twin's).
/// The tree is built from the positions wrapped into the box, in the box's cube, as the classic build does; the
/// state is not wrapped while a topology is kept (a body moved across the box would stretch its leaf over the
/// box), but when the next one is adopted, each body by the lattice shift that wrapped its build position
/// (common/integrate.h's wrapShiftCode). With K = 1 the drift wraps, as the classic step does. The walk and the
/// forces take nearest images, which do not care where in its lattice a body sits; outputs are wrapped.
/// TreePM's error control takes the previous evaluation's results, gathered into each new order; a
/// checkpoint keeps them and the unwrapped positions (version 7).
///
/// A comoving run (always periodic) steps with the comoving factors (step(const Factors&)): the state's velocities
/// are the momenta p = a v, so the kicks and drifts are the classic comoving step's operations bit for bit.
///
/// Not supported: tree + Ewald in a periodic box, the relative MAC, direct summation
/// and zero_net_force keep the classic path (ParameterError here).

#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <vector>

#include "common/integrate.h"
#include "common/phases.h"
#include "common/span_log.h"
#include "host/core/params.h"
#include "host/core/worker_thread.h"
#include "host/io/checkpoint.h"
#include "host/solver/solver.h"
#include "host/tree/octree.h"
#include "host/tree/packed_tree.h"
#include "device/pinned_memory.h"

namespace octwalk {

class TimelineLaps;

/// Steps between the positions a topology is built from and the step that adopts it (K >= 2 and
/// automatic; `--rebuild-lag`): the host build overlaps that many whole device steps. The constructor's
/// default; a run's default depends on its size (resolvedRebuildLag, host/sim/simulation.h).
constexpr int64_t kRebuildLag = 2;

/// Where the state lives.
enum class PipelineDevice
{
    Cpu, ///< the CPU twin (host/cpu/resident_cpu.h)
    Gpu, ///< the device (device/resident_gpu.h); BackendError without one
};

/// The pipeline's default freshRatio (K = 0; the file comment): a step builds its topology in the foreground when
/// the last lagged topology's walk took more than this many times the interactions of the last fresh one's. The
/// foreground build costs the host's build on the step's path (on an H200 with 16 host cores, about 55 ms at 2^24
/// bodies from keys sorted on the device: benchmarks/results/periodic/step_timeline) and saves the lagged walk's
/// excess: in a 256^3 LCDM box near z = 1.5 a foreground step takes 0.18-0.19 s, a lagged one walking 1.2-1.25 times
/// its interactions 0.19-0.21 s, and 0.22-0.29 s where the lag costs 1.3-1.7 times
/// (benchmarks/results/periodic/foreground_policy); at z = 0 the lagged topologies walk 1590 + 4030 node + leaf
/// interactions a body against 905 + 1225 for fresh ones (2.6 times). An isolated Plummer sphere's lag-1 topologies
/// walk within 3% of a fresh tree's, and build in the foreground only where the fresh walk is measured again
/// (kFreshProbeEvery).
constexpr double kFreshTreeRatio = 1.25;

/// Every this many steps (step % kLaggedProbeEvery == 0) a run that builds in the foreground walks a lagged
/// topology again, to measure what the lag costs now (the file comment).
constexpr int64_t kLaggedProbeEvery = 16;

/// Every this many steps (step % kFreshProbeEvery == kFreshProbeAt) a run that walks lagged topologies builds in
/// the foreground once, so that the fresh walk it compares with is at most this old: the walks' interactions change
/// over a run (in a 256^3 LCDM box the lagged walks take 3100 a body at z = 44, 3950 at z = 17 and 2730 at z = 3,
/// fresh trees 2780 at z = 3.5, 2320 at z = 1.5 and 2230 at z = 0.7), and a stale reference would hide a lag that
/// doubles the walk. It costs one host build on a step's path per this many steps.
constexpr int64_t kFreshProbeEvery = 32;

/// The step of each kFreshProbeEvery at which the fresh walk is measured: one at which a recheck
/// (kFreshRecheckRatio) would measure it too, never one that measures the lag (kLaggedProbeEvery).
constexpr int64_t kFreshProbeAt = 24;

/// Where the last lagged walk took more than this many times the last fresh one's interactions, yet not
/// kFreshTreeRatio, the fresh walk is measured again every kLaggedProbeEvery steps (step % kLaggedProbeEvery ==
/// kLaggedProbeEvery / 2) instead of every kFreshProbeEvery: a lag on its way up is caught within 16 steps, while
/// runs whose lag costs less (isolated systems: a few percent) pay no more builds. In a 64^3 LCDM box the fresh walk
/// fell from 2830 interactions a body at z = 3.5 to 2190 at z = 0 while the lagged one rose from 2910 to 4250.
constexpr double kFreshRecheckRatio = 1.1;

/// The positions a lagged build is made from (the file comment).
enum class Prediction
{
    None,       ///< the state's own positions when the build starts (what the tests compare against)
    AtAdoption, ///< predicted for the step that adopts the topology (x + L h v)
    MidServed,  ///< predicted for the middle of the steps it serves (x + (L + (S - 1) / 2) h v; the default)
};

/// What a checkpoint keeps of the policy (host/io/checkpoint.h, version 6), so that a restart adopts the
/// same topologies at the same steps: the positions (caller's order) the current topology was built
/// from, and those of a build in flight with the step that adopts it; for a lagged build these are the
/// predicted positions, so the restart builds from them without predicting again. The interaction
/// counts are the foreground policy's (foregroundDue): freshInteractions of the last walk of a topology built
/// from the positions it walked, lastInteractions of the last walk of a lagged one.
using PipelineCheckpoint = PipelineFields;

/// The per-step counters a benchmark and timing.csv read.
struct PipelineStepInfo
{
    PhaseTimes times;        ///< refit (Phase::Packing), walk and forces of the last step
    double buildSeconds = 0; ///< host build of the topology adopted in the last step (0: none)
    double waitSeconds  = 0; ///< time the last step waited for that build (0 when it overlapped)
    /// TreePM: the mesh's forces of the last evaluation after the tree's, on the host's clock (the device's mesh runs
    /// beside the walk: its wait and the addition; the host's: all of it)
    double meshSeconds = 0;
    bool rebuilt       = false;
    /// The last step built its topology in the foreground, from its own positions (the file comment).
    bool foreground      = false;
    int64_t interactions = 0; ///< node + leaf interactions of the last walk (self included)
    /// The last walk's body-node and body-body interactions (self excluded, as InteractionStats counts
    /// them), from the backend's pass 1 counts: deterministic, the same on both backends.
    int64_t nodeInteractions = 0, leafInteractions = 0;
    /// Steps since the walked topology was adopted (0: adopted in this step, or by start/restore).
    int64_t stepsSinceRebuild = 0;
};

/// Whether TreePM's mesh (pm_backend) runs where the pipeline keeps the state (backend), as the pipelined step
/// of a periodic box needs; false for an isolated run or tree + Ewald.
bool pipelineMeshBesideState(const Parameters& p);

class Pipeline
{
public:
    /// ParameterError for a rebuildEvery < 0 and for what the pipeline does not support (see the file
    /// comment); BackendError for PipelineDevice::Gpu without a device.
    /// @param predict  where lagged topologies are built from (Prediction; the file comment)
    /// @param lag      steps between a lagged build's positions and its adoption (file comment): 1 to
    ///                 rebuildEvery (ParameterError otherwise)
    /// @param freshRatio  K = 0: how many times a fresh topology's interactions a lagged one's walk may take before
    ///                 steps build in the foreground (the file comment; 0: never). ParameterError unless 0 or >= 1.
    Pipeline(const Parameters& p, int64_t rebuildEvery, PipelineDevice device,
             Prediction predict = Prediction::MidServed, int64_t lag = kRebuildLag,
             double freshRatio = kFreshTreeRatio);
    ~Pipeline();
    Pipeline(const Pipeline&)            = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    /// Takes the state (any order: callerIndex[k] = caller's index of slot k), builds a topology from
    /// its positions and evaluates the forces: step is the run's current step number.
    void start(const Vec3d* pos, const Vec3d* vel, const double* mass, const uint64_t* id, const int32_t* callerIndex,
               int64_t n, int64_t step);
    /// As start, but the topology (and a build in flight) come from a checkpoint. A periodic run's (box_size > 0)
    /// takes its positions from c.statePos (pos holds them wrapped) and its last results (caller's order, G = 1)
    /// from results instead of evaluating again (InputError without them): TreePM's error control reads the
    /// results of the step before, which a new evaluation would not reproduce.
    void restore(const Vec3d* pos, const Vec3d* vel, const double* mass, const uint64_t* id, const int32_t* callerIndex,
                 int64_t n, int64_t step, const PipelineCheckpoint& c, const std::vector<F4>& results = {});

    /// One kick-drift-kick step of length h. InputError naming the body (smallest caller's index)
    /// whose position leaves the coordinate range or whose state is not finite.
    void step(double h);
    /// One step of a comoving run: the state's velocities are the momenta p = a v, and the kick and drift factors
    /// (host/sim/comoving_step.cpp) take the place of h / 2, h, h / 2.
    struct Factors
    {
        double kickOpen, drift, kickClose;
        float eps2;           ///< the softening of this step's evaluation (comoving: at the step's new a)
        double velocityScale; ///< the outputs' velocity per state velocity (comoving: 1 / a at the step's end)
    };
    void step(const Factors& f);
    /// The softening and velocity factor of the evaluation start or restore makes and of the outputs (comoving:
    /// at the run's a; the parameters' epsilon_squared and 1 until set).
    void setScales(float eps2, double velocityScale);

    /// Threads of the background build's parallel regions (K != 1), from the next build on: k > 0 that many,
    /// 0 the default: one fewer than the constructing thread's regions get (at least 1), so that the stepping
    /// thread keeps a core. The build's result does not depend on it. Why one fewer: on the H200 host (16 cores,
    /// 2^22, lag 2; measured 2026-11-27) the stepping thread woke up to 7 ms after the device had
    /// finished a step in which the build's 16 threads held the 16 cores, and the steady steps took 29.3 ms on
    /// average against 27.2 ms with 15 build threads. BM_GpuPipelineStep's fifth argument sets how many fewer
    /// than all. ParameterError for k < 0.
    void setBuildThreads(int threads);

    /// Positions (wrapped into a periodic box) and velocities (times the velocity factor) in the caller's order
    /// (index = caller's index), n each.
    void copyState(Vec3d* pos, Vec3d* vel);
    /// The state's own velocities (a comoving run's momenta) in the caller's order, n.
    void copyMomenta(Vec3d* vel);
    /// The largest |a|^2 (G applied) of the last walk's accelerations: a comoving run's step criterion.
    double largestAccelerationSquared();
    /// The last walk's accelerations (G applied) in the caller's order, n.
    void copyAccelerations(Vec3d* acc);
    /// The diagnostics' sums in the caller's order, as Simulation::diagnostics adds them.
    DiagnosticSums diagnosticSums();
    /// The rank[k]-th smallest of the bodies' radii about centre (radiusAbout) into out, found where the state is:
    /// only the radii cross to the host. False (out untouched) when a radius is NaN.
    bool radiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank, std::vector<double>& out);
    /// radiusOrderStatistics in two halves: the begin reads the current positions, and the device sorts the radii
    /// while the next steps run (the CPU twin finds them at once); the finish waits for them.
    void beginRadiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank);
    bool finishRadiusOrderStatistics(std::vector<double>& out);
    /// The policy's state for a checkpoint (with a periodic run's own positions in statePos).
    PipelineCheckpoint checkpoint() const;
    /// Whether a checkpoint keeps the last results too (resultsByCaller): a periodic run's restore needs them.
    bool checkpointsResults() const;
    /// The last walk's results (G = 1) in the caller's order.
    std::vector<F4> resultsByCaller();

    const PipelineStepInfo& lastStep() const { return last_; }
    /// The last walk's interactions and the shape of its topology, as GravitySolver::stats() gives them
    /// for a classic evaluation (timing.csv's and octwalk profile's interactions per body).
    InteractionStats stats() const;
    int64_t rebuilds() const { return rebuilds_; }
    /// Steps that built their topology in the foreground (the file comment), since the start or restore.
    int64_t foregroundBuilds() const { return foregroundBuilds_; }
    int64_t stepIndex() const { return step_; }
    /// Results (acc, potential; G = 1) and lists of the last walk, tree order (twin comparisons).
    void getResults(std::vector<F4>& out);
    void getLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset, std::vector<int32_t>& nodeList,
                  std::vector<int32_t>& leafList);
    /// The state's owner: the CPU twin or the device (pipeline.cpp).
    class Backend;

private:
    /// A topology and the positions it was built from (predicted, for a lagged build), in the order the
    /// state had when they were taken (the masses, ids and caller's indices of that order are the
    /// host's mass_, id_ and callerIndex_, which only the adoption of this topology changes).
    struct Topology
    {
        PinnedVector<Vec3d> pos; ///< pinned: the device copies into them while it keeps stepping
        /// The Morton keys of pos sorted on the device, and their indices into pos (presorted: the build
        /// starts from them, adoptSortedKeys; else it sorts pos itself, to the same order).
        PinnedVector<uint64_t> sortedKeys;
        PinnedVector<int32_t> sortedIndex;
        bool presorted = false;
        /// Built on the step's path (a foreground or classic build): the adoption's masses (presorted), ids and
        /// caller's indices in the new order are gathered after it, beside the step's walk (settleAdoption),
        /// instead of by the build.
        bool onStepPath = false;
        HostTree tree;
        PackedTree packed;
        /// The host's view of the state in the new order (ids, caller's indices), prepared by the build (or, on
        /// the step's path, by settleAdoption) so that the adoption only swaps them in.
        std::vector<uint64_t> sortedId;
        std::vector<int32_t> sortedRank;
        /// The tree order again, pinned: the adoption's upload of it is one DMA transfer.
        PinnedVector<int32_t> order;
        /// A periodic run's positions wrapped into the box, which the build sorts, and the lattice shift of
        /// each body's build position in the new order (wrapShiftCode), which the adoption applies to the state.
        std::vector<Vec3d> wrapped;
        PinnedVector<uint8_t> shift;
        /// Presorted in a periodic box: each position's lattice shift in the order of pos, from the device.
        PinnedVector<uint8_t> positionShift;
        double seconds = 0;
    };

    void take(const Vec3d* pos, const Vec3d* vel, const double* mass, const uint64_t* id, const int32_t* callerIndex,
              int64_t n, int64_t step);
    /// Sizes t's positions (the caller fills them).
    void snapshot(Topology& t) const;
    /// The topology adopted before the current one (its buffers reused), or a new one.
    std::unique_ptr<Topology> spareTopology();
    /// Builds t's topology; its phases go on the timeline under `step` (the step that asked for it).
    void build(Topology& t, int64_t step) const;
    /// A periodic run's t.shift from t's build positions and order (after the build, once the positions are there).
    void wrapShifts(Topology& t) const;
    /// t's build positions as the build takes them: wrapped into a periodic run's box (into t.wrapped).
    const Vec3d* inTheBox(Topology& t) const;
    /// Has the backend copy t's order, shifts and topology ahead of their adoption (the build's thread, once t is
    /// built: adopt's arrays).
    void stage(Topology& t) const;
    /// Gathers the state into t's order and hands t's topology to the backend; t becomes current. With shift,
    /// a periodic run's bodies move by the shifts that wrapped their build positions.
    void adopt(std::unique_ptr<Topology>& t, bool shift = true);
    /// After the adoption of a topology built on the step's path: gathers the host's masses, ids and caller's
    /// indices into its order and swaps them in, or waits for the build's thread that does (launchBuild); nothing
    /// otherwise. The step calls it once the forces are queued, before anything else reads them: the mesh's
    /// masses, the state's copies, an error's names.
    void settleAdoption();
    /// settleAdoption's gathers of mass_, id_ and callerIndex_ into current_'s order, then the swap.
    void gatherAdoption();
    /// gatherAdoption on the build's thread, its outcome for settleAdoption.
    void settleOnThisThread();
    void checkRestorable(const PipelineCheckpoint& c, const std::vector<F4>& results, int64_t n) const;
    void restoreResults(const std::vector<F4>& byCaller);
    /// How the resident state maps to the run's (wrapped positions, velocities from comoving momenta).
    StateScale stateScale() const;
    /// Snapshots the state into next_ (a topology a foreground step left unadopted, or a spare) and queues the
    /// download of the positions predicted `ahead` on (predictionAhead; 0: the state's own); launchBuild then builds
    /// it on a thread.
    void queueBuildInputs(double ahead);
    /// Whether the step being made builds its topology in the foreground (the file comment): K = 0, no lagged build
    /// is on its way for a later step, and either the step measures a fresh walk again, or it does not measure a
    /// lagged one and either no lagged build is on its way (after the start's) or lagCostsMore.
    bool foregroundDue() const;
    /// Builds the step's topology from its own drifted positions and adopts it, the stepping thread waiting.
    void buildInForeground(TimelineLaps& host);
    /// Whether a build started at `step` would be adopted by a step that measures the lag (kLaggedProbeEvery).
    bool lagMeasuredAfter(int64_t step) const;
    /// Whether the last lagged walk took more than freshRatio_ times the last fresh one's interactions.
    bool lagCostsMore() const;
    /// TreePM: starts the mesh of the state before the foreground build's adoption (meshStarted_), the build running.
    void startMeshBesideTheBuild();
    /// How far ahead of the state a lagged build's positions are predicted (the file comment).
    double predictionAhead(double h) const;
    void launchBuild(int64_t adoptStep);
    void joinBuild();
    bool buildDue() const;
    /// The refit, the walk and, under TreePM, the mesh's forces; afterRefit runs once the refit is queued,
    /// afterForces once the tree's forces are (Backend::refitAndEvaluate). The device's mesh starts after
    /// afterRefit, on a stream of its own beside the walk, and is added after the tree's forces.
    void evaluate(const std::function<void()>& afterRefit = {}, const std::function<void()>& afterForces = {});
    /// Waits for the drift's range check (Backend::driftInRange); InputError naming the body out of range.
    void checkDrift();
    /// Lets the backend log its operations, under `step`, when the timeline is on.
    void beginSpans(int64_t step);
    /// Moves what the backend logged onto the timeline.
    void recordSpans();
    /// InputError naming the body with the smallest caller's index that fails ok(pos, vel).
    template<class Ok>
    [[noreturn]] void throwBadBody(Ok ok, const char* what);

    Parameters params_;
    int64_t every_, lag_;
    Prediction predict_;
    double freshRatio_;
    double box_; ///< the periodic box's side, 0 for an isolated run
    bool treePm_;
    /// TreePM's error control's alpha (err_tol_force_acc; 0: off).
    float groupTolerance_;
    /// Whether the backend holds results of this state (the error control's previous accelerations).
    bool hasResults_ = false;
    /// The mesh of this step's forces was started before its adoption (startMeshBesideTheBuild).
    bool meshStarted_     = false;
    double velocityScale_ = 1;
    std::vector<Vec3d> stateScratch_[2]; ///< copyState's positions and velocities in the backend's order
    float eps2_;
    std::unique_ptr<Backend> backend_;
    /// What the backend logs for the timeline, and the lane of its own work there.
    SpanLog spans_;
    const char* backendLane_;
    int64_t n_ = 0, step_ = 0;
    /// The host's copy of what does not change in a step, in the backend's tree order.
    std::vector<double> mass_;
    std::vector<uint64_t> id_;
    std::vector<int32_t> callerIndex_;
    /// current_ was adopted on the step's path and mass_, id_ and callerIndex_ are still in the order before it.
    bool settlePending_ = false;
    /// The gathers of a pending adoption handed to the next build's thread, which needs them first: settleAdoption
    /// waits for them there.
    std::promise<void> settled_;
    std::future<void> settling_;
    std::unique_ptr<Topology> current_, next_, spare_;
    WorkerThread builder_;
    /// Threads of the build's parallel regions (setBuildThreads): one fewer than the constructing thread's by default.
    int buildThreads_;
    std::exception_ptr buildError_;
    bool inFlight_        = false;
    int64_t adoptStep_    = -1;
    bool adoptedThisStep_ = false;
    /// The walk of this step takes a topology built from the positions it walks (start, K = 1, foreground steps).
    bool walkFresh_ = false;
    /// The interactions (self included) of the last walk of a topology built from the positions it walked, and of
    /// the last walk of any other (lagged, or refitted since): foregroundDue compares them.
    int64_t lastRebuildStep_ = 0, freshInteractions_ = 0, lastInteractions_ = 0, rebuilds_ = 0;
    int64_t foregroundBuilds_ = 0;
    PipelineStepInfo last_;
};

} // namespace octwalk
