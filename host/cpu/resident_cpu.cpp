#include "host/cpu/resident_cpu.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "host/core/order_statistics.h"
#include "host/core/parallel.h"
#include "host/core/prefetch.h"
#include "common/treepm.h"
#include "host/cpu/forces_cpu.h"
#include "host/cpu/refit_cpu.h"

namespace octwalk {

DiagnosticSums diagnosticSumsCpu(const Vec3d* pos, const Vec3d* vel, const double* mass, const F4* result,
                                 const int32_t* slot, int64_t n, double G, const StateScale& scale)
{
    return interleavedSum<kDiagnosticLanes, DiagnosticSums>(n, [&](int64_t c) {
        if (c + kGatherPrefetch < n)
        {
            const int32_t f = slot[c + kGatherPrefetch];
            prefetchVec(pos[f]);
            prefetchVec(vel[f]);
            __builtin_prefetch(&mass[f]);
            __builtin_prefetch(&result[f]);
        }
        const int32_t i = slot[c];
        return diagnosticTerms(mass[i], scale.position(pos[i]), scale.velocity(vel[i]), potentialOf(result[i], G));
    });
}

namespace {

template<class T>
void gather(std::vector<T>& v, const int32_t* order, std::vector<T>& scratch)
{
    const int64_t n = int64_t(v.size());
    scratch.resize(v.size());
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k) scratch[k] = v[order[k]];
    v.swap(scratch);
}

} // namespace

template<class Work>
auto ResidentCpu::logged(const char* phase, Work work) const
{
    if (!log_ || !log_->on) return work();
    const double begin = steadyClockSeconds();
    // Every operation's work returns: the interval is logged after it, also for a void result.
    struct LogOnExit
    {
        SpanLog& log;
        const char* phase;
        double begin;
        ~LogOnExit() { log.add(SpanLane::Walk, phase, begin, steadyClockSeconds()); }
    } onExit{*log_, phase, begin};
    return work();
}

void ResidentCpu::setState(const Vec3d* pos, const Vec3d* vel, const double* mass, const int32_t* caller, int64_t n)
{
    driftInRange_ = true;
    kickFinite_   = true;
    logged("upload_state", [&] {
        pos_.assign(pos, pos + n);
        vel_.assign(vel, vel + n);
        mass_.assign(mass, mass + n);
        caller_.assign(caller, caller + n);
        result_.assign(size_t(n), F4{0, 0, 0, 0});
        invertCallers();
    });
}

void ResidentCpu::invertCallers()
{
    const int64_t n = size();
    slot_.resize(size_t(n));
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k) slot_[size_t(caller_[k])] = int32_t(k);
}

void ResidentCpu::getState(Vec3d* pos, Vec3d* vel) const
{
    logged("download_state", [&] {
        std::copy(pos_.begin(), pos_.end(), pos);
        std::copy(vel_.begin(), vel_.end(), vel);
    });
}

void ResidentCpu::getPositions(Vec3d* pos) const
{
    logged("download_positions", [&] { std::copy(pos_.begin(), pos_.end(), pos); });
}

void ResidentCpu::beginPositionDownload(Vec3d* pos, double ahead) const
{
    const int64_t n = int64_t(pos_.size());
    if (ahead == 0) return getPositions(pos);
    logged("predict", [&] {
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n; ++k) pos[k] = predictPosition(pos_[k], vel_[k], ahead);
    });
}

void ResidentCpu::permute(const int32_t* order, const uint8_t* shift, double boxSize, bool results)
{
    logged("permute", [&] {
        gather(pos_, order, scratchVec_);
        gather(vel_, order, scratchVec_);
        gather(mass_, order, scratchMass_);
        gather(caller_, order, scratchIndex_);
        invertCallers();
        // The previous results follow their bodies: TreePM's error control reads them in the next refit.
        if (results) gather(result_, order, scratchResult_);
        if (!shift) return;
        const int64_t n = size();
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n; ++k) pos_[k] = shiftedByCode(pos_[k], shift[k], boxSize);
    });
}

void ResidentCpu::setResults(const F4* results)
{
    logged("upload_results", [&] { result_.assign(results, results + size()); });
}

void ResidentCpu::addMeshForces(const Vec3d* acc, const double* pot)
{
    logged("add_mesh", [&] {
        const int64_t n = size();
#pragma omp parallel for schedule(static)
        for (int64_t k = 0; k < n; ++k) result_[k] = addMeshTerm(result_[k], acc[k], pot[k]);
    });
}

void ResidentCpu::setTopology(const RefitView& host, const RefitLevels& levels, const TreeView& tree)
{
    logged("upload_topology", [&] { copyTopology(host, levels, tree); });
}

void ResidentCpu::copyTopology(const RefitView& host, const RefitLevels& levels, const TreeView& tree)
{
    const size_t numNodes = size_t(host.numInternal) + size_t(host.numLeaves);
    children_.assign(host.children, host.children + 2 * size_t(host.numInternal));
    leafRange_.assign(host.leafRange, host.leafRange + host.numLeaves);
    groupRange_.assign(host.groupRange, host.groupRange + host.numGroups);
    internalFirst_.assign(levels.internalFirst, levels.internalFirst + levels.numLevels + 1);
    moments_.resize(numNodes);
    nodeMac_.resize(numNodes);
    nodeCom_.resize(numNodes);
    nodeQuad_.resize(2 * numNodes);
    bodies_.resize(size_t(host.numBodies));
    groupCenter_.resize(size_t(host.numGroups));
    groupHalf_.resize(size_t(host.numGroups));
    refit_ = host;
    tree_  = tree;
}

InteractionTotals ResidentCpu::refitAndEvaluate(float eps2, float groupTolerance, PhaseTimes& t,
                                                const std::function<void()>& afterRefit,
                                                const std::function<void()>& afterForces)
{
    RefitView& v = refit_;
    // The refit reads the previous results before the forces below overwrite them.
    v.previous       = groupTolerance > 0 ? result_.data() : nullptr;
    v.groupTolerance = groupTolerance;
    v.children       = children_.data();
    v.leafRange      = leafRange_.data();
    v.groupRange     = groupRange_.data();
    v.pos            = pos_.data();
    v.mass           = mass_.data();
    v.moments        = moments_.data();
    v.nodeMac        = nodeMac_.data();
    v.nodeCom        = nodeCom_.data();
    v.nodeQuad       = nodeQuad_.data();
    v.bodies         = bodies_.data();
    v.groupCenter    = groupCenter_.data();
    v.groupHalf      = groupHalf_.data();
    v.numBodies      = int32_t(pos_.size());
    tree_.children   = children_.data();
    tree_.nodeMac    = nodeMac_.data();
    tree_.nodeCom    = nodeCom_.data();
    tree_.nodeQuad   = nodeQuad_.data();
    tree_.leafRange  = leafRange_.data();
    const GroupView groups{groupRange_.data(), groupCenter_.data(), groupHalf_.data(), int32_t(groupRange_.size())};
    const BodyView bodies{bodies_.data(), int32_t(bodies_.size())};
    const TargetView targets{bodies_.data(), int32_t(bodies_.size()), true};

    t.clear(PhaseGroup::Walk);
    // Each phase from the end of the one before, on the one clock of the spans.
    double at     = steadyClockSeconds();
    auto endPhase = [&](Phase p, const char* name) {
        const double now = steadyClockSeconds();
        t[p]             = now - at;
        if (log_) log_->add(SpanLane::Walk, name, at, now);
        at = now;
    };
    auto endWalkPhase = [&](Phase p) { endPhase(p, phaseInfo(p).name); };
    refitCpu(v, {internalFirst_.data(), int32_t(internalFirst_.size()) - 1});
    endPhase(Phase::Packing, "refit");
    if (afterRefit)
    {
        afterRefit();
        at = steadyClockSeconds();
    }
    // The sequence of GravitySolver::evaluateCpu (host/solver/solver.cpp) on the refitted arrays.
    int32_t overflowGroup = 0;
    counts_.resize(groups.numGroups);
    countInteractionsCpu(tree_, groups, counts_.view(), &overflowGroup);
    checkWalkOverflow("pass 1", overflowGroup);
    endWalkPhase(Phase::WalkCount);
    lists_.resizeOffsets(groups.numGroups);
    scanCountsCpu(counts_.view(), lists_.view());
    lists_.resizeLists();
    endWalkPhase(Phase::Scan);
    writeInteractionsCpu(tree_, groups, lists_.view(), &overflowGroup);
    checkWalkOverflow("pass 2", overflowGroup);
    endWalkPhase(Phase::WalkWrite);
    nodeAcc_.resize(size_t(targets.numTargets));
    result_.resize(size_t(targets.numTargets));
    bodyNodeForcesCpu(tree_, groups, lists_.view(), targets, eps2, nodeAcc_.data());
    endWalkPhase(Phase::BodyNode);
    bodyLeafForcesCpu(tree_, groups, lists_.view(), bodies, targets, eps2, nodeAcc_.data(), result_.data());
    endWalkPhase(Phase::BodyLeaf);
    if (afterForces) afterForces();
    return interactionTotals(groups, counts_.view());
}

bool ResidentCpu::kickDrift(double G, double halfStep, double h, double boxSize)
{
    return logged("kick_drift", [&] {
        const int64_t n = size();
        int outOfRange  = 0;
#pragma omp parallel for schedule(static) reduction(max : outOfRange)
        for (int64_t i = 0; i < n; ++i)
        {
            kickVelocity(vel_[i], accelerationOf(result_[i], G), halfStep);
            driftPosition(pos_[i], vel_[i], h, boxSize);
            outOfRange = std::max(outOfRange, int(!positionInRange(pos_[i])));
        }
        return outOfRange == 0;
    });
}

void ResidentCpu::queueKickDrift(double G, double halfStep, double h, double boxSize)
{
    driftInRange_ = kickDrift(G, halfStep, h, boxSize);
}

bool ResidentCpu::driftInRange()
{
    const bool inRange = driftInRange_;
    driftInRange_      = true;
    return inRange;
}

void ResidentCpu::queueKick(double G, double halfStep) { kickFinite_ = kick(G, halfStep); }

bool ResidentCpu::kickFinite()
{
    const bool finite = kickFinite_;
    kickFinite_       = true;
    return finite;
}

bool ResidentCpu::kick(double G, double halfStep)
{
    return logged("kick", [&] {
        const int64_t n = size();
        int notFinite   = 0;
#pragma omp parallel for schedule(static) reduction(max : notFinite)
        for (int64_t i = 0; i < n; ++i)
        {
            kickVelocity(vel_[i], accelerationOf(result_[i], G), halfStep);
            notFinite = std::max(notFinite, int(!finiteBody(pos_[i], vel_[i])));
        }
        return notFinite == 0;
    });
}

DiagnosticSums ResidentCpu::diagnosticSums(double G, const StateScale& scale) const
{
    return logged("diagnostics", [&] {
        return diagnosticSumsCpu(pos_.data(), vel_.data(), mass_.data(), result_.data(), slot_.data(), size(), G,
                                 scale);
    });
}

double ResidentCpu::largestAccelerationSquared(double G) const
{
    return logged("largest_acceleration", [&] {
        const int64_t n = size();
        double largest  = 0;
#pragma omp parallel for schedule(static) reduction(max : largest)
        for (int64_t k = 0; k < n; ++k) largest = largerAccelerationSquared(largest, result_[k], G);
        return largest;
    });
}

bool ResidentCpu::radiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank, std::vector<double>& out)
{
    return logged("lagrangian_radii", [&] {
        const int64_t n = size();
        radii_.resize(size_t(n));
        int notANumber = 0;
#pragma omp parallel for schedule(static) reduction(max : notANumber)
        for (int64_t k = 0; k < n; ++k)
        {
            radii_[size_t(k)] = radiusAbout(pos_[size_t(k)], centre);
            notANumber        = std::max(notANumber, int(std::isnan(radii_[size_t(k)])));
        }
        if (notANumber) return false;
        out = orderStatistics(radii_.data(), n, rank);
        return true;
    });
}

void ResidentCpu::beginRadiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank)
{
    pendingRadii_ = radiusOrderStatistics(centre, rank, beganRadii_) ? PendingRadii::Found : PendingRadii::NotANumber;
}

bool ResidentCpu::finishRadiusOrderStatistics(std::vector<double>& out)
{
    if (pendingRadii_ == PendingRadii::None) throw std::logic_error("finishRadiusOrderStatistics without a begin");
    const bool found = pendingRadii_ == PendingRadii::Found;
    pendingRadii_    = PendingRadii::None;
    if (found) out = beganRadii_;
    return found;
}

void ResidentCpu::getResults(F4* out) const { std::copy(result_.begin(), result_.end(), out); }

void ResidentCpu::getLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset,
                           std::vector<int32_t>& nodeList, std::vector<int32_t>& leafList) const
{
    nodeOffset = lists_.nodeOffset;
    leafOffset = lists_.leafOffset;
    nodeList   = lists_.nodeList;
    leafList   = lists_.leafList;
}

} // namespace octwalk
