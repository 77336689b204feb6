#include "mpi/mpi_test_util.h"

namespace octwalk::mpi::testing {

const Communicator& world()
{
    static const Communicator comm(MPI_COMM_WORLD);
    return comm;
}

ParticleSet roundRobinShare(const ParticleSet& all, int rank, int size)
{
    return selectBodies(all, [rank, size](int64_t i) { return i % size == rank; });
}

ParticleSet gatherAll(const Communicator& comm, const ParticleSet& local)
{
    ParticleSet all;
    all.pos  = comm.allgatherv(local.pos);
    all.vel  = comm.allgatherv(local.vel);
    all.mass = comm.allgatherv(local.mass);
    all.id   = comm.allgatherv(local.id);
    all.type = comm.allgatherv(local.type);
    return all;
}

bool onAllRanks(const Communicator& comm, bool ok) { return comm.allreduceSum(int64_t(ok ? 0 : 1)) == 0; }

} // namespace octwalk::mpi::testing
