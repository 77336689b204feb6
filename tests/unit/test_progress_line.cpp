// ProgressLine: a terminal's line rewritten in place, a log's whole lines (the first, one a minute, the last).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "host/sim/run_driver.h"

namespace octwalk {
namespace {

/// What a ProgressLine writes into a file over steps 1..n, each shown when due, the last one finished.
std::string linesOf(bool enabled, ProgressLine::Output output, double logSeconds, int n)
{
    std::FILE* f = std::tmpfile();
    if (f == nullptr) return "(no temporary file)";
    ProgressLine line(enabled, output, f, logSeconds);
    for (int k = 1; k <= n; ++k)
    {
        const std::string text = "step " + std::to_string(k) + "   ";
        if (line.due(k == n)) line.show(text.c_str(), k == n);
    }
    std::fflush(f);
    std::rewind(f);
    std::string s;
    for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) s.push_back(char(c));
    std::fclose(f);
    return s;
}

TEST(ProgressLine, ALogGetsTheFirstLineAndTheLastWithinItsInterval)
{
    EXPECT_EQ(linesOf(true, ProgressLine::Output::Log, 3600.0, 5), "step 1\nstep 5\n");
}

TEST(ProgressLine, ALogGetsALineAtEachIntervalsEnd)
{
    EXPECT_EQ(linesOf(true, ProgressLine::Output::Log, 0.0, 3), "step 1\nstep 2\nstep 3\n");
}

TEST(ProgressLine, ATerminalsLineIsRewrittenInPlaceAndEndedWithTheRun)
{
    // Lines at most twice a second, each over the last; the finished run's line is ended, and only it.
    const std::string text = linesOf(true, ProgressLine::Output::Terminal, ProgressLine::kLogSeconds, 3);
    const std::string last = "\rstep 3   \n";
    ASSERT_GE(text.size(), last.size());
    EXPECT_EQ(text.substr(text.size() - last.size()), last) << text;
    EXPECT_EQ(text.find('\n'), text.size() - 1) << text;
}

TEST(ProgressLine, DisabledShowsNothing) { EXPECT_EQ(linesOf(false, ProgressLine::Output::Log, 0.0, 3), ""); }

} // namespace
} // namespace octwalk
