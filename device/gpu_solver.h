#pragma once
/// @file gpu_solver.h
/// The device backend behind a plain C++ header (no CUDA types). GpuSolver owns the device buffers,
/// the pinned staging, the stream and the events of an evaluation, and calls the launchers of
/// walk_gpu.h, forces_gpu.h and direct_gpu.h (the twins of host/cpu/) in the order of the CPU path.
/// Built from gpu_solver.cu with CUDA, from gpu_none.cpp without (then gpuAvailable() is false and
/// GpuSolver throws BackendError).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/phases.h"
#include "common/tree_view.h"
#include "device/direct_gpu.h"
#include "device/forces_gpu.h"
#include "device/pinned_memory.h"
#include "device/walk_gpu.h"

namespace octwalk {

/// What one device evaluation returns. acc is (acc xyz, potential) with G = 1, indexed like targets,
/// in pinned memory so it is downloaded without a staging copy; reuse one GpuEvaluation across
/// evaluations to keep its buffers.
struct GpuEvaluation
{
    PinnedVector<F4> acc;
    std::vector<int32_t> nodeCounts, leafCounts; ///< per group, from pass 1
    std::vector<int64_t> leafBodyCounts;         ///< per group: the bodies of its opened leaves (pass 1)
    int64_t nodeInteractions = 0, leafInteractions = 0;
    PhaseTimes times; ///< the walk phases, from CUDA events (host phases 0)
    /// The Ewald correction's share of times[Phase::BodyLeaf] (device/ewald_gpu.h), from CUDA events; 0 when
    /// isolated or under TreePM.
    double ewaldSeconds = 0;
};

/// Where the team walk stages its entries in pass 1 (device/walk_gpu.h, WalkStaging), for device memory about that
/// of the lists again. Under TreePM the walk drops the nodes beyond the cutoff, and walking costs more than the
/// staging's writes and copies: on an H200 the 256^3 LCDM box's walk passes took 6.01 s against 6.38 s over the
/// run, and 18.1 against 23.6 ms at z = 0. An isolated tree's walk lists most of what it visits, and the two cost
/// the same: 16.64 against 16.69 ms at 2^24 bodies, 4.25 against 4.22 ms at 2^22, 1.27 against 1.24 ms at 2^20.
enum class StagedWalk
{
    Off,        ///< two walks
    ShortRange, ///< staged under TreePM, two walks elsewhere
    On,         ///< staged everywhere
};

/// The kernel variants of an evaluation, chosen at run time so that one binary measures them side
/// by side (benchmarks/bench_gpu.cpp) and the twin tests cover each; all give the same lists.
struct GpuKernelConfig
{
    GpuWalk walk       = GpuWalk::Team;          ///< 1.2-3.7x faster walk passes on an H200
    int targetsPerLane = kDefaultTargetsPerLane; ///< of the force kernels: 2 or 4
    /// Read the child words and MAC words (team walk) and the node entries (body-node kernel)
    /// through texture objects instead of __ldg.
    bool textures = false;
    /// The body-node kernel's split of a group's targets over the lanes and its register cap.
    NodeKernelShape node{};
    /// The body-leaf kernel's split of the groups with long lists over several warps.
    LeafKernelShape leaf{};
    /// Where the team walk's pass 1 keeps each group's entries in chunks, so that pass 2 copies them instead of
    /// walking again (StagedWalk).
    StagedWalk stagedWalk = StagedWalk::ShortRange;
};

/// The staged walk's pools hold this many times the entries a group took on average in the last walk (plus a
/// chunk of each kind a group): a group that finds them exhausted is walked again in pass 2.
constexpr double kStagedPoolSlack = 1.1;

/// Throws ParameterError for a variant that is not built.
inline void checkKernelConfig(const GpuKernelConfig& config)
{
    if (config.targetsPerLane != 2 && config.targetsPerLane != 4)
    {
        throw ParameterError("GpuKernelConfig: targets per lane " + std::to_string(config.targetsPerLane) +
                             " is not built (2 or 4)");
    }
    const std::string shape = nodeKernelShapeError(config.node) + leafKernelShapeError(config.leaf);
    if (!shape.empty()) throw ParameterError("GpuKernelConfig: " + shape);
}

/// True when this build has CUDA and a device is present. Never throws.
bool gpuAvailable();
/// "NVIDIA H200 (sm_90, 132 SMs)" or "none".
std::string gpuDescription();

class GpuSolver
{
public:
    GpuSolver();
    ~GpuSolver();
    GpuSolver(const GpuSolver&)            = delete;
    GpuSolver& operator=(const GpuSolver&) = delete;

    /// Uploads the packed tree, groups, bodies and targets, runs pass 1, the scan, pass 2, the
    /// body-node and the body-leaf kernels, and downloads the result. Throws BackendError when a walk
    /// overflows its stack (a tree deeper than its recorded depth) or on any CUDA failure.
    void evaluate(const TreeView& tree, const GroupView& groups, const BodyView& bodies, const TargetView& targets,
                  float eps2, GpuEvaluation& out);

    /// The device arrays of a tree kept on the device (evaluateResident): the topology as uploaded by
    /// setResidentTopology, and the outputs a refit writes (moments, float bodies, group boxes).
    struct ResidentTree
    {
        TreeView tree;    ///< device pointers
        GroupView groups; ///< device pointers
        BodyView bodies;  ///< device pointers: the float bodies, also the targets
        F4* nodeMac;      ///< refit outputs (the arrays tree, groups and bodies point at)
        F4* nodeCom;
        F4* nodeQuad;
        F4* bodyPosMass;
        F4* groupCenter;
        F4* groupHalf;
    };

    /// Uploads a packed tree's topology (children, leaf ranges, group ranges) into the buffers the
    /// walk reads and sizes the buffers of the node, body and group words, which a refit on the
    /// device then fills (device/resident_gpu.h). Arrays in ordinary memory are staged and waited
    /// for; page-locked ones are queued on the stream without a wait, and must stay unchanged until
    /// the stream has done the copies (the next evaluation waits for it). The host view's
    /// nodeMac/nodeCom/nodeQuad and the groups' boxes are not read.
    /// @param[in] tree       the packed tree (host memory; isolated, or periodic under TreePM: no Ewald table)
    /// @param[in] groups     its groups (host memory)
    /// @param[in] numBodies  bodies of the tree
    ResidentTree setResidentTopology(const TreeView& tree, const GroupView& groups, int32_t numBodies);
    /// Queues the copies of the topology that the next setResidentTopology will take (the same host arrays and
    /// sizes) on stream copies, into the other half of a double buffer, so that they run while the stream of the
    /// solver walks the current topology: safe from another thread then, as long as the two calls do not overlap.
    /// The next setResidentTopology of other arrays, or dropStagedTopology, discards them. The host arrays (page-
    /// locked, for the copies to be asynchronous) must stay unchanged until that setResidentTopology.
    void stageResidentTopology(const TreeView& tree, const GroupView& groups, GpuStream copies);
    void dropStagedTopology();
    /// Whether the next setResidentTopology of these arrays takes a staged copy.
    bool holdsStagedTopology(const TreeView& tree, const GroupView& groups) const;

    /// As evaluate, on the arrays of setResidentTopology as the stream's earlier work left them
    /// (nothing is uploaded): the bodies are the targets. The results (acc, potential; G = 1, tree
    /// order) stay on the device (residentResults) and are downloaded into out.acc only when
    /// downloadResults; the per-group counts and totals always are (the pipeline's policy reads them).
    /// beforeWalk queues work on stream() that the walk reads (the refit of device/resident_gpu.h); it
    /// takes the place of the upload: out.times' Phase::Upload and its span are that work's. afterForces queues
    /// work on stream() behind the forces and ahead of the counts' download, whose wait it shares (the pipeline's
    /// closing kick); it is timed in the download's phase.
    void evaluateResident(const ResidentTree& tree, float eps2, GpuEvaluation& out, bool downloadResults,
                          const std::function<void()>& beforeWalk = {}, const std::function<void()>& afterForces = {});

    /// Device pointer to the results of the last evaluateResident.
    const F4* residentResults() const;
    /// The same results, writable, with room for numBodies (kept when they fit): a restart sets them, and a gather
    /// into a new tree order moves them.
    F4* residentResults(int32_t numBodies);

    /// The stream every evaluation runs on: work queued on it by others is ordered with them.
    GpuStream stream() const;

    /// The kernel variants of later evaluations. Throws ParameterError for a variant that is not built.
    void setKernelConfig(const GpuKernelConfig& config)
    {
        checkKernelConfig(config);
        config_ = config;
    }
    const GpuKernelConfig& kernelConfig() const { return config_; }

    /// Tiled direct summation on the device: acc on bodies[targetIndex[t]] from all bodies, G = 1,
    /// self skipped by index; accumulated in double when doubleAccumulate; config picks the kernel
    /// variant (direct_gpu.h; ParameterError for one not built).
    void direct(const BodyView& bodies, const std::vector<int32_t>& targetIndex, float eps2, bool doubleAccumulate,
                std::vector<F4>& acc, double& seconds, const DirectKernelConfig& config = {});

    /// The interaction lists of the last evaluation (downloaded on request, for twin comparisons);
    /// 64-bit offsets, as on the CPU twin. Throws std::logic_error when no evaluation has completed.
    void downloadLists(std::vector<int64_t>& nodeOffset, std::vector<int64_t>& leafOffset,
                       std::vector<int32_t>& nodeList, std::vector<int32_t>& leafList);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    GpuKernelConfig config_;
};

} // namespace octwalk
