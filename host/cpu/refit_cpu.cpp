#include "host/cpu/refit_cpu.h"

namespace octwalk {

void refitCpu(const RefitView& v, const RefitLevels& levels)
{
#pragma omp parallel
    {
#pragma omp for schedule(dynamic, 64) nowait
        for (int32_t f = 0; f < v.numLeaves; ++f) refitLeaf(v, f);
#pragma omp for schedule(static)
        for (int32_t k = 0; k < v.numBodies; ++k) refitBody(v, k);
        // Each level's children are leaves (done above) or internal nodes of deeper levels; the
        // implicit barrier of each loop orders the levels.
        for (int32_t level = levels.numLevels - 1; level >= 0; --level)
        {
#pragma omp for schedule(dynamic, 64)
            for (int32_t c = levels.internalFirst[level]; c < levels.internalFirst[level + 1]; ++c) refitInternal(v, c);
        }
#pragma omp for schedule(static)
        for (int32_t g = 0; g < v.numGroups; ++g) refitGroup(v, g);
    }
}

} // namespace octwalk
