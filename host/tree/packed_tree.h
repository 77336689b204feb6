#pragma once
/// @file packed_tree.h
/// Packs the host tree into the flat arrays the walk reads (layout: common/tree_view.h).

#include <vector>

#include "common/refit.h"
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

    /// Wall seconds of the last packTree's parts, for profiles: packed indices and levels, the cells'
    /// nodes, the bodies and groups.
    double packIndicesSeconds = 0, packNodesSeconds = 0, packBodiesSeconds = 0;

    /// Internal nodes by level: level L's are [internalLevelFirst[L], internalLevelFirst[L + 1]),
    /// depth + 2 entries (the refit's order, common/refit.h).
    std::vector<int32_t> internalLevelFirst;

    /// The periodic box and the host's correction table (boxSize 0: isolated); the solver sets it
    /// (the table lives in host/reference).
    PeriodicView periodic{nullptr, 0, 0.0f, 0.0f};

    /// TreeView::farField2: far_field_ratio^2 (packTree; in a periodic box for the groups that shift each node once,
    /// groupFarField2).
    float farField2 = 0.0f;

    TreeView treeView() const;
    GroupView groupView() const;
    BodyView bodyView() const;
};

/// What packTree fills.
enum class PackContent
{
    /// Everything the walk reads.
    Everything,
    /// The topology alone: children, leaf and group ranges, levels; the node, body and group-box arrays
    /// are sized but not filled, for a refit to fill them (the pipeline, host/sim/pipeline.h, whose
    /// builds then need no multipoles: computeMultipoles may be skipped).
    Topology,
};

/// Fills packed from the host tree; theta and the MAC are applied here (nodeMac.w), and the
/// quadrupoles are zeroed when p.use_quadrupole is false.
void packTree(const HostTree& tree, const Parameters& p, PackedTree& packed,
              PackContent content = PackContent::Everything);

/// Tight float boxes (centre, half-size) of body ranges, so the box contains every float position.
/// @param[in]  bodies     positions (w ignored)
/// @param[in]  ranges     first body and count of each of numGroups groups
/// @param[out] center     numGroups centres
/// @param[out] half       numGroups half-sizes
void groupBoxes(const F4* bodies, const I2* ranges, int64_t numGroups, F4* center, F4* half);

/// float(1 / theta): the inverse opening angle as the packer rounds it.
float packedInvTheta(const Parameters& p);

/// TreeView::farField2: float(far_field_ratio^2), in a periodic box too (common/far_field.h: groupFarField2).
float packedFarField2(const Parameters& p);

/// 1, or 0 when p.use_quadrupole is false (the packed quadrupoles are zeroed).
float packedQuadScale(const Parameters& p);

/// 1 when the packed quadrupoles carry their spread (p.softened_quadrupole with the quadrupole on), else 0.
float packedSpreadScale(const Parameters& p);

/// The refit view of a packed tree (host memory): its topology and outputs, and the bodies' current
/// positions and masses in tree order.
/// @param[in,out] packed   packed by packTree; its node, body and group arrays are the outputs
/// @param[in]     pos      numBodies positions, tree order
/// @param[in]     mass     numBodies masses, tree order
/// @param[in]     moments  working memory of numInternal + numLeaves entries
/// @param[in]     p        the theta, MAC and quadrupole switch packTree was given
RefitView refitView(PackedTree& packed, const Vec3d* pos, const double* mass, Moments* moments, const Parameters& p);

/// The levels of the internal nodes of a packed tree (pointing into packed.internalLevelFirst).
RefitLevels refitLevels(const PackedTree& packed);

/// Recomputes only the MAC radii (nodeMac.w) of a packed tree for another MAC or opening angle.
/// @param[in]     tree  the host tree packed into out
/// @param[in]     mac   the criterion
/// @param[in]     theta the opening angle, > 0
/// @param[in,out] out   the packed tree
void packMacRadii(const HostTree& tree, Mac mac, double theta, PackedTree& out);

/// The relative MAC's probe points: the centre of each group's box, group g's at index g (so each
/// group's box and walk serve its probe). The centre alone estimates c_g as well as the centre and
/// the 8 corners (measured: benchmarks/results/accuracy/mac_study.md) at a ninth of the cost.
/// @param[in]  packed the packed tree
/// @param[out] probes the points (w = 0)
/// @param[out] ranges first probe and count (1) of each group
void relativeProbes(const PackedTree& packed, std::vector<F4>& probes, std::vector<I2>& ranges);

/// Mac::Relative: sets every group's scale (groupHalf.w) by relativeGroupScale() from estimates of
/// (acceleration, potential) at points of the group (any common factor, e.g. G, cancels): c_g is the
/// largest cancellation() among them, c_ref the median of c_g over the groups.
/// @param[in]     accPot estimates, group g's at ranges[g]
/// @param[in]     ranges first estimate and count of each group of packed
/// @param[in,out] packed the packed tree whose groups are scaled
void setRelativeGroupScales(const F4* accPot, const I2* ranges, PackedTree& packed);

} // namespace octwalk
