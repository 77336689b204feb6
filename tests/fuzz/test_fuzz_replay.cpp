// Replays every fuzz regression input (tests/fuzz/regressions/<target>/) and every seed
// (tests/fuzz/corpus/<target>/) through the fuzz targets' own harness, in the ordinary test suite and
// so under AddressSanitizer in CI (scripts/test.sh): a fixed crash stays fixed without clang or libFuzzer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "snapshot_harness.h"

namespace fs = std::filesystem;

OCTWALK_LSAN_SUPPRESS_LIBHDF5_LEAKS

namespace {

std::vector<fs::path> inputsOf(const std::string& target)
{
    std::vector<fs::path> files;
    for (const char* kind : {"regressions", "corpus"})
    {
        const fs::path dir = fs::path(OCTWALK_FUZZ_DIR) / kind / target;
        if (!fs::is_directory(dir)) continue;
        for (const auto& entry : fs::directory_iterator(dir))
        {
            if (entry.is_regular_file()) files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::vector<uint8_t> bytesOf(const fs::path& file)
{
    std::ifstream in(file, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template<class Run>
void replay(const std::string& target, Run run)
{
    const std::vector<fs::path> files = inputsOf(target);
    EXPECT_FALSE(files.empty()) << "no seeds for " << target << " under " << OCTWALK_FUZZ_DIR;
    for (const fs::path& f : files)
    {
        const std::vector<uint8_t> bytes = bytesOf(f);
        try
        {
            run(bytes.data(), bytes.size());
        }
        catch (const std::exception& e)
        {
            ADD_FAILURE() << f << ": " << e.what();
        }
    }
}

bool hdf5Built()
{
    try
    {
        octwalk::readSnapshot("/nonexistent-octwalk-probe", octwalk::SnapshotFormat::Hdf5);
    }
    catch (const octwalk::FormatError& e)
    {
        return std::string(e.what()).find("without HDF5") == std::string::npos;
    }
    return true;
}

void snapshotTarget(const std::string& target, octwalk::SnapshotFormat format)
{
    const octwalk::fuzz::ScratchDirectory scratch(target);
    replay(target,
           [&](const uint8_t* data, size_t size) { octwalk::fuzz::snapshotInput(data, size, format, scratch); });
}

} // namespace

TEST(FuzzReplay, Tipsy) { snapshotTarget("tipsy", octwalk::SnapshotFormat::TipsyStandard); }

TEST(FuzzReplay, Gadget2) { snapshotTarget("gadget2", octwalk::SnapshotFormat::Gadget2); }

TEST(FuzzReplay, Hdf5)
{
    if (!hdf5Built()) GTEST_SKIP() << "built without HDF5";
    snapshotTarget("hdf5", octwalk::SnapshotFormat::Hdf5);
}

TEST(FuzzReplay, Cli)
{
    octwalk::fuzz::CliSandbox sandbox;
    replay("cli", [&](const uint8_t* data, size_t size) { sandbox.run(data, size); });
}
