// GoogleTest under mpirun: every rank runs every test (the tests are collective). Rank 0 prints the usual
// report; the others print only their failures, prefixed with their rank. The exit status is a failure on
// every rank when any rank failed.

#include <gtest/gtest.h>

#include <cstdio>

#include "host/mpi/communicator.h"

namespace {

/// Prints the failed assertions of one rank.
class FailurePrinter : public ::testing::EmptyTestEventListener
{
public:
    explicit FailurePrinter(int rank) : rank_(rank) {}

    void OnTestPartResult(const ::testing::TestPartResult& result) override
    {
        if (!result.failed()) return;
        std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                     result.line_number(), result.summary());
    }

private:
    int rank_;
};

} // namespace

int main(int argc, char** argv)
{
    octwalk::mpi::MpiEnvironment environment(&argc, &argv);
    ::testing::InitGoogleTest(&argc, argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank != 0)
    {
        ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
        delete listeners.Release(listeners.default_result_printer());
        listeners.Append(new FailurePrinter(rank));
    }
    int failed    = RUN_ALL_TESTS() != 0;
    int anyFailed = 0;
    MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return anyFailed;
}
