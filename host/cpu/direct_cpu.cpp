#include "host/cpu/direct_cpu.h"

#include <cmath>

#include "common/gravity.h"

namespace octwalk {

namespace {

/// One target's sum over all bodies in index order; massLimit as in directGpu: bodies with |m| within
/// it take bodyBodySoftened, the others bodyBody (a negative limit: all of them).
template<class T>
F4 directTarget(const BodyView& bodies, int32_t self, float eps2, float massLimit)
{
    const F4 p = bodies.posMass[self];
    const Vec3<T> target{T(p.x), T(p.y), T(p.z)};
    Vec3<T> acc{0, 0, 0};
    T pot = 0;
    for (int32_t j = 0; j < bodies.numBodies; ++j)
    {
        if (j == self) continue;
        const F4 s      = bodies.posMass[j];
        const Vec3<T> d = Vec3<T>{T(s.x), T(s.y), T(s.z)} - target;
        if (std::fabs(s.w) <= massLimit) bodyBodySoftened(d, T(s.w), T(eps2), acc, pot);
        else bodyBody(d, T(s.w), T(eps2), acc, pot);
    }
    return {float(acc.x), float(acc.y), float(acc.z), float(pot)};
}

template<class T>
void directTargets(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2, float massLimit,
                   F4* out)
{
#pragma omp parallel for schedule(dynamic, 16)
    for (int32_t t = 0; t < numTargets; ++t) out[t] = directTarget<T>(bodies, targetIndex[t], eps2, massLimit);
}

} // namespace

void directCpu(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
               bool doubleAccumulate, F4* out)
{
    if (doubleAccumulate) directTargets<double>(bodies, targetIndex, numTargets, eps2, -1.0f, out);
    else directTargets<float>(bodies, targetIndex, numTargets, eps2, softenedMassLimit(eps2), out);
}

} // namespace octwalk
