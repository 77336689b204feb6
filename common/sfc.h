#pragma once
/// @file sfc.h
/// 63-bit Morton keys, 21 bits per dimension. Octant digit at level l (1..21) is
/// (key >> 3*(21-l)) & 7 with bit 2 = x, bit 1 = y, bit 0 = z, so every octree cell is a
/// contiguous key range and children come in octant order.

#include <cstdint>

#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

constexpr int kMaxTreeLevel     = 21;
constexpr uint32_t kKeyGridSize = 1u << kMaxTreeLevel;

/// Spreads the low 21 bits of v so that bit i moves to bit 3i.
HOST_DEVICE inline uint64_t spreadBits21(uint32_t v)
{
    uint64_t x = v & 0x1fffffu;
    x          = (x | x << 32) & 0x1f00000000ffffull;
    x          = (x | x << 16) & 0x1f0000ff0000ffull;
    x          = (x | x << 8) & 0x100f00f00f00f00full;
    x          = (x | x << 4) & 0x10c30c30c30c30c3ull;
    x          = (x | x << 2) & 0x1249249249249249ull;
    return x;
}

HOST_DEVICE inline uint64_t mortonKey(uint32_t ix, uint32_t iy, uint32_t iz)
{
    return spreadBits21(ix) << 2 | spreadBits21(iy) << 1 | spreadBits21(iz);
}

/// Grid coordinate of x in a cube starting at lo with kKeyGridSize/size cells per unit, clamped.
HOST_DEVICE inline uint32_t gridCoordinate(double x, double lo, double cellsPerUnit)
{
    double g = (x - lo) * cellsPerUnit;
    if (!(g > 0.0)) return 0;
    if (g >= double(kKeyGridSize - 1)) return kKeyGridSize - 1;
    return uint32_t(g);
}

/// The key grid of a cube with low corner lo and edge `size` (1 when size is not positive: all points
/// coincide): the host's sort (host/tree/sort.cpp) and the device's (ResidentGpu's sorted keys) compute
/// the same keys from the same bounding box.
struct KeyGrid
{
    Vec3d lo;
    double cellsPerUnit;

    HOST_DEVICE static KeyGrid ofCube(const Vec3d& lo, double size)
    {
        return {lo, double(kKeyGridSize) / (size > 0 ? size : 1.0)};
    }
    /// The cube of a bounding box [lo, hi]: its edge is the box's largest extent.
    HOST_DEVICE static KeyGrid ofBox(const Vec3d& lo, const Vec3d& hi)
    {
        const double ex = hi.x - lo.x, ey = hi.y - lo.y, ez = hi.z - lo.z;
        const double exy = ex < ey ? ey : ex;
        return ofCube(lo, exy < ez ? ez : exy);
    }
    HOST_DEVICE uint64_t key(const Vec3d& p) const
    {
        return mortonKey(gridCoordinate(p.x, lo.x, cellsPerUnit), gridCoordinate(p.y, lo.y, cellsPerUnit),
                         gridCoordinate(p.z, lo.z, cellsPerUnit));
    }
};

/// Octant (0..7) of a key at tree level l (1..kMaxTreeLevel).
HOST_DEVICE inline int octantAtLevel(uint64_t key, int level)
{
    return int((key >> (3 * (kMaxTreeLevel - level))) & 7u);
}

} // namespace octwalk
