#pragma once
/// @file span_log.h
/// Named intervals of the pipelined step's work on the host's steady clock (steadyClockSeconds(),
/// common/phases.h): the resident twins (device/resident_gpu.h from CUDA events anchored to that clock,
/// host/cpu/resident_cpu.h from the clock itself) append what they ran while the log is on, and the
/// pipeline (host/sim/pipeline.h) moves the entries onto the run's timeline (host/core/timeline.h). It
/// lives in common/ because both twins write it and device/ depends on common/ alone. Off, the twins
/// take no times for it: a run without a timeline does no extra work.

#include <cstdint>
#include <vector>

namespace octwalk {

/// Where a logged interval ran.
enum class SpanLane
{
    Walk, ///< the twin's own work: the device's main stream, or the CPU twin's thread
    Copy, ///< the device's copy stream (the positions' download that overlaps the walk)
    Rows, ///< the device's rows stream (the Lagrangian radii's sort, beside the next step)
    Mesh, ///< the device's mesh stream (TreePM's long range, beside the walk)
};

/// One interval of a SpanLog.
struct LoggedSpan
{
    int64_t step      = 0; ///< SpanLog::step when the work was queued
    SpanLane lane     = SpanLane::Walk;
    const char* phase = "";    ///< a string literal: kPhases' names for the walk, the twin's own otherwise
    double begin = 0, end = 0; ///< steadyClockSeconds(), end >= begin
};

/// What the twins append to; the pipeline sets on and step before each operation.
struct SpanLog
{
    bool on      = false;
    int64_t step = 0;
    std::vector<LoggedSpan> spans;

    /// Appends [begin, end] of `phase` when on.
    void add(SpanLane lane, const char* phase, double begin, double end)
    {
        if (on) spans.push_back({step, lane, phase, begin, end});
    }
};

} // namespace octwalk
