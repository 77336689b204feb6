#include "host/core/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <utility>

#include "common/errors.h"

namespace octwalk {

namespace {

/// ParameterError unless name is a non-empty CSV field that needs no quoting.
void checkName(const char* what, const std::string& name)
{
    if (name.empty() || name.find_first_of(",\"\n\r") != std::string::npos)
    {
        throw ParameterError(std::string("timeline: ") + what + " '" + name +
                             "' is invalid: must be non-empty, without commas, quotes or line breaks");
    }
}

} // namespace

void Timeline::start()
{
    std::lock_guard<std::mutex> lock(mutex_);
    intervals_.clear();
    origin_ = steadyClockSeconds();
    on_.store(true, std::memory_order_relaxed);
}

void Timeline::record(int64_t step, const std::string& lane, const std::string& phase, double start, double end)
{
    if (!enabled()) return;
    checkName("lane", lane);
    checkName("phase", phase);
    if (!std::isfinite(start) || !std::isfinite(end) || end < start)
    {
        throw ParameterError("timeline: interval " + lane + "/" + phase + " of step " + std::to_string(step) +
                             " from " + std::to_string(start) + " s to " + std::to_string(end) +
                             " s is invalid: must be finite with end >= start");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    intervals_.push_back({step, lane, phase, start, end});
}

std::vector<TimelineInterval> Timeline::take()
{
    std::vector<TimelineInterval> out;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        out.swap(intervals_);
    }
    std::sort(out.begin(), out.end(), [](const TimelineInterval& a, const TimelineInterval& b) {
        return std::tie(a.start, a.lane, a.phase, a.end) < std::tie(b.start, b.lane, b.phase, b.end);
    });
    return out;
}

size_t Timeline::size() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return intervals_.size();
}

Timeline& processTimeline()
{
    static Timeline timeline;
    return timeline;
}

TimelineLaps::TimelineLaps(Timeline& timeline, int64_t step, std::string lane)
    : timeline_(timeline), on_(timeline.enabled()), step_(step), lane_(std::move(lane))
{
    if (on_) last_ = steadyClockSeconds();
}

void TimelineLaps::lap(const char* phase)
{
    if (!on_) return;
    const double now = steadyClockSeconds();
    timeline_.recordSteady(step_, lane_, phase, last_, now);
    last_ = now;
}

void TimelineLaps::skip()
{
    if (on_) last_ = steadyClockSeconds();
}

namespace {

void recordGroup(Timeline& timeline, int64_t step, const PhaseTimes& t, PhaseGroup g, const std::string& lane)
{
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (kPhases[k].group != g || !t.spans.has(k)) continue;
        timeline.recordSteady(step, lane, kPhases[k].name, t.spans.begin[k], t.spans.end[k]);
    }
}

} // namespace

void recordForcePhases(Timeline& timeline, int64_t step, const PhaseTimes& t, const std::string& walkLane)
{
    if (!timeline.enabled()) return;
    recordGroup(timeline, step, t, PhaseGroup::Host, "host-build");
    recordGroup(timeline, step, t, PhaseGroup::Walk, walkLane);
}

std::string timelineCsvComment()
{
    return "# what ran when, measured: start_s and end_s in seconds since the start of the run (of this process: a "
           "restart's rows start again from 0) on the host's steady clock; device intervals from CUDA events "
           "anchored to that clock (at most the synchronisation latency late). Lanes: host = the step's own host "
           "work (kick_drift: first half-kick, drift and attaching the bodies; reorder_kick: results into the "
           "state's order, reordering and the closing half-kick; diagnostics; io); host-build = the tree build's "
           "phases; device = upload, walk, forces and download on the GPU; host-walk = the same on the CPU twin. A "
           "pipelined run (--rebuild-every other than 1) instead records: host = the stepping thread (kick_drift, "
           "wait_build, adopt, download_positions, start_build, evaluate, kick; diagnostics; io); host-build = the "
           "topology build on its own thread (settle: the gathers of the adoption before it; wait_positions, sort, "
           "cells, groups, packing, order), under the step that started it; device (host-walk on the CPU twin) = "
           "the resident state's operations (kick_drift, predict (the CPU twin's), upload_order, permute, "
           "upload_topology, refit, walk_count, scan, walk_write, body_node, body_leaf, download, kick, "
           "diagnostics, largest_acceleration, lagrangian_radii (the CPU twin's), download_state); copy = the "
           "build's input on the device's copy stream, beside the walk (predict: the positions predicted for the "
           "build; sort_keys: the predicted positions' keys sorted; download_keys: those keys, the build's input; "
           "download_positions: the predicted positions, kept for checkpoints); rows = the device's "
           "lagrangian_radii on a stream of their own, beside the next step (the row is written when they are done)\n";
}

std::string timelineCsvHeader() { return "step,lane,phase,start_s,end_s"; }

std::string timelineCsvRow(const TimelineInterval& i)
{
    char times[64];
    std::snprintf(times, sizeof(times), "%.9f,%.9f", i.start, i.end);
    return std::to_string(i.step) + "," + i.lane + "," + i.phase + "," + times;
}

} // namespace octwalk
