#pragma once
/// @file room.h
/// Sizing of the build's arrays whose length follows the tree (cells, nodes, groups), which a pipelined run rebuilds
/// into the same buffers every step.

#include <cstddef>

namespace octwalk {

/// Sizes v to n elements, every one of which the caller then writes. Past its capacity, v takes fresh memory with
/// room for 2n and drops what it held instead of copying it. The cells of an evolving model grow by a few per cent
/// from build to build: a vector resized past its capacity moves to fresh memory, copying everything and faulting in
/// every page, and on an H200 host (an LCDM box of 2^24 bodies) the second and third builds of a pipelined run took
/// 0.3-0.4 s instead of 0.05 s that way, each the first to outgrow a topology's buffers; a room of a quarter only
/// moved such builds to later steps. An ordinary vector does not touch its room until used; a PinnedVector
/// page-locks it at once (cudaHostAlloc), as it would the doubled capacity of std::vector's own growth, so a tree
/// whose cells grow at all ends with as much locked memory either way.
template<class Vector>
void sizeForOverwrite(Vector& v, size_t n)
{
    if (n > v.capacity())
    {
        Vector fresh;
        fresh.reserve(2 * n);
        v.swap(fresh);
    }
    v.resize(n);
}

} // namespace octwalk
