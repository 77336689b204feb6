#include "host/sim/simulation.h"

#include <algorithm>

#include "common/integrate.h"
#include "host/core/prefetch.h"

namespace octwalk {

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
            if (p.velocityOfMomentum == 0) prefetchVec(p.vel[f]);
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
        Vec3d v;
        if (p.velocityOfMomentum != 0)
        {
            Vec3d m = p.momentum[j];
            kickVelocity(m, a, p.halfKick);
            p.momentumOut[k] = m;
            v                = p.velocityOfMomentum * m;
            bodyNotFinite    = std::max(bodyNotFinite, int(!finiteBody(p.pos[k], v)));
        }
        else
        {
            v = p.vel[j];
            if (p.momentumOut) p.momentumOut[k] = p.momentum[j];
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
        }
        p.velOut[k]         = v;
        p.callerIndexOut[k] = p.callerIndex[j];
        if (p.idOut) p.idOut[k] = p.id[j];
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
    // A comoving run integrates the canonical momenta: the kick is theirs, the velocities follow from them.
    if (comoving && halfKick) p.velocityOfMomentum = 1 / comoving_->a;
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
    diagnosticsStep_  = -1;
    // The buffers the solver read now hold other data: it reads the reordered state from here on.
    solver_.attachBodies(bodySpan(), true);
    return flags.bodyNotFinite;
}

} // namespace octwalk
