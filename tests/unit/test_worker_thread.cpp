#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "host/core/worker_thread.h"

using namespace octwalk;

TEST(WorkerThread, RunsEveryJobOnOneThreadInOrder)
{
    std::vector<int> done;
    std::vector<std::thread::id> ran;
    {
        WorkerThread worker;
        for (int k = 0; k < 5; ++k)
        {
            // run() waits for the job before, so the jobs never overlap and each sees the last one's push.
            worker.run([&, k] {
                std::this_thread::sleep_for(std::chrono::milliseconds(k % 2));
                done.push_back(k);
                ran.push_back(std::this_thread::get_id());
            });
        }
        worker.wait();
        EXPECT_EQ(done, (std::vector<int>{0, 1, 2, 3, 4}));
    }
    ASSERT_EQ(ran.size(), 5u);
    for (const std::thread::id& id : ran)
    {
        EXPECT_EQ(id, ran[0]);
        EXPECT_NE(id, std::this_thread::get_id());
    }
}

TEST(WorkerThread, WaitReturnsOnlyAfterTheJobAndAtOnceWithoutOne)
{
    WorkerThread worker;
    worker.wait();
    std::atomic<bool> finished{false};
    worker.run([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        finished = true;
    });
    worker.wait();
    EXPECT_TRUE(finished);
}

TEST(WorkerThread, DestructorFinishesTheRunningJob)
{
    std::atomic<bool> finished{false};
    {
        WorkerThread worker;
        worker.run([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            finished = true;
        });
    }
    EXPECT_TRUE(finished);
}
