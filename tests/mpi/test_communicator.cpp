// The communicator wrapper: collectives route every value (elements of any size, counted in elements, whose MPI
// type has exactly their size even beyond int's range), floating-point sums are the rank-order sum on every rank,
// and bad counts are typed errors naming the rank.

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "mpi/mpi_test_util.h"

namespace {

using namespace octwalk;
using namespace octwalk::mpi;
using octwalk::mpi::testing::world;

TEST(Communicator, AllgatherIsInRankOrder)
{
    const Communicator& comm     = world();
    const std::vector<int> ranks = comm.allgather(comm.rank());
    for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(ranks[size_t(r)], r);
}

TEST(Communicator, OrderedSumIsTheRankOrderSumEverywhere)
{
    const Communicator& comm = world();
    // Values whose sum depends on the order of the additions.
    auto valueOf     = [](int r) { return r % 2 ? 1e16 * (r + 1) : 1.0 + 0.1 * r; };
    const double sum = comm.allreduceSumOrdered(valueOf(comm.rank()));
    double expected  = 0.0;
    for (int r = 0; r < comm.size(); ++r) expected += valueOf(r);
    EXPECT_EQ(std::memcmp(&sum, &expected, sizeof(double)), 0);
    const std::vector<double> all = comm.allgather(sum);
    for (double s : all) EXPECT_EQ(std::memcmp(&s, &sum, sizeof(double)), 0);
}

TEST(Communicator, AlltoallvRoutesEveryValue)
{
    const Communicator& comm = world();
    std::vector<int64_t> send, counts;
    for (int r = 0; r < comm.size(); ++r)
    {
        counts.push_back(r + 1);
        for (int k = 0; k <= r; ++k) send.push_back(1000 * comm.rank() + r);
    }
    std::vector<int64_t> recvCounts;
    const std::vector<int64_t> got = comm.alltoallv(send, counts, recvCounts);
    size_t at                      = 0;
    for (int s = 0; s < comm.size(); ++s)
    {
        EXPECT_EQ(recvCounts[size_t(s)], comm.rank() + 1);
        for (int k = 0; k <= comm.rank(); ++k) EXPECT_EQ(got[at++], 1000 * s + comm.rank());
    }
    EXPECT_EQ(at, got.size());
}

// Elements of 40 bytes travel counted in elements: each arrives whole, in order.
TEST(Communicator, AlltoallvSendsElementsLargerThanAByte)
{
    struct Five
    {
        double v[5];
    };
    const Communicator& comm = world();
    std::vector<Five> send;
    std::vector<int64_t> counts;
    for (int r = 0; r < comm.size(); ++r)
    {
        counts.push_back(2);
        for (int k = 0; k < 2; ++k) send.push_back({{double(comm.rank()), double(r), double(k), 0.5, -1.0}});
    }
    std::vector<int64_t> recvCounts;
    const std::vector<Five> got = comm.alltoallv(send, counts, recvCounts);
    ASSERT_EQ(got.size(), size_t(2 * comm.size()));
    for (int s = 0; s < comm.size(); ++s)
    {
        for (int k = 0; k < 2; ++k)
        {
            const Five& f = got[size_t(2 * s + k)];
            EXPECT_EQ(f.v[0], s);
            EXPECT_EQ(f.v[1], comm.rank());
            EXPECT_EQ(f.v[2], k);
            EXPECT_EQ(f.v[4], -1.0);
        }
    }
}

// An element of more bytes than int counts is still one MPI element of exactly that size.
TEST(Communicator, ElementTypesBeyondIntsRangeHaveTheirSize)
{
    for (int64_t bytes : {int64_t(1), int64_t(24), (int64_t(1) << 31) + 12345, int64_t(3) << 31})
    {
        const ElementType element(world(), bytes);
        MPI_Count size = 0;
        MPI_Type_size_x(element.get(), &size);
        EXPECT_EQ(int64_t(size), bytes);
    }
}

TEST(Communicator, GathervConcatenatesInRankOrderOnTheRootOnly)
{
    const Communicator& comm = world();
    // Rank r sends r + 1 values 100 r + k; rank 1 (or 0 alone) receives.
    std::vector<int64_t> mine;
    for (int k = 0; k <= comm.rank(); ++k) mine.push_back(100 * comm.rank() + k);
    const int root                 = comm.size() > 1 ? 1 : 0;
    const std::vector<int64_t> got = comm.gatherv(mine, root);
    if (comm.rank() != root)
    {
        EXPECT_TRUE(got.empty());
        return;
    }
    size_t at = 0;
    for (int r = 0; r < comm.size(); ++r)
        for (int k = 0; k <= r; ++k) EXPECT_EQ(got.at(at++), 100 * r + k);
    EXPECT_EQ(at, got.size());
}

TEST(Communicator, BadCountsNameTheRank)
{
    const Communicator& comm = world();
    const std::vector<int64_t> send(3, 0);
    std::vector<int64_t> recvCounts;
    try
    {
        comm.alltoallv(send, std::vector<int64_t>(size_t(comm.size()), 0), recvCounts);
        FAIL() << "counts summing to 0 for 3 values were accepted";
    }
    catch (const MpiError& e)
    {
        EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(comm.rank())), std::string::npos) << e.what();
    }
}

} // namespace
