#pragma once
/// @file communicator.h
/// A thin typed wrapper of an MPI communicator: the collectives the distributed tree-code needs, on
/// vectors of trivially copyable values sent as bytes, with MPI's errors turned into MpiError naming the
/// rank. Floating-point reductions never go through MPI_SUM, whose order of operations MPI leaves open:
/// sums are gathered to every rank and added in rank order, so every rank gets the same bits at a given
/// rank count. Integer sums (exact in any order) and min/max (exact) use MPI's reductions.
///
/// Waits have no timeout yet: a rank that never reaches a collective (an exception on one rank only)
/// blocks the others until the job is killed; callers keep collectives unconditional, and `octwalk run`
/// ends the job with MPI_Abort on such an error (host/cli/main.cpp).

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "host/mpi/mpi_error.h"

namespace octwalk::mpi {

/// Initialises MPI for the lifetime of the object when no one has, and finalises it at the end. It asks for
/// MPI_THREAD_MULTIPLE (the distributed evaluation's exchange and mesh threads then overlap) and needs at least
/// MPI_THREAD_FUNNELED (only the thread that initialised it calls MPI; OpenMP threads compute between calls).
class MpiEnvironment
{
public:
    MpiEnvironment(int* argc, char*** argv);
    ~MpiEnvironment();
    MpiEnvironment(const MpiEnvironment&)            = delete;
    MpiEnvironment& operator=(const MpiEnvironment&) = delete;

private:
    bool owns_ = false;
};

class Communicator;

/// A run of bytes as one MPI element (MPI_Type_contiguous): counts and displacements in elements stay within
/// int's range for far larger buffers than counts in bytes. Bytes beyond int's range are a contiguous run of
/// rows of 2^20 bytes and a remainder.
class ElementType
{
public:
    ElementType(const Communicator& comm, int64_t bytes);
    ~ElementType();
    ElementType(const ElementType&)            = delete;
    ElementType& operator=(const ElementType&) = delete;
    MPI_Datatype get() const { return type_; }

private:
    MPI_Datatype type_ = MPI_DATATYPE_NULL;
    bool owned_        = false;
};

class Communicator
{
public:
    /// Duplicates comm (so that this wrapper's messages never match another library's) and makes its
    /// errors return codes instead of aborting. MPI must be initialised.
    explicit Communicator(MPI_Comm comm = MPI_COMM_WORLD);
    ~Communicator();
    Communicator(const Communicator&)            = delete;
    Communicator& operator=(const Communicator&) = delete;

    int rank() const { return rank_; }
    int size() const { return size_; }
    MPI_Comm comm() const { return comm_; }

    void barrier() const;

    /// One value from every rank, in rank order.
    template<class T>
    std::vector<T> allgather(const T& value) const
    {
        static_assert(std::is_trivially_copyable_v<T>, "allgather sends bytes");
        std::vector<T> out(static_cast<size_t>(size_));
        check(MPI_Allgather(&value, int(sizeof(T)), MPI_BYTE, out.data(), int(sizeof(T)), MPI_BYTE, comm_),
              "MPI_Allgather");
        return out;
    }

    /// Every rank's vector, concatenated in rank order; counts (optional) gets each rank's length.
    template<class T>
    std::vector<T> allgatherv(const std::vector<T>& local, std::vector<int64_t>* counts = nullptr) const
    {
        static_assert(std::is_trivially_copyable_v<T>, "allgatherv sends bytes");
        const std::vector<int64_t> n = allgather<int64_t>(int64_t(local.size()));
        const ElementType element(*this, int64_t(sizeof(T)));
        std::vector<int> ints, displ;
        std::vector<T> out(static_cast<size_t>(elementLayout(n, ints, displ, "MPI_Allgatherv")));
        check(MPI_Allgatherv(local.data(), ints[size_t(rank_)], element.get(), out.data(), ints.data(), displ.data(),
                             element.get(), comm_),
              "MPI_Allgatherv");
        if (counts) *counts = n;
        return out;
    }

    /// Every rank's vector, concatenated in rank order, on root only (empty on the others): what one rank
    /// writes out, without every rank holding all of it.
    template<class T>
    std::vector<T> gatherv(const std::vector<T>& local, int root = 0) const
    {
        const std::vector<int64_t> n = allgather<int64_t>(int64_t(local.size()));
        int64_t total                = 0;
        for (int64_t c : n) total += c;
        std::vector<T> out(rank_ == root ? static_cast<size_t>(total) : 0);
        gatherv(local.data(), n, out.data(), root);
        return out;
    }

    /// Every rank's counts[rank] values at local, concatenated in rank order into out on root (room for the sum of
    /// counts there; out is read on root only). counts: every rank's count, the same on every rank.
    template<class T>
    void gatherv(const T* local, const std::vector<int64_t>& counts, T* out, int root) const
    {
        static_assert(std::is_trivially_copyable_v<T>, "gatherv sends bytes");
        const ElementType element(*this, int64_t(sizeof(T)));
        std::vector<int> ints, displ;
        elementLayout(counts, ints, displ, "MPI_Gatherv");
        check(MPI_Gatherv(local, ints[size_t(rank_)], element.get(), out, ints.data(), displ.data(), element.get(),
                          root, comm_),
              "MPI_Gatherv");
    }

    /// gatherv's reverse: rank r receives into local the counts[r] values of root's in that follow the other ranks'
    /// in rank order (in is read on root only).
    template<class T>
    void scatterv(const T* in, const std::vector<int64_t>& counts, T* local, int root) const
    {
        static_assert(std::is_trivially_copyable_v<T>, "scatterv sends bytes");
        const ElementType element(*this, int64_t(sizeof(T)));
        std::vector<int> ints, displ;
        elementLayout(counts, ints, displ, "MPI_Scatterv");
        check(MPI_Scatterv(in, ints.data(), displ.data(), element.get(), local, ints[size_t(rank_)], element.get(),
                           root, comm_),
              "MPI_Scatterv");
    }

    /// Personalised all-to-all: send holds the values for rank 0, then rank 1, ... (sendCounts[r] of them
    /// for rank r); returns what every rank sent to this one, in rank order, with recvCounts[r] from rank r.
    template<class T>
    std::vector<T> alltoallv(const std::vector<T>& send, const std::vector<int64_t>& sendCounts,
                             std::vector<int64_t>& recvCounts) const
    {
        std::vector<T> out;
        alltoallv(send, sendCounts, recvCounts, out);
        return out;
    }

    /// The same into out, whose storage is reused (a buffer kept from step to step is not faulted in again).
    template<class T>
    void alltoallv(const std::vector<T>& send, const std::vector<int64_t>& sendCounts, std::vector<int64_t>& recvCounts,
                   std::vector<T>& out) const
    {
        static_assert(std::is_trivially_copyable_v<T>, "alltoallv sends bytes");
        checkCounts(sendCounts, int64_t(send.size()));
        recvCounts = alltoall(sendCounts);
        // Counted in elements of T's size, not bytes: int's range then bounds the elements, not the bytes.
        const ElementType element(*this, int64_t(sizeof(T)));
        std::vector<int> sCounts, sDispl, rCounts, rDispl;
        elementLayout(sendCounts, sCounts, sDispl, "MPI_Alltoallv");
        const int64_t recv = elementLayout(recvCounts, rCounts, rDispl, "MPI_Alltoallv");
        out.resize(static_cast<size_t>(recv));
        check(MPI_Alltoallv(send.data(), sCounts.data(), sDispl.data(), element.get(), out.data(), rCounts.data(),
                            rDispl.data(), element.get(), comm_),
              "MPI_Alltoallv");
    }

    /// One value to every rank and one from every rank (value r goes to rank r).
    std::vector<int64_t> alltoall(const std::vector<int64_t>& values) const;

    /// Exact integer sums over the ranks, element by element.
    std::vector<int64_t> allreduceSum(const std::vector<int64_t>& values) const;
    int64_t allreduceSum(int64_t value) const { return allreduceSum(std::vector<int64_t>{value})[0]; }
    /// Sums modulo 2^64 (checksums), element by element.
    std::vector<uint64_t> allreduceSum(const std::vector<uint64_t>& values) const;

    /// Floating-point sums over the ranks, element by element, added in rank order on every rank: the
    /// same bits everywhere and at every call with the same inputs.
    std::vector<double> allreduceSumOrdered(const std::vector<double>& values) const;
    double allreduceSumOrdered(double value) const { return allreduceSumOrdered(std::vector<double>{value})[0]; }

    /// Element-wise minima and maxima over the ranks (exact).
    std::vector<double> allreduceMin(const std::vector<double>& values) const;
    std::vector<double> allreduceMax(const std::vector<double>& values) const;

    /// Throws MpiError naming this rank, the call and MPI's message when code is not MPI_SUCCESS.
    void check(int code, const char* call) const;

    /// "rank R of P": how errors name this process.
    std::string where() const;

private:
    /// The element-wise reduction op of every rank's values (the same length on every rank), on every rank.
    template<class T>
    std::vector<T> allreduce(const std::vector<T>& values, MPI_Datatype type, MPI_Op op) const
    {
        std::vector<T> out(values.size());
        check(MPI_Allreduce(values.data(), out.data(), int(values.size()), type, op, comm_), "MPI_Allreduce");
        return out;
    }
    /// Counts and displacements of per-rank element counts as MPI's ints (MpiError naming call beyond int's range);
    /// returns the element total.
    int64_t elementLayout(const std::vector<int64_t>& counts, std::vector<int>& ints, std::vector<int>& displ,
                          const char* call) const;
    /// MpiError unless counts has one non-negative entry per rank summing to total.
    void checkCounts(const std::vector<int64_t>& counts, int64_t total) const;

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
};

} // namespace octwalk::mpi
