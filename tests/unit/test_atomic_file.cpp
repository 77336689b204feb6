// The one way octwalk writes a file (host/io/atomic_file.h): exclusive temporary, checked writes,
// fsync, atomic rename; nothing left behind and nothing outside the target touched on failure.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/errors.h"
#include "host/io/atomic_file.h"

using namespace octwalk;
namespace fs = std::filesystem;

namespace {

class AtomicFileTest : public ::testing::Test
{
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() / ("octwalk_atomic_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    static std::string slurp(const std::string& p)
    {
        std::ifstream f(p, std::ios::binary);
        std::stringstream s;
        s << f.rdbuf();
        return s.str();
    }

    /// Names in the directory, so a test sees any temporary left behind.
    std::vector<std::string> entries() const
    {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }

    fs::path dir_;
};

} // namespace

TEST_F(AtomicFileTest, WritesTheBytesAndLeavesNoTemporary)
{
    writeFileAtomically(path("out.txt"), "hello\n");
    EXPECT_EQ(slurp(path("out.txt")), "hello\n");
    EXPECT_EQ(entries(), std::vector<std::string>{"out.txt"});
}

TEST_F(AtomicFileTest, RefusesAnExistingFileAndKeepsIt)
{
    writeFileAtomically(path("out.txt"), "first");
    EXPECT_THROW(writeFileAtomically(path("out.txt"), "second"), FormatError);
    EXPECT_EQ(slurp(path("out.txt")), "first");
    EXPECT_EQ(entries(), std::vector<std::string>{"out.txt"});
}

TEST_F(AtomicFileTest, ReplacesOrKeepsThePreviousFileWhenAsked)
{
    writeFileAtomically(path("ck"), "one");
    writeFileAtomically(path("ck"), "two", Existing::Replace);
    EXPECT_EQ(slurp(path("ck")), "two");
    writeFileAtomically(path("ck"), "three", Existing::KeepAsPrev);
    EXPECT_EQ(slurp(path("ck")), "three");
    EXPECT_EQ(slurp(path("ck.prev")), "two");
}

// After a restart from checkpoint.bin.prev the two names are links of one file; rotating the next
// checkpoint links it to .prev again, and rename() of one name of a file over another does nothing.
TEST_F(AtomicFileTest, KeepAsPrevOverASecondNameOfTheSameFileLeavesNoTemporary)
{
    writeFileAtomically(path("checkpoint.bin.prev"), "valid");
    linkAtomically(path("checkpoint.bin.prev"), path("checkpoint.bin"));
    EXPECT_EQ(entries(), (std::vector<std::string>{"checkpoint.bin", "checkpoint.bin.prev"}));
    writeFileAtomically(path("checkpoint.bin"), "next", Existing::KeepAsPrev);
    EXPECT_EQ(slurp(path("checkpoint.bin")), "next");
    EXPECT_EQ(slurp(path("checkpoint.bin.prev")), "valid");
    EXPECT_EQ(entries(), (std::vector<std::string>{"checkpoint.bin", "checkpoint.bin.prev"}));
}

// Rotating a checkpoint never leaves its name missing or partial. Renaming the current file to .prev and
// then the new one into place would leave no checkpoint at all after a kill between the two renames: a
// reader polling the name while it is rotated would see it missing.
TEST_F(AtomicFileTest, KeepAsPrevNeverLeavesTheTargetMissing)
{
    const std::string target = path("checkpoint.bin");
    auto version             = [](int k) { return "version " + std::to_string(k) + std::string(4000, '.'); };
    writeFileAtomically(target, version(0));
    std::atomic<bool> done{false};
    std::atomic<int> missing{0}, partial{0}, reads{0};
    std::thread reader([&] {
        while (!done)
        {
            std::ifstream f(target, std::ios::binary);
            if (!f)
            {
                ++missing;
                continue;
            }
            std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            if (text.size() < 4000 || text.rfind("version ", 0) != 0) ++partial;
            ++reads;
        }
    });
    for (int k = 1; k <= 400; ++k) writeFileAtomically(target, version(k), Existing::KeepAsPrev);
    done = true;
    reader.join();
    EXPECT_EQ(missing, 0) << "of " << reads << " reads";
    EXPECT_EQ(partial, 0) << "of " << reads << " reads";
    EXPECT_EQ(slurp(target), version(400));
    EXPECT_EQ(slurp(target + ".prev"), version(399));
    EXPECT_EQ(entries(), (std::vector<std::string>{"checkpoint.bin", "checkpoint.bin.prev"}));
}

TEST_F(AtomicFileTest, APlantedTemporaryNameIsNeverFollowed)
{
    std::ofstream(path("victim.txt")) << "keep";
    fs::create_symlink(path("victim.txt"), path("out.tmp"));
    fs::create_directory(path("out.json.tmp"));
    writeFileAtomically(path("out"), "data");
    writeFileAtomically(path("out.json"), "{}");
    EXPECT_EQ(slurp(path("victim.txt")), "keep");
    EXPECT_TRUE(fs::is_symlink(path("out.tmp")));
    EXPECT_TRUE(fs::is_directory(path("out.json.tmp")));
    EXPECT_EQ(slurp(path("out")), "data");
}

TEST_F(AtomicFileTest, ASymlinkAtTheTargetCountsAsExisting)
{
    std::ofstream(path("victim.txt")) << "keep";
    fs::create_symlink(path("victim.txt"), path("out"));
    EXPECT_THROW(writeFileAtomically(path("out"), "data"), FormatError);
    EXPECT_EQ(slurp(path("victim.txt")), "keep");
}

TEST_F(AtomicFileTest, AMissingDirectoryIsAFormatErrorNamingThePath)
{
    try
    {
        writeFileAtomically(path("no/such/dir/out.txt"), "x");
        FAIL() << "no exception";
    }
    catch (const FormatError& e)
    {
        EXPECT_NE(std::string(e.what()).find("no/such/dir/out.txt"), std::string::npos) << e.what();
    }
}

// A write that fails part-way (the file-size limit stands in for a full disk) names the path and
// leaves neither the final file nor a temporary. In a child process, so the limit stays there.
TEST_F(AtomicFileTest, AFailedWriteLeavesNothingBehind)
{
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0)
    {
        std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit{4096, 4096};
        ::setrlimit(RLIMIT_FSIZE, &limit);
        try
        {
            writeFileAtomically(path("big.bin"), std::string(1 << 20, 'x'));
            ::_exit(1);
        }
        catch (const FormatError& e)
        {
            ::_exit(std::string(e.what()).find("big.bin") != std::string::npos ? 0 : 2);
        }
        ::_exit(3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no error, 2: message without the path, 3: another exception";
    EXPECT_TRUE(entries().empty());
}
