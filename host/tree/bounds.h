#pragma once
/// @file bounds.h
/// The axis-aligned bounding box of points, for any vector type with members x, y, z (Vec3d, Vec3f,
/// F4: other members, such as F4::w, are not looked at and keep the first point's value).

#include <algorithm>
#include <cstdint>

namespace octwalk {

template<class V>
struct Box
{
    V lo, hi;
};

/// Grows box to hold p.
template<class V>
void includePoint(Box<V>& box, const V& p)
{
    box.lo.x = std::min(box.lo.x, p.x);
    box.lo.y = std::min(box.lo.y, p.y);
    box.lo.z = std::min(box.lo.z, p.z);
    box.hi.x = std::max(box.hi.x, p.x);
    box.hi.y = std::max(box.hi.y, p.y);
    box.hi.z = std::max(box.hi.z, p.z);
}

/// Grows box to hold other.
template<class V>
void includeBox(Box<V>& box, const Box<V>& other)
{
    box.lo.x = std::min(box.lo.x, other.lo.x);
    box.lo.y = std::min(box.lo.y, other.lo.y);
    box.lo.z = std::min(box.lo.z, other.lo.z);
    box.hi.x = std::max(box.hi.x, other.hi.x);
    box.hi.y = std::max(box.hi.y, other.hi.y);
    box.hi.z = std::max(box.hi.z, other.hi.z);
}

/// The tight box of points[0, n), n >= 1.
template<class V>
Box<V> boundingBox(const V* points, int64_t n)
{
    Box<V> box{points[0], points[0]};
    for (int64_t i = 1; i < n; ++i) includePoint(box, points[i]);
    return box;
}

/// The largest edge of box.
template<class V>
auto largestExtent(const Box<V>& box)
{
    return std::max({box.hi.x - box.lo.x, box.hi.y - box.lo.y, box.hi.z - box.lo.z});
}

} // namespace octwalk
