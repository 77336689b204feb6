// Per-group walk work from the CPU twin (session 28, benchmarks/results/h200_s28/README.md): for each group, the
// cells its walk opens (= iterations of the device's team walk, one popped cell each) and its node and leaf
// entries, with the distribution over groups and the groups that open the most. Not built by CMake; from the
// repository root after building the serial libraries (cmake --build build --target octwalk_tests_serial):
//   cd build && g++ -O2 -std=c++17 -fopenmp -I.. -Igenerated ../benchmarks/results/h200_s28/group_walk.cpp \
//     -o group_walk host/liboctwalk_sim_serial.a host/liboctwalk_models_serial.a host/liboctwalk_solver_serial.a \
//     host/liboctwalk_tree_serial.a host/liboctwalk_cpu_serial.a device/liboctwalk_device.a \
//     host/liboctwalk_reference_serial.a host/liboctwalk_core_serial.a /usr/local/cuda/lib64/libcudart.so -ldl -lpthread -lrt
//   [MODEL=galaxy] [SHOWG=FIRST] ./group_walk N N_GROUP SEED THETA [N_LEAF] [TOP]   (eps 0.01, merged groups)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "common/walk.h"
#include "host/models/models.h"
#include "host/solver/solver.h"
#include "host/tree/packed_tree.h"
using namespace octwalk;
struct Sink
{
    int nodes = 0, leaves = 0;
    long bodies = 0;
    const I2* lr;
    int ni;
    void node(int32_t) { ++nodes; }
    void leaf(int32_t n)
    {
        ++leaves;
        bodies += lr[n - ni].y;
    }
};
int main(int argc, char** argv)
{
    int64_t n     = atoll(argv[1]);
    int nGroup    = atoi(argv[2]);
    int seed      = atoi(argv[3]);
    double theta  = atof(argv[4]);
    int nLeaf     = argc > 5 ? atoi(argv[5]) : 16;
    ParticleSet b = makeModel(getenv("MODEL") ? getenv("MODEL") : "plummer", n, seed);
    Parameters p;
    p.opening_angle   = theta;
    p.epsilon_squared = 1e-4;
    p.backend         = Backend::Cpu;
    p.n_group         = nGroup;
    p.n_leaf          = nLeaf;
    GravitySolver s(p);
    s.setBodies(b.pos, b.mass, b.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    s.computeForces(acc, pot);
    const PackedTree& t = s.packedTree();
    TreeView tv         = t.treeView();
    GroupView gv        = t.groupView();
    int G               = gv.numGroups;
    std::vector<int> it(G), nn(G), nl(G);
    std::vector<long> nb(G);
    std::vector<uint32_t> stack(4096);
    for (int g = 0; g < G; ++g)
    {
        Sink sk;
        sk.lr   = tv.leafRange;
        sk.ni   = tv.numInternal;
        int top = 0, pops = 0;
        visitEntry(tv, tv.rootEntry, gv.center[g], gv.half[g], stack.data(), top, 4096, sk);
        while (top > 0)
        {
            uint32_t cell = stack[--top];
            ++pops;
            for (int w = 0; w < 2; ++w)
            {
                U4 k          = tv.children[2 * cell + w];
                uint32_t e[4] = {k.x, k.y, k.z, k.w};
                for (int q = 0; q < 4; ++q)
                    if (e[q] != kEmptyChild)
                        visitEntry(tv, e[q], gv.center[g], gv.half[g], stack.data(), top, 4096, sk);
            }
        }
        it[g] = pops;
        nn[g] = sk.nodes;
        nl[g] = sk.leaves;
        nb[g] = sk.bodies;
    }
    std::vector<int> idx(G);
    for (int g = 0; g < G; ++g) idx[g] = g;
    std::sort(idx.begin(), idx.end(), [&](int a, int c) { return it[a] > it[c]; });
    std::vector<int> si = it;
    std::sort(si.begin(), si.end());
    double tot = 0;
    for (int x : it) tot += x;
    printf("N %ld groups %d iterations: mean %.0f median %d p99 %d p99.9 %d max %d\n", (long)n, G, tot / G, si[G / 2],
           si[G * 99 / 100], si[G * 999 / 1000], si[G - 1]);
    if (getenv("SHOWG"))
    {
        int a = atoi(getenv("SHOWG"));
        for (int g = a; g < a + 30 && g < G; ++g)
        {
            F4 c = gv.center[g], h = gv.half[g];
            printf("  g %d first %d m %d it %d c %.2f %.2f %.2f half %.2f %.2f %.2f\n", g, t.groupRange[g].x,
                   t.groupRange[g].y, it[g], c.x, c.y, c.z, h.x, h.y, h.z);
        }
    }
    int top = argc > 6 ? atoi(argv[6]) : 15;
    for (int r = 0; r < top; ++r)
    {
        int g = idx[r];
        F4 c = gv.center[g], h = gv.half[g];
        printf("g %6d m %3d it %5d nodes %5d leaves %5d lbodies %6ld |c| %7.3f half %7.3f %7.3f %7.3f\n", g,
               t.groupRange[g].y, it[g], nn[g], nl[g], nb[g], std::sqrt(c.x * c.x + c.y * c.y + c.z * c.z), h.x, h.y,
               h.z);
    }
}
