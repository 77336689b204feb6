// Cosmological snapshots and particle types: GADGET-2 files as N-GenIC writes them (format 1 and 2,
// built byte by byte here from the published header layout, FORMATS.md), their cosmological header and
// velocity convention u = v_pec / sqrt(a), byte-identical write-back, 64-bit ids, double precision,
// high words; HDF5 with a cosmological header and several PartTypes; TIPSY record kinds as types; types
// through a checkpoint, a restart and `convert`; and the bad inputs a cosmological reader must refuse.
#include <gtest/gtest.h>

#ifdef OCTWALK_HAVE_HDF5
#include <hdf5.h>
#endif

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "host/cli/cli.h"
#include "host/io/binary_io.h"
#include "host/io/checkpoint.h"
#include "test_helpers.h"
#include "host/io/snapshot.h"
#include "host/models/galaxy.h"
#include "host/models/models.h"
#include "host/sim/simulation.h"
#include "tests/app/cli_runner.h"

using namespace octwalk;
namespace fs = std::filesystem;

namespace {

using Bytes = std::vector<unsigned char>;

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

/// Appends values in one byte order, independently of the library's encoders.
struct Builder
{
    bool big = false;
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
    void text(const char* s, size_t n) { bytes.insert(bytes.end(), s, s + n); }
};

uint64_t getUint(const Bytes& b, size_t at, int size)
{
    uint64_t v = 0;
    for (int k = 0; k < size; ++k) v |= uint64_t(b.at(at + k)) << (8 * k);
    return v;
}

double getF64(const Bytes& b, size_t at)
{
    const uint64_t u = getUint(b, at, 8);
    double d;
    std::memcpy(&d, &u, 8);
    return d;
}

float getF32(const Bytes& b, size_t at)
{
    const uint32_t u = uint32_t(getUint(b, at, 4));
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

void setUint(Bytes& b, size_t at, uint64_t v, int size)
{
    for (int k = 0; k < size; ++k) b.at(at + k) = static_cast<unsigned char>(v >> (8 * k));
}

void setF64(Bytes& b, size_t at, double d)
{
    uint64_t u;
    std::memcpy(&u, &d, 8);
    setUint(b, at, u, 8);
}

void setF32(Bytes& b, size_t at, float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    setUint(b, at, u, 4);
}

/// What N-GenIC puts in an initial-conditions file: gas (type 0) and dark matter (type 1), each with
/// one mass in the MassTable, a U block of zeros for the gas, ids from 1, time = 1 / (1 + z).
struct NGenIc
{
    bool format2 = false, big = false, wideIds = false, doublePrecision = false;
    int gas = 8, halo = 27;
    double massGas = 0.0125, massHalo = 0.0625;
    double redshift = 49, box = 100.0, omega0 = 0.3, omegaLambda = 0.7, hubble = 0.7;
    uint64_t firstId = 1;

    int n() const { return gas + halo; }
    double a() const { return 1.0 / (1.0 + redshift); }
    /// Comoving positions inside [0, box): a grid with a small offset per body.
    double position(int i, int k) const { return std::fmod(box * (0.037 * i + 0.11 * k + 0.013), box); }
    /// The stored velocity u, in km/s-like magnitudes.
    double u(int i, int k) const { return 3.5 * (i - 17) + 11.25 * k + 0.3; }

    Bytes bytes() const
    {
        Builder f{big, {}};
        auto label = [&](const char* name, uint64_t payload) {
            if (!format2) return;
            f.uint(8, 4);
            f.text(name, 4);
            f.uint(payload + 8, 4);
            f.uint(8, 4);
        };
        auto record = [&](const char* name, uint64_t payload, auto body) {
            label(name, payload);
            f.uint(payload, 4);
            body();
            f.uint(payload, 4);
        };
        const int npart[6] = {gas, halo, 0, 0, 0, 0};
        record("HEAD", 256, [&] {
            for (int c : npart) f.i32(c);
            for (double m : {massGas, massHalo, 0.0, 0.0, 0.0, 0.0}) f.f64(m);
            f.f64(a());
            f.f64(redshift);
            f.i32(0); // flag_sfr
            f.i32(0); // flag_feedback
            for (int c : npart) f.uint(uint32_t(c), 4);
            f.i32(0); // flag_cooling
            f.i32(1); // num_files
            f.f64(box);
            f.f64(omega0);
            f.f64(omegaLambda);
            f.f64(hubble);
            f.i32(0);                                 // flag_stellarage
            f.i32(0);                                 // flag_metals
            for (int k = 0; k < 6; ++k) f.uint(0, 4); // npartTotalHighWord
            f.i32(0);                                 // flag_entropy_instead_u
            for (int k = 0; k < 60; ++k) f.bytes.push_back(0);
        });
        const int width = doublePrecision ? 8 : 4;
        auto real       = [&](double v) { doublePrecision ? f.f64(v) : f.f32(float(v)); };
        record("POS ", uint64_t(3 * width * n()), [&] {
            for (int i = 0; i < n(); ++i)
            {
                for (int k = 0; k < 3; ++k) real(position(i, k));
            }
        });
        record("VEL ", uint64_t(3 * width * n()), [&] {
            for (int i = 0; i < n(); ++i)
            {
                for (int k = 0; k < 3; ++k) real(u(i, k));
            }
        });
        record("ID  ", uint64_t((wideIds ? 8 : 4) * n()), [&] {
            for (int i = 0; i < n(); ++i) f.uint(firstId + uint64_t(i), wideIds ? 8 : 4);
        });
        if (gas > 0)
        {
            record("U   ", uint64_t(4 * gas), [&] {
                for (int i = 0; i < gas; ++i) f.f32(0.0f);
            });
        }
        return f.bytes;
    }

    /// The stored value as a reader sees it (float32 unless double precision).
    double stored(double v) const { return doublePrecision ? v : double(float(v)); }
};

/// Where the 256 header bytes start.
size_t headerAt(bool format2) { return format2 ? 20 : 4; }

class SnapshotCosmo : public ::testing::Test
{
protected:
    void SetUp() override
    {
        static std::atomic<int> counter{0};
        const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
        dir_             = fs::temp_directory_path() / ("octwalk_cosmo_" + std::to_string(::getpid()) + "_" +
                                            std::to_string(counter++) + "_" + std::to_string(ticks));
        fs::create_directories(dir_);
    }
    void TearDown() override
    {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

    std::string file(const std::string& name) const { return (dir_ / name).string(); }

    /// The message of the exception E that `call` throws; a test failure when it throws none.
    template<class E = FormatError, class F>
    std::string errorOf(F call)
    {
        try
        {
            call();
        }
        catch (const E& e)
        {
            return e.what();
        }
        ADD_FAILURE() << "no exception";
        return {};
    }

    /// Reading `bytes` must fail with every fragment in the message.
    void expectRefused(const Bytes& bytes, std::initializer_list<std::string> fragments)
    {
        writeBytes(file("bad"), bytes);
        const std::string message = errorOf([&] { readSnapshot(file("bad")); });
        for (const std::string& s : fragments) EXPECT_NE(message.find(s), std::string::npos) << message;
    }

    /// Everything a reader must recover from an N-GenIC file.
    void expectNGenIcContents(const NGenIc& g, const ParticleSet& p)
    {
        ASSERT_EQ(p.size(), g.n());
        EXPECT_EQ(p.time, g.a());
        EXPECT_EQ(p.boxSize, g.box);
        ASSERT_TRUE(p.cosmology.has_value());
        EXPECT_EQ(p.cosmology->omega0, g.omega0);
        EXPECT_EQ(p.cosmology->omegaLambda, g.omegaLambda);
        EXPECT_EQ(p.cosmology->hubbleParam, g.hubble);
        const double sqrtA = std::sqrt(g.a());
        for (int i = 0; i < g.n(); ++i)
        {
            const bool gas = i < g.gas;
            ASSERT_EQ(p.type[i], gas ? 0 : 1) << i;
            ASSERT_EQ(p.mass[i], gas ? g.massGas : g.massHalo) << i;
            ASSERT_EQ(p.id[i], g.firstId + uint64_t(i));
            const Vec3d x = p.pos[i], v = p.vel[i];
            ASSERT_EQ(x.x, g.stored(g.position(i, 0))) << i;
            ASSERT_EQ(x.z, g.stored(g.position(i, 2))) << i;
            // v_pec = u sqrt(a): the file's u, not the peculiar velocity.
            ASSERT_EQ(v.x, g.stored(g.u(i, 0)) * sqrtA) << i;
            ASSERT_EQ(v.y, g.stored(g.u(i, 1)) * sqrtA) << i;
        }
    }

    fs::path dir_;
};

ParticleSet cosmologicalSet(int64_t n = 64)
{
    ParticleSet p;
    p.resize(n);
    p.time      = 0.25;
    p.boxSize   = 50.0;
    p.cosmology = Cosmology{0.31, 0.69, 0.68};
    for (int64_t i = 0; i < n; ++i)
    {
        p.pos[i]  = {std::fmod(0.77 * double(i), 50.0), std::fmod(1.3 * double(i) + 0.2, 50.0), 49.5};
        p.vel[i]  = {100.0 + double(i), -3.0 * double(i), 0.5};
        p.id[i]   = uint64_t(1000 + 3 * i);
        p.type[i] = uint8_t(i % 6);
        p.mass[i] = 0.5 + (p.type[i] == 2 ? 0.001 * double(i) : 0.0); // type 2 has several masses
    }
    return p;
}

} // namespace

// ---- GADGET-2 as N-GenIC writes it -------------------------------------------------------------

TEST_F(SnapshotCosmo, NGenIcFormat1ReadsAndWritesBackByteIdentically)
{
    const NGenIc g;
    const Bytes original = g.bytes();
    writeBytes(file("ics"), original);
    EXPECT_EQ(detectFormat(file("ics")), SnapshotFormat::Gadget2);
    const ParticleSet p = readSnapshot(file("ics"));
    expectNGenIcContents(g, p);
    writeSnapshot(file("again"), SnapshotFormat::Gadget2, p);
    EXPECT_TRUE(readBytes(file("again")) == original) << "the write-back differs from N-GenIC's bytes";
}

TEST_F(SnapshotCosmo, NGenIcFormat2ReadsAndWritesBackByteIdentically)
{
    NGenIc g;
    g.format2            = true;
    const Bytes original = g.bytes();
    writeBytes(file("ics"), original);
    EXPECT_EQ(detectFormat(file("ics")), SnapshotFormat::Gadget2Format2);
    const ParticleSet p = readSnapshot(file("ics"));
    expectNGenIcContents(g, p);
    writeSnapshot(file("again"), SnapshotFormat::Gadget2Format2, p);
    EXPECT_TRUE(readBytes(file("again")) == original) << "the write-back differs from the format 2 bytes";
    // Either format reads through either name.
    expectNGenIcContents(g, readSnapshot(file("ics"), SnapshotFormat::Gadget2));

    g.big = true;
    writeBytes(file("big"), g.bytes());
    EXPECT_EQ(detectFormat(file("big")), SnapshotFormat::Gadget2Format2);
    expectNGenIcContents(g, readSnapshot(file("big")));
}

TEST_F(SnapshotCosmo, WideIdsAndDoublePrecisionAreToldByTheRecordSize)
{
    NGenIc wide;
    wide.wideIds         = true;
    wide.firstId         = (uint64_t(1) << 32) + 5;
    const Bytes original = wide.bytes();
    writeBytes(file("wide"), original);
    const ParticleSet p = readSnapshot(file("wide"));
    expectNGenIcContents(wide, p);
    writeSnapshot(file("again"), SnapshotFormat::Gadget2, p);
    EXPECT_TRUE(readBytes(file("again")) == original);

    NGenIc precise;
    precise.doublePrecision = true;
    precise.format2         = true;
    writeBytes(file("double"), precise.bytes());
    const ParticleSet d = readSnapshot(file("double"));
    expectNGenIcContents(precise, d);
    EXPECT_NE(d.pos[3].y, double(float(d.pos[3].y))) << "a double-precision position was narrowed";
}

TEST_F(SnapshotCosmo, HighWordsJoinTheTotals)
{
    EXPECT_EQ(io::splitCount((uint64_t(3) << 32) + 7).low, 7u);
    EXPECT_EQ(io::splitCount((uint64_t(3) << 32) + 7).high, 3u);
    EXPECT_EQ(io::joinCount(7, 3), (uint64_t(3) << 32) + 7);

    // A single file must hold every body: npartTotal[1]'s low word == npart[1].
    Bytes b = NGenIc{}.bytes();
    setUint(b, 4 + 96 + 4, 28, 4);
    expectRefused(b, {"'npartTotal[1]'", "is 28", "npart[1] is 27"});
}

// GADGET-4 (GADGET2_HEADER, SnapFormat 1) writes the header up to HubbleParam and leaves the rest
// uninitialised: flag_metals, npartTotalHighWord and the padding hold whatever was in memory. A single-file
// snapshot whose low words equal npart is read, with a notice naming the ignored high words.
TEST_F(SnapshotCosmo, Gadget4HeaderWithAnUninitialisedTailIsReadWithANotice)
{
    const NGenIc g;
    Bytes b        = g.bytes();
    uint64_t state = 0x9e3779b97f4a7c15ull;
    for (size_t at = 160; at < 256; ++at)
    {
        state        = state * 6364136223846793005ull + 1442695040888963407ull;
        b.at(4 + at) = static_cast<unsigned char>(state >> 56);
    }
    setUint(b, 4 + 168, 2186737607u, 4); // the high word of the file that was refused as 9391966506998300672
    writeBytes(file("gadget4"), b);
    std::vector<std::string> notices;
    SnapshotReadOptions options;
    options.notice      = [&](const std::string& text) { notices.push_back(text); };
    const ParticleSet p = readSnapshot(file("gadget4"), options);
    expectNGenIcContents(g, p);
    ASSERT_EQ(notices.size(), 1u);
    EXPECT_NE(notices[0].find("npartTotalHighWord = {2186737607, "), std::string::npos) << notices[0];
    EXPECT_NE(notices[0].find("ignored"), std::string::npos) << notices[0];
    EXPECT_EQ(notices[0].find('\n'), std::string::npos) << notices[0];

    // An N-GenIC file with zero high words reads without a notice.
    writeBytes(file("ngenic"), g.bytes());
    readSnapshot(file("ngenic"), options);
    EXPECT_EQ(notices.size(), 1u);
}

TEST_F(SnapshotCosmo, CosmologicalSetsAreWrittenWithTheirHeaderAndUOfSqrtA)
{
    const ParticleSet p = cosmologicalSet();
    for (SnapshotFormat f : {SnapshotFormat::Gadget2, SnapshotFormat::Gadget2Format2})
    {
        const std::string path = file(toString(f));
        writeSnapshot(path, f, p);
        const Bytes b    = readBytes(path);
        const size_t h   = headerAt(f == SnapshotFormat::Gadget2Format2);
        const double a   = p.time;
        const int counts = int(p.size()) / 6 + 1;
        EXPECT_EQ(getUint(b, h + 0, 4), uint64_t(counts)) << "npart[0]";
        EXPECT_EQ(getUint(b, h + 96 + 4 * 5, 4), uint64_t(p.size() / 6)) << "npartTotal[5]";
        EXPECT_EQ(getF64(b, h + 24 + 8 * 1), 0.5) << "MassTable[1]: one mass";
        EXPECT_EQ(getF64(b, h + 24 + 8 * 2), 0.0) << "MassTable[2]: several masses, in the MASS block";
        EXPECT_EQ(getF64(b, h + 72), a);
        EXPECT_EQ(getF64(b, h + 80), 1.0 / a - 1.0) << "redshift";
        EXPECT_EQ(getF64(b, h + 128), 50.0);
        EXPECT_EQ(getF64(b, h + 136), 0.31);
        EXPECT_EQ(getF64(b, h + 144), 0.69);
        EXPECT_EQ(getF64(b, h + 152), 0.68);
        // The first body in the file is the first gas body (type 0, id 1000): its stored velocity is u.
        const size_t posAt = h + 256 + 4 + (f == SnapshotFormat::Gadget2Format2 ? 16 : 0) + 4;
        const size_t velAt = posAt + 12 * size_t(p.size()) + 4 + (f == SnapshotFormat::Gadget2Format2 ? 16 : 0) + 4;
        EXPECT_EQ(getF32(b, velAt), float(100.0 / std::sqrt(a)));

        const ParticleSet q = readSnapshot(path);
        ASSERT_EQ(q.size(), p.size());
        EXPECT_EQ(q.boxSize, p.boxSize);
        ASSERT_TRUE(q.cosmology.has_value());
        EXPECT_EQ(q.cosmology->omega0, 0.31);
        for (int64_t i = 0; i < q.size(); ++i)
        {
            const int64_t j = int64_t(q.id[i] - 1000) / 3; // the body of p with this id
            ASSERT_EQ(q.type[i], p.type[j]);
            ASSERT_NEAR(q.vel[i].x, p.vel[j].x, 1e-6 * std::abs(p.vel[j].x));
            ASSERT_EQ(float(q.mass[i]), float(p.mass[j]));
        }
    }
}

TEST_F(SnapshotCosmo, TheCosmologicalReadingCanBeForced)
{
    const NGenIc g;
    writeBytes(file("ics"), g.bytes());
    SnapshotReadOptions isolated;
    isolated.cosmology  = CosmologyReading::Isolated;
    const ParticleSet p = readSnapshot(file("ics"), isolated);
    EXPECT_FALSE(p.cosmology.has_value());
    EXPECT_EQ(p.boxSize, g.box) << "the box is honoured either way";
    EXPECT_EQ(p.vel[3].x, double(float(g.u(3, 0)))) << "velocities as stored";

    // Omega0 = 0 with a box: a periodic, non-cosmological file, unless forced.
    Bytes b = g.bytes();
    setF64(b, 4 + 136, 0.0);
    writeBytes(file("flat"), b);
    EXPECT_FALSE(readSnapshot(file("flat")).cosmology.has_value());
    SnapshotReadOptions forced;
    forced.cosmology = CosmologyReading::Cosmological;
    setF64(b, 4 + 136, 1.0);
    setF64(b, 4 + 144, 0.0);
    setF64(b, 4 + 128, 0.0); // no box: Auto would read it as isolated
    writeBytes(file("eds"), b);
    EXPECT_FALSE(readSnapshot(file("eds")).cosmology.has_value());
    const ParticleSet eds = readSnapshot(file("eds"), forced);
    ASSERT_TRUE(eds.cosmology.has_value());
    EXPECT_EQ(eds.cosmology->omega0, 1.0);
    EXPECT_EQ(parseCosmologyReading("isolated"), CosmologyReading::Isolated);
    EXPECT_THROW(parseCosmologyReading("yes"), ParameterError);
}

// ---- bad input ---------------------------------------------------------------------------------

TEST_F(SnapshotCosmo, BodiesOutsideTheBoxAreNamed)
{
    const NGenIc g;
    Bytes b            = g.bytes();
    const size_t posAt = 4 + 256 + 4 + 4;
    setF32(b, posAt + 12 * 5 + 4, 100.0f); // body 5, y = BoxSize
    expectRefused(b, {"particle 5", "id 6", "y = 100", "outside the periodic box [0, BoxSize = 100)"});
    b = g.bytes();
    setF32(b, posAt + 12 * 9, -0.5f);
    expectRefused(b, {"particle 9", "x = -0.5"});
}

TEST_F(SnapshotCosmo, DamagedCosmologicalHeadersAreRefused)
{
    const NGenIc g;
    const Bytes good = g.bytes();
    auto with        = [&](size_t at, double v) {
        Bytes b = good;
        setF64(b, 4 + at, v);
        return b;
    };
    expectRefused(with(128, std::nan("")), {"'BoxSize' at byte offset 132", "not finite"});
    expectRefused(with(128, -1.0), {"'BoxSize'", "-1"});
    expectRefused(with(136, HUGE_VAL), {"'Omega0' at byte offset 140", "inf"});
    expectRefused(with(144, std::nan("")), {"'OmegaLambda' at byte offset 148"});
    expectRefused(with(152, -HUGE_VAL), {"'HubbleParam' at byte offset 156"});
    expectRefused(with(72, 0.0), {"'Time' at byte offset 76", "scale factor a = 0"});
    expectRefused(with(144, -5.0), {"'Omega0'", "cosmology of the file is invalid", "OmegaLambda"});

    // A huge a turns a float64 u into an infinite peculiar velocity.
    NGenIc precise;
    precise.doublePrecision = true;
    Bytes huge              = precise.bytes();
    setF64(huge, 4 + 72, 1e300);
    const size_t velAt = 4 + 256 + 4 + 4 + 24 * size_t(precise.n()) + 4 + 4;
    setF64(huge, velAt, 1e300);
    expectRefused(huge, {"particle 0 (id 1)", "sqrt(a)", "not finite"});
}

TEST_F(SnapshotCosmo, DamagedFormat2LabelsAndTruncatedBlocksAreRefused)
{
    NGenIc g;
    g.format2        = true;
    const Bytes good = g.bytes();
    const size_t vel = 20 + 256 + 4 + 16 + 4 + 12 * 35 + 4; // the VEL label record
    Bytes renamed    = good;
    std::memcpy(&renamed[vel + 4], "MASS", 4);
    expectRefused(renamed, {"'VEL label' at byte offset " + std::to_string(vel + 4), "\"MASS\"", "\"VEL \""});

    Bytes resized = good;
    setUint(resized, vel + 8, 12 * 35, 4);
    expectRefused(resized, {"'VEL label block size'", "428"});

    Bytes truncated(good.begin(), good.begin() + std::ptrdiff_t(vel + 16 + 100));
    expectRefused(truncated, {"'npart'", "need at least"});
    NGenIc one          = g;
    one.gas             = 0;
    one.halo            = 1;
    one.doublePrecision = true; // so that the cut file still passes the size check of the header's counts
    Bytes cut           = one.bytes();
    cut.resize(cut.size() - 6); // inside the ID record
    expectRefused(cut, {"'ID"});
}

TEST_F(SnapshotCosmo, WritersRefuseWhatTheirReadersWould)
{
    ParticleSet p = cosmologicalSet();
    p.pos[7].z    = 50.0;
    std::string m = errorOf<InputError>([&] { writeSnapshot(file("out"), SnapshotFormat::Gadget2, p); });
    EXPECT_NE(m.find("particle 7 (id 1021)"), std::string::npos) << m;
    EXPECT_NE(m.find("outside the periodic box"), std::string::npos) << m;

    p          = cosmologicalSet();
    p.boxSize  = 0.0;
    p.pos[0].z = 1e6;
    m          = errorOf([&] { writeSnapshot(file("out"), SnapshotFormat::Gadget2, p); });
    EXPECT_NE(m.find("cannot be written to GADGET-2"), std::string::npos) << m;

    p         = cosmologicalSet();
    p.type[3] = 6;
    m         = errorOf<InputError>([&] { writeSnapshot(file("out"), SnapshotFormat::Hdf5, p); });
    EXPECT_NE(m.find("type 6"), std::string::npos) << m;

    p      = cosmologicalSet();
    p.time = 0.0;
    m      = errorOf<InputError>([&] { writeSnapshot(file("out"), SnapshotFormat::Gadget2, p); });
    EXPECT_NE(m.find("scale factor a"), std::string::npos) << m;
    EXPECT_FALSE(fs::exists(file("out")));
}

TEST_F(SnapshotCosmo, Float32CoordinatesStayInsideTheBox)
{
    ParticleSet p = cosmologicalSet(6);
    p.pos[2].x    = std::nextafter(50.0, 0.0); // float32 would round it up to BoxSize
    writeSnapshot(file("edge"), SnapshotFormat::Gadget2, p);
    const ParticleSet q = readSnapshot(file("edge"));
    EXPECT_EQ(q.pos[2].x, double(std::nextafter(50.0f, 0.0f)));
}

// ---- HDF5 --------------------------------------------------------------------------------------

TEST_F(SnapshotCosmo, Hdf5KeepsTypesBoxAndCosmology)
{
    const ParticleSet p = cosmologicalSet();
    try
    {
        writeSnapshot(file("c.hdf5"), SnapshotFormat::Hdf5, p);
    }
    catch (const FormatError& e)
    {
        if (std::string(e.what()).find("without HDF5") != std::string::npos) GTEST_SKIP() << "built without HDF5";
        throw;
    }
    const Bytes b = readBytes(file("c.hdf5"));
    for (const char* name : {"PartType0", "PartType2", "PartType5", "Flag_DoublePrecision", "Flag_Sfr"})
    {
        EXPECT_NE(std::search(b.begin(), b.end(), name, name + std::strlen(name)), b.end()) << name;
    }
    const ParticleSet q = readSnapshot(file("c.hdf5"));
    ASSERT_EQ(q.size(), p.size());
    EXPECT_EQ(q.time, p.time);
    EXPECT_EQ(q.boxSize, p.boxSize);
    ASSERT_TRUE(q.cosmology.has_value());
    EXPECT_EQ(q.cosmology->hubbleParam, 0.68);
    for (int64_t i = 0; i < q.size(); ++i)
    {
        const int64_t j = int64_t(q.id[i] - 1000) / 3;
        ASSERT_EQ(q.type[i], p.type[j]);
        ASSERT_EQ(q.pos[i].y, p.pos[j].y) << "float64 positions are kept";
        ASSERT_NEAR(q.vel[i].y, p.vel[j].y, 1e-14 * std::abs(p.vel[j].y) + 1e-300);
        ASSERT_EQ(q.mass[i], p.mass[j]) << "from the MassTable or the Masses dataset";
        if (i > 0) ASSERT_LE(q.type[i - 1], q.type[i]) << "PartType0 .. PartType5 in order";
    }

    // An isolated set of several types writes the same bytes again after a read.
    ParticleSet iso = cosmologicalSet();
    iso.cosmology.reset();
    iso.boxSize = 0.0;
    writeSnapshot(file("i.hdf5"), SnapshotFormat::Hdf5, iso);
    writeSnapshot(file("i2.hdf5"), SnapshotFormat::Hdf5, readSnapshot(file("i.hdf5")));
    EXPECT_TRUE(readBytes(file("i.hdf5")) == readBytes(file("i2.hdf5")));
}

// ---- TIPSY -------------------------------------------------------------------------------------

#ifdef OCTWALK_HAVE_HDF5
namespace {

/// Writes a scalar or vector attribute of doubles (or int32 when asInt) through the HDF5 C API.
void putAttribute(hid_t where, const char* name, const std::vector<double>& values, bool asInt = false)
{
    const hsize_t n = values.size();
    hid_t space     = n == 1 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, &n, nullptr);
    if (asInt)
    {
        std::vector<int32_t> ints(values.begin(), values.end());
        hid_t a = H5Acreate2(where, name, H5T_STD_I32LE, space, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_INT32, ints.data());
        H5Aclose(a);
    }
    else
    {
        hid_t a = H5Acreate2(where, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, H5T_NATIVE_DOUBLE, values.data());
        H5Aclose(a);
    }
    H5Sclose(space);
}

void putDataset(hid_t group, const char* name, hid_t fileType, hid_t memType, hsize_t rows, hsize_t columns,
                const void* data)
{
    const hsize_t dims[2] = {rows, columns};
    hid_t space           = H5Screate_simple(columns == 1 ? 1 : 2, dims, nullptr);
    hid_t set             = H5Dcreate2(group, name, fileType, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(set, memType, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Dclose(set);
    H5Sclose(space);
}

/// A snapshot as GADGET-4 writes it: /Header with the counts, MassTable, Time, Redshift and BoxSize only;
/// Omega0, OmegaLambda, HubbleParam and ComovingIntegrationOn in /Parameters; float velocities u = v / sqrt(a).
void writeGadget4Hdf5(const std::string& path, double a, bool comoving, const std::vector<double>& pos,
                      const std::vector<double>& u)
{
    const uint64_t n = pos.size() / 3;
    hid_t file       = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t header     = H5Gcreate2(file, "Header", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const std::vector<double> counts{0, double(n), 0, 0, 0, 0};
    putAttribute(header, "NumPart_ThisFile", counts, true);
    putAttribute(header, "NumPart_Total", counts, true);
    putAttribute(header, "NumPart_Total_HighWord", {0, 0, 0, 0, 0, 0}, true);
    putAttribute(header, "MassTable", {0, 0.75, 0, 0, 0, 0});
    putAttribute(header, "Time", {a});
    putAttribute(header, "Redshift", {1 / a - 1});
    putAttribute(header, "BoxSize", {50});
    putAttribute(header, "NumFilesPerSnapshot", {1}, true);
    H5Gclose(header);
    hid_t parameters = H5Gcreate2(file, "Parameters", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    putAttribute(parameters, "Omega0", {0.308});
    putAttribute(parameters, "OmegaLambda", {0.692});
    putAttribute(parameters, "OmegaBaryon", {0.048});
    putAttribute(parameters, "HubbleParam", {0.678});
    putAttribute(parameters, "ComovingIntegrationOn", {comoving ? 1.0 : 0.0}, true);
    H5Gclose(parameters);
    hid_t type = H5Gcreate2(file, "PartType1", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    std::vector<uint32_t> ids(n);
    for (uint64_t i = 0; i < n; ++i) ids[i] = uint32_t(i + 1);
    const std::vector<float> velocities(u.begin(), u.end());
    putDataset(type, "Coordinates", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, n, 3, pos.data());
    putDataset(type, "Velocities", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, n, 3, velocities.data());
    putDataset(type, "ParticleIDs", H5T_STD_U32LE, H5T_NATIVE_UINT32, n, 1, ids.data());
    H5Gclose(type);
    H5Fclose(file);
}

} // namespace

// GADGET-4 keeps the cosmology in /Parameters: read there, the file is cosmological (Time is a, velocities
// u sqrt(a)); it was read as isolated (Omega0 = 0, h = 1, velocities u taken as peculiar ones).
TEST_F(SnapshotCosmo, Gadget4Hdf5CosmologyIsReadFromParameters)
{
    const double a = 0.25;
    std::vector<double> pos, u;
    for (int i = 0; i < 8; ++i)
    {
        for (int k = 0; k < 3; ++k)
        {
            pos.push_back(std::fmod(6.1 * i + 1.7 * k + 0.5, 50.0));
            u.push_back(10.0 * i - 3.0 * k + 0.5);
        }
    }
    writeGadget4Hdf5(file("g4.hdf5"), a, true, pos, u);
    std::vector<std::string> notices;
    SnapshotReadOptions options;
    options.notice      = [&](const std::string& text) { notices.push_back(text); };
    const ParticleSet p = readSnapshot(file("g4.hdf5"), options);
    ASSERT_TRUE(p.cosmology.has_value());
    EXPECT_EQ(p.cosmology->omega0, 0.308);
    EXPECT_EQ(p.cosmology->omegaLambda, 0.692);
    EXPECT_EQ(p.cosmology->hubbleParam, 0.678);
    EXPECT_EQ(p.time, a);
    EXPECT_EQ(p.boxSize, 50.0);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(p.vel[i].x, double(float(u[3 * i])) * std::sqrt(a)) << i;
    ASSERT_EQ(notices.size(), 1u);
    EXPECT_NE(notices[0].find("read from /Parameters"), std::string::npos) << notices[0];

    // convert --read-cosmology cosmological refused it ("Omega0 = 0"); a plain convert wrote Omega0 = 0, h = 1.
    const std::string in = file("g4.hdf5"), out = file("g4.gadget");
    std::vector<const char*> args{"octwalk",  "convert", in.c_str(),         out.c_str(),
                                  "--format", "gadget2", "--read-cosmology", "cosmological"};
    std::ostringstream cout, cerr;
    ASSERT_EQ(runCli(int(args.size()), args.data(), cout, cerr), 0) << cerr.str();
    const ParticleSet back = readSnapshot(out);
    ASSERT_TRUE(back.cosmology.has_value());
    EXPECT_EQ(back.cosmology->omega0, 0.308);
    EXPECT_EQ(back.time, a);

    // A GADGET-4 run without comoving integration is not cosmological, whatever its Omega0.
    writeGadget4Hdf5(file("newton.hdf5"), 2.5, false, pos, u);
    const ParticleSet newton = readSnapshot(file("newton.hdf5"), options);
    EXPECT_FALSE(newton.cosmology.has_value());
    EXPECT_EQ(newton.vel[1].x, double(float(u[3])));
}
#endif

TEST_F(SnapshotCosmo, TipsyRecordKindsAreTypes)
{
    ParticleSet p = cosmologicalSet(60);
    p.cosmology.reset();
    p.boxSize = 0.0;
    for (SnapshotFormat f : {SnapshotFormat::TipsyStandard, SnapshotFormat::TipsyNative, SnapshotFormat::TipsyBonsai})
    {
        const std::string path = file(toString(f));
        writeSnapshot(path, f, p);
        const Bytes b   = readBytes(path);
        const bool big  = f == SnapshotFormat::TipsyStandard;
        auto headerWord = [&](size_t at) {
            uint32_t v = 0;
            for (int k = 0; k < 4; ++k) v |= uint32_t(b[at + size_t(k)]) << (8 * (big ? 3 - k : k));
            return v;
        };
        EXPECT_EQ(headerWord(16), 10u) << "nsph: type 0";
        EXPECT_EQ(headerWord(20), 40u) << "ndark: types 1, 2, 3, 5";
        EXPECT_EQ(headerWord(24), 10u) << "nstar: type 4";
        EXPECT_EQ(b.size(), 32u + 10 * 48 + 40 * 36 + 10 * 44);
        const ParticleSet q = readSnapshot(path, f);
        for (int64_t i = 0; i < q.size(); ++i)
        {
            const uint8_t expected = i < 10 ? 0 : i < 50 ? 1 : 4;
            ASSERT_EQ(q.type[i], expected) << toString(f) << " body " << i;
        }
        if (f == SnapshotFormat::TipsyBonsai)
        {
            // Dark and star records keep their ids (gas records have no room for one).
            for (int64_t i = 10; i < q.size(); ++i)
            {
                ASSERT_EQ((q.id[i] - 1000) % 3, 0u) << "body " << i << " id " << q.id[i];
                const int64_t j = int64_t(q.id[i] - 1000) / 3;
                ASSERT_EQ(q.type[i] == 4, p.type[j] == 4) << "body " << i << " id " << q.id[i];
            }
        }
    }
}

// ---- types through models, checkpoints, restarts and convert -----------------------------------

TEST_F(SnapshotCosmo, GalaxyComponentsAreTypesThroughCheckpointAndRestart)
{
    const ParticleSet g = makeGalaxy(600, 3);
    int64_t counts[6]   = {};
    for (uint8_t t : g.type) ++counts[t];
    EXPECT_EQ(counts[kBulgeType], 100);
    EXPECT_EQ(counts[kDiskType], 100);
    EXPECT_EQ(counts[kHaloType], 400);
    EXPECT_EQ(g.type[0], kBulgeType);
    EXPECT_EQ(g.type[150], kDiskType);
    EXPECT_EQ(g.type[599], kHaloType);

    Parameters params;
    params.epsilon_squared = 1e-4;
    // The classic step, whose checkpoint has no pipeline field.
    Simulation sim(g, params, planSteps(0.0, 2.0 / 128, 1.0 / 128), ForceOptions{false, false, 1});
    sim.step();
    sim.writeCheckpoint(file("ckpt"));
    const Bytes v8 = readBytes(file("ckpt"));
    ASSERT_EQ(std::string(v8.begin(), v8.begin() + 15), "OCTWALK-CKPT-v8");
    Simulation resumed = Simulation::fromCheckpoint(file("ckpt"));
    EXPECT_EQ(resumed.state().type, g.type);
    resumed.step();
    writeSnapshot(file("end.gadget"), SnapshotFormat::Gadget2, resumed.state());
    const ParticleSet end = readSnapshot(file("end.gadget"));
    for (int64_t i = 0; i < end.size(); ++i) ASSERT_EQ(end.type[i], g.type[end.id[i]]) << "id " << end.id[i];

    // Version 2 (no types) still reads: the bodies are type 1. It is version 3 (the image as the builds before
    // version 8 wrote it) less the types, with its own magic and checksum (FNV-1a).
    writeCheckpoint(file("v3"), readCheckpoint(file("ckpt")), CheckpointVersion::Previous);
    const Bytes v3 = readBytes(file("v3"));
    ASSERT_EQ(std::string(v3.begin(), v3.begin() + 15), "OCTWALK-CKPT-v3");
    const size_t n = 600, typesAt = v3.size() - 8 - (8 + 0) - n; // no settings text: its length is 8 bytes
    Bytes v2(v3.begin(), v3.begin() + std::ptrdiff_t(typesAt));
    v2.insert(v2.end(), v3.begin() + std::ptrdiff_t(typesAt + n), v3.end() - 8);
    v2[14]     = '2';
    uint64_t h = test::checkpointChecksum(v2.data(), v2.size());
    for (int k = 0; k < 8; ++k) v2.push_back(static_cast<unsigned char>(h >> (8 * k)));
    writeBytes(file("v2"), v2);
    const CheckpointImage old = readCheckpoint(file("v2"));
    EXPECT_EQ(old.state.type, std::vector<uint8_t>(n, 1));
    EXPECT_EQ(old.state.id, readCheckpoint(file("ckpt")).state.id);

    Bytes badType        = v3;
    badType[typesAt + 4] = 9;
    h                    = test::checkpointChecksum(badType.data(), badType.size() - 8);
    for (int k = 0; k < 8; ++k) badType[badType.size() - 8 + size_t(k)] = static_cast<unsigned char>(h >> (8 * k));
    writeBytes(file("bad"), badType);
    const std::string m = errorOf([&] { readCheckpoint(file("bad")); });
    EXPECT_NE(m.find("'types' at byte offset " + std::to_string(typesAt + 4)), std::string::npos) << m;
    EXPECT_NE(m.find("body 4 has type 9"), std::string::npos) << m;
}

TEST_F(SnapshotCosmo, ConvertKeepsAndSelectsTypes)
{
    const ParticleSet g = makeGalaxy(600, 5);
    writeSnapshot(file("g.gadget"), SnapshotFormat::Gadget2Format2, g);
    auto cli = [](std::vector<const char*> args) {
        const octwalk::test::CliResult r = octwalk::test::runOctwalk(std::move(args));
        return std::make_pair(r.code, r.out + r.err);
    };
    const std::string in = file("g.gadget"), all = file("all.tipsy"), disk = file("disk.gadget");
    const auto tipsy = cli({"convert", in.c_str(), all.c_str(), "--format", "tipsy-bonsai"});
    EXPECT_EQ(tipsy.first, 0);
    EXPECT_NE(tipsy.second.find("types 2, 3 and 5 were written as dark"), std::string::npos) << tipsy.second;
    EXPECT_EQ(cli({"convert", in.c_str(), disk.c_str(), "--format", "gadget2", "--type", "2"}).first, 0);
    const ParticleSet d = readSnapshot(disk);
    ASSERT_EQ(d.size(), 100);
    for (int64_t i = 0; i < d.size(); ++i) ASSERT_EQ(d.type[i], kDiskType);
    for (int64_t i = 0; i < d.size(); ++i) ASSERT_EQ(d.id[i], uint64_t(100 + i)) << "the disk bodies, by id";

    const std::string both = file("both.gadget");
    const auto r           = cli({"convert", in.c_str(), both.c_str(), "--format", "gadget2", "--type", "3,1"});
    EXPECT_EQ(r.first, 0) << r.second;
    EXPECT_EQ(readSnapshot(both).size(), 500);
    EXPECT_EQ(cli({"convert", in.c_str(), file("x").c_str(), "--type", "7"}).first, 2);
    EXPECT_EQ(cli({"convert", in.c_str(), file("y").c_str(), "--read-cosmology", "maybe"}).first, 2);
    EXPECT_FALSE(fs::exists(file("x")));
}
