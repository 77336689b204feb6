#pragma once
// Helpers of the MPI suites: the world communicator, shares of a model over the ranks, and checks that
// every rank agrees on (a failed expectation on one rank must not leave the others waiting in a collective).

#include <cstdint>
#include <vector>

#include "host/core/particles.h"
#include "host/core/params.h"
#include "host/mpi/communicator.h"
#include "host/mpi/distributed_forces.h"

namespace octwalk::mpi::testing {

/// MPI_COMM_WORLD, wrapped once (mpi_main.cpp initialises MPI before any test runs).
const Communicator& world();

/// The bodies i of all with i % size == rank: a share that is not spatially ordered, so that a
/// decomposition moves most bodies.
ParticleSet roundRobinShare(const ParticleSet& all, int rank, int size);

/// The bodies with selected(i) true.
template<class Select>
ParticleSet selectBodies(const ParticleSet& all, Select selected)
{
    ParticleSet out;
    for (int64_t i = 0; i < all.size(); ++i)
    {
        if (!selected(i)) continue;
        out.pos.push_back(all.pos[i]);
        out.vel.push_back(all.vel[i]);
        out.mass.push_back(all.mass[i]);
        out.id.push_back(all.id[i]);
        out.type.push_back(all.type[i]);
    }
    return out;
}

/// Every rank's bodies, concatenated in rank order.
ParticleSet gatherAll(const Communicator& comm, const ParticleSet& local);

/// Whether ok holds on every rank (collective).
bool onAllRanks(const Communicator& comm, bool ok);

/// Every rank's forces and costs as bytes, gathered to every rank (collective).
std::vector<char> resultBytes(const DistributedForces& f);

/// The bytes of resultBytes from one distributed evaluation of all's bodies (round-robin shares, then
/// decomposed) at each of the thread counts, in their order (collective).
std::vector<std::vector<char>> resultsAtThreadCounts(const ParticleSet& all, const Parameters& p,
                                                     const std::vector<int>& threads);

/// Per body, its acceleration over G as the error control takes it (setPreviousAccelerations' F4 form).
std::vector<F4> previousOf(const std::vector<Vec3d>& acc, double G);

} // namespace octwalk::mpi::testing
