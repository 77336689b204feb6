#pragma once
// Shared by the refit tests (tests/unit/test_refit.cpp, tests/gpu/test_refit_gpu.cpp): a tree built
// by the host pipeline, bodies drifted in tree order, and the CPU walk and forces on a packed tree.

#include <cstring>
#include <vector>

#include "common/refit.h"
#include "host/cpu/forces_cpu.h"
#include "host/cpu/walk_cpu.h"
#include "host/models/models.h"
#include "host/tree/packed_tree.h"

namespace octwalk::test {

/// A host tree and its packing, with the bodies' velocities in tree order (for drifting).
struct BuiltTree
{
    HostTree tree;
    PackedTree packed;
    std::vector<Vec3d> vel;
};

inline void buildPackedTree(const ParticleSet& b, const Parameters& p, BuiltTree& out)
{
    BodySpan s{b.pos.data(), b.mass.data(), b.id.data(), b.size()};
    sortBodies(s, out.tree);
    buildCells(p.n_leaf, out.tree);
    computeMultipoles(out.tree);
    makeGroups(p.n_group, out.tree, p.merge_groups);
    packTree(out.tree, p, out.packed);
    out.vel.resize(size_t(b.size()));
    for (int64_t k = 0; k < b.size(); ++k) out.vel[k] = b.vel[out.tree.order[k]];
}

/// x += v dt, steps times, on tree-order positions.
inline void drift(std::vector<Vec3d>& pos, const std::vector<Vec3d>& vel, double dt, int steps)
{
    for (int s = 0; s < steps; ++s)
    {
        for (size_t k = 0; k < pos.size(); ++k) pos[k] += dt * vel[k];
    }
}

/// The bodies of a tree in its tree order, at positions pos (ids keep the tree order as the tie-break).
inline ParticleSet inTreeOrder(const BuiltTree& t, const std::vector<Vec3d>& pos)
{
    ParticleSet b;
    b.resize(int64_t(pos.size()));
    for (size_t k = 0; k < pos.size(); ++k)
    {
        b.pos[k]  = pos[k];
        b.vel[k]  = t.vel[k];
        b.mass[k] = t.tree.mass[k];
        b.id[k]   = uint64_t(k);
    }
    return b;
}

struct WalkResult
{
    InteractionLists lists;
    InteractionTotals totals;
    std::vector<Vec3d> acc; ///< tree order, G = 1
};

/// Both walk passes and both force kernels of the CPU twin on a packed tree, the bodies as targets.
inline WalkResult walkAndForces(const PackedTree& packed, float eps2)
{
    WalkResult r;
    TreeView tree    = packed.treeView();
    GroupView groups = packed.groupView();
    WalkCounts counts;
    counts.resize(groups.numGroups);
    int32_t overflow = 0;
    countInteractionsCpu(tree, groups, counts.view(), &overflow);
    checkWalkOverflow("pass 1", overflow);
    r.lists.resizeOffsets(groups.numGroups);
    scanCountsCpu(counts.view(), r.lists.view());
    r.lists.resizeLists();
    writeInteractionsCpu(tree, groups, r.lists.view(), &overflow);
    checkWalkOverflow("pass 2", overflow);
    r.totals = interactionTotals(groups, counts.view());

    const BodyView bodies = packed.bodyView();
    TargetView targets{bodies.posMass, bodies.numBodies, true};
    std::vector<F4> nodeAcc(size_t(bodies.numBodies)), acc(size_t(bodies.numBodies));
    bodyNodeForcesCpu(tree, groups, r.lists.view(), targets, eps2, nodeAcc.data());
    bodyLeafForcesCpu(tree, groups, r.lists.view(), bodies, targets, eps2, nodeAcc.data(), acc.data());
    r.acc.resize(acc.size());
    for (size_t k = 0; k < acc.size(); ++k) r.acc[k] = {double(acc[k].x), double(acc[k].y), double(acc[k].z)};
    return r;
}

template<class T, class A>
bool sameBits(const std::vector<T, A>& a, const std::vector<T, A>& b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

} // namespace octwalk::test
