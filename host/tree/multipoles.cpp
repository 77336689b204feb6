#include "host/tree/octree.h"
#include "host/tree/room.h"

#include "common/multipole.h"
#include "host/tree/cell_units.h"

namespace octwalk {

namespace {

void storeMultipole(Multipoles& mp, int32_t c, const Moments& mo)
{
    mp.mass[c]   = mo.mass;
    mp.com[c]    = mo.com;
    mp.quad[c]   = mo.quad;
    mp.boxMin[c] = mo.lo;
    mp.boxMax[c] = mo.hi;
}

void leafMultipole(const HostTree& t, int32_t c, Multipoles& mp)
{
    storeMultipole(mp, c, leafMoments(t.pos.data(), t.mass.data(), t.cells.first[c], t.cells.count[c]));
}

void internalMultipole(const HostTree& t, int32_t c, Multipoles& mp)
{
    Moments kids[8];
    const Moments* kidPointers[8];
    int32_t count = 0;
    for (int32_t k : t.cells.child[c])
    {
        if (k < 0) continue;
        kids[count]        = {mp.mass[k], mp.com[k], mp.quad[k], mp.boxMin[k], mp.boxMax[k]};
        kidPointers[count] = kids + count;
        ++count;
    }
    storeMultipole(mp, c, combineMoments(kidPointers, count));
}

/// The multipoles of a cell and all cells below it, children before parents (depth <= kMaxTreeLevel).
void multipolesBelow(const HostTree& t, int32_t cell, Multipoles& mp)
{
    if (t.cells.isLeaf[cell])
    {
        leafMultipole(t, cell, mp);
        return;
    }
    for (int32_t k : t.cells.child[cell])
    {
        if (k >= 0) multipolesBelow(t, k, mp);
    }
    internalMultipole(t, cell, mp);
}

} // namespace

void computeMultipoles(HostTree& t)
{
    const OctreeCells& c = t.cells;
    const CellScratch& s = t.cellScratch;
    Multipoles& mp       = t.poles;
    int32_t n            = c.size();
    sizeForOverwrite(mp.mass, size_t(n));
    sizeForOverwrite(mp.com, size_t(n));
    sizeForOverwrite(mp.quad, size_t(n));
    sizeForOverwrite(mp.boxMin, size_t(n));
    sizeForOverwrite(mp.boxMax, size_t(n));
    if (n == 0) return;
    if (s.numCells != n || s.units.empty())
    {
        multipolesBelow(t, 0, mp); // cells that buildCells did not make: one thread
        return;
    }

    // Each subtree by one thread, in post-order (its cells need only its own cells and bodies; the
    // leaves come in body order, so the bodies stream in), then the top cells serially in reverse
    // pre-order (children before parents). Each cell sums in the same order as ever, whatever the
    // schedule.
    const std::vector<int32_t>& levelFirst = t.scratch.levelFirst;
    const int32_t numSubtrees              = int32_t(s.subtrees.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int32_t j = 0; j < numSubtrees; ++j)
    {
        const int32_t u = s.subtrees[j];
        multipolesBelow(t, unitLevelStarts(s, levelFirst, u)[s.units[u].level], mp);
    }
    for (int32_t u = int32_t(s.units.size()); u-- > 0;)
    {
        if (s.units[u].top) internalMultipole(t, unitLevelStarts(s, levelFirst, u)[s.units[u].level], mp);
    }
}

} // namespace octwalk
