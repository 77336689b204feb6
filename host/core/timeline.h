#pragma once
/// @file timeline.h
/// What ran when: intervals {step, lane, phase, start, end} of a run, in seconds since the run's start
/// on the host's steady clock (steadyClockSeconds(), common/phases.h), so that overlap between the host,
/// a background build thread and the device can be seen (scripts/plot_timeline.py draws them).
///
/// Recording is off unless a run asks for it (octwalk run --timeline, octwalk profile --timeline); then
/// any thread appends. Times are only written out: nothing in a run reads them back, so the physics and
/// every other output stay bit-identical with or without a timeline.
///
///   Timeline& t = processTimeline();
///   const double begin = t.now();  ...work...  t.record(step, "host-build", "rebuild", begin, t.now());

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/phases.h"

namespace octwalk {

/// One interval of a timeline.
struct TimelineInterval
{
    int64_t step = 0;  ///< the step it belongs to (the step index after that step, as in timing.csv)
    std::string lane;  ///< where it ran: e.g. "host", "host-build", "device", "copy"
    std::string phase; ///< what ran: a kPhases or kStepPhases name, or the recording code's own
    double start = 0;  ///< seconds since the timeline's start()
    double end   = 0;  ///< seconds since the timeline's start(), >= start
};

/// A thread-safe, append-only recorder of intervals. Off (recording nothing) until start().
class Timeline
{
public:
    /// Clears what was recorded and starts recording: times are measured from this call. Not to be
    /// called while another thread records.
    void start();
    /// Stops recording; what was recorded stays until take() or start().
    void stop() { on_.store(false, std::memory_order_relaxed); }
    bool enabled() const { return on_.load(std::memory_order_relaxed); }

    /// Seconds since start() of a steadyClockSeconds() reading.
    double sinceStart(double steadySeconds) const { return steadySeconds - origin_; }
    /// Seconds since start(), now.
    double now() const { return sinceStart(steadyClockSeconds()); }

    /// Appends an interval when enabled (nothing otherwise); callable from any thread.
    /// @param[in] step   the step it belongs to
    /// @param[in] lane   where it ran
    /// @param[in] phase  what ran
    /// @param[in] start  seconds since start()
    /// @param[in] end    seconds since start(); ParameterError when end < start or either is not finite
    void record(int64_t step, const std::string& lane, const std::string& phase, double start, double end);

    /// As record, with steadyClockSeconds() readings.
    void recordSteady(int64_t step, const std::string& lane, const std::string& phase, double steadyStart,
                      double steadyEnd)
    {
        if (enabled()) record(step, lane, phase, sinceStart(steadyStart), sinceStart(steadyEnd));
    }

    /// Removes and returns what was recorded, ordered by start (then lane and phase; a thread's
    /// intervals may arrive out of order).
    std::vector<TimelineInterval> take();
    /// Intervals recorded and not yet taken.
    size_t size() const;

private:
    std::atomic<bool> on_{false};
    double origin_ = 0;
    mutable std::mutex mutex_;
    std::vector<TimelineInterval> intervals_;
};

/// The process's timeline, into which the run loop and any code it drives (a background build thread,
/// the owner of a device stream) record. Off unless a run or a profile started it.
Timeline& processTimeline();

/// The consecutive phases of one thread on one lane: each lap records the interval from the end of the
/// previous lap (or from construction) to now. Reads no clock when the timeline is off.
///
///   TimelineLaps host(processTimeline(), step, "host");
///   kickDrift();  host.lap("kick_drift");
///   evaluate();   host.lap("evaluate");
class TimelineLaps
{
public:
    /// @param[in,out] timeline  where the laps go (off at construction: nowhere)
    /// @param[in]     step      the step they belong to
    /// @param[in]     lane      where they run
    TimelineLaps(Timeline& timeline, int64_t step, std::string lane);
    /// Records the interval since the previous lap as `phase`.
    void lap(const char* phase);
    /// Starts the next lap now without recording (the time since the previous lap is recorded elsewhere).
    void skip();

private:
    Timeline& timeline_;
    bool on_;
    int64_t step_;
    std::string lane_;
    double last_ = 0;
};

/// Starts processTimeline() when `wanted` and stops it at the end of the scope (also on an exception).
class TimelineSession
{
public:
    explicit TimelineSession(bool wanted) : wanted_(wanted)
    {
        if (wanted_) processTimeline().start();
    }
    ~TimelineSession()
    {
        if (wanted_) processTimeline().stop();
    }
    TimelineSession(const TimelineSession&)            = delete;
    TimelineSession& operator=(const TimelineSession&) = delete;

private:
    bool wanted_;
};

/// Records the phases of a force evaluation that have spans (PhaseTimes::spans): the host's build on
/// lane "host-build", the walk and forces on lane walkLane ("device" on the GPU backend).
/// @param[in,out] timeline  nothing is recorded when it is off
/// @param[in]     step      the step the evaluation belongs to
/// @param[in]     t         the evaluation's phases
/// @param[in]     walkLane  the lane of the walk phases
void recordForcePhases(Timeline& timeline, int64_t step, const PhaseTimes& t, const std::string& walkLane);

/// The "# ..." line(s) that describe timeline.csv's columns, units and lanes (ending in a newline).
std::string timelineCsvComment();
/// timeline.csv's column names (no newline).
std::string timelineCsvHeader();
/// One row under timelineCsvHeader() (times to the nanosecond).
std::string timelineCsvRow(const TimelineInterval& interval);

} // namespace octwalk
