#pragma once
/// @file mac.h
/// Multipole acceptance criteria. Both reduce to one comparison in the walk: a node is accepted
/// for a group when the squared minimum distance from the group's box to the node's centre of
/// mass exceeds the node's squared MAC radius, which the packer precomputes with macRadius2().

#include <cstdint>

#include "common/ewald.h"
#include "common/hostdevice.h"
#include "common/vec.h"

namespace octwalk {

enum class Mac : int32_t
{
    /// Octgrav's original: accept when d > l / theta.
    Octgrav = 0,
    /// Bonsai's improved Barnes-Hut: accept when d > l / theta + delta, delta = |com - box centre|.
    /// Default: it stays safe when a node's mass sits at one corner of its box (the failure
    /// of the plain criterion described by Salmon & Warren 1994) at almost no extra cost.
    Bonsai = 1,
};

/// Squared MAC radius of a node with tight-box side l (largest extent) and centre-of-mass offset delta.
HOST_DEVICE inline float macRadius2(Mac mac, float l, float delta, float invTheta)
{
    float r = l * invTheta + (mac == Mac::Bonsai ? delta : 0.0f);
    return r * r;
}

/// Squared minimum distance from an axis-aligned box (centre c, half-sizes h) to point p.
HOST_DEVICE inline float boxPointDistance2(Vec3f c, Vec3f h, Vec3f p)
{
    float dx = fmaxf(fabsf(p.x - c.x) - h.x, 0.0f);
    float dy = fmaxf(fabsf(p.y - c.y) - h.y, 0.0f);
    float dz = fmaxf(fabsf(p.z - c.z) - h.z, 0.0f);
    // Evaluated identically on host and device, so both walks take the same decisions.
    return addNoFma(addNoFma(mulNoFma(dx, dx), mulNoFma(dy, dy)), mulNoFma(dz, dz));
}

/// Squared minimum distance from an axis-aligned box to every periodic image of point p. Separable
/// per axis: the interval [c - h, c + h] is nearest to the image of p nearest to c, so this bounds the
/// distance from every point of the box to its own nearest image of p.
HOST_DEVICE inline float boxPointDistance2Periodic(Vec3f c, Vec3f h, Vec3f p, const PeriodicView& box)
{
    Vec3f d  = nearestImage(p - c, box);
    float dx = fmaxf(fabsf(d.x) - h.x, 0.0f);
    float dy = fmaxf(fabsf(d.y) - h.y, 0.0f);
    float dz = fmaxf(fabsf(d.z) - h.z, 0.0f);
    return addNoFma(addNoFma(mulNoFma(dx, dx), mulNoFma(dy, dy)), mulNoFma(dz, dz));
}

/// The node (packed as com xyz + squared MAC radius) is far enough from the group's box
/// to be used as a multipole by every body of the group.
HOST_DEVICE inline bool acceptNode(F4 nodeMac, F4 groupCenter, F4 groupHalf)
{
    return boxPointDistance2(xyz(groupCenter), xyz(groupHalf), xyz(nodeMac)) > nodeMac.w;
}

/// The same in a periodic box: every image of the node is far enough from the group's box, so each
/// body may use the image of the node nearest to itself (the force kernels do).
HOST_DEVICE inline bool acceptNode(F4 nodeMac, F4 groupCenter, F4 groupHalf, const PeriodicView& box)
{
    if (box.boxSize == 0.0f) return acceptNode(nodeMac, groupCenter, groupHalf);
    return boxPointDistance2Periodic(xyz(groupCenter), xyz(groupHalf), xyz(nodeMac), box) > nodeMac.w;
}

} // namespace octwalk
