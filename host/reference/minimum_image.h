#pragma once
/// @file minimum_image.h
/// The nearest periodic image of an offset, in double, for the exact reference sums.

#include <cmath>

namespace octwalk {

/// d shifted by a multiple of the box length L into [-L/2, L/2] (ties to even multiples).
inline double minimumImage(double d, double L) { return d - L * std::nearbyint(d / L); }

} // namespace octwalk
