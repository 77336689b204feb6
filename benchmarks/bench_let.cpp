// Essential trees (host/mpi/let.h) as two ranks of a Plummer sphere or a merger cut them for each other:
// the bodies split in two halves (or four quarters) of the Morton order, each share's own tree, and the
// essential tree of the first share's tree for the boxes of the other's groups: cut and written to bytes, and
// read back.
// Counters: nodes and megabytes sent.
// Run: build/benchmarks/octwalk_bench_let --benchmark_filter=...
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "host/core/parallel.h"
#include "host/models/models.h"
#include "host/mpi/let.h"
#include "host/mpi/tree_walk.h"
#include "host/solver/solver.h"

using namespace octwalk;
using namespace octwalk::mpi;

namespace {

/// Two ranks' shares of a model in the order of its tree (Morton), each with its own tree as a rank builds it:
/// with ranks = 2 the two halves, with ranks = 4 the first and the third quarter (neighbours in key order,
/// not in space).
struct TwoRanks
{
    GravitySolver first, second;

    TwoRanks(const char* model, int64_t n, int64_t ranks)
    {
        Parameters p;
        p.backend                = Backend::Cpu;
        const ParticleSet bodies = makeModel(model, n, 5);
        GravitySolver all(p);
        all.setBodies(bodies.pos, bodies.mass, bodies.id);
        std::vector<Vec3d> acc;
        std::vector<double> pot;
        all.computeForces(acc, pot);
        const std::vector<int32_t>& order = all.treeOrder();
        const long share                  = long(order.size()) / ranks;
        const long other                  = ranks == 2 ? 1 : 2;
        setHalf(first, bodies, order.begin(), order.begin() + share, p);
        setHalf(second, bodies, order.begin() + other * share, order.begin() + (other + 1) * share, p);
    }

    static void setHalf(GravitySolver& s, const ParticleSet& bodies, std::vector<int32_t>::const_iterator b,
                        std::vector<int32_t>::const_iterator e, const Parameters& p)
    {
        std::vector<Vec3d> pos;
        std::vector<double> mass;
        std::vector<uint64_t> id;
        for (auto it = b; it != e; ++it)
        {
            pos.push_back(bodies.pos[size_t(*it)]);
            mass.push_back(bodies.mass[size_t(*it)]);
            id.push_back(bodies.id[size_t(*it)]);
        }
        s.setParameters(p);
        s.setBodies(pos, mass, id);
        std::vector<Vec3d> acc;
        std::vector<double> pot;
        s.computeForces(acc, pot);
    }
};

const char* modelName(int64_t k) { return k == 0 ? "plummer" : "merger"; }

/// Args: bodies, model (0 Plummer, 1 merger), boxes the receiver's groups are cut into (groupsBoxes), ranks the
/// model is shared by (TwoRanks).
void BM_EssentialTreeBuild(benchmark::State& state)
{
    TwoRanks ranks(modelName(state.range(1)), state.range(0), state.range(3));
    const PackedTree& from             = ranks.first.packedTree();
    const std::vector<GroupsBox> boxes = groupsBoxes(ranks.second.packedTree().groupView(), int32_t(state.range(2)));
    std::vector<char> bytes;
    int64_t nodes = 0;
    for (auto _ : state)
    {
        bytes.clear();
        const EssentialTree let = buildEssentialTree(from.treeView(), from.bodyView(), boxes);
        serializeEssentialTree(let, bytes);
        nodes = let.numNodes();
        benchmark::DoNotOptimize(bytes.data());
    }
    state.counters["nodes"] = double(nodes);
    state.counters["MB"]    = double(bytes.size()) / 1e6;
}

void BM_EssentialTreeRead(benchmark::State& state)
{
    TwoRanks ranks(modelName(state.range(1)), state.range(0), 2);
    const PackedTree& from = ranks.first.packedTree();
    std::vector<char> bytes;
    serializeEssentialTree(
        buildEssentialTree(from.treeView(), from.bodyView(), groupsBox(ranks.second.packedTree().groupView())), bytes);
    for (auto _ : state)
    {
        const EssentialTree let = deserializeEssentialTree(bytes.data(), bytes.size(), "rank 0");
        benchmark::DoNotOptimize(let.bodies.data());
    }
}

/// Thrown by afterBuild to stop an evaluation once the tree is packed: the periodic benchmark needs the trees only.
struct TreeBuilt
{
};

/// The packed tree of bodies [first, last) of pos and mass, built as a rank builds its own (no walk).
void buildOnly(GravitySolver& solver, const std::vector<Vec3d>& pos, const std::vector<double>& mass, size_t first,
               size_t last)
{
    solver.setBodies(std::vector<Vec3d>(pos.begin() + long(first), pos.begin() + long(last)),
                     std::vector<double>(mass.begin() + long(first), mass.begin() + long(last)));
    solver.setAfterBuild([] { throw TreeBuilt{}; });
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    try
    {
        solver.computeForces(acc, pot);
    }
    catch (const TreeBuilt&)
    {}
    solver.setAfterBuild(nullptr);
}

/// A uniform periodic box under TreePM shared by two ranks as halves of its Morton order: the essential tree the
/// first half's own tree gives the second half's 64 boxes of groups (halved where they jump, as the distributed
/// evaluation cuts it), written to bytes. Args: bodies, mesh cells a side (r_cut = 6 x 1.75 cells), threads.
void BM_EssentialTreePeriodic(benchmark::State& state)
{
    Parameters p;
    p.backend                = Backend::Cpu;
    p.box_size               = 1.0;
    p.pm_grid                = int32_t(state.range(1));
    p.epsilon_squared        = 1e-8;
    const ParticleSet bodies = makeUniformBox(state.range(0), 1.0, 3);
    GravitySolver all(p), first(p), second(p);
    buildOnly(all, bodies.pos, bodies.mass, 0, bodies.pos.size());
    std::vector<Vec3d> pos;
    std::vector<double> mass;
    for (int32_t k : all.treeOrder())
    {
        pos.push_back(bodies.pos[size_t(k)]);
        mass.push_back(bodies.mass[size_t(k)]);
    }
    buildOnly(first, pos, mass, 0, pos.size() / 2);
    buildOnly(second, pos, mass, pos.size() / 2, pos.size());
    const PackedTree& from             = first.packedTree();
    const std::vector<GroupsBox> boxes = groupsBoxes(second.packedTree().groupView(), 64, true);
    const int saved                    = maxThreads();
    setThreadsOfThisThread(int(state.range(2)));
    std::vector<char> bytes;
    EssentialTree let;
    EssentialTreeScratch scratch;
    for (auto _ : state)
    {
        bytes.clear();
        buildEssentialTree(from.treeView(), from.bodyView(), boxes, let, scratch);
        serializeEssentialTree(let, bytes);
        benchmark::DoNotOptimize(bytes.data());
    }
    setThreadsOfThisThread(saved);
    state.counters["nodes"]  = double(let.numNodes());
    state.counters["bodies"] = double(let.bodies.size());
    state.counters["MB"]     = double(bytes.size()) / 1e6;
}

} // namespace

BENCHMARK(BM_EssentialTreePeriodic)
    ->ArgsProduct({{1 << 20}, {128}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_EssentialTreeBuild)
    ->ArgsProduct({{1 << 20}, {0, 1}, {1, 16, 64, 256}, {2, 4}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_EssentialTreeRead)->Args({1 << 20, 0})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
