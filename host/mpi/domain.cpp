#include "host/mpi/domain.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "common/sfc.h"

namespace octwalk::mpi {

namespace {

/// Positions as one 127-bit number (key above id): the search below bisects this range.
using Position128 = unsigned __int128;

Position128 toNumber(const SfcPosition& p) { return (Position128(p.key) << 64) | Position128(p.id); }

SfcPosition toPosition(Position128 v) { return {uint64_t(v >> 64), uint64_t(v)}; }

/// One past the largest position: key 2^63, beyond every 63-bit key.
constexpr Position128 kBeyondAll = Position128(1) << 127;

/// Candidates per cut and round of the search: 15 values split the interval into 16.
constexpr int kSearchArity = 16;

/// This rank's bodies in (key, id) order with the running sum of their costs, so that the cost of the
/// bodies before any position is one binary search.
struct SortedCosts
{
    std::vector<Position128> positions;
    std::vector<int64_t> before; ///< before[i]: cost of positions[0 .. i), size n + 1

    int64_t costBelow(Position128 v) const
    {
        const size_t i = size_t(std::lower_bound(positions.begin(), positions.end(), v) - positions.begin());
        return before[i];
    }
};

SortedCosts sortedCosts(const std::vector<uint64_t>& keys, const std::vector<uint64_t>& ids,
                        const std::vector<int64_t>& cost)
{
    const size_t n = keys.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::vector<Position128> value(n);
    for (size_t i = 0; i < n; ++i) value[i] = toNumber({keys[i], ids[i]});
    std::sort(order.begin(), order.end(), [&value](size_t a, size_t b) { return value[a] < value[b]; });
    SortedCosts s;
    s.positions.resize(n);
    s.before.assign(n + 1, 0);
    for (size_t k = 0; k < n; ++k)
    {
        const size_t i  = order[k];
        s.positions[k]  = value[i];
        s.before[k + 1] = s.before[k] + (cost.empty() ? 1 : std::max<int64_t>(1, cost[i]));
    }
    return s;
}

/// The k-th of kSearchArity - 1 points splitting (lo, hi) (without overflowing 128 bits).
Position128 splitPoint(Position128 lo, Position128 hi, int k)
{
    const Position128 width = hi - lo;
    return lo + width / kSearchArity * Position128(k) + width % kSearchArity * Position128(k) / kSearchArity;
}

/// One cut's search: the answer a = min{v : cost below v >= target} lies in (lo, hi], with the cost
/// below hi known.
struct CutSearch
{
    int64_t target;
    Position128 lo, hi;
    int64_t costBelowHi;

    bool done() const { return hi - lo <= 1; }
};

/// Narrows every unfinished search with one allreduce of kSearchArity - 1 candidates each.
void searchRound(const Communicator& comm, const SortedCosts& local, std::vector<CutSearch>& cuts)
{
    std::vector<int64_t> below;
    for (const CutSearch& c : cuts)
    {
        if (c.done()) continue;
        for (int k = 1; k < kSearchArity; ++k) below.push_back(local.costBelow(splitPoint(c.lo, c.hi, k)));
    }
    const std::vector<int64_t> total = comm.allreduceSum(below);
    size_t at                        = 0;
    for (CutSearch& c : cuts)
    {
        if (c.done()) continue;
        Position128 lo = c.lo, hi = c.hi;
        int64_t costHi = c.costBelowHi;
        for (int k = 1; k < kSearchArity; ++k)
        {
            const Position128 v = splitPoint(c.lo, c.hi, k);
            const int64_t w     = total[at++];
            if (w >= c.target && v < hi)
            {
                hi     = v;
                costHi = w;
            }
            else if (w < c.target && v > lo) lo = v;
        }
        c.lo          = lo;
        c.hi          = hi;
        c.costBelowHi = costHi;
    }
}

/// The ids of local, or 0..n-1 when it has none.
const std::vector<uint64_t>& idsOf(const ParticleSet& local)
{
    if (local.id.size() != local.pos.size())
    {
        throw InputError("decompose: " + std::to_string(local.pos.size()) + " positions but " +
                         std::to_string(local.id.size()) + " ids");
    }
    return local.id;
}

/// FNV-1a over the bytes of a value, continuing from h.
template<class T>
uint64_t hashBytes(uint64_t h, const T& value)
{
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    for (unsigned char b : bytes) h = (h ^ b) * 0x100000001b3ull;
    return h;
}

/// A body as it travels between ranks.
struct TravellingBody
{
    Vec3d pos, vel;
    double mass;
    uint64_t id;
    uint64_t key;
    uint8_t type;
};

} // namespace

int Decomposition::owner(const SfcPosition& p) const
{
    return int(std::upper_bound(cuts.begin(), cuts.end(), p) - cuts.begin());
}

double Decomposition::imbalance() const
{
    if (rankCost.empty() || totalCost == 0) return 1.0;
    const double mean = double(totalCost) / double(rankCost.size());
    return double(*std::max_element(rankCost.begin(), rankCost.end())) / mean;
}

KeyCube globalKeyCube(const Communicator& comm, const std::vector<Vec3d>& pos)
{
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> lo{inf, inf, inf}, hi{-inf, -inf, -inf};
    for (const Vec3d& p : pos)
    {
        lo = {std::min(lo[0], p.x), std::min(lo[1], p.y), std::min(lo[2], p.z)};
        hi = {std::max(hi[0], p.x), std::max(hi[1], p.y), std::max(hi[2], p.z)};
    }
    lo = comm.allreduceMin(lo);
    hi = comm.allreduceMax(hi);
    KeyCube cube;
    if (!(lo[0] <= hi[0])) return cube; // no bodies anywhere
    cube.lo   = {lo[0], lo[1], lo[2]};
    cube.edge = std::max({hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]});
    if (!(cube.edge > 0)) cube.edge = 1.0;
    return cube;
}

std::vector<uint64_t> keysInCube(const KeyCube& cube, const std::vector<Vec3d>& pos)
{
    const double cellsPerUnit = double(kKeyGridSize) / cube.edge;
    std::vector<uint64_t> keys(pos.size());
    for (size_t i = 0; i < pos.size(); ++i)
    {
        const Vec3d& p = pos[i];
        keys[i] = mortonKey(gridCoordinate(p.x, cube.lo.x, cellsPerUnit), gridCoordinate(p.y, cube.lo.y, cellsPerUnit),
                            gridCoordinate(p.z, cube.lo.z, cellsPerUnit));
    }
    return keys;
}

Decomposition decompose(const Communicator& comm, const ParticleSet& local, const std::vector<int64_t>& cost)
{
    if (!cost.empty() && cost.size() != local.pos.size())
    {
        throw InputError("decompose on " + comm.where() + ": " + std::to_string(cost.size()) + " costs for " +
                         std::to_string(local.pos.size()) + " bodies");
    }
    Decomposition d;
    d.cube                   = globalKeyCube(comm, local.pos);
    const SortedCosts sorted = sortedCosts(keysInCube(d.cube, local.pos), idsOf(local), cost);
    d.totalCost              = comm.allreduceSum(sorted.before.back());
    const int numRanks       = comm.size();
    std::vector<CutSearch> searches;
    for (int r = 1; r < numRanks; ++r)
    {
        // floor(r W / P) in 128 bits: r W may exceed 2^63.
        const int64_t target = int64_t((unsigned __int128)(r) * (unsigned __int128)(d.totalCost) / unsigned(numRanks));
        if (target == 0) searches.push_back({0, 0, 0, 0});
        else searches.push_back({target, 0, kBeyondAll, d.totalCost});
    }
    auto unfinished = [&searches] {
        return std::any_of(searches.begin(), searches.end(), [](const CutSearch& c) { return !c.done(); });
    };
    // Every rank takes the same decisions from the same sums, so all leave the loop together.
    while (unfinished()) searchRound(comm, sorted, searches);

    int64_t previous = 0;
    for (const CutSearch& c : searches)
    {
        d.cuts.push_back(toPosition(c.hi));
        d.rankCost.push_back(c.costBelowHi - previous);
        previous = c.costBelowHi;
    }
    d.rankCost.push_back(d.totalCost - previous);
    return d;
}

BodyChecksum globalChecksum(const Communicator& comm, const ParticleSet& local)
{
    std::vector<uint64_t> sums{0, 0, 0};
    for (size_t i = 0; i < local.pos.size(); ++i)
    {
        uint64_t h = 0xcbf29ce484222325ull;
        h          = hashBytes(h, local.pos[i]);
        h          = hashBytes(h, local.vel[i]);
        h          = hashBytes(h, local.mass[i]);
        h          = hashBytes(h, local.id[i]);
        h          = hashBytes(h, local.type[i]);
        sums[0] += h;
        sums[1] += hashBytes(0xcbf29ce484222325ull, local.mass[i]);
        sums[2] += hashBytes(0xcbf29ce484222325ull, local.id[i]);
    }
    const std::vector<uint64_t> all = comm.allreduceSum(sums);
    return {comm.allreduceSum(int64_t(local.pos.size())), all[0], all[1], all[2]};
}

namespace {

void checkFields(const Communicator& comm, const ParticleSet& local)
{
    const size_t n = local.pos.size();
    if (local.vel.size() != n || local.mass.size() != n || local.id.size() != n || local.type.size() != n)
    {
        throw InputError("exchangeBodies on " + comm.where() + ": " + std::to_string(n) + " positions but " +
                         std::to_string(local.vel.size()) + " velocities, " + std::to_string(local.mass.size()) +
                         " masses, " + std::to_string(local.id.size()) + " ids and " +
                         std::to_string(local.type.size()) + " types");
    }
}

/// The bodies of local, grouped by destination rank (each group in (key, id) order), and the counts.
std::vector<TravellingBody> packByOwner(const Decomposition& d, const ParticleSet& local, std::vector<int64_t>& counts)
{
    const std::vector<uint64_t> keys = keysInCube(d.cube, local.pos);
    const size_t n                   = keys.size();
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return SfcPosition{keys[a], local.id[a]} < SfcPosition{keys[b], local.id[b]};
    });
    std::vector<TravellingBody> out(n);
    counts.assign(size_t(d.numRanks()), 0);
    for (size_t k = 0; k < n; ++k)
    {
        const size_t i = order[k];
        out[k]         = {local.pos[i], local.vel[i], local.mass[i], local.id[i], keys[i], local.type[i]};
        ++counts[size_t(d.owner({keys[i], local.id[i]}))];
    }
    // Sorted by position and owners increase with position: the groups are already in rank order.
    return out;
}

void unpack(std::vector<TravellingBody>& bodies, ParticleSet& local)
{
    std::stable_sort(bodies.begin(), bodies.end(), [](const TravellingBody& a, const TravellingBody& b) {
        return SfcPosition{a.key, a.id} < SfcPosition{b.key, b.id};
    });
    local.resize(int64_t(bodies.size()));
    for (size_t k = 0; k < bodies.size(); ++k)
    {
        const TravellingBody& b = bodies[k];
        local.pos[k]            = b.pos;
        local.vel[k]            = b.vel;
        local.mass[k]           = b.mass;
        local.id[k]             = b.id;
        local.type[k]           = b.type;
    }
}

} // namespace

ExchangeCounts exchangeBodies(const Communicator& comm, const Decomposition& d, ParticleSet& local)
{
    if (d.numRanks() != comm.size())
    {
        throw MpiError("exchangeBodies on " + comm.where() + ": the decomposition has " + std::to_string(d.numRanks()) +
                       " ranks");
    }
    checkFields(comm, local);
    const BodyChecksum before = globalChecksum(comm, local);
    std::vector<int64_t> sendCounts, recvCounts;
    const std::vector<TravellingBody> send = packByOwner(d, local, sendCounts);
    std::vector<TravellingBody> received   = comm.alltoallv(send, sendCounts, recvCounts);
    unpack(received, local);
    const BodyChecksum after = globalChecksum(comm, local);
    if (!(after == before))
    {
        throw MpiError("exchangeBodies on " + comm.where() + ": bodies not conserved (" + std::to_string(before.count) +
                       " before, " + std::to_string(after.count) + " after, or a checksum of their fields differs)");
    }
    ExchangeCounts c;
    const int me = comm.rank();
    c.kept       = sendCounts[size_t(me)];
    c.sent       = int64_t(send.size()) - c.kept;
    c.received   = int64_t(received.size()) - c.kept;
    return c;
}

Decomposition redistribute(const Communicator& comm, ParticleSet& local, const std::vector<int64_t>& cost)
{
    Decomposition d = decompose(comm, local, cost);
    exchangeBodies(comm, d, local);
    return d;
}

} // namespace octwalk::mpi
