// ProgressLine: a terminal's line rewritten in place, a log's whole lines (the first, one a minute, the last).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "host/sim/run_driver.h"

namespace octwalk {
namespace {

/// Everything written to f since it was opened.
std::string contents(std::FILE* f)
{
    std::fflush(f);
    std::rewind(f);
    std::string s;
    for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f)) s.push_back(char(c));
    return s;
}

/// Steps 1..n, each shown when due; the last one finished.
void steps(ProgressLine& line, int n)
{
    for (int k = 1; k <= n; ++k)
    {
        const std::string text = "step " + std::to_string(k) + "   ";
        if (line.due(k == n)) line.show(text.c_str(), k == n);
    }
}

TEST(ProgressLine, ALogGetsTheFirstLineAndTheLastWithinItsInterval)
{
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    ProgressLine line(true, ProgressLine::Output::Log, f, 3600.0);
    steps(line, 5);
    EXPECT_EQ(contents(f), "step 1\nstep 5\n");
    std::fclose(f);
}

TEST(ProgressLine, ALogGetsALineAtEachIntervalsEnd)
{
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    ProgressLine line(true, ProgressLine::Output::Log, f, 0.0);
    steps(line, 3);
    EXPECT_EQ(contents(f), "step 1\nstep 2\nstep 3\n");
    std::fclose(f);
}

TEST(ProgressLine, ATerminalsLineIsRewrittenInPlaceAndEndedWithTheRun)
{
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    ProgressLine line(true, ProgressLine::Output::Terminal, f);
    steps(line, 3);
    // Lines at most twice a second, each over the last; the finished run's line is ended, and only it.
    const std::string text = contents(f);
    ASSERT_GE(text.size(), std::string("\rstep 3   \n").size());
    EXPECT_EQ(text.substr(text.size() - 11), "\rstep 3   \n") << text;
    EXPECT_EQ(text.find('\n'), text.size() - 1) << text;
    std::fclose(f);
}

TEST(ProgressLine, DisabledShowsNothing)
{
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    ProgressLine line(false, ProgressLine::Output::Log, f, 0.0);
    steps(line, 3);
    EXPECT_EQ(contents(f), "");
    std::fclose(f);
}

} // namespace
} // namespace octwalk
