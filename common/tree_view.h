#pragma once
/// @file tree_view.h
/// The packed tree exactly as the GPU reads it, as POD views of raw pointers that are passed by
/// value to CUDA kernels and to OpenMP loops alike.
///
/// Node numbering: internal nodes are 0..numInternal-1 (root = 0 when the root is internal),
/// leaves are numInternal..numInternal+numLeaves-1, both in breadth-first order. A child entry is
/// a 32-bit word:
///   kEmptyChild (0)          no bodies in that octant (the root is never a child, so 0 is free)
///   n                        internal node n
///   kLeafBit | n             leaf node n (its bodies: leafRange[n - numInternal])
/// so the walk tells the three apart from the entry alone.
///
/// Arrays (n = node index, c = internal node index, f = leaf index):
///   children[2c], children[2c+1]  U4: the 8 child entries of internal node c in octant order
///                                   (x, y, z bits of the octant = bits 2, 1, 0)
///   nodeMac[n]    F4: centre of mass xyz, squared MAC radius (theta and MAC applied by the packer)
///   nodeCom[n]    F4: centre of mass xyz, mass
///   nodeQuad[2n], nodeQuad[2n+1]  F4: (Qxx, Qyy, Qzz, Qxy), (Qxz, Qyz, S, 0), traceless, about the com;
///                                   S = sum m |s|^2, the softened expansion's spread (0 when not packed)
///   leafRange[f]  I2: first body (tree order), body count
///
/// Worked example: 20 bodies, n_leaf = 16. The root has bodies in octants 0, 3 and 6; octant 3
/// holds 17 bodies and is split again into octants 1 and 5 (9 and 8 bodies). Breadth-first:
///   internal: 0 = root, 1 = root's octant 3;  leaves: 2 = octant 0, 3 = octant 6, 4 = 3/1, 5 = 3/5
///   children[0] = {kLeafBit|2, 0, 0, 1}   children[1] = {0, 0, kLeafBit|3, 0}
///   children[2] = {0, kLeafBit|4, 0, 0}   children[3] = {0, kLeafBit|5, 0, 0}
///   leafRange[0] = {0, 2} (node 2), leafRange[1] = {19, 1} (node 3), leafRange[2] = {2, 9}, leafRange[3] = {11, 8}
/// (leaf bodies are contiguous in Morton order, so node 3 at octant 6 holds the last body).
///   nodeMac, nodeCom: 6 entries (nodes 0..5); nodeQuad: 12. There is no per-node box: the MAC radius
///   in nodeMac.w is all the walk needs of a node's extent.
/// A group of the 9 bodies of node 4 that accepts nodes 2 and 3 and opens leaves 4 and 5 (the walk
/// pops the root, accepts 2, pushes 1, accepts 3, then pops 1 and opens 4 and 5) counts
/// nodes = 2, leaves = 2, leafBodies = 9 + 8 = 17 and writes nodeList {2, 3}, leafList {4, 5} at its
/// offsets: 18 body-node and 153 body-body interactions (9 of them self, skipped by index).

#include <cstdint>

#include "common/ewald.h"
#include "common/vec.h"

namespace octwalk {

constexpr uint32_t kEmptyChild = 0;
constexpr uint32_t kLeafBit    = 0x80000000u;

struct TreeView
{
    const U4* children;
    const F4* nodeMac;
    const F4* nodeCom;
    const F4* nodeQuad;
    const I2* leafRange;
    int32_t numInternal;
    int32_t numLeaves;
    /// Entry of the root: 0 when internal, kLeafBit | 0 when the whole tree is one leaf.
    uint32_t rootEntry;
    /// Deepest level of any node (root = 0); bounds the walk's stack.
    int32_t depth;
    /// The periodic box (the root cell) and its Ewald correction table; boxSize 0 when isolated.
    PeriodicView periodic;
    /// Accepted nodes more than sqrt(farField2) group radii from their group's centre are summed into the
    /// group's far-field expansion instead of body by body (common/far_field.h); 0: none is (the packer
    /// sets it from far_field_ratio; in a periodic box it serves the groups that meet each node at its image
    /// nearest their centre, groupFarField2).
    float farField2 = 0.0f;
};

/// Groups: contiguous body ranges walked together, with their tight boxes.
struct GroupView
{
    const I2* range;
    const F4* center;
    const F4* half;
    int32_t numGroups;
};

/// Bodies in tree order: position xyz, mass.
struct BodyView
{
    const F4* posMass;
    int32_t numBodies;
};

/// Pass-1 output, one entry per group: list lengths and the bodies of the opened leaves (so the
/// group's body-body interactions are leafBodies[g] * group size). Written by pass 1, read by the scan.
/// The device launchers also need one more entry in nodes and leaves, which pass 1 zeroes
/// (device/walk_gpu.h).
struct CountsView
{
    int32_t* nodes;
    int32_t* leaves;
    int64_t* leafBodies;
    int32_t numGroups;
};

/// Interaction lists of all groups: group g's nodes are nodeList[nodeOffset[g] .. nodeOffset[g+1]),
/// its leaves leafList[leafOffset[g] .. leafOffset[g+1]); entries are node indices. The offsets
/// (numGroups + 1 each) are 64-bit: the lists of a large tree can exceed 2^31 entries even though no
/// group's count does. The scan writes the offsets, pass 2 the lists, and the force kernels read both.
struct ListView
{
    int64_t* nodeOffset;
    int64_t* leafOffset;
    int32_t* nodeList;
    int32_t* leafList;
    int32_t numGroups;
};

/// Interactions of one evaluation: sum over groups of count * group size.
struct InteractionTotals
{
    int64_t nodes      = 0; ///< body-node interactions
    int64_t leafBodies = 0; ///< body-body interactions, self included (targets that are bodies meet themselves)
};

/// The totals of pass 1's counts, on host memory (both backends: the device's counts are downloaded).
inline InteractionTotals interactionTotals(const GroupView& groups, const CountsView& counts)
{
    InteractionTotals t;
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        t.nodes += int64_t(counts.nodes[g]) * groups.range[g].y;
        t.leafBodies += counts.leafBodies[g] * groups.range[g].y;
    }
    return t;
}

/// Targets of a force evaluation: the bodies themselves (self-interaction skipped by index) or
/// massless probe points.
struct TargetView
{
    const F4* pos;
    int32_t numTargets;
    bool areBodies;
};

/// Stack capacity that can never overflow for a tree of this depth: each pop of an internal
/// node pushes at most 8 entries and removes one, and there is at most one popped node per level.
inline constexpr int32_t walkStackCapacity(int32_t depth) { return 7 * depth + 8; }

} // namespace octwalk
