// The device's phase spans (device/gpu_solver.cu: CUDA events anchored to the host's steady clock) and
// the timeline a run records from them. Skips without a GPU, unless OCTWALK_REQUIRE_GPU=1 makes that a
// failure (GPU CI).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/phases.h"
#include "device/gpu_solver.h"
#include "host/core/phases.h"
#include "host/core/timeline.h"
#include "host/models/models.h"
#include "host/sim/run.h"
#include "host/sim/simulation.h"
#include "host/solver/solver.h"
#include "gpu/gpu_test_util.h"

namespace octwalk {
namespace {

class GpuTimelineTest : public ::testing::Test
{
protected:
    void SetUp() override { requireGpu(); }
};

Parameters gpuParameters()
{
    Parameters p;
    p.backend         = Backend::Gpu;
    p.opening_angle   = 0.5;
    p.epsilon_squared = 1e-4;
    p.mac             = Mac::Bonsai; // one walk per evaluation (the relative MAC adds an estimate's walk)
    return p;
}

TEST_F(GpuTimelineTest, DevicePhasesLieInsideTheEvaluationInOrder)
{
    ParticleSet bodies = makeModel("plummer", int64_t(1) << 17, 20240517);
    GravitySolver solver(gpuParameters());
    solver.setBodies(bodies.pos, bodies.mass);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    for (int repeat = 0; repeat < 3; ++repeat) // the first evaluation also allocates
    {
        const double wallBegin = steadyClockSeconds();
        solver.computeForces(acc, pot);
        const double wallEnd = steadyClockSeconds();
        const PhaseTimes& t  = solver.timings();
        double previousEnd   = wallBegin;
        for (size_t k = 0; k < kNumPhases; ++k)
        {
            SCOPED_TRACE(kPhases[k].name);
            ASSERT_TRUE(t.spans.has(k));
            EXPECT_GE(t.spans.begin[k], previousEnd - 1e-6) << "after the phase before it (1 us: event resolution)";
            EXPECT_GE(t.spans.end[k], t.spans.begin[k]);
            EXPECT_LE(t.spans.end[k], wallEnd);
            EXPECT_NEAR(t.spans.end[k] - t.spans.begin[k], t.seconds[k], 1e-6) << "the span is the phase's time";
            previousEnd = t.spans.end[k];
        }
        EXPECT_GE(t.spans.begin[size_t(Phase::Upload)], t.spans.end[size_t(Phase::Packing)] - 1e-6)
            << "the upload starts after the host's build";
    }
}

TEST_F(GpuTimelineTest, StepsRecordDeviceIntervalsInsideTheirStep)
{
    ParticleSet bodies = makeModel("plummer", int64_t(1) << 16, 20240517);
    // The classic step, whose host and device phases this checks.
    Simulation sim(bodies, gpuParameters(), planSteps(0.0, 4 * 0.01, 0.01), ForceOptions{false, false, 1});
    std::vector<StepTimes> times;
    {
        TimelineSession session(true);
        times = timeSteps(sim, 4, false);
    }
    std::vector<TimelineInterval> v = processTimeline().take();
    ASSERT_EQ(times.size(), 4u);
    for (int64_t step = 1; step <= 4; ++step)
    {
        double from = -1, to = -1;
        int device = 0;
        for (const TimelineInterval& i : v)
        {
            if (i.step != step) continue;
            if (i.lane == "host" && i.phase == "kick_drift") from = i.end;
            if (i.lane == "host" && i.phase == "reorder_kick") to = i.start;
            device += i.lane == "device";
        }
        ASSERT_GE(from, 0.0) << "step " << step;
        ASSERT_GE(to, from) << "step " << step;
        EXPECT_EQ(device, int(Phase::Download) - int(Phase::Upload) + 1) << "step " << step;
        for (const TimelineInterval& i : v)
        {
            if (i.step != step || i.lane == "host") continue;
            EXPECT_GE(i.start, from - 1e-9) << i.lane << " " << i.phase << " of step " << step;
            EXPECT_LE(i.end, to + 1e-9) << i.lane << " " << i.phase << " of step " << step;
        }
    }
}

/// The interval of lane/phase in step; a test failure (and an empty interval) when it is missing.
TimelineInterval intervalOf(const std::vector<TimelineInterval>& v, int64_t step, const char* lane, const char* phase)
{
    for (const TimelineInterval& i : v)
    {
        if (i.step == step && i.lane == lane && i.phase == phase) return i;
    }
    ADD_FAILURE() << lane << "/" << phase << " missing in step " << step;
    return {};
}

/// The copy stream's download of a build's input (the keys sorted on the device), mapped through a polled
/// anchor: it starts after the host queued it (start_build) and ends before the build thread saw it end
/// (wait_positions), to within the anchor's poll; the keys' sort on the same stream precedes it, the
/// positions' download follows it, and the adoption's copies, queued by the build's thread once the build is
/// done, follow those. Mapped through the clock read after a blocking wait instead, it ended
/// 0.05-2.8 ms after wait_positions on an H200 at 2^22.
void checkCopyInterval(const std::vector<TimelineInterval>& v, int64_t step)
{
    const TimelineInterval sort      = intervalOf(v, step, "copy", "sort_keys");
    const TimelineInterval copy      = intervalOf(v, step, "copy", "download_keys");
    const TimelineInterval positions = intervalOf(v, step, "copy", "download_positions");
    EXPECT_GE(copy.start, sort.end) << "the keys come down once sorted";
    EXPECT_GE(positions.start, copy.end) << "the positions come after the keys";
    const TimelineInterval staged = intervalOf(v, step, "copy", "upload_adoption");
    const TimelineInterval order  = intervalOf(v, step, "host-build", "order");
    EXPECT_GE(staged.start, positions.end) << "the adoption's copies are queued behind the build's input";
    EXPECT_GE(staged.start, order.end - 1e-5) << "the adoption's copies start once the build is done";
    const TimelineInterval queue = intervalOf(v, step, "host", "start_build");
    const TimelineInterval seen  = intervalOf(v, step, "host-build", "wait_positions");
    EXPECT_GE(copy.start, queue.start) << "the copy starts after it was queued";
    // 10 us: the poll's round trip and the events' resolution (0.5 us); measured on an H200 at 2^22, the
    // copy ended at most 1.6 us after the build thread saw it.
    EXPECT_LE(copy.end, seen.end + 1e-5) << "the copy ends before the build thread saw it end";
    std::printf("step %lld: the build thread saw the copy end %.1f us after its drawn end\n",
                static_cast<long long>(step), 1e6 * (seen.end - copy.end));
}

TEST_F(GpuTimelineTest, PipelinedStepsRecordDeviceBuildAndCopyIntervals)
{
    ParticleSet bodies = makeModel("plummer", int64_t(1) << 16, 20240517);
    // Lag 1: every step adopts a build and starts the next, so every step records each interval.
    ForceOptions continuous;
    continuous.rebuildEvery = 0;
    continuous.rebuildLag   = 1;
    const double dt         = 1.0 / 128;
    Simulation sim(bodies, gpuParameters(), planSteps(0.0, 5 * dt, dt), continuous);
    {
        TimelineSession session(true);
        ASSERT_EQ(timeSteps(sim, 5, true).size(), 5u);
    }
    std::vector<TimelineInterval> v = processTimeline().take();
    for (int64_t step = 1; step <= 5; ++step)
    {
        SCOPED_TRACE("step " + std::to_string(step));
        double from = -1, to = -1;
        std::set<std::string> seen;
        for (const TimelineInterval& i : v)
        {
            if (i.step != step) continue;
            EXPECT_GE(i.end, i.start) << i.lane << " " << i.phase;
            seen.insert(i.lane + "/" + i.phase);
            if (i.lane == "host" && i.phase == "kick_drift") from = i.start;
            if (i.lane == "host" && i.phase == "kick") to = i.end;
        }
        for (const char* name : {"device/kick_drift", "copy/predict", "device/refit", "device/walk_count",
                                 "device/scan", "device/walk_write", "device/body_node", "device/body_leaf",
                                 "device/download", "device/kick", "device/diagnostics", "rows/lagrangian_radii"})
        {
            EXPECT_EQ(seen.count(name), 1u) << name;
        }
        if (step >= 2)
        {
            for (const char* name : {"host/adopt", "device/permute"}) EXPECT_EQ(seen.count(name), 1u) << name;
            // Copied ahead by the build's thread (copy/upload_adoption, under the step that started the build).
            for (const char* name : {"device/upload_order", "device/upload_topology"})
            {
                EXPECT_EQ(seen.count(name), 0u) << name;
            }
        }
        if (step <= 4)
        {
            // Joined, and the copy waited for, by the next step.
            for (const char* name :
                 {"copy/sort_keys", "copy/download_keys", "copy/download_positions", "copy/upload_adoption",
                  "host-build/wait_positions", "host-build/sort", "host-build/packing", "host-build/order"})
            {
                EXPECT_EQ(seen.count(name), 1u) << name;
            }
            checkCopyInterval(v, step);
        }
        ASSERT_GE(from, 0.0);
        ASSERT_GE(to, from);
        // Mapped from events no earlier than their launch and no later than the host's wait for them.
        for (const TimelineInterval& i : v)
        {
            if (i.step != step || i.lane != "device" || i.phase == "diagnostics" || i.phase == "download_state")
            {
                continue;
            }
            EXPECT_GE(i.start, from) << i.phase;
            EXPECT_LE(i.end, to) << i.phase;
        }
    }
}

TEST_F(GpuTimelineTest, PipelinedStepsGiveTheSameBitsWithATimeline)
{
    ParticleSet bodies = makeModel("plummer", int64_t(1) << 14, 20240517);
    ForceOptions continuous;
    continuous.rebuildEvery = 0;
    const double dt         = 1.0 / 128;
    std::vector<ParticleSet> end;
    for (bool recorded : {false, true})
    {
        Simulation sim(bodies, gpuParameters(), planSteps(0.0, 6 * dt, dt), continuous);
        TimelineSession session(recorded);
        timeSteps(sim, 6, true);
        end.push_back(sim.state());
    }
    EXPECT_GT(processTimeline().take().size(), 0u);
    ASSERT_EQ(end[0].pos.size(), end[1].pos.size());
    EXPECT_EQ(0, std::memcmp(end[0].pos.data(), end[1].pos.data(), end[0].pos.size() * sizeof(Vec3d)));
    EXPECT_EQ(0, std::memcmp(end[0].vel.data(), end[1].vel.data(), end[0].vel.size() * sizeof(Vec3d)));
}

} // namespace
} // namespace octwalk
