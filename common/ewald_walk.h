#pragma once
/// @file ewald_walk.h
/// The sources of a group's Ewald expansion (common/ewald.h, EwaldLocal), once for both backends
/// (host/cpu/ewald_cpu.cpp, device/ewald_gpu.cu): the entries of the group's lists (addEwaldListEntry), or,
/// for a group with long lists (ewaldGroupWalks), the coarser sources of a walk of its own (EwaldWalk).
///
/// The force kernels take every source of the group's lists at one image about the group's centre c: an
/// accepted node at the image of its com nearest to c, each body of an opened leaf at its own image nearest
/// to c. The correction psi of those images is smooth on the scale of L/2 (its singularities are the other
/// lattice points), so wherever all the bodies of an octree cell take one image, the cell's correction is its
/// mass + quadrupole at that image, however finely the group's walk split it: the first term left out is the
/// cell's octupole, (side / L)^3 of its share. So this walk takes, top down, a node the group's walk accepted
/// (the same acceptNode, so at the same image), else a cell small and light enough (kEwaldCellMaxSide,
/// kEwaldCellMaxMoment) that lies on one side of every half-box boundary about c, else such a leaf as a whole
/// when its bodies share one image (leafHasOneImage), else an opened leaf's bodies one by one, and opens the
/// rest. BM_GpuPeriodic's clustered box at 2^20 (CPU twin, 45 bodies per group): 978 sources per group
/// against the lists' 3896 nodes and leaf bodies.
///
/// The cells are the octree's: the periodic tree's root cell is the box [0, L)^3 and every child is an
/// octant of its parent (host/tree/octree.h), so the walk knows each cell's cube from the path to it
/// (EwaldWalk.TheDescentsCellsHoldTheirBodies checks it).

#include <cstdint>

#include "common/ewald.h"
#include "common/mac.h"
#include "common/sfc.h"
#include "common/tree_view.h"

namespace octwalk {

/// Side, as a fraction of L, of the widest cell that the correction takes as one multipole when the group's
/// walk opened it.
constexpr float kEwaldCellMaxSide = 1.0f / 16.0f;

/// Largest (cell mass / box mass) (side / L)^3 of a cell (or leaf) that the correction takes as one multipole
/// when the group's walk opened it: the octupole left out grows as mass side^3, so a cluster's dense cells
/// open further than a uniform box's. Measured at 2^15 (tests/unit/test_ewald.cpp,
/// EwaldWalk.CellsAsMultipolesMatchTheListsSourceBySource; sources per group, largest difference from the
/// lists' sources in G M / L^2), uniform and clustered box: 1e-7 (kept) 3962 at 4.3e-6 and 538 at 5.1e-5;
/// 1e-6 3675 at 4.5e-6 and 387 at 7.0e-5; 1e-8 8361 at 2.1e-6 and 915 at 2.1e-5; cells up to L/8 with 4e-6
/// 2032 at 5.3e-5 and 269 at 1.8e-4 (the lists: 8364 and 2193).
constexpr float kEwaldCellMaxMoment = 1e-7f;

/// Margin, in units of L, by which a cell must clear a half-box boundary about the group's centre to count as
/// on one side of it: far above the float rounding of a body's position, the centre and imageShift (about
/// 1e-7 L), so every body and com inside the cell gets the cell's imageShift.
constexpr float kEwaldImageMargin = 1e-5f;

/// An octree cell on the correction walk's stack: its entry (as in TreeView::children) and its cube
/// [lo, lo + side)^3 in units of L (exact in float: side = 2^-level, lo a multiple of it).
struct EwaldCell
{
    uint32_t entry;
    float side;
    float lo[3];
};

/// Stack entries the correction walk can need in any tree (depth <= kMaxTreeLevel).
constexpr int32_t kEwaldWalkStackCapacity = walkStackCapacity(kMaxTreeLevel);

/// Whether every point of the cell, with the margin, takes one image about centreU (the group's centre in
/// units of L), and that image's imageShift.
HOST_DEVICE inline bool cellHasOneImage(const EwaldCell& cell, Vec3f centreU, Vec3f& shift)
{
    const float c[3] = {centreU.x, centreU.y, centreU.z};
    float k[3];
    for (int a = 0; a < 3; ++a)
    {
        const float low = addNoFma(addNoFma(cell.lo[a], -c[a]), 0.5f);
        k[a]            = floorf(addNoFma(low, -kEwaldImageMargin));
        if (floorf(addNoFma(addNoFma(low, cell.side), kEwaldImageMargin)) != k[a]) return false;
    }
    shift = {k[0], k[1], k[2]};
    return true;
}

/// Whether the bodies [range.x, range.x + range.y) of a leaf all take one image about centre (the same
/// imageShift); shift gets the first body's. loadBody(j) returns body j (position xyz, mass).
template<class LoadBody>
HOST_DEVICE inline bool leafHasOneImage(const PeriodicView& box, I2 range, Vec3f centre, LoadBody loadBody,
                                        Vec3f& shift)
{
    shift         = imageShift(xyz(loadBody(range.x)), centre, box);
    bool oneImage = true;
    for (int32_t j = range.x + 1; j < range.x + range.y; ++j)
    {
        const Vec3f s = imageShift(xyz(loadBody(j)), centre, box);
        oneImage      = oneImage && s.x == shift.x && s.y == shift.y && s.z == shift.z;
    }
    return oneImage;
}

/// Adds one entry of a group's lists to its expansion about centre: an accepted node (leaf false) at the
/// image of its com, or an opened leaf (bodies range) as a whole when its bodies share one image, else body
/// by body; com xyz + mass and traceless quadrupole q about the com. The lists' way for groups that do not
/// walk (ewaldGroupWalks).
template<class LoadBody>
HOST_DEVICE inline void addEwaldListEntry(const PeriodicView& box, F4 com, const SymTensor<float>& q, bool leaf,
                                          I2 range, Vec3f centre, LoadBody loadBody, EwaldLocal& loc)
{
    Vec3f shift{0, 0, 0};
    if (!leaf) shift = imageShift(xyz(com), centre, box);
    if (!leaf || leafHasOneImage(box, range, centre, loadBody, shift))
    {
        addEwaldLocalTerm<true>(box, shiftedImage(xyz(com), shift, box) - centre, com.w, q, loc);
        return;
    }
    const SymTensor<float> none{0, 0, 0, 0, 0, 0};
    for (int32_t j = range.x; j < range.x + range.y; ++j)
    {
        const F4 b = loadBody(j);
        addEwaldLocalTerm<false>(box, imageNearest(xyz(b), centre, box) - centre, b.w, none, loc);
    }
}

/// Whether a group whose lists hold listEntries entries takes the correction's own walk (box.walk.minEntries).
HOST_DEVICE inline bool ewaldGroupWalks(int64_t listEntries, const PeriodicView& box)
{
    return listEntries >= box.walk.minEntries;
}

/// One source of the expansion: offset d0 = image - centre, mass, traceless quadrupole about it (zero for a
/// body).
struct EwaldSource
{
    Vec3f d0;
    float mass;
    SymTensor<float> quad;
};

/// Whether an opened cell (node n) is small and light enough to take as one multipole (kEwaldCellMaxSide,
/// kEwaldCellMaxMoment); boxMass is the root's mass.
HOST_DEVICE inline bool ewaldCellSmallEnough(const TreeView& tree, int32_t n, const EwaldCell& cell, float boxMass)
{
    return cell.side <= kEwaldCellMaxSide &&
           tree.nodeCom[n].w * (cell.side * cell.side * cell.side) <= kEwaldCellMaxMoment * boxMass;
}

/// The child (entry) of a cell in octant 0..7 (x the slowest bit, as TreeView::children orders them).
HOST_DEVICE inline EwaldCell ewaldChildCell(const EwaldCell& cell, uint32_t entry, int octant)
{
    const float half = 0.5f * cell.side;
    return {entry,
            half,
            {cell.lo[0] + ((octant & 4) ? half : 0.0f), cell.lo[1] + ((octant & 2) ? half : 0.0f),
             cell.lo[2] + ((octant & 1) ? half : 0.0f)}};
}

/// What the correction walk does with a cell: takes it as one source (out), gives the bodies of a leaf across
/// a half-box boundary one by one, or opens it.
enum class EwaldStep
{
    Source,
    Bodies,
    Open
};

/// The correction walk's decision on one cell, the same for both walks (EwaldWalk, ewaldWarpWalkExpansion):
/// a node the group's walk accepted (acceptNode, at the image of its com), else a small cell on one side of
/// every half-box boundary, or such a leaf whose bodies share one image, as one source; else a leaf's bodies;
/// else open. centreU: the group's centre in units of L; boxMass: the root's mass.
template<class LoadBody>
HOST_DEVICE inline EwaldStep ewaldCellStep(const TreeView& tree, const EwaldCell& cell, F4 groupCenter, F4 groupHalf,
                                           Vec3f centreU, float boxMass, LoadBody loadBody, EwaldSource& out)
{
    const PeriodicView& box = tree.periodic;
    const Vec3f centre      = xyz(groupCenter);
    const int32_t n         = int32_t(cell.entry & ~kLeafBit);
    const bool leaf         = (cell.entry & kLeafBit) != 0;
    Vec3f shift{0, 0, 0};
    bool whole = acceptNode(tree.nodeMac[n], groupCenter, groupHalf, box);
    if (whole) shift = imageShift(xyz(tree.nodeCom[n]), centre, box);
    else if (ewaldCellSmallEnough(tree, n, cell, boxMass))
    {
        whole = cellHasOneImage(cell, centreU, shift) ||
                (leaf && leafHasOneImage(box, tree.leafRange[n - tree.numInternal], centre, loadBody, shift));
    }
    if (whole)
    {
        const F4 com = tree.nodeCom[n];
        out          = {shiftedImage(xyz(com), shift, box) - centre, com.w,
                        unpackQuadrupole(tree.nodeQuad[2 * n], tree.nodeQuad[2 * n + 1])};
        return EwaldStep::Source;
    }
    return leaf ? EwaldStep::Bodies : EwaldStep::Open;
}

/// The group's centre in units of L.
HOST_DEVICE inline Vec3f ewaldCentreInBoxUnits(F4 groupCenter, const PeriodicView& box)
{
    return {groupCenter.x * box.invBoxSize, groupCenter.y * box.invBoxSize, groupCenter.z * box.invBoxSize};
}

/// The correction walk of one group, one source at a time (depth first, children in octant order).
struct EwaldWalk
{
    EwaldCell* stack;
    int32_t top;
    int32_t nextBody, endBody; ///< bodies of a leaf across a half-box boundary still to give
    float boxMass;             ///< the root's mass

    /// Starts at the root cell; stack holds kEwaldWalkStackCapacity cells.
    HOST_DEVICE EwaldWalk(const TreeView& tree, EwaldCell* cells)
        : stack(cells), top(1), nextBody(0), endBody(0), boxMass(tree.nodeCom[tree.rootEntry & ~kLeafBit].w)
    {
        stack[0] = {tree.rootEntry, 1.0f, {0.0f, 0.0f, 0.0f}};
    }

    /// Pushes the children of internal node n (cell) in octant order.
    HOST_DEVICE void open(const TreeView& tree, int32_t n, const EwaldCell& cell)
    {
        for (int word = 0; word < 2; ++word)
        {
            const U4 kids             = tree.children[2 * n + word];
            const uint32_t entries[4] = {kids.x, kids.y, kids.z, kids.w};
            for (int k = 0; k < 4; ++k)
            {
                if (entries[k] != kEmptyChild) stack[top++] = ewaldChildCell(cell, entries[k], 4 * word + k);
            }
        }
    }

    /// The next source of the group (centre and half-sizes as its walk had them), or false when there is none.
    /// loadBody(j) returns body j (position xyz, mass).
    template<class LoadBody>
    HOST_DEVICE bool next(const TreeView& tree, F4 groupCenter, F4 groupHalf, LoadBody loadBody, EwaldSource& out)
    {
        const PeriodicView& box = tree.periodic;
        const Vec3f centre      = xyz(groupCenter);
        if (nextBody < endBody)
        {
            const F4 b = loadBody(nextBody++);
            out        = {imageNearest(xyz(b), centre, box) - centre, b.w, {0, 0, 0, 0, 0, 0}};
            return true;
        }
        const Vec3f centreU = ewaldCentreInBoxUnits(groupCenter, box);
        while (top > 0)
        {
            const EwaldCell cell = stack[--top];
            const int32_t n      = int32_t(cell.entry & ~kLeafBit);
            const EwaldStep step = ewaldCellStep(tree, cell, groupCenter, groupHalf, centreU, boxMass, loadBody, out);
            if (step == EwaldStep::Source) return true;
            if (step == EwaldStep::Bodies)
            {
                const I2 range = tree.leafRange[n - tree.numInternal];
                const F4 b     = loadBody(range.x);
                nextBody       = range.x + 1;
                endBody        = range.x + range.y;
                out            = {imageNearest(xyz(b), centre, box) - centre, b.w, {0, 0, 0, 0, 0, 0}};
                return true;
            }
            open(tree, n, cell);
        }
        return false;
    }
};

// The correction walk by the 32 lanes of a warp (EwaldWalkConfig::warp): a stack of cells to open; each
// round takes the top b <= kEwaldWarpParents cells off it (batch q = 0 the deepest in the stack), lane l takes
// child l % 8 of batch cell l / 8 (ewaldWarpChild) and steps it (ewaldWarpLaneStep), its source's term added to
// lane l's own partial expansion; the children to open go back on the stack in lane order. The lanes' partial
// expansions are reduced by the butterfly of the lists' way (device/ewald_gpu.cu), so the CPU twin
// (host/cpu/ewald_cpu.cpp), stepping the lanes one after another, rounds the same sums. The sources are the
// one-thread walk's (the same ewaldCellStep on the same cells), summed in another order.
//
// The stack stays sorted by level from the bottom (a batch's children are deeper than what is left under
// it, and lane order keeps the batch's order), so a level's cells come from one round's batch and number at
// most 32 (4 cells x 8 children): kEwaldWarpStackCapacity cells hold any tree.
//
// Counted on the CPU twin for BM_GpuPeriodic's boxes at 2^20 (every 16th group; not timed): clustered, 977
// sources a group in 35 rounds, the busiest lane adding 39 terms, where the lists' way has 2953 entries, 93 a
// lane (the one-thread walk: 977 terms in one thread); uniform, 3324 sources in 120 rounds, 109 terms the
// busiest lane (lists 11310 entries, 354 a lane). The stack's deepest point: 30 and 59 cells, mean over groups.

constexpr int kEwaldWarpLanes   = 32; ///< lanes of the warp walk
constexpr int kEwaldWarpParents = 4;  ///< cells opened a round: 8 children each, one a lane
static_assert(kEwaldWarpLanes == 8 * kEwaldWarpParents, "one lane per child of the round's cells");
/// Cells on the warp walk's stack in any tree: 32 of each level 0..kMaxTreeLevel.
constexpr int32_t kEwaldWarpStackCapacity = kEwaldWarpLanes * (kMaxTreeLevel + 1);

/// Child octant 0..7 of an internal cell: false when it is empty, else child gets it.
HOST_DEVICE inline bool ewaldWarpChild(const TreeView& tree, const EwaldCell& parent, int octant, EwaldCell& child)
{
    const int32_t n      = int32_t(parent.entry & ~kLeafBit);
    const U4 kids        = tree.children[2 * n + octant / 4];
    const int k          = octant % 4;
    const uint32_t entry = k == 0 ? kids.x : k == 1 ? kids.y : k == 2 ? kids.z : kids.w;
    if (entry == kEmptyChild) return false;
    child = ewaldChildCell(parent, entry, octant);
    return true;
}

/// One lane's step of the warp walk on a cell: its source (or a leaf's bodies, one by one) added to the lane's
/// expansion loc; true when the cell is to be opened instead. centreU and boxMass as ewaldCellStep.
template<class LoadBody>
HOST_DEVICE inline bool ewaldWarpLaneStep(const TreeView& tree, const EwaldCell& cell, F4 groupCenter, F4 groupHalf,
                                          Vec3f centreU, float boxMass, LoadBody loadBody, EwaldLocal& loc)
{
    const PeriodicView& box = tree.periodic;
    EwaldSource s;
    const EwaldStep step = ewaldCellStep(tree, cell, groupCenter, groupHalf, centreU, boxMass, loadBody, s);
    if (step == EwaldStep::Open) return true;
    if (step == EwaldStep::Source)
    {
        addEwaldLocalTerm<true>(box, s.d0, s.mass, s.quad, loc);
        return false;
    }
    const Vec3f centre = xyz(groupCenter);
    const I2 range     = tree.leafRange[int32_t(cell.entry & ~kLeafBit) - tree.numInternal];
    const SymTensor<float> none{0, 0, 0, 0, 0, 0};
    for (int32_t j = range.x; j < range.x + range.y; ++j)
    {
        const F4 b = loadBody(j);
        addEwaldLocalTerm<false>(box, imageNearest(xyz(b), centre, box) - centre, b.w, none, loc);
    }
    return false;
}

/// A group's expansion: the sum of every source's addEwaldLocalTerm in the walk's order (the same on both
/// backends). stack holds kEwaldWalkStackCapacity cells.
template<class LoadBody>
HOST_DEVICE inline EwaldLocal ewaldGroupExpansion(const TreeView& tree, F4 groupCenter, F4 groupHalf, LoadBody loadBody,
                                                  EwaldCell* stack)
{
    EwaldLocal loc = zeroEwaldLocal();
    EwaldWalk walk(tree, stack);
    EwaldSource s;
    while (walk.next(tree, groupCenter, groupHalf, loadBody, s))
    {
        addEwaldLocalTerm<true>(tree.periodic, s.d0, s.mass, s.quad, loc);
    }
    return loc;
}

} // namespace octwalk
