#pragma once
/// @file domain.h
/// Domain decomposition along the Morton curve (common/sfc.h), as Bonsai cuts its domains: every body gets
/// the key of its position in the cube around all ranks' bodies, bodies are ordered by (key, id), and that
/// order is cut into one contiguous range per rank so that the ranges carry equal shares of the bodies'
/// cost (the interactions each needed in the last evaluation; 1 each before the first). The cuts are found
/// by a parallel 16-ary search over the (key, id) order with exact integer sums of the costs, so they are
/// the same on every rank and do not depend on how the bodies were distributed before.

#include <cstdint>
#include <vector>

#include "common/vec.h"
#include "host/core/particles.h"
#include "host/mpi/communicator.h"

namespace octwalk::mpi {

/// The cube the keys are taken in: low corner and edge (the largest extent of all bodies' bounding box,
/// 1 when they all coincide or there are none), the same on every rank.
struct KeyCube
{
    Vec3d lo{0, 0, 0};
    double edge = 1.0;
};

/// A body's place in the decomposition's order: key first, then id (ties of key broken by id).
struct SfcPosition
{
    uint64_t key = 0;
    uint64_t id  = 0;

    friend bool operator<(const SfcPosition& a, const SfcPosition& b)
    {
        return a.key != b.key ? a.key < b.key : a.id < b.id;
    }
    friend bool operator==(const SfcPosition& a, const SfcPosition& b) { return a.key == b.key && a.id == b.id; }
    friend bool operator<=(const SfcPosition& a, const SfcPosition& b) { return !(b < a); }
};

/// Rank r owns the bodies whose SfcPosition p has cuts[r - 1] <= p < cuts[r] (no lower bound for rank 0,
/// no upper one for rank P - 1): P - 1 cuts in non-decreasing order. Equal cuts leave a rank without bodies.
/// Keys have 63 bits, so a cut with key 2^63 lies beyond every body.
struct Decomposition
{
    KeyCube cube;
    std::vector<SfcPosition> cuts;
    /// Total cost of all bodies and each rank's share of it, as the cuts divide it.
    int64_t totalCost = 0;
    std::vector<int64_t> rankCost;

    int numRanks() const { return int(cuts.size()) + 1; }
    /// The rank owning position p.
    int owner(const SfcPosition& p) const;
    /// Largest rank cost over the mean (1 when perfectly balanced).
    double imbalance() const;
};

/// The cube around the bodies of all ranks (min/max reductions; exact). Collective.
KeyCube globalKeyCube(const Communicator& comm, const std::vector<Vec3d>& pos);

/// Morton keys of positions in cube (the grid of common/sfc.h).
std::vector<uint64_t> keysInCube(const KeyCube& cube, const std::vector<Vec3d>& pos);

/// Cuts the (key, id) order of all ranks' bodies into comm.size() ranges of equal cost. Collective.
/// @param[in] local  this rank's bodies (positions and ids are read)
/// @param[in] cost   per body of local, its cost (a body costs at least 1: smaller values count as 1);
///                   empty: 1 each
Decomposition decompose(const Communicator& comm, const ParticleSet& local, const std::vector<int64_t>& cost = {});

/// What exchangeBodies moved.
struct ExchangeCounts
{
    int64_t sent     = 0; ///< bodies this rank sent to other ranks
    int64_t received = 0; ///< bodies this rank received from other ranks
    int64_t kept     = 0; ///< bodies this rank kept
};

/// Moves every body (position, velocity, mass, id, type) to the rank that owns it (MPI_Alltoallv); the
/// bodies a rank ends with are ordered by (key, id). Checks that the bodies of all ranks are conserved
/// exactly: their number and order-independent checksums of every field (mass included) before and after,
/// MpiError otherwise. Other fields of local (time, boxSize, cosmology) are kept. Collective.
ExchangeCounts exchangeBodies(const Communicator& comm, const Decomposition& d, ParticleSet& local);

/// decompose then exchangeBodies. Collective.
Decomposition redistribute(const Communicator& comm, ParticleSet& local, const std::vector<int64_t>& cost = {});

/// The number of bodies and order-independent 64-bit checksums of the bodies of all ranks (each body hashed
/// from the bits of all its fields, summed modulo 2^64; the masses' bits separately, and the ids'). Collective.
struct BodyChecksum
{
    int64_t count   = 0;
    uint64_t bodies = 0, masses = 0, ids = 0;

    friend bool operator==(const BodyChecksum& a, const BodyChecksum& b)
    {
        return a.count == b.count && a.bodies == b.bodies && a.masses == b.masses && a.ids == b.ids;
    }
};
BodyChecksum globalChecksum(const Communicator& comm, const ParticleSet& local);

} // namespace octwalk::mpi
