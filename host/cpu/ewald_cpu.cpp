#include "host/cpu/ewald_cpu.h"

#include <vector>

#include "common/ewald.h"
#include "common/ewald_walk.h"

namespace octwalk {

void ewaldGroupCorrectionCpu(const TreeView& tree, const GroupView& groups, const ListView& /*lists*/,
                             const BodyView& bodies, const TargetView& targets, F4* acc)
{
    const PeriodicView& box = tree.periodic;
    if (!(box.boxSize > 0.0f)) return;
    const auto loadBody = [&bodies](int32_t j) { return bodies.posMass[j]; };
#pragma omp parallel
    {
        std::vector<EwaldCell> stack(static_cast<size_t>(kEwaldWalkStackCapacity));
#pragma omp for schedule(dynamic, 4)
        for (int32_t g = 0; g < groups.numGroups; ++g)
        {
            if (!ewaldGroupExpands(groups.half[g], box)) continue;
            const Vec3f centre   = xyz(groups.center[g]);
            const EwaldLocal loc = ewaldGroupExpansion(tree, groups.center[g], groups.half[g], loadBody, stack.data());
            const I2 range       = groups.range[g];
            for (int32_t i = range.x; i < range.x + range.y; ++i)
            {
                Vec3f a{0, 0, 0};
                float pot = 0;
                evalEwaldLocal(box, loc, centre - xyz(targets.pos[i]), a, pot);
                const F4 o = acc[i];
                acc[i]     = {o.x + a.x, o.y + a.y, o.z + a.z, o.w + pot};
            }
        }
    }
}

} // namespace octwalk
