// Snapshot I/O: round trips in every format, byte order, GADGET id widths and mass blocks, id order,
// refusal to overwrite, and damaged inputs that must give a FormatError naming the field.
//
// Damaged files are made by patching the bytes of a good file, with independent little/big-endian
// encoders (not the library's).
//
// HDF5 output is deterministic (object times are not recorded, file types are explicit), so the HDF5
// round trip is checked byte for byte like the others. HDF5 metadata is checksummed, so the reader's
// checks of header counts against dataset shapes and stored sizes cannot be reached by patching bytes
// here; damaged raw data (NaN, duplicate ids), a damaged header and truncation are tested. A build
// without libhdf5 (its stub says "built without HDF5") skips the HDF5 cases.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/errors.h"
#include "host/models/models.h"
#include "host/io/snapshot.h"

using namespace octwalk;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<unsigned char>;

const SnapshotFormat allFormats[] = {SnapshotFormat::TipsyStandard, SnapshotFormat::TipsyNative,
                                     SnapshotFormat::TipsyBonsai, SnapshotFormat::Gadget2, SnapshotFormat::Hdf5};

bool isFloat32(SnapshotFormat f) { return f != SnapshotFormat::Hdf5; }
bool keepsIds(SnapshotFormat f) { return f != SnapshotFormat::TipsyStandard && f != SnapshotFormat::TipsyNative; }

// ---- bytes -------------------------------------------------------------------------------------

Bytes readBytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeBytes(const std::string& path, const Bytes& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

/// Writes `size` bytes of v at b[at], most significant first when `big`.
void setUint(Bytes& b, size_t at, uint64_t v, int size, bool big)
{
    for (int k = 0; k < size; ++k)
    {
        const int shift = 8 * (big ? size - 1 - k : k);
        b.at(at + k)    = static_cast<unsigned char>(v >> shift); // at(): a wrong offset fails the test
    }
}

uint64_t getUint(const Bytes& b, size_t at, int size, bool big)
{
    uint64_t v = 0;
    for (int k = 0; k < size; ++k)
    {
        const int shift = 8 * (big ? size - 1 - k : k);
        v |= uint64_t(b[at + k]) << shift;
    }
    return v;
}

void setI32(Bytes& b, size_t at, int32_t v, bool big = false) { setUint(b, at, uint32_t(v), 4, big); }
void setF32(Bytes& b, size_t at, float f, bool big = false)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    setUint(b, at, u, 4, big);
}
double getF64(const Bytes& b, size_t at, bool big = false)
{
    const uint64_t u = getUint(b, at, 8, big);
    double d;
    std::memcpy(&d, &u, 8);
    return d;
}

/// Appends values in one byte order, for files built by hand.
struct Builder
{
    bool big;
    Bytes bytes;

    void uint(uint64_t v, int size)
    {
        for (int k = 0; k < size; ++k) bytes.push_back(static_cast<unsigned char>(v >> (8 * (big ? size - 1 - k : k))));
    }
    void i32(int32_t v) { uint(uint32_t(v), 4); }
    void f32(float f)
    {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        uint(u, 4);
    }
    void f64(double d)
    {
        uint64_t u;
        std::memcpy(&u, &d, 8);
        uint(u, 8);
    }
};

/// Offset of the first occurrence of `pattern` in b at or after `from`; b.size() when absent.
size_t find(const Bytes& b, const Bytes& pattern, size_t from = 0)
{
    const auto it = std::search(b.begin() + std::ptrdiff_t(from), b.end(), pattern.begin(), pattern.end());
    return size_t(it - b.begin());
}

Bytes littleEndianBytes(const void* value, size_t size)
{
    Bytes b(size);
    std::memcpy(b.data(), value, size); // the test machine is little-endian, checked in SnapshotTest
    return b;
}

// ---- particles ---------------------------------------------------------------------------------

ParticleSet sample(int64_t n = 1000, uint64_t seed = 7)
{
    ParticleSet p = makePlummer(n, seed);
    p.time        = 0.75;
    for (int64_t i = 0; i < n; ++i) p.mass[i] *= 1.0 + 0.125 * double(i % 7); // unequal
    return p;
}

ParticleSet equalMasses(ParticleSet p)
{
    for (double& m : p.mass) m = 1.0 / double(p.size());
    return p;
}

ParticleSet withIds(ParticleSet p, uint64_t first, uint64_t stride)
{
    for (int64_t i = 0; i < p.size(); ++i) p.id[i] = first + stride * uint64_t(i);
    return p;
}

ParticleSet shuffled(const ParticleSet& p, uint64_t seed)
{
    std::vector<int64_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
    ParticleSet q;
    q.resize(p.size());
    q.time = p.time;
    for (int64_t i = 0; i < p.size(); ++i)
    {
        q.pos[i]  = p.pos[order[i]];
        q.vel[i]  = p.vel[order[i]];
        q.mass[i] = p.mass[order[i]];
        q.id[i]   = p.id[order[i]];
    }
    return q;
}

/// Particle by particle, within the rounding of float32 when `float32` (relative 2^-24).
void expectSameParticles(const ParticleSet& expected, const ParticleSet& got, bool float32, bool compareIds)
{
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(got.time, expected.time);
    const double rel = float32 ? 6.0e-8 : 0.0;
    auto near        = [&](double a, double b) { return std::abs(a - b) <= rel * std::abs(b); };
    for (int64_t i = 0; i < expected.size(); ++i)
    {
        const Vec3d x = got.pos[i], y = expected.pos[i], v = got.vel[i], w = expected.vel[i];
        ASSERT_TRUE(near(x.x, y.x) && near(x.y, y.y) && near(x.z, y.z)) << "position of particle " << i;
        ASSERT_TRUE(near(v.x, w.x) && near(v.y, w.y) && near(v.z, w.z)) << "velocity of particle " << i;
        ASSERT_TRUE(near(got.mass[i], expected.mass[i])) << "mass of particle " << i;
        if (compareIds) ASSERT_EQ(got.id[i], expected.id[i]) << "particle " << i;
    }
}

void expectIdentical(const ParticleSet& a, const ParticleSet& b) { expectSameParticles(a, b, false, true); }

std::string formatName(const ::testing::TestParamInfo<SnapshotFormat>& info)
{
    std::string name = toString(info.param);
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
}

// ---- fixture -----------------------------------------------------------------------------------

class SnapshotTest : public ::testing::Test
{
protected:
    void SetUp() override
    {
        const uint16_t one = 1;
        unsigned char first;
        std::memcpy(&first, &one, 1);
        ASSERT_EQ(first, 1) << "these tests patch little-endian files with host-order values";

        static std::atomic<int> counter{0};
        const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
        dir_             = fs::temp_directory_path() / ("octwalk_snapshots_" + std::to_string(::getpid()) + "_" +
                                            std::to_string(counter++) + "_" + std::to_string(ticks));
        fs::create_directories(dir_);
    }

    void TearDown() override
    {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

    std::string file(const std::string& name) const { return (dir_ / name).string(); }

    std::vector<std::string> listing() const
    {
        std::vector<std::string> names;
        for (const auto& entry : fs::directory_iterator(dir_)) names.push_back(entry.path().filename().string());
        std::sort(names.begin(), names.end());
        return names;
    }

    /// `read` must throw E with every fragment (and the file's path) in its message, and create no file.
    template<class E = FormatError, class F>
    void expectFailure(F read, const std::string& path, std::initializer_list<std::string> fragments)
    {
        const std::vector<std::string> before = listing();
        try
        {
            read();
            ADD_FAILURE() << "no exception for " << path;
        }
        catch (const E& e)
        {
            const std::string message = e.what();
            EXPECT_NE(message.find(path), std::string::npos) << message;
            for (const std::string& s : fragments) EXPECT_NE(message.find(s), std::string::npos) << message;
        }
        EXPECT_EQ(listing(), before) << "a failed call left a file behind";
    }

    void expectReadFails(const std::string& path, SnapshotFormat format, std::initializer_list<std::string> fragments)
    {
        expectFailure([&] { readSnapshot(path, format); }, path, fragments);
    }

    fs::path dir_;
};

/// Whether this build has HDF5 snapshots: CMake builds a stub instead when libhdf5 is missing.
bool hdf5Built()
{
    static const bool built = [] {
        const fs::path probe = fs::temp_directory_path() / ("octwalk_hdf5_probe_" + std::to_string(::getpid()));
        try
        {
            writeSnapshot(probe.string(), SnapshotFormat::Hdf5, ParticleSet{}, {}, true);
        }
        catch (const FormatError& e)
        {
            return std::string(e.what()).find("without HDF5") == std::string::npos;
        }
        std::error_code ignored;
        fs::remove(probe, ignored);
        return true;
    }();
    return built;
}

class SnapshotRoundTrip : public SnapshotTest, public ::testing::WithParamInterface<SnapshotFormat>
{
protected:
    void SetUp() override
    {
        SnapshotTest::SetUp();
        if (GetParam() == SnapshotFormat::Hdf5 && !hdf5Built()) GTEST_SKIP() << "built without HDF5";
    }
};

class SnapshotHdf5 : public SnapshotTest
{
protected:
    void SetUp() override
    {
        SnapshotTest::SetUp();
        if (!hdf5Built()) GTEST_SKIP() << "built without HDF5";
    }
};

} // namespace

// ---- names -------------------------------------------------------------------------------------

TEST(SnapshotFormatNames, ParseAndPrintAgree)
{
    for (SnapshotFormat f : allFormats) EXPECT_EQ(parseSnapshotFormat(toString(f)), f);
    EXPECT_THROW(parseSnapshotFormat("gadget"), ParameterError);
    EXPECT_THROW(parseSnapshotFormat(""), ParameterError);
}

// ---- every format ------------------------------------------------------------------------------

TEST_P(SnapshotRoundTrip, ParticlesSurviveAndSecondWriteIsByteIdentical)
{
    const SnapshotFormat format = GetParam();
    const ParticleSet p         = sample();
    SnapshotMeta meta;
    meta.parametersJson        = "{\"opening_angle\": 0.5}";
    meta.version               = "0.1.0 test";
    meta.gravitationalConstant = 43007.1;

    writeSnapshot(file("a"), format, p, meta);
    EXPECT_EQ(detectFormat(file("a")), format);
    const ParticleSet q = readSnapshot(file("a"));
    expectSameParticles(p, q, isFloat32(format), true);

    writeSnapshot(file("b"), format, q, meta);
    EXPECT_EQ(readBytes(file("a")), readBytes(file("b"))) << "write -> read -> write changed the bytes";
    EXPECT_EQ(listing(), (std::vector<std::string>{"a", "b"})) << "no temporary file may remain";
}

TEST_P(SnapshotRoundTrip, EmptySetRoundTrips)
{
    ParticleSet empty;
    empty.time = 2.5;
    writeSnapshot(file("empty"), GetParam(), empty);
    const ParticleSet q = readSnapshot(file("empty"), GetParam());
    EXPECT_EQ(q.size(), 0);
    EXPECT_EQ(q.time, 2.5);
}

TEST_P(SnapshotRoundTrip, WritesInIdOrderWhenInputIsShuffled)
{
    const SnapshotFormat format = GetParam();
    const ParticleSet p         = withIds(sample(), 1000, 3); // sorted by id
    writeSnapshot(file("s"), format, shuffled(p, 11));
    ParticleSet q = readSnapshot(file("s"), format);
    if (!keepsIds(format))
    {
        for (int64_t i = 0; i < q.size(); ++i) EXPECT_EQ(q.id[i], uint64_t(i)) << "plain TIPSY numbers in file order";
        q.id = p.id;
    }
    expectSameParticles(p, q, isFloat32(format), true);
}

TEST_P(SnapshotRoundTrip, RefusesToOverwriteUnlessAsked)
{
    const SnapshotFormat format = GetParam();
    writeSnapshot(file("o"), format, sample(100, 1));
    const Bytes original = readBytes(file("o"));
    expectFailure([&] { writeSnapshot(file("o"), format, sample(100, 2)); }, file("o"), {"already exists"});
    EXPECT_EQ(readBytes(file("o")), original);

    writeSnapshot(file("o"), format, sample(100, 2), {}, true);
    expectSameParticles(sample(100, 2), readSnapshot(file("o")), isFloat32(format), keepsIds(format));
    EXPECT_EQ(listing(), std::vector<std::string>{"o"});
}

TEST_P(SnapshotRoundTrip, InvalidParticlesAreNotWritten)
{
    ParticleSet nan = sample(100);
    nan.pos[17].y   = std::numeric_limits<double>::quiet_NaN();
    expectFailure<InputError>([&] { writeSnapshot(file("w"), GetParam(), nan); }, "particle 17", {"non-finite"});

    ParticleSet twice = sample(100);
    twice.id[5]       = twice.id[4];
    expectFailure<InputError>([&] { writeSnapshot(file("w"), GetParam(), twice); }, "id 4", {"occurs twice"});

    SnapshotMeta badG;
    badG.gravitationalConstant = 0.0;
    expectFailure<ParameterError>([&] { writeSnapshot(file("w"), GetParam(), sample(10), badG); },
                                  "gravitationalConstant", {});
    EXPECT_TRUE(listing().empty());
}

TEST_P(SnapshotRoundTrip, MissingFileIsFormatError)
{
    expectReadFails(file("missing"), GetParam(), {"no such file"});
    expectFailure([&] { readSnapshot(file("missing")); }, file("missing"), {"no such file"});
}

TEST_P(SnapshotRoundTrip, TruncatedByOneByteIsFormatError)
{
    const SnapshotFormat format = GetParam();
    writeSnapshot(file("t"), format, sample());
    Bytes b = readBytes(file("t"));
    b.pop_back();
    writeBytes(file("t"), b);
    const std::string field = format == SnapshotFormat::Gadget2 ? "'npart'"
                              : format == SnapshotFormat::Hdf5  ? "truncated"
                                                                : "'nsph, ndark, nstar'";
    expectReadFails(file("t"), format, {field});
}

TEST_P(SnapshotRoundTrip, TextFileIsFormatError)
{
    const SnapshotFormat format = GetParam();
    std::string text;
    for (int i = 0; i < 100; ++i) text += "time x y z vx vy vz mass " + std::to_string(i) + "\n";
    writeBytes(file("text"), Bytes(text.begin(), text.end()));
    const std::string field = format == SnapshotFormat::Gadget2 ? "'HEAD record marker' at byte offset 0"
                              : format == SnapshotFormat::Hdf5  ? "'HDF5 signature' at byte offset 0"
                                                                : "'ndim' at byte offset 12";
    expectReadFails(file("text"), format, {field});
    expectFailure([&] { readSnapshot(file("text")); }, file("text"), {"'header' at byte offset 0"});
}

INSTANTIATE_TEST_SUITE_P(Snapshot, SnapshotRoundTrip, ::testing::ValuesIn(allFormats), formatName);

// ---- TIPSY -------------------------------------------------------------------------------------

using SnapshotTipsy = SnapshotTest;

TEST_F(SnapshotTipsy, StandardAndNativeByteOrdersReadTheSame)
{
    const ParticleSet p = sample();
    writeSnapshot(file("big"), SnapshotFormat::TipsyStandard, p);
    writeSnapshot(file("little"), SnapshotFormat::TipsyNative, p);
    const Bytes big = readBytes(file("big")), little = readBytes(file("little"));
    EXPECT_EQ(getUint(big, 12, 4, true), 3u) << "ndim, big-endian";
    EXPECT_EQ(getUint(little, 12, 4, false), 3u) << "ndim, little-endian";
    EXPECT_EQ(getF64(big, 0, true), 0.75) << "time";
    EXPECT_EQ(big.size(), 32u + 36u * 1000u);
    expectIdentical(readSnapshot(file("big")), readSnapshot(file("little")));
    EXPECT_EQ(detectFormat(file("big")), SnapshotFormat::TipsyStandard);
    EXPECT_EQ(detectFormat(file("little")), SnapshotFormat::TipsyNative);
}

TEST_F(SnapshotTipsy, ReadsAnOldHeaderWithoutPad)
{
    writeSnapshot(file("new"), SnapshotFormat::TipsyStandard, sample());
    Bytes b = readBytes(file("new"));
    b.erase(b.begin() + 28, b.begin() + 32);
    writeBytes(file("old"), b);
    expectIdentical(readSnapshot(file("new")), readSnapshot(file("old")));
}

TEST_F(SnapshotTipsy, ReadsGasDarkAndStarRecords)
{
    Builder f{true, {}};
    f.f64(0.5);
    for (int32_t v : {4, 3, 1, 2, 1, 0}) f.i32(v); // nbodies, ndim, nsph, ndark, nstar, pad
    auto common = [&](float base) {
        f.f32(base); // mass
        for (int k = 1; k <= 6; ++k) f.f32(base + float(k));
    };
    common(10); // gas: + rho, temp, eps, metals, phi
    for (int k = 0; k < 5; ++k) f.f32(-1);
    for (float base : {20.0f, 30.0f}) // dark: + eps, phi
    {
        common(base);
        f.f32(-1);
        f.f32(-1);
    }
    common(40); // star: + metals, tform, eps, phi
    for (int k = 0; k < 4; ++k) f.f32(-1);
    writeBytes(file("mixed"), f.bytes);

    const ParticleSet p = readSnapshot(file("mixed"));
    ASSERT_EQ(p.size(), 4);
    EXPECT_EQ(p.time, 0.5);
    const float bases[] = {10, 20, 30, 40};
    for (int i = 0; i < 4; ++i)
    {
        EXPECT_EQ(p.mass[i], bases[i]);
        EXPECT_EQ(p.pos[i].x, bases[i] + 1);
        EXPECT_EQ(p.vel[i].z, bases[i] + 6);
        EXPECT_EQ(p.id[i], uint64_t(i));
    }
}

TEST_F(SnapshotTipsy, BonsaiKeepsIdsBeyond32Bits)
{
    const ParticleSet p = withIds(sample(), uint64_t(1) << 40, 5);
    writeSnapshot(file("bonsai"), SnapshotFormat::TipsyBonsai, shuffled(p, 3));
    expectSameParticles(p, readSnapshot(file("bonsai")), true, true);

    writeSnapshot(file("native"), SnapshotFormat::TipsyNative, p);
    expectReadFails(file("native"), SnapshotFormat::TipsyBonsai, {"'pad' at byte offset 28"});
}

TEST_F(SnapshotTipsy, DamagedHeadersAreFormatErrors)
{
    writeSnapshot(file("good"), SnapshotFormat::TipsyStandard, sample());
    const Bytes good = readBytes(file("good"));
    auto damaged     = [&](size_t at, int32_t value, size_t at2 = 0, int32_t value2 = 0) {
        Bytes b = good;
        setI32(b, at, value, true);
        if (at2 != 0) setI32(b, at2, value2, true);
        writeBytes(file("bad"), b);
        return file("bad");
    };
    expectReadFails(damaged(12, 7), SnapshotFormat::TipsyStandard, {"'ndim' at byte offset 12"});
    expectReadFails(damaged(20, -5), SnapshotFormat::TipsyStandard, {"'ndark' at byte offset 20", "-5"});
    expectReadFails(damaged(8, 2000000000, 20, 2000000000), SnapshotFormat::TipsyStandard,
                    {"'nsph, ndark, nstar' at byte offset 16", "2000000000"});
    expectReadFails(damaged(8, 1001, 20, 1001), SnapshotFormat::TipsyStandard, {"'nsph, ndark, nstar'", "1001"});
    expectReadFails(damaged(8, 999), SnapshotFormat::TipsyStandard, {"'nbodies' at byte offset 8"});
}

TEST_F(SnapshotTipsy, NonFiniteValueNamesTheParticle)
{
    writeSnapshot(file("nan"), SnapshotFormat::TipsyStandard, sample());
    Bytes b        = readBytes(file("nan"));
    const size_t y = 32 + 17 * 36 + 8; // pos.y of dark record 17
    setF32(b, y, std::numeric_limits<float>::infinity(), true);
    writeBytes(file("nan"), b);
    expectReadFails(file("nan"), SnapshotFormat::TipsyStandard,
                    {"'pos.y' at byte offset " + std::to_string(y), "particle 17"});
}

TEST_F(SnapshotTipsy, DuplicateBonsaiIdIsNamed)
{
    writeSnapshot(file("dup"), SnapshotFormat::TipsyBonsai, withIds(sample(), 500, 1));
    Bytes b = readBytes(file("dup"));
    setUint(b, 32 + 9 * 36 + 28, 508, 8, false); // record 9 gets record 8's id
    writeBytes(file("dup"), b);
    expectReadFails(file("dup"), SnapshotFormat::TipsyBonsai, {"'id'", "508", "occurs twice"});
}

// ---- GADGET-2 ----------------------------------------------------------------------------------

using SnapshotGadget = SnapshotTest;

namespace {

constexpr size_t posMarkerAt = 264; // after HEAD: 4 + 256 + 4

size_t idMarkerAt(size_t n) { return posMarkerAt + 2 * (8 + 12 * n); }

} // namespace

/// A snapshot split over files as GADGET writes it (BASE.0 ... BASE.K-1): each part a valid file holding its share,
/// whose header says how many parts there are and how many particles they hold together.
void writeParts(const std::string& base, const ParticleSet& all, const std::vector<int64_t>& cuts)
{
    const int parts = int(cuts.size()) - 1;
    for (int k = 0; k < parts; ++k)
    {
        ParticleSet part;
        part.time = all.time;
        for (int64_t i = cuts[size_t(k)]; i < cuts[size_t(k) + 1]; ++i)
        {
            part.pos.push_back(all.pos[i]);
            part.vel.push_back(all.vel[i]);
            part.mass.push_back(all.mass[i]);
            part.id.push_back(all.id[i]);
            part.type.push_back(all.type[i]);
        }
        const std::string path = base + "." + std::to_string(k);
        writeSnapshot(path, SnapshotFormat::Gadget2, part);
        Bytes b = readBytes(path);
        setUint(b, 4 + 96 + 4 * 1, uint64_t(all.size()), 4, false); // npartTotal[1]
        setUint(b, 4 + 124, uint64_t(parts), 4, false);             // NumFilesPerSnapshot
        writeBytes(path, b);
    }
}

TEST_F(SnapshotGadget, MultiFileSnapshotsAreReadWhole)
{
    const ParticleSet all  = sample();
    const std::string base = file("multi");
    writeParts(base, all, {0, 300, 301, 1000});
    expectSameParticles(all, readSnapshot(base + ".0"), true, true);
    expectSameParticles(all, readSnapshot(base), true, true);

    // Reading from another part than the first, a missing part and a part that disagrees are named errors.
    EXPECT_THROW(
        {
            try
            {
                readSnapshot(base + ".1");
            }
            catch (const FormatError& e)
            {
                EXPECT_NE(std::string(e.what()).find("split over 3 files"), std::string::npos) << e.what();
                throw;
            }
        },
        FormatError);
    fs::rename(base + ".2", base + ".2.away");
    EXPECT_THROW(readSnapshot(base), FormatError);
    fs::rename(base + ".2.away", base + ".2");
    Bytes b = readBytes(base + ".2");
    setUint(b, 4 + 96 + 4 * 1, 999, 4, false);
    writeBytes(base + ".2", b);
    EXPECT_THROW(readSnapshot(base), FormatError);

    // Parts whose counts do not add up to the total.
    const std::string short2 = file("short");
    writeParts(short2, all, {0, 500, 1000});
    Bytes c = readBytes(short2 + ".0");
    setUint(c, 4 + 96 + 4 * 1, 1001, 4, false);
    writeBytes(short2 + ".0", c);
    Bytes d = readBytes(short2 + ".1");
    setUint(d, 4 + 96 + 4 * 1, 1001, 4, false);
    writeBytes(short2 + ".1", d);
    try
    {
        readSnapshot(short2);
        ADD_FAILURE() << "parts holding fewer particles than npartTotal were read";
    }
    catch (const FormatError& e)
    {
        EXPECT_NE(std::string(e.what()).find("the 2 parts hold 1000"), std::string::npos) << e.what();
    }
}

TEST_F(SnapshotGadget, SnapshotsWrittenSplitOverFilesReadBackWhole)
{
    const ParticleSet all  = sample();
    const std::string base = file("split");
    writeSnapshotSplit(base, SnapshotFormat::Gadget2, shuffled(all, 3), 4);
    for (int k = 0; k < 4; ++k) EXPECT_TRUE(fs::exists(base + "." + std::to_string(k))) << k;
    EXPECT_FALSE(fs::exists(base + ".4"));
    expectSameParticles(all, readSnapshot(base), true, true);
    writeSnapshotSplit(file("one"), SnapshotFormat::Gadget2Format2, all, 1);
    expectSameParticles(all, readSnapshot(file("one")), true, true);
    EXPECT_THROW(writeSnapshotSplit(file("tipsy"), SnapshotFormat::TipsyBonsai, all, 2), ParameterError);
    EXPECT_THROW(writeSnapshotSplit(file("none"), SnapshotFormat::Gadget2, all, 0), ParameterError);
}

TEST_F(SnapshotGadget, WideIdsAreWrittenAsUint64)
{
    const ParticleSet p = withIds(sample(), (uint64_t(1) << 32) + 1, 7);
    writeSnapshot(file("wide"), SnapshotFormat::Gadget2, p);
    const Bytes b = readBytes(file("wide"));
    EXPECT_EQ(getUint(b, idMarkerAt(1000), 4, false), 8u * 1000u);
    expectSameParticles(p, readSnapshot(file("wide")), true, true);

    writeSnapshot(file("narrow"), SnapshotFormat::Gadget2, withIds(p, 1, 7));
    EXPECT_EQ(getUint(readBytes(file("narrow")), idMarkerAt(1000), 4, false), 4u * 1000u);
}

TEST_F(SnapshotGadget, EqualMassesGoToTheMassTable)
{
    const size_t n         = 1000;
    const size_t massAt    = 4 + 24 + 8 * 1; // MassTable[1]
    const ParticleSet same = equalMasses(sample());
    writeSnapshot(file("same"), SnapshotFormat::Gadget2, same);
    const Bytes b = readBytes(file("same"));
    EXPECT_EQ(getF64(b, massAt), 1.0 / 1000.0);
    EXPECT_EQ(b.size(), idMarkerAt(n) + 8 + 4 * n) << "no MASS block";
    EXPECT_EQ(getUint(b, 4 + 4, 4, false), n) << "npart[1]";
    expectSameParticles(same, readSnapshot(file("same")), true, true);

    writeSnapshot(file("unequal"), SnapshotFormat::Gadget2, sample());
    const Bytes u = readBytes(file("unequal"));
    EXPECT_EQ(getF64(u, massAt), 0.0);
    EXPECT_EQ(u.size(), idMarkerAt(n) + 2 * (8 + 4 * n)) << "a MASS block";
    expectSameParticles(sample(), readSnapshot(file("unequal")), true, true);
}

TEST_F(SnapshotGadget, ReadsBigEndianMixedTypesAndSkipsGasBlocks)
{
    // npart = {2 gas, 3 halo, 0, 0, 1 star, 0}; MassTable gives the halo 0.5; the others use MASS.
    Builder f{true, {}};
    auto record = [&](uint32_t bytes) { f.uint(bytes, 4); };
    record(256);
    for (int32_t c : {2, 3, 0, 0, 1, 0}) f.i32(c);
    for (double m : {0.0, 0.5, 0.0, 0.0, 0.0, 0.0}) f.f64(m);
    f.f64(0.25);                                        // time
    f.f64(0);                                           // redshift
    f.i32(0);                                           // flag_sfr
    f.i32(0);                                           // flag_feedback
    for (uint32_t c : {2, 3, 0, 0, 1, 0}) f.uint(c, 4); // npartTotal
    f.i32(0);                                           // flag_cooling
    f.i32(1);                                           // num_files
    while (f.bytes.size() < 4 + 256) f.bytes.push_back(0);
    record(256);
    for (int block = 0; block < 2; ++block) // POS, VEL
    {
        record(6 * 12);
        for (int i = 0; i < 6; ++i)
        {
            for (int k = 0; k < 3; ++k) f.f32(float(100 * block + 10 * i + k));
        }
        record(6 * 12);
    }
    record(6 * 4);
    for (uint32_t id : {60, 50, 40, 30, 20, 10}) f.uint(id, 4);
    record(6 * 4);
    record(3 * 4); // MASS: 2 gas, 1 star
    for (float m : {1.0f, 2.0f, 3.0f}) f.f32(m);
    record(3 * 4);
    record(2 * 4); // U, a gas-only block to ignore
    f.f32(7);
    f.f32(8);
    record(2 * 4);
    writeBytes(file("mixed"), f.bytes);

    EXPECT_EQ(detectFormat(file("mixed")), SnapshotFormat::Gadget2);
    const ParticleSet p = readSnapshot(file("mixed"));
    ASSERT_EQ(p.size(), 6);
    EXPECT_EQ(p.time, 0.25);
    EXPECT_EQ(p.mass, (std::vector<double>{1, 2, 0.5, 0.5, 0.5, 3}));
    EXPECT_EQ(p.id, (std::vector<uint64_t>{60, 50, 40, 30, 20, 10}));
    EXPECT_EQ(p.pos[5].y, 51.0);
    EXPECT_EQ(p.vel[1].z, 112.0);
}

TEST_F(SnapshotGadget, ReadsDoublePrecisionBlocks)
{
    // OUTPUT_IN_DOUBLEPRECISION: POS and VEL hold float64, told apart by the record size (24 N).
    Builder f{false, {}};
    f.uint(256, 4);
    for (int32_t c : {0, 2, 0, 0, 0, 0}) f.i32(c);
    for (double m : {0.0, 0.125, 0.0, 0.0, 0.0, 0.0}) f.f64(m);
    f.f64(0);                                           // time
    f.f64(0);                                           // redshift
    f.i32(0);                                           // flag_sfr
    f.i32(0);                                           // flag_feedback
    for (uint32_t c : {0, 2, 0, 0, 0, 0}) f.uint(c, 4); // npartTotal
    f.i32(0);                                           // flag_cooling
    f.i32(1);                                           // num_files
    while (f.bytes.size() < 4 + 256) f.bytes.push_back(0);
    f.uint(256, 4);
    for (double base : {1.0, 2.0})
    {
        f.uint(48, 4);
        for (int k = 0; k < 6; ++k) f.f64(base + 0.1 * k); // not representable in float32
        f.uint(48, 4);
    }
    f.uint(8, 4);
    f.uint(7, 4);
    f.uint(9, 4);
    f.uint(8, 4);
    writeBytes(file("double"), f.bytes);

    const ParticleSet p = readSnapshot(file("double"), SnapshotFormat::Gadget2);
    ASSERT_EQ(p.size(), 2);
    EXPECT_EQ(p.pos[1].z, 1.0 + 0.1 * 5);
    EXPECT_EQ(p.vel[0].y, 2.0 + 0.1 * 1);
    EXPECT_EQ(p.mass, (std::vector<double>{0.125, 0.125}));
    EXPECT_EQ(p.id, (std::vector<uint64_t>{7, 9}));
}

TEST_F(SnapshotGadget, DamagedFilesAreFormatErrors)
{
    const size_t n = 1000;
    writeSnapshot(file("good"), SnapshotFormat::Gadget2, sample());
    const Bytes good = readBytes(file("good"));
    auto damaged     = [&](size_t at, int32_t value) {
        Bytes b = good;
        setI32(b, at, value);
        writeBytes(file("bad"), b);
        return file("bad");
    };
    const std::string g = file("bad");
    expectReadFails(damaged(0, 255), SnapshotFormat::Gadget2, {"'HEAD record marker' at byte offset 0", "255"});
    expectReadFails(damaged(260, 255), SnapshotFormat::Gadget2, {"'HEAD record end marker' at byte offset 260"});
    const size_t posEnd = posMarkerAt + 4 + 12 * n;
    expectReadFails(damaged(posEnd, 12 * n + 4), SnapshotFormat::Gadget2,
                    {"'POS record end marker' at byte offset " + std::to_string(posEnd)});
    expectReadFails(damaged(8, -1), SnapshotFormat::Gadget2, {"'npart[1]' at byte offset 8", "-1"});
    expectReadFails(damaged(8, 2000000000), SnapshotFormat::Gadget2, {"'npart' at byte offset 4", "2000000000"});
    expectReadFails(damaged(8, int32_t(n) - 1), SnapshotFormat::Gadget2,
                    {"'POS record marker' at byte offset 264", "expected 11988"});
    expectReadFails(damaged(4 + 124, 2), SnapshotFormat::Gadget2, {"'num_files' at byte offset 128"});
    // num_files = 0, npartTotal disagreeing with npart, and bytes after the last record.
    expectReadFails(damaged(4 + 124, 0), SnapshotFormat::Gadget2, {"'num_files' at byte offset 128", "is 0"});
    expectReadFails(damaged(4 + 96 + 4, int32_t(n) + 1), SnapshotFormat::Gadget2,
                    {"'npartTotal[1]' at byte offset 104", "1001", "npart[1] is 1000"});
    Bytes trailing = good;
    for (unsigned char c : {'j', 'u', 'n', 'k', '!'}) trailing.push_back(c);
    writeBytes(file("bad"), trailing);
    expectReadFails(file("bad"), SnapshotFormat::Gadget2,
                    {"'end of file' at byte offset " + std::to_string(good.size()), "5 trailing bytes"});
}

TEST_F(SnapshotGadget, NonFiniteAndDuplicateValuesAreNamed)
{
    writeSnapshot(file("good"), SnapshotFormat::Gadget2, sample());
    const Bytes good = readBytes(file("good"));

    Bytes nan      = good;
    const size_t y = posMarkerAt + 4 + 17 * 12 + 4;
    setF32(nan, y, std::numeric_limits<float>::quiet_NaN());
    writeBytes(file("bad"), nan);
    expectReadFails(file("bad"), SnapshotFormat::Gadget2, {"'POS' at byte offset " + std::to_string(y), "particle 17"});

    Bytes twice = good;
    setUint(twice, idMarkerAt(1000) + 4 + 4 * 9, 8, 4, false);
    writeBytes(file("bad"), twice);
    expectReadFails(file("bad"), SnapshotFormat::Gadget2, {"'id'", "id 8 occurs twice"});
}

// ---- HDF5 --------------------------------------------------------------------------------------

TEST_F(SnapshotHdf5, WritesGadgetHeaderParametersAndUnits)
{
    SnapshotMeta meta;
    meta.parametersJson = "{\"opening_angle\": 0.375}";
    meta.version        = "octwalk 9.9.9";
    writeSnapshot(file("h"), SnapshotFormat::Hdf5, sample(), meta);
    const Bytes b = readBytes(file("h"));
    for (const char* name : {"Header",
                             "NumPart_ThisFile",
                             "NumPart_Total",
                             "NumPart_Total_HighWord",
                             "MassTable",
                             "Time",
                             "Redshift",
                             "BoxSize",
                             "NumFilesPerSnapshot",
                             "Omega0",
                             "OmegaLambda",
                             "HubbleParam",
                             "Flag_Entropy_ICs",
                             "PartType1",
                             "Coordinates",
                             "Velocities",
                             "Masses",
                             "ParticleIDs",
                             "Parameters",
                             "ParametersJson",
                             "{\"opening_angle\": 0.375}",
                             "octwalk 9.9.9",
                             "Units",
                             "UnitLength_in_cm",
                             "UnitMass_in_g",
                             "UnitVelocity_in_cm_per_s"})
    {
        EXPECT_LT(find(b, Bytes(name, name + std::strlen(name))), b.size()) << name << " is not in the file";
    }
}

TEST_F(SnapshotHdf5, DamagedFilesAreFormatErrors)
{
    const ParticleSet p = withIds(sample(), 1000000000000, 1);
    writeSnapshot(file("good"), SnapshotFormat::Hdf5, p);
    const Bytes good = readBytes(file("good"));

    Bytes signature = good;
    signature[1]    = 'X';
    writeBytes(file("bad"), signature);
    expectReadFails(file("bad"), SnapshotFormat::Hdf5, {"'HDF5 signature'"});

    // NumPart_ThisFile = {0, 1000, 0, ...}, the first such value after the attribute's name: the object
    // header is checksummed (HDF5 1.8 format), so the damage is found before the value is used.
    Bytes counts          = good;
    const char* name      = "NumPart_ThisFile";
    const uint32_t have[] = {0, 1000, 0, 0, 0, 0};
    const size_t at       = find(counts, littleEndianBytes(have, sizeof(have)), find(counts, Bytes(name, name + 16)));
    ASSERT_LT(at, counts.size());
    setI32(counts, at + 4, 1001);
    writeBytes(file("bad"), counts);
    expectReadFails(file("bad"), SnapshotFormat::Hdf5, {"'/Header/NumPart_ThisFile'", "checksum"});

    Bytes nan      = good;
    const size_t y = find(nan, littleEndianBytes(&p.pos[17].y, 8));
    ASSERT_LT(y, nan.size());
    const double bad = std::numeric_limits<double>::quiet_NaN();
    std::memcpy(&nan[y], &bad, 8);
    writeBytes(file("bad"), nan);
    expectReadFails(file("bad"), SnapshotFormat::Hdf5,
                    {"'/PartType1/Coordinates'", "particle 17", "byte offset " + std::to_string(y)});

    Bytes twice       = good;
    const size_t idAt = find(twice, littleEndianBytes(&p.id[9], 8));
    ASSERT_LT(idAt, twice.size());
    std::memcpy(&twice[idAt], &p.id[8], 8);
    writeBytes(file("bad"), twice);
    expectReadFails(file("bad"), SnapshotFormat::Hdf5, {"'id'", std::to_string(p.id[8]) + " occurs twice"});
}
