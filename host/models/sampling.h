#pragma once
/// @file sampling.h
/// Random draws shared by the built-in models (internal to host/models).

#include <cmath>

#include "common/vec.h"
#include "host/core/random.h"

namespace octwalk {

constexpr double kPi = 3.14159265358979323846;

/// A vector of length r in a uniformly random direction (cos theta, then phi, from rng).
inline Vec3d isotropic(Random& rng, double r)
{
    double cosT = 2 * rng.uniform() - 1;
    double sinT = std::sqrt(1 - cosT * cosT);
    double phi  = 2 * kPi * rng.uniform();
    return {r * sinT * std::cos(phi), r * sinT * std::sin(phi), r * cosT};
}

} // namespace octwalk
