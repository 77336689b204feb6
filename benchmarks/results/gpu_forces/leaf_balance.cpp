// Per-group work of the force kernels from the CPU twin's lists, and a block-schedule estimate (
// benchmarks/results/kernel_sass.md). Not built by CMake; from the repository root after building the serial
// libraries (cmake --build build --target octwalk_tests_serial):
//   cd build && g++ -O2 -std=c++17 -I.. -Igenerated ../`leaf_balance.cpp` -o leaf_balance \
//     host/liboctwalk_sim_serial.a host/liboctwalk_models_serial.a host/liboctwalk_solver_serial.a \
//     host/liboctwalk_tree_serial.a host/liboctwalk_cpu_serial.a device/liboctwalk_device.a \
//     host/liboctwalk_reference_serial.a host/liboctwalk_core_serial.a /usr/local/cuda/lib/libcudart.so -ldl -lpthread -lrt
//   ./leaf_balance 1048576 64 [SEED]  (N, n_group; Plummer seed 42 as BM_GpuForces unless SEED is given, e.g. 1 as
//                                     `octwalk accuracy --seed 1`; theta 0.5, eps 0.01, merged groups)
// Work units are instruction estimates per warp (body-body 31 a pair and slot, body-node 46); the schedule puts
// blocks of W warps on 132 SMs in launch order, R warps resident an SM, each at 4/R warp instructions a cycle
// (a warp that finishes early gives its block's slot back only with its block: pessimistic, a model).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <queue>
#include <functional>
#include "host/models/models.h"
#include "host/solver/solver.h"
#include "host/tree/packed_tree.h"
#include "host/cpu/walk_cpu.h"
using namespace octwalk;
int main(int argc, char** argv)
{
    int64_t n     = argc > 1 ? atoll(argv[1]) : (1 << 20);
    int nGroup    = argc > 2 ? atoi(argv[2]) : 64;
    ParticleSet b = makePlummer(n, argc > 3 ? atoi(argv[3]) : 42);
    Parameters p;
    p.opening_angle   = 0.5;
    p.epsilon_squared = 1e-4;
    p.backend         = Backend::Cpu;
    p.n_group         = nGroup;
    p.merge_groups    = true;
    GravitySolver s(p);
    s.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    s.computeForces(acc, pot);
    const PackedTree& t       = s.packedTree();
    const InteractionLists& L = s.cpuLists();
    int64_t G                 = t.groupRange.size();
    std::vector<double> leafWork(G), nodeWork(G);
    double totLeaf = 0, totNode = 0, maxLeaf = 0;
    int64_t argmax = 0;
    std::vector<int64_t> srcBodies(G);
    for (int64_t g = 0; g < G; ++g)
    {
        int m     = t.groupRange[g].y;
        int slots = (m + 31) / 32;
        if (slots > 2) slots = 2;
        int passes = (m + 63) / 64;
        int64_t sb = 0;
        for (int64_t k = L.leafOffset[g]; k < L.leafOffset[g + 1]; ++k)
            sb += t.leafRange[L.leafList[k] - t.numInternal].y;
        srcBodies[g] = sb;
        // warp-iterations: per pass, per source body, `slots` interactions; plus a per-32-leaf chunk and per-32-body tile overhead
        leafWork[g] = double(passes) * (double(sb) * slots * 31 + double((sb + 31) / 32) * 150 +
                                        double((L.leafOffset[g + 1] - L.leafOffset[g] + 31) / 32) * 100);
        nodeWork[g] = double(L.nodeOffset[g + 1] - L.nodeOffset[g]) * 46 * slots;
        totLeaf += leafWork[g];
        totNode += nodeWork[g];
        if (leafWork[g] > maxLeaf)
        {
            maxLeaf = leafWork[g];
            argmax  = g;
        }
    }
    {
        std::vector<int64_t> len(G);
        for (int64_t g = 0; g < G; ++g) len[g] = L.leafOffset[g + 1] - L.leafOffset[g];
        std::vector<int64_t> sl = len;
        std::sort(sl.begin(), sl.end());
        printf("leaf entries per group: median %lld p90 %lld p99 %lld p99.9 %lld max %lld; groups above 256: %lld, "
               "512: %lld, 1024: %lld\n",
               (long long)sl[G / 2], (long long)sl[G * 9 / 10], (long long)sl[G * 99 / 100],
               (long long)sl[G * 999 / 1000], (long long)sl[G - 1],
               (long long)std::count_if(sl.begin(), sl.end(), [](int64_t x) { return x > 256; }),
               (long long)std::count_if(sl.begin(), sl.end(), [](int64_t x) { return x > 512; }),
               (long long)std::count_if(sl.begin(), sl.end(), [](int64_t x) { return x > 1024; }));
    }
    {
        std::vector<int64_t> len(G);
        for (int64_t g = 0; g < G; ++g) len[g] = L.nodeOffset[g + 1] - L.nodeOffset[g];
        std::vector<int64_t> sl = len;
        std::sort(sl.begin(), sl.end());
        printf("node entries per group: median %lld p99 %lld max %lld; the longest leaf list's group: %lld\n",
               (long long)sl[G / 2], (long long)sl[G * 99 / 100], (long long)sl[G - 1],
               (long long)len[std::max_element(leafWork.begin(), leafWork.end()) - leafWork.begin()]);
    }
    std::vector<double> sorted = leafWork;
    std::sort(sorted.begin(), sorted.end());
    printf("N %lld n_group %d groups %lld leaf/body %.1f node/body %.1f\n", (long long)n, nGroup, (long long)G,
           s.stats().leavesPerBody(), s.stats().nodesPerBody());
    printf("leaf work: mean %.3g median %.3g p99 %.3g max %.3g (group %lld: m %d, %lld source bodies, %lld leaves, "
           "half %.3g %.3g %.3g)\n",
           totLeaf / G, sorted[G / 2], sorted[G * 99 / 100], maxLeaf, (long long)argmax, t.groupRange[argmax].y,
           (long long)srcBodies[argmax], (long long)(L.leafOffset[argmax + 1] - L.leafOffset[argmax]),
           t.groupHalf[argmax].x, t.groupHalf[argmax].y, t.groupHalf[argmax].z);
    // schedule: 132 SMs x 4 schedulers; 40 resident warps per SM share its 4 issue slots: model each SM as a processor of rate 4 with blocks (4 warps) scheduled in index order as slots (10 per SM) free up
    std::vector<double> nodeSplit = nodeWork, leafSplitW = leafWork;
    for (int64_t g = 0; g < G; ++g)
        if (L.leafOffset[g + 1] - L.leafOffset[g] > 512)
        {
            nodeSplit[g] /= 8;
            leafSplitW[g] /= 8;
        }
    auto sched = [&](const std::vector<double>& w, int W, int residentWarps) {
        int64_t nb = (G + W - 1) / W;
        int S      = 132 * (residentWarps / W);
        std::priority_queue<double, std::vector<double>, std::greater<double>> slots;
        for (int i = 0; i < S; ++i) slots.push(0);
        double end = 0, total = 0;
        double rate = 4.0 / residentWarps; // warp-instr per cycle per warp when the SM is full
        for (int64_t bl = 0; bl < nb; ++bl)
        {
            double mx = 0;
            for (int k = 0; k < W && bl * W + k < G; ++k)
            {
                mx = std::max(mx, w[bl * W + k]);
                total += w[bl * W + k];
            }
            double st = slots.top();
            slots.pop();
            double e = st + mx / rate;
            slots.push(e);
            end = std::max(end, e);
        }
        return std::make_pair(end, total / (132 * 4.0));
    };
    for (int kind = 0; kind < 4; ++kind)
    {
        const std::vector<double>& w = kind == 0 ? leafWork : kind == 1 ? nodeWork : kind == 2 ? leafSplitW : nodeSplit;
        int resident                 = kind % 2 ? 28 : 40;
        printf("%s%s:", kind % 2 ? "node" : "leaf", kind >= 2 ? " (long lists /8)" : "");
        for (int W : {4, 2, 1})
        {
            int r           = W == 1 ? std::min(resident, 32) : resident;
            auto [e, ideal] = sched(w, W, r);
            printf("  W=%d: %.3g (x%.2f)", W, e, e / ideal);
        }
        printf("\n");
    }
}
