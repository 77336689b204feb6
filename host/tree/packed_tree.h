#pragma once
/// @file packed_tree.h
/// Packs the host tree into the flat arrays the walk reads (layout: common/tree_view.h).

#include <vector>

#include "common/tree_view.h"
#include "device/pinned_memory.h"
#include "host/tree/octree.h"
#include "host/core/params.h"

namespace octwalk {

/// Everything the walk reads, in pinned host memory (device/pinned_memory.h): packed once and
/// copied to the device without a staging copy. Buffers keep their capacity from step to step.
struct PackedTree
{
    PinnedVector<U4> children;
    PinnedVector<F4> nodeMac, nodeCom, nodeQuad;
    PinnedVector<I2> leafRange;
    int32_t numInternal = 0, numLeaves = 0, depth = 0;
    uint32_t rootEntry = 0;

    PinnedVector<I2> groupRange;
    PinnedVector<F4> groupCenter, groupHalf;

    PinnedVector<F4> bodies; ///< tree order: position, mass (float)

    std::vector<int32_t> cellIndex; ///< packed index of every host cell (working memory of packTree)

    /// The periodic box and the host's correction table (boxSize 0: isolated); the solver sets it
    /// (the table lives in host/reference).
    PeriodicView periodic{nullptr, 0, 0.0f, 0.0f};

    TreeView treeView() const;
    GroupView groupView() const;
    BodyView bodyView() const;
};

/// Fills packed from the host tree; theta and the MAC are applied here (nodeMac.w), and the
/// quadrupoles are zeroed when p.use_quadrupole is false.
void packTree(const HostTree& tree, const Parameters& p, PackedTree& packed);

/// Tight float boxes (centre, half-size) of body ranges, so the box contains every float position.
/// @param[in]  bodies     positions (w ignored)
/// @param[in]  ranges     first body and count of each of numGroups groups
/// @param[out] center     numGroups centres
/// @param[out] half       numGroups half-sizes
void groupBoxes(const F4* bodies, const I2* ranges, int64_t numGroups, F4* center, F4* half);

/// Recomputes only the MAC radii (nodeMac.w) of a packed tree for another MAC or opening angle.
/// @param[in]     tree  the host tree packed into out
/// @param[in]     mac   the criterion
/// @param[in]     theta the opening angle, > 0
/// @param[in,out] out   the packed tree
void packMacRadii(const HostTree& tree, Mac mac, double theta, PackedTree& out);

/// Mac::Relative: sets every group's scale (groupHalf.w) from accelerations of the bodies in tree
/// order, by relativeGroupScale() with a_ref the median over the groups of their smallest |a|.
/// @param[in]     acc   an acceleration estimate per packed body (xyz; any common factor, e.g. G, cancels)
/// @param[in]     theta the nominal opening angle
/// @param[in,out] packed the packed tree whose groups are scaled
void setRelativeGroupScales(const F4* acc, double theta, PackedTree& packed);

} // namespace octwalk
