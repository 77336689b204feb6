// libg6's force calculation: force + jerk + potential in GFLOP/s at the customary 60 flops per
// interaction, for blocks of ni = 256, 1024 and 16384 i-particles against nj = 2^14..2^20 j-particles
// (Plummer, eps = 1/256), on the device in both precisions (manual time = CUDA-event time of the
// i-block upload, force and reduction kernels and the result download; j-particles resident and
// predicted, as in a Hermite step after the first) and on the CPU twin (wall time, small sizes).
// Run on a machine with an NVIDIA GPU: build/benchmarks/octwalk_bench_g6 --benchmark_out=g6.json
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "bench_common.h"
#include "common/hermite.h"
#include "device/g6_gpu.h"
#include "host/cpu/g6_cpu.h"

using namespace octwalk;

namespace {

constexpr double kEps2 = 1.0 / 256 / 256;

/// The Plummer sphere of nj bodies as resident j-particles (no derivatives: the prediction is not timed).
std::vector<G6JParticle> jParticles(int64_t nj)
{
    const ParticleSet& set = bench::plummer(nj);
    std::vector<G6JParticle> j(static_cast<size_t>(nj));
    for (int64_t a = 0; a < nj; ++a)
    {
        G6JParticle& p = j[size_t(a)];
        p              = G6JParticle{};
        for (int k = 0; k < 3; ++k)
        {
            p.x[k] = (&set.pos[size_t(a)].x)[k];
            p.v[k] = (&set.vel[size_t(a)].x)[k];
        }
        p.mass  = set.mass[size_t(a)];
        p.index = int32_t(a);
    }
    return j;
}

/// The first ni of the j-particles as the i-block (ni <= nj in every case benchmarked).
struct IBlock
{
    std::vector<int> index;
    std::vector<double> x, v, h2;
};

IBlock iBlock(const std::vector<G6JParticle>& j, int ni)
{
    IBlock b;
    for (int i = 0; i < ni; ++i)
    {
        const G6JParticle& p = j[size_t(i) % j.size()];
        b.index.push_back(p.index);
        b.x.insert(b.x.end(), p.x, p.x + 3);
        b.v.insert(b.v.end(), p.v, p.v + 3);
        b.h2.push_back(0);
    }
    return b;
}

G6IBlock view(const IBlock& b, int nj)
{
    G6IBlock v;
    v.nj    = nj;
    v.ni    = int(b.index.size());
    v.index = b.index.data();
    v.x     = reinterpret_cast<const double(*)[3]>(b.x.data());
    v.v     = reinterpret_cast<const double(*)[3]>(b.v.data());
    v.h2    = b.h2.data();
    v.eps2  = kEps2;
    return v;
}

void setRates(benchmark::State& state, int ni, int64_t nj)
{
    double interactions      = double(ni) * double(nj);
    state.counters["GFLOPs"] = benchmark::Counter(kHermiteFlopsPerInteraction * interactions * 1e-9,
                                                  benchmark::Counter::kIsIterationInvariantRate);
    state.counters["interactions_per_s"] =
        benchmark::Counter(interactions, benchmark::Counter::kIsIterationInvariantRate);
}

/// range(0): 0 double-single, 1 double; range(1): ni; range(2): log2 nj.
void BM_G6Gpu(benchmark::State& state)
{
    if (!g6GpuAvailable())
    {
        state.SkipWithError("no GPU");
        return;
    }
    const G6Precision precision = state.range(0) == 0 ? G6Precision::DoubleSingle : G6Precision::Double;
    const int ni                = int(state.range(1));
    const int64_t nj            = int64_t(1) << state.range(2);
    std::vector<G6JParticle> j  = jParticles(nj);
    IBlock b                    = iBlock(j, ni);
    G6Gpu gpu(precision);
    gpu.reserve(int(nj));
    for (int64_t a = 0; a < nj; ++a) gpu.setJParticle(int(a), j[size_t(a)]);
    gpu.setTime(0);
    std::vector<double> acc(3 * size_t(ni)), jerk(3 * size_t(ni)), pot(static_cast<size_t>(ni));
    G6Outputs out{reinterpret_cast<double(*)[3]>(acc.data()), reinterpret_cast<double(*)[3]>(jerk.data()), pot.data(),
                  nullptr};
    gpu.startForces(view(b, int(nj))); // warm-up: upload, prediction, buffers, module load
    gpu.finishForces(out);
    double transfer = 0;
    for (auto _ : state)
    {
        gpu.startForces(view(b, int(nj)));
        gpu.finishForces(out);
        state.SetIterationTime(gpu.lastTimes().forceSeconds);
        transfer += gpu.lastTimes().transferSeconds;
    }
    setRates(state, ni, nj);
    // The i-block's upload and the results' download, which a client's call also waits for.
    state.counters["transfer_us"] = 1e6 * transfer / double(state.iterations());
}

/// range(0): ni; range(1): log2 nj. Wall time of startForces + finishForces.
void BM_G6Cpu(benchmark::State& state)
{
    const int ni               = int(state.range(0));
    const int64_t nj           = int64_t(1) << state.range(1);
    std::vector<G6JParticle> j = jParticles(nj);
    IBlock b                   = iBlock(j, ni);
    G6Cpu cpu;
    cpu.reserve(int(nj));
    for (int64_t a = 0; a < nj; ++a) cpu.setJParticle(int(a), j[size_t(a)]);
    cpu.setTime(0);
    std::vector<double> acc(3 * size_t(ni)), jerk(3 * size_t(ni)), pot(static_cast<size_t>(ni));
    G6Outputs out{reinterpret_cast<double(*)[3]>(acc.data()), reinterpret_cast<double(*)[3]>(jerk.data()), pot.data(),
                  nullptr};
    for (auto _ : state)
    {
        cpu.startForces(view(b, int(nj)));
        cpu.finishForces(out);
    }
    setRates(state, ni, nj);
}

void gpuCases(benchmark::internal::Benchmark* b)
{
    for (int precision : {0, 1})
        for (int ni : {256, 1024, 16384})
            for (int log2nj = 14; log2nj <= 20; ++log2nj) b->Args({precision, ni, log2nj});
}

} // namespace

BENCHMARK(BM_G6Gpu)->Apply(gpuCases)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_G6Cpu)
    ->Args({256, 14})
    ->Args({1024, 14})
    ->Args({256, 16})
    ->Args({1024, 16})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
