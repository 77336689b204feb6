// libg6's device backend against its CPU twin (host/cpu/g6_cpu.h): both precisions, random and
// Plummer sets, blocks of 1, 256 and 1024 i-particles; accelerations within the precision figures of
// the library, neighbour lists identical, nearest neighbours equal or equally near, repeats
// bit-identical; and the C interface on the device. Skips without a GPU unless OCTWALK_REQUIRE_GPU=1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "common/hermite.h"
#include "device/g6_gpu.h"
#include "host/core/random.h"
#include "host/cpu/g6_cpu.h"
#include "host/g6/g6lib.h"
#include "host/models/models.h"

namespace octwalk {
namespace {

void requireGpu()
{
    if (g6GpuAvailable()) return;
    const char* require = std::getenv("OCTWALK_REQUIRE_GPU");
    if (require && std::string(require) == "1") FAIL() << "no GPU but OCTWALK_REQUIRE_GPU=1";
    GTEST_SKIP() << "no CUDA device";
}

/// j-particles with Taylor data and times before ti = 0.125; indices 500 + address.
std::vector<G6JParticle> makeJ(bool plummer, int n, uint64_t seed)
{
    ParticleSet set = plummer ? makePlummer(n, seed) : ParticleSet{};
    Random rng(seed + 1);
    auto sym = [&](double scale) { return scale * (2 * rng.uniform() - 1); };
    std::vector<G6JParticle> j(static_cast<size_t>(n));
    for (int a = 0; a < n; ++a)
    {
        G6JParticle& p = j[size_t(a)];
        for (int k = 0; k < 3; ++k)
        {
            p.x[k]   = plummer ? (&set.pos[size_t(a)].x)[k] : sym(1);
            p.v[k]   = plummer ? (&set.vel[size_t(a)].x)[k] : sym(1);
            p.a2[k]  = sym(0.5);
            p.j6[k]  = sym(0.5);
            p.k18[k] = sym(0.5);
        }
        p.mass  = plummer ? set.mass[size_t(a)] : (0.5 + rng.uniform()) / n;
        p.t     = 0.125 - 0.0625 * rng.uniform();
        p.index = 500 + a;
    }
    return j;
}

struct IBlock
{
    std::vector<int> index;
    std::vector<double> x, v, h2;
    G6IBlock view(int nj, double eps2) const
    {
        G6IBlock b;
        b.nj    = nj;
        b.ni    = int(index.size());
        b.index = index.data();
        b.x     = reinterpret_cast<const double(*)[3]>(x.data());
        b.v     = reinterpret_cast<const double(*)[3]>(v.data());
        b.h2    = h2.data();
        b.eps2  = eps2;
        return b;
    }
};

/// Every stride-th j-particle, predicted to ti, so that i meets itself among the j's.
IBlock makeI(const std::vector<G6JParticle>& j, int ni, int stride, double ti, double h2)
{
    IBlock b;
    for (int i = 0; i < ni; ++i)
    {
        const G6JParticle& p = j[size_t(i) * size_t(stride) % j.size()];
        b.index.push_back(p.index);
        for (int k = 0; k < 3; ++k)
        {
            double xp, vp;
            predictCoordinate(ti - p.t, p.x[k], p.v[k], p.a2[k], p.j6[k], p.k18[k], xp, vp);
            b.x.push_back(xp);
            b.v.push_back(vp);
        }
        b.h2.push_back(h2 * (0.5 + double(i % 5) / 5));
    }
    return b;
}

struct Forces
{
    std::vector<double> acc, jerk, pot;
    std::vector<int> nearest;
    explicit Forces(size_t ni) : acc(3 * ni), jerk(3 * ni), pot(ni), nearest(ni) {}
    G6Outputs outputs()
    {
        return {reinterpret_cast<double(*)[3]>(acc.data()), reinterpret_cast<double(*)[3]>(jerk.data()), pot.data(),
                nearest.data()};
    }
};

template<class Engine>
Forces run(Engine& engine, const std::vector<G6JParticle>& j, const IBlock& b, double eps2)
{
    engine.reserve(int(j.size()));
    for (size_t a = 0; a < j.size(); ++a) engine.setJParticle(int(a), j[a]);
    engine.setTime(0.125);
    Forces f(b.index.size());
    engine.startForces(b.view(int(j.size()), eps2));
    engine.finishForces(f.outputs());
    return f;
}

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

/// Squared distance from i-particle i to the j-particle with index `index` (predicted on the host).
double distance2(const std::vector<G6JParticle>& j, const IBlock& b, size_t i, int index)
{
    const G6JParticle& p = j[size_t(index - 500)];
    double xj[3], vj;
    for (int k = 0; k < 3; ++k) predictCoordinate(0.125 - p.t, p.x[k], p.v[k], p.a2[k], p.j6[k], p.k18[k], xj[k], vj);
    return distance2NoFma(xj, &b.x[3 * i]);
}

/// (precision, plummer, ni)
using TwinParam = std::tuple<G6Precision, bool, int>;

class G6GpuTwin : public ::testing::TestWithParam<TwinParam>
{
protected:
    void SetUp() override { requireGpu(); }
};

TEST_P(G6GpuTwin, MatchesTheCpuTwin)
{
    auto [precision, plummer, ni] = GetParam();
    const int nj                  = 8192;
    const double eps2             = plummer ? 1.0 / 256 / 256 : 1e-4;
    std::vector<G6JParticle> j    = makeJ(plummer, nj, 21);
    IBlock b                      = makeI(j, ni, 3, 0.125, plummer ? 0.005 : 0.01);
    G6Cpu cpu;
    G6Gpu gpu(precision);
    Forces ref = run(cpu, j, b, eps2);
    Forces f   = run(gpu, j, b, eps2);

    bool ds        = precision == G6Precision::DoubleSingle;
    auto accErrors = vectorErrors(f.acc, ref.acc);
    EXPECT_LE(percentile(accErrors, 0.5), ds ? 1e-6 : 1e-12);
    EXPECT_LE(percentile(accErrors, 0.99), ds ? 1e-5 : 1e-11);
    EXPECT_LE(percentile(vectorErrors(f.jerk, ref.jerk), 0.5), ds ? 1e-5 : 1e-11);
    for (int i = 0; i < ni; ++i)
        EXPECT_NEAR(f.pot[size_t(i)], ref.pot[size_t(i)], (ds ? 1e-5 : 1e-12) * std::abs(ref.pot[size_t(i)]));
    for (int i = 0; i < ni; ++i)
    {
        if (f.nearest[size_t(i)] == ref.nearest[size_t(i)]) continue;
        double d2Gpu = distance2(j, b, size_t(i), f.nearest[size_t(i)]);
        double d2Cpu = distance2(j, b, size_t(i), ref.nearest[size_t(i)]);
        EXPECT_NEAR(d2Gpu, d2Cpu, 1e-6 * d2Cpu) << "i-particle " << i;
    }

    std::vector<int64_t> offCpu, offGpu;
    std::vector<int32_t> listCpu, listGpu;
    cpu.neighbourLists(offCpu, listCpu);
    gpu.neighbourLists(offGpu, listGpu);
    EXPECT_EQ(offGpu, offCpu);
    EXPECT_EQ(listGpu, listCpu);
    if (ni >= 256) EXPECT_GT(listCpu.size(), size_t(ni)) << "the test needs populated lists";

    Forces again = run(gpu, j, b, eps2);
    EXPECT_EQ(again.acc, f.acc);
    EXPECT_EQ(again.jerk, f.jerk);
    EXPECT_EQ(again.pot, f.pot);
}

std::string twinName(const ::testing::TestParamInfo<TwinParam>& info)
{
    auto [precision, plummer, ni] = info.param;
    return std::string(precision == G6Precision::DoubleSingle ? "ds" : "double") + (plummer ? "_plummer" : "_random") +
           "_ni" + std::to_string(ni);
}

INSTANTIATE_TEST_SUITE_P(Blocks, G6GpuTwin,
                         ::testing::Combine(::testing::Values(G6Precision::DoubleSingle, G6Precision::Double),
                                            ::testing::Bool(), ::testing::Values(1, 256, 1024)),
                         twinName);

class G6GpuTest : public ::testing::Test
{
protected:
    void SetUp() override { requireGpu(); }
};

TEST_F(G6GpuTest, OnlyChangedParticlesMoveAndTheTimeAdvances)
{
    std::vector<G6JParticle> j = makeJ(true, 4096, 22);
    IBlock b                   = makeI(j, 300, 7, 0.125, 0.01);
    G6Cpu cpu;
    G6Gpu gpu(G6Precision::Double);
    run(cpu, j, b, 1e-4);
    run(gpu, j, b, 1e-4);
    // Change a few particles and the time; the device must see exactly those changes.
    for (int a : {0, 17, 4095})
    {
        j[size_t(a)].x[0] += 0.01;
        j[size_t(a)].mass *= 2;
        cpu.setJParticle(a, j[size_t(a)]);
        gpu.setJParticle(a, j[size_t(a)]);
    }
    cpu.setTime(0.1875);
    gpu.setTime(0.1875);
    gpu.flush();
    Forces ref(300), f(300);
    cpu.startForces(b.view(4096, 1e-4));
    cpu.finishForces(ref.outputs());
    gpu.startForces(b.view(4096, 1e-4));
    gpu.finishForces(f.outputs());
    EXPECT_LE(percentile(vectorErrors(f.acc, ref.acc), 1.0), 1e-11);
}

TEST_F(G6GpuTest, TheCInterfaceRunsOnTheDevice)
{
    setenv("OCTWALK_G6_BACKEND", "gpu", 1);
    setenv("OCTWALK_G6_PRECISION", "ds", 1);
    ASSERT_EQ(g6_open(1), 0);
    std::vector<G6JParticle> j = makeJ(true, 2048, 23);
    IBlock b                   = makeI(j, 256, 5, 0.125, 0.01);
    ASSERT_EQ(g6_set_ti(1, 0.125), 0);
    for (size_t a = 0; a < j.size(); ++a)
    {
        G6JParticle& p = j[a];
        ASSERT_EQ(g6_set_j_particle(1, int(a), p.index, p.t, 0, p.mass, p.k18, p.j6, p.a2, p.v, p.x), 0);
    }
    Forces f(256);
    auto x = reinterpret_cast<double(*)[3]>(b.x.data());
    auto v = reinterpret_cast<double(*)[3]>(b.v.data());
    g6calc_firsthalf(1, 2048, 256, b.index.data(), x, v, nullptr, nullptr, nullptr, 1e-4, b.h2.data());
    G6Outputs out = f.outputs();
    ASSERT_EQ(g6calc_lasthalf2(1, 2048, 256, b.index.data(), x, v, 1e-4, b.h2.data(), out.acc, out.jerk, out.pot,
                               out.nearest),
              0);
    G6Cpu cpu;
    Forces ref = run(cpu, j, b, 1e-4);
    EXPECT_LE(percentile(vectorErrors(f.acc, ref.acc), 0.5), 1e-6);
    ASSERT_EQ(g6_read_neighbour_list(1), 0);
    std::vector<int64_t> off;
    std::vector<int32_t> list;
    cpu.neighbourLists(off, list);
    std::vector<int> got(2048);
    int nblen = 0;
    ASSERT_EQ(g6_get_neighbour_list(1, 10, 2048, &nblen, got.data()), 0);
    EXPECT_EQ(nblen, int(off[11] - off[10]));
    EXPECT_EQ(g6_close(1), 0);
    unsetenv("OCTWALK_G6_BACKEND");
    unsetenv("OCTWALK_G6_PRECISION");
}

} // namespace
} // namespace octwalk
