// libg6 through its C interface on the CPU backend: forces, jerks and potentials against a plain
// double loop written here, prediction to round-off, neighbour lists and nearest neighbours against
// brute force, overflow and errors reported; and the double-single arithmetic of common/hermite.h
// (the device's default kernel) evaluated on the host against the same reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "common/hermite.h"
#include "host/core/random.h"
#include "host/g6/g6lib.h"
#include "host/models/models.h"

namespace octwalk {
namespace {

/// j-particles with their Taylor data, the i-block drawn from them (predicted to ti), as a client keeps them.
struct Cluster6
{
    std::vector<G6JParticle> j;
    std::vector<double> xp, vp; ///< predicted by the test's own formula, 3 per particle
    double ti = 0.0625;
};

/// The snap term's prediction written as the plain Taylor series of a, jerk and snap (not Horner):
/// the reference for common/hermite.h's predictCoordinate.
void taylorPredict(const G6JParticle& p, double ti, double* xp, double* vp)
{
    double dt = ti - p.t;
    for (int k = 0; k < 3; ++k)
    {
        double a = 2 * p.a2[k], jerk = 6 * p.j6[k], snap = 18 * p.k18[k];
        xp[k] = p.x[k] + p.v[k] * dt + a * dt * dt / 2 + jerk * dt * dt * dt / 6 + snap * dt * dt * dt * dt / 24;
        vp[k] = p.v[k] + a * dt + jerk * dt * dt / 2 + snap * dt * dt * dt / 6;
    }
}

/// Plummer (model) or uniform random (a cube of side 2) positions; random derivatives of the
/// size a cluster has; times tj <= ti; indices 1000 + address, so index and address differ.
Cluster6 makeCluster(bool plummer, int n, uint64_t seed, double offset = 0)
{
    Cluster6 c;
    ParticleSet set = plummer ? makePlummer(n, seed) : ParticleSet{};
    Random rng(seed + 1);
    auto sym = [&](double scale) { return scale * (2 * rng.uniform() - 1); };
    c.j.resize(size_t(n));
    c.xp.resize(3 * size_t(n));
    c.vp.resize(3 * size_t(n));
    for (int a = 0; a < n; ++a)
    {
        G6JParticle& p = c.j[size_t(a)];
        for (int k = 0; k < 3; ++k)
        {
            p.x[k]   = offset + (plummer ? (&set.pos[size_t(a)].x)[k] : sym(1));
            p.v[k]   = plummer ? (&set.vel[size_t(a)].x)[k] : sym(1);
            p.a2[k]  = sym(0.5);
            p.j6[k]  = sym(0.5);
            p.k18[k] = sym(0.5);
        }
        p.mass  = plummer ? set.mass[size_t(a)] : (0.5 + rng.uniform()) / n;
        p.t     = c.ti - 0.0625 * rng.uniform();
        p.index = 1000 + a;
        taylorPredict(p, c.ti, &c.xp[3 * size_t(a)], &c.vp[3 * size_t(a)]);
    }
    return c;
}

/// The i-block: every stride-th j-particle (so i meets itself among the j's) at its predicted state.
struct Block
{
    std::vector<int> index;
    std::vector<double> x, v, h2;
};

Block makeBlock(const Cluster6& c, int ni, int stride, double h2)
{
    Block b;
    for (int i = 0; i < ni; ++i)
    {
        size_t a = size_t(i) * size_t(stride) % c.j.size();
        b.index.push_back(c.j[a].index);
        for (int k = 0; k < 3; ++k)
        {
            b.x.push_back(c.xp[3 * a + k]);
            b.v.push_back(c.vp[3 * a + k]);
        }
        b.h2.push_back(h2 * (0.5 + double(i % 7) / 7));
    }
    return b;
}

struct Result
{
    std::vector<double> acc, jerk, pot;
    std::vector<int> nearest;
};

/// The reference: a plain double loop over the test's own predicted j-particles.
Result referenceForces(const Cluster6& c, const Block& b, int nj, double eps2)
{
    size_t ni = b.index.size();
    Result r{std::vector<double>(3 * ni), std::vector<double>(3 * ni), std::vector<double>(ni),
             std::vector<int>(ni, -1)};
    for (size_t i = 0; i < ni; ++i)
    {
        double best = std::numeric_limits<double>::infinity();
        for (int a = 0; a < nj; ++a)
        {
            if (c.j[size_t(a)].index == b.index[i]) continue;
            double d[3], dv[3];
            for (int k = 0; k < 3; ++k)
            {
                d[k]  = c.xp[3 * size_t(a) + k] - b.x[3 * i + k];
                dv[k] = c.vp[3 * size_t(a) + k] - b.v[3 * i + k];
            }
            double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            if (d2 < best)
            {
                best         = d2;
                r.nearest[i] = c.j[size_t(a)].index;
            }
            double r2 = d2 + eps2, rr = std::sqrt(r2), m = c.j[size_t(a)].mass;
            double rdv = d[0] * dv[0] + d[1] * dv[1] + d[2] * dv[2];
            for (int k = 0; k < 3; ++k)
            {
                r.acc[3 * i + k] += m * d[k] / (r2 * rr);
                r.jerk[3 * i + k] += m * (dv[k] / (r2 * rr) - 3 * rdv * d[k] / (r2 * r2 * rr));
            }
            r.pot[i] -= m / rr;
        }
    }
    return r;
}

/// Relative errors |v - ref| / |ref| of 3-vectors.
std::vector<double> vectorErrors(const std::vector<double>& v, const std::vector<double>& ref)
{
    std::vector<double> e;
    for (size_t i = 0; i < ref.size(); i += 3)
    {
        double diff = 0, norm = 0;
        for (int k = 0; k < 3; ++k)
        {
            diff += (v[i + k] - ref[i + k]) * (v[i + k] - ref[i + k]);
            norm += ref[i + k] * ref[i + k];
        }
        e.push_back(std::sqrt(diff / norm));
    }
    return e;
}

double percentile(std::vector<double> e, double q)
{
    std::sort(e.begin(), e.end());
    return e[std::min(e.size() - 1, size_t(q * double(e.size())))];
}

/// Opens cluster id on the CPU backend; closes it at the end of the test.
class G6Test : public ::testing::Test
{
protected:
    static constexpr int kId = 0;
    void SetUp() override
    {
        setenv("OCTWALK_G6_BACKEND", "cpu", 1);
        ASSERT_EQ(g6_open(kId), 0);
    }
    void TearDown() override { g6_close(kId); }

    void upload(Cluster6& c)
    {
        ASSERT_EQ(g6_set_ti(kId, c.ti), 0);
        for (size_t a = 0; a < c.j.size(); ++a)
        {
            G6JParticle& p = c.j[a];
            ASSERT_EQ(g6_set_j_particle(kId, int(a), p.index, p.t, 0.01, p.mass, p.k18, p.j6, p.a2, p.v, p.x), 0);
        }
    }

    Result calc(Block& b, int nj, double eps2, bool firstHalf = true)
    {
        int ni = int(b.index.size());
        Result r{std::vector<double>(3 * size_t(ni)), std::vector<double>(3 * size_t(ni)),
                 std::vector<double>(size_t(ni)), std::vector<int>(size_t(ni))};
        auto x = reinterpret_cast<double(*)[3]>(b.x.data());
        auto v = reinterpret_cast<double(*)[3]>(b.v.data());
        if (firstHalf)
            g6calc_firsthalf(kId, nj, ni, b.index.data(), x, v, nullptr, nullptr, nullptr, eps2, b.h2.data());
        EXPECT_EQ(g6calc_lasthalf2(kId, nj, ni, b.index.data(), x, v, eps2, b.h2.data(),
                                   reinterpret_cast<double(*)[3]>(r.acc.data()),
                                   reinterpret_cast<double(*)[3]>(r.jerk.data()), r.pot.data(), r.nearest.data()),
                  0);
        return r;
    }
};

void expectClose(const Result& r, const Result& ref, double accTol, double jerkTol, double potTol)
{
    EXPECT_LE(percentile(vectorErrors(r.acc, ref.acc), 1.0), accTol);
    EXPECT_LE(percentile(vectorErrors(r.jerk, ref.jerk), 1.0), jerkTol);
    for (size_t i = 0; i < ref.pot.size(); ++i) EXPECT_NEAR(r.pot[i], ref.pot[i], potTol * std::abs(ref.pot[i])) << i;
}

TEST_F(G6Test, ForcesJerksPotentialsMatchReferencePlummerSoftened)
{
    Cluster6 c = makeCluster(true, 2048, 11);
    upload(c);
    Block b  = makeBlock(c, 256, 7, 0.01);
    Result r = calc(b, 2048, 1.0 / 256 / 256);
    expectClose(r, referenceForces(c, b, 2048, 1.0 / 256 / 256), 1e-12, 1e-11, 1e-13);
}

TEST_F(G6Test, ForcesMatchReferenceRandomUnsoftenedPartialNj)
{
    Cluster6 c = makeCluster(false, 1500, 12);
    upload(c);
    Block b = makeBlock(c, 1024, 3, 0.01);
    // nj < the particles set: the tail of j-memory takes no part (i-particles whose j lies beyond nj
    // meet no self).
    Result r = calc(b, 1200, 0.0);
    expectClose(r, referenceForces(c, b, 1200, 0.0), 1e-12, 1e-11, 1e-13);
    EXPECT_EQ(r.nearest, referenceForces(c, b, 1200, 0.0).nearest);
}

TEST_F(G6Test, LasthalfAloneComputesAndRepeatsBitIdentically)
{
    Cluster6 c = makeCluster(true, 1024, 13);
    upload(c);
    Block b   = makeBlock(c, 200, 5, 0.01);
    Result r1 = calc(b, 1024, 1e-4, false);
#ifdef _OPENMP
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    Result r2 = calc(b, 1024, 1e-4, true);
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
    EXPECT_EQ(r1.acc, r2.acc);
    EXPECT_EQ(r1.jerk, r2.jerk);
    EXPECT_EQ(r1.pot, r2.pot);
    expectClose(r1, referenceForces(c, b, 1024, 1e-4), 1e-12, 1e-11, 1e-13);
}

TEST_F(G6Test, EmptyBlocksAndNoJParticles)
{
    Cluster6 c = makeCluster(false, 4, 19);
    upload(c);
    Block none;
    EXPECT_EQ(calc(none, 4, 0).pot.size(), 0u);
    Block one = makeBlock(c, 1, 1, 0.1);
    Result r  = calc(one, 0, 0); // nj = 0: no force, no nearest neighbour
    EXPECT_EQ(r.acc, std::vector<double>(3, 0.0));
    EXPECT_EQ(r.pot, std::vector<double>(1, 0.0));
    EXPECT_EQ(r.nearest, std::vector<int>(1, -1));
    ASSERT_EQ(g6_read_neighbour_list(kId), 0);
    int nblen = -1;
    EXPECT_EQ(g6_get_neighbour_list(kId, 0, 0, &nblen, nullptr), 0);
    EXPECT_EQ(nblen, 0);
}

TEST(G6Predictor, HornerFormEqualsTaylorSeriesToRoundOff)
{
    Cluster6 c = makeCluster(false, 500, 14);
    for (size_t a = 0; a < c.j.size(); ++a)
    {
        const G6JParticle& p = c.j[a];
        for (int k = 0; k < 3; ++k)
        {
            double xp, vp;
            predictCoordinate(c.ti - p.t, p.x[k], p.v[k], p.a2[k], p.j6[k], p.k18[k], xp, vp);
            EXPECT_NEAR(xp, c.xp[3 * a + k], 4e-16 * (std::abs(p.x[k]) + 1)) << a;
            EXPECT_NEAR(vp, c.vp[3 * a + k], 4e-16 * (std::abs(p.v[k]) + 1)) << a;
        }
    }
}

TEST_F(G6Test, PredictionThroughTheLibraryToRoundOff)
{
    // One j-particle, one i-particle at the origin, eps2 = 0: pot = -m/r and acc = m d/r^3 give the
    // predicted offset d = acc r^3 / m back to round-off.
    Cluster6 c  = makeCluster(false, 1, 15);
    c.j[0].mass = 2;
    upload(c);
    Block b;
    b.index   = {7};
    b.x       = {0, 0, 0};
    b.v       = {0, 0, 0};
    b.h2      = {0};
    Result r  = calc(b, 1, 0);
    double rr = c.j[0].mass / -r.pot[0];
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(r.acc[size_t(k)] * rr * rr * rr / c.j[0].mass, c.xp[size_t(k)], 1e-14);
}

TEST_F(G6Test, NeighbourListsEqualBruteForceAndOverflowIsReported)
{
    Cluster6 c = makeCluster(true, 2000, 16);
    upload(c);
    Block b = makeBlock(c, 300, 3, 0.02);
    calc(b, 2000, 1e-4);
    ASSERT_EQ(g6_read_neighbour_list(kId), 0);
    int longest = 0;
    for (int i = 0; i < 300; ++i)
    {
        std::vector<int> expected;
        for (int a = 0; a < 2000; ++a)
        {
            double d2 = 0;
            for (int k = 0; k < 3; ++k)
                d2 += (c.xp[3 * size_t(a) + size_t(k)] - b.x[3 * size_t(i) + size_t(k)]) *
                      (c.xp[3 * size_t(a) + size_t(k)] - b.x[3 * size_t(i) + size_t(k)]);
            if (c.j[size_t(a)].index != b.index[size_t(i)] && d2 < b.h2[size_t(i)])
                expected.push_back(c.j[size_t(a)].index);
        }
        std::vector<int> list(2000);
        int nblen = -1;
        ASSERT_EQ(g6_get_neighbour_list(kId, i, 2000, &nblen, list.data()), 0);
        list.resize(size_t(nblen));
        EXPECT_EQ(list, expected) << "i-particle " << i;
        longest = std::max(longest, nblen);
        if (nblen >= 2)
        {
            std::vector<int> shortList(size_t(nblen - 1));
            int shortLen = -1;
            EXPECT_EQ(g6_get_neighbour_list(kId, i, nblen - 1, &shortLen, shortList.data()), 1);
            EXPECT_EQ(shortLen, nblen);
            EXPECT_TRUE(std::equal(shortList.begin(), shortList.end(), expected.begin()));
        }
    }
    EXPECT_GT(longest, 10) << "the test needs populated lists";
}

/// Runs f with stderr captured; returns what it printed.
template<class F>
std::string stderrOf(F f)
{
    ::testing::internal::CaptureStderr();
    f();
    return ::testing::internal::GetCapturedStderr();
}

TEST_F(G6Test, ForcesAskedOfAnEmptyJMemorySayItIsEmpty)
{
    Cluster6 c = makeCluster(false, 10, 17);
    Block b    = makeBlock(c, 4, 1, 0.1);
    std::vector<double> out(3 * 2000), pot(2000);
    auto x                = reinterpret_cast<double(*)[3]>(b.x.data());
    auto v                = reinterpret_cast<double(*)[3]>(b.v.data());
    auto acc              = reinterpret_cast<double(*)[3]>(out.data());
    const std::string msg = stderrOf(
        [&] { EXPECT_NE(g6calc_lasthalf(kId, 1, 4, b.index.data(), x, v, 0, b.h2.data(), acc, acc, pot.data()), 0); });
    EXPECT_NE(msg.find("nj = 1 but no j-particle is set"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("0..-1"), std::string::npos) << msg;
}

TEST_F(G6Test, ErrorsReturnNonZeroWithAMessageNamingTheArgument)
{
    Cluster6 c = makeCluster(false, 10, 17);
    upload(c);
    Block b = makeBlock(c, 4, 1, 0.1);
    std::vector<double> out(3 * 2000), pot(2000);
    auto x     = reinterpret_cast<double(*)[3]>(b.x.data());
    auto v     = reinterpret_cast<double(*)[3]>(b.v.data());
    auto acc   = reinterpret_cast<double(*)[3]>(out.data());
    double nan = std::numeric_limits<double>::quiet_NaN();
    std::string msg;

    msg = stderrOf([&] { EXPECT_NE(g6_set_ti(5, 0.0), 0); });
    EXPECT_NE(msg.find("cluster id 5 is not open"), std::string::npos) << msg;
    msg = stderrOf([&] { EXPECT_NE(g6_open(kId), 0); });
    EXPECT_NE(msg.find("already open"), std::string::npos) << msg;
    msg = stderrOf(
        [&] { EXPECT_NE(g6calc_lasthalf(kId, 11, 4, b.index.data(), x, v, 0, b.h2.data(), acc, acc, pot.data()), 0); });
    EXPECT_NE(msg.find("nj = 11"), std::string::npos) << msg;
    msg = stderrOf([&] {
        EXPECT_NE(g6calc_lasthalf(kId, 10, g6_npipes() + 1, b.index.data(), x, v, 0, b.h2.data(), acc, acc, pot.data()),
                  0);
    });
    EXPECT_NE(msg.find("ni = "), std::string::npos) << msg;
    b.x[4] = nan; // i-particle 1, y
    msg    = stderrOf([&] {
        g6calc_firsthalf(kId, 10, 4, b.index.data(), x, v, nullptr, nullptr, nullptr, 0, b.h2.data());
        EXPECT_NE(g6calc_lasthalf(kId, 10, 4, b.index.data(), x, v, 0, b.h2.data(), acc, acc, pot.data()), 0);
    });
    EXPECT_NE(msg.find("xi of particle " + std::to_string(b.index[1])), std::string::npos) << msg;
    EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 1) << "one line per error: " << msg;
    G6JParticle p = c.j[3];
    p.k18[2]      = nan;
    msg = stderrOf([&] { EXPECT_NE(g6_set_j_particle(kId, 3, 77, p.t, 0, p.mass, p.k18, p.j6, p.a2, p.v, p.x), 0); });
    EXPECT_NE(msg.find("k18 of particle 77"), std::string::npos) << msg;
    msg = stderrOf([&] {
        EXPECT_NE(g6_set_j_particle(kId, -1, 78, 0, 0, 1, c.j[0].k18, c.j[0].j6, c.j[0].a2, c.j[0].v, c.j[0].x), 0);
    });
    EXPECT_NE(msg.find("address -1 of particle 78"), std::string::npos) << msg;
    msg = stderrOf([&] { EXPECT_NE(g6_get_neighbour_list(kId, 0, 10, nullptr, nullptr), 0); });
    EXPECT_NE(msg.find("neighbour"), std::string::npos) << msg;
    msg = stderrOf([&] { EXPECT_NE(g6_close(9), 0); });
    EXPECT_NE(msg.find("cluster id 9 is not open"), std::string::npos) << msg;
}

/// g6calc_lasthalf2 on one i-particle (index 10, at the origin, at rest) and j-memory [0, nj); its return
/// code and what it printed.
struct OneCalc
{
    int code;
    std::string err;
};

OneCalc calcAtOrigin(int id, int nj, double eps2)
{
    int index[1]   = {10}, nearest[1];
    double x[1][3] = {{0, 0, 0}}, v[1][3] = {{0, 0, 0}}, h2[1] = {0.01}, acc[1][3], jerk[1][3], pot[1];
    OneCalc r{};
    r.err = stderrOf([&] {
        g6calc_firsthalf(id, nj, 1, index, x, v, nullptr, nullptr, nullptr, eps2, h2);
        r.code = g6calc_lasthalf2(id, nj, 1, index, x, v, eps2, h2, acc, jerk, pot, nearest);
    });
    return r;
}

TEST_F(G6Test, OverflowFromFiniteInputIsAnErrorNamingTheParticle)
{
    double zero[3] = {0, 0, 0};
    auto setJ      = [&](int address, int index, double mass, double pos, double vel, double k18) {
        double x[3] = {pos, pos, pos}, v[3] = {vel, vel, vel}, k[3] = {k18, k18, k18};
        return g6_set_j_particle(kId, address, index, 0, 0, mass, k, zero, zero, v, x);
    };
    ASSERT_EQ(g6_set_ti(kId, 0), 0);
    ASSERT_EQ(setJ(0, 10, 1, 0, 0, 0), 0); // the i-particle itself, skipped

    // A j-particle 1e-160 away, unsoftened: r^3 underflows to 0.
    ASSERT_EQ(setJ(1, 11, 1, 1e-160, 0, 0), 0);
    OneCalc r = calcAtOrigin(kId, 2, 0);
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("acc of i-particle 10"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

    // Positions and velocities of 1e200: r^2 overflows.
    ASSERT_EQ(setJ(1, 11, 1, 1e200, 1e200, 0), 0);
    r = calcAtOrigin(kId, 2, 0);
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("of i-particle 10"), std::string::npos) << r.err;

    // A mass of 1e308 at 1e-6: the potential overflows.
    ASSERT_EQ(setJ(1, 11, 1e308, 1e-6, 0, 0), 0);
    r = calcAtOrigin(kId, 2, 0);
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("of i-particle 10"), std::string::npos) << r.err;

    // A snap term predicted over dt = 1e80: the predictor overflows.
    ASSERT_EQ(setJ(1, 11, 1, 1, 0, 1), 0);
    ASSERT_EQ(g6_set_ti(kId, 1e80), 0);
    r = calcAtOrigin(kId, 2, 0);
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("particle 11"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

    // Finite again: the library recovers.
    ASSERT_EQ(g6_set_ti(kId, 0), 0);
    EXPECT_EQ(calcAtOrigin(kId, 2, 0.01).code, 0);
}

TEST(G6Fortran, UnitCallsReadTheFourByteIntegerGrape6Passes)
{
    // The INTEGER at the very end of a readable page, a PROT_NONE page after it: reading more than its 4
    // bytes (a double) faults.
    const size_t page = size_t(::sysconf(_SC_PAGESIZE));
    void* memory      = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(memory, MAP_FAILED);
    ASSERT_EQ(::mprotect(static_cast<char*>(memory) + page, page, PROT_NONE), 0);
    int* unit = reinterpret_cast<int*>(static_cast<char*>(memory) + page - sizeof(int));
    *unit     = 48; // phiGRAPE's initgrape.F
    EXPECT_EQ(g6_set_tunit_(unit), 0);
    EXPECT_EQ(g6_set_xunit_(unit), 0);
    ::munmap(memory, 2 * page);
}

/// The address space this process holds now, in bytes (/proc/self/statm's first field).
size_t addressSpaceBytes()
{
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    long pages   = 0;
    if (f)
    {
        if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
        std::fclose(f);
    }
    return size_t(pages) * size_t(::sysconf(_SC_PAGESIZE));
}

// One j-particle at the highest default address holds j-memory for all 2^24 addresses (3 GB): the library
// says so before it takes the memory, and when the memory is not there the call fails naming the address.
TEST(G6Open, AHighAddressSaysWhatItTakesAndFailsCleanlyWithoutTheMemory)
{
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "AddressSanitizer reserves more address space than the limit below allows";
#endif
    setenv("OCTWALK_G6_BACKEND", "cpu", 1);
    ASSERT_EQ(g6_open(4), 0);
    double z[3] = {0, 0, 0}, x[3] = {1, 0, 0};
    struct rlimit old;
    ASSERT_EQ(::getrlimit(RLIMIT_AS, &old), 0);
    // 256 MB more than the process holds: less than the first of the arrays the growth needs (400 MB).
    const struct rlimit tight = {rlim_t(addressSpaceBytes() + (size_t(256) << 20)), old.rlim_max};
    ASSERT_EQ(::setrlimit(RLIMIT_AS, &tight), 0);
    int code              = 0;
    const std::string err = stderrOf([&] { code = g6_set_j_particle(4, (1 << 24) - 1, 7, 0, 0, 1, z, z, z, z, x); });
    ASSERT_EQ(::setrlimit(RLIMIT_AS, &old), 0);
    EXPECT_NE(code, 0);
    EXPECT_NE(err.find("address 16777215 of particle 7 grows j-memory from 16384 to 16777216 addresses, about 3072 MB"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("out of memory"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << "the notice, then the error: " << err;
    // The cluster is as it was.
    EXPECT_EQ(g6_set_j_particle(4, 100, 8, 0, 0, 1, z, z, z, z, x), 0);
    EXPECT_EQ(g6_close(4), 0);
}

TEST(G6Open, BadEnvironmentAndJMemoryLimit)
{
    setenv("OCTWALK_G6_BACKEND", "fpga", 1);
    ::testing::internal::CaptureStderr();
    EXPECT_NE(g6_open(3), 0);
    EXPECT_NE(::testing::internal::GetCapturedStderr().find("OCTWALK_G6_BACKEND = 'fpga'"), std::string::npos);
    setenv("OCTWALK_G6_BACKEND", "cpu", 1);
    setenv("OCTWALK_G6_JMEM_MAX", "40000", 1);
    ASSERT_EQ(g6_open(3), 0);
    unsetenv("OCTWALK_G6_JMEM_MAX");
    double z[3] = {0, 0, 0}, x[3] = {1, 0, 0};
    // Grows beyond the initial j-memory on demand, stops at the limit.
    EXPECT_EQ(g6_set_j_particle(3, 39999, 5, 0, 0, 1, z, z, z, z, x), 0);
    ::testing::internal::CaptureStderr();
    EXPECT_NE(g6_set_j_particle(3, 40000, 6, 0, 0, 1, z, z, z, z, x), 0);
    EXPECT_NE(::testing::internal::GetCapturedStderr().find("address 40000 of particle 6"), std::string::npos);
    EXPECT_EQ(g6_reset(3), 0);
    EXPECT_EQ(g6_close(3), 0);
}

/// The device's default kernel arithmetic (DsCoord positions, float after the difference, float
/// partial sums over tiles of 128 j folded into double), on the host: the precision figures of
/// double-single against the double reference (acceleration median <= 1e-6, 99th percentile <= 1e-5;
/// measured 4e-8 and 1.9e-7), also for a cluster 100 length units from the origin, where float
/// positions alone would lose three digits.
void expectDoubleSinglePrecision(double offset)
{
    const int n = 4096;
    Cluster6 c  = makeCluster(true, n, 18, offset);
    Block b     = makeBlock(c, 512, 7, 0);
    double eps2 = 1.0 / 256 / 256;
    Result ref  = referenceForces(c, b, n, eps2);
    // Split once, as the device's prediction and i-particle upload store them.
    auto split = [](const std::vector<double>& x, std::vector<DsCoord>& hiLo, std::vector<float>& v,
                    const std::vector<double>& vd) {
        hiLo.resize(x.size());
        v.resize(x.size());
        for (size_t k = 0; k < x.size(); ++k)
        {
            hiLo[k] = splitDs(x[k]);
            v[k]    = float(vd[k]);
        }
    };
    std::vector<DsCoord> xj, xi;
    std::vector<float> vj, vi;
    split(c.xp, xj, vj, c.vp);
    split(b.x, xi, vi, b.v);
    std::vector<double> acc(3 * b.index.size()), jerk(3 * b.index.size()), pot(b.index.size());
    for (size_t i = 0; i < b.index.size(); ++i)
    {
        double sum[3] = {0, 0, 0}, jsum[3] = {0, 0, 0};
        for (int tile = 0; tile < n; tile += 128)
        {
            HermiteSums<float> s;
            for (int a = tile; a < tile + 128; ++a)
            {
                float m = c.j[size_t(a)].index == b.index[i] ? 0.0f : float(c.j[size_t(a)].mass);
                hermiteInteraction<DsCoord>(&xi[3 * i], &vi[3 * i], &xj[3 * size_t(a)], &vj[3 * size_t(a)], m,
                                            float(eps2), s);
            }
            sum[0] += s.ax;
            sum[1] += s.ay;
            sum[2] += s.az;
            jsum[0] += s.jx;
            jsum[1] += s.jy;
            jsum[2] += s.jz;
            pot[i] += s.pot;
        }
        for (int k = 0; k < 3; ++k)
        {
            acc[3 * i + size_t(k)]  = sum[k];
            jerk[3 * i + size_t(k)] = jsum[k];
        }
    }
    std::vector<double> je = vectorErrors(jerk, ref.jerk), pe;
    for (size_t i = 0; i < pot.size(); ++i) pe.push_back(std::abs(pot[i] - ref.pot[i]) / std::abs(ref.pot[i]));
    // Measured (GCC 12, host float): jerk median 1.9e-7, p99 1.2e-6; potential at most 1.2e-7.
    EXPECT_LE(percentile(je, 0.5), 1e-6) << "offset " << offset;
    EXPECT_LE(percentile(je, 0.99), 1e-5) << "offset " << offset;
    EXPECT_LE(percentile(pe, 1.0), 1e-6) << "offset " << offset;
    std::vector<double> e = vectorErrors(acc, ref.acc);
    EXPECT_LE(percentile(e, 0.5), 1e-6) << "offset " << offset;
    EXPECT_LE(percentile(e, 0.99), 1e-5) << "offset " << offset;
}

TEST(G6DoubleSingle, PrecisionOnTheHostAtTheOrigin) { expectDoubleSinglePrecision(0); }

TEST(G6DoubleSingle, PrecisionOnTheHostFarFromTheOrigin) { expectDoubleSinglePrecision(100); }

} // namespace
} // namespace octwalk
