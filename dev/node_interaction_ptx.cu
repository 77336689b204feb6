// One TreePM body-node interaction in a loop, for counting its instructions apart from the force kernels (whose
// loops also hold the Ewald correction's path):
//   nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -I. -ptx dev/node_interaction_ptx.cu -o node.ptx
//   python3 dev/count_loop_instructions.py node node.ptx --counts
// One iteration is one interaction (two rsqrts: the softened and the unsoftened distance).
#include "common/treepm.h"

using namespace octwalk;

__global__ void nodeInteractions(const float4* nodes, const float4* quad, int n, ShortRangeView s, float eps2,
                                 float4* out)
{
    Vec3f acc{0, 0, 0};
    float pot      = 0;
    const float4 t = nodes[threadIdx.x];
    for (int i = 0; i < n; ++i)
    {
        const float4 c = nodes[i], a = quad[2 * i], b = quad[2 * i + 1];
        const SymTensor<float> q{a.x, a.y, a.z, a.w, b.x, b.y, b.z};
        bodyNodeShortRange({c.x - t.x, c.y - t.y, c.z - t.z}, c.w, q, eps2, s, acc, pot);
    }
    out[threadIdx.x] = {acc.x, acc.y, acc.z, pot};
}
