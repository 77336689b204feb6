#include "host/mpi/communicator.h"

#include <limits>

namespace octwalk::mpi {

MpiEnvironment::MpiEnvironment(int* argc, char*** argv)
{
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (initialised) return;
    int provided = 0;
    // SERIALIZED lets the essential trees travel on a second thread while the main one walks the own tree, and
    // MULTIPLE lets the mesh's transposes run on a third beside them (host/mpi/distributed_forces.h); FUNNELED
    // suffices, without those overlaps.
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    {
        throw MpiError("MPI_Init_thread failed");
    }
    owns_ = true;
    if (provided < MPI_THREAD_FUNNELED)
    {
        MPI_Finalize();
        throw MpiError("MPI provides thread level " + std::to_string(provided) + ", below MPI_THREAD_FUNNELED (" +
                       std::to_string(MPI_THREAD_FUNNELED) + ")");
    }
}

MpiEnvironment::~MpiEnvironment()
{
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (owns_ && !finalised) MPI_Finalize();
}

Communicator::Communicator(MPI_Comm comm)
{
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) throw MpiError("Communicator: MPI is not initialised (construct an MpiEnvironment first)");
    if (MPI_Comm_dup(comm, &comm_) != MPI_SUCCESS) throw MpiError("MPI_Comm_dup failed");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
}

Communicator::~Communicator()
{
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (comm_ != MPI_COMM_NULL && !finalised) MPI_Comm_free(&comm_);
}

std::string Communicator::where() const { return "rank " + std::to_string(rank_) + " of " + std::to_string(size_); }

void Communicator::check(int code, const char* call) const
{
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw MpiError(std::string(call) + " failed on " + where() + ": " + std::string(text, size_t(length)));
}

void Communicator::barrier() const { check(MPI_Barrier(comm_), "MPI_Barrier"); }

int64_t Communicator::elementLayout(const std::vector<int64_t>& counts, std::vector<int>& ints, std::vector<int>& displ,
                                    const char* call) const
{
    const auto elementCount = [&](int64_t count) {
        if (count < 0 || count > INT32_MAX)
        {
            throw MpiError(std::string(call) + " on " + where() + ": " + std::to_string(count) +
                           " elements exceed MPI's int count (2^31 - 1)");
        }
        return int(count);
    };
    ints.resize(static_cast<size_t>(size_));
    displ.resize(static_cast<size_t>(size_));
    int64_t total = 0;
    for (int r = 0; r < size_; ++r)
    {
        displ[r] = elementCount(total);
        ints[r]  = elementCount(counts[r]);
        total += counts[r];
    }
    return total;
}

ElementType::ElementType(const Communicator& comm, int64_t bytes)
{
    if (bytes == 1)
    {
        type_ = MPI_BYTE;
        return;
    }
    constexpr int64_t kRow = int64_t(1) << 20;
    if (bytes <= std::numeric_limits<int>::max())
    {
        comm.check(MPI_Type_contiguous(int(bytes), MPI_BYTE, &type_), "MPI_Type_contiguous");
    }
    else
    {
        // rows of kRow bytes, then the remainder, as one structure of two blocks.
        MPI_Datatype row = MPI_DATATYPE_NULL, rows = MPI_DATATYPE_NULL;
        comm.check(MPI_Type_contiguous(int(kRow), MPI_BYTE, &row), "MPI_Type_contiguous");
        comm.check(MPI_Type_contiguous(int(bytes / kRow), row, &rows), "MPI_Type_contiguous");
        const int lengths[2]        = {1, int(bytes % kRow)};
        const MPI_Aint offsets[2]   = {0, MPI_Aint(bytes / kRow * kRow)};
        const MPI_Datatype types[2] = {rows, MPI_BYTE};
        comm.check(MPI_Type_create_struct(2, lengths, offsets, types, &type_), "MPI_Type_create_struct");
        MPI_Type_free(&rows);
        MPI_Type_free(&row);
    }
    comm.check(MPI_Type_commit(&type_), "MPI_Type_commit");
    owned_ = true;
}

ElementType::~ElementType()
{
    if (owned_) MPI_Type_free(&type_);
}

void Communicator::checkCounts(const std::vector<int64_t>& counts, int64_t total) const
{
    if (int64_t(counts.size()) != size_)
    {
        throw MpiError("alltoallv on " + where() + ": " + std::to_string(counts.size()) + " send counts for " +
                       std::to_string(size_) + " ranks");
    }
    int64_t sum = 0;
    for (int r = 0; r < size_; ++r)
    {
        if (counts[r] < 0)
        {
            throw MpiError("alltoallv on " + where() + ": negative send count " + std::to_string(counts[r]) +
                           " for rank " + std::to_string(r));
        }
        sum += counts[r];
    }
    if (sum != total)
    {
        throw MpiError("alltoallv on " + where() + ": send counts sum to " + std::to_string(sum) + " but " +
                       std::to_string(total) + " values are given");
    }
}

std::vector<int64_t> Communicator::alltoall(const std::vector<int64_t>& values) const
{
    if (int64_t(values.size()) != size_)
    {
        throw MpiError("alltoall on " + where() + ": " + std::to_string(values.size()) + " values for " +
                       std::to_string(size_) + " ranks");
    }
    std::vector<int64_t> out(static_cast<size_t>(size_));
    check(MPI_Alltoall(values.data(), 1, MPI_INT64_T, out.data(), 1, MPI_INT64_T, comm_), "MPI_Alltoall");
    return out;
}

std::vector<int64_t> Communicator::allreduceSum(const std::vector<int64_t>& values) const
{
    return allreduce(values, MPI_INT64_T, MPI_SUM);
}

std::vector<uint64_t> Communicator::allreduceSum(const std::vector<uint64_t>& values) const
{
    return allreduce(values, MPI_UINT64_T, MPI_SUM);
}

std::vector<double> Communicator::allreduceSumOrdered(const std::vector<double>& values) const
{
    const size_t n = values.size();
    std::vector<int64_t> counts;
    const std::vector<double> all = allgatherv(values, &counts);
    for (int r = 0; r < size_; ++r)
    {
        if (counts[r] != int64_t(n))
        {
            throw MpiError("allreduceSumOrdered on " + where() + ": " + std::to_string(n) + " values here but " +
                           std::to_string(counts[r]) + " on rank " + std::to_string(r));
        }
    }
    std::vector<double> sum(n, 0.0);
    for (int r = 0; r < size_; ++r)
    {
        for (size_t i = 0; i < n; ++i) sum[i] += all[size_t(r) * n + i];
    }
    return sum;
}

std::vector<double> Communicator::allreduceMin(const std::vector<double>& values) const
{
    return allreduce(values, MPI_DOUBLE, MPI_MIN);
}

std::vector<double> Communicator::allreduceMax(const std::vector<double>& values) const
{
    return allreduce(values, MPI_DOUBLE, MPI_MAX);
}

} // namespace octwalk::mpi
