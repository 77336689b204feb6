// The device-resident state's kernels (resident_gpu.h). Compiled with -fmad=false (device/CMakeLists.txt),
// so the kick, the drift and the diagnostics' terms round as the host's common/integrate.h does.
#include "device/resident_gpu.h"

#include <cuda_runtime.h>

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <vector>

#include "common/sfc.h"
#include "device/cuda_check.cuh"
#include "device/device_buffer.cuh"
#include "device/device_util.cuh"
#include "device/pm_gpu.h"
#include "device/refit_gpu.h"

namespace octwalk {

namespace {

constexpr int kStateBlock = 256;
/// Bodies per block of the diagnostics' sums: host/core/parallel.h's kReductionBlock, so the partial
/// sums and their order are the host's.
constexpr int64_t kDiagnosticBlock = 4096;

__global__ void kickDriftKernel(Vec3d* pos, Vec3d* vel, const F4* result, int64_t n, double G, double halfStep,
                                double h, double boxSize, int32_t* outOfRange)
{
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Vec3d v = vel[i], x = pos[i];
    kickVelocity(v, accelerationOf(result[i], G), halfStep);
    driftPosition(x, v, h, boxSize);
    vel[i] = v;
    pos[i] = x;
    // Every thread that finds a bad body stores the same 1: no order to depend on.
    if (!positionInRange(x)) *outOfRange = 1;
}

__global__ void kickKernel(const Vec3d* pos, Vec3d* vel, const F4* result, int64_t n, double G, double halfStep,
                           int32_t* notFinite)
{
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Vec3d v = vel[i];
    kickVelocity(v, accelerationOf(result[i], G), halfStep);
    vel[i] = v;
    if (!finiteBody(pos[i], v)) *notFinite = 1;
}

/// code[i]: the lattice shift that wraps position i into the box (wrapShiftCode), for the adoption of a topology
/// built from these positions.
__global__ void shiftCodeKernel(const Vec3d* pos, int64_t n, double boxSize, uint8_t* code)
{
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) code[i] = wrapShiftCode(pos[i], boxSize);
}

__global__ void predictKernel(const Vec3d* pos, const Vec3d* vel, double ahead, int64_t n, Vec3d* out)
{
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = predictPosition(pos[i], vel[i], ahead);
}

/// A bounding box being reduced: min and max are exact, so the box does not depend on the reduction's order.
struct DeviceBox
{
    Vec3d lo, hi;
};

struct IncludeBox
{
    __device__ DeviceBox operator()(const DeviceBox& a, const DeviceBox& b) const
    {
        return {{fmin(a.lo.x, b.lo.x), fmin(a.lo.y, b.lo.y), fmin(a.lo.z, b.lo.z)},
                {fmax(a.hi.x, b.hi.x), fmax(a.hi.y, b.hi.y), fmax(a.hi.z, b.hi.z)}};
    }
};

/// Blocks of the bounding box's first pass: each reduces a grid-stride share of the points.
constexpr int kBoxBlocks = 1024;

__device__ DeviceBox emptyBox()
{
    const double inf = HUGE_VAL;
    return {{inf, inf, inf}, {-inf, -inf, -inf}};
}

/// out[blockIdx.x] = the box of the block's points (a first pass: points are positions) or of the
/// boxes before it (the second pass, one block).
__global__ void pointsBoxKernel(const Vec3d* points, int64_t n, DeviceBox* out)
{
    using Reduce = cub::BlockReduce<DeviceBox, kStateBlock>;
    __shared__ typename Reduce::TempStorage temp;
    DeviceBox box = emptyBox();
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    {
        box = IncludeBox{}(box, DeviceBox{points[i], points[i]});
    }
    box = Reduce(temp).Reduce(box, IncludeBox{});
    if (threadIdx.x == 0) out[blockIdx.x] = box;
}

__global__ void boxesBoxKernel(const DeviceBox* boxes, int n, DeviceBox* out)
{
    using Reduce = cub::BlockReduce<DeviceBox, kStateBlock>;
    __shared__ typename Reduce::TempStorage temp;
    DeviceBox box = emptyBox();
    for (int i = threadIdx.x; i < n; i += blockDim.x) box = IncludeBox{}(box, boxes[i]);
    box = Reduce(temp).Reduce(box, IncludeBox{});
    if (threadIdx.x == 0) *out = box;
}

/// The Morton keys of the points in their bounding cube (KeyGrid::ofBox, as the host's sort computes
/// them), with each point's index; in a periodic box (boxSize > 0) the keys of the wrapped points in the box's
/// cube, as the host's sort of the wrapped points in the box computes them.
__global__ void keysKernel(const Vec3d* points, const DeviceBox* box, double boxSize, int64_t n, uint64_t* keys,
                           int32_t* index)
{
    const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const KeyGrid grid = boxSize > 0 ? KeyGrid::ofCube({0.0, 0.0, 0.0}, boxSize) : KeyGrid::ofBox(box->lo, box->hi);
    keys[i]            = grid.key(boxSize > 0 ? wrapPosition(points[i], boxSize) : points[i]);
    index[i]           = int32_t(i);
}

__global__ void shiftKernel(Vec3d* pos, const uint8_t* shift, int64_t n, double boxSize)
{
    const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < n) pos[k] = shiftedByCode(pos[k], shift[k], boxSize);
}

template<class T>
__global__ void gatherKernel(const T* from, T* to, const int32_t* order, int64_t n)
{
    const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < n) to[k] = from[order[k]];
}

/// Blocks of the largest acceleration's first pass: enough to fill the device, few for the host's second.
constexpr int64_t kLargestBlocks = 1024;

/// One block of kDiagnosticLanes threads per kDiagnosticBlock caller's indices: thread l adds the terms of indices
/// l, l + kDiagnosticLanes, ... of its block in order, then thread 0 adds the threads' sums in thread order: the
/// host's interleavedSum, with every thread's gathers independent of the others'.
__global__ void diagnosticBlocksKernel(const Vec3d* pos, const Vec3d* vel, const double* mass, const F4* result,
                                       const int32_t* slot, int64_t n, double G, StateScale scale,
                                       DiagnosticSums* partial)
{
    static_assert(sizeof(DiagnosticSums) % sizeof(double) == 0, "DiagnosticSums is a row of doubles");
    // Raw storage: DiagnosticSums' member initializers are not allowed on a __shared__ variable.
    __shared__ double staged[kDiagnosticLanes * (sizeof(DiagnosticSums) / sizeof(double))];
    DiagnosticSums* lanes = reinterpret_cast<DiagnosticSums*>(staged);
    const int64_t begin   = int64_t(blockIdx.x) * kDiagnosticBlock;
    const int64_t end     = begin + kDiagnosticBlock < n ? begin + kDiagnosticBlock : n;
    DiagnosticSums s;
    for (int64_t c = begin + threadIdx.x; c < end; c += kDiagnosticLanes)
    {
        const int32_t i = slot[c];
        s += diagnosticTerms(mass[i], scale.position(pos[i]), scale.velocity(vel[i]), potentialOf(result[i], G));
    }
    lanes[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x != 0) return;
    DiagnosticSums block;
    for (int l = 0; l < kDiagnosticLanes; ++l) block += lanes[l];
    partial[blockIdx.x] = block;
}

struct LargerOf
{
    __device__ double operator()(double a, double b) const { return maxOf(a, b); }
};

/// out[blockIdx.x] = the largest |G acc|^2 of the block's results (largerAccelerationSquared).
__global__ void largestAccelerationKernel(const F4* result, int64_t n, double G, double* out)
{
    using Reduce = cub::BlockReduce<double, kStateBlock>;
    __shared__ typename Reduce::TempStorage temp;
    double largest = 0;
    for (int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; k < n; k += int64_t(gridDim.x) * blockDim.x)
        largest = largerAccelerationSquared(largest, result[k], G);
    largest = Reduce(temp).Reduce(largest, LargerOf{});
    if (threadIdx.x == 0) out[blockIdx.x] = largest;
}

/// keys[k] = the pattern of body k's radius about centre (radiusAbout): non-negative doubles' patterns order as their
/// values. Every thread that finds a NaN radius stores the same 1.
__global__ void radiusKeysKernel(const Vec3d* pos, int64_t n, Vec3d centre, uint64_t* keys, int32_t* notANumber)
{
    const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const double r = radiusAbout(pos[k], centre);
    if (isnan(r)) *notANumber = 1;
    keys[k] = uint64_t(__double_as_longlong(r));
}

/// out[j] = the radius whose pattern is sorted[rank[j]].
__global__ void radiiAtRanksKernel(const uint64_t* sorted, const int64_t* rank, int64_t count, double* out)
{
    const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (j < count) out[j] = __longlong_as_double((long long)sorted[rank[j]]);
}

/// slot[caller[k]] = k.
/// The permutation's first pass: the state's arrays gathered by order into the scratch arrays (gathered), all in one
/// launch; permuteBackKernel then copies them back.
struct GatheredState
{
    Vec3d *pos, *vel;
    double* mass;
    int32_t* caller;
};

__global__ void gatherStateKernel(const Vec3d* pos, const Vec3d* vel, const double* mass, const int32_t* caller,
                                  const int32_t* order, int64_t n, GatheredState gathered)
{
    const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const int32_t from = order[k];
    gathered.pos[k]    = pos[from];
    gathered.vel[k]    = vel[from];
    gathered.mass[k]   = mass[from];
    gathered.caller[k] = caller[from];
}

/// The permutation's second pass: the gathered arrays into the state, and slot, the inverse of the callers.
__global__ void permuteBackKernel(GatheredState gathered, int64_t n, Vec3d* pos, Vec3d* vel, double* mass,
                                  int32_t* caller, int32_t* slot)
{
    const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k >= n) return;
    pos[k]          = gathered.pos[k];
    vel[k]          = gathered.vel[k];
    mass[k]         = gathered.mass[k];
    const int32_t c = gathered.caller[k];
    caller[k]       = c;
    slot[c]         = int32_t(k);
}

__global__ void invertKernel(const int32_t* caller, int32_t* slot, int64_t n)
{
    const int64_t k = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (k < n) slot[caller[k]] = int32_t(k);
}

template<class T>
void upload(DeviceBuffer<T>& buffer, const T* host, size_t n, cudaStream_t stream)
{
    buffer.reserve(n);
    if (n > 0) CUDA_CHECK(cudaMemcpyAsync(buffer.data(), host, n * sizeof(T), cudaMemcpyHostToDevice, stream));
}

template<class T>
void download(T* host, const T* device, size_t n, cudaStream_t stream)
{
    if (n > 0) CUDA_CHECK(cudaMemcpyAsync(host, device, n * sizeof(T), cudaMemcpyDeviceToHost, stream));
}

/// array[k] = array[order[k]] through scratch (a device-to-device copy back: the state's buffers keep
/// their addresses).
template<class T>
void gatherInto(T* array, DeviceBuffer<T>& scratch, const int32_t* order, int64_t n, cudaStream_t s)
{
    scratch.reserve(size_t(n));
    gatherKernel<<<blocksFor(n, kStateBlock), kStateBlock, 0, s>>>(array, scratch.data(), order, n);
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaMemcpyAsync(array, scratch.data(), size_t(n) * sizeof(T), cudaMemcpyDeviceToDevice, s));
}

} // namespace

static_assert(kDiagnosticBlock == 4096, "the device's diagnostic blocks are host/core/parallel.h's kReductionBlock");

namespace {

/// The device intervals of the resident operations for a SpanLog: begin and end events around each,
/// mapped onto the host's clock once the host has waited for them, through an anchor polled right after
/// the wait (anchorOnHostClock, as GpuSolver maps the walk's phases). The copy stream's events are mapped
/// through the same anchor: a poll's latency late at most, as the main stream's are (a clock read after
/// the blocking wait placed the copy up to the waiting thread's wake-up late: 0.05-2.8 ms on an H200).
class DeviceSpans
{
public:
    void setLog(SpanLog* log) { log_ = log; }
    bool on() const { return log_ && log_->on; }

    /// Logs an interval already on the host's clock.
    void add(SpanLane lane, const char* phase, double begin, double end)
    {
        if (on()) log_->add(lane, phase, begin, end);
    }
    /// Records the begin event of `phase` on stream s when the log is on; close records its end.
    void open(SpanLane lane, const char* phase, cudaStream_t s)
    {
        if (!on()) return;
        pending_.push_back({log_->step, lane, phase, event(), event(), false});
        CUDA_CHECK(cudaEventRecord(pending_.back().begin->get(), s));
    }
    /// The step under which spans are logged now.
    int64_t step() const { return log_ ? log_->step : 0; }
    /// Logs under `step` a span whose begin and end another thread recorded (on a stream of its own), and hands
    /// that thread two other events for its next span.
    void addRecorded(int64_t step, SpanLane lane, const char* phase, std::unique_ptr<Event>& begin,
                     std::unique_ptr<Event>& end)
    {
        if (!on()) return;
        pending_.push_back({step, lane, phase, std::move(begin), std::move(end), true});
        begin = event();
        end   = event();
    }
    /// Records the end event of the span opened last (nothing when none is open).
    void close(cudaStream_t s)
    {
        if (pending_.empty() || pending_.back().closed) return;
        CUDA_CHECK(cudaEventRecord(pending_.back().end->get(), s));
        pending_.back().closed = true;
    }
    /// Waits for stream s; then logs every span whose end has completed (on s or on another stream).
    void synchronize(cudaStream_t s)
    {
        if (pending_.empty())
        {
            CUDA_CHECK(cudaStreamSynchronize(s));
            return;
        }
        CUDA_CHECK(cudaStreamSynchronize(s));
        const double anchorOnHost = anchorOnHostClock(anchor_, s);
        size_t kept               = 0;
        for (Pending& p : pending_)
        {
            if (!p.closed || !completed(*p.end))
            {
                if (&pending_[kept] != &p) pending_[kept] = std::move(p);
                ++kept;
                continue;
            }
            log_->spans.push_back({p.step, p.lane, p.phase, hostSecondsOf(*p.begin, anchor_, anchorOnHost),
                                   hostSecondsOf(*p.end, anchor_, anchorOnHost)});
            spare_.push_back(std::move(p.begin));
            spare_.push_back(std::move(p.end));
        }
        pending_.resize(kept);
    }

private:
    struct Pending
    {
        int64_t step;
        SpanLane lane;
        const char* phase;
        std::unique_ptr<Event> begin, end;
        bool closed;
    };

    static bool completed(const Event& e)
    {
        const cudaError_t status = cudaEventQuery(e.get());
        if (status == cudaErrorNotReady) return false;
        CUDA_CHECK(status);
        return true;
    }
    /// An event of an earlier span, or a new one.
    std::unique_ptr<Event> event()
    {
        if (spare_.empty()) return std::make_unique<Event>();
        std::unique_ptr<Event> e = std::move(spare_.back());
        spare_.pop_back();
        return e;
    }

    SpanLog* log_ = nullptr;
    std::vector<Pending> pending_;
    std::vector<std::unique_ptr<Event>> spare_;
    Event anchor_;
};

} // namespace

struct ResidentGpu::Impl
{
    GpuSolver solver;
    DeviceBuffer<Vec3d> pos{"resident positions"}, vel{"resident velocities"}, scratchVec{"resident scratch"},
        scratchVel{"resident velocity scratch"};
    /// The predicted positions a host build downloads (kept until the download is done).
    DeviceBuffer<Vec3d> predicted{"resident predicted positions"};
    DeviceBuffer<uint8_t> shiftCodes{"resident lattice shifts"};
    DeviceBuffer<double> mass{"resident masses"}, scratchMass{"resident mass scratch"};
    DeviceBuffer<int32_t> scratchCaller{"resident caller scratch"};
    DeviceBuffer<int32_t> order{"resident permutation"};
    /// The caller's index of each slot, and its inverse (the slot of each caller's index): the diagnostics sum
    /// in the caller's order.
    DeviceBuffer<int32_t> caller{"resident callers"}, slot{"resident slots"};
    DeviceBuffer<uint8_t> shift{"resident wrap shifts"};
    DeviceBuffer<F4> scratchResult{"resident results scratch"};
    DeviceBuffer<int32_t> flag{"resident flag"};
    DeviceBuffer<DiagnosticSums> partial{"diagnostic partial sums"};
    DeviceBuffer<double> largest{"largest acceleration per block"};
    DeviceBuffer<Moments> moments{"resident refit moments"};
    /// The sort of the predicted positions' keys (sortKeys): keys and indices before and after it.
    DeviceBuffer<uint64_t> keys{"resident keys"}, sortedKeys{"resident sorted keys"};
    DeviceBuffer<int32_t> keyIndex{"resident key index"}, sortedIndex{"resident sorted index"};
    DeviceBuffer<DeviceBox> boxes{"resident bounding boxes"};
    DeviceBuffer<unsigned char> sortTemp{"resident sort storage"};
    /// The flags' readback: the word of the kernels whose flag is waited for at once, the queued drift's and the
    /// queued kick's.
    PinnedBuffer<int32_t> flagHost{"resident flag readback"};
    static constexpr size_t kWaitedFlag = 0, kDriftFlag = 1, kKickFlag = 2, kFlagWords = 3;
    /// A flag whose copy into flagHost's word is queued (queueKickDrift, queueKick) and not yet read.
    struct QueuedFlag
    {
        size_t word;
        Event copied;
        bool queued = false;
    };
    QueuedFlag drift{kDriftFlag}, kick{kKickFlag};
    /// The radii's patterns before and after their sort (beginRadiusOrderStatistics), the ranks asked for and the
    /// radii there, and the NaN flag of the radii: the sort runs on rowsStream while the next step goes on.
    DeviceBuffer<uint64_t> radiusKeys{"radius keys"}, sortedRadiusKeys{"sorted radius keys"};
    DeviceBuffer<unsigned char> radiusSortTemp{"radius sort storage"};
    DeviceBuffer<int64_t> radiusRanks{"radius ranks"};
    DeviceBuffer<double> radiiAtRanks{"radii at the ranks"};
    DeviceBuffer<int32_t> radiusFlag{"radius NaN flag"};
    PinnedBuffer<int64_t> radiusRanksHost{"radius ranks staging"};
    PinnedBuffer<double> radiiHost{"radii readback"};
    PinnedBuffer<int32_t> radiusFlagHost{"radius NaN flag readback"};
    Stream rowsStream;
    Event radiusKeysReady, radiiDone;
    /// The radii's sort, the ranks' upload, their radii and the downloads, replayed on rowsStream: queued call by
    /// call, cub's passes held the stepping thread about 0.09 ms a row on an H200 (2^16 bodies). Captured again
    /// when the sizes or the buffers change (radiiGraphKey).
    Graph radiiGraph;
    std::vector<const void*> radiiGraphKey;
    /// The radii asked for by the last beginRadiusOrderStatistics (-1 when none is pending), and whether it queued
    /// work (not for an empty state or no ranks).
    int64_t radiiPending = -1;
    bool radiiQueued     = false;
    DeviceSpans spans;
    /// The positions' download for a host build, and the sort of their keys: on its own stream, after the state's
    /// stream reached them.
    Stream copyStream;
    /// The keys' sort (prepareSortGraph), replayed on copyStream; captured again when its key changes.
    Graph sortGraph;
    std::vector<const void*> sortGraphKey;
    /// An adoption's order and shifts copied ahead (stageAdoption) into the other half of a double buffer: the host
    /// arrays they came from (order nullptr: none staged), the copies' end, and their span's events (recorded when
    /// the log was on at beginPositionDownload, logged under its step).
    struct StagedAdoption
    {
        DeviceBuffer<int32_t> order{"staged permutation"};
        DeviceBuffer<uint8_t> shift{"staged wrap shifts"};
        const int32_t* orderFrom = nullptr;
        const uint8_t* shiftFrom = nullptr;
        Event copied;
        std::unique_ptr<Event> spanBegin = std::make_unique<Event>(), spanEnd = std::make_unique<Event>();
        bool logged  = false;
        int64_t step = 0;
    } staged;
    /// The device of this state: the build's thread, which stages adoptions, makes it its own.
    int device = 0;
    Event positionsReady, positionsDownloaded, keysDownloaded;
    /// The copy stream after the last sort of a build's keys (beginPositionDownload), while sortPending.
    Event keysSorted;
    bool sortPending = false;
    /// The main stream before the refit of the last refitAndEvaluate, where startMeshForces' mesh starts.
    Event beforeRefit;
    /// A started mesh's copy of the positions and masses (GpuMesh::inputsCopied), until a write of the state waits for it.
    void* meshInputs = nullptr;
    /// The mesh was started before an adoption (startMeshForcesBeforeAdoption), and the adoptions since.
    bool meshBeforeAdoption = false;
    int meshAdoptions       = 0;
    Event meshReady;
    bool downloadPending = false;
    std::vector<int32_t> internalFirst;
    RefitView refit{};
    GpuSolver::ResidentTree tree{};
    GpuEvaluation evaluation;

    cudaStream_t stream() const { return cudaStreamOf(solver.stream()); }

    /// Makes sortGraph the stable sort of the keys of points[0, n) in their bounding cube (boxSize > 0: the
    /// periodic box's cube) into sortedKeys and sortedIndex, for the current buffers. Queued call by call, the
    /// sort's launches held the stepping thread before it could queue the walk: starting a build took it 0.13 ms,
    /// against 0.04 ms with the graph (2^18 bodies, an H200).
    void prepareSortGraph(const Vec3d* points, int64_t n, double boxSize)
    {
        boxes.reserve(kBoxBlocks + 1);
        keys.reserve(size_t(n));
        sortedKeys.reserve(size_t(n));
        keyIndex.reserve(size_t(n));
        sortedIndex.reserve(size_t(n));
        // The keys' 63 bits only (common/sfc.h); stable, so equal keys stay in index order.
        constexpr int kKeyBits = 3 * kMaxTreeLevel;
        cudaStream_t copy      = copyStream.get();
        size_t bytes           = 0;
        CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys.data(), sortedKeys.data(), keyIndex.data(),
                                                   sortedIndex.data(), int(n), 0, kKeyBits, copy));
        sortTemp.reserve(bytes);
        uint64_t boxBits = 0;
        std::memcpy(&boxBits, &boxSize, sizeof boxBits);
        const std::vector<const void*> key{points,
                                           reinterpret_cast<const void*>(n),
                                           reinterpret_cast<const void*>(boxBits),
                                           boxes.data(),
                                           keys.data(),
                                           sortedKeys.data(),
                                           keyIndex.data(),
                                           sortedIndex.data(),
                                           sortTemp.data()};
        if (!sortGraph.empty() && key == sortGraphKey) return;
        sortGraphKey.clear();
        sortGraph.capture(copy, [&] {
            pointsBoxKernel<<<kBoxBlocks, kStateBlock, 0, copy>>>(points, n, boxes.data());
            CUDA_CHECK_LAUNCH();
            boxesBoxKernel<<<1, kStateBlock, 0, copy>>>(boxes.data(), kBoxBlocks, boxes.data() + kBoxBlocks);
            CUDA_CHECK_LAUNCH();
            keysKernel<<<blocksFor(n, kStateBlock), kStateBlock, 0, copy>>>(points, boxes.data() + kBoxBlocks, boxSize,
                                                                            n, keys.data(), keyIndex.data());
            CUDA_CHECK_LAUNCH();
            CUDA_CHECK(cub::DeviceRadixSort::SortPairs(sortTemp.data(), bytes, keys.data(), sortedKeys.data(),
                                                       keyIndex.data(), sortedIndex.data(), int(n), 0, kKeyBits, copy));
        });
        sortGraphKey = key;
    }

    /// Gathers positions, velocities, masses and callers by order, and makes slot their callers' inverse: two
    /// launches, where a gather and a copy back for each array and the inversion took nine.
    void permuteState(int64_t n, cudaStream_t s)
    {
        const size_t count = size_t(n);
        scratchVec.reserve(count);
        scratchVel.reserve(count);
        scratchMass.reserve(count);
        scratchCaller.reserve(count);
        slot.reserve(count);
        const GatheredState gathered{scratchVec.data(), scratchVel.data(), scratchMass.data(), scratchCaller.data()};
        gatherStateKernel<<<blocksFor(n, kStateBlock), kStateBlock, 0, s>>>(pos.data(), vel.data(), mass.data(),
                                                                            caller.data(), order.data(), n, gathered);
        CUDA_CHECK_LAUNCH();
        permuteBackKernel<<<blocksFor(n, kStateBlock), kStateBlock, 0, s>>>(gathered, n, pos.data(), vel.data(),
                                                                            mass.data(), caller.data(), slot.data());
        CUDA_CHECK_LAUNCH();
    }

    /// slot: the inverse of caller (invertKernel), queued on s.
    void invertCallers(int64_t n, cudaStream_t s)
    {
        slot.reserve(size_t(n));
        if (n == 0) return;
        invertKernel<<<blocksFor(n, kStateBlock), kStateBlock, 0, s>>>(caller.data(), slot.data(), n);
        CUDA_CHECK_LAUNCH();
    }

    /// Called before the positions or velocities are written: that waits for a pending download of them.
    void beforeWritingState()
    {
        if (meshInputs)
        {
            CUDA_CHECK(cudaStreamWaitEvent(stream(), static_cast<cudaEvent_t>(meshInputs), 0));
            meshInputs = nullptr;
        }
        if (!downloadPending) return;
        CUDA_CHECK(cudaStreamWaitEvent(stream(), positionsDownloaded.get(), 0));
        downloadPending = false;
    }

    /// Makes radiiGraph the sort of n radii and the gather of count ranks, for the current buffers.
    void prepareRadiiGraph(int64_t n, int64_t count)
    {
        size_t bytes = 0;
        CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, radiusKeys.data(), sortedRadiusKeys.data(), int(n), 0,
                                                  64, rowsStream.get()));
        radiusSortTemp.reserve(bytes);
        const std::vector<const void*> key{reinterpret_cast<const void*>(n),
                                           reinterpret_cast<const void*>(count),
                                           radiusKeys.data(),
                                           sortedRadiusKeys.data(),
                                           radiusSortTemp.data(),
                                           radiusRanks.data(),
                                           radiiAtRanks.data(),
                                           radiusFlag.data(),
                                           radiusRanksHost.data(),
                                           radiiHost.data(),
                                           radiusFlagHost.data()};
        if (!radiiGraph.empty() && key == radiiGraphKey) return;
        radiiGraphKey.clear();
        cudaStream_t rows = rowsStream.get();
        radiiGraph.capture(rows, [&] {
            CUDA_CHECK(cub::DeviceRadixSort::SortKeys(radiusSortTemp.data(), bytes, radiusKeys.data(),
                                                      sortedRadiusKeys.data(), int(n), 0, 64, rows));
            CUDA_CHECK(cudaMemcpyAsync(radiusRanks.data(), radiusRanksHost.data(), size_t(count) * sizeof(int64_t),
                                       cudaMemcpyHostToDevice, rows));
            radiiAtRanksKernel<<<blocksFor(count, kStateBlock), kStateBlock, 0, rows>>>(
                sortedRadiusKeys.data(), radiusRanks.data(), count, radiiAtRanks.data());
            CUDA_CHECK_LAUNCH();
            CUDA_CHECK(cudaMemcpyAsync(radiiHost.data(), radiiAtRanks.data(), size_t(count) * sizeof(double),
                                       cudaMemcpyDeviceToHost, rows));
            CUDA_CHECK(cudaMemcpyAsync(radiusFlagHost.data(), radiusFlag.data(), sizeof(int32_t),
                                       cudaMemcpyDeviceToHost, rows));
        });
        radiiGraphKey = key;
    }

    /// Waits for the pending radii (beginRadiusOrderStatistics) and logs their span; false when a radius was NaN.
    bool finishRadii()
    {
        const bool queued = radiiQueued;
        radiiPending      = -1;
        radiiQueued       = false;
        if (!queued) return true;
        CUDA_CHECK(cudaEventSynchronize(radiiDone.get()));
        spans.synchronize(rowsStream.get());
        return *radiusFlagHost.data() == 0;
    }

    /// Zeroes the flag, queues launch(flag) and the flag's copy into flagHost's word `word` (kWaitedFlag, or a
    /// QueuedFlag's); the whole is logged as `phase`.
    template<class Launch>
    void queueFlagged(const char* phase, size_t word, Launch launch)
    {
        cudaStream_t s = stream();
        flag.reserve(1);
        flagHost.reserve(kFlagWords);
        spans.open(SpanLane::Walk, phase, s);
        CUDA_CHECK(cudaMemsetAsync(flag.data(), 0, sizeof(int32_t), s));
        launch(flag.data());
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaMemcpyAsync(flagHost.data() + word, flag.data(), sizeof(int32_t), cudaMemcpyDeviceToHost, s));
        spans.close(s);
    }

    /// queueFlagged into q's word, its copy's event recorded.
    template<class Launch>
    void queueFlag(const char* phase, QueuedFlag& q, Launch launch)
    {
        queueFlagged(phase, q.word, launch);
        CUDA_CHECK(cudaEventRecord(q.copied.get(), stream()));
        q.queued = true;
    }

    /// Whether q's flag, once copied, is clear (true when none is queued); q is read.
    bool flagClear(QueuedFlag& q)
    {
        if (!q.queued) return true;
        q.queued = false;
        CUDA_CHECK(cudaEventSynchronize(q.copied.get()));
        return flagHost.data()[q.word] == 0;
    }

    /// queueFlagged, then the flag's value once the stream is done.
    template<class Launch>
    bool flagRaised(const char* phase, Launch launch)
    {
        queueFlagged(phase, kWaitedFlag, launch);
        spans.synchronize(stream());
        return flagHost.data()[kWaitedFlag] != 0;
    }

    /// Logs the last evaluation's phases: the refit (timed in the upload's place) and the walk's.
    void logEvaluationSpans(const PhaseSpans& walk)
    {
        for (size_t k = 0; k < kNumPhases; ++k)
        {
            if (kPhases[k].group != PhaseGroup::Walk || !walk.has(k)) continue;
            spans.add(SpanLane::Walk, k == size_t(Phase::Upload) ? "refit" : kPhases[k].name, walk.begin[k],
                      walk.end[k]);
        }
    }

    /// Queues enqueue()'s work on the stream between the events of the span `phase`.
    template<class Enqueue>
    void logged(const char* phase, Enqueue enqueue)
    {
        spans.open(SpanLane::Walk, phase, stream());
        enqueue();
        spans.close(stream());
    }
};

ResidentGpu::ResidentGpu() : impl_(std::make_unique<Impl>())
{
    // This thread waits for the device several times a step (the flags of the kicks, the walk, the rows). A
    // spinning wait returns as the device finishes, where a blocking one sleeps and was woken 0.03-0.14 ms later on an
    // H200 (its timeline at 2^16 bodies): a fifth of a step there (benchmarks/results/whole_step/spin_waits). The build's threads leave
    // this thread a core of its own (Pipeline::setBuildThreads), so the spin takes none from them: the steps at 2^22
    // and 2^24 are unchanged. The flag is the process's.
    CUDA_CHECK(cudaSetDeviceFlags(cudaDeviceScheduleSpin));
    CUDA_CHECK(cudaGetDevice(&impl_->device));
}

ResidentGpu::~ResidentGpu()
{
    // Radii still being sorted write into pinned memory that is freed below, and the copy stream may still read the
    // caller's (a staged adoption's arrays); an error here is an earlier one's.
    if (impl_->radiiQueued) cudaEventSynchronize(impl_->radiiDone.get());
    cudaStreamSynchronize(impl_->copyStream.get());
}

GpuSolver& ResidentGpu::solver() { return impl_->solver; }

void ResidentGpu::setSpanLog(SpanLog* log) { impl_->spans.setLog(log); }

void ResidentGpu::setState(const Vec3d* pos, const Vec3d* vel, const double* mass, const int32_t* caller, int64_t n)
{
    Impl& m        = *impl_;
    cudaStream_t s = m.stream();
    m.beforeWritingState();
    // Pending radii would read buffers that a new size reallocates.
    if (m.radiiPending >= 0) m.finishRadii();
    // A new state has no adoption staged for it; copies already queued finish before their arrays may be freed.
    m.staged.orderFrom = nullptr;
    m.solver.dropStagedTopology();
    m.drift.queued = false;
    m.kick.queued  = false;
    CUDA_CHECK(cudaStreamSynchronize(m.copyStream.get()));
    n_ = n;
    m.logged("upload_state", [&] {
        upload(m.pos, pos, size_t(n), s);
        upload(m.vel, vel, size_t(n), s);
        upload(m.mass, mass, size_t(n), s);
        upload(m.caller, caller, size_t(n), s);
        m.invertCallers(n, s);
    });
    m.spans.synchronize(s);
}

void ResidentGpu::getState(Vec3d* pos, Vec3d* vel)
{
    Impl& m        = *impl_;
    cudaStream_t s = m.stream();
    m.logged("download_state", [&] {
        download(pos, m.pos.data(), size_t(n_), s);
        download(vel, m.vel.data(), size_t(n_), s);
    });
    m.spans.synchronize(s);
}

void ResidentGpu::getPositions(Vec3d* pos)
{
    Impl& m        = *impl_;
    cudaStream_t s = m.stream();
    m.logged("download_positions", [&] { download(pos, m.pos.data(), size_t(n_), s); });
    m.spans.synchronize(s);
}

void ResidentGpu::beginPositionDownload(Vec3d* pos, double ahead, uint64_t* sortedKeys, int32_t* sortedIndex,
                                        double boxSize, uint8_t* shiftCodes)
{
    Impl& m = *impl_;
    m.beforeWritingState();
    cudaStream_t s       = m.stream();
    const Vec3d* from    = m.pos.data();
    const bool sorted    = sortedKeys && sortedIndex && n_ > 0;
    cudaStream_t copy    = m.copyStream.get();
    m.staged.logged      = m.spans.on();
    m.staged.step        = m.spans.step();
    const bool predicted = ahead != 0 && n_ > 0;
    m.sortPending        = false;
    if (predicted)
    {
        m.predicted.reserve(size_t(n_));
        from = m.predicted.data();
    }
    // Captured before the copy stream waits for the positions: a capture records, it does not run.
    if (sorted) m.prepareSortGraph(from, n_, boxSize);
    CUDA_CHECK(cudaEventRecord(m.positionsReady.get(), s));
    CUDA_CHECK(cudaStreamWaitEvent(copy, m.positionsReady.get(), 0));
    if (predicted)
    {
        // Predicted here, so that only the positions cross the bus (not the velocities too), and on the copy
        // stream, beside the refit, which waited for the prediction on the walk's stream; the state is not written
        // before the download is done (beforeWritingState).
        m.spans.open(SpanLane::Copy, "predict", copy);
        predictKernel<<<blocksFor(n_, kStateBlock), kStateBlock, 0, copy>>>(m.pos.data(), m.vel.data(), ahead, n_,
                                                                            m.predicted.data());
        CUDA_CHECK_LAUNCH();
        m.spans.close(copy);
    }
    if (sorted)
    {
        m.spans.open(SpanLane::Copy, "sort_keys", copy);
        m.sortGraph.launch(copy);
        m.spans.close(copy);
        CUDA_CHECK(cudaEventRecord(m.keysSorted.get(), copy));
        m.sortPending = true;
        m.spans.open(SpanLane::Copy, "download_keys", copy);
        download(sortedKeys, m.sortedKeys.data(), size_t(n_), copy);
        download(sortedIndex, m.sortedIndex.data(), size_t(n_), copy);
        if (shiftCodes && boxSize > 0)
        {
            // A byte a body instead of the positions: the build's adoption needs no more of them.
            m.shiftCodes.reserve(size_t(n_));
            shiftCodeKernel<<<blocksFor(n_, kStateBlock), kStateBlock, 0, copy>>>(from, n_, boxSize,
                                                                                  m.shiftCodes.data());
            CUDA_CHECK_LAUNCH();
            download(shiftCodes, m.shiftCodes.data(), size_t(n_), copy);
        }
        m.spans.close(copy);
        CUDA_CHECK(cudaEventRecord(m.keysDownloaded.get(), copy));
    }
    m.spans.open(SpanLane::Copy, "download_positions", copy);
    download(pos, from, size_t(n_), copy);
    m.spans.close(copy);
    CUDA_CHECK(cudaEventRecord(m.positionsDownloaded.get(), copy));
    m.downloadPending = true;
}

void ResidentGpu::finishPositionDownload() { CUDA_CHECK(cudaEventSynchronize(impl_->positionsDownloaded.get())); }

void ResidentGpu::finishSortedKeysDownload() { CUDA_CHECK(cudaEventSynchronize(impl_->keysDownloaded.get())); }

void ResidentGpu::permute(const int32_t* order, const uint8_t* shift, double boxSize, bool results)
{
    Impl& m = *impl_;
    m.beforeWritingState();
    cudaStream_t s = m.stream();
    if (n_ == 0) return;
    Impl::StagedAdoption& a = m.staged;
    if (a.orderFrom != nullptr && a.orderFrom == order && a.shiftFrom == shift)
    {
        CUDA_CHECK(cudaStreamWaitEvent(s, a.copied.get(), 0));
        m.order.swap(a.order);
        if (shift) m.shift.swap(a.shift);
        if (a.logged) m.spans.addRecorded(a.step, SpanLane::Copy, "upload_adoption", a.spanBegin, a.spanEnd);
    }
    else
    {
        m.logged("upload_order", [&] {
            upload(m.order, order, size_t(n_), s);
            if (shift) upload(m.shift, shift, size_t(n_), s);
        });
    }
    a.orderFrom = nullptr;
    if (m.meshBeforeAdoption) ++m.meshAdoptions;
    m.logged("permute", [&] {
        m.permuteState(n_, s);
        // The previous results follow their bodies: TreePM's error control reads them in the next refit.
        if (results) gatherInto(m.solver.residentResults(int32_t(n_)), m.scratchResult, m.order.data(), n_, s);
        if (shift)
        {
            shiftKernel<<<blocksFor(n_, kStateBlock), kStateBlock, 0, s>>>(m.pos.data(), m.shift.data(), n_, boxSize);
            CUDA_CHECK_LAUNCH();
        }
    });
    // No wait: the next upload of the order is queued behind these kernels on the same stream, and the
    // host's order and shift outlive their copies (the pipeline rewrites a topology's two adoptions later).
}

void ResidentGpu::stageAdoption(const int32_t* order, const uint8_t* shift, const RefitView& host, const TreeView& tree)
{
    Impl& m = *impl_;
    CUDA_CHECK(cudaSetDevice(m.device));
    Impl::StagedAdoption& a = m.staged;
    a.orderFrom             = nullptr;
    cudaStream_t copy       = m.copyStream.get();
    try
    {
        if (a.logged) CUDA_CHECK(cudaEventRecord(a.spanBegin->get(), copy));
        // The staged half was last read by the adoption before the one now walked: long done.
        upload(a.order, order, size_t(n_), copy);
        if (shift) upload(a.shift, shift, size_t(n_), copy);
        CUDA_CHECK(cudaEventRecord(a.copied.get(), copy));
        m.solver.stageResidentTopology(tree, {host.groupRange, nullptr, nullptr, host.numGroups}, GpuStream{copy});
        if (a.logged) CUDA_CHECK(cudaEventRecord(a.spanEnd->get(), copy));
    }
    catch (...)
    {
        // Half staged is not staged: the adoption, if any, copies for itself.
        m.solver.dropStagedTopology();
        throw;
    }
    a.orderFrom = order;
    a.shiftFrom = shift;
}

void ResidentGpu::setTopology(const RefitView& host, const RefitLevels& levels, const TreeView& tree)
{
    Impl& m = *impl_;
    const GroupView groups{host.groupRange, nullptr, nullptr, host.numGroups};
    // Staged (stageAdoption), the topology is on the device already: no copy to log.
    if (m.solver.holdsStagedTopology(tree, groups)) m.tree = m.solver.setResidentTopology(tree, groups, host.numBodies);
    else m.logged("upload_topology", [&] { m.tree = m.solver.setResidentTopology(tree, groups, host.numBodies); });
    m.internalFirst.assign(levels.internalFirst, levels.internalFirst + levels.numLevels + 1);
    m.moments.reserve(size_t(host.numInternal) + size_t(host.numLeaves));
    m.refit = host;
}

void ResidentGpu::setResults(const F4* results)
{
    Impl& m        = *impl_;
    cudaStream_t s = m.stream();
    m.logged("upload_results", [&] {
        F4* to = m.solver.residentResults(int32_t(n_));
        if (n_ > 0) CUDA_CHECK(cudaMemcpyAsync(to, results, size_t(n_) * sizeof(F4), cudaMemcpyHostToDevice, s));
    });
    m.spans.synchronize(s);
}

void ResidentGpu::startMeshForces(GpuMesh& mesh) { startMesh(mesh, impl_->beforeRefit.get()); }

void ResidentGpu::startMeshForcesBeforeAdoption(GpuMesh& mesh)
{
    Impl& m = *impl_;
    // The host's build waits for the keys: their sort, beside the mesh, took 8.8 ms instead of 2 ms at 2^24 bodies.
    // The mesh starts after it, and ends long before the build.
    if (m.sortPending) CUDA_CHECK(cudaStreamWaitEvent(m.stream(), m.keysSorted.get(), 0));
    m.sortPending = false;
    CUDA_CHECK(cudaEventRecord(m.meshReady.get(), m.stream()));
    startMesh(mesh, m.meshReady.get());
    m.meshBeforeAdoption = true;
    m.meshAdoptions      = 0;
}

void ResidentGpu::startMesh(GpuMesh& mesh, void* ready)
{
    Impl& m                = *impl_;
    const cudaStream_t own = cudaStreamOf(mesh.stream());
    m.spans.open(SpanLane::Mesh, "mesh", own);
    try
    {
        mesh.startForcesOnDevice(m.pos.data(), m.mass.data(), n_, ready);
    }
    catch (...)
    {
        m.spans.close(own);
        throw;
    }
    m.spans.close(own);
    m.meshInputs = mesh.inputsCopied();
}

void ResidentGpu::finishMeshForces(GpuMesh& mesh)
{
    Impl& m = *impl_;
    // Started before an adoption, the mesh's results are in the order of the bodies before it.
    const int32_t* order = nullptr;
    if (m.meshBeforeAdoption)
    {
        m.meshBeforeAdoption = false;
        if (m.meshAdoptions > 1) throw std::logic_error("ResidentGpu: a mesh started before two adoptions");
        if (m.meshAdoptions == 1) order = m.order.data();
    }
    m.logged("add_mesh", [&] { mesh.finishForcesOnDevice(m.solver.residentResults(int32_t(n_)), m.stream(), order); });
}

InteractionTotals ResidentGpu::refitAndEvaluate(float eps2, float groupTolerance, PhaseTimes& times,
                                                const std::function<void()>& afterRefit,
                                                const std::function<void()>& afterForces)
{
    Impl& m      = *impl_;
    RefitView& v = m.refit;
    // The refit reads the previous results before the forces overwrite them (the same buffer, later on the stream).
    v.previous       = groupTolerance > 0 ? m.solver.residentResults() : nullptr;
    v.groupTolerance = groupTolerance;
    v.children       = m.tree.tree.children;
    v.leafRange      = m.tree.tree.leafRange;
    v.groupRange     = m.tree.groups.range;
    v.pos            = m.pos.data();
    v.mass           = m.mass.data();
    v.moments        = m.moments.data();
    v.nodeMac        = m.tree.nodeMac;
    v.nodeCom        = m.tree.nodeCom;
    v.nodeQuad       = m.tree.nodeQuad;
    v.bodies         = m.tree.bodyPosMass;
    v.groupCenter    = m.tree.groupCenter;
    v.groupHalf      = m.tree.groupHalf;
    // Queued by the solver in place of an upload, so its events time it with the walk's.
    m.solver.evaluateResident(
        m.tree, eps2, m.evaluation, false,
        [&] {
            // The state is final for this step here: the mesh (startMeshForces) may start at once, beside the refit.
            CUDA_CHECK(cudaEventRecord(m.beforeRefit.get(), m.stream()));
            refitGpu(v, {m.internalFirst.data(), int32_t(m.internalFirst.size()) - 1}, m.solver.stream());
            if (afterRefit) afterRefit();
        },
        afterForces);
    const PhaseTimes& e = m.evaluation.times;
    times.clear(PhaseGroup::Walk);
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (kPhases[k].group == PhaseGroup::Walk && k != size_t(Phase::Upload)) times.seconds[k] = e.seconds[k];
    }
    times[Phase::Packing] = e[Phase::Upload];
    m.logEvaluationSpans(e.spans);
    return {m.evaluation.nodeInteractions, m.evaluation.leafInteractions};
}

void ResidentGpu::queueKickDrift(double G, double halfStep, double h, double boxSize)
{
    Impl& m = *impl_;
    if (n_ == 0) return;
    m.beforeWritingState();
    const F4* result = m.solver.residentResults();
    m.queueFlag("kick_drift", m.drift, [&](int32_t* flag) {
        kickDriftKernel<<<blocksFor(n_, kStateBlock), kStateBlock, 0, m.stream()>>>(m.pos.data(), m.vel.data(), result,
                                                                                    n_, G, halfStep, h, boxSize, flag);
    });
}

bool ResidentGpu::driftInRange() { return impl_->flagClear(impl_->drift); }

bool ResidentGpu::kickDrift(double G, double halfStep, double h, double boxSize)
{
    queueKickDrift(G, halfStep, h, boxSize);
    return driftInRange();
}

void ResidentGpu::queueKick(double G, double halfStep)
{
    Impl& m = *impl_;
    if (n_ == 0) return;
    m.beforeWritingState();
    const F4* result = m.solver.residentResults();
    m.queueFlag("kick", m.kick, [&](int32_t* flag) {
        kickKernel<<<blocksFor(n_, kStateBlock), kStateBlock, 0, m.stream()>>>(m.pos.data(), m.vel.data(), result, n_,
                                                                               G, halfStep, flag);
    });
}

bool ResidentGpu::kickFinite() { return impl_->flagClear(impl_->kick); }

bool ResidentGpu::kick(double G, double halfStep)
{
    queueKick(G, halfStep);
    return kickFinite();
}

DiagnosticSums ResidentGpu::diagnosticSums(double G, const StateScale& scale)
{
    Impl& m                 = *impl_;
    cudaStream_t s          = m.stream();
    const int64_t numBlocks = (n_ + kDiagnosticBlock - 1) / kDiagnosticBlock;
    std::vector<DiagnosticSums> partial(static_cast<size_t>(numBlocks));
    m.partial.reserve(size_t(numBlocks > 0 ? numBlocks : 1));
    m.logged("diagnostics", [&] {
        if (numBlocks > 0)
        {
            diagnosticBlocksKernel<<<int(numBlocks), kDiagnosticLanes, 0, s>>>(
                m.pos.data(), m.vel.data(), m.mass.data(), m.solver.residentResults(), m.slot.data(), n_, G, scale,
                m.partial.data());
            CUDA_CHECK_LAUNCH();
        }
        download(partial.data(), m.partial.data(), partial.size(), s);
    });
    m.spans.synchronize(s);
    // The block sums in block order, as interleavedSum adds them (one block: that block's sum).
    if (numBlocks == 1) return partial[0];
    DiagnosticSums total;
    for (const DiagnosticSums& p : partial) total += p;
    return total;
}

double ResidentGpu::largestAccelerationSquared(double G)
{
    Impl& m        = *impl_;
    cudaStream_t s = m.stream();
    if (n_ == 0) return 0;
    const int blocks = int(std::min<int64_t>(kLargestBlocks, blocksFor(n_, kStateBlock)));
    std::vector<double> partial(static_cast<size_t>(blocks));
    m.largest.reserve(size_t(blocks));
    m.logged("largest_acceleration", [&] {
        largestAccelerationKernel<<<blocks, kStateBlock, 0, s>>>(m.solver.residentResults(), n_, G, m.largest.data());
        CUDA_CHECK_LAUNCH();
        download(partial.data(), m.largest.data(), partial.size(), s);
    });
    m.spans.synchronize(s);
    double largest = 0;
    for (double p : partial) largest = maxOf(largest, p);
    return largest;
}

void ResidentGpu::beginRadiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank)
{
    Impl& m = *impl_;
    if (m.radiiPending >= 0) m.finishRadii();
    const int64_t count = int64_t(rank.size());
    m.radiiPending      = count;
    if (n_ == 0 || count == 0) return;
    m.radiusKeys.reserve(size_t(n_));
    m.sortedRadiusKeys.reserve(size_t(n_));
    m.radiusRanks.reserve(size_t(count));
    m.radiiAtRanks.reserve(size_t(count));
    m.radiusFlag.reserve(1);
    m.radiusRanksHost.reserve(size_t(count));
    m.radiiHost.reserve(size_t(count));
    m.radiusFlagHost.reserve(1);
    std::copy(rank.begin(), rank.end(), m.radiusRanksHost.data());
    m.prepareRadiiGraph(n_, count);
    // The radii read the positions on the state's stream, before the next step moves them; the rest reads only its
    // own buffers and runs on the rows' stream beside that step.
    cudaStream_t s = m.stream();
    CUDA_CHECK(cudaMemsetAsync(m.radiusFlag.data(), 0, sizeof(int32_t), s));
    radiusKeysKernel<<<blocksFor(n_, kStateBlock), kStateBlock, 0, s>>>(m.pos.data(), n_, centre, m.radiusKeys.data(),
                                                                        m.radiusFlag.data());
    CUDA_CHECK_LAUNCH();
    CUDA_CHECK(cudaEventRecord(m.radiusKeysReady.get(), s));
    cudaStream_t rows = m.rowsStream.get();
    CUDA_CHECK(cudaStreamWaitEvent(rows, m.radiusKeysReady.get(), 0));
    m.spans.open(SpanLane::Rows, "lagrangian_radii", rows);
    m.radiiGraph.launch(rows);
    m.spans.close(rows);
    CUDA_CHECK(cudaEventRecord(m.radiiDone.get(), rows));
    m.radiiQueued = true;
}

bool ResidentGpu::finishRadiusOrderStatistics(std::vector<double>& out)
{
    Impl& m = *impl_;
    if (m.radiiPending < 0) throw std::logic_error("finishRadiusOrderStatistics without a begin");
    const size_t count = size_t(m.radiiPending);
    if (!m.finishRadii()) return false;
    out.assign(count, 0.0);
    if (n_ > 0 && count > 0) std::copy(m.radiiHost.data(), m.radiiHost.data() + count, out.begin());
    return true;
}

bool ResidentGpu::radiusOrderStatistics(const Vec3d& centre, const std::vector<int64_t>& rank, std::vector<double>& out)
{
    beginRadiusOrderStatistics(centre, rank);
    return finishRadiusOrderStatistics(out);
}

void ResidentGpu::getResults(F4* out)
{
    Impl& m        = *impl_;
    cudaStream_t s = m.stream();
    download(out, m.solver.residentResults(), size_t(n_), s);
    CUDA_CHECK(cudaStreamSynchronize(s));
}

void ResidentGpu::getLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset,
                           std::vector<int32_t>& nodeList, std::vector<int32_t>& leafList)
{
    impl_->solver.downloadLists(nodeOffset, leafOffset, nodeList, leafList);
}

} // namespace octwalk
