// The timeline recorder (host/core/timeline.h) and the phase spans it is fed from (common/phases.h).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/errors.h"
#include "host/core/phases.h"
#include "host/core/timeline.h"

using namespace octwalk;

TEST(Timeline, OffRecordsNothing)
{
    Timeline t;
    EXPECT_FALSE(t.enabled());
    t.record(1, "host", "kick_drift", 0.0, 1.0);
    t.recordSteady(1, "host", "io", steadyClockSeconds(), steadyClockSeconds());
    EXPECT_EQ(t.size(), 0u);
    t.start();
    t.record(1, "host", "kick_drift", 0.0, 1.0);
    t.stop();
    t.record(2, "host", "kick_drift", 1.0, 2.0);
    EXPECT_EQ(t.take().size(), 1u) << "only the interval recorded while on";
    EXPECT_EQ(t.size(), 0u) << "take() empties it";
}

TEST(Timeline, TakeOrdersByStartWhateverTheOrderOfRecording)
{
    Timeline t;
    t.start();
    t.record(2, "device", "walk_count", 3.0, 4.0);
    t.record(1, "host", "kick_drift", 0.5, 1.0);
    t.record(2, "host-build", "sort", 2.0, 3.0);
    t.record(1, "device", "upload", 1.0, 1.5);
    std::vector<TimelineInterval> v = t.take();
    ASSERT_EQ(v.size(), 4u);
    for (size_t k = 1; k < v.size(); ++k) EXPECT_LT(v[k - 1].start, v[k].start) << k;
    EXPECT_EQ(v.front().phase, "kick_drift");
    EXPECT_EQ(v.back().lane, "device");
}

TEST(Timeline, TimesAreSecondsSinceStart)
{
    Timeline t;
    const double before = steadyClockSeconds();
    t.start();
    const double after = steadyClockSeconds();
    EXPECT_GE(t.now(), 0.0);
    EXPECT_LE(t.sinceStart(after), after - before);
    EXPECT_LE(t.sinceStart(before), 0.0);
    t.recordSteady(1, "host", "io", after, after + 0.25);
    std::vector<TimelineInterval> v = t.take();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_NEAR(v[0].end - v[0].start, 0.25, 1e-9);
    EXPECT_GE(v[0].start, 0.0);
}

TEST(Timeline, TwoThreadsLoseNoInterval)
{
    Timeline t;
    t.start();
    constexpr int kPerThread = 20000;
    auto append              = [&t](const char* lane) {
        for (int k = 0; k < kPerThread; ++k) t.record(k, lane, "phase", double(k), double(k) + 0.5);
    };
    std::thread a(append, "host"), b(append, "host-build");
    a.join();
    b.join();
    std::vector<TimelineInterval> v = t.take();
    ASSERT_EQ(v.size(), size_t(2 * kPerThread));
    std::set<std::tuple<std::string, int64_t>> seen;
    for (const TimelineInterval& i : v)
    {
        EXPECT_EQ(i.start, double(i.step));
        seen.insert({i.lane, i.step});
    }
    EXPECT_EQ(seen.size(), v.size()) << "every interval once";
    for (size_t k = 1; k < v.size(); ++k) ASSERT_LE(v[k - 1].start, v[k].start) << k;
}

TEST(Timeline, RejectsIntervalsThatCannotBeWritten)
{
    Timeline t;
    t.start();
    EXPECT_THROW(t.record(1, "host", "io", 2.0, 1.0), ParameterError);
    EXPECT_THROW(t.record(1, "host", "io", 0.0, std::nan("")), ParameterError);
    EXPECT_THROW(t.record(1, "host,device", "io", 0.0, 1.0), ParameterError);
    EXPECT_THROW(t.record(1, "host", "", 0.0, 1.0), ParameterError);
    EXPECT_THROW(t.record(1, "host", "a\nb", 0.0, 1.0), ParameterError);
    EXPECT_EQ(t.size(), 0u);
}

TEST(Timeline, CsvRowsUnderTheirHeader)
{
    EXPECT_EQ(timelineCsvHeader(), "step,lane,phase,start_s,end_s");
    EXPECT_NE(timelineCsvComment().find("seconds since the start of the run"), std::string::npos);
    EXPECT_EQ(timelineCsvComment().rfind("# ", 0), 0u);
    EXPECT_EQ(timelineCsvRow({7, "device", "body_leaf", 1.25, 1.5}), "7,device,body_leaf,1.250000000,1.500000000");
}

TEST(PhaseSpans, ChainedPhasesFollowEachOther)
{
    PhaseTimes t;
    t[Phase::Sort]       = 0.5;
    t[Phase::Cells]      = 0.25;
    t[Phase::Multipoles] = 0.125;
    t[Phase::Groups]     = 0.0;
    t[Phase::Packing]    = 1.0;
    t[Phase::WalkCount]  = 3.0;
    chainSpans(t, PhaseGroup::Host, 10.0);
    const size_t sort = size_t(Phase::Sort), packing = size_t(Phase::Packing);
    EXPECT_EQ(t.spans.begin[sort], 10.0);
    for (size_t k = sort + 1; k <= packing; ++k) EXPECT_EQ(t.spans.begin[k], t.spans.end[k - 1]) << k;
    EXPECT_EQ(t.spans.end[packing], 11.875);
    EXPECT_FALSE(t.spans.has(size_t(Phase::WalkCount))) << "only the group asked for";

    SpanExtent e = spanExtent(t.spans);
    EXPECT_EQ(e.begin, 10.0);
    EXPECT_EQ(e.end, 11.875);
    EXPECT_TRUE(spanExtent(PhaseSpans{}).empty());

    PhaseSpans copy;
    copySpans(copy, t.spans, PhaseGroup::Walk);
    EXPECT_TRUE(spanExtent(copy).empty()) << "the host group's spans are not the walk's";
    copySpans(copy, t.spans, PhaseGroup::Host);
    EXPECT_EQ(spanExtent(copy).end, 11.875);
}

TEST(Timeline, ForcePhasesGoToTheirLanes)
{
    PhaseTimes t;
    for (size_t k = 0; k < kNumPhases; ++k) t.seconds[k] = 0.001;
    const double begin = steadyClockSeconds();
    chainSpans(t, PhaseGroup::Host, begin);
    chainSpans(t, PhaseGroup::Walk, t.spans.end[size_t(Phase::Packing)]);
    Timeline timeline;
    recordForcePhases(timeline, 3, t, "device");
    EXPECT_EQ(timeline.size(), 0u) << "off";
    timeline.start();
    recordForcePhases(timeline, 3, t, "device");
    std::vector<TimelineInterval> v = timeline.take();
    ASSERT_EQ(v.size(), kNumPhases);
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        EXPECT_EQ(v[k].phase, kPhases[k].name) << "in execution order";
        EXPECT_EQ(v[k].lane, kPhases[k].group == PhaseGroup::Host ? "host-build" : "device");
        EXPECT_EQ(v[k].step, 3);
        if (k > 0) EXPECT_NEAR(v[k].start, v[k - 1].end, 1e-9);
    }
}

TEST(Timeline, LapsFollowEachOtherOnTheirLane)
{
    Timeline timeline;
    TimelineLaps off(timeline, 1, "host");
    off.lap("kick_drift");
    EXPECT_EQ(timeline.size(), 0u) << "off at construction: nothing, even once started";
    timeline.start();
    off.lap("evaluate");
    EXPECT_EQ(timeline.size(), 0u);

    TimelineLaps laps(timeline, 4, "host");
    laps.lap("kick_drift");
    laps.skip();
    laps.lap("evaluate");
    laps.lap("kick");
    std::vector<TimelineInterval> v = timeline.take();
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0].phase, "kick_drift");
    EXPECT_EQ(v[1].phase, "evaluate");
    EXPECT_EQ(v[2].phase, "kick");
    EXPECT_GE(v[1].start, v[0].end) << "skip leaves a gap";
    EXPECT_EQ(v[2].start, v[1].end) << "a lap starts where the one before ended";
    for (const TimelineInterval& i : v)
    {
        EXPECT_EQ(i.step, 4);
        EXPECT_EQ(i.lane, "host");
        EXPECT_GE(i.end, i.start);
    }
}
