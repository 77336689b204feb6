#pragma once
/// @file room.h
/// Resizing of the build's arrays whose length follows the tree (cells, nodes, groups), which a pipelined run rebuilds
/// into the same buffers every step.

#include <cstddef>

namespace octwalk {

/// Room a tree array gets beyond its length when it must grow: the cells of an evolving model grow by a few per cent
/// from build to build, and a vector resized past its capacity moves to fresh memory twice its length, copying
/// everything and faulting in every page. On an H200 host (2^24 bodies of an LCDM box) the second and third builds
/// of a pipelined run took 0.3-0.4 s instead of 0.05 s that way, each the first to outgrow a topology's buffers.
constexpr size_t kTreeRoomDivisor = 4;

/// v.resize(n), reserving n / kTreeRoomDivisor more first when n exceeds the capacity. The room is not touched
/// until used, so it costs address space, not time.
template<class Vector>
void resizeWithRoom(Vector& v, size_t n)
{
    if (n > v.capacity()) v.reserve(n + n / kTreeRoomDivisor);
    v.resize(n);
}

} // namespace octwalk
