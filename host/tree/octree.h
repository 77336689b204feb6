#pragma once
/// @file octree.h
/// The host octree: Morton keys, body order, the cells (built by subtrees from the sorted keys and
/// numbered breadth-first), their multipoles in double and the groups.

#include <array>
#include <cstdint>
#include <vector>

#include "common/gravity.h"
#include "common/integrate.h" // kMaxCoordinate, positionInRange
#include "common/sfc.h"
#include "common/vec.h"
#include "host/tree/bounds.h"

namespace octwalk {

/// Bodies in the caller's order, in double.
struct BodySpan
{
    const Vec3d* pos;
    const double* mass;
    const uint64_t* id;
    int64_t n;
    /// Optional: the index each body had in its owner's original order (an integrator that keeps its
    /// bodies in tree order). Ties of key and id are broken by it instead of by the position in these
    /// arrays, and errors name bodies by it, so neither depends on how the owner has reordered them.
    const int32_t* rank = nullptr;

    /// The index errors and tie-breaks know body k of these arrays by.
    int64_t nameOf(int64_t k) const { return rank ? rank[k] : k; }
};

/// Most bodies accepted (2^30 - 1): the packed tree indexes bodies and cells with 32-bit integers.
/// validateBodies applies it; the command line checks --n against it before any work.
constexpr int64_t kMaxBodies = INT32_MAX / 2;

/// Throws InputError naming the first bad body (the smallest BodySpan::nameOf): non-finite or too
/// large position, non-finite or negative mass; and for fewer than 2 bodies.
void validateBodies(const BodySpan& bodies);

struct OctreeCells
{
    /// Per cell, breadth-first (cell 0 = root): body range in tree order, level, children by
    /// octant (-1 = empty), leaf flag.
    std::vector<int32_t> first, count, level;
    std::vector<std::array<int32_t, 8>> child;
    std::vector<uint8_t> isLeaf;
    int32_t depth = 0;

    int32_t size() const { return int32_t(first.size()); }
};

struct Multipoles
{
    std::vector<double> mass;
    std::vector<Vec3d> com;
    std::vector<SymTensor<double>> quad;
    std::vector<Vec3d> boxMin, boxMax; ///< tight bounding box of the cell's bodies
};

/// A run of the keys being sorted, [begin, end): its keys agree on all bits from `bits` up; the
/// buffer that holds it (the sort's working memory).
struct SortRange
{
    int64_t begin, end;
    int bits;
    bool inScratch;
};

/// Working memory of the build, kept between calls so a step allocates nothing once N is reached.
struct BuildScratch
{
    std::vector<uint64_t> keys;             ///< radix sort ping-pong buffer
    std::vector<int32_t> order;             ///< radix sort ping-pong buffer
    std::vector<int64_t> histograms;        ///< per thread, per digit value
    std::vector<uint64_t> digitLo, digitHi; ///< per thread, per digit value: smallest, largest key
    std::vector<SortRange> large, small;    ///< runs still to split in parallel; runs sorted by one thread
    std::vector<Box<Vec3d>> boxes;          ///< per thread: bounding box of a chunk
    std::vector<int32_t> levelFirst;        ///< first cell of every level, then the cell count
};

/// Tree levels 0 to kMaxTreeLevel.
constexpr int kNumTreeLevels = kMaxTreeLevel + 1;

/// A cell of a subtree as one thread builds it (buildCells): breadth-first within the subtree, its
/// children consecutive from firstChild (an index in the subtree), one per set bit of childMask.
struct SubtreeCell
{
    int32_t first, count, firstChild;
    uint8_t level, childMask;
};

/// A piece of the cell build, in pre-order (a piece before the pieces below it), so that the cells of
/// any level appear across the pieces in Morton order, which is their breadth-first order: a top cell
/// (one internal cell, split serially) or a subtree (built, numbered and summed by one thread).
struct CellUnit
{
    int32_t first, count, level;
    bool top;
    std::array<int32_t, 8> childUnit; ///< top cell: the unit of each octant (-1: empty)
    int32_t arena, arenaBegin;        ///< subtree: where its cells lie (CellScratch::arenas)
};

/// A run of the groups makeGroups assembles: one group (unit < 0) or the groups of subtree unit `unit`.
struct GroupPiece
{
    I2 group;
    int32_t unit;
};

/// Working memory of buildCells, computeMultipoles and makeGroups, kept between builds.
struct CellScratch
{
    std::vector<CellUnit> units;
    std::vector<CellUnit> topSplit;                ///< the top cells and subtree roots, breadth-first
    std::vector<std::array<int32_t, 9>> topBounds; ///< octant bounds of one level's top cells
    std::vector<int32_t> subtrees;                 ///< the subtree units, most bodies first (ties: pre-order)
    std::vector<int32_t> levelCount;               ///< [unit * kNumTreeLevels + level]: the unit's cells at the level
    std::vector<int32_t> levelBase;                ///< the same: cells of the level in the units before it
    std::vector<std::vector<SubtreeCell>> arenas;  ///< per thread of the build: its subtrees' cells
    std::vector<int32_t> cellsBefore;              ///< per unit: the cells of the units before it, then all
    std::vector<std::vector<I2>> unitGroups;       ///< makeGroups: per subtree unit, its groups
    std::vector<GroupPiece> groupPieces;           ///< makeGroups: the groups' runs, in order
    std::vector<int32_t> pieceFirst;               ///< makeGroups: first group of each run, then the count
    int32_t numCells = 0;                          ///< the cells the units describe (0: none yet)
};

/// Wall seconds of the parts of the last build, for profiles (benchmarks/bench_host.cpp reports them as
/// counters): where a phase's time goes at a given thread count.
struct BuildPartTimes
{
    double sortKeys   = 0; ///< sortBodies: bounding box and keys
    double sortSplit  = 0; ///< sortBodies: the parallel most-significant-digit passes
    double sortRuns   = 0; ///< sortBodies: the runs sorted, tie-broken and gathered, one thread each
    double cellsTop   = 0; ///< buildCells: the top cells split (splitTop), the subtrees ordered
    double cellsBuild = 0; ///< buildCells: the subtrees built, one thread each
    double cellsCount = 0; ///< buildCells: the serial numbering of the units by level
    double cellsWrite = 0; ///< buildCells: the cells written at their breadth-first numbers
};

/// Everything the host builds for one set of bodies.
struct HostTree
{
    /// order[k] = caller's index of the k-th body in tree order.
    std::vector<int32_t> order;
    std::vector<uint64_t> keys;
    std::vector<Vec3d> pos;   ///< tree order, double
    std::vector<double> mass; ///< tree order
    OctreeCells cells;
    Multipoles poles;
    std::vector<I2> groups; ///< contiguous body ranges (first, count), in Morton order
    BuildScratch scratch;
    CellScratch cellScratch;
    BuildPartTimes partTimes;
};

/// Throws InputError naming the first body with a coordinate outside the periodic box [0, boxSize)
/// and its value (boxSize > 0).
void validateInBox(const BodySpan& bodies, double boxSize);

/// Morton keys (common/sfc.h) of points[0, n), n >= 1, in the cube whose low corner is that of
/// their bounding box and whose edge is the box's largest extent (1 when all points coincide), in
/// the points' order.
std::vector<uint64_t> mortonKeysInBoundingCube(const Vec3d* points, int64_t n);

/// The same, into keys (resized to n).
void mortonKeysInBoundingCube(const Vec3d* points, int64_t n, std::vector<uint64_t>& keys);

/// Morton keys in the bounding cube of all bodies (mortonKeysInBoundingCube), sorted; ties broken
/// by id, then BodySpan::nameOf (the caller's index unless ranks are given), so the tree order does not depend on the input order when ids are
/// unique. Fills order, keys, pos, mass. With boxSize > 0 the cube is the periodic box [0, boxSize)^3
/// itself (the root cell of a periodic tree), and a body outside it is an InputError (validateInBox).
void sortBodies(const BodySpan& bodies, HostTree& tree, double boxSize = 0.0);

/// sortBodies' result from keys computed and sorted elsewhere (the device, ResidentGpu's sorted keys) from
/// the same positions: sortedKeys[k] is the key of body sortedIndex[k], sorted stably by key (ties in
/// index order), keys of the bounding cube of b.pos as sortBodies computes them. Ties are broken and the
/// masses gathered as sortBodies does, so the order, keys and masses are the same; pos is left empty and b.pos
/// is not read: the pipeline's topologies (host/sim/pipeline.h) need no positions on the host, which may still be
/// on their way there (buildCells, makeGroups and packTree's PackContent::Topology read none). Without withMasses
/// mass is left empty too: a build on the step's path has them gathered after the step's walk has started
/// (host/sim/pipeline.h).
void adoptSortedKeys(const BodySpan& bodies, const uint64_t* sortedKeys, const int32_t* sortedIndex, HostTree& tree,
                     bool withMasses = true);

/// Splits cells with more than nLeaf bodies until kMaxTreeLevel; the cells are numbered breadth-first.
/// The top of the tree is split serially into subtrees (CellUnit), each built by one thread and
/// numbered from the counts of cells per subtree and level: the same cells for any thread count.
void buildCells(int nLeaf, HostTree& tree);

/// Mass, centre of mass, traceless quadrupole and tight box of every cell, in double, children before
/// parents: each subtree of the last buildCells on this tree by one thread, then the top cells.
void computeMultipoles(HostTree& tree);

/// A cell with at most n_group bodies whose parent holds more than kGroupContrast times as many is not a
/// group: its children are searched instead. Such a cell lies beside a far denser region (a Plummer sphere's
/// outskirts cell whose parent reaches into the core), and its bodies may sit in opposite corners, so its box
/// reaches that region and the walk opens it far deeper than any of its bodies needs: at 2^20 one such group of
/// 46-58 bodies (boxes of half-width 10 at radius 19) walked 786-1471 cells against a median of 500, the walk
/// passes' critical path. 256 splits 19-24 of 23000 groups in a 2^20 Plummer sphere (7-8 in a galaxy or
/// Hernquist model) and took the device walk and forces of a 2^20 Plummer sphere from 6.6 to 6.0 ms at
/// unchanged error (README).
constexpr int32_t kGroupContrast = 256;

/// The highest cells with at most nGroup bodies and at least 1/kGroupContrast of their parent's, in
/// Morton order; a maximum-depth leaf with more bodies (coincident bodies) is cut into chunks of nGroup. With merge, consecutive groups are
/// then joined while together they hold at most nGroup bodies. Each subtree of the last buildCells on
/// this tree is searched by one thread; cells that buildCells did not make are searched serially.
void makeGroups(int nGroup, HostTree& tree, bool merge = false);

} // namespace octwalk
