#include "host/mpi/distributed_mesh.h"

#include <algorithm>

#include "host/core/parallel.h"
#include "host/core/timer.h"

namespace octwalk::mpi {

namespace {

/// One x slab of an n^3 mesh as an MPI type: counts and displacements in slabs stay far below int's range
/// for any mesh, where counts in bytes would not (a 1024^3 mesh holds 8 GiB).
class SlabType
{
public:
    SlabType(const Communicator& comm, int64_t n)
    {
        comm.check(MPI_Type_contiguous(int(n * n), MPI_DOUBLE, &type_), "MPI_Type_contiguous");
        comm.check(MPI_Type_commit(&type_), "MPI_Type_commit");
    }
    ~SlabType() { MPI_Type_free(&type_); }
    SlabType(const SlabType&)            = delete;
    SlabType& operator=(const SlabType&) = delete;
    MPI_Datatype get() const { return type_; }

private:
    MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

} // namespace

DistributedMesh::DistributedMesh(const Communicator& comm, const Parameters& p, int64_t valuesPerRound)
    : comm_(comm), mesh_(p.box_size, p.pm_grid, p.asmth, p.pm_assignment, 1.0), valuesPerRound_(valuesPerRound)
{}

int64_t DistributedMesh::firstSlab(int r) const { return int64_t(mesh_.meshSize()) * r / comm_.size(); }

void DistributedMesh::computeForces(const Vec3d* pos, const double* mass, int64_t n, std::vector<Vec3d>& acc,
                                    std::vector<double>& pot)
{
    assignAndSum(pos, mass, n);
    solveAndInterpolate(mass, n, acc, pot);
}

void DistributedMesh::assignAndSum(const Vec3d* pos, const double* mass, int64_t n)
{
    timings_ = DistributedMeshTimings{};
    Stopwatch clock;
    mesh_.assignMasses(pos, mass, n);
    const double localMass = deterministicSum<double>(n, [&](int64_t i) { return mass[i]; });
    timings_.assign        = clock.lap();
    sumMeshes();
    totalMass_   = comm_.allreduceSumOrdered(localMass);
    timings_.sum = clock.lap();
}

void DistributedMesh::solveAndInterpolate(const double* mass, int64_t n, std::vector<Vec3d>& acc,
                                          std::vector<double>& pot)
{
    Stopwatch clock;
    mesh_.solve();
    timings_.solve = clock.lap();
    mesh_.interpolate(acc, pot);
    mesh_.addNonPairTerms(mass, n, totalMass_, pot);
    timings_.interpolate = clock.lap();
}

// Rank r owns slabs [firstSlab(r), firstSlab(r + 1)). Round j sends each owner the j-th chunk of its slabs
// from every rank; the owner adds the copies in rank order into its own density. Then every rank's owned
// slabs go to every rank.
void DistributedMesh::sumMeshes()
{
    const int P = comm_.size(), me = comm_.rank();
    const int64_t n = mesh_.meshSize(), slabValues = n * n;
    double* density = mesh_.density();
    const SlabType slab(comm_, n);
    int64_t widest = 0;
    for (int r = 0; r < P; ++r) widest = std::max(widest, firstSlab(r + 1) - firstSlab(r));
    const int64_t chunk = std::max<int64_t>(1, valuesPerRound_ / (slabValues * P));
    const size_t ranks  = static_cast<size_t>(P);
    std::vector<int> sendCounts(ranks), sendDispl(ranks), recvCounts(ranks), recvDispl(ranks);
    auto slabsOfRound = [&](int r, int64_t j) {
        const int64_t begin = firstSlab(r) + j * chunk, end = firstSlab(r + 1);
        return std::clamp<int64_t>(end - begin, 0, chunk);
    };
    for (int64_t j = 0; j * chunk < widest; ++j)
    {
        const int64_t mine = slabsOfRound(me, j);
        for (int r = 0; r < P; ++r)
        {
            sendCounts[size_t(r)] = int(slabsOfRound(r, j));
            sendDispl[size_t(r)]  = int(std::min(firstSlab(r) + j * chunk, n));
            recvCounts[size_t(r)] = int(mine);
            recvDispl[size_t(r)]  = int(r * mine);
        }
        received_.resize(size_t(P * mine * slabValues));
        comm_.check(MPI_Alltoallv(density, sendCounts.data(), sendDispl.data(), slab.get(), received_.data(),
                                  recvCounts.data(), recvDispl.data(), slab.get(), comm_.comm()),
                    "MPI_Alltoallv");
        double* out          = density + (firstSlab(me) + j * chunk) * slabValues;
        const double* copies = received_.data();
        const int64_t values = mine * slabValues;
#pragma omp parallel for schedule(static)
        for (int64_t c = 0; c < values; ++c)
        {
            double sum = copies[c];
            for (int r = 1; r < P; ++r) sum += copies[r * values + c];
            out[c] = sum;
        }
    }
    for (int r = 0; r < P; ++r)
    {
        recvCounts[size_t(r)] = int(firstSlab(r + 1) - firstSlab(r));
        recvDispl[size_t(r)]  = int(firstSlab(r));
    }
    comm_.check(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, density, recvCounts.data(), recvDispl.data(),
                               slab.get(), comm_.comm()),
                "MPI_Allgatherv");
}

} // namespace octwalk::mpi
