#pragma once
/// @file forces_gpu.h
/// Body-node and body-leaf forces on the device. Twin of host/cpu/forces_cpu.h: the same arguments
/// (views pointing at device memory) plus a stream; every target sums its lists in list order (a split tail
/// target of the body-node kernel: shares of its list, each in list order, added in a fixed order; see
/// NodeKernelShape), and no floating-point atomics. Launches are asynchronous on the stream; built from forces_gpu.cu with CUDA,
/// from gpu_none.cpp without (then they throw BackendError).

#include <cstdint>
#include <string>

#include "common/hostdevice.h"
#include "common/tree_view.h"
#include "device/gpu_stream.h"
#include "device/walk_gpu.h"

namespace octwalk {

/// Targets each lane of the force kernels serves per pass over a group's lists (the kernels are built
/// for 2 and 4; ParameterError otherwise): more share each staged node, fewer leave fewer lanes idle
/// in groups of 33..127 bodies. Default 2: on an H200 at 2^22 (merged groups of <= 64, team walk) walk + forces
/// took 43.1 ms against 47.0 with 4 (body-node 31.6 against 34.7 ms), equal with groups of <= 128; the
/// benchmarks measure both.
constexpr int kDefaultTargetsPerLane = 2;

/// How the body-node kernel spreads a pass of a group's targets over the 32 lanes of its warp.
struct NodeKernelShape
{
    /// Split the tail: the r = m % 32 targets that do not fill a slot, when r <= 16, are each served by
    /// 32 / r lanes, every lane on its share of the list (tailPlan), their partial sums added by warp
    /// shuffles in a fixed order. Off: every lane computes every slot, on dummy targets where there are none.
    bool splitTail = true;
    /// Blocks of 128 threads an SM that the isolated 2-per-lane kernel is built for (__launch_bounds__'s
    /// minimum, which caps its registers at 65536 / (128 minBlocks)): 0 (no minimum) or 8 (64 registers,
    /// 50% occupancy). The periodic and 4-per-lane kernels ignore it. ptxas (CUDA 13.0, sm_90): 72
    /// registers (44%) without a minimum, split or not; at 8 it spills (8/16 bytes a thread stored/loaded
    /// unsplit, 36/84 split), so the benchmarks decide.
    int minBlocks = 0;
    /// Warps of a block of the isolated 2-per-lane kernel: 4, or 1 (then an SM starts the next group when one
    /// warp is done rather than the slowest of four; only without minBlocks). The periodic and 4-per-lane
    /// kernels ignore it.
    int warpsPerBlock = 4;
};

/// Empty when the shape is built, else why not (ParameterError's message).
inline std::string nodeKernelShapeError(const NodeKernelShape& shape)
{
    if (shape.minBlocks != 0 && shape.minBlocks != 8)
        return "body-node kernel: minimum of " + std::to_string(shape.minBlocks) +
               " blocks an SM is not built (0 or 8)";
    if (shape.warpsPerBlock != 4 && shape.warpsPerBlock != 1)
        return "body-node kernel: " + std::to_string(shape.warpsPerBlock) + " warps a block are not built (4 or 1)";
    if (shape.warpsPerBlock == 1 && shape.minBlocks != 0)
        return "body-node kernel: one warp a block is built without a minimum of blocks an SM";
    return {};
}

/// How the body-leaf kernel spreads the groups with long leaf lists.
struct LeafKernelShape
{
    /// A group whose leaf list holds more than this many entries is served by 8 warps, each on a share of its
    /// targets, the lanes of each target taking interleaved shares of its list (partial sums added by warp
    /// shuffles in a fixed order), instead of one warp; 0: every group by one warp. Default 512 (4x the median
    /// list at 2^20 and 2^22): on an H200 the body-leaf kernel at 2^20, merged groups of <= 64, takes 2.4
    /// instead of 4.0 ms, where one group of 58 bodies has 4290 entries (benchmarks/results/gpu_forces/kernel_sass.md).
    int splitAbove = 512;
    /// Split the tail of a pass as the body-node kernel does (NodeKernelShape::splitTail); off: every lane
    /// computes every slot, on a dummy target where there is none. Default on: on an H200 (one binary,
    /// two repetitions) walk + forces at 2^22 took 37.74 / 37.73 ms against 38.05 / 38.11 without it (merged
    /// groups of <= 64), 38.5 against 39.6 ms with groups of <= 48, and at 2^20 11.6 against 11.65 ms.
    bool splitTail = true;
    /// Warps of a block of the isolated kernel: 4, or 1 (NodeKernelShape::warpsPerBlock). The periodic kernels
    /// and the long lists' split kernel ignore it.
    int warpsPerBlock = 4;
    /// splitAbove for TreePM's short-range lists, which are long everywhere: a group's list holds every leaf within
    /// the cutoff of its box (2900 bodies a body at z = 49 in a 256^3 LCDM box, in leaves of at most 16), and the
    /// split's 8 warps each stage the whole list for their share of the targets. Default 2048: on an H200 that
    /// box's run from z = 49 to 0 took 35.16 s of steps (body-leaf 13.54 s) against 39.00-39.08 s (17.27 s) at 512,
    /// 35.39 s at 1024, 42.56 s at 256 and 43.20 s at 128, one binary (benchmarks/results/periodic/
    /// leaf_split_threshold/).
    int shortRangeSplitAbove = 2048;
};

/// The threshold of a launch's split (LeafKernelShape): shortRangeSplitAbove for TreePM's lists, else splitAbove.
inline int leafSplitAbove(const LeafKernelShape& shape, bool shortRange)
{
    return shortRange ? shape.shortRangeSplitAbove : shape.splitAbove;
}

/// Empty when the shape is built, else why not (ParameterError's message).
inline std::string leafKernelShapeError(const LeafKernelShape& shape)
{
    if (shape.splitAbove < 0)
        return "body-leaf kernel: split above " + std::to_string(shape.splitAbove) + " leaf entries (must be >= 0)";
    if (shape.shortRangeSplitAbove < 0)
    {
        return "body-leaf kernel: split TreePM's lists above " + std::to_string(shape.shortRangeSplitAbove) +
               " leaf entries (must be >= 0)";
    }
    if (shape.warpsPerBlock != 4 && shape.warpsPerBlock != 1)
        return "body-leaf kernel: " + std::to_string(shape.warpsPerBlock) + " warps a block are not built (4 or 1)";
    return {};
}

/// The lanes of one pass of m targets (1 <= m <= 32 targetsPerLane) through the body-node kernel.
struct TailPlan
{
    int plainSlots; ///< slots in which each lane serves its own target (or a dummy) over every node of the list
    int tail;       ///< targets left over, 1..16, or 0 when the plain slots hold them all
    int ways; ///< lanes per tail target, 32 / tail (0 without a tail); lane l has part l / tail of target l % tail
};

/// The split of a pass of m targets: the targets that do not fill a slot of 32, when they are 16 or fewer, each
/// take 32 / tail lanes, one in ways staged nodes a lane; 17..31 of them keep a plain slot (one lane each).
/// @param[in] m               targets of the pass, 1..32 targetsPerLane
/// @param[in] targetsPerLane  slots of a lane
HOST_DEVICE constexpr TailPlan tailPlan(int m, int targetsPerLane)
{
    const int full = m / 32 < targetsPerLane ? m / 32 : targetsPerLane;
    const int tail = m - 32 * full;
    if (tail > 16) return {full + 1, 0, 0};
    return {full, tail, tail > 0 ? 32 / tail : 0};
}

/// What a pass costs the warp: lane iterations (a lane's interactions, real or dummy, the slowest lane's)
/// over a list of listLength nodes staged 32 at a time. The estimate behind NodeKernelShape::splitTail
/// (benchmarks/results/gpu_forces/kernel_sass.md); the kernel does exactly this many.
/// @param[in] m               targets of the pass, 1..32 targetsPerLane
/// @param[in] listLength      node-list entries of the group
/// @param[in] targetsPerLane  slots of a lane
/// @param[in] splitTail       NodeKernelShape::splitTail
HOST_DEVICE constexpr int64_t passLaneIterations(int m, int64_t listLength, int targetsPerLane, bool splitTail)
{
    if (!splitTail) return int64_t((m + 31) / 32) * listLength;
    const TailPlan plan = tailPlan(m, targetsPerLane);
    int64_t iterations  = plan.plainSlots * listLength;
    if (plan.ways == 0) return iterations;
    for (int64_t tile = 0; tile < listLength; tile += 32)
    {
        const int64_t count = listLength - tile < 32 ? listLength - tile : 32;
        iterations += (count + plan.ways - 1) / plan.ways;
    }
    return iterations;
}

/// Body-node (quadrupole) forces from the node lists.
/// @param[out] nodeAcc         (acc xyz, potential) with G = 1, indexed like targets (device memory)
/// @param[in]  targetsPerLane  2 or 4 (kDefaultTargetsPerLane)
/// @param[in]  textures        when present, the node entries are read through them instead of __ldg
/// @param[in]  shape           the lanes' split of the groups' targets and the register cap
void bodyNodeForcesGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const TargetView& targets,
                       float eps2, F4* nodeAcc, GpuStream stream, int targetsPerLane = kDefaultTargetsPerLane,
                       const TreeTextures& textures = {}, NodeKernelShape shape = {});

/// Body-leaf (softened body-body) forces from the leaf lists, added to the body-node ones: the total.
/// A target that is a body skips itself by index. In a periodic box the groups' Ewald expansions
/// (ewald_gpu.h) are added last.
/// @param[in]  nodeAcc  bodyNodeForcesGpu's output
/// @param[out] acc      nodeAcc + the leaf sum, G = 1, indexed like targets (must not alias nodeAcc)
/// @param[in]  targetsPerLane  2 or 4, as bodyNodeForcesGpu
/// @param[in]  shape           which groups several warps share
/// @param[in]  withEwald       add the Ewald expansions here; false: the caller launches ewaldGroupCorrectionGpu
///                             itself (GpuSolver, to time it on its own)
void bodyLeafForcesGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const BodyView& bodies,
                       const TargetView& targets, float eps2, const F4* nodeAcc, F4* acc, GpuStream stream,
                       int targetsPerLane = kDefaultTargetsPerLane, LeafKernelShape shape = {}, bool withEwald = true);

} // namespace octwalk
