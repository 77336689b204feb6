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
///   nodeQuad[2n], nodeQuad[2n+1]  F4: (Qxx, Qyy, Qzz, Qxy), (Qxz, Qyz, 0, 0), traceless, about the com
///   nodeBox[n]    F4: tight bounding-box centre xyz, largest side l (host only: the device view
///                 leaves it null, since the MAC radius in nodeMac.w already holds what the walk needs)
///   leafRange[f]  I2: first body (tree order), body count
///
/// Worked example: 20 bodies, n_leaf = 16. The root has bodies in octants 0, 3 and 6; octant 3
/// holds 17 bodies and is split again into octants 1 and 5 (9 and 8 bodies). Breadth-first:
///   internal: 0 = root, 1 = root's octant 3;  leaves: 2 = octant 0, 3 = octant 6, 4 = 3/1, 5 = 3/5
///   children[0] = {kLeafBit|2, 0, 0, 1}   children[1] = {0, 0, kLeafBit|3, 0}
///   children[2] = {0, kLeafBit|4, 0, 0}   children[3] = {0, kLeafBit|5, 0, 0}
///   leafRange[0] = {0, 2} (node 2), leafRange[1] = {19, 1} (node 3), leafRange[2] = {2, 9}, leafRange[3] = {11, 8}
/// (leaf bodies are contiguous in Morton order, so node 3 at octant 6 holds the last body).

#include <cstdint>

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
    const F4* nodeBox;
    const I2* leafRange;
    int32_t numInternal;
    int32_t numLeaves;
    /// Entry of the root: 0 when internal, kLeafBit | 0 when the whole tree is one leaf.
    uint32_t rootEntry;
    /// Deepest level of any node (root = 0); bounds the walk's stack.
    int32_t depth;
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

/// Interaction lists of all groups: group g's nodes are nodeList[nodeOffset[g] .. nodeOffset[g+1]),
/// its leaves leafList[leafOffset[g] .. leafOffset[g+1]); entries are node indices.
struct ListView
{
    const int32_t* nodeOffset;
    const int32_t* leafOffset;
    const int32_t* nodeList;
    const int32_t* leafList;
    int32_t numGroups;
};

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
