#pragma once
/// @file worker_thread.h
/// One long-lived thread that runs jobs handed to it, one at a time. The pipeline's host builds run on
/// it (host/sim/pipeline.h): a thread started per build would start a new OpenMP team for every build
/// (libgomp keeps a pool of worker threads per thread that opens parallel regions), while this one keeps
/// its team, warm and with its memory first-touched, from one build to the next.

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace octwalk {

class WorkerThread
{
public:
    WorkerThread();
    /// Waits for a running job, then ends the thread.
    ~WorkerThread();
    WorkerThread(const WorkerThread&)            = delete;
    WorkerThread& operator=(const WorkerThread&) = delete;

    /// Hands job to the thread; waits first for the job before, if it is still running. The job must
    /// not throw (it keeps its own exception for the caller of wait).
    void run(std::function<void()> job);
    /// Returns when the last job handed over has finished (at once when none is running).
    void wait();

private:
    void loop();

    std::mutex mutex_;
    std::condition_variable changed_;
    std::function<void()> job_;
    bool busy_ = false, stop_ = false;
    std::thread thread_;
};

/// A job run on a WorkerThread while its caller goes on (TreePM's mesh beside the walk): the job's exception is kept
/// for finish(), and the end of the scope waits for the job, which may refer to the caller's frame, also when the
/// caller throws. With no thread, nothing runs and finish() returns at once.
class JobBeside
{
public:
    explicit JobBeside(WorkerThread* thread) : thread_(thread) {}
    ~JobBeside();
    JobBeside(const JobBeside&)            = delete;
    JobBeside& operator=(const JobBeside&) = delete;

    /// Hands job to the thread (once; nothing without a thread).
    void start(std::function<void()> job);
    /// Waits for the job and rethrows its exception.
    void finish();

private:
    WorkerThread* thread_;
    bool started_ = false;
    std::exception_ptr error_;
};

} // namespace octwalk
