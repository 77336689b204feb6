#include "device/pm_gpu.h"

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_reduce.cuh>
#include <cufft.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/integrate.h"
#include "common/pm.h"
#include "common/treepm.h"
#include "device/device_buffer.cuh"

namespace octwalk {

namespace {

constexpr int kBlock = 256;

[[noreturn]] void throwCufftError(cufftResult status, const char* expr, int meshSize)
{
    throw BackendError(std::string("cuFFT error ") + std::to_string(int(status)) + " in `" + expr + "` for a " +
                       std::to_string(meshSize) + "^3 mesh");
}

#define CUFFT_CHECK(expr, meshSize)                                                                                    \
    do                                                                                                                 \
    {                                                                                                                  \
        const cufftResult status_ = (expr);                                                                            \
        if (status_ != CUFFT_SUCCESS) throwCufftError(status_, #expr, meshSize);                                       \
    } while (0)

/// A cuFFT plan whose work area the caller provides (setWorkArea before the first transform): the mesh's two plans
/// run one after the other on one stream and share one area, where cuFFT's own allocation gives each its own.
class FftPlan
{
public:
    FftPlan(int n, cufftType type, cudaStream_t stream)
    {
        CUFFT_CHECK(cufftCreate(&plan_), n);
        try
        {
            CUFFT_CHECK(cufftSetAutoAllocation(plan_, 0), n);
            CUFFT_CHECK(cufftMakePlan3d(plan_, n, n, n, type, &workBytes_), n);
            CUFFT_CHECK(cufftSetStream(plan_, stream), n);
        }
        catch (...)
        {
            cufftDestroy(plan_);
            throw;
        }
    }
    ~FftPlan() { cufftDestroy(plan_); }
    FftPlan(const FftPlan&)            = delete;
    FftPlan& operator=(const FftPlan&) = delete;
    cufftHandle get() const { return plan_; }
    size_t workBytes() const { return workBytes_; }
    void setWorkArea(void* area, int n) { CUFFT_CHECK(cufftSetWorkArea(plan_, area), n); }

private:
    cufftHandle plan_ = 0;
    size_t workBytes_ = 0;
};

unsigned blocksFor(int64_t count) { return unsigned((count + kBlock - 1) / kBlock); }

/// The fields a pass transforms back, in turn (interpolateKernel's components): the accelerations along x, y and z,
/// each from a copy of the spectrum, then the potential from the spectrum itself, which no later field needs.
constexpr int kFieldOrder[4] = {1, 2, 3, 0};

/// The first bad body (pmBodyIsBad) by atomicMin of its index, one atomic per block, and each block's sum of |mass|
/// over its good bodies (a block reduction: the same tree of additions every run), summed on the host in block order.
__global__ void checkKernel(const Vec3d* pos, const double* mass, int64_t n, double L, unsigned long long* firstBad,
                            double* blockAbsMass)
{
    using Reduce = cub::BlockReduce<double, kBlock>;
    __shared__ typename Reduce::TempStorage reduceStorage;
    __shared__ unsigned long long blockBad;
    if (threadIdx.x == 0) blockBad = ULLONG_MAX;
    __syncthreads();
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    double absMass  = 0;
    if (i < n)
    {
        if (pmBodyIsBad(pos[i], mass[i], L)) atomicMin(&blockBad, (unsigned long long)i);
        else absMass = fabs(mass[i]);
    }
    const double sum = Reduce(reduceStorage).Sum(absMass);
    __syncthreads();
    if (threadIdx.x == 0)
    {
        if (blockBad != ULLONG_MAX) atomicMin(firstBad, blockBad);
        blockAbsMass[blockIdx.x] = sum;
    }
}

/// Cells of the shared-memory tile in which a block of assignKernel first sums its bodies' shares (32 KB).
constexpr int kTileCells = 4096;

/// The smallest and largest first stencil cell of a block's bodies along each axis (block-wide; the caller
/// initialises lo and hi and synchronises before and after).
template<int Width>
__device__ void extendTile(const PmStencil<Width>& st, int* lo, int* hi)
{
    const int64_t first[3] = {st.x.cell[0], st.y.cell[0], st.z.cell[0]};
    for (int axis = 0; axis < 3; ++axis)
    {
        atomicMin(lo + axis, int(first[axis]));
        atomicMax(hi + axis, int(first[axis]));
    }
}

/// Each body's share of each cell, in the product order of the host mesh's assignment, scaled to fixed point. A
/// block's bodies are neighbours in the tree's order, so their stencils mostly overlap: where the box of their
/// cells fits in kTileCells, the shares are summed in shared memory and each cell of the tile reaches the mesh
/// with one atomic (256 bodies of a lattice with two cells between neighbours, 6912 TSC shares, fill about
/// 17 x 17 x 9 = 2601 cells; a halo's far fewer). A share outside the tile (a stencil wrapped across the box) and
/// every share of a block whose cells do not fit go to the mesh directly. The sums are integers, so the mesh is the
/// same bits either way.
template<int Width>
__global__ void __launch_bounds__(kBlock)
    assignKernel(const Vec3d* pos, const double* mass, int64_t n, double cellsPerLength, int64_t meshN, double toFixed,
                 unsigned long long* grid)
{
    __shared__ unsigned long long tile[kTileCells];
    __shared__ int lo[3], hi[3];
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (threadIdx.x < 3)
    {
        lo[threadIdx.x] = INT_MAX;
        hi[threadIdx.x] = INT_MIN;
    }
    __syncthreads();
    const bool active = i < n;
    PmStencil<Width> st{};
    if (active)
    {
        st = pmStencilOf<Width>(pos[i].x, pos[i].y, pos[i].z, cellsPerLength, meshN);
        extendTile(st, lo, hi);
    }
    __syncthreads();
    const int ex = hi[0] - lo[0] + Width, ey = hi[1] - lo[1] + Width, ez = hi[2] - lo[2] + Width;
    const bool tiled = int64_t(ex) * ey * ez <= kTileCells;
    if (tiled)
    {
        for (int c = threadIdx.x; c < ex * ey * ez; c += blockDim.x) tile[c] = 0;
    }
    __syncthreads();
    if (active)
    {
        const double m = mass[i];
        for (int k = 0; k < Width; ++k)
        {
            const double mx     = m * st.x.weight[k];
            const int lx        = int(st.x.cell[k]) - lo[0];
            const int64_t plane = st.x.cell[k] * meshN * meshN;
            for (int a = 0; a < Width; ++a)
            {
                const double my   = mx * st.y.weight[a];
                const int ly      = int(st.y.cell[a]) - lo[1];
                const int64_t row = plane + st.y.cell[a] * meshN;
                for (int c = 0; c < Width; ++c)
                {
                    const long long share = __double2ll_rn(my * st.z.weight[c] * toFixed);
                    const int lz          = int(st.z.cell[c]) - lo[2];
                    const bool inTile     = tiled && lx >= 0 && lx < ex && ly >= 0 && ly < ey && lz >= 0 && lz < ez;
                    if (inTile) atomicAdd(tile + (lx * ey + ly) * ez + lz, (unsigned long long)share);
                    else atomicAdd(grid + row + st.z.cell[c], (unsigned long long)share);
                }
            }
        }
    }
    __syncthreads();
    if (!tiled) return;
    for (int c = threadIdx.x; c < ex * ey * ez; c += blockDim.x)
    {
        const unsigned long long sum = tile[c];
        if (sum == 0) continue;
        const int64_t x = lo[0] + c / (ey * ez), y = lo[1] + (c / ez) % ey, z = lo[2] + c % ez;
        atomicAdd(grid + (x * meshN + y) * meshN + z, sum);
    }
}

/// The total |mass| in fixed point is at most 2^kFixedPointBits (fixedPointScale).
constexpr int kFixedPointBits = 61;

/// The fixed-point masses as the forward transform's single-precision input, in units of 2^kFixedPointBits
/// fixed-point units (GpuMesh::Impl::fieldUnit, a power of two near the total |mass|): at most 2 in magnitude whatever
/// the mass unit, where the masses themselves could pass a float's range. Powers of two scale every operation of the
/// transforms exactly, so the forces are those of the masses themselves in single precision, bit for bit.
__global__ void toFloatKernel(const unsigned long long* grid, int64_t cells, float* field)
{
    const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (c >= cells) return;
    field[c] = float(double((long long)grid[c]) * (1.0 / double(1ull << kFixedPointBits)));
}

/// phi(k) = the masses' spectrum times pmModeFactor, as the host mesh's applyGreensFunction.
__global__ void greenKernel(cufftComplex* spectrum, int64_t n, const double* k, const double* axisFactor, double scale)
{
    const int64_t half = n / 2 + 1, modes = n * n * half;
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= modes) return;
    const int64_t l = idx % half, j = (idx / half) % n, i = idx / (half * n);
    const double kxy2 = k[i] * k[i] + k[j] * k[j];
    const double fxy  = scale * axisFactor[i] * axisFactor[j];
    const double f    = pmModeFactor(kxy2, fxy, k[l], axisFactor[l]);
    spectrum[idx].x   = float(double(spectrum[idx].x) * f);
    spectrum[idx].y   = float(double(spectrum[idx].y) * f);
}

/// The spectrum of the acceleration along axis component - 1 (component 1-3): -i k_axis phi, written into out for
/// the backward transform, which destroys its input (the potential's is phi itself, transformed last).
__global__ void componentKernel(const cufftComplex* phi, cufftComplex* out, int64_t n, const double* k, int component)
{
    const int64_t half = n / 2 + 1, modes = n * n * half;
    const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (idx >= modes) return;
    const cufftComplex value = phi[idx];
    const int64_t l = idx % half, j = (idx / half) % n, i = idx / (half * n);
    const int64_t index = component == 1 ? i : component == 2 ? j : l;
    const double slope  = pmSlope(index, n, k[index]);
    // (a + i b)(-i s) = b s - i a s
    out[idx] = {float(double(value.y) * slope), float(-double(value.x) * slope)};
}

/// The potential's two non-pair terms as interpolateKernel adds them: G M background (M the assigned total mass,
/// read on the device, so that no pass waits for it on the host) and self times the body's mass; none without
/// totalFixed. background() rounds as the host's G * (total / scale) * backgroundPerMass.
struct MeshTerms
{
    const long long* totalFixed = nullptr; ///< the assigned total in fixed point (device memory)
    double scale = 1, G = 0, backgroundPerMass = 0, self = 0;

    __device__ double background() const
    {
        return totalFixed ? G * (double(*totalFixed) / scale) * backgroundPerMass : 0.0;
    }
};

/// One field (component 0: the potential, 1-3: the acceleration along x, y, z) interpolated to each body with the
/// assignment's stencil, summed in the host mesh's order; with average, the mean of that sum and the value already
/// in pot or acc (the unshifted pass's), in the host mesh's order: (unshifted + shifted) / 2. The potential then
/// gets its two non-pair terms (none with an empty terms).
template<int Width>
__global__ void interpolateKernel(const Vec3d* pos, const double* mass, int64_t n, double cellsPerLength, int64_t meshN,
                                  const float* field, int component, MeshTerms terms, bool average, Vec3d* acc,
                                  double* pot)
{
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const Vec3d p             = pos[i];
    const PmStencil<Width> st = pmStencilOf<Width>(p.x, p.y, p.z, cellsPerLength, meshN);
    double sum                = 0;
    for (int a = 0; a < Width; ++a)
    {
        for (int b = 0; b < Width; ++b)
        {
            const int64_t row = (st.x.cell[a] * meshN + st.y.cell[b]) * meshN;
            const double wxy  = st.x.weight[a] * st.y.weight[b];
            for (int c = 0; c < Width; ++c) sum += wxy * st.z.weight[c] * double(field[row + st.z.cell[c]]);
        }
    }
    double& out = pmBodyField(component, acc[i], pot[i]);
    out         = average ? 0.5 * (out + sum) : sum;
    if (component == 0) out += terms.background() + terms.self * mass[i];
}

/// The bodies' places on the mesh shifted by half a cell (pmShiftedPosition), in place.
__global__ void shiftKernel(Vec3d* pos, int64_t n, double halfCell, double L)
{
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    pos[i] = pmShiftedPosition(pos[i], halfCell, L);
}

/// The positions of the device's own bodies as the mesh takes them: they drift out of the box between
/// re-wrappings, and wrapPosition keeps one already inside it as it is.
__global__ void wrapKernel(const Vec3d* in, int64_t n, double L, Vec3d* out)
{
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = wrapPosition(in[i], L);
}

__global__ void addMeshKernel(const Vec3d* acc, const double* pot, const int32_t* order, int64_t n, F4* results)
{
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const int64_t from = order ? order[i] : i;
    results[i]         = addMeshTerm(results[i], acc[from], pot[from]);
}

/// A body that addForcesOnDevice refused as the check saw it, for throwBadPmBody: each finite coordinate wrapped,
/// each other one as given (wrapping turns an infinity into a NaN).
Vec3d checkedPosition(Vec3d given, double L)
{
    const Vec3d wrapped = wrapPosition(given, L);
    auto pick           = [](double g, double w) { return std::isfinite(g) ? w : g; };
    return {pick(given.x, wrapped.x), pick(given.y, wrapped.y), pick(given.z, wrapped.z)};
}

} // namespace

struct GpuMesh::Impl
{
    double boxSize, splitScale, G;
    MassAssignment assignment;
    bool interlaced;
    int n;
    Stream stream;
    /// The passes' ends: the unshifted mesh's, and the shifted one's when interlaced; per pass, the spectrum's
    /// (the forward transform and the Green's function), then each field's transform and interpolation, in the
    /// order kFieldOrder.
    Event start, checked, stop;
    Event assigned[2], greened[2], transformed[2][4], interpolated[2][4];
    /// Where a caller's stream stands when addForcesOnDevice is called: the mesh's stream waits for it.
    Event callerReady;
    /// The addition to the results on the caller's stream (finishForcesOnDevice), after its wait for the mesh.
    Event addBegin;
    /// startForcesOnDevice's copies of the caller's positions and masses done.
    Event copied;
    /// The bodies of the mesh started and not yet added (startForcesOnDevice), 0 if none.
    int64_t started = 0;
    DeviceBuffer<double> k{"PM mesh wavenumbers"}, axisFactor{"PM mesh Green's function factors"};
    DeviceBuffer<Vec3d> pos{"PM mesh body positions"}, acc{"PM mesh accelerations"};
    DeviceBuffer<double> mass{"PM mesh body masses"}, pot{"PM mesh potentials"};
    DeviceBuffer<unsigned long long> grid{"PM mesh masses"}, firstBad{"PM mesh body check"};
    DeviceBuffer<double> blockAbsMass{"PM mesh blocks' |mass|"};
    std::vector<double> hostBlockAbsMass;
    DeviceBuffer<long long> totalFixed{"PM mesh total mass"};
    DeviceBuffer<unsigned char> reduceTemp{"PM mesh reduction storage"};
    /// The masses in single precision for the forward transform (toFloatKernel), then each field in turn,
    /// transformed back into it and interpolated before the next: one mesh where four side by side would take 3 n^3
    /// floats more.
    DeviceBuffer<float> field{"PM mesh field"};
    /// The mass one unit of field stands for (toFloatKernel), a power of two near the total |mass|: folded into the
    /// Green's function's scale, exactly.
    double fieldUnit = 1;
    /// The masses' spectrum times the Green's function, kept while each acceleration is transformed back from a
    /// copy in work (a backward transform destroys its input); the potential's, last, from phi itself.
    DeviceBuffer<cufftComplex> phi{"PM mesh potential spectrum"}, work{"PM mesh component spectrum"};
    std::unique_ptr<FftPlan> forward, backward;
    DeviceBuffer<unsigned char> fftWork{"cuFFT work area"};
    GpuMeshTimings timings;

    Impl(double L, int meshSize, double asmth, MassAssignment a, double g, bool interlace)
        : boxSize(L), splitScale(asmth * L / meshSize), G(g), assignment(a), interlaced(interlace),
          n(pmCheckedMeshSize(L, meshSize, asmth, g))
    {
        std::vector<double> hostK(static_cast<size_t>(n)), hostFactor(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i)
        {
            const PmAxisFactor f  = pmAxisFactor(i, n, boxSize, splitScale, assignment);
            hostK[size_t(i)]      = f.k;
            hostFactor[size_t(i)] = f.factor;
        }
        k.reserve(size_t(n));
        axisFactor.reserve(size_t(n));
        CUDA_CHECK(cudaMemcpy(k.data(), hostK.data(), sizeof(double) * size_t(n), cudaMemcpyHostToDevice));
        CUDA_CHECK(
            cudaMemcpy(axisFactor.data(), hostFactor.data(), sizeof(double) * size_t(n), cudaMemcpyHostToDevice));
        const int64_t cells = int64_t(n) * n * n, modes = int64_t(n) * n * (n / 2 + 1);
        grid.reserve(size_t(cells));
        field.reserve(size_t(cells));
        phi.reserve(size_t(modes));
        work.reserve(size_t(modes));
        firstBad.reserve(1);
        totalFixed.reserve(1);
        size_t bytes = 0;
        CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, bytes, reinterpret_cast<const long long*>(grid.data()),
                                          totalFixed.data(), cells, stream.get()));
        reduceTemp.reserve(bytes);
        forward  = std::make_unique<FftPlan>(n, CUFFT_R2C, stream.get());
        backward = std::make_unique<FftPlan>(n, CUFFT_C2R, stream.get());
        fftWork.reserve(std::max<size_t>({forward->workBytes(), backward->workBytes(), 1}));
        forward->setWorkArea(fftWork.data(), n);
        backward->setWorkArea(fftWork.data(), n);
    }

    /// Bytes of device memory held: the mesh's arrays, cuFFT's work area and the bodies' arrays.
    size_t deviceBytes() const
    {
        return k.capacity() * sizeof(double) + axisFactor.capacity() * sizeof(double) + pos.capacity() * sizeof(Vec3d) +
               acc.capacity() * sizeof(Vec3d) + mass.capacity() * sizeof(double) + pot.capacity() * sizeof(double) +
               grid.capacity() * sizeof(unsigned long long) + field.capacity() * sizeof(float) +
               firstBad.capacity() * sizeof(unsigned long long) + blockAbsMass.capacity() * sizeof(double) +
               totalFixed.capacity() * sizeof(long long) + reduceTemp.capacity() +
               (phi.capacity() + work.capacity()) * sizeof(cufftComplex) + fftWork.capacity();
    }

    /// Room for numBodies bodies in pos, acc and pot, and for their check (mass holds only the host's masses).
    void reserveBodies(int64_t numBodies)
    {
        pos.reserve(size_t(numBodies));
        acc.reserve(size_t(numBodies));
        pot.reserve(size_t(numBodies));
        const unsigned blocks = blocksFor(numBodies);
        blockAbsMass.reserve(blocks);
        hostBlockAbsMass.resize(blocks);
    }

    /// The first bad body (numBodies if none) of the positions in pos and the masses bodyMass, and the good
    /// bodies' total |mass|.
    std::pair<int64_t, double> check(const double* bodyMass, int64_t numBodies)
    {
        const unsigned blocks         = blocksFor(numBodies);
        cudaStream_t s                = stream.get();
        const unsigned long long none = ULLONG_MAX;
        CUDA_CHECK(cudaMemcpyAsync(firstBad.data(), &none, sizeof none, cudaMemcpyHostToDevice, s));
        checkKernel<<<blocks, kBlock, 0, s>>>(pos.data(), bodyMass, numBodies, boxSize, firstBad.data(),
                                              blockAbsMass.data());
        CUDA_CHECK_LAUNCH();
        unsigned long long bad = 0;
        CUDA_CHECK(cudaMemcpyAsync(&bad, firstBad.data(), sizeof bad, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaMemcpyAsync(hostBlockAbsMass.data(), blockAbsMass.data(), sizeof(double) * blocks,
                                   cudaMemcpyDeviceToHost, s));
        stream.synchronize();
        double total = 0;
        for (double b : hostBlockAbsMass) total += b;
        return {bad == ULLONG_MAX ? numBodies : int64_t(bad), total};
    }

    /// 2^e with totalAbsMass 2^e <= 2^kFixedPointBits: every cell's sum of rounded shares, and their total, stays
    /// below 2^62 (each share rounds by half a unit). A body of one 2^24th of the mass keeps 37 bits.
    static double fixedPointScale(double totalAbsMass)
    {
        if (!std::isfinite(totalAbsMass))
        {
            throw InputError("PM mesh: the bodies' total |mass| overflows a double (" + std::to_string(totalAbsMass) +
                             ")");
        }
        if (!(totalAbsMass > 0)) return 1.0;
        int exponent = 0;
        std::frexp(totalAbsMass, &exponent);
        // Masses below 2^-939 in all would need a scale beyond a double's range: their shares round to zero.
        return std::ldexp(1.0, std::min(kFixedPointBits - exponent, 1000));
    }

    template<int Width>
    void launchAssign(const double* bodyMass, int64_t numBodies, double toFixed)
    {
        assignKernel<Width><<<blocksFor(numBodies), kBlock, 0, stream.get()>>>(
            pos.data(), bodyMass, numBodies, double(n) / boxSize, n, toFixed, grid.data());
        CUDA_CHECK_LAUNCH();
    }

    template<int Width>
    void launchInterpolate(const double* bodyMass, int64_t numBodies, int component, const MeshTerms& terms,
                           bool average)
    {
        interpolateKernel<Width><<<blocksFor(numBodies), kBlock, 0, stream.get()>>>(
            pos.data(), bodyMass, numBodies, double(n) / boxSize, n, field.data(), component, terms, average,
            acc.data(), pot.data());
        CUDA_CHECK_LAUNCH();
    }

    /// Component `component` of the field in grid to the bodies (interpolateKernel).
    void interpolate(const double* bodyMass, int64_t numBodies, int component, const MeshTerms& terms, bool average)
    {
        if (assignment == MassAssignment::Cic) launchInterpolate<2>(bodyMass, numBodies, component, terms, average);
        else launchInterpolate<3>(bodyMass, numBodies, component, terms, average);
    }

    /// The masses on the mesh at the fixed point scale, with total their sum into totalFixed (exact, in any order),
    /// and the field from them (toFloatKernel), queued on the stream.
    void assign(const double* bodyMass, int64_t numBodies, double scale, bool total)
    {
        const int64_t cells = int64_t(n) * n * n;
        cudaStream_t s      = stream.get();
        CUDA_CHECK(cudaMemsetAsync(grid.data(), 0, sizeof(unsigned long long) * size_t(cells), s));
        if (assignment == MassAssignment::Cic) launchAssign<2>(bodyMass, numBodies, scale);
        else launchAssign<3>(bodyMass, numBodies, scale);
        if (total)
        {
            size_t bytes = reduceTemp.capacity();
            CUDA_CHECK(cub::DeviceReduce::Sum(reduceTemp.data(), bytes, reinterpret_cast<const long long*>(grid.data()),
                                              totalFixed.data(), cells, s));
        }
        toFloatKernel<<<blocksFor(cells), kBlock, 0, s>>>(grid.data(), cells, field.data());
        CUDA_CHECK_LAUNCH();
    }

    /// Pass `pass` from the masses in field: the three accelerations and the potential on the mesh (kFieldOrder),
    /// each transformed back into field and interpolated to the bodies before the next (interpolate's terms and
    /// average), queued on the stream.
    void solveAndInterpolate(int pass, const double* bodyMass, int64_t numBodies, const MeshTerms& terms, bool average)
    {
        const int64_t modes = int64_t(n) * n * (n / 2 + 1);
        cudaStream_t s      = stream.get();
        CUFFT_CHECK(cufftExecR2C(forward->get(), field.data(), phi.data()), n);
        const double scale = pmGreenScale(G, boxSize) * fieldUnit;
        greenKernel<<<blocksFor(modes), kBlock, 0, s>>>(phi.data(), n, k.data(), axisFactor.data(), scale);
        CUDA_CHECK_LAUNCH();
        greened[pass].record(stream);
        for (int f = 0; f < 4; ++f)
        {
            const int component = kFieldOrder[f];
            cufftComplex* input = phi.data();
            if (component != 0)
            {
                componentKernel<<<blocksFor(modes), kBlock, 0, s>>>(phi.data(), work.data(), n, k.data(), component);
                CUDA_CHECK_LAUNCH();
                input = work.data();
            }
            CUFFT_CHECK(cufftExecC2R(backward->get(), input, field.data()), n);
            transformed[pass][f].record(stream);
            interpolate(bodyMass, numBodies, component, terms, average);
            interpolated[pass][f].record(stream);
        }
    }

    /// The accelerations and potentials (G applied, both non-pair terms in the potential) of the bodies at the
    /// positions in pos with the masses bodyMass (device memory) into acc and pot, queued on the stream, with
    /// the events checked to interpolated; only the check waits for the device. Interlaced, the second pass
    /// shifts pos in place and averages (the host mesh's order: the non-pair terms after the mean). Returns the
    /// first bad body, leaving the rest undone, or numBodies.
    int64_t forces(const double* bodyMass, int64_t numBodies)
    {
        const auto [bad, totalAbsMass] = check(bodyMass, numBodies);
        if (bad != numBodies) return bad;
        checked.record(stream);
        const double scale = fixedPointScale(totalAbsMass);
        fieldUnit          = std::ldexp(1.0, kFixedPointBits) / scale;
        assign(bodyMass, numBodies, scale, true);
        assigned[0].record(stream);
        const MeshTerms terms{totalFixed.data(), scale, G, shortRangeBackgroundPotential(splitScale, boxSize),
                              G * shortRangeSelfPotential(splitScale)};
        if (!interlaced)
        {
            solveAndInterpolate(0, bodyMass, numBodies, terms, false);
            return numBodies;
        }
        solveAndInterpolate(0, bodyMass, numBodies, MeshTerms{}, false);
        shiftKernel<<<blocksFor(numBodies), kBlock, 0, stream.get()>>>(pos.data(), numBodies, 0.5 * boxSize / n,
                                                                       boxSize);
        CUDA_CHECK_LAUNCH();
        // The total is the first pass's: the shifted bodies are the same masses.
        assign(bodyMass, numBodies, scale, false);
        assigned[1].record(stream);
        solveAndInterpolate(1, bodyMass, numBodies, terms, true);
        return numBodies;
    }

    int passes() const { return interlaced ? 2 : 1; }

    /// Seconds of the last forces' assignment, transforms and interpolation, both passes' when interlaced.
    double assignSeconds() const
    {
        return elapsedSeconds(checked, assigned[0]) +
               (interlaced ? elapsedSeconds(interpolated[0][3], assigned[1]) : 0);
    }
    double solveSeconds() const
    {
        double seconds = 0;
        for (int pass = 0; pass < passes(); ++pass)
        {
            seconds += elapsedSeconds(assigned[pass], greened[pass]);
            for (int c = 0; c < 4; ++c)
            {
                seconds += elapsedSeconds(c == 0 ? greened[pass] : interpolated[pass][c - 1], transformed[pass][c]);
            }
        }
        return seconds;
    }
    double interpolateSeconds() const
    {
        double seconds = 0;
        for (int pass = 0; pass < passes(); ++pass)
        {
            for (int c = 0; c < 4; ++c) seconds += elapsedSeconds(transformed[pass][c], interpolated[pass][c]);
        }
        return seconds;
    }
    const Event& lastInterpolated() const { return interpolated[passes() - 1][3]; }
};

GpuMesh::GpuMesh(double boxSize, int meshSize, double asmth, MassAssignment assignment, double G, bool interlaced)
    : impl_(std::make_unique<Impl>(boxSize, meshSize, asmth, assignment, G, interlaced))
{}

GpuMesh::~GpuMesh() = default;

double GpuMesh::boxSize() const { return impl_->boxSize; }
int GpuMesh::meshSize() const { return impl_->n; }
double GpuMesh::splitScale() const { return impl_->splitScale; }
MassAssignment GpuMesh::assignment() const { return impl_->assignment; }
bool GpuMesh::interlaced() const { return impl_->interlaced; }
const GpuMeshTimings& GpuMesh::timings() const { return impl_->timings; }
GpuStream GpuMesh::stream() const { return {impl_->stream.get()}; }
size_t GpuMesh::deviceBytes() const { return impl_->deviceBytes(); }

void GpuMesh::computeForces(const Vec3d* pos, const double* mass, int64_t n, Vec3d* acc, double* pot)
{
    Impl& m   = *impl_;
    m.timings = GpuMeshTimings{};
    m.started = 0;
    if (n == 0) return;
    m.reserveBodies(n);
    m.mass.reserve(size_t(n));
    cudaStream_t s = m.stream.get();
    m.start.record(m.stream);
    CUDA_CHECK(cudaMemcpyAsync(m.pos.data(), pos, sizeof(Vec3d) * size_t(n), cudaMemcpyHostToDevice, s));
    CUDA_CHECK(cudaMemcpyAsync(m.mass.data(), mass, sizeof(double) * size_t(n), cudaMemcpyHostToDevice, s));
    const int64_t bad = m.forces(m.mass.data(), n);
    if (bad != n) throwBadPmBody(bad, pos[bad], mass[bad], m.boxSize);
    CUDA_CHECK(cudaMemcpyAsync(acc, m.acc.data(), sizeof(Vec3d) * size_t(n), cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaMemcpyAsync(pot, m.pot.data(), sizeof(double) * size_t(n), cudaMemcpyDeviceToHost, s));
    m.stop.record(m.stream);
    m.stream.synchronize();
    m.timings = {elapsedSeconds(m.start, m.checked), m.assignSeconds(), m.solveSeconds(), m.interpolateSeconds(),
                 elapsedSeconds(m.lastInterpolated(), m.stop)};
}

void GpuMesh::startForcesOnDevice(const Vec3d* dPos, const double* dMass, int64_t n, void* ready)
{
    Impl& m   = *impl_;
    m.timings = GpuMeshTimings{};
    m.started = 0;
    if (n == 0) return;
    m.reserveBodies(n);
    m.mass.reserve(size_t(n));
    cudaStream_t s = m.stream.get();
    CUDA_CHECK(cudaStreamWaitEvent(s, static_cast<cudaEvent_t>(ready), 0));
    m.start.record(m.stream);
    wrapKernel<<<blocksFor(n), kBlock, 0, s>>>(dPos, n, m.boxSize, m.pos.data());
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpyAsync(m.mass.data(), dMass, sizeof(double) * size_t(n), cudaMemcpyDeviceToDevice, s));
    m.copied.record(m.stream);
    const int64_t bad = m.forces(m.mass.data(), n);
    if (bad != n)
    {
        Vec3d given{};
        double givenMass = 0;
        CUDA_CHECK(cudaMemcpyAsync(&given, dPos + bad, sizeof given, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaMemcpyAsync(&givenMass, dMass + bad, sizeof givenMass, cudaMemcpyDeviceToHost, s));
        m.stream.synchronize();
        throwBadPmBody(bad, checkedPosition(given, m.boxSize), givenMass, m.boxSize);
    }
    m.started = n;
}

void* GpuMesh::inputsCopied() const { return impl_->copied.get(); }

void GpuMesh::finishForcesOnDevice(F4* dResults, void* stream, const int32_t* order)
{
    Impl& m = *impl_;
    if (m.started == 0) return;
    const int64_t n = m.started;
    m.started       = 0;
    cudaStream_t s  = static_cast<cudaStream_t>(stream);
    CUDA_CHECK(cudaStreamWaitEvent(s, m.lastInterpolated().get(), 0));
    CUDA_CHECK(cudaEventRecord(m.addBegin.get(), s));
    addMeshKernel<<<blocksFor(n), kBlock, 0, s>>>(m.acc.data(), m.pot.data(), order, n, dResults);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(m.stop.get(), s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    m.timings = {0, elapsedSeconds(m.start, m.checked) + m.assignSeconds(), m.solveSeconds(),
                 m.interpolateSeconds() + elapsedSeconds(m.addBegin, m.stop), 0};
}

void GpuMesh::addForcesOnDevice(const Vec3d* dPos, const double* dMass, int64_t n, F4* dResults, void* stream)
{
    Impl& m = *impl_;
    CUDA_CHECK(cudaEventRecord(m.callerReady.get(), static_cast<cudaStream_t>(stream)));
    startForcesOnDevice(dPos, dMass, n, m.callerReady.get());
    finishForcesOnDevice(dResults, stream);
}

} // namespace octwalk
