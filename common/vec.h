#pragma once
/// @file vec.h
/// Plain vector types shared by host and device. F4/U4/I2 have the size and alignment of
/// CUDA's float4/uint4/int2 so packed arrays can be reinterpreted on the device without copies.

#include <cstdint>

#include "common/hostdevice.h"

namespace octwalk {

struct alignas(16) F4
{
    float x, y, z, w;
};

struct alignas(16) U4
{
    uint32_t x, y, z, w;
};

struct alignas(8) I2
{
    int32_t x, y;
};

static_assert(sizeof(F4) == 16 && alignof(F4) == 16, "F4 must match float4");
static_assert(sizeof(U4) == 16 && alignof(U4) == 16, "U4 must match uint4");
static_assert(sizeof(I2) == 8 && alignof(I2) == 8, "I2 must match int2");

template<class T>
struct Vec3
{
    T x, y, z;

    HOST_DEVICE Vec3& operator+=(const Vec3& b)
    {
        x += b.x;
        y += b.y;
        z += b.z;
        return *this;
    }
};

template<class T>
HOST_DEVICE inline Vec3<T> operator+(Vec3<T> a, Vec3<T> b)
{
    return {a.x + b.x, a.y + b.y, a.z + b.z};
}

template<class T>
HOST_DEVICE inline Vec3<T> operator-(Vec3<T> a, Vec3<T> b)
{
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}

template<class T>
HOST_DEVICE inline Vec3<T> operator*(T s, Vec3<T> a)
{
    return {s * a.x, s * a.y, s * a.z};
}

template<class T>
HOST_DEVICE inline T dot(Vec3<T> a, Vec3<T> b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

using Vec3f = Vec3<float>;
using Vec3d = Vec3<double>;

HOST_DEVICE inline Vec3f xyz(F4 v) { return {v.x, v.y, v.z}; }

/// Smaller of a and b, as std::min (b when b < a, else a), callable on the device: boxes then agree
/// bit for bit with the host build's, signed zeros included.
template<class T>
HOST_DEVICE inline T minOf(T a, T b)
{
    return b < a ? b : a;
}

/// Larger of a and b, as std::max (b when a < b, else a): a NaN b never wins.
template<class T>
HOST_DEVICE inline T maxOf(T a, T b)
{
    return a < b ? b : a;
}

} // namespace octwalk
