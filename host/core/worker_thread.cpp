#include "host/core/worker_thread.h"

#include <utility>

namespace octwalk {

WorkerThread::WorkerThread() : thread_([this] { loop(); }) {}

WorkerThread::~WorkerThread()
{
    {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return !busy_; });
        stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
}

void WorkerThread::run(std::function<void()> job)
{
    {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return !busy_; });
        job_  = std::move(job);
        busy_ = true;
    }
    changed_.notify_all();
}

void WorkerThread::wait()
{
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !busy_; });
}

void WorkerThread::loop()
{
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;)
    {
        changed_.wait(lock, [this] { return busy_ || stop_; });
        if (!busy_) return;
        std::function<void()> job = std::move(job_);
        lock.unlock();
        job();
        lock.lock();
        busy_ = false;
        changed_.notify_all();
    }
}

void JobBeside::start(std::function<void()> job)
{
    if (!thread_ || started_) return;
    started_ = true;
    thread_->run([this, job = std::move(job)] {
        try
        {
            job();
        }
        catch (...)
        {
            error_ = std::current_exception();
        }
    });
}

JobBeside::~JobBeside()
{
    if (started_) thread_->wait();
}

void JobBeside::finish()
{
    if (!started_) return;
    thread_->wait();
    if (error_) std::rethrow_exception(error_);
}

} // namespace octwalk
