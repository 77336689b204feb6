// The command line: bad options are one clear line and a non-zero exit code, before any work.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "host/cli.h"

namespace {

struct CliResult
{
    int code;
    std::string out, err;
};

CliResult run(std::vector<const char*> args)
{
    args.insert(args.begin(), "octwalk");
    std::ostringstream out, err;
    int code = octwalk::runCli(int(args.size()), args.data(), out, err);
    return {code, out.str(), err.str()};
}

int lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

} // namespace

TEST(Cli, HelpListsUnitsAndDefaults)
{
    CliResult r = run({"forces", "--help"});
    EXPECT_EQ(r.code, 0);
    EXPECT_NE(r.out.find("Units"), std::string::npos);
    EXPECT_NE(r.out.find("--opening-angle"), std::string::npos);
    EXPECT_NE(r.out.find("bonsai"), std::string::npos);
}

TEST(Cli, RejectsBadOptionsWithOneLine)
{
    for (auto args : std::vector<std::vector<const char*>>{{"forces", "--bogus"},
                                                           {"forces", "--n", "abc"},
                                                           {"forces", "--theta", "0"},
                                                           {"forces", "--theta", "0.5", "--theta", "0.6"},
                                                           {"forces", "--theta", "0.5", "--opening-angle", "0.5"},
                                                           {"forces", "--epsilon", "-1"},
                                                           {"forces", "--mac", "barnes"},
                                                           {"forces", "--n", "1"},
                                                           {"forces", "stray"},
                                                           {"frobnicate"}})
    {
        CliResult r = run(args);
        EXPECT_EQ(r.code, 2) << args[1];
        EXPECT_EQ(lines(r.err), 1) << r.err;
    }
}

TEST(Cli, ForcesRunsAndRefusesToOverwrite)
{
    std::string path = (std::filesystem::temp_directory_path() / "octwalk_cli_test.json").string();
    std::filesystem::remove(path);
    CliResult r = run({"forces", "--n", "3000", "--sample", "100", "--backend", "cpu", "-o", path.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("median"), std::string::npos);
    std::ifstream f(path);
    std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_NE(json.find("\"opening_angle\": 0.5"), std::string::npos);
    EXPECT_NE(json.find("\"git\""), std::string::npos);
    CliResult again = run({"forces", "--n", "3000", "--backend", "cpu", "-o", path.c_str()});
    EXPECT_EQ(again.code, 2);
    EXPECT_NE(again.err.find("already exists"), std::string::npos);
    std::filesystem::remove(path);
}
