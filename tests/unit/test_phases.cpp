// The one list of phases (common/phases.h) and its rendering (host/core/phases.h): every phase
// appears under its one name in every output, and medians are taken per phase.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "host/core/phases.h"

using namespace octwalk;

namespace {

PhaseTimes ramp(double scale)
{
    PhaseTimes t;
    for (size_t k = 0; k < kNumPhases; ++k) t.seconds[k] = scale * double(k + 1);
    return t;
}

size_t count(const std::string& s, char c) { return size_t(std::count(s.begin(), s.end(), c)); }

} // namespace

TEST(Phases, GroupsSumToTheTotal)
{
    PhaseTimes t = ramp(1.0);
    double host = 0, walk = 0;
    for (size_t k = 0; k < kNumPhases; ++k) (kPhases[k].group == PhaseGroup::Host ? host : walk) += t.seconds[k];
    EXPECT_EQ(t.host(), host);
    EXPECT_EQ(t.walk(), walk);
    EXPECT_EQ(t.total(), host + walk);
    EXPECT_EQ(t.walkPasses(), t[Phase::WalkCount] + t[Phase::WalkWrite]);
    // The device's walk + forces: from the first pass through the download, the upload left out.
    EXPECT_EQ(t.walkForces(), t[Phase::WalkCount] + t[Phase::Scan] + t[Phase::WalkWrite] + t[Phase::BodyNode] +
                                  t[Phase::BodyLeaf] + t[Phase::Download]);
    t.clear(PhaseGroup::Walk);
    EXPECT_EQ(t.walk(), 0.0);
    EXPECT_EQ(t.host(), host);
}

TEST(Phases, EveryOutputNamesEveryPhase)
{
    PhaseTimes t     = ramp(1e-3);
    std::string json = phasesJson(t), text = phasesText(t, 1000), header = phasesCsvHeader(),
                table = phasesTableHeader(12);
    for (const PhaseInfo& p : kPhases)
    {
        EXPECT_NE(json.find(std::string("\"") + p.name + "\": "), std::string::npos) << p.name;
        EXPECT_NE(header.find(p.name), std::string::npos) << p.name;
        EXPECT_NE(text.find(p.label), std::string::npos) << p.label;
        EXPECT_NE(table.find(p.label), std::string::npos) << p.label;
    }
    EXPECT_EQ(count(header, ','), count(phasesCsv(t), ',')) << header;
    EXPECT_EQ(phasesTableRow(t, 12).size(), 12 * kNumPhases);
}

TEST(Phases, MedianIsTakenPerPhase)
{
    std::vector<PhaseTimes> runs{ramp(3.0), ramp(1.0), ramp(2.0)};
    PhaseTimes m = medianPhases(runs);
    for (size_t k = 0; k < kNumPhases; ++k) EXPECT_EQ(m.seconds[k], 2.0 * double(k + 1));
    EXPECT_EQ(median({4.0, 1.0, 3.0, 2.0}), 2.5);
    EXPECT_EQ(median({}), 0.0);
}

TEST(Phases, StepOutputsNameEveryPhaseOfBothLists)
{
    StepTimes t;
    t.forces = ramp(1e-3);
    for (size_t k = 0; k < kNumStepPhases; ++k) t.seconds[k] = 1e-2 * double(k + 1);
    std::string header = stepTimesCsvHeader(), json = stepTimesJson(t), text = stepTimesText(t);
    for (const PhaseInfo& p : kPhases)
    {
        EXPECT_NE(header.find(p.name), std::string::npos) << p.name;
        EXPECT_NE(json.find(std::string("\"") + p.name + "\": "), std::string::npos) << p.name;
        EXPECT_NE(text.find(p.label), std::string::npos) << p.label;
    }
    for (const StepPhaseInfo& p : kStepPhases)
    {
        EXPECT_NE(header.find(p.name), std::string::npos) << p.name;
        EXPECT_NE(json.find(std::string("\"") + p.name + "\": "), std::string::npos) << p.name;
        EXPECT_NE(stepPhasesJson(t).find(std::string("\"") + p.name + "\": "), std::string::npos) << p.name;
        EXPECT_NE(stepPhasesTableHeader(13).find(p.label), std::string::npos) << p.label;
        for (const PhaseInfo& f : kPhases) EXPECT_STRNE(p.name, f.name) << "one name, one column";
    }
    EXPECT_EQ(count(header, ','), kNumPhases + kNumStepPhases - 1);
    EXPECT_EQ(count(stepTimesCsv(t), ','), count(header, ','));
    EXPECT_EQ(count(stepPhasesCsv(t), ','), count(stepPhasesCsvHeader(), ','));
    EXPECT_EQ(stepPhasesTableRow(t, 13).size(), 13 * kNumStepPhases);

    StepTimes a = t, b = t, c = t;
    a[StepPhase::StepWall] = 3;
    b[StepPhase::StepWall] = 1;
    c[StepPhase::StepWall] = 2;
    StepTimes m            = medianStepTimes({a, b, c});
    EXPECT_EQ(m[StepPhase::StepWall], 2.0);
    EXPECT_EQ(m.forces.seconds, t.forces.seconds);
}
