// octwalk power and ic cosmo: a known plane wave lands in its bin with its amplitude, a lattice has
// no power below its own frequency, assignment schemes agree, and the CLI writes and refuses what it should.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "host/cli/cli.h"
#include "host/io/snapshot.h"
#include "host/models/cosmo_ics.h"
#include "host/study/power_spectrum.h"
#include "tests/app/cli_runner.h"

using octwalk::test::CliResult;
using octwalk::test::runOctwalk;

using namespace octwalk;

namespace {

/// A lattice of nx * n * n unit-mass bodies in a box of side `box` (n per side in y and z, nx along x),
/// displaced along x by amplitude sin(m kF q_x).
ParticleSet planeWave(int nx, int n, double box, int m, double amplitude)
{
    ParticleSet s;
    s.resize(int64_t(nx) * n * n);
    const double hx = box / nx, h = box / n, k = 2 * M_PI * m / box;
    for (int64_t i = 0; i < s.size(); ++i)
    {
        const double qx = double(i / (n * n)) * hx, qy = double((i / n) % n) * h, qz = double(i % n) * h;
        s.pos[i]  = Vec3d{qx + amplitude * std::sin(k * qx), qy, qz};
        s.mass[i] = 1.0;
        s.id[i]   = uint64_t(i);
    }
    return s;
}

struct TempDir
{
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("octwalk_power_" + std::to_string(::getpid()));
    TempDir() { std::filesystem::create_directories(path); }
    ~TempDir() { std::filesystem::remove_all(path); }
    std::string operator/(const std::string& name) const { return (path / name).string(); }
};

} // namespace

TEST(Power, PlaneWaveLandsInItsBinWithItsAmplitude)
{
    const double box = 100, amplitude = 0.02;
    const int m = 3;
    // A lattice finer along x than the mesh keeps its own images far from the wave: the amplitude is
    // then right to 9e-4 (the error falls as 1 / nx^2: 1.4e-2 at nx = 64, measured).
    const int nx = 256;
    for (MassAssignment scheme : {MassAssignment::Cic, MassAssignment::Tsc})
    {
        for (bool interlace : {false, true})
        {
            PowerOptions o;
            o.nMesh          = 16;
            o.assignment     = scheme;
            o.interlace      = interlace;
            PowerSpectrum ps = measurePowerSpectrum(planeWave(nx, 16, box, m, amplitude), box, o);
            // delta = -A k cos(k x): the modes +-k each hold (A k / 2)^2, so the bin's sum is V (A k)^2 / 2.
            const double k = 2 * M_PI * m / box, expected = box * box * box * std::pow(amplitude * k, 2) / 2;
            double worst = 0;
            for (size_t b = 0; b < ps.bins.size(); ++b)
            {
                const double sum = ps.bins[b].power * double(ps.bins[b].modes);
                if (b == size_t(m - 1))
                {
                    EXPECT_NEAR(sum / expected, 1.0, 2e-3) << toString(scheme) << " interlace " << interlace;
                    EXPECT_NEAR(ps.bins[b].kMean, k, 0.5 * 2 * M_PI / box);
                }
                else
                {
                    worst = std::max(worst, sum / expected);
                }
            }
            // What leaks is the lattice's own images (at multiples of 256 kF along x) folded back by the
            // mesh: 4e-3 of the wave for CIC, 1e-5 for TSC (measured).
            EXPECT_LT(worst, 1e-2) << toString(scheme) << " interlace " << interlace;
        }
    }
}

TEST(Power, UniformLatticeHasNoPowerBelowItsFrequency)
{
    const double box = 64;
    PowerOptions o;
    o.nMesh          = 64;
    PowerSpectrum ps = measurePowerSpectrum(planeWave(16, 16, box, 1, 0.0), box, o);
    EXPECT_DOUBLE_EQ(ps.shotNoise, box * box * box / 4096);
    for (const PowerBin& b : ps.bins)
    {
        if (b.kHigh < 2 * M_PI * 16 / box) EXPECT_LT(b.power, 1e-20 * ps.shotNoise) << "k = " << b.kMean;
    }
}

TEST(Power, AssignmentsAndInterlacingAgreeOnAnInitialBox)
{
    CosmoIcParams p;
    p.nGrid           = 32;
    p.boxSize         = 300;
    LinearPower power = LinearPower::eisensteinHu(p.cosmology, SpectrumParams{});
    p.zBegin          = 0; // the comparison is between estimators of one field: a strong one
    ParticleSet s     = makeCosmoIcs(p, power);
    PowerOptions cic;
    cic.nMesh          = 64;
    PowerOptions tsc   = cic;
    tsc.assignment     = MassAssignment::Tsc;
    tsc.interlace      = true;
    PowerSpectrum a    = measurePowerSpectrum(s, p.boxSize, cic);
    PowerSpectrum b    = measurePowerSpectrum(s, p.boxSize, tsc);
    const double kHalf = 0.5 * M_PI * 32 / p.boxSize; // half the particle Nyquist
    for (size_t i = 0; i < a.bins.size(); ++i)
    {
        if (a.bins[i].modes == 0 || a.bins[i].kMean > kHalf) continue;
        EXPECT_NEAR(b.bins[i].power / a.bins[i].power, 1.0, 0.01) << "k = " << a.bins[i].kMean;
    }
}

TEST(Power, BadOptionsAreRejected)
{
    ParticleSet s = planeWave(4, 4, 1.0, 1, 0.0);
    PowerOptions o;
    o.nMesh = 2;
    EXPECT_THROW(measurePowerSpectrum(s, 1.0, o), ParameterError);
    o.nMesh = 8;
    EXPECT_THROW(measurePowerSpectrum(s, 0.0, o), ParameterError);
    s.pos[3].y = NAN;
    EXPECT_THROW(measurePowerSpectrum(s, 1.0, o), InputError);
}

TEST(Power, CliWritesHeaderColumnsAndReferenceRatio)
{
    TempDir dir;
    const std::string ic = dir / "ic.gadget", csv = dir / "pk.csv";
    CliResult r = runOctwalk({"ic", "cosmo", "--n-grid", "16", "--box-size", "200", "--seed", "3", "-o", ic.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(std::filesystem::exists(ic + ".json"));
    r = runOctwalk({"power", ic.c_str(), "--box-size", "200", "--a", "0.02", "--n-mesh", "32", "--linear",
                    "--reference", ic.c_str(), "--reference-a", "0.02", "-o", csv.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    std::ifstream in(csv);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("# octwalk "), std::string::npos);
    EXPECT_NE(text.find("# a = 0.02, box = 200, N = 4096"), std::string::npos);
    EXPECT_NE(text.find("NOT subtracted"), std::string::npos);
    EXPECT_NE(text.find("k_low,k_high,k_mean,P,modes,shot_noise,P_linear,P_reference,ratio,growth_ratio2"),
              std::string::npos);
    std::istringstream lines(text);
    std::string line;
    int rows = 0;
    while (std::getline(lines, line))
    {
        if (line.empty() || line[0] == '#' || line[0] == 'k') continue;
        std::vector<double> v;
        std::stringstream fields(line);
        for (std::string f; std::getline(fields, f, ',');) v.push_back(std::stod(f));
        ASSERT_EQ(v.size(), 10u) << line;
        EXPECT_EQ(v[8], 1.0); // a snapshot against itself
        EXPECT_NEAR(v[9], 1.0, 1e-12);
        EXPECT_GT(v[6], 0.0);
        ++rows;
    }
    EXPECT_EQ(rows, 16);
}

TEST(Power, CliRejectsBadInputWithOneLineNamingTheValue)
{
    TempDir dir;
    const std::string out = dir / "x.gadget", table = dir / "pk.txt";
    std::ofstream(table) << "0.1 1\n0.05 2\n";
    const std::vector<std::pair<std::vector<const char*>, const char*>> cases{
        {{"ic", "cosmo", "--n-grid", "1", "-o", out.c_str()}, "n-grid = 1"},
        {{"ic", "cosmo", "--box-size", "0", "-o", out.c_str()}, "box-size = 0"},
        {{"ic", "cosmo", "--box-size", "-5", "-o", out.c_str()}, "box-size = -5"},
        {{"ic", "cosmo", "--z-begin", "-1", "-o", out.c_str()}, "z-begin = -1"},
        {{"ic", "cosmo", "--sigma8", "0", "-o", out.c_str()}, "sigma8 = 0"},
        {{"ic", "cosmo", "--n", "10", "-o", out.c_str()}, "--n = 10"},
        {{"ic", "cosmo", "--units", "cgs", "-o", out.c_str()}, "units = 'cgs'"},
        {{"ic", "cosmo", "--power-spectrum", table.c_str(), "-o", out.c_str()}, "k = 0.05"},
        {{"power", out.c_str(), "--n-mesh", "2"}, "n-mesh = 2"},
        {{"power", out.c_str(), "--assignment", "ngp"}, "assignment = 'ngp'"},
    };
    for (const auto& [args, text] : cases)
    {
        CliResult r = runOctwalk(args);
        EXPECT_NE(r.code, 0) << text;
        EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_FALSE(std::filesystem::exists(out)) << text;
    }
}

// A table has no power outside its k range: one that misses every mode of the box would give an unperturbed
// lattice (it did, with exit 0); one that covers part of them is used with a note on what lies outside.
TEST(Power, IcCosmoRefusesATableThatMissesTheBoxAndNotesPartialCoverage)
{
    TempDir dir;
    const std::string out = dir / "x.gadget", miss = dir / "miss.txt", part = dir / "part.txt";
    std::ofstream(miss) << "0.05 100\n0.06 100\n";
    std::ofstream(part) << "0.01 100\n0.2 100\n";
    CliResult refused =
        runOctwalk({"ic", "cosmo", "--n-grid", "16", "--power-spectrum", miss.c_str(), "-o", out.c_str()});
    EXPECT_EQ(refused.code, 2) << refused.err;
    EXPECT_NE(refused.err.find("covers k = 0.05 to 0.06 h/Mpc"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("k = 0.06283 to 0.7618 h/Mpc"), std::string::npos) << refused.err;
    EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
    EXPECT_FALSE(std::filesystem::exists(out));

    CliResult partial =
        runOctwalk({"ic", "cosmo", "--n-grid", "16", "--power-spectrum", part.c_str(), "-o", out.c_str()});
    EXPECT_EQ(partial.code, 0) << partial.err;
    EXPECT_NE(partial.out.find("note: the power spectrum table covers k = 0.01 to 0.2 h/Mpc"), std::string::npos)
        << partial.out;
    EXPECT_NE(partial.out.find("given no power (P = 0 outside the table)"), std::string::npos) << partial.out;
    EXPECT_TRUE(std::filesystem::exists(out));
}

TEST(Power, IcCosmoIsReachedByNameOrModelOptionAndDocumented)
{
    TempDir dir;
    const std::string ic = dir / "ic.tipsy";
    CliResult r          = runOctwalk({"ic", "--model", "cosmo", "--n", "512", "--format", "tipsy", "-o", ic.c_str()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("512 particles (cosmo, 8^3"), std::string::npos) << r.out;
    std::ifstream json(ic + ".json");
    std::string text((std::istreambuf_iterator<char>(json)), std::istreambuf_iterator<char>());
    for (const char* key : {"\"units\": \"nbody\"", "\"a_begin\": 0.02", "\"box_size\": 100", "\"sigma8\""})
    {
        EXPECT_NE(text.find(key), std::string::npos) << key << " in " << text;
    }
    r = runOctwalk({"ic", "cosmo", "--help"});
    EXPECT_EQ(r.code, 0);
    for (const char* option :
         {"--n-grid", "--box-size", "--z-begin", "--sigma8", "--power-spectrum", "--units", "G = 1"})
    {
        EXPECT_NE(r.out.find(option), std::string::npos) << option;
    }
}
