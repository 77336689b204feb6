#include "mpi/mpi_test_util.h"

#include <omp.h>

#include "host/mpi/domain.h"

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

std::vector<char> resultBytes(const DistributedForces& f)
{
    std::vector<char> b;
    auto add = [&b](const void* data, size_t bytes) {
        const char* c = static_cast<const char*>(data);
        b.insert(b.end(), c, c + bytes);
    };
    add(f.acc.data(), f.acc.size() * sizeof(Vec3d));
    add(f.pot.data(), f.pot.size() * sizeof(double));
    add(f.cost.data(), f.cost.size() * sizeof(int64_t));
    return world().allgatherv(b);
}

std::vector<std::vector<char>> resultsAtThreadCounts(const ParticleSet& all, const Parameters& p,
                                                     const std::vector<int>& threads)
{
    const Communicator& comm = world();
    const int before         = omp_get_max_threads();
    std::vector<std::vector<char>> runs;
    for (int t : threads)
    {
        omp_set_num_threads(t);
        ParticleSet mine = roundRobinShare(all, comm.rank(), comm.size());
        redistribute(comm, mine);
        DistributedGravity gravity(comm, p);
        DistributedForces f;
        gravity.computeForces(mine, f);
        runs.push_back(resultBytes(f));
    }
    omp_set_num_threads(before);
    return runs;
}

std::vector<F4> previousOf(const std::vector<Vec3d>& acc, double G)
{
    std::vector<F4> out;
    for (const Vec3d& a : acc) out.push_back({float(a.x / G), float(a.y / G), float(a.z / G), 0.0f});
    return out;
}

} // namespace octwalk::mpi::testing
