#include "host/cpu/direct_cpu.h"

#include "common/gravity.h"

namespace octwalk {

namespace {

template<class T>
void directTargets(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2, F4* out)
{
#pragma omp parallel for schedule(dynamic, 16)
    for (int32_t t = 0; t < numTargets; ++t)
    {
        const int32_t self = targetIndex[t];
        const F4 p         = bodies.posMass[self];
        const Vec3<T> target{T(p.x), T(p.y), T(p.z)};
        Vec3<T> acc{0, 0, 0};
        T pot = 0;
        for (int32_t j = 0; j < bodies.numBodies; ++j)
        {
            if (j == self) continue;
            F4 s = bodies.posMass[j];
            bodyBody(Vec3<T>{T(s.x), T(s.y), T(s.z)} - target, T(s.w), T(eps2), acc, pot);
        }
        out[t] = {float(acc.x), float(acc.y), float(acc.z), float(pot)};
    }
}

} // namespace

void directCpu(const BodyView& bodies, const int32_t* targetIndex, int32_t numTargets, float eps2,
               bool doubleAccumulate, F4* out)
{
    if (doubleAccumulate) directTargets<double>(bodies, targetIndex, numTargets, eps2, out);
    else directTargets<float>(bodies, targetIndex, numTargets, eps2, out);
}

} // namespace octwalk
