// Degenerate input on the CPU backend: the matrix of tests/degenerate_cases.h (sizes around n_leaf and
// n_group, coincident, flat and lattice sets, far and tiny coordinates, extreme masses, NaN and
// infinities), plus what only the host sees: probes, velocities, absurd counts in snapshot headers,
// duplicate ids in snapshots, and running out of host memory.
// tests/test_gpu_degenerate.cpp runs the same matrix on the GPU backend.
#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "unit/degenerate_cases.h"
#include "common/errors.h"
#include "host/tree/octree.h"
#include "host/sim/simulation.h"
#include "host/io/snapshot.h"

using namespace octwalk;
namespace fs = std::filesystem;

namespace {

class Degenerate : public ::testing::TestWithParam<degenerate::Case>
{
};

/// A fresh directory under the system temporary directory, removed with the fixture.
class ScratchDirectory
{
public:
    ScratchDirectory()
        : dir_(fs::temp_directory_path() / ("octwalk_degenerate_" + std::to_string(::getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name()))
    {
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    ~ScratchDirectory()
    {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }

private:
    fs::path dir_;
};

using Bytes = std::vector<unsigned char>;

void writeBytes(const std::string& path, const Bytes& b)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

Bytes readBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Little-endian bytes of v at b[at] (the tests' own encoder, independent of the library's).
template<class T>
void putLittle(Bytes& b, size_t at, T v)
{
    unsigned char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    for (size_t k = 0; k < sizeof(T); ++k) b[at + k] = raw[k]; // x86-64 and aarch64 are little-endian
}

void expectFormatError(const std::string& path, SnapshotFormat format, std::initializer_list<std::string> fragments)
{
    try
    {
        readSnapshot(path, format);
        ADD_FAILURE() << path << ": read without error";
    }
    catch (const FormatError& e)
    {
        for (const std::string& s : fragments)
        {
            EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << "'" << s << "' not in: " << e.what();
        }
    }
}

ParticleSet smallSet(int64_t n)
{
    ParticleSet p = makePlummer(n, 3);
    for (int64_t i = 0; i < n; ++i) p.id[i] = uint64_t(100 + i);
    return p;
}

bool hdf5Built()
{
    try
    {
        readSnapshot("/nonexistent-octwalk-probe", SnapshotFormat::Hdf5);
    }
    catch (const FormatError& e)
    {
        return std::string(e.what()).find("without HDF5") == std::string::npos;
    }
    return true;
}

} // namespace

TEST_P(Degenerate, CpuTreeMatchesDirectOrNamesTheProblem) { degenerate::run(GetParam(), Backend::Cpu); }

INSTANTIATE_TEST_SUITE_P(Matrix, Degenerate, ::testing::ValuesIn(degenerate::cases()), degenerate::caseName);

// ---- probes and velocities ---------------------------------------------------------------------

TEST(DegenerateProbes, ProbesOnBodiesAndFarAwayAreFiniteOrRefused)
{
    ParticleSet b = makePlummer(300, 5);
    GravitySolver s(degenerate::parameters(degenerate::Case{}, Backend::Cpu));
    s.setBodies(b.pos, b.mass, b.id);
    // A probe exactly on an unsoftened body: that pair contributes nothing, the rest is exact.
    std::vector<Vec3d> points{b.pos[0], b.pos[1], {0, 0, 0}, {1e9, 0, 0}}, acc;
    std::vector<double> pot;
    s.evaluateAt(points, acc, pot);
    for (size_t i = 0; i < points.size(); ++i)
    {
        EXPECT_TRUE(degenerate::finite(acc[i]) && std::isfinite(pot[i])) << "probe " << i;
    }
    // A probe 1e-18 from an unsoftened heavy body: float32 resolves the pair, the force (1e3 / 1e-36)
    // overflows it. (At 1e-20, r^2 is subnormal and the pair counts as coincident: bodyBody.)
    ParticleSet nearOrigin = b;
    nearOrigin.pos[7]      = {0, 0, 0};
    nearOrigin.mass[7]     = 1e3;
    s.setBodies(nearOrigin.pos, nearOrigin.mass, nearOrigin.id);
    try
    {
        s.evaluateAt({{1, 1, 1}, {1e-18, 0, 0}}, acc, pot);
        ADD_FAILURE() << "a probe 1e-18 from a body gave no error";
    }
    catch (const InputError& e)
    {
        EXPECT_NE(std::string(e.what()).find("probe point 1"), std::string::npos) << e.what();
    }
    EXPECT_THROW(s.evaluateAt({{0, 0, 1e30}}, acc, pot), InputError);
    EXPECT_THROW(s.evaluateAt({{std::numeric_limits<double>::quiet_NaN(), 0, 0}}, acc, pot), InputError);
    EXPECT_THROW(s.evaluateAt({}, acc, pot), InputError);
}

TEST(DegenerateSimulation, NonFiniteVelocityNamesTheBody)
{
    for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
    {
        ParticleSet b = makePlummer(100, 5);
        b.vel[42].y   = bad;
        Parameters p  = degenerate::parameters(degenerate::Case{}, Backend::Cpu);
        try
        {
            Simulation sim(b, p, planSteps(0.0, 0.1, 0.05));
            ADD_FAILURE() << "accepted a velocity of " << bad;
        }
        catch (const InputError& e)
        {
            EXPECT_NE(std::string(e.what()).find("body 42"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("velocity"), std::string::npos) << e.what();
        }
    }
}

// ---- snapshots: absurd counts and duplicate ids ------------------------------------------------

TEST(DegenerateSnapshots, AbsurdCountsAreRefusedBeforeAllocation)
{
    // The headers claim up to 2^31 - 1 particles per type (about 2^34 in all for GADGET-2) in files of a
    // few hundred bytes: the readers must compare the counts with the file size before allocating.
    ScratchDirectory dir;
    Bytes tipsy(32, 0);
    const int32_t huge = std::numeric_limits<int32_t>::max();
    putLittle<double>(tipsy, 0, 0.0);
    putLittle<int32_t>(tipsy, 8, huge);
    putLittle<int32_t>(tipsy, 12, 3);
    putLittle<int32_t>(tipsy, 20, huge);
    writeBytes(dir.file("huge.tipsy"), tipsy);
    expectFormatError(dir.file("huge.tipsy"), SnapshotFormat::TipsyNative, {"ndark = 2147483647", "need"});

    Bytes gadget(4 + 256 + 4, 0);
    putLittle<uint32_t>(gadget, 0, 256);
    putLittle<uint32_t>(gadget, 260, 256);
    for (int t = 0; t < 6; ++t) putLittle<int32_t>(gadget, 4 + 4 * t, huge);
    putLittle<int32_t>(gadget, 4 + 124, 1);
    writeBytes(dir.file("huge.gadget"), gadget);
    expectFormatError(dir.file("huge.gadget"), SnapshotFormat::Gadget2, {"'npart'", "2147483647", "need at least"});
}

TEST(DegenerateSnapshots, DuplicateIdsAreReaderErrors)
{
    ScratchDirectory dir;
    const ParticleSet p = smallSet(20);

    // GADGET-2: the ID block follows HEAD, POS and VEL; give particle 5 the id of particle 4.
    writeSnapshot(dir.file("dup.gadget"), SnapshotFormat::Gadget2, p);
    Bytes g            = readBytes(dir.file("dup.gadget"));
    const size_t idsAt = (4 + 256 + 4) + 2 * (4 + 12 * 20 + 4) + 4;
    putLittle<uint32_t>(g, idsAt + 4 * 5, uint32_t(p.id[4]));
    writeBytes(dir.file("dup.gadget"), g);
    expectFormatError(dir.file("dup.gadget"), SnapshotFormat::Gadget2, {"'id'", "104", "occurs twice"});

    // Bonsai TIPSY keeps uint64 ids in the last 8 bytes of each 36-byte dark record.
    writeSnapshot(dir.file("dup.tipsy"), SnapshotFormat::TipsyBonsai, p);
    Bytes t = readBytes(dir.file("dup.tipsy"));
    putLittle<uint64_t>(t, 32 + 7 * 36 + 28, p.id[6]);
    writeBytes(dir.file("dup.tipsy"), t);
    expectFormatError(dir.file("dup.tipsy"), SnapshotFormat::TipsyBonsai, {"'id'", "106", "occurs twice"});

    if (!hdf5Built()) return;
    // HDF5: the raw data of ParticleIDs is not checksummed; find ids 100, 101, ... and repeat one.
    writeSnapshot(dir.file("dup.hdf5"), SnapshotFormat::Hdf5, p);
    Bytes h = readBytes(dir.file("dup.hdf5"));
    Bytes pattern(16);
    putLittle<uint64_t>(pattern, 0, p.id[0]);
    putLittle<uint64_t>(pattern, 8, p.id[1]);
    const auto at = std::search(h.begin(), h.end(), pattern.begin(), pattern.end());
    ASSERT_NE(at, h.end());
    putLittle<uint64_t>(h, size_t(at - h.begin()) + 8, p.id[0]);
    writeBytes(dir.file("dup.hdf5"), h);
    expectFormatError(dir.file("dup.hdf5"), SnapshotFormat::Hdf5, {"'id'", "100", "occurs twice"});
}

// ---- sizes and memory --------------------------------------------------------------------------

TEST(DegenerateMemory, MoreThanTheSupportedBodiesIsRefusedBeforeReadingThem)
{
    // validateBodies checks N first, so the arrays are never touched (and need not exist).
    const int64_t n = int64_t(1) << 31;
    try
    {
        validateBodies({nullptr, nullptr, nullptr, n});
        ADD_FAILURE() << "N = 2^31 accepted";
    }
    catch (const InputError& e)
    {
        EXPECT_NE(std::string(e.what()).find("N = 2147483648"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("2^30"), std::string::npos) << e.what();
    }
}

namespace {

/// Bytes of address space this process has mapped (VmSize).
uint64_t addressSpaceBytes()
{
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    return pages * uint64_t(::sysconf(_SC_PAGESIZE));
}

/// In a child process (a gtest death test): the bodies are made, the address space is limited to what
/// is mapped plus `headroom`, and setBodies + computeForces must end in a BackendError, whose message
/// goes to stderr; exit codes 3 (no error) and 4 (another exception) fail the expectation.
[[noreturn]] void runOutOfMemory(int64_t n, uint64_t headroom)
{
    // A small evaluation first, so OpenMP threads and their allocator arenas exist before the limit.
    ParticleSet warm = makePlummer(1000, 1);
    GravitySolver solver(degenerate::parameters(degenerate::Case{}, Backend::Cpu));
    solver.setBodies(warm.pos, warm.mass, warm.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    solver.computeForces(acc, pot);

    std::vector<Vec3d> pos(size_t(n), Vec3d{0, 0, 0});
    std::vector<double> mass(size_t(n), 1.0 / double(n));
    for (int64_t i = 0; i < n; ++i) pos[i] = {double(i % 1021), double(i % 1031), double(i % 1033)};
    const rlimit limit{addressSpaceBytes() + headroom, RLIM_INFINITY};
    if (::setrlimit(RLIMIT_AS, &limit) != 0) std::_Exit(5);
    try
    {
        solver.setBodies(pos, mass);
        solver.computeForces(acc, pot);
    }
    catch (const BackendError& e)
    {
        std::cerr << e.what() << std::endl;
        std::_Exit(0);
    }
    catch (const std::exception& e)
    {
        std::cerr << "not a BackendError: " << e.what() << std::endl;
        std::_Exit(4);
    }
    std::_Exit(3);
}

bool underAddressSanitizer()
{
#if defined(__SANITIZE_ADDRESS__)
    return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return true;
#endif
#endif
    return false;
}

} // namespace

TEST(DegenerateMemory, HostAllocationFailureNamesTheStepAndTheSize)
{
    // AddressSanitizer reserves terabytes of address space and reports a failed allocation itself.
    if (underAddressSanitizer()) GTEST_SKIP() << "address-space limits do not apply under AddressSanitizer";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    const int64_t n = int64_t(1) << 22; // 128 MiB of positions and masses; the solver's copy needs 160 MiB
    EXPECT_EXIT(runOutOfMemory(n, uint64_t(64) << 20), ::testing::ExitedWithCode(0),
                "out of host memory while copying the bodies for N = 4194304 \\(about 160 MiB");
    EXPECT_EXIT(runOutOfMemory(n, uint64_t(224) << 20), ::testing::ExitedWithCode(0),
                "out of host memory while building the tree for N = 4194304 \\(about");
}
