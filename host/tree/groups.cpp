#include "host/tree/octree.h"
#include "host/tree/room.h"

#include <algorithm>

#include "host/tree/cell_units.h"

namespace octwalk {

namespace {

/// Whether a cell of count bodies whose parent holds parentCount is a group (else its children are
/// searched): at most nGroup bodies, and not kGroupContrast times fewer than its parent.
bool isGroup(int32_t count, int32_t parentCount, int nGroup)
{
    return count <= nGroup && int64_t(parentCount) <= int64_t(kGroupContrast) * count;
}

/// Emits the groups below a cell, in Morton order: children that isGroup accepts become groups (with
/// merge, a run of such siblings is joined while together they hold at most nGroup bodies, so a merged
/// group stays inside its parent's box); the others recurse (depth <= kMaxTreeLevel). A leaf is cut
/// into chunks of nGroup (more than one only for a maximum-depth leaf of coincident bodies).
void collectGroups(const OctreeCells& c, int32_t cell, int nGroup, bool merge, std::vector<I2>& groups)
{
    if (c.isLeaf[cell])
    {
        for (int32_t f = c.first[cell], end = f + c.count[cell]; f < end; f += nGroup)
        {
            groups.push_back({f, std::min(nGroup, end - f)});
        }
        return;
    }
    bool previousSiblingIsGroup = false;
    for (int32_t k : c.child[cell])
    {
        if (k < 0) continue;
        if (!isGroup(c.count[k], c.count[cell], nGroup))
        {
            collectGroups(c, k, nGroup, merge, groups);
            previousSiblingIsGroup = false;
            continue;
        }
        if (merge && previousSiblingIsGroup && groups.back().y + c.count[k] <= nGroup) groups.back().y += c.count[k];
        else groups.push_back({c.first[k], c.count[k]});
        previousSiblingIsGroup = true;
    }
}

/// collectGroups over top cell u, in pieces: a child that isGroup refuses is entered when it is a top
/// cell and is a piece of its own when it is a subtree (its groups are collected in parallel); the
/// others are groups, merged as collectGroups merges them.
void collectTopGroups(const OctreeCells& c, const CellScratch& s, int32_t u, int nGroup, bool merge,
                      std::vector<GroupPiece>& pieces)
{
    bool previousSiblingIsGroup = false;
    for (int32_t v : s.units[u].childUnit)
    {
        if (v < 0) continue;
        const CellUnit& child = s.units[v];
        if (!isGroup(child.count, s.units[u].count, nGroup))
        {
            if (child.top) collectTopGroups(c, s, v, nGroup, merge, pieces);
            else pieces.push_back({{0, 0}, v});
            previousSiblingIsGroup = false;
            continue;
        }
        if (merge && previousSiblingIsGroup && pieces.back().group.y + child.count <= nGroup)
        {
            pieces.back().group.y += child.count;
        }
        else pieces.push_back({{child.first, child.count}, -1});
        previousSiblingIsGroup = true;
    }
}

} // namespace

void makeGroups(int nGroup, HostTree& t, bool merge)
{
    const OctreeCells& c = t.cells;
    CellScratch& s       = t.cellScratch;
    if (c.count[0] <= nGroup)
    {
        t.groups.assign(1, {0, c.count[0]});
        return;
    }
    if (s.numCells != c.size() || s.units.empty())
    {
        // Cells that buildCells did not make (its units do not describe them): one recursion.
        t.groups.clear();
        collectGroups(c, 0, nGroup, merge, t.groups);
        return;
    }
    const std::vector<int32_t>& levelFirst = t.scratch.levelFirst;
    const int32_t numSubtrees              = int32_t(s.subtrees.size());
    s.unitGroups.resize(s.units.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (int32_t j = 0; j < numSubtrees; ++j)
    {
        const int32_t u = s.subtrees[j];
        // Collected through a vector on this thread's stack: the headers in s.unitGroups lie side by
        // side, and every push_back would write a line other threads read.
        std::vector<I2> groups;
        groups.swap(s.unitGroups[u]);
        groups.clear();
        // Even a subtree small enough to be one group: collectTopGroups splits it when its parent holds
        // kGroupContrast times more.
        const int32_t root = unitLevelStarts(s, levelFirst, u)[s.units[u].level];
        collectGroups(c, root, nGroup, merge, groups);
        groups.swap(s.unitGroups[u]);
    }
    std::vector<GroupPiece>& pieces = s.groupPieces;
    pieces.clear();
    if (s.units[0].top) collectTopGroups(c, s, 0, nGroup, merge, pieces);
    else pieces.push_back({{0, 0}, 0});

    // Each piece's place in the groups, then the pieces copied there in parallel.
    const int32_t numPieces = int32_t(pieces.size());
    s.pieceFirst.resize(size_t(numPieces) + 1);
    s.pieceFirst[0] = 0;
    for (int32_t k = 0; k < numPieces; ++k)
    {
        const int32_t u     = pieces[k].unit;
        s.pieceFirst[k + 1] = s.pieceFirst[k] + (u < 0 ? 1 : int32_t(s.unitGroups[u].size()));
    }
    sizeForOverwrite(t.groups, size_t(s.pieceFirst[numPieces]));
#pragma omp parallel for schedule(dynamic, 1)
    for (int32_t k = 0; k < numPieces; ++k)
    {
        const int32_t u = pieces[k].unit;
        if (u < 0) t.groups[s.pieceFirst[k]] = pieces[k].group;
        else std::copy(s.unitGroups[u].begin(), s.unitGroups[u].end(), t.groups.begin() + s.pieceFirst[k]);
    }
}

} // namespace octwalk
