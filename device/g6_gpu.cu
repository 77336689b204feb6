// The device backend of libg6 (twin: host/cpu/g6_cpu.cpp).
//
// Data on the device: the j-particles as set (G6JParticle, address order), their prediction to the
// current time in double (position + mass, velocity + index) and, for the double-single kernel, the
// same as float hi/lo parts. Per force calculation: the i-block, one partial sum per (j-slice,
// i-particle), the reduced result.
//
// The force kernel splits the j-range into slices (blockIdx.y) so that even a block of a few hundred
// i-particles fills every SM (kirin's fix); a second kernel adds the slices' partial sums in slice
// order, so results are bit-identical from run to run (no atomics). Inside a block, JL adjacent lanes
// share NI i-particles per thread and take every JL-th j-particle of a shared-memory tile; their sums
// meet by warp shuffles (Miki's synchronisation-free accumulation). In double-single, a tile's float
// sums are folded into double accumulators after every tile.
#include "device/g6_gpu.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "common/errors.h"
#include "common/hermite.h"
#include "device/cuda_check.cuh"
#include "device/device_buffer.cuh"
#include "device/j_split.h"

namespace octwalk {

namespace {

/// Threads per block of the force kernel, and j-particles per shared tile.
constexpr int kForceBlock = 128;
/// Threads per block of the prediction, upload, reduction and neighbour kernels.
constexpr int kSmallBlock = 128;
/// The shortest j-slice worth a block of its own.
constexpr int kMinSliceLength = 256;
/// Neighbour list room per i-particle before the first calculation grows it.
constexpr int kInitialNeighbourCapacity = 256;

static_assert(kForceBlock % 32 == 0, "the force block is whole warps");

/// Four doubles, 32-byte aligned (CUDA 13 deprecates double4 for its ambiguous alignment).
struct alignas(32) D4
{
    double x, y, z, w;
};

/// One slice's sums for one i-particle.
struct G6Partial
{
    double acc[3], jerk[3], pot;
    double nearestD2;
    int nearestAddress; ///< -1: no other j-particle in the slice
};

/// The reduced result of one i-particle.
struct G6Result
{
    double acc[3], jerk[3], pot;
    int nearestIndex;
};

/// Double-single kernel: j as float hi (x, y, z, mass), lo (x, y, z, index bits), velocity.
struct DsMode
{
    using Real = float;
    struct J
    {
        float4 hi, lo, vel;
    };
    struct I
    {
        DsCoord x[3];
        float v[3];
    };
};

/// Double kernel: j as (x, y, z, mass) and (vx, vy, vz, index) in double.
struct DoubleMode
{
    using Real = double;
    struct J
    {
        D4 pos, vel;
    };
    struct I
    {
        double x[3], v[3];
    };
};

struct ForceArgs
{
    const D4* predPos; ///< x, y, z, mass
    const D4* predVel; ///< vx, vy, vz, index
    const float4* hi;  ///< double-single parts (DsMode only)
    const float4* lo;
    const float4* velF;
    const double* ix; ///< 3 per i-particle
    const double* iv;
    const int* iIndex;
    int ni, nj, sliceLength;
    double eps2;
    G6Partial* partial; ///< [slice][i]
};

__device__ inline DsMode::J loadJ(DsMode, const ForceArgs& a, int address)
{
    return {a.hi[address], a.lo[address], a.velF[address]};
}

__device__ inline DoubleMode::J loadJ(DoubleMode, const ForceArgs& a, int address)
{
    return {a.predPos[address], a.predVel[address]};
}

__device__ inline void loadI(DsMode::I& i, const ForceArgs& a, int t)
{
    for (int k = 0; k < 3; ++k)
    {
        i.x[k] = splitDs(a.ix[3 * t + k]);
        i.v[k] = float(a.iv[3 * t + k]);
    }
}

__device__ inline void loadI(DoubleMode::I& i, const ForceArgs& a, int t)
{
    for (int k = 0; k < 3; ++k)
    {
        i.x[k] = a.ix[3 * t + k];
        i.v[k] = a.iv[3 * t + k];
    }
}

__device__ inline int indexOf(const DsMode::J& j) { return __float_as_int(j.lo.w); }

__device__ inline int indexOf(const DoubleMode::J& j) { return int(j.vel.w); }

/// Adds j to s (nothing when j is i itself); returns the unsoftened |d|^2.
__device__ inline float interact(const DsMode::J& j, const DsMode::I& i, bool self, float eps2, HermiteSums<float>& s)
{
    return hermitePair(coordDifference(DsCoord{j.hi.x, j.lo.x}, i.x[0]),
                       coordDifference(DsCoord{j.hi.y, j.lo.y}, i.x[1]),
                       coordDifference(DsCoord{j.hi.z, j.lo.z}, i.x[2]), j.vel.x - i.v[0], j.vel.y - i.v[1],
                       j.vel.z - i.v[2], self ? 0.0f : j.hi.w, eps2, s);
}

__device__ inline double interact(const DoubleMode::J& j, const DoubleMode::I& i, bool self, double eps2,
                                  HermiteSums<double>& s)
{
    return hermitePair(coordDifference(j.pos.x, i.x[0]), coordDifference(j.pos.y, i.x[1]),
                       coordDifference(j.pos.z, i.x[2]), j.vel.x - i.v[0], j.vel.y - i.v[1], j.vel.z - i.v[2],
                       self ? 0.0 : j.pos.w, eps2, s);
}

template<class T>
__device__ inline void addSums(HermiteSums<double>& to, const HermiteSums<T>& from)
{
    to.ax += from.ax;
    to.ay += from.ay;
    to.az += from.az;
    to.jx += from.jx;
    to.jy += from.jy;
    to.jz += from.jz;
    to.pot += from.pot;
}

/// The nearer of two candidates; equal distances go to the lower address (the CPU twin's order).
__device__ inline void keepNearer(double& d2, int& address, double otherD2, int otherAddress)
{
    if (otherAddress < 0) return;
    if (address < 0 || otherD2 < d2 || (otherD2 == d2 && otherAddress < address))
    {
        d2      = otherD2;
        address = otherAddress;
    }
}

/// Sums of the JL lanes of an i-group, by butterfly shuffles: every lane ends with the same bits.
template<int JL>
__device__ inline void reduceLanes(HermiteSums<double>& s, double& nearestD2, int& nearestAddress)
{
    for (int offset = JL / 2; offset > 0; offset /= 2)
    {
        s.ax += __shfl_xor_sync(0xffffffffu, s.ax, offset);
        s.ay += __shfl_xor_sync(0xffffffffu, s.ay, offset);
        s.az += __shfl_xor_sync(0xffffffffu, s.az, offset);
        s.jx += __shfl_xor_sync(0xffffffffu, s.jx, offset);
        s.jy += __shfl_xor_sync(0xffffffffu, s.jy, offset);
        s.jz += __shfl_xor_sync(0xffffffffu, s.jz, offset);
        s.pot += __shfl_xor_sync(0xffffffffu, s.pot, offset);
        double otherD2   = __shfl_xor_sync(0xffffffffu, nearestD2, offset);
        int otherAddress = __shfl_xor_sync(0xffffffffu, nearestAddress, offset);
        keepNearer(nearestD2, nearestAddress, otherD2, otherAddress);
    }
}

/// Partial sums of the i-particles of this block (blockIdx.x) from the j-slice blockIdx.y.
/// Thread layout: lane = iThread * JL + jLane; thread holds NI i-particles, strided by the block's
/// i-threads so that their loads coalesce.
template<class Mode, int NI, int JL>
__global__ void __launch_bounds__(kForceBlock) g6ForceKernel(ForceArgs a)
{
    using Real = typename Mode::Real;
    static_assert(JL >= 1 && JL <= 32 && (JL & (JL - 1)) == 0, "JL lanes are a power of two within a warp");
    constexpr int kIThreads = kForceBlock / JL;
    __shared__ typename Mode::J tile[kForceBlock];

    const int jLane   = int(threadIdx.x) % JL;
    const int iThread = int(threadIdx.x) / JL;
    const int iBase   = int(blockIdx.x) * kIThreads * NI + iThread;

    typename Mode::I in[NI];
    int myIndex[NI];
    HermiteSums<double> sum[NI];
    double nearestD2[NI];
    int nearestAddress[NI];
    for (int n = 0; n < NI; ++n)
    {
        int t = min(iBase + n * kIThreads, a.ni - 1);
        loadI(in[n], a, t);
        myIndex[n]        = a.iIndex[t];
        nearestD2[n]      = 0;
        nearestAddress[n] = -1;
    }
    const Real eps2 = Real(a.eps2);

    const int jBegin = int(blockIdx.y) * a.sliceLength;
    const int jEnd   = min(a.nj, jBegin + a.sliceLength);
    for (int tileStart = jBegin; tileStart < jEnd; tileStart += kForceBlock)
    {
        const int count = min(kForceBlock, jEnd - tileStart);
        if (int(threadIdx.x) < count) tile[threadIdx.x] = loadJ(Mode{}, a, tileStart + int(threadIdx.x));
        __syncthreads();
        HermiteSums<Real> part[NI];
        Real best[NI];
        int bestK[NI];
        for (int n = 0; n < NI; ++n) bestK[n] = -1;
        for (int k = jLane; k < count; k += JL)
        {
            const typename Mode::J j = tile[k];
            const int jIndex         = indexOf(j);
            for (int n = 0; n < NI; ++n)
            {
                bool self = jIndex == myIndex[n];
                Real d2   = interact(j, in[n], self, eps2, part[n]);
                if (!self && (bestK[n] < 0 || d2 < best[n]))
                {
                    best[n]  = d2;
                    bestK[n] = k;
                }
            }
        }
        for (int n = 0; n < NI; ++n)
        {
            addSums(sum[n], part[n]);
            if (bestK[n] >= 0) keepNearer(nearestD2[n], nearestAddress[n], double(best[n]), tileStart + bestK[n]);
        }
        __syncthreads();
    }

    for (int n = 0; n < NI; ++n)
    {
        reduceLanes<JL>(sum[n], nearestD2[n], nearestAddress[n]);
        const int t = iBase + n * kIThreads;
        if (jLane == 0 && t < a.ni)
        {
            G6Partial& p     = a.partial[size_t(blockIdx.y) * size_t(a.ni) + size_t(t)];
            p.acc[0]         = sum[n].ax;
            p.acc[1]         = sum[n].ay;
            p.acc[2]         = sum[n].az;
            p.jerk[0]        = sum[n].jx;
            p.jerk[1]        = sum[n].jy;
            p.jerk[2]        = sum[n].jz;
            p.pot            = sum[n].pot;
            p.nearestD2      = nearestD2[n];
            p.nearestAddress = nearestAddress[n];
        }
    }
}

/// Adds the slices' partial sums of each i-particle in slice order.
__global__ void g6ReduceKernel(const G6Partial* __restrict__ partial, int slices, int ni,
                               const D4* __restrict__ predVel, G6Result* __restrict__ result)
{
    const int t = int(blockIdx.x) * kSmallBlock + int(threadIdx.x);
    if (t >= ni) return;
    G6Result r{};
    double nearestD2   = 0;
    int nearestAddress = -1;
    for (int s = 0; s < slices; ++s)
    {
        const G6Partial& p = partial[size_t(s) * size_t(ni) + size_t(t)];
        for (int k = 0; k < 3; ++k)
        {
            r.acc[k] += p.acc[k];
            r.jerk[k] += p.jerk[k];
        }
        r.pot += p.pot;
        keepNearer(nearestD2, nearestAddress, p.nearestD2, p.nearestAddress);
    }
    r.nearestIndex = nearestAddress >= 0 ? int(predVel[nearestAddress].w) : -1;
    result[t]      = r;
}

/// Writes the staged j-particles to their addresses.
__global__ void g6ScatterKernel(const G6JParticle* __restrict__ staged, const int* __restrict__ address, int count,
                                G6JParticle* __restrict__ j)
{
    const int s = int(blockIdx.x) * kSmallBlock + int(threadIdx.x);
    if (s < count) j[address[s]] = staged[s];
}

/// Predicts j-particles [0, nj) to ti (common/hermite.h, double, no FMA) and stores them for the kernels.
__global__ void g6PredictKernel(const G6JParticle* __restrict__ j, int nj, double ti, bool doubleSingle,
                                D4* __restrict__ predPos, D4* __restrict__ predVel, float4* __restrict__ hi,
                                float4* __restrict__ lo, float4* __restrict__ velF)
{
    const int a = int(blockIdx.x) * kSmallBlock + int(threadIdx.x);
    if (a >= nj) return;
    const G6JParticle& p = j[a];
    const double dt      = ti - p.t;
    double x[3], v[3];
    for (int k = 0; k < 3; ++k) predictCoordinate(dt, p.x[k], p.v[k], p.a2[k], p.j6[k], p.k18[k], x[k], v[k]);
    predPos[a] = D4{x[0], x[1], x[2], p.mass};
    predVel[a] = D4{v[0], v[1], v[2], double(p.index)};
    if (!doubleSingle) return;
    DsCoord cx = splitDs(x[0]), cy = splitDs(x[1]), cz = splitDs(x[2]);
    hi[a]   = make_float4(cx.hi, cy.hi, cz.hi, float(p.mass));
    lo[a]   = make_float4(cx.lo, cy.lo, cz.lo, __int_as_float(p.index));
    velF[a] = make_float4(float(v[0]), float(v[1]), float(v[2]), 0.0f);
}

/// Neighbour lists, one warp per i-particle, in address order: the warp tests 32 consecutive
/// j-particles at a time and appends the hits by ballot. Counts continue past the capacity, so the
/// caller learns the length it needs. Distances in double without FMA, as the CPU twin's.
__global__ void g6NeighbourKernel(const D4* __restrict__ predPos, const D4* __restrict__ predVel, int nj,
                                  const double* __restrict__ ix, const int* __restrict__ iIndex,
                                  const double* __restrict__ h2, int ni, int capacity, int* __restrict__ counts,
                                  int* __restrict__ lists)
{
    const int warp = (int(blockIdx.x) * kSmallBlock + int(threadIdx.x)) / 32;
    const int lane = int(threadIdx.x) % 32;
    if (warp >= ni) return; // whole warps leave together
    const double xi[3] = {ix[3 * warp], ix[3 * warp + 1], ix[3 * warp + 2]};
    const int self     = iIndex[warp];
    const double r2    = h2[warp];
    int count          = 0;
    for (int base = 0; base < nj; base += 32)
    {
        const int a = base + lane;
        bool hit    = false;
        int index   = -1;
        if (a < nj)
        {
            const D4 p         = predPos[a];
            const double xj[3] = {p.x, p.y, p.z};
            index              = int(predVel[a].w);
            hit                = index != self && distance2NoFma(xj, xi) < r2;
        }
        const unsigned mask = __ballot_sync(0xffffffffu, hit);
        const int slot      = count + __popc(mask & ((1u << lane) - 1u));
        if (hit && slot < capacity) lists[size_t(warp) * size_t(capacity) + size_t(slot)] = index;
        count += __popc(mask);
    }
    if (lane == 0) counts[warp] = count;
}

int smCount()
{
    int device = 0, count = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device));
    return count;
}

} // namespace

bool g6GpuAvailable()
{
    int count       = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess)
    {
        cudaGetLastError();
        return false;
    }
    return count > 0;
}

struct G6Gpu::Impl
{
    explicit Impl(G6Precision p) : precision(p), sms(smCount()) {}

    G6Precision precision;
    int sms;
    Stream stream;
    Event start, predicted, launched, reduced, done;

    // j-particles: a host mirror (a growth of the device arrays re-uploads from it) and the dirty addresses.
    int capacity = 0, setCount = 0;
    std::vector<G6JParticle> hostJ;
    std::vector<char> isDirty;
    std::vector<int> dirty;
    DeviceBuffer<G6JParticle> dJ{"g6 j-particles"};
    DeviceBuffer<D4> dPredPos{"g6 predicted positions"}, dPredVel{"g6 predicted velocities"};
    DeviceBuffer<float4> dHi{"g6 ds hi"}, dLo{"g6 ds lo"}, dVelF{"g6 ds velocities"};
    PinnedBuffer<G6JParticle> stagedJ{"g6 staged j-particles"};
    PinnedBuffer<int> stagedAddress{"g6 staged addresses"};
    DeviceBuffer<G6JParticle> dStagedJ{"g6 staged j-particles"};
    DeviceBuffer<int> dStagedAddress{"g6 staged addresses"};

    double ti = 0, predictedTime = 0;
    int predictedCount   = 0;
    bool predictionStale = true;

    // The i-block and its results.
    int ni = 0, nj = 0;
    PinnedBuffer<double> stagedI{"g6 staged i-particles"};
    PinnedBuffer<int> stagedIIndex{"g6 staged i indices"};
    DeviceBuffer<double> dI{"g6 i-particles"}; ///< x (3 ni), v (3 ni), h2 (ni)
    DeviceBuffer<int> dIIndex{"g6 i indices"};
    DeviceBuffer<G6Partial> dPartial{"g6 partial sums"};
    DeviceBuffer<G6Result> dResult{"g6 results"};
    PinnedBuffer<G6Result> result{"g6 results"};

    int neighbourCapacity = kInitialNeighbourCapacity;
    DeviceBuffer<int> dCounts{"g6 neighbour counts"}, dLists{"g6 neighbour lists"};

    void upload();
    void predict();
    void launchForces(double eps2);
};

void G6Gpu::Impl::upload()
{
    if (dirty.empty()) return;
    // The staging may still feed the previous upload's copy.
    stream.synchronize();
    const int count = int(dirty.size());
    stagedJ.reserve(size_t(count));
    stagedAddress.reserve(size_t(count));
    dStagedJ.reserve(size_t(count));
    dStagedAddress.reserve(size_t(count));
    for (int s = 0; s < count; ++s)
    {
        stagedJ.data()[s]                 = hostJ[size_t(dirty[size_t(s)])];
        stagedAddress.data()[s]           = dirty[size_t(s)];
        isDirty[size_t(dirty[size_t(s)])] = 0;
    }
    CUDA_CHECK(cudaMemcpyAsync(dStagedJ.data(), stagedJ.data(), size_t(count) * sizeof(G6JParticle),
                               cudaMemcpyHostToDevice, stream.get()));
    CUDA_CHECK(cudaMemcpyAsync(dStagedAddress.data(), stagedAddress.data(), size_t(count) * sizeof(int),
                               cudaMemcpyHostToDevice, stream.get()));
    g6ScatterKernel<<<(count + kSmallBlock - 1) / kSmallBlock, kSmallBlock, 0, stream.get()>>>(
        dStagedJ.data(), dStagedAddress.data(), count, dJ.data());
    CUDA_CHECK_LAUNCH();
    dirty.clear();
    predictionStale = true;
}

void G6Gpu::Impl::predict()
{
    if (!predictionStale && predictedTime == ti && nj <= predictedCount) return;
    if (nj > 0)
    {
        g6PredictKernel<<<(nj + kSmallBlock - 1) / kSmallBlock, kSmallBlock, 0, stream.get()>>>(
            dJ.data(), nj, ti, precision == G6Precision::DoubleSingle, dPredPos.data(), dPredVel.data(), dHi.data(),
            dLo.data(), dVelF.data());
        CUDA_CHECK_LAUNCH();
    }
    predictedTime   = ti;
    predictedCount  = nj;
    predictionStale = false;
}

/// One configuration per block size: many i-particles take 2 per thread and a lane each; a few
/// hundred take 4 lanes per i-group, so a block covers 64 i-particles and the j-range splits finer.
/// Returns the number of slices launched.
template<class Mode, int NI, int JL>
int launchForceKernel(ForceArgs args, int sms, DeviceBuffer<G6Partial>& partial, cudaStream_t stream)
{
    constexpr int iPerBlock = kForceBlock / JL * NI;
    static const int perSm  = [] {
        int blocks = 0;
        CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, g6ForceKernel<Mode, NI, JL>, kForceBlock, 0));
        return std::max(blocks, 1);
    }();
    const int blocksX = (args.ni + iPerBlock - 1) / iPerBlock;
    const int slices  = sliceCount(blocksX, int64_t(perSm) * sms, args.nj, kMinSliceLength);
    partial.reserve(size_t(slices) * size_t(args.ni));
    args.partial     = partial.data();
    args.sliceLength = std::max(1, (args.nj + slices - 1) / slices);
    g6ForceKernel<Mode, NI, JL><<<dim3(unsigned(blocksX), unsigned(slices)), kForceBlock, 0, stream>>>(args);
    CUDA_CHECK_LAUNCH();
    return slices;
}

void G6Gpu::Impl::launchForces(double eps2)
{
    ForceArgs args{dPredPos.data(),
                   dPredVel.data(),
                   dHi.data(),
                   dLo.data(),
                   dVelF.data(),
                   dI.data(),
                   dI.data() + 3 * size_t(ni),
                   dIIndex.data(),
                   ni,
                   nj,
                   0,
                   eps2,
                   nullptr};
    const bool few   = ni <= 512;
    const bool ds    = precision == G6Precision::DoubleSingle;
    cudaStream_t st  = stream.get();
    const int slices = ds ? (few ? launchForceKernel<DsMode, 2, 4>(args, sms, dPartial, st)
                                 : launchForceKernel<DsMode, 2, 1>(args, sms, dPartial, st))
                          : (few ? launchForceKernel<DoubleMode, 2, 4>(args, sms, dPartial, st)
                                 : launchForceKernel<DoubleMode, 2, 1>(args, sms, dPartial, st));
    g6ReduceKernel<<<(ni + kSmallBlock - 1) / kSmallBlock, kSmallBlock, 0, st>>>(dPartial.data(), slices, ni,
                                                                                 dPredVel.data(), dResult.data());
    CUDA_CHECK_LAUNCH();
}

G6Gpu::G6Gpu(G6Precision precision)
{
    if (!g6GpuAvailable()) throw BackendError("libg6: no CUDA device available");
    impl_ = std::make_unique<Impl>(precision);
}

G6Gpu::~G6Gpu() = default;

void G6Gpu::reserve(int count)
{
    Impl& m = *impl_;
    if (count <= m.capacity) return;
    m.stream.synchronize();
    m.hostJ.resize(size_t(count), G6JParticle{});
    m.isDirty.resize(size_t(count), 0);
    const bool moved = size_t(count) > m.dJ.capacity();
    m.dJ.reserve(size_t(count));
    m.dPredPos.reserve(size_t(count));
    m.dPredVel.reserve(size_t(count));
    if (m.precision == G6Precision::DoubleSingle)
    {
        m.dHi.reserve(size_t(count));
        m.dLo.reserve(size_t(count));
        m.dVelF.reserve(size_t(count));
    }
    m.capacity = count;
    if (!moved) return;
    // New device arrays: everything set so far goes up again, and is predicted again.
    for (int a = 0; a < m.setCount; ++a)
        if (!m.isDirty[size_t(a)])
        {
            m.isDirty[size_t(a)] = 1;
            m.dirty.push_back(a);
        }
    m.predictionStale = true;
}

void G6Gpu::setJParticle(int address, const G6JParticle& p)
{
    Impl& m                  = *impl_;
    m.hostJ[size_t(address)] = p;
    if (!m.isDirty[size_t(address)])
    {
        m.isDirty[size_t(address)] = 1;
        m.dirty.push_back(address);
    }
    m.setCount = std::max(m.setCount, address + 1);
}

void G6Gpu::setTime(double ti) { impl_->ti = ti; }

void G6Gpu::flush() { impl_->upload(); }

void G6Gpu::startForces(const G6IBlock& block)
{
    Impl& m = *impl_;
    // The i-block is staged before anything is queued, so the device never waits for the host's copy:
    // the pinned staging of the previous block may still be read by its copy until the stream is idle.
    m.stream.synchronize();
    const size_t ni = size_t(block.ni);
    if (ni > 0)
    {
        m.stagedI.reserve(7 * ni);
        m.stagedIIndex.reserve(ni);
        m.dI.reserve(7 * ni);
        m.dIIndex.reserve(ni);
        m.dResult.reserve(ni);
        m.result.reserve(ni);
        double* staged = m.stagedI.data();
        std::memcpy(staged, &block.x[0][0], 3 * ni * sizeof(double));
        std::memcpy(staged + 3 * ni, &block.v[0][0], 3 * ni * sizeof(double));
        std::memcpy(staged + 6 * ni, block.h2, ni * sizeof(double));
        std::memcpy(m.stagedIIndex.data(), block.index, ni * sizeof(int));
    }
    m.start.record(m.stream);
    m.nj = block.nj;
    m.upload();
    m.predict();
    m.predicted.record(m.stream);
    m.ni = block.ni;
    if (m.ni == 0)
    {
        m.launched.record(m.stream);
        m.reduced.record(m.stream);
        m.done.record(m.stream);
        return;
    }
    CUDA_CHECK(cudaMemcpyAsync(m.dI.data(), m.stagedI.data(), 7 * ni * sizeof(double), cudaMemcpyHostToDevice,
                               m.stream.get()));
    CUDA_CHECK(cudaMemcpyAsync(m.dIIndex.data(), m.stagedIIndex.data(), ni * sizeof(int), cudaMemcpyHostToDevice,
                               m.stream.get()));
    m.launched.record(m.stream);
    m.launchForces(block.eps2);
    m.reduced.record(m.stream);
    CUDA_CHECK(cudaMemcpyAsync(m.result.data(), m.dResult.data(), ni * sizeof(G6Result), cudaMemcpyDeviceToHost,
                               m.stream.get()));
    m.done.record(m.stream);
}

void G6Gpu::finishForces(const G6Outputs& out)
{
    Impl& m = *impl_;
    m.stream.synchronize();
    for (int i = 0; i < m.ni; ++i)
    {
        const G6Result& r = m.result.data()[i];
        for (int k = 0; k < 3; ++k)
        {
            out.acc[i][k]  = r.acc[k];
            out.jerk[i][k] = r.jerk[k];
        }
        out.pot[i] = r.pot;
        if (out.nearest) out.nearest[i] = r.nearestIndex;
    }
}

void G6Gpu::neighbourLists(std::vector<int64_t>& offset, std::vector<int32_t>& list)
{
    Impl& m      = *impl_;
    const int ni = m.ni;
    offset.assign(size_t(ni) + 1, 0);
    list.clear();
    if (ni == 0) return;
    std::vector<int> counts(static_cast<size_t>(ni));
    const int warpsPerBlock = kSmallBlock / 32;
    for (;;)
    {
        m.dCounts.reserve(size_t(ni));
        m.dLists.reserve(size_t(ni) * size_t(m.neighbourCapacity));
        g6NeighbourKernel<<<(ni + warpsPerBlock - 1) / warpsPerBlock, kSmallBlock, 0, m.stream.get()>>>(
            m.dPredPos.data(), m.dPredVel.data(), m.nj, m.dI.data(), m.dIIndex.data(), m.dI.data() + 6 * size_t(ni), ni,
            m.neighbourCapacity, m.dCounts.data(), m.dLists.data());
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpyAsync(counts.data(), m.dCounts.data(), size_t(ni) * sizeof(int), cudaMemcpyDeviceToHost,
                                   m.stream.get()));
        m.stream.synchronize();
        const int longest = *std::max_element(counts.begin(), counts.end());
        if (longest <= m.neighbourCapacity) break;
        m.neighbourCapacity = longest;
    }
    std::vector<int> lists(size_t(ni) * size_t(m.neighbourCapacity));
    CUDA_CHECK(cudaMemcpy(lists.data(), m.dLists.data(), lists.size() * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < ni; ++i)
    {
        offset[size_t(i) + 1] = offset[size_t(i)] + counts[size_t(i)];
        const int* begin      = lists.data() + size_t(i) * size_t(m.neighbourCapacity);
        list.insert(list.end(), begin, begin + counts[size_t(i)]);
    }
}

G6GpuTimes G6Gpu::lastTimes() const
{
    Impl& m = *impl_;
    m.stream.synchronize();
    return {elapsedSeconds(m.start, m.predicted), elapsedSeconds(m.launched, m.reduced),
            elapsedSeconds(m.predicted, m.launched) + elapsedSeconds(m.reduced, m.done)};
}

} // namespace octwalk
