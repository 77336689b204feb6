#include "host/sim/simulation.h"

#include <algorithm>

#include "common/integrate.h"

namespace octwalk {

namespace {

/// How many bodies ahead treeOrderPass prefetches what it gathers. A step reorders more than it seems: after a
/// step of 1/64 of a Plummer sphere of 2^22 bodies only 16% of neighbours in the new order were neighbours
/// before and 38% jump by more than 64 slots. Measured with BM_StepPasses (fused, 2^22, one thread, CPU time on
/// the busy 2-core development machine): no prefetch 96 ms, 8 ahead 59, 16 ahead 51, 32 ahead 40, 64 ahead
/// 37, 128 ahead 45; also prefetching the line a velocity's end may lie on: 32 ahead 34, 64 ahead 31, 128 ahead
/// 33 ms. (Non-temporal stores of what the pass writes did not pay there: 36 instead of 32 ms.)
constexpr int64_t kGatherPrefetch = 64;

/// Prefetches both cache lines the 24 bytes of a Vec3d may straddle.
inline void prefetchVec(const Vec3d& v)
{
    __builtin_prefetch(&v.x);
    __builtin_prefetch(&v.z);
}

} // namespace

TreeOrderFlags treeOrderPass(const TreeOrderPass& p)
{
    // One pass, everything a body carries at once: the permutation reads order once and the gathers share it.
    int resultNotFinite = 0, bodyNotFinite = 0, outOfRange = 0;
#pragma omp parallel for schedule(static) reduction(max : resultNotFinite, bodyNotFinite, outOfRange)
    for (int64_t k = 0; k < p.n; ++k)
    {
        if (k + kGatherPrefetch < p.n)
        {
            const int32_t f = p.order[k + kGatherPrefetch];
            prefetchVec(p.vel[f]);
            __builtin_prefetch(&p.callerIndex[f]);
            if (p.id) __builtin_prefetch(&p.id[f]);
            if (p.momentum) prefetchVec(p.momentum[f]);
        }
        const int32_t j  = p.order[k];
        const Vec3d a    = accelerationOf(p.out[k], p.G);
        const double phi = potentialOf(p.out[k], p.G);
        if (p.acc)
        {
            p.acc[k] = a;
            p.pot[k] = phi;
        }
        resultNotFinite = std::max(resultNotFinite, int(!finiteResult(a, phi)));
        Vec3d v         = p.vel[j];
        if (p.kick)
        {
            kickVelocity(v, a, p.halfKick);
            bodyNotFinite = std::max(bodyNotFinite, int(!finiteBody(p.pos[k], v)));
            if (p.nextPos)
            {
                // The next step's opening half: what kickAndDrift would do to this body, in the same order.
                kickVelocity(v, a, p.halfKick);
                Vec3d x = p.pos[k];
                driftPosition(x, v, p.h, p.box);
                p.nextPos[k] = x;
                outOfRange   = std::max(outOfRange, int(!positionInRange(x)));
            }
        }
        p.velOut[k]         = v;
        p.callerIndexOut[k] = p.callerIndex[j];
        if (p.idOut) p.idOut[k] = p.id[j];
        if (p.momentumOut) p.momentumOut[k] = p.momentum[j];
    }
    return {resultNotFinite != 0, bodyNotFinite != 0, outOfRange != 0};
}

bool Simulation::reorder(const F4* out, const double* halfKick)
{
    const int64_t n     = state_.size();
    const bool comoving = comoving_.has_value();
    // Only what reads the accelerations again beyond the drift needs them stored in double: the net force's
    // removal and the comoving step criterion.
    const bool storeAcc = forces_.zeroNetForce || comoving;
    // Without stored accelerations nothing happens to the state between this pass and the next step's drift
    // (the step is fixed), so the pass makes that drift too.
    const bool driftAhead = halfKick && !storeAcc;
    if (storeAcc)
    {
        acc_.resize(size_t(n));
        pot_.resize(size_t(n));
    }
    else
    {
        acc_.clear();
        pot_.clear();
    }
    scratchVec_.resize(size_t(n));
    scratchIndex_.resize(size_t(n));
    if (!idsByCaller_) scratchId_.resize(size_t(n));
    if (comoving) scratchMomentum_.resize(size_t(n));
    if (driftAhead) nextPos_.resize(size_t(n));
    TreeOrderPass p;
    p.n              = n;
    p.order          = solver_.treeOrder().data();
    p.out            = out;
    p.G              = solver_.parameters().gravitational_constant;
    p.pos            = solver_.hostTree().pos.data();
    p.vel            = state_.vel.data();
    p.velOut         = scratchVec_.data();
    p.callerIndex    = callerIndex_.data();
    p.callerIndexOut = scratchIndex_.data();
    if (!idsByCaller_)
    {
        p.id    = state_.id.data();
        p.idOut = scratchId_.data();
    }
    if (comoving)
    {
        p.momentum    = momentum_.data();
        p.momentumOut = scratchMomentum_.data();
    }
    if (storeAcc)
    {
        p.acc = acc_.data();
        p.pot = pot_.data();
    }
    p.kick     = halfKick != nullptr;
    p.halfKick = halfKick ? *halfKick : 0.0;
    if (driftAhead)
    {
        p.nextPos = nextPos_.data();
        p.h       = plan_.h;
        p.box     = params_.box_size;
    }
    ahead_                     = false;
    const TreeOrderFlags flags = treeOrderPass(p);
    // Before the state changes: an error leaves it as it was.
    solver_.checkTreeOrderResults(out, flags.resultNotFinite);
    results_     = storeAcc ? nullptr : out;
    lastResults_ = out;
    state_.vel.swap(scratchVec_);
    if (!idsByCaller_) state_.id.swap(scratchId_);
    callerIndex_.swap(scratchIndex_);
    if (comoving) momentum_.swap(scratchMomentum_);
    // Positions and masses are not gathered: the sort already made them in tree order.
    solver_.swapTreeOrderBodies(state_.pos, state_.mass);
    ahead_            = driftAhead;
    nextOutOfRange_   = flags.nextOutOfRange;
    callerStateValid_ = false;
    slotsValid_       = false;
    // The buffers the solver read now hold other data: it reads the reordered state from here on.
    solver_.attachBodies(bodySpan(), true);
    return flags.bodyNotFinite;
}

} // namespace octwalk
