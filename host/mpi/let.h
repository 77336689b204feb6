#pragma once
/// @file let.h
/// Local Essential Trees (Warren & Salmon 1992; Bonsai's runtime/src/parallel.cpp): the part of a rank's
/// packed tree that another rank's groups can reach, as a packed tree of its own (common/tree_view.h).
///
/// The walk (common/walk.h) accepts a node for a group when acceptNode(nodeMac, centre, half) holds
/// (common/mac.h): the squared minimum distance from the group's box to the node's centre of mass exceeds
/// the node's squared MAC radius times 1 + groupHalf.w. That distance can only grow when the box shrinks,
/// so a node that the box B around all of a rank's groups accepts (with B's largest scale w) is accepted by
/// every one of those groups: the essential tree sends it closed, its multipoles without its children.
/// Every node it does not accept is sent with all its children, a leaf with its bodies. The walk of a group
/// inside B then meets the same nodes, in the same order, with the same words, and takes the same
/// decisions: its interaction lists are those of the full tree (renumbered) and its forces are
/// bit-identical (tests/unit/test_let.cpp). The walk decides in float, whose rounding is not monotone in
/// the box to the last bit, so B is widened and the radius scaled by margins far above float's rounding
/// (acceptedByEveryGroup); they only make the tree a little larger. The monotonicity holds for Mac::Octgrav,
/// Mac::Bonsai and Mac::Relative alike (the radius does not depend on the group), but the relative MAC's
/// scales come from an estimate walk of the rank's own tree: the distributed evaluation takes Octgrav's or
/// Bonsai's MAC.
///
/// In a periodic box under TreePM (common/treepm.h) the walk drops every node whose nearest image lies beyond
/// the short-range cutoff plus the node's extent, and its acceptance depends on more than the box. The
/// essential tree of a periodic tree is therefore the source tree without the nodes that every group in B
/// drops (droppedByEveryGroup: by B's nearest-image distance, with the same margins) and sends no node closed:
/// what it holds are the bodies within reach of the short-range force of B, and the walk of a group in B takes
/// the same decisions on it as on the full tree. (When no leaf is within reach no tree is sent, although an
/// internal node whose centre of mass lies within the cutoff might still have been taken as a multipole.) The
/// Ewald sum (a periodic box without TreePM) needs every body's pull and is not distributed.

#include <cstdint>
#include <string>
#include <vector>

#include "common/tree_view.h"
#include "common/vec.h"

namespace octwalk::mpi {

/// The box of a rank's groups, as other ranks build their essential trees for it.
struct GroupsBox
{
    Vec3d lo{0, 0, 0}, hi{0, 0, 0}; ///< the union of the groups' float boxes (centre -/+ half), in double
    double maxScale   = 0;          ///< the largest groupHalf.w of the groups
    int32_t numGroups = 0;          ///< 0: the rank has no bodies, and no tree is built for it
};

/// The union of the boxes of groups (numGroups 0 for none).
GroupsBox groupsBox(const GroupView& groups);

/// The groups cut into maxBoxes runs of consecutive groups (tree order: compact in space) of equal count, the
/// box of each: what a rank sends the others to cut its essential trees for. One box around all of a rank's
/// groups can reach far into another rank's domain (a range of Morton keys is rarely a box); a node is sent
/// closed (or, in a periodic box, left out) for every box of the list, which it is more often for small boxes.
/// With halveJumps, a run whose box has a side over twice the median run's largest side (one that crosses from
/// one coarse cell of the curve to the next) is halved, until none is or there are 4 maxBoxes runs: in a periodic
/// box that shrinks the short range's essential trees several-fold, in an isolated Plummer sphere it left them as
/// they were and made their cut 1.2-1.4 times slower (benchmarks/results/mpi/bench_let_halving_2cores.txt), so
/// the distributed evaluation halves in periodic boxes only. Empty for no groups.
std::vector<GroupsBox> groupsBoxes(const GroupView& groups, int32_t maxBoxes, bool halveJumps = false);

/// Whether acceptNode accepts the node for every group whose box lies in box and whose scale is at most
/// box.maxScale, with margins that cover float's rounding in acceptNode: the box widened by 2^-20 of the
/// largest coordinate involved and the radius scaled by 1 + 2^-16.
bool acceptedByEveryGroup(F4 nodeMac, const GroupsBox& box);

/// Whether the short-range walk (common/walk.h classifyShortRangeEntry) drops the node for every group whose box
/// lies in box: its nearest image is farther from box than the cutoff plus its extent, with acceptedByEveryGroup's
/// margins.
bool droppedByEveryGroup(F4 nodeMac, const GroupsBox& box, const PeriodicView& periodic);

/// A packed tree cut from another for the groups inside one box (layout of common/tree_view.h: internal
/// nodes, then leaves, each breadth-first; children in octant order). A closed node, sent without its
/// children or bodies, is a leaf with no bodies and leafClosed set: every group in the box accepts it.
struct EssentialTree
{
    std::vector<U4> children;
    std::vector<F4> nodeMac, nodeCom, nodeQuad;
    std::vector<I2> leafRange;
    std::vector<uint8_t> leafClosed; ///< per leaf
    std::vector<F4> bodies;          ///< the bodies of the open leaves, leaf by leaf
    /// Per node: its index in the tree it was cut from (kept by the builder, not sent).
    std::vector<int32_t> source;
    int32_t numInternal = 0, numLeaves = 0, depth = 0;
    uint32_t rootEntry = 0;
    float farField2    = 0.0f;

    bool empty() const { return numInternal + numLeaves == 0; }
    int32_t numNodes() const { return numInternal + numLeaves; }
    /// An isolated tree (the walk reads no periodic table).
    TreeView view() const;
    /// The tree in the periodic box of its source tree (TreePM's short range; no Ewald table).
    TreeView view(const PeriodicView& periodic) const;
    BodyView bodyView() const;
};

/// Cuts the essential tree of box from a packed tree (its nodes' words, leaves and bodies are copied as
/// they are). Empty when the box has no groups, the tree no nodes, or (periodic) no body within reach.
/// ParameterError for a periodic tree without TreePM's short range.
/// @param[in] tree    a packed tree, isolated or periodic under TreePM
/// @param[in] bodies  its bodies (tree order)
/// @param[in] box     the other rank's groups
EssentialTree buildEssentialTree(const TreeView& tree, const BodyView& bodies, const GroupsBox& box);

/// The same for groups that lie, each, in one of boxes (groupsBoxes): a node is sent closed when every box
/// accepts it. Empty when the boxes hold no groups or the tree no nodes.
EssentialTree buildEssentialTree(const TreeView& tree, const BodyView& bodies, const std::vector<GroupsBox>& boxes);

/// The working storage of buildEssentialTree: the source tree's nodes in the order the cut meets them.
struct EssentialTreeScratch
{
    /// How a node of the source tree enters the essential tree.
    enum class Kind : uint8_t
    {
        Open,    ///< internal, sent with its children
        Bodies,  ///< leaf, sent with its bodies
        Closed,  ///< sent as a leaf without bodies: every group accepts it
        Dropped, ///< periodic: not sent, every group drops it (its parent's slot is empty)
    };
    /// A node of the source tree met by the breadth-first traversal.
    struct Visit
    {
        uint32_t entry;
        int32_t level;
        Kind kind;
        int64_t firstChild; ///< Open: where its children are in the traversal
    };
    std::vector<Visit> visits;
    std::vector<uint32_t> entry; ///< per visit, its entry in the essential tree
    std::vector<int64_t> opened; ///< per visit of a level, the children it opens
};

/// The same into let with scratch, whose storage is reused: a tree cut every step into the same objects costs
/// no fresh memory (whose first touch, page by page, took longer than the cut itself).
void buildEssentialTree(const TreeView& tree, const BodyView& bodies, const std::vector<GroupsBox>& boxes,
                        EssentialTree& let, EssentialTreeScratch& scratch);

/// Appends the tree's bytes to out (nothing for an empty tree).
void serializeEssentialTree(const EssentialTree& let, std::vector<char>& out);

/// Reads a tree that serializeEssentialTree wrote (an empty tree from 0 bytes), checking its header, its
/// sizes and every child entry and leaf range; MpiError naming `from` (the sending rank) otherwise.
EssentialTree deserializeEssentialTree(const char* data, size_t size, const std::string& from);

/// The same into let, whose arrays' storage is reused.
void deserializeEssentialTree(const char* data, size_t size, const std::string& from, EssentialTree& let);

/// std::logic_error naming `from`, the group and the node when a list of lists opens a closed leaf of let:
/// a group outside the box the tree was cut for, or a margin of acceptedByEveryGroup too small.
void checkClosedLeavesNotOpened(const EssentialTree& let, const int64_t* leafOffset, const int32_t* leafList,
                                int32_t numGroups, const std::string& from);

} // namespace octwalk::mpi
