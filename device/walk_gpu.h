#pragma once
/// @file walk_gpu.h
/// The group walk on the device: pass 1 (count), the scan, pass 2 (write). Twin of host/cpu/walk_cpu.h:
/// the same arguments (views pointing at device memory) plus a stream, and the same common/walk.h walk
/// (the team walk: its classifyEntry, in walkGroup's order), so the lists are bit-identical to the CPU
/// twin's. Launches are asynchronous on the stream; built from
/// walk_gpu.cu with CUDA, from gpu_none.cpp without (then they throw BackendError).

#include <cstddef>
#include <cstdint>

#include "common/tree_view.h"
#include "device/gpu_stream.h"

namespace octwalk {

/// How the device walks the tree (both give the CPU twin's lists exactly): one thread per group, or a
/// team of 8 lanes per group, one lane per child of the cell being opened.
enum class GpuWalk
{
    Thread,
    Team,
};

/// Texture objects (cudaTextureObject_t handles, 0 when absent) over the tree's read-only arrays,
/// for the texture read path (GpuKernelConfig::textures): the child words as 32-bit words, the
/// others as float4. Without them the kernels read through __ldg.
struct TreeTextures
{
    uint64_t children = 0, nodeMac = 0, nodeCom = 0, nodeQuad = 0;

    bool present() const { return children != 0 && nodeMac != 0 && nodeCom != 0 && nodeQuad != 0; }
};

/// Device memory the scan may use as temporary storage.
struct GpuScratch
{
    void* data   = nullptr;
    size_t bytes = 0;
};

/// Pass 1: counts each group's list entries (one thread or one team per group, as walk says; the
/// team walk reads the child words and MAC words through textures when they are present).
/// @param[out] counts         device arrays; nodes and leaves need numGroups + 1 entries, the last of
///                            which the launcher zeroes so that the scan's last offset is the total
/// @param[out] overflowGroup  one device int32: 1 + the highest group whose walk overflowed its stack,
///                            0 when none did (never with the tree's true depth)
void countInteractionsGpu(const TreeView& tree, const GroupView& groups, const CountsView& counts,
                          int32_t* overflowGroup, GpuStream stream, GpuWalk walk = GpuWalk::Thread,
                          const TreeTextures& textures = {});

/// Bytes of scratch scanCountsGpu needs for numGroups groups (no device work).
size_t scanCountsGpuScratchBytes(int32_t numGroups);

/// Exclusive scan of the counts into lists.nodeOffset and lists.leafOffset (numGroups + 1 entries, the
/// last the total), in 64 bits; the list pointers are not read.
/// @param[in] scratch  at least scanCountsGpuScratchBytes(counts.numGroups) bytes of device memory
void scanCountsGpu(const CountsView& counts, const ListView& lists, GpuScratch scratch, GpuStream stream);

/// Entries a chunk of the staged walk's pools holds (WalkStaging): node lists run to thousands of entries a group,
/// leaf lists to about a hundred; a group wastes half a chunk of each on average.
constexpr int32_t kStagedNodeChunk = 128;
constexpr int32_t kStagedLeafChunk = 32;
/// WalkStaging::nodeFirst / leafFirst of a group whose walk found its pool exhausted: pass 2 walks it again.
constexpr int32_t kNotStaged = -2;

/// Where the staged pass 1 keeps each group's entries for pass 2, in device memory: pools of fixed-size chunks that
/// the walk claims as it goes (an integer atomic counter: which chunks a group gets varies from run to run, the
/// entries they hold and the lists pass 2 makes of them do not), chained per group.
struct WalkStaging
{
    int32_t* nodePool; ///< nodeChunks chunks of kStagedNodeChunk entries
    int32_t* leafPool; ///< leafChunks chunks of kStagedLeafChunk entries
    int32_t* nodeNext; ///< per chunk: the next chunk of its group's list (read only while entries remain)
    int32_t* leafNext;
    int32_t* nodeFirst; ///< per group: its first chunk, -1 for an empty list, kNotStaged
    int32_t* leafFirst;
    int32_t* claimed; ///< two counters, the node and the leaf chunks claimed (the launcher zeroes them)
    int32_t nodeChunks, leafChunks;
};

/// Pass 1 of the team walk that also stages each group's entries (WalkStaging), so that pass 2 copies them in
/// order instead of walking again: countInteractionsGpu's counts, overflow flag and launch, plus the staging.
void countAndStageInteractionsGpu(const TreeView& tree, const GroupView& groups, const CountsView& counts,
                                  const WalkStaging& staging, int32_t* overflowGroup, GpuStream stream,
                                  const TreeTextures& textures = {});

/// Pass 2 after countAndStageInteractionsGpu: each staged group's chunks copied to its offsets, and the team walk
/// again for the groups whose pool ran out. The lists are writeInteractionsGpu's, entry for entry.
void writeStagedInteractionsGpu(const TreeView& tree, const GroupView& groups, const CountsView& counts,
                                const ListView& lists, const WalkStaging& staging, int32_t* overflowGroup,
                                GpuStream stream, const TreeTextures& textures = {});

/// Pass 2: the same walk writes each group's entries at its offsets.
/// @param[in,out] overflowGroup  raised as in countInteractionsGpu
void writeInteractionsGpu(const TreeView& tree, const GroupView& groups, const ListView& lists, int32_t* overflowGroup,
                          GpuStream stream, GpuWalk walk = GpuWalk::Thread, const TreeTextures& textures = {});

} // namespace octwalk
