#pragma once
/// @file packed_tree.h
/// Packs the host tree into the flat arrays the walk reads (layout: common/tree_view.h).

#include <vector>

#include "common/tree_view.h"
#include "host/tree/octree.h"
#include "host/core/params.h"

namespace octwalk {

struct PackedTree
{
    std::vector<U4> children;
    std::vector<F4> nodeMac, nodeCom, nodeQuad;
    std::vector<I2> leafRange;
    int32_t numInternal = 0, numLeaves = 0, depth = 0;
    uint32_t rootEntry = 0;

    std::vector<I2> groupRange;
    std::vector<F4> groupCenter, groupHalf;

    std::vector<F4> bodies; ///< tree order: position, mass (float)

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
void groupBoxes(const std::vector<F4>& bodies, const std::vector<I2>& ranges, std::vector<F4>& center,
                std::vector<F4>& half);

} // namespace octwalk
