#include "host/tree/octree.h"
#include "host/tree/room.h"

#include <algorithm>
#include <array>

#include "common/sfc.h"
#include "host/core/parallel.h"
#include "host/core/timer.h"
#include "host/tree/cell_units.h"

namespace octwalk {

namespace {

/// Cells of at most this many bodies are split by counting the octants of all their keys, bigger ones
/// by binary searches. Measured with one thread on the 2-core development machine (thread CPU time of
/// buildCells, Plummer 2^20 / 2^22): binary searches only 7.6 / 34.6 ms, counting up to 512 bodies
/// 5.0 / 23.0, up to 4096 4.7 / 17.3, up to 16384 - / 18.3, always 6.7 / 27.0.
constexpr int32_t kLinearSplitMax = 4096;

/// Splits the body range of a cell at `level` into its 8 octant ranges.
std::array<int32_t, 9> octantBounds(const uint64_t* keys, int32_t first, int32_t count, int level)
{
    std::array<int32_t, 9> bounds;
    bounds[0]          = first;
    bounds[8]          = first + count;
    const uint64_t* lo = keys + first;
    const uint64_t* hi = keys + first + count;
    if (count <= kLinearSplitMax)
    {
        int32_t n[8] = {};
        for (const uint64_t* k = lo; k < hi; ++k) n[octantAtLevel(*k, level + 1)]++;
        for (int oct = 0; oct < 7; ++oct) bounds[oct + 1] = bounds[oct] + n[oct];
        return bounds;
    }
    for (int oct = 1; oct < 8; ++oct)
    {
        const uint64_t* p =
            std::partition_point(lo, hi, [level, oct](uint64_t k) { return octantAtLevel(k, level + 1) < oct; });
        bounds[oct] = int32_t(p - keys);
    }
    return bounds;
}

/// A thread builds subtrees of at most about n / (kSubtreesPerThread * threads) bodies: enough of them
/// that the dynamic schedule evens out their sizes, few enough that the top (splitTop) stays small.
/// Measured on Plummer 2^22 for 16 threads: 155 top cells split in 0.3 ms (development machine), the
/// biggest of 1086 subtrees holds 16221 bodies (6% of a thread's share).
constexpr int64_t kSubtreesPerThread = 16;

/// Whether buildCells splits a cell.
bool splits(int32_t count, int level, int nLeaf) { return count > nLeaf && level < kMaxTreeLevel; }

/// The unit of the cell (first, count, level): a top cell when it splits with more than topMin bodies.
CellUnit unitOf(int32_t first, int32_t count, int level, int nLeaf, int64_t topMin)
{
    return {first, count, level, splits(count, level, nLeaf) && count > topMin, {-1, -1, -1, -1, -1, -1, -1, -1},
            -1,    0};
}

/// The top of the tree into split, breadth-first (childUnit: indices in split), level by level: the
/// octant bounds of a level's top cells in parallel (binary searches over all keys, which take most
/// of the time), then their children appended in order.
void splitTop(const uint64_t* keys, int32_t n, int nLeaf, int64_t topMin, CellScratch& s)
{
    std::vector<CellUnit>& split = s.topSplit;
    split.assign(1, unitOf(0, n, 0, nLeaf, topMin));
    for (size_t begin = 0, end = 1; begin < end; begin = end, end = split.size())
    {
        s.topBounds.resize(end - begin);
        const int64_t numCells = int64_t(end - begin);
#pragma omp parallel for schedule(dynamic, 1) if (numCells > 1)
        for (int64_t i = 0; i < numCells; ++i)
        {
            const CellUnit& cell = split[begin + size_t(i)];
            if (cell.top) s.topBounds[size_t(i)] = octantBounds(keys, cell.first, cell.count, cell.level);
        }
        for (size_t i = begin; i < end; ++i)
        {
            if (!split[i].top) continue;
            const std::array<int32_t, 9>& b = s.topBounds[i - begin];
            const int level                 = split[i].level;
            for (int o = 0; o < 8; ++o)
            {
                if (b[o + 1] == b[o]) continue;
                split[i].childUnit[o] = int32_t(split.size());
                split.push_back(unitOf(b[o], b[o + 1] - b[o], level + 1, nLeaf, topMin));
            }
        }
    }
}

/// Appends cell i of the split top (splitTop) and the cells below it to units, in pre-order; returns
/// its unit.
int32_t addUnits(const std::vector<CellUnit>& split, int32_t i, std::vector<CellUnit>& units)
{
    const int32_t u = int32_t(units.size());
    units.push_back(split[i]);
    for (int o = 0; o < 8; ++o)
    {
        const int32_t child = split[i].childUnit[o];
        if (child >= 0) units[u].childUnit[o] = addUnits(split, child, units);
    }
    return u;
}

/// Builds the subtree of unit u breadth-first at the end of arena, counting its cells per level. The
/// counts are summed locally and stored once: rows of neighbouring units share cache lines while other
/// threads build those units.
void buildSubtree(const uint64_t* keys, int nLeaf, CellUnit& unit, std::vector<SubtreeCell>& arena, int32_t* levelCount)
{
    const int32_t begin = int32_t(arena.size());
    unit.arenaBegin     = begin;
    std::array<int32_t, kNumTreeLevels> count{};
    arena.push_back({unit.first, unit.count, -1, uint8_t(unit.level), 0});
    for (size_t i = size_t(begin); i < arena.size(); ++i)
    {
        const SubtreeCell cell = arena[i];
        count[cell.level]++;
        if (!splits(cell.count, cell.level, nLeaf)) continue;
        const std::array<int32_t, 9> b = octantBounds(keys, cell.first, cell.count, cell.level);
        const int32_t firstChild       = int32_t(arena.size()) - begin;
        uint8_t mask                   = 0;
        for (int o = 0; o < 8; ++o)
        {
            if (b[o + 1] == b[o]) continue;
            mask |= uint8_t(1u << o);
            arena.push_back({b[o], b[o + 1] - b[o], -1, uint8_t(cell.level + 1), 0});
        }
        arena[i].firstChild = firstChild;
        arena[i].childMask  = mask;
    }
    std::copy(count.begin(), count.end(), levelCount);
}

/// The children of a split cell whose first child is cell firstChild (breadth-first children of one
/// cell are consecutive), one per set bit of mask.
std::array<int32_t, 8> childrenFrom(int32_t firstChild, unsigned mask)
{
    std::array<int32_t, 8> child;
    for (int o = 0; o < 8; ++o) child[o] = (mask >> o) & 1u ? firstChild++ : -1;
    return child;
}

/// Writes the cells of subtree unit u at their breadth-first numbers.
void numberSubtree(const CellScratch& s, const std::vector<int32_t>& levelFirst, int32_t u, OctreeCells& c)
{
    const CellUnit& unit                             = s.units[u];
    const SubtreeCell* cells                         = s.arenas[unit.arena].data() + unit.arenaBegin;
    const int32_t* count                             = s.levelCount.data() + size_t(u) * kNumTreeLevels;
    const std::array<int32_t, kNumTreeLevels> global = unitLevelStarts(s, levelFirst, u);
    std::array<int32_t, kNumTreeLevels + 1> local;
    local[unit.level] = 0;
    for (int l = unit.level; l < kNumTreeLevels; ++l) local[l + 1] = local[l] + count[l];
    for (int32_t i = 0; i < local[kNumTreeLevels]; ++i)
    {
        const SubtreeCell& cell = cells[i];
        const int l             = cell.level;
        const int32_t g         = global[l] + i - local[l];
        c.first[g]              = cell.first;
        c.count[g]              = cell.count;
        c.level[g]              = l;
        c.isLeaf[g]             = cell.childMask == 0;
        c.child[g] = childrenFrom(cell.childMask ? global[l + 1] + cell.firstChild - local[l + 1] : 0, cell.childMask);
    }
}

/// The units thread `part` of `parts` writes: a run of units in pre-order holding about a part's share of
/// the cells. Neighbouring units' cells of a level are neighbours in the arrays, so a thread that writes
/// a run of units writes both sides of most unit boundaries: few cache lines pass between threads.
std::pair<int32_t, int32_t> unitsOfPart(const CellScratch& s, int part, int parts)
{
    const int64_t numCells = s.cellsBefore.back();
    auto unitAt            = [&s, numCells, parts](int p) {
        const int64_t cell = numCells * p / parts;
        return int32_t(std::lower_bound(s.cellsBefore.begin(), s.cellsBefore.end() - 1, cell) - s.cellsBefore.begin());
    };
    return {unitAt(part), part + 1 == parts ? int32_t(s.units.size()) : unitAt(part + 1)};
}

/// Writes top cell u at its breadth-first number (its units' first cells are their roots).
void numberTopCell(const CellScratch& s, const std::vector<int32_t>& levelFirst, int32_t u, OctreeCells& c)
{
    const CellUnit& unit = s.units[u];
    const int32_t g      = unitLevelStarts(s, levelFirst, u)[unit.level];
    c.first[g]           = unit.first;
    c.count[g]           = unit.count;
    c.level[g]           = unit.level;
    c.isLeaf[g]          = 0;
    for (int o = 0; o < 8; ++o)
    {
        const int32_t v = unit.childUnit[o];
        c.child[g][o]   = v < 0 ? -1 : unitLevelStarts(s, levelFirst, v)[unit.level + 1];
    }
}

/// levelBase (every unit's cells of each level before it), cellsBefore and levelFirst from levelCount;
/// returns the number of cells.
int32_t numberUnits(CellScratch& s, std::vector<int32_t>& levelFirst)
{
    const size_t numUnits = s.units.size();
    s.levelBase.resize(numUnits * kNumTreeLevels);
    s.cellsBefore.resize(numUnits + 1);
    s.cellsBefore[0] = 0;
    std::array<int32_t, kNumTreeLevels> total{};
    for (size_t u = 0; u < numUnits; ++u)
    {
        int32_t cells = 0;
        for (int l = 0; l < kNumTreeLevels; ++l)
        {
            s.levelBase[u * kNumTreeLevels + l] = total[l];
            total[l] += s.levelCount[u * kNumTreeLevels + l];
            cells += s.levelCount[u * kNumTreeLevels + l];
        }
        s.cellsBefore[u + 1] = s.cellsBefore[u] + cells;
    }
    levelFirst.assign(1, 0);
    for (int l = 0; l < kNumTreeLevels && total[l] > 0; ++l) levelFirst.push_back(levelFirst.back() + total[l]);
    return levelFirst.back();
}

} // namespace

void buildCells(int nLeaf, HostTree& t)
{
    OctreeCells& c       = t.cells;
    CellScratch& s       = t.cellScratch;
    const uint64_t* keys = t.keys.data();
    const int32_t n      = int32_t(t.keys.size());
    const int numArenas  = maxThreads();
    const int64_t topMin = std::max<int64_t>(nLeaf, n / (kSubtreesPerThread * numArenas));
    Stopwatch clock;

    // The top of the tree, down to cells of at most topMin bodies: the subtrees.
    splitTop(keys, n, nLeaf, topMin, s);
    s.units.clear();
    addUnits(s.topSplit, 0, s.units);
    const int32_t numUnits = int32_t(s.units.size());
    s.levelCount.assign(size_t(numUnits) * kNumTreeLevels, 0);
    s.subtrees.clear();
    for (int32_t u = 0; u < numUnits; ++u)
    {
        if (s.units[u].top) s.levelCount[size_t(u) * kNumTreeLevels + s.units[u].level] = 1;
        else s.subtrees.push_back(u);
    }
    std::stable_sort(s.subtrees.begin(), s.subtrees.end(),
                     [&s](int32_t a, int32_t b) { return s.units[a].count > s.units[b].count; });

    // Every subtree by one thread, into that thread's arena; then all are numbered breadth-first
    // from the counts per unit and level, and written by runs of units in pre-order (unitsOfPart).
    t.partTimes.cellsTop = clock.lap();
    s.arenas.resize(size_t(numArenas));
    for (std::vector<SubtreeCell>& arena : s.arenas) arena.clear();
    const int32_t numSubtrees = int32_t(s.subtrees.size());
#pragma omp parallel num_threads(numArenas)
    {
        // The arena is grown through a vector on this thread's stack: the headers in s.arenas lie side by
        // side, and every push_back of a cell would write a line other threads read.
        const int a = threadIndex();
        std::vector<SubtreeCell> arena(std::move(s.arenas[a]));
#pragma omp for schedule(dynamic, 1) nowait
        for (int32_t j = 0; j < numSubtrees; ++j)
        {
            const int32_t u  = s.subtrees[j];
            s.units[u].arena = a;
            buildSubtree(keys, nLeaf, s.units[u], arena, s.levelCount.data() + size_t(u) * kNumTreeLevels);
        }
        s.arenas[a] = std::move(arena);
    }
    t.partTimes.cellsBuild = clock.lap();
    const int32_t numCells = numberUnits(s, t.scratch.levelFirst);
    sizeForOverwrite(c.first, size_t(numCells));
    sizeForOverwrite(c.count, size_t(numCells));
    sizeForOverwrite(c.level, size_t(numCells));
    sizeForOverwrite(c.child, size_t(numCells));
    sizeForOverwrite(c.isLeaf, size_t(numCells));
    t.partTimes.cellsCount = clock.lap();
#pragma omp parallel
    {
        const auto [begin, end] = unitsOfPart(s, threadIndex(), threadCount());
        for (int32_t u = begin; u < end; ++u)
        {
            if (s.units[u].top) numberTopCell(s, t.scratch.levelFirst, u, c);
            else numberSubtree(s, t.scratch.levelFirst, u, c);
        }
    }
    c.depth                = int32_t(t.scratch.levelFirst.size()) - 2;
    s.numCells             = numCells;
    t.partTimes.cellsWrite = clock.lap();
}

} // namespace octwalk
