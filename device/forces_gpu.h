#pragma once
/// @file forces_gpu.h
/// Body-node and body-leaf forces on the device. Twin of host/cpu/forces_cpu.h: the same arguments
/// (views pointing at device memory) plus a stream; every target sums its lists in list order, and no
/// floating-point atomics. Launches are asynchronous on the stream; built from forces_gpu.cu with CUDA,
/// from gpu_none.cpp without (then they throw BackendError).

#include "common/tree_view.h"
#include "device/gpu_stream.h"
#include "device/walk_gpu.h"

namespace octwalk {

/// Targets each lane of the force kernels serves per pass over a group's lists (the kernels are built
/// for 2 and 4; ParameterError otherwise): more share each staged node, fewer leave fewer lanes idle
/// in groups of 33..127 bodies. The default is the landed one; the benchmarks measure both.
constexpr int kDefaultTargetsPerLane = 2;

/// Body-node (quadrupole) forces from the node lists.
/// @param[out] nodeAcc         (acc xyz, potential) with G = 1, indexed like targets (device memory)
/// @param[in]  targetsPerLane  2 or 4 (kDefaultTargetsPerLane)
/// @param[in]  textures        when present, the node entries are read through them instead of __ldg
void bodyNodeForcesGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const TargetView& targets,
                       float eps2, F4* nodeAcc, GpuStream stream, int targetsPerLane = kDefaultTargetsPerLane,
                       const TreeTextures& textures = {});

/// Body-leaf (softened body-body) forces from the leaf lists, added to the body-node ones: the total.
/// A target that is a body skips itself by index. In a periodic box the groups' Ewald expansions
/// (ewald_gpu.h) are added last.
/// @param[in]  nodeAcc  bodyNodeForcesGpu's output
/// @param[out] acc      nodeAcc + the leaf sum, G = 1, indexed like targets (must not alias nodeAcc)
/// @param[in]  targetsPerLane  2 or 4, as bodyNodeForcesGpu
void bodyLeafForcesGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, const BodyView& bodies,
                       const TargetView& targets, float eps2, const F4* nodeAcc, F4* acc, GpuStream stream,
                       int targetsPerLane = kDefaultTargetsPerLane);

} // namespace octwalk
