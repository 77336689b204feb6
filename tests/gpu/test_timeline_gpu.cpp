// The device's phase spans (device/gpu_solver.cu: CUDA events anchored to the host's steady clock) and
// the timeline a run records from them. Skips without a GPU, unless OCTWALK_REQUIRE_GPU=1 makes that a
// failure (GPU CI).
#include <gtest/gtest.h>

#include <cstdlib>
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

namespace octwalk {
namespace {

void requireGpu()
{
    if (gpuAvailable()) return;
    const char* require = std::getenv("OCTWALK_REQUIRE_GPU");
    if (require && std::string(require) == "1") FAIL() << "no GPU but OCTWALK_REQUIRE_GPU=1";
    GTEST_SKIP() << "no CUDA device (" << gpuDescription() << ")";
}

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
    Simulation sim(bodies, gpuParameters(), planSteps(0.0, 4 * 0.01, 0.01));
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

} // namespace
} // namespace octwalk
