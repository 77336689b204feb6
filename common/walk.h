#pragma once
/// @file walk.h
/// The group walk, once for both backends: a depth-first traversal with an explicit stack that
/// reports every node the group accepts as a multipole and every leaf it must open. Pass 1
/// (count) and pass 2 (write), on the CPU twin and on the GPU, call this same function with
/// different sinks, so their interaction lists cannot differ.

#include <cstdint>

#include "common/hostdevice.h"
#include "common/mac.h"
#include "common/tree_view.h"

namespace octwalk {

enum class WalkStatus : int32_t
{
    Ok            = 0,
    StackOverflow = 1,
};

/// What the walk does with one (non-empty) entry.
enum class EntryAction : int32_t
{
    Node = 0, ///< accepted: a multipole interaction
    Leaf = 1, ///< opened leaf: its bodies interact directly
    Open = 2, ///< opened internal node: its children are visited later
    Drop = 3, ///< TreePM: beyond the short-range cutoff, neither opened nor listed
};

/// The TreePM walk's decision (common/treepm.h): with d the nearest-image distance from the group's box to
/// the node's com, a node is dropped when d > r_cut and it is accepted (its pull would be cut off for every
/// body of the group) or all of it lies beyond r_cut (d > r_cut + R, R its extent); else the MAC decides as
/// in any periodic box, except that a node too wide for its distance is opened unless its expansion's error is
/// small beside the group's tolerance (groupHalf.w; shortRangeNodeErrorSmallEnough), and that once the group has a
/// tolerance any node whose truncation errs too much beside it is opened (shortRangeNodeTruncationSmallEnough). Both
/// read the node's mass from nodeCom, and only for nodes the MAC accepts.
HOST_DEVICE inline EntryAction classifyShortRangeEntry(F4 nodeMac, const F4* nodeCom, uint32_t entry, F4 groupCenter,
                                                       F4 groupHalf, const PeriodicView& box)
{
    const ShortRangeView& s = box.shortRange;
    const float d2          = boxPointDistance2Periodic(xyz(groupCenter), xyz(groupHalf), xyz(nodeMac), box);
    bool accepted           = d2 > nodeMac.w;
    if (accepted)
    {
        const Vec3f c     = nearestImage(xyz(nodeMac) - xyz(groupCenter), box);
        const float size2 = shortRangeNodeSize2(nodeMac.w, shortRangeDistance2(c), groupHalf);
        if (groupHalf.w > 0.0f)
        {
            const float mass = nodeCom[entry & ~kLeafBit].w;
            accepted         = shortRangeNodeTruncationSmallEnough(mass, nodeMac.w, d2, groupHalf.w, s) &&
                       (shortRangeNodeSmallEnough(size2, s) ||
                        shortRangeNodeErrorSmallEnough(mass, size2, d2, groupHalf.w, s));
        }
        else accepted = shortRangeNodeSmallEnough(size2, s);
    }
    if (d2 > s.cutoff2 && (accepted || shortRangeNodeOutOfReach(d2, nodeMac.w, s, box.boxSize)))
        return EntryAction::Drop;
    if (accepted) return EntryAction::Node;
    return (entry & kLeafBit) ? EntryAction::Leaf : EntryAction::Open;
}

/// The MAC (with nearest images in a periodic box) applied to one entry whose node's MAC word is
/// nodeMac. The walk below and the device's cooperative walk (device/walk_gpu.cu, which may fetch the
/// word through a texture) both decide with it.
HOST_DEVICE inline EntryAction classifyEntry(F4 nodeMac, const F4* nodeCom, uint32_t entry, F4 groupCenter,
                                             F4 groupHalf, const PeriodicView& box)
{
    if (box.boxSize > 0.0f && shortRangeOn(box.shortRange))
        return classifyShortRangeEntry(nodeMac, nodeCom, entry, groupCenter, groupHalf, box);
    if (acceptNode(nodeMac, groupCenter, groupHalf, box)) return EntryAction::Node;
    return (entry & kLeafBit) ? EntryAction::Leaf : EntryAction::Open;
}

HOST_DEVICE inline EntryAction classifyEntry(const TreeView& tree, uint32_t entry, F4 groupCenter, F4 groupHalf)
{
    return classifyEntry(tree.nodeMac[entry & ~kLeafBit], tree.nodeCom, entry, groupCenter, groupHalf, tree.periodic);
}

/// Applies classifyEntry to one entry: accepted -> sink.node(n); opened leaf -> sink.leaf(n);
/// opened internal node -> pushed. Returns false when the stack is full.
template<class Sink>
HOST_DEVICE inline bool visitEntry(const TreeView& tree, uint32_t entry, F4 groupCenter, F4 groupHalf, uint32_t* stack,
                                   int32_t& top, int32_t capacity, Sink& sink)
{
    int32_t node = int32_t(entry & ~kLeafBit);
    switch (classifyEntry(tree, entry, groupCenter, groupHalf))
    {
    case EntryAction::Node: sink.node(node); return true;
    case EntryAction::Leaf: sink.leaf(node); return true;
    case EntryAction::Open: break;
    case EntryAction::Drop: return true;
    }
    if (top >= capacity) return false;
    stack[top++] = entry;
    return true;
}

/// Walks the tree for one group. stack must hold capacity entries; walkStackCapacity(depth) suffices.
template<class Sink>
HOST_DEVICE inline WalkStatus walkGroup(const TreeView& tree, F4 groupCenter, F4 groupHalf, uint32_t* stack,
                                        int32_t capacity, Sink& sink)
{
    int32_t top = 0;
    if (!visitEntry(tree, tree.rootEntry, groupCenter, groupHalf, stack, top, capacity, sink))
    {
        return WalkStatus::StackOverflow;
    }
    while (top > 0)
    {
        uint32_t cell = stack[--top];
        for (int word = 0; word < 2; ++word)
        {
            U4 kids             = tree.children[2 * cell + word];
            uint32_t entries[4] = {kids.x, kids.y, kids.z, kids.w};
            for (int k = 0; k < 4; ++k)
            {
                if (entries[k] == kEmptyChild) continue;
                if (!visitEntry(tree, entries[k], groupCenter, groupHalf, stack, top, capacity, sink))
                {
                    return WalkStatus::StackOverflow;
                }
            }
        }
    }
    return WalkStatus::Ok;
}

/// Pass-1 sink: counts list entries and the body-body interactions the leaves imply.
struct CountSink
{
    const I2* leafRange;
    int32_t numInternal;
    int32_t nodes      = 0;
    int32_t leaves     = 0;
    int64_t leafBodies = 0;

    HOST_DEVICE void node(int32_t) { ++nodes; }
    HOST_DEVICE void leaf(int32_t n)
    {
        ++leaves;
        leafBodies += leafRange[n - numInternal].y;
    }
};

/// Pass-2 sink: writes the entries at the group's offsets.
struct WriteSink
{
    int32_t* nodeOut;
    int32_t* leafOut;

    HOST_DEVICE void node(int32_t n) { *nodeOut++ = n; }
    HOST_DEVICE void leaf(int32_t n) { *leafOut++ = n; }
};

} // namespace octwalk
