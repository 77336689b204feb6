#include "host/sim/pipeline.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include "common/errors.h"
#include "device/resident_gpu.h"
#include "host/core/parallel.h"
#include "host/core/timeline.h"
#include "host/core/timer.h"
#include "host/cpu/resident_cpu.h"
#include "host/pm/pm_mesh.h"

namespace octwalk {

/// The two twins behind one interface: ResidentCpu and ResidentGpu have the same methods.
class Pipeline::Backend
{
public:
    virtual ~Backend() = default;
    virtual void setState(const Vec3d* pos, const Vec3d* vel, const double* mass, const int32_t* caller, int64_t n) = 0;
    virtual void getState(Vec3d* pos, Vec3d* vel)                                                                   = 0;
    virtual void getPositions(Vec3d* pos)                                                                           = 0;
    /// With keys and index, also the sorted keys of those positions (ResidentGpu); false when the
    /// backend does not sort them (the CPU twin: the build sorts, with the same result).
    /// And in a periodic box each position's lattice shift (ResidentGpu::beginPositionDownload's shiftCodes).
    virtual bool beginPositionDownload(Vec3d* pos, double ahead, uint64_t* keys, int32_t* index, double boxSize,
                                       uint8_t* shiftCodes) = 0;
    /// Whether beginPositionDownload sorts the keys (the device) or leaves that to the build (the CPU twin).
    virtual bool sortsKeys() const        = 0;
    virtual void finishPositionDownload() = 0;
    /// Waits for the sorted keys only (beginPositionDownload returned true).
    virtual void finishSortedKeysDownload()                                                        = 0;
    virtual void permute(const int32_t* order, const uint8_t* shift, double boxSize, bool results) = 0;
    virtual void setResults(const F4* results)                                                     = 0;
    /// TreePM: makes the mesh of p's settings on the backend's side (the host's for the CPU twin, the device's).
    virtual void setMesh(const Parameters& p) = 0;
    /// Adds the mesh's forces of the state (masses: the host's copy, tree order) to the results of the evaluation
    /// whose afterRefit called startMeshForces: the device's mesh starts there and runs beside the walk, the host's
    /// is computed here.
    virtual void startMeshForces() = 0;
    /// startMeshForces of the state before a foreground step's adoption, beside the host's build: the device's mesh
    /// adds its results through the adoption's order; the host's is computed at finish, as always.
    virtual void startMeshForcesBeforeAdoption()                                                     = 0;
    virtual void finishMeshForces(const double* mass)                                                = 0;
    virtual void setTopology(const RefitView& host, const RefitLevels& levels, const TreeView& tree) = 0;
    /// The device copies the next adoption's arrays while it walks (ResidentGpu::stageAdoption; from the build's
    /// thread); the CPU twin has nothing to copy.
    virtual void stageAdoption(const int32_t* order, const uint8_t* shift, const RefitView& host,
                               const TreeView& tree)                                               = 0;
    virtual InteractionTotals refitAndEvaluate(float eps2, float groupTolerance, PhaseTimes& times,
                                               const std::function<void()>& afterRefit,
                                               const std::function<void()>& afterForces)           = 0;
    virtual void queueKickDrift(double G, double halfStep, double h, double boxSize)               = 0;
    virtual bool driftInRange()                                                                    = 0;
    virtual void queueKick(double G, double halfStep)                                              = 0;
    virtual bool kickFinite()                                                                      = 0;
    virtual DiagnosticSums diagnosticSums(double G, const StateScale& scale)                       = 0;
    virtual double largestAccelerationSquared(double G)                                            = 0;
    virtual void beginRadiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank) = 0;
    virtual bool finishRadiusOrderStatistics(std::vector<double>& out)                             = 0;
    virtual void getResults(F4* out)                                                               = 0;
    virtual void getLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset,
                          std::vector<int32_t>& nodeList, std::vector<int32_t>& leafList)          = 0;
    virtual void setSpanLog(SpanLog* log)                                                          = 0;
};

namespace {

template<class Resident>
class BackendOf final : public Pipeline::Backend
{
public:
    void setState(const Vec3d* pos, const Vec3d* vel, const double* mass, const int32_t* caller, int64_t n) override
    {
        r_.setState(pos, vel, mass, caller, n);
    }
    void getState(Vec3d* pos, Vec3d* vel) override { r_.getState(pos, vel); }
    void getPositions(Vec3d* pos) override { r_.getPositions(pos); }
    bool sortsKeys() const override { return std::is_same_v<Resident, ResidentGpu>; }
    bool beginPositionDownload(Vec3d* pos, double ahead, uint64_t* keys, int32_t* index, double boxSize,
                               uint8_t* shiftCodes) override
    {
        if constexpr (std::is_same_v<Resident, ResidentGpu>)
        {
            r_.beginPositionDownload(pos, ahead, keys, index, boxSize, shiftCodes);
            return true;
        }
        else
        {
            r_.beginPositionDownload(pos, ahead);
            return false;
        }
    }
    void finishPositionDownload() override { r_.finishPositionDownload(); }
    void finishSortedKeysDownload() override
    {
        if constexpr (std::is_same_v<Resident, ResidentGpu>) r_.finishSortedKeysDownload();
        else r_.finishPositionDownload();
    }
    void permute(const int32_t* order, const uint8_t* shift, double boxSize, bool results) override
    {
        r_.permute(order, shift, boxSize, results);
    }
    void setResults(const F4* results) override { r_.setResults(results); }
    void setMesh(const Parameters& p) override { keepMeshOf(mesh_, p); }
    void startMeshForces() override
    {
        if constexpr (std::is_same_v<Resident, ResidentGpu>) r_.startMeshForces(*mesh_);
    }
    void startMeshForcesBeforeAdoption() override
    {
        if constexpr (std::is_same_v<Resident, ResidentGpu>) r_.startMeshForcesBeforeAdoption(*mesh_);
    }
    void finishMeshForces(const double* mass) override
    {
        if constexpr (std::is_same_v<Resident, ResidentGpu>) r_.finishMeshForces(*mesh_);
        else
        {
            // The host's mesh takes the positions in the box: they may have drifted out of it since the last
            // adoption (in the box, the copy is the state's own, so a rebuild every step gives the classic bits).
            const int64_t n = r_.size();
            meshPos_.resize(size_t(n));
            r_.getPositions(meshPos_.data());
            const double L = mesh_->boxSize();
#pragma omp parallel for schedule(static)
            for (int64_t k = 0; k < n; ++k) meshPos_[size_t(k)] = wrapPosition(meshPos_[size_t(k)], L);
            mesh_->computeForces(meshPos_.data(), mass, n, meshAcc_, meshPot_);
            r_.addMeshForces(meshAcc_.data(), meshPot_.data());
        }
    }
    void setTopology(const RefitView& host, const RefitLevels& levels, const TreeView& tree) override
    {
        r_.setTopology(host, levels, tree);
    }
    void stageAdoption(const int32_t* order, const uint8_t* shift, const RefitView& host, const TreeView& tree) override
    {
        if constexpr (std::is_same_v<Resident, ResidentGpu>) r_.stageAdoption(order, shift, host, tree);
    }
    InteractionTotals refitAndEvaluate(float eps2, float groupTolerance, PhaseTimes& times,
                                       const std::function<void()>& afterRefit,
                                       const std::function<void()>& afterForces) override
    {
        return r_.refitAndEvaluate(eps2, groupTolerance, times, afterRefit, afterForces);
    }
    void queueKickDrift(double G, double halfStep, double h, double boxSize) override
    {
        r_.queueKickDrift(G, halfStep, h, boxSize);
    }
    bool driftInRange() override { return r_.driftInRange(); }
    void queueKick(double G, double halfStep) override { r_.queueKick(G, halfStep); }
    bool kickFinite() override { return r_.kickFinite(); }
    DiagnosticSums diagnosticSums(double G, const StateScale& scale) override { return r_.diagnosticSums(G, scale); }
    double largestAccelerationSquared(double G) override { return r_.largestAccelerationSquared(G); }
    void beginRadiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank) override
    {
        r_.beginRadiusOrderStatistics(centre, rank);
    }
    bool finishRadiusOrderStatistics(std::vector<double>& out) override { return r_.finishRadiusOrderStatistics(out); }
    void getResults(F4* out) override { r_.getResults(out); }
    void getLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset, std::vector<int32_t>& nodeList,
                  std::vector<int32_t>& leafList) override
    {
        r_.getLists(nodeOffset, leafOffset, nodeList, leafList);
    }
    void setSpanLog(SpanLog* log) override { r_.setSpanLog(log); }

private:
    /// The TreePM mesh on the backend's side: the device's beside the device's state, the host's beside the twin's.
    using Mesh = std::conditional_t<std::is_same_v<Resident, ResidentGpu>, GpuMesh, PmMesh>;
    Resident r_;
    std::unique_ptr<Mesh> mesh_;
    std::vector<Vec3d> meshPos_, meshAcc_;
    std::vector<double> meshPot_;
};

/// One thread fewer than this thread's parallel regions get (at least 1): the stepping thread keeps a core
/// (Pipeline::setBuildThreads).
int defaultBuildThreads() { return std::max(1, maxThreads() - 1); }

void checkSupported(const Parameters& p, int64_t rebuildEvery, int64_t lag, double freshRatio)
{
    if (!(freshRatio == 0 || (freshRatio >= 1 && std::isfinite(freshRatio))))
    {
        throw ParameterError("the pipeline's fresh-tree ratio " + std::to_string(freshRatio) +
                             " is invalid: must be 0 (never build in the foreground) or a finite number >= 1");
    }
    if (lag < 1 || (rebuildEvery >= 2 && lag > rebuildEvery))
    {
        throw ParameterError("option --rebuild-lag = " + std::to_string(lag) + " is invalid for --rebuild-every " +
                             std::to_string(rebuildEvery) + ": must be >= 1 and at most the rebuild interval");
    }
    if (rebuildEvery < 0)
    {
        throw ParameterError("option --rebuild-every = " + std::to_string(rebuildEvery) +
                             " is invalid: must be >= 0 (0: automatic)");
    }
    if (p.box_size > 0 && !(p.pm_grid > 0))
    {
        throw ParameterError("option --rebuild-every = " + std::to_string(rebuildEvery) +
                             " does not support tree + Ewald in a periodic box (box_size " +
                             std::to_string(p.box_size) +
                             ", pm_grid 0): set pm_grid for TreePM, or use --rebuild-every 1");
    }
    if (p.mac == Mac::Relative)
    {
        throw ParameterError("option --rebuild-every = " + std::to_string(rebuildEvery) +
                             " does not support the relative MAC (its group scales need a fresh estimate each "
                             "step); use --rebuild-every 1");
    }
}

} // namespace

bool pipelineMeshBesideState(const Parameters& p)
{
    if (!(p.box_size > 0 && p.pm_grid > 0)) return false;
    const Backend mesh = p.pm_backend == Backend::Auto ? p.backend : p.pm_backend;
    return resolveBackend(mesh) == resolveBackend(p.backend);
}

Pipeline::Pipeline(const Parameters& p, int64_t rebuildEvery, PipelineDevice device, Prediction predict, int64_t lag,
                   double freshRatio)
    : params_(p), every_(rebuildEvery), lag_(lag), predict_(predict), freshRatio_(freshRatio),
      box_(p.box_size > 0 ? p.box_size : 0.0), treePm_(p.box_size > 0 && p.pm_grid > 0),
      groupTolerance_(p.box_size > 0 && p.pm_grid > 0 && p.err_tol_force_acc > 0 ? float(p.err_tol_force_acc) : 0.0f),
      eps2_(float(p.epsilon_squared)), backendLane_(device == PipelineDevice::Gpu ? "device" : "host-walk"),
      buildThreads_(defaultBuildThreads())
{
    validate(p);
    checkSupported(p, rebuildEvery, lag, freshRatio);
    if (treePm_ && !pipelineMeshBesideState(p))
    {
        throw ParameterError("option --rebuild-every = " + std::to_string(rebuildEvery) +
                             " needs TreePM's mesh where the state is: pm_backend " + toString(p.pm_backend) +
                             " with backend " + toString(p.backend) + "; use --rebuild-every 1");
    }
    if (device == PipelineDevice::Gpu) backend_ = std::make_unique<BackendOf<ResidentGpu>>();
    else backend_ = std::make_unique<BackendOf<ResidentCpu>>();
    backend_->setSpanLog(&spans_);
    if (treePm_) backend_->setMesh(p);
}

Pipeline::~Pipeline()
{
    builder_.wait();
    // Before the topologies: the device may still be copying from their page-locked arrays.
    backend_.reset();
}

void Pipeline::setBuildThreads(int threads)
{
    if (threads < 0)
    {
        throw ParameterError("Pipeline::setBuildThreads: threads = " + std::to_string(threads) +
                             " (0: the default, or at least 1)");
    }
    buildThreads_ = threads > 0 ? threads : defaultBuildThreads();
}

void Pipeline::take(const Vec3d* pos, const Vec3d* vel, const double* mass, const uint64_t* id,
                    const int32_t* callerIndex, int64_t n, int64_t step)
{
    if (inFlight_) joinBuild();
    inFlight_ = false;
    n_        = n;
    step_     = step;
    mass_.assign(mass, mass + n);
    id_.assign(id, id + n);
    callerIndex_.assign(callerIndex, callerIndex + n);
    backend_->setState(pos, vel, mass, callerIndex, n);
}

void Pipeline::start(const Vec3d* pos, const Vec3d* vel, const double* mass, const uint64_t* id,
                     const int32_t* callerIndex, int64_t n, int64_t step)
{
    beginSpans(step);
    take(pos, vel, mass, id, callerIndex, n, step);
    std::unique_ptr<Topology> t = spareTopology();
    snapshot(*t);
    std::copy(pos, pos + n, t->pos.begin());
    build(*t, step);
    wrapShifts(*t);
    adopt(t);
    walkFresh_ = true;
    evaluate();
    recordSpans();
}

void Pipeline::restore(const Vec3d* pos, const Vec3d* vel, const double* mass, const uint64_t* id,
                       const int32_t* callerIndex, int64_t n, int64_t step, const PipelineCheckpoint& c,
                       const std::vector<F4>& results)
{
    if (c.rebuildEvery != every_ || c.rebuildLag != lag_)
    {
        throw ParameterError("the checkpoint's pipeline ran with --rebuild-every " + std::to_string(c.rebuildEvery) +
                             " --rebuild-lag " + std::to_string(c.rebuildLag) + ", this one with " +
                             std::to_string(every_) + " and " + std::to_string(lag_) +
                             ": a restart continues with the checkpoint's policy");
    }
    checkRestorable(c, results, n);
    beginSpans(step);
    // A periodic run's own positions, unwrapped since the last adoption (pos holds them wrapped).
    std::vector<Vec3d> own;
    if (!c.statePos.empty())
    {
        own.resize(size_t(n));
        for (int64_t k = 0; k < n; ++k) own[size_t(k)] = c.statePos[size_t(callerIndex[k])];
        pos = own.data();
    }
    take(pos, vel, mass, id, callerIndex, n, step);
    // The checkpoint's positions are in the caller's order: arranged here as the state is.
    auto arranged = [&](const std::vector<Vec3d>& byCaller, Topology& t) {
        snapshot(t);
        for (int64_t k = 0; k < n; ++k) t.pos[k] = byCaller[callerIndex_[k]];
    };
    std::unique_ptr<Topology> t = spareTopology();
    arranged(c.topologyPos, *t);
    build(*t, step);
    // The state was saved after this topology's adoption: its positions are already shifted.
    adopt(t, false);
    lastRebuildStep_ = c.lastRebuildStep;
    rebuilds_        = c.rebuilds;
    if (results.empty()) evaluate();
    else restoreResults(results);
    freshInteractions_ = c.freshInteractions;
    lastInteractions_  = c.lastInteractions;
    if (c.adoptStep >= 0)
    {
        next_ = spareTopology();
        arranged(c.inFlightPos, *next_);
        launchBuild(c.adoptStep);
    }
    recordSpans();
}

void Pipeline::snapshot(Topology& t) const
{
    t.pos.resize(static_cast<size_t>(n_));
    t.presorted  = false;
    t.onStepPath = false;
}

std::unique_ptr<Pipeline::Topology> Pipeline::spareTopology()
{
    // A recycled topology keeps its buffers (pinned positions, the build's working memory).
    if (spare_) return std::move(spare_);
    return std::make_unique<Topology>();
}

void Pipeline::build(Topology& t, int64_t step) const
{
    Stopwatch clock;
    TimelineLaps laps(processTimeline(), step, "host-build");
    // The masses, ids and caller's indices are the host's own: only an adoption changes them, and none
    // happens while a build is in flight (the adopting step joins the build first).
    // A build from sorted keys reads no positions (they may still be on their way; in a periodic box the lattice
    // shifts came with the keys).
    const BodySpan bodies{t.presorted ? t.pos.data() : inTheBox(t), mass_.data(), id_.data(), n_, callerIndex_.data()};
    // The build of GravitySolver::buildTree, with ties broken by the caller's index so that the order
    // does not depend on how the state happened to be arranged.
    if (t.presorted) adoptSortedKeys(bodies, t.sortedKeys.data(), t.sortedIndex.data(), t.tree, !t.onStepPath);
    else sortBodies(bodies, t.tree, box_);
    laps.lap("sort");
    buildCells(params_.n_leaf, t.tree);
    laps.lap("cells");
    // No multipoles: every step's refit computes the moments, boxes and MAC radii from the backend's
    // positions, so only the topology is packed.
    makeGroups(params_.n_group, t.tree, params_.merge_groups);
    laps.lap("groups");
    packTree(t.tree, params_, t.packed, PackContent::Topology);
    if (treePm_) t.packed.periodic = treePmPeriodicView(params_);
    laps.lap("packing");
    const std::vector<int32_t>& order = t.tree.order;
    t.order.resize(size_t(n_));
    if (t.onStepPath)
    {
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n_; ++k) t.order[k] = order[k];
    }
    else
    {
        t.sortedId.resize(size_t(n_));
        t.sortedRank.resize(size_t(n_));
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n_; ++k)
        {
            t.order[k]      = order[k];
            t.sortedId[k]   = id_[order[k]];
            t.sortedRank[k] = callerIndex_[order[k]];
        }
    }
    laps.lap("order");
    t.seconds = clock.lap();
}

void Pipeline::wrapShifts(Topology& t) const
{
    if (!(box_ > 0)) return;
    const std::vector<int32_t>& order = t.tree.order;
    t.shift.resize(size_t(n_));
    if (t.presorted)
    {
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n_; ++k) t.shift[k] = t.positionShift[order[k]];
        return;
    }
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n_; ++k) t.shift[k] = wrapShiftCode(t.pos[order[k]], box_);
}

const Vec3d* Pipeline::inTheBox(Topology& t) const
{
    if (!(box_ > 0)) return t.pos.data();
    t.wrapped.resize(size_t(n_));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n_; ++k) t.wrapped[size_t(k)] = wrapPosition(t.pos[k], box_);
    return t.wrapped.data();
}

void Pipeline::stage(Topology& t) const
{
    PackedTree& packed = t.packed;
    backend_->stageAdoption(t.order.data(), box_ > 0 ? t.shift.data() : nullptr,
                            refitView(packed, nullptr, nullptr, nullptr, params_), packed.treeView());
}

void Pipeline::adopt(std::unique_ptr<Topology>& t, bool shift)
{
    // The last results move with their bodies only for the error control, the one reader of them before the
    // next evaluation.
    backend_->permute(t->order.data(), box_ > 0 && shift ? t->shift.data() : nullptr, box_,
                      groupTolerance_ > 0 && hasResults_);
    // The build sorted the masses and prepared the rest: swapped in, not copied (the tree's copy is
    // rewritten by the next build of these buffers). On the step's path that waits for settleAdoption.
    settlePending_ = t->onStepPath;
    if (!settlePending_)
    {
        mass_.swap(t->tree.mass);
        id_.swap(t->sortedId);
        callerIndex_.swap(t->sortedRank);
    }
    PackedTree& packed = t->packed;
    backend_->setTopology(refitView(packed, nullptr, nullptr, nullptr, params_), refitLevels(packed),
                          packed.treeView());
    spare_           = std::move(current_);
    current_         = std::move(t);
    lastRebuildStep_ = step_;
    adoptedThisStep_ = true;
    ++rebuilds_;
}

void Pipeline::settleAdoption()
{
    if (settling_.valid())
    {
        settling_.get();
        return;
    }
    if (!settlePending_) return;
    settlePending_ = false;
    gatherAdoption();
}

void Pipeline::gatherAdoption()
{
    Topology& t          = *current_;
    const int32_t* order = t.order.data();
    // A build from sorted keys left the masses to this gather; sortBodies gathered them with the positions.
    const bool masses = int64_t(t.tree.mass.size()) != n_;
    if (masses) t.tree.mass.resize(size_t(n_));
    t.sortedId.resize(size_t(n_));
    t.sortedRank.resize(size_t(n_));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n_; ++k)
    {
        if (masses) t.tree.mass[k] = mass_[order[k]];
        t.sortedId[k]   = id_[order[k]];
        t.sortedRank[k] = callerIndex_[order[k]];
    }
    mass_.swap(t.tree.mass);
    id_.swap(t.sortedId);
    callerIndex_.swap(t.sortedRank);
}

bool Pipeline::buildDue() const
{
    // Automatic: continuous, the adopting step starts the next build (none is in flight when asked).
    if (every_ == 0) return true;
    return step_ - lastRebuildStep_ == every_ - lag_;
}

void Pipeline::queueBuildInputs(double ahead)
{
    if (!next_) next_ = spareTopology();
    snapshot(*next_);
    // Queued behind this step's drift; the build thread waits for it, the next kick and drift too.
    if (backend_->sortsKeys())
    {
        next_->sortedKeys.resize(size_t(n_));
        next_->sortedIndex.resize(size_t(n_));
        if (box_ > 0) next_->positionShift.resize(size_t(n_));
    }
    next_->presorted = backend_->beginPositionDownload(next_->pos.data(), ahead, next_->sortedKeys.data(),
                                                       next_->sortedIndex.data(), box_, next_->positionShift.data());
}

bool Pipeline::foregroundDue() const
{
    if (every_ != 0 || !(freshRatio_ > 0) || (inFlight_ && adoptStep_ > step_)) return false;
    const double lagged = double(lastInteractions_), fresh = double(freshInteractions_);
    if (step_ % kFreshProbeEvery == kFreshProbeAt) return true;
    if (step_ % kLaggedProbeEvery == kLaggedProbeEvery / 2 && lagged > kFreshRecheckRatio * fresh) return true;
    if (step_ % kLaggedProbeEvery == 0) return false;
    // No lagged topology on its way (the last step built in the foreground and started none, lagMeasuredAfter): the
    // alternative is that step's tree refitted, from positions not predicted for this step (near z = 1.5 in a 256^3
    // LCDM box 2.4 times a fresh tree's interactions).
    if (!inFlight_ && rebuilds_ > 1) return true;
    return lagCostsMore();
}

bool Pipeline::lagCostsMore() const { return double(lastInteractions_) > freshRatio_ * double(freshInteractions_); }

bool Pipeline::lagMeasuredAfter(int64_t step) const { return (step + lag_) % kLaggedProbeEvery == 0; }

void Pipeline::buildInForeground(TimelineLaps& host)
{
    // The build reads the drifted positions.
    checkDrift();
    queueBuildInputs(0.0);
    next_->onStepPath = true;
    launchBuild(step_);
    // The device's TreePM mesh runs beside the build, where the device has nothing else to do, instead of beside
    // the walk.
    if (treePm_) startMeshBesideTheBuild();
    joinBuild();
    host.lap("build_foreground");
    adopt(next_);
    last_.buildSeconds = current_->seconds;
    last_.foreground   = true;
    walkFresh_         = true;
    ++foregroundBuilds_;
    host.lap("adopt");
}

void Pipeline::startMeshBesideTheBuild()
{
    try
    {
        backend_->startMeshForcesBeforeAdoption();
    }
    catch (...)
    {
        // The bodies' error first: the build's thread reads this state's buffers until it is joined.
        try
        {
            joinBuild();
        }
        catch (...)
        {}
        throw;
    }
    meshStarted_ = true;
}

double Pipeline::predictionAhead(double h) const
{
    if (predict_ == Prediction::None) return 0.0;
    if (predict_ == Prediction::AtAdoption) return double(lag_) * h;
    // Adopted lag steps from now and walked in `serves` steps from then: aimed at their middle.
    const int64_t serves = every_ == 0 ? lag_ : every_;
    return (double(lag_) + 0.5 * double(serves - 1)) * h;
}

void Pipeline::launchBuild(int64_t adoptStep)
{
    adoptStep_ = adoptStep;
    inFlight_  = true;
    // The build reads the masses, ids and caller's indices in the state's order: a pending adoption's gathers go
    // first on its thread, beside the step's walk, instead of ahead of the walk on the step's.
    const bool settle = settlePending_;
    settlePending_    = false;
    if (settle)
    {
        settled_  = std::promise<void>();
        settling_ = settled_.get_future();
    }
    builder_.run([this, step = step_, threads = buildThreads_, settle] {
        try
        {
            setThreadsOfThisThread(threads);
            TimelineLaps laps(processTimeline(), step, "host-build");
            if (settle)
            {
                settleOnThisThread();
                laps.lap("settle");
            }
            // A build from sorted keys reads no positions: their download (for checkpoints) goes on meanwhile.
            if (next_->presorted) backend_->finishSortedKeysDownload();
            else backend_->finishPositionDownload();
            laps.lap("wait_positions");
            build(*next_, step);
            // The build recorded its own phases on this lane.
            laps.skip();
            if (box_ > 0)
            {
                // A build from sorted keys has each position's shift with them; the others read the positions.
                if (!next_->presorted) backend_->finishPositionDownload();
                wrapShifts(*next_);
                laps.lap("wrap_shifts");
            }
            stage(*next_);
        }
        catch (...)
        {
            buildError_ = std::current_exception();
        }
    });
}

void Pipeline::settleOnThisThread()
{
    try
    {
        gatherAdoption();
        settled_.set_value();
    }
    catch (...)
    {
        settled_.set_exception(std::current_exception());
        throw;
    }
}

void Pipeline::joinBuild()
{
    builder_.wait();
    inFlight_ = false;
    // A step that threw before its forces left the gathers' outcome unread: the build's error below says the same.
    if (settling_.valid()) settling_.wait();
    settling_ = {};
    if (buildError_)
    {
        std::exception_ptr e = buildError_;
        buildError_          = nullptr;
        std::rethrow_exception(e);
    }
}

void Pipeline::evaluate(const std::function<void()>& afterRefit, const std::function<void()>& afterForces)
{
    // TreePM's error control needs the previous results: none before the first evaluation, as in the classic step.
    const auto refitQueued = [&] {
        if (afterRefit) afterRefit();
        if (treePm_ && !meshStarted_) backend_->startMeshForces();
    };
    const bool hadResults = hasResults_;
    const InteractionTotals t =
        backend_->refitAndEvaluate(eps2_, hasResults_ ? groupTolerance_ : 0.0f, last_.times, refitQueued, afterForces);
    if (treePm_)
    {
        Stopwatch mesh;
        meshStarted_ = false;
        backend_->finishMeshForces(mass_.data());
        last_.meshSeconds = mesh.lap();
    }
    hasResults_          = true;
    const int64_t walked = t.nodes + t.leafBodies;
    // TreePM's first evaluation, without previous accelerations, opens by the size bound alone: no measure of what
    // the later fresh walks take. The start's topology, refitted, was built from unpredicted positions: no measure of
    // what a lagged build costs beside a fresh walk, but the only one where there is none (TreePM's), so that the
    // next step measures one.
    const bool comparable = groupTolerance_ == 0 || hadResults;
    if (walkFresh_ && comparable) freshInteractions_ = walked;
    else if (!walkFresh_ && (rebuilds_ > 1 || freshInteractions_ == 0)) lastInteractions_ = walked;
    last_.interactions      = walked;
    last_.nodeInteractions  = t.nodes;
    last_.leafInteractions  = t.leafBodies - n_; // every body meets itself in its own leaf
    last_.stepsSinceRebuild = step_ - lastRebuildStep_;
    last_.rebuilt           = adoptedThisStep_;
}

InteractionStats Pipeline::stats() const
{
    InteractionStats s;
    s.numTargets       = n_;
    s.nodeInteractions = last_.nodeInteractions;
    s.leafInteractions = last_.leafInteractions;
    if (!current_) return s;
    const PackedTree& packed = current_->packed;
    s.numGroups              = int64_t(packed.groupRange.size());
    s.numInternal            = packed.numInternal;
    s.numLeaves              = packed.numLeaves;
    s.depth                  = packed.depth;
    return s;
}

void Pipeline::beginSpans(int64_t step)
{
    spans_.on   = processTimeline().enabled();
    spans_.step = step;
}

void Pipeline::recordSpans()
{
    Timeline& timeline = processTimeline();
    for (const LoggedSpan& s : spans_.spans)
    {
        const char* lane = s.lane == SpanLane::Copy   ? "copy"
                           : s.lane == SpanLane::Rows ? "rows"
                           : s.lane == SpanLane::Mesh ? "mesh"
                                                      : backendLane_;
        timeline.recordSteady(s.step, lane, s.phase, s.begin, s.end);
    }
    spans_.spans.clear();
}

void Pipeline::setScales(float eps2, double velocityScale)
{
    eps2_          = eps2;
    velocityScale_ = velocityScale;
}

void Pipeline::step(double h) { step(Factors{0.5 * h, h, 0.5 * h, float(params_.epsilon_squared), 1.0}); }

void Pipeline::step(const Factors& f)
{
    const double G   = params_.gravitational_constant;
    eps2_            = f.eps2;
    velocityScale_   = f.velocityScale;
    adoptedThisStep_ = false;
    walkFresh_       = false;
    last_            = PipelineStepInfo{};
    // Every interval of this step carries the step index after it, as timing.csv's rows do.
    beginSpans(step_ + 1);
    TimelineLaps host(processTimeline(), step_ + 1, "host");
    // A kept topology's bodies are wrapped only at the next adoption (wrapShiftCode); rebuilt every step, at once.
    // The drift's range check is not waited for at once: the adoption's permutation and topology, the next build's
    // input and the refit, which nothing out of range can derail, are queued behind the drift first, and the device
    // runs them without waiting for the host. What would read out-of-range positions waits for the check: the walk
    // (its lists' sizes) and the host's build (the classic step's at once, the pipeline's thread after the refit is
    // queued).
    backend_->queueKickDrift(G, f.kickOpen, f.drift, every_ == 1 ? box_ : 0.0);
    host.lap("kick_drift");
    ++step_;
    if (every_ == 1) checkDrift();
    const bool foreground = foregroundDue();
    if (inFlight_ && step_ == adoptStep_)
    {
        Stopwatch wait;
        joinBuild();
        last_.waitSeconds = wait.lap();
        host.lap("wait_build");
        // A foreground step leaves the lagged topology in next_, whose buffers its own build reuses.
        if (!foreground)
        {
            adopt(next_);
            last_.buildSeconds = current_->seconds;
            host.lap("adopt");
        }
    }
    if (foreground) buildInForeground(host);
    if (every_ == 1)
    {
        // The classic order: the tree of this step is built from this step's positions.
        std::unique_ptr<Topology> t = spareTopology();
        snapshot(*t);
        t->onStepPath = true;
        backend_->getPositions(t->pos.data());
        host.lap("download_positions");
        build(*t, step_);
        wrapShifts(*t);
        host.skip();
        last_.buildSeconds = t->seconds;
        adopt(t);
        walkFresh_ = true;
        host.lap("adopt");
    }
    // The next build's input (predicted positions, the device's sort of their keys) is queued before the refit:
    // the device predicts and sorts on its copy stream while it refits, before the walk takes every multiprocessor,
    // and the host's build, which takes most of a step at 2^18 bodies and up, starts as early as it can.
    // A foreground step starts the next lagged build where a later step may walk it: the step that measures the lag
    // (kLaggedProbeEvery), or any where the lag costs less than the foreground build or is not known to cost more (a
    // step that measures the fresh walk). Where the lag costs more, the next step builds in the foreground too and
    // would leave a lagged build unadopted, its host build, copies and key sort beside this step's walk for nothing.
    const bool buildStarts = every_ != 1 && !inFlight_ && buildDue() &&
                             (!foreground || lagMeasuredAfter(step_) || !lagCostsMore() || freshInteractions_ == 0);
    if (buildStarts)
    {
        queueBuildInputs(predictionAhead(f.drift));
        host.lap("start_build");
    }
    // The closing kick is queued behind the forces, sharing the walk's wait for its counts, where the mesh adds
    // nothing to them afterwards.
    // A pending adoption's gathers (settleAdoption) run on the next build's thread when one starts, else once the
    // forces are queued: beside the device's walk, not ahead of it.
    const auto kick       = [&] { backend_->queueKick(G, f.kickClose); };
    const auto afterRefit = [&] {
        checkDrift();
        if (buildStarts) launchBuild(step_ + lag_);
    };
    const auto afterForces = [&] {
        settleAdoption();
        if (!treePm_) kick();
    };
    evaluate(afterRefit, afterForces);
    host.lap("evaluate");
    if (treePm_) kick();
    if (!backend_->kickFinite())
    {
        throwBadBody([](const Vec3d& x, const Vec3d& v) { return finiteBody(x, v); },
                     "has a non-finite position or velocity: the timestep is too large for the softening");
    }
    host.lap("kick");
    recordSpans();
}

void Pipeline::checkDrift()
{
    if (backend_->driftInRange()) return;
    // A build's input queued but not launched: its download into next_ ends before next_ can be replaced.
    if (next_ && !inFlight_) backend_->finishPositionDownload();
    throwBadBody([](const Vec3d& x, const Vec3d&) { return positionInRange(x); },
                 "has left the coordinate range (|x| <= 1e15)");
}

template<class Ok>
void Pipeline::throwBadBody(Ok ok, const char* what)
{
    // The ids and caller's indices in the order of the state the check read.
    settleAdoption();
    std::vector<Vec3d> pos(static_cast<size_t>(n_)), vel(static_cast<size_t>(n_));
    backend_->getState(pos.data(), vel.data());
    int64_t bad = n_, k = 0;
    for (int64_t j = 0; j < n_; ++j)
    {
        if (callerIndex_[j] < bad && !ok(pos[j], vel[j])) bad = callerIndex_[k = j];
    }
    throw InputError("body " + std::to_string(bad) + " (id " + std::to_string(bad < n_ ? id_[k] : 0) + ") " + what +
                     " after step " + std::to_string(step_));
}

void Pipeline::copyState(Vec3d* pos, Vec3d* vel)
{
    // Kept between calls: a run asks for its state every step it writes rows, and fresh pages cost their faults.
    std::vector<Vec3d>& p = stateScratch_[0];
    std::vector<Vec3d>& v = stateScratch_[1];
    p.resize(size_t(n_));
    v.resize(size_t(n_));
    beginSpans(step_);
    backend_->getState(p.data(), v.data());
    recordSpans();
    const StateScale scale = stateScale();
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n_; ++k)
    {
        pos[callerIndex_[k]] = scale.position(p[k]);
        vel[callerIndex_[k]] = scale.velocity(v[k]);
    }
}

void Pipeline::copyMomenta(Vec3d* vel)
{
    std::vector<Vec3d> p(static_cast<size_t>(n_)), v(static_cast<size_t>(n_));
    beginSpans(step_);
    backend_->getState(p.data(), v.data());
    recordSpans();
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n_; ++k) vel[callerIndex_[k]] = v[k];
}

double Pipeline::largestAccelerationSquared()
{
    // Every step of a comoving run under the step criterion: reduced where the results are.
    beginSpans(step_);
    const double largest = backend_->largestAccelerationSquared(params_.gravitational_constant);
    recordSpans();
    return largest;
}

void Pipeline::copyAccelerations(Vec3d* acc)
{
    std::vector<F4> out;
    getResults(out);
    const double G = params_.gravitational_constant;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n_; ++k) acc[callerIndex_[k]] = accelerationOf(out[size_t(k)], G);
}

DiagnosticSums Pipeline::diagnosticSums()
{
    beginSpans(step_);
    const DiagnosticSums s = backend_->diagnosticSums(params_.gravitational_constant, stateScale());
    recordSpans();
    return s;
}

bool Pipeline::radiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank, std::vector<double>& out)
{
    beginRadiusOrderStatistics(centre, rank);
    return finishRadiusOrderStatistics(out);
}

void Pipeline::beginRadiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank)
{
    beginSpans(step_);
    backend_->beginRadiusOrderStatistics(centre, rank);
    recordSpans();
}

bool Pipeline::finishRadiusOrderStatistics(std::vector<double>& out)
{
    beginSpans(step_);
    const bool found = backend_->finishRadiusOrderStatistics(out);
    recordSpans();
    return found;
}

namespace {

/// A topology's build positions in the caller's order: pos[from[k]] belongs to caller's index rank[k].
template<class Positions>
std::vector<Vec3d> byCaller(const Positions& pos, const std::vector<int32_t>& rank, const int32_t* from = nullptr)
{
    std::vector<Vec3d> out(pos.size());
    for (size_t k = 0; k < pos.size(); ++k) out[size_t(rank[k])] = pos[from ? size_t(from[k]) : k];
    return out;
}

} // namespace

PipelineCheckpoint Pipeline::checkpoint() const
{
    PipelineCheckpoint c;
    c.rebuildEvery      = every_;
    c.rebuildLag        = lag_;
    c.lastRebuildStep   = lastRebuildStep_;
    c.freshInteractions = freshInteractions_;
    c.lastInteractions  = lastInteractions_;
    c.rebuilds          = rebuilds_;
    // The positions' downloads complete in order: the last one's end covers the current topology's.
    backend_->finishPositionDownload();
    // The current topology's positions are in the order before its adoption: slot k of the state now
    // held what its slot order[k] held then.
    const int32_t* from = current_->tree.order.data();
    c.topologyPos       = byCaller(current_->pos, callerIndex_, from);
    if (inFlight_)
    {
        // Downloaded (waited for above), the builder only reads next_'s positions and the host's ranks
        // (unchanged until the adoption): reading them here is safe.
        c.adoptStep   = adoptStep_;
        c.inFlightPos = byCaller(next_->pos, callerIndex_);
    }
    if (box_ > 0)
    {
        std::vector<Vec3d> p(static_cast<size_t>(n_));
        backend_->getPositions(p.data());
        c.statePos = byCaller(p, callerIndex_);
    }
    return c;
}

std::vector<F4> Pipeline::resultsByCaller()
{
    std::vector<F4> out, byCaller(static_cast<size_t>(n_));
    getResults(out);
    for (int64_t k = 0; k < n_; ++k) byCaller[size_t(callerIndex_[k])] = out[size_t(k)];
    return byCaller;
}

bool Pipeline::checkpointsResults() const { return box_ > 0; }

void Pipeline::checkRestorable(const PipelineCheckpoint& c, const std::vector<F4>& results, int64_t n) const
{
    const bool sized =
        (c.statePos.empty() || int64_t(c.statePos.size()) == n) && (results.empty() || int64_t(results.size()) == n);
    if (!sized)
    {
        throw InputError("checkpoint: " + std::to_string(c.statePos.size()) + " pipeline positions and " +
                         std::to_string(results.size()) + " results for " + std::to_string(n) + " bodies");
    }
    if (box_ > 0 && (c.statePos.empty() || results.empty()))
    {
        throw InputError("checkpoint: a periodic run's pipeline restarts from its own positions and last results, "
                         "which this checkpoint lacks");
    }
}

void Pipeline::restoreResults(const std::vector<F4>& byCaller)
{
    std::vector<F4> inTreeOrder(static_cast<size_t>(n_));
    for (int64_t k = 0; k < n_; ++k) inTreeOrder[size_t(k)] = byCaller[size_t(callerIndex_[k])];
    backend_->setResults(inTreeOrder.data());
    hasResults_ = true;
}

StateScale Pipeline::stateScale() const { return {box_, velocityScale_}; }

void Pipeline::getResults(std::vector<F4>& out)
{
    out.resize(static_cast<size_t>(n_));
    backend_->getResults(out.data());
}

void Pipeline::getLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset,
                        std::vector<int32_t>& nodeList, std::vector<int32_t>& leafList)
{
    backend_->getLists(nodeOffset, leafOffset, nodeList, leafList);
}

} // namespace octwalk
