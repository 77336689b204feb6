// The essential tree of a periodic box under TreePM for the groups of the box's second half (in tree order), cut
// from the whole box's tree as one rank cuts it for another: how many of the first half's bodies it carries, cut
// for 1, 64, 512 and 4096 boxes of groups (up to one a group), and how large the second half's groups and its 64
// boxes are (in the snapshot's length unit); then as a rank holding the first half cuts it of its own tree, in
// bytes as sent.
// Usage: [N_GROUP=n] [N_LEAF=n] octwalk_let_periodic SNAPSHOT PM_GRID   (a periodic snapshot, e.g. from
//        `octwalk ic cosmo`)
//        [N_GROUP=n] [N_LEAF=n] octwalk_let_periodic uniform N PM_GRID  (N uniform bodies in the unit box)
// N_GROUP and N_LEAF set the groups' and the leaves' size (n_group 64 and n_leaf 16 by default).
// The tree is built, not walked (afterBuild stops the evaluation there).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/io/snapshot.h"
#include "host/models/models.h"
#include "host/mpi/let.h"
#include "host/solver/solver.h"

namespace {

using namespace octwalk;
using namespace octwalk::mpi;

/// Thrown by afterBuild to stop the evaluation once the tree is packed (onBuiltTree).
struct TreeBuilt
{
};

/// Builds and packs the solver's tree, calls report on it and stops there (no walk).
template<class Report>
void onBuiltTree(GravitySolver& solver, const Report& report)
{
    solver.setAfterBuild([&] {
        report(solver.packedTree());
        throw TreeBuilt{};
    });
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    try
    {
        solver.computeForces(acc, pot);
    }
    catch (const TreeBuilt&)
    {}
}

/// The tree a rank holding the box's first half (in tree order) builds of its own bodies, and the essential tree it
/// cuts of it for the second half's 64 boxes of groups, as the distributed evaluation does: its size in bytes as
/// sent, the bodies' share of them, and its nodes.
void reportRank(const PackedTree& whole, const GroupView& second, int64_t firstHalf, const Parameters& p)
{
    std::vector<Vec3d> pos(static_cast<size_t>(firstHalf));
    std::vector<double> mass(static_cast<size_t>(firstHalf));
    for (int64_t k = 0; k < firstHalf; ++k)
    {
        const F4 b      = whole.bodies[size_t(k)];
        pos[size_t(k)]  = {b.x, b.y, b.z};
        mass[size_t(k)] = b.w;
    }
    GravitySolver rank(p);
    rank.setBodies(pos, mass);
    onBuiltTree(rank, [&](const PackedTree& own) {
        const EssentialTree let = buildEssentialTree(own.treeView(), own.bodyView(), groupsBoxes(second, 64, true));
        std::vector<char> bytes;
        serializeEssentialTree(let, bytes);
        const double bodyBytes = double(let.bodies.size() * sizeof(F4));
        std::printf("first half's own tree (%d nodes) cut for the second half's 64 boxes: %d nodes, %zu of %lld bodies "
                    "(%.1f%%), %.2f MB, of which bodies %.2f MB\n",
                    own.numInternal + own.numLeaves, let.numNodes(), let.bodies.size(), (long long)firstHalf,
                    100.0 * double(let.bodies.size()) / double(firstHalf), 1e-6 * double(bytes.size()),
                    1e-6 * bodyBytes);
    });
}

void report(const PackedTree& t, const Parameters& p)
{
    const int32_t numGroups = int32_t(t.groupRange.size()), half = numGroups / 2;
    const GroupView second{t.groupRange.data() + half, t.groupCenter.data() + half, t.groupHalf.data() + half,
                           numGroups - half};
    const int64_t firstHalf = t.groupRange[size_t(half)].x, total = int64_t(t.bodies.size());
    {
        std::vector<double> halves;
        for (int32_t g = half; g < numGroups; ++g)
        {
            const F4 h = t.groupHalf[size_t(g)];
            halves.push_back(std::max({h.x, h.y, h.z}));
        }
        std::sort(halves.begin(), halves.end());
        std::printf("groups of the second half: %zu; largest half-side median %.4g p90 %.4g p99 %.4g max %.4g\n",
                    halves.size(), halves[halves.size() / 2], halves[halves.size() * 9 / 10],
                    halves[halves.size() * 99 / 100], halves.back());
        std::vector<double> sides;
        for (const GroupsBox& b : groupsBoxes(second, 64, true))
            sides.push_back(std::max({b.hi.x - b.lo.x, b.hi.y - b.lo.y, b.hi.z - b.lo.z}));
        std::sort(sides.begin(), sides.end());
        std::printf("64 boxes: largest side median %.4g p90 %.4g max %.4g (box %.4g)\n", sides[sides.size() / 2],
                    sides[sides.size() * 9 / 10], sides.back(), double(t.treeView().periodic.boxSize));
    }
    for (int32_t boxes : {1, 64, 512, 4096})
    {
        const EssentialTree let = buildEssentialTree(t.treeView(), t.bodyView(), groupsBoxes(second, boxes, true));
        const int64_t other     = int64_t(let.bodies.size()) - (total - firstHalf);
        std::printf("%d boxes (%zu after halving): %d of %d nodes; %lld of the first half's %lld bodies (%.1f%%)\n",
                    boxes, groupsBoxes(second, boxes, true).size(), let.numNodes(), t.numInternal + t.numLeaves,
                    (long long)other, (long long)firstHalf, 100.0 * double(other) / double(firstHalf));
    }
    reportRank(t, second, firstHalf, p);
}

} // namespace

int main(int argc, char** argv)
{
    const bool uniform = argc == 4 && std::string(argv[1]) == "uniform";
    if (!uniform && argc != 3)
    {
        std::fprintf(stderr, "usage: octwalk_let_periodic SNAPSHOT PM_GRID | uniform N PM_GRID\n");
        return 2;
    }
    try
    {
        const ParticleSet bodies = uniform ? makeUniformBox(std::atoll(argv[2]), 1.0, 3) : readSnapshot(argv[1]);
        Parameters p;
        p.backend         = Backend::Cpu;
        p.box_size        = uniform ? 1.0 : bodies.boxSize;
        p.pm_grid         = std::atoi(argv[uniform ? 3 : 2]);
        p.epsilon_squared = 1e-8 * p.box_size * p.box_size;
        if (const char* nGroup = std::getenv("N_GROUP")) p.n_group = std::atoi(nGroup);
        if (const char* nLeaf = std::getenv("N_LEAF")) p.n_leaf = std::atoi(nLeaf);
        GravitySolver solver(p);
        solver.setBodies(bodies.pos, bodies.mass, bodies.id);
        onBuiltTree(solver, [&](const PackedTree& t) { report(t, p); });
    }
    catch (const std::exception& e)
    {
        std::fprintf(stderr, "octwalk_let_periodic: %s\n", e.what());
        return 1;
    }
    return 0;
}
