#include "host/mpi/let.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <utility>

#include "common/errors.h"
#include "common/treepm.h"
#include "host/mpi/mpi_error.h"

namespace octwalk::mpi {

namespace {

/// Widening of the box and scaling of the radius in acceptedByEveryGroup. acceptNode's float rounding
/// moves each axis distance by at most a few units of 2^-24 of the largest coordinate and the comparison
/// by a few units of 2^-24 relative: the margins are 16 and 256 times that.
constexpr double kBoxMargin    = 0x1p-20;
constexpr double kRadiusMargin = 0x1p-16;
/// Squared distances below this may underflow float32 in acceptNode: never accepted for every group.
constexpr double kSmallestDistance2 = 1e-30;

double largestMagnitude(const GroupsBox& box, F4 p)
{
    return std::max({std::fabs(box.lo.x), std::fabs(box.lo.y), std::fabs(box.lo.z), std::fabs(box.hi.x),
                     std::fabs(box.hi.y), std::fabs(box.hi.z), std::fabs(double(p.x)), std::fabs(double(p.y)),
                     std::fabs(double(p.z))});
}

using Kind  = EssentialTreeScratch::Kind;
using Visit = EssentialTreeScratch::Visit;

/// The union of two boxes (either may hold no groups).
GroupsBox unionOf(const GroupsBox& a, const GroupsBox& b)
{
    if (a.numGroups == 0) return b;
    if (b.numGroups == 0) return a;
    GroupsBox u;
    u.lo        = {std::min(a.lo.x, b.lo.x), std::min(a.lo.y, b.lo.y), std::min(a.lo.z, b.lo.z)};
    u.hi        = {std::max(a.hi.x, b.hi.x), std::max(a.hi.y, b.hi.y), std::max(a.hi.z, b.hi.z)};
    u.maxScale  = std::max(a.maxScale, b.maxScale);
    u.numGroups = a.numGroups + b.numGroups;
    return u;
}

/// The boxes an essential tree is cut for, and the unions of neighbouring pairs of them, of pairs of those,
/// up to one box around all: a node that a union accepts, every box inside it accepts, so a node far from
/// the receiver is settled by one test and one near it by the few boxes around it.
class Receiver
{
public:
    explicit Receiver(const std::vector<GroupsBox>& boxes) : levels_{boxes}
    {
        if (levels_[0].empty()) levels_[0].push_back(GroupsBox{});
        while (levels_.back().size() > 1)
        {
            const std::vector<GroupsBox>& below = levels_.back();
            std::vector<GroupsBox> above;
            for (size_t i = 0; i < below.size(); i += 2)
                above.push_back(i + 1 < below.size() ? unionOf(below[i], below[i + 1]) : below[i]);
            levels_.push_back(std::move(above));
        }
    }

    const GroupsBox& all() const { return levels_.back()[0]; }

    /// Whether every group in the boxes accepts the node.
    bool accepts(F4 nodeMac) const
    {
        return holdsForEvery([nodeMac](const GroupsBox& box) { return acceptedByEveryGroup(nodeMac, box); },
                             levels_.size() - 1, 0);
    }

    /// Whether every group in the boxes drops the node (a periodic box under TreePM).
    bool drops(F4 nodeMac, const PeriodicView& periodic) const
    {
        return holdsForEvery(
            [nodeMac, &periodic](const GroupsBox& box) { return droppedByEveryGroup(nodeMac, box, periodic); },
            levels_.size() - 1, 0);
    }

private:
    /// Whether test holds for every box under the union at (level, i); test must hold for a box whenever it
    /// holds for a box around it.
    template<class Test>
    bool holdsForEvery(const Test& test, size_t level, size_t i) const
    {
        const GroupsBox& box = levels_[level][i];
        if (box.numGroups == 0 || test(box)) return true;
        if (level == 0) return false;
        const std::vector<GroupsBox>& below = levels_[level - 1];
        if (2 * i + 1 >= below.size()) return holdsForEvery(test, level - 1, 2 * i);
        return holdsForEvery(test, level - 1, 2 * i) && holdsForEvery(test, level - 1, 2 * i + 1);
    }

    std::vector<std::vector<GroupsBox>> levels_;
};

/// Whether the tree's walk is TreePM's short-range walk.
bool shortRangeTree(const TreeView& tree)
{
    return tree.periodic.boxSize > 0.0f && shortRangeOn(tree.periodic.shortRange);
}

/// How the node enters the essential tree, unless it is opened: dropped in a periodic box (short range), sent
/// closed in an isolated one.
Kind settledKind(const TreeView& tree, const Receiver& box, F4 nodeMac)
{
    if (shortRangeTree(tree)) return box.drops(nodeMac, tree.periodic) ? Kind::Dropped : Kind::Open;
    return box.accepts(nodeMac) ? Kind::Closed : Kind::Open;
}

/// How many children an internal node has.
int32_t childCount(const TreeView& tree, int32_t node)
{
    int32_t count = 0;
    for (int word = 0; word < 2; ++word)
    {
        const U4 kids = tree.children[2 * node + word];
        for (uint32_t child : {kids.x, kids.y, kids.z, kids.w}) count += child != kEmptyChild ? 1 : 0;
    }
    return count;
}

/// Settles visit v (its kind) and returns how many children it opens (0 unless it is an open internal node).
int32_t settleVisit(const TreeView& tree, const Receiver& box, Visit& v)
{
    const int32_t node = int32_t(v.entry & ~kLeafBit);
    const Kind settled = settledKind(tree, box, tree.nodeMac[node]);
    if (settled != Kind::Open) v.kind = settled;
    else if (v.entry & kLeafBit) v.kind = Kind::Bodies;
    else return childCount(tree, node);
    return 0;
}

/// Writes the children of open visit v at visits[v.firstChild ...], in octant order.
void placeChildren(const TreeView& tree, const Visit& v, std::vector<Visit>& visits)
{
    const int32_t node = int32_t(v.entry);
    int64_t next       = v.firstChild;
    for (int word = 0; word < 2; ++word)
    {
        const U4 kids = tree.children[2 * node + word];
        for (uint32_t child : {kids.x, kids.y, kids.z, kids.w})
        {
            if (child != kEmptyChild) visits[size_t(next++)] = {child, v.level + 1, Kind::Open, 0};
        }
    }
}

/// The nodes of the essential tree in breadth-first order, a level at a time: the level's nodes are settled on the
/// threads (the receiver's boxes tested for each), then their children placed after the level in the level's
/// order, which is the serial breadth-first order for any thread count.
void traverse(const TreeView& tree, const Receiver& box, std::vector<Visit>& visits, std::vector<int64_t>& opened)
{
    visits.assign(1, Visit{tree.rootEntry, 0, Kind::Open, 0});
    size_t begin = 0;
    while (begin < visits.size())
    {
        const int64_t count = int64_t(visits.size() - begin);
        opened.resize(size_t(count));
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t i = 0; i < count; ++i) opened[size_t(i)] = settleVisit(tree, box, visits[begin + size_t(i)]);
        int64_t next = int64_t(visits.size());
        for (int64_t i = 0; i < count; ++i)
        {
            if (opened[size_t(i)] > 0) visits[begin + size_t(i)].firstChild = next;
            next += opened[size_t(i)];
        }
        const size_t end = visits.size();
        visits.resize(size_t(next));
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < count; ++i)
        {
            if (opened[size_t(i)] > 0) placeChildren(tree, visits[begin + size_t(i)], visits);
        }
        begin = end;
    }
}

void copyNode(const TreeView& tree, int32_t from, EssentialTree& let, int32_t to)
{
    let.nodeMac[to]          = tree.nodeMac[from];
    let.nodeCom[to]          = tree.nodeCom[from];
    let.nodeQuad[2 * to]     = tree.nodeQuad[2 * from];
    let.nodeQuad[2 * to + 1] = tree.nodeQuad[2 * from + 1];
    let.source[to]           = from;
}

/// Sizes let for the visits and gives every visit its entry in let.
void numberNodes(const std::vector<Visit>& visits, EssentialTree& let, std::vector<uint32_t>& entry)
{
    const auto count = [&](Kind kind) {
        return int32_t(std::count_if(visits.begin(), visits.end(), [kind](const Visit& v) { return v.kind == kind; }));
    };
    let.numInternal = count(Kind::Open);
    let.numLeaves   = int32_t(visits.size()) - let.numInternal - count(Kind::Dropped);
    const size_t n  = size_t(let.numInternal + let.numLeaves);
    let.children.assign(2 * size_t(let.numInternal), U4{0, 0, 0, 0});
    let.nodeMac.resize(n);
    let.nodeCom.resize(n);
    let.nodeQuad.resize(2 * n);
    let.source.resize(n);
    let.leafRange.resize(size_t(let.numLeaves));
    let.leafClosed.resize(size_t(let.numLeaves));
    entry.resize(visits.size());
    uint32_t internal = 0, leaf = uint32_t(let.numInternal);
    for (size_t q = 0; q < visits.size(); ++q)
    {
        const Kind kind = visits[q].kind;
        entry[q]        = kind == Kind::Dropped ? kEmptyChild : kind == Kind::Open ? internal++ : (kLeafBit | leaf++);
    }
}

/// An empty tree, its arrays' storage kept.
void clearKeepingStorage(EssentialTree& let)
{
    let.children.clear();
    let.nodeMac.clear();
    let.nodeCom.clear();
    let.nodeQuad.clear();
    let.leafRange.clear();
    let.leafClosed.clear();
    let.bodies.clear();
    let.source.clear();
    let.numInternal = let.numLeaves = let.depth = 0;
    let.rootEntry                               = 0;
    let.farField2                               = 0.0f;
}

/// The child words of an open node: its children's new entries in the source's octant slots.
void writeChildren(const TreeView& tree, const Visit& v, const std::vector<uint32_t>& entry, EssentialTree& let,
                   uint32_t to)
{
    const int32_t node = int32_t(v.entry);
    int64_t next       = v.firstChild;
    for (int word = 0; word < 2; ++word)
    {
        const U4 kids = tree.children[2 * node + word];
        uint32_t out[4];
        const uint32_t in[4] = {kids.x, kids.y, kids.z, kids.w};
        for (int k = 0; k < 4; ++k) out[k] = in[k] == kEmptyChild ? kEmptyChild : entry[size_t(next++)];
        let.children[2 * to + word] = {out[0], out[1], out[2], out[3]};
    }
}

/// Every leaf's range in let.bodies (its bodies follow those of the leaves before it; a closed leaf has none) and
/// whether it is closed; returns the bodies in all.
int64_t placeBodies(const TreeView& tree, const std::vector<Visit>& visits, const std::vector<uint32_t>& entry,
                    EssentialTree& let)
{
    int64_t total = 0;
    for (size_t q = 0; q < visits.size(); ++q)
    {
        const Kind kind = visits[q].kind;
        if (kind != Kind::Bodies && kind != Kind::Closed) continue;
        const int32_t f = int32_t(entry[q] & ~kLeafBit) - let.numInternal;
        const int32_t n =
            kind == Kind::Bodies ? tree.leafRange[int32_t(visits[q].entry & ~kLeafBit) - tree.numInternal].y : 0;
        let.leafRange[f]  = {int32_t(total), n};
        let.leafClosed[f] = kind == Kind::Closed ? 1 : 0;
        total += n;
    }
    return total;
}

/// Visit q's node in let: its words, and an open node's children or an open leaf's bodies (at the place
/// placeBodies gave them).
void writeVisit(const TreeView& tree, const BodyView& bodies, const Visit& v, const std::vector<uint32_t>& entry,
                int64_t q, EssentialTree& let)
{
    const int32_t from = int32_t(v.entry & ~kLeafBit);
    const int32_t to   = int32_t(entry[size_t(q)] & ~kLeafBit);
    copyNode(tree, from, let, to);
    if (v.kind == Kind::Open)
    {
        writeChildren(tree, v, entry, let, uint32_t(to));
        return;
    }
    if (v.kind != Kind::Bodies) return;
    const I2 r = tree.leafRange[from - tree.numInternal];
    std::copy(bodies.posMass + r.x, bodies.posMass + r.x + r.y,
              let.bodies.begin() + let.leafRange[size_t(to - let.numInternal)].x);
}

} // namespace

GroupsBox groupsBox(const GroupView& groups)
{
    GroupsBox box;
    box.numGroups = groups.numGroups;
    if (groups.numGroups == 0) return box;
    const double inf = std::numeric_limits<double>::infinity();
    box.lo           = {inf, inf, inf};
    box.hi           = {-inf, -inf, -inf};
    for (int32_t g = 0; g < groups.numGroups; ++g)
    {
        const F4 c = groups.center[g], h = groups.half[g];
        box.lo       = {std::min(box.lo.x, double(c.x) - h.x), std::min(box.lo.y, double(c.y) - h.y),
                        std::min(box.lo.z, double(c.z) - h.z)};
        box.hi       = {std::max(box.hi.x, double(c.x) + h.x), std::max(box.hi.y, double(c.y) + h.y),
                        std::max(box.hi.z, double(c.z) + h.z)};
        box.maxScale = std::max(box.maxScale, double(h.w));
    }
    return box;
}

bool acceptedByEveryGroup(F4 nodeMac, const GroupsBox& box)
{
    const double margin = kBoxMargin * largestMagnitude(box, nodeMac);
    auto axis           = [margin](double p, double lo, double hi) {
        const double c = 0.5 * (lo + hi), h = 0.5 * (hi - lo) + margin;
        return std::max(std::fabs(p - c) - h, 0.0);
    };
    const double dx = axis(nodeMac.x, box.lo.x, box.hi.x);
    const double dy = axis(nodeMac.y, box.lo.y, box.hi.y);
    const double dz = axis(nodeMac.z, box.lo.z, box.hi.z);
    const double d2 = dx * dx + dy * dy + dz * dz;
    return d2 > kSmallestDistance2 && d2 > double(nodeMac.w) * (1.0 + box.maxScale) * (1.0 + kRadiusMargin);
}

bool droppedByEveryGroup(F4 nodeMac, const GroupsBox& box, const PeriodicView& periodic)
{
    const ShortRangeView& s = periodic.shortRange;
    const double L          = periodic.boxSize;
    const double margin     = kBoxMargin * std::max(L, largestMagnitude(box, nodeMac));
    // Per axis: the distance from the box to the nearest image of p (the walk's boxPointDistance2Periodic).
    auto axis = [margin, L](double p, double lo, double hi) {
        const double c = 0.5 * (lo + hi), h = 0.5 * (hi - lo) + margin;
        double d = p - c;
        d -= L * std::nearbyint(d / L);
        return std::max(std::fabs(d) - h, 0.0);
    };
    const double dx    = axis(nodeMac.x, box.lo.x, box.hi.x);
    const double dy    = axis(nodeMac.y, box.lo.y, box.hi.y);
    const double dz    = axis(nodeMac.z, box.lo.z, box.hi.z);
    const double reach = (double(s.cutoff) + double(kShortRangeReachSlack) * L +
                          double(s.nodeExtentFactor) * std::sqrt(double(nodeMac.w))) *
                         (1.0 + kRadiusMargin);
    return dx * dx + dy * dy + dz * dz > reach * reach;
}

TreeView EssentialTree::view() const { return view(PeriodicView{nullptr, 0, 0.0f, 0.0f}); }

TreeView EssentialTree::view(const PeriodicView& periodic) const
{
    return {children.data(), nodeMac.data(), nodeCom.data(), nodeQuad.data(), leafRange.data(), numInternal,
            numLeaves,       rootEntry,      depth,          periodic,        farField2};
}

BodyView EssentialTree::bodyView() const { return {bodies.data(), int32_t(bodies.size())}; }

namespace {

/// The largest side of a box.
double largestSide(const GroupsBox& b) { return std::max({b.hi.x - b.lo.x, b.hi.y - b.lo.y, b.hi.z - b.lo.z}); }

/// The box of groups [first, last).
GroupsBox runBox(const GroupView& groups, int64_t first, int64_t last)
{
    return groupsBox({groups.range + first, groups.center + first, groups.half + first, int32_t(last - first)});
}

} // namespace

std::vector<GroupsBox> groupsBoxes(const GroupView& groups, int32_t maxBoxes, bool halveJumps)
{
    const int64_t n = groups.numGroups;
    const int64_t k = std::min<int64_t>(std::max(maxBoxes, 1), n);
    std::vector<std::pair<int64_t, int64_t>> runs;
    for (int64_t b = 0; b < k; ++b) runs.push_back({b * n / k, (b + 1) * n / k});
    std::vector<GroupsBox> boxes;
    for (auto [first, last] : runs) boxes.push_back(runBox(groups, first, last));
    if (!halveJumps || boxes.size() < 2) return boxes;
    // A run that crosses a boundary between the Morton curve's coarse cells joins groups far apart (the end of
    // one cell and the start of the next), and its box spans all between: in a 256^3 cosmological box cut in two
    // halves one such run spanned the whole box across, and the essential tree for the half took 37% of the other
    // half's bodies instead of 14% (benchmarks/results/mpi/periodic_two_gpus). Runs with a side over twice the
    // median run's largest side are halved, up to 4 maxBoxes runs.
    std::vector<double> sides;
    for (const GroupsBox& b : boxes) sides.push_back(largestSide(b));
    std::nth_element(sides.begin(), sides.begin() + long(sides.size() / 2), sides.end());
    const double limit = 2 * sides[sides.size() / 2];
    const size_t most  = size_t(4 * k);
    bool split         = true;
    while (split && runs.size() < most)
    {
        split = false;
        std::vector<std::pair<int64_t, int64_t>> next;
        std::vector<GroupsBox> nextBoxes;
        for (size_t r = 0; r < runs.size(); ++r)
        {
            const auto [first, last] = runs[r];
            if (last - first < 2 || largestSide(boxes[r]) <= limit || runs.size() + next.size() - r >= most)
            {
                next.push_back(runs[r]);
                nextBoxes.push_back(boxes[r]);
                continue;
            }
            const int64_t middle = first + (last - first) / 2;
            next.push_back({first, middle});
            next.push_back({middle, last});
            nextBoxes.push_back(runBox(groups, first, middle));
            nextBoxes.push_back(runBox(groups, middle, last));
            split = true;
        }
        runs.swap(next);
        boxes.swap(nextBoxes);
    }
    return boxes;
}

EssentialTree buildEssentialTree(const TreeView& tree, const BodyView& bodies, const GroupsBox& box)
{
    return buildEssentialTree(tree, bodies, std::vector<GroupsBox>{box});
}

EssentialTree buildEssentialTree(const TreeView& tree, const BodyView& bodies, const std::vector<GroupsBox>& boxes)
{
    EssentialTree let;
    EssentialTreeScratch scratch;
    buildEssentialTree(tree, bodies, boxes, let, scratch);
    return let;
}

void buildEssentialTree(const TreeView& tree, const BodyView& bodies, const std::vector<GroupsBox>& boxes,
                        EssentialTree& let, EssentialTreeScratch& scratch)
{
    clearKeepingStorage(let);
    if (tree.periodic.boxSize > 0.0f && !shortRangeTree(tree))
    {
        throw ParameterError("essential trees of a periodic box need TreePM's short range (pm_grid > 0): the Ewald "
                             "sum reaches every body");
    }
    const Receiver box(boxes);
    if (box.all().numGroups == 0 || tree.numInternal + tree.numLeaves == 0) return;
    std::vector<Visit>& visits   = scratch.visits;
    std::vector<uint32_t>& entry = scratch.entry;
    traverse(tree, box, visits, scratch.opened);
    numberNodes(visits, let, entry);
    if (let.numLeaves == 0)
    {
        // Nothing within reach (a periodic box): no tree, not one of empty nodes.
        clearKeepingStorage(let);
        return;
    }
    let.rootEntry           = entry[0];
    let.farField2           = tree.farField2;
    const int64_t numBodies = placeBodies(tree, visits, entry, let);
    let.bodies.resize(size_t(numBodies));
    int32_t depth         = 0;
    const int64_t nVisits = int64_t(visits.size());
#pragma omp parallel for schedule(dynamic, 256) reduction(max : depth)
    for (int64_t q = 0; q < nVisits; ++q)
    {
        const Visit& v = visits[size_t(q)];
        if (v.kind == Kind::Dropped) continue;
        depth = std::max(depth, v.level);
        writeVisit(tree, bodies, v, entry, q, let);
    }
    let.depth = depth;
}

namespace {

constexpr uint32_t kLetMagic   = 0x4f574c54; // "OWLT"
constexpr uint32_t kLetVersion = 1;

struct LetHeader
{
    uint32_t magic, version;
    int32_t numInternal, numLeaves, depth;
    uint32_t rootEntry;
    int64_t numBodies;
    float farField2;
    uint32_t reserved;
};

template<class T>
void append(std::vector<char>& out, const std::vector<T>& values)
{
    const size_t at = out.size();
    out.resize(at + values.size() * sizeof(T));
    if (!values.empty()) std::memcpy(out.data() + at, values.data(), values.size() * sizeof(T));
}

/// Reads serialized arrays in order, checking that each lies within the buffer.
struct Reader
{
    const char* data;
    size_t size, at;
    const std::string& from;

    template<class T>
    void read(std::vector<T>& values, int64_t count, const char* what)
    {
        const size_t bytes = size_t(count) * sizeof(T);
        if (count < 0 || bytes > size - at)
        {
            throw MpiError("essential tree from " + from + ": " + what + " (" + std::to_string(count) +
                           " entries) runs past the end of its " + std::to_string(size) + " bytes");
        }
        values.resize(size_t(count));
        if (bytes) std::memcpy(values.data(), data + at, bytes);
        at += bytes;
    }
};

[[noreturn]] void badTree(const std::string& from, const std::string& what)
{
    throw MpiError("essential tree from " + from + ": " + what);
}

bool validEntry(uint32_t e, const EssentialTree& t, bool isRoot)
{
    const uint32_t node = e & ~kLeafBit;
    if (e & kLeafBit) return node >= uint32_t(t.numInternal) && node < uint32_t(t.numNodes());
    return node < uint32_t(t.numInternal) && (isRoot ? node == 0 : node > 0);
}

void checkStructure(const EssentialTree& t, const std::string& from)
{
    if (!validEntry(t.rootEntry, t, true)) badTree(from, "root entry " + std::to_string(t.rootEntry) + " is invalid");
    for (size_t i = 0; i < t.children.size(); ++i)
    {
        for (uint32_t e : {t.children[i].x, t.children[i].y, t.children[i].z, t.children[i].w})
        {
            if (e != kEmptyChild && !validEntry(e, t, false))
            {
                badTree(from, "child entry " + std::to_string(e) + " of node " + std::to_string(i / 2) + " is invalid");
            }
        }
    }
    const int64_t numBodies = int64_t(t.bodies.size());
    for (int32_t f = 0; f < t.numLeaves; ++f)
    {
        const I2 r = t.leafRange[f];
        if (r.x < 0 || r.y < 0 || int64_t(r.x) + r.y > numBodies || (t.leafClosed[f] && r.y != 0))
        {
            badTree(from, "leaf " + std::to_string(f) + " has body range (" + std::to_string(r.x) + ", " +
                              std::to_string(r.y) + ") for " + std::to_string(numBodies) + " bodies");
        }
    }
}

} // namespace

void serializeEssentialTree(const EssentialTree& let, std::vector<char>& out)
{
    if (let.empty()) return;
    LetHeader h{kLetMagic,
                kLetVersion,
                let.numInternal,
                let.numLeaves,
                let.depth,
                let.rootEntry,
                int64_t(let.bodies.size()),
                let.farField2,
                0};
    const size_t at = out.size();
    out.resize(at + sizeof(h));
    std::memcpy(out.data() + at, &h, sizeof(h));
    append(out, let.children);
    append(out, let.nodeMac);
    append(out, let.nodeCom);
    append(out, let.nodeQuad);
    append(out, let.leafRange);
    append(out, let.leafClosed);
    append(out, let.bodies);
}

EssentialTree deserializeEssentialTree(const char* data, size_t size, const std::string& from)
{
    EssentialTree t;
    deserializeEssentialTree(data, size, from, t);
    return t;
}

void deserializeEssentialTree(const char* data, size_t size, const std::string& from, EssentialTree& t)
{
    clearKeepingStorage(t);
    if (size == 0) return;
    LetHeader h;
    if (size < sizeof(h)) badTree(from, std::to_string(size) + " bytes, shorter than its header");
    std::memcpy(&h, data, sizeof(h));
    if (h.magic != kLetMagic || h.version != kLetVersion)
    {
        badTree(from, "header " + std::to_string(h.magic) + " version " + std::to_string(h.version) + " is not " +
                          std::to_string(kLetMagic) + " version " + std::to_string(kLetVersion));
    }
    if (h.numInternal < 0 || h.numLeaves < 1 || h.depth < 0 || h.depth > 64 || h.numBodies < 0 ||
        h.numBodies > INT32_MAX)
    {
        badTree(from, "sizes " + std::to_string(h.numInternal) + " internal, " + std::to_string(h.numLeaves) +
                          " leaves, depth " + std::to_string(h.depth) + ", " + std::to_string(h.numBodies) +
                          " bodies are invalid");
    }
    t.numInternal   = h.numInternal;
    t.numLeaves     = h.numLeaves;
    t.depth         = h.depth;
    t.rootEntry     = h.rootEntry;
    t.farField2     = h.farField2;
    const int64_t n = int64_t(h.numInternal) + h.numLeaves;
    Reader r{data, size, sizeof(h), from};
    r.read(t.children, 2 * int64_t(h.numInternal), "children");
    r.read(t.nodeMac, n, "nodeMac");
    r.read(t.nodeCom, n, "nodeCom");
    r.read(t.nodeQuad, 2 * n, "nodeQuad");
    r.read(t.leafRange, h.numLeaves, "leafRange");
    r.read(t.leafClosed, h.numLeaves, "leafClosed");
    r.read(t.bodies, h.numBodies, "bodies");
    if (r.at != size) badTree(from, std::to_string(size - r.at) + " bytes left over after the bodies");
    checkStructure(t, from);
}

void checkClosedLeavesNotOpened(const EssentialTree& let, const int64_t* leafOffset, const int32_t* leafList,
                                int32_t numGroups, const std::string& from)
{
    for (int32_t g = 0; g < numGroups; ++g)
    {
        for (int64_t k = leafOffset[g]; k < leafOffset[g + 1]; ++k)
        {
            const int32_t node = leafList[k];
            if (let.leafClosed[size_t(node - let.numInternal)])
            {
                throw std::logic_error("essential tree from " + from + ": group " + std::to_string(g) +
                                       " opened closed node " + std::to_string(node) +
                                       ": the group lies outside the box the tree was cut for");
            }
        }
    }
}

} // namespace octwalk::mpi
