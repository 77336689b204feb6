#pragma once
/// @file mass_weighted.h
/// Mass-weighted sums of per-body vectors (centre of mass, mean velocity, mean acceleration).

#include <cstdint>
#include <vector>

#include "common/vec.h"

namespace octwalk {

struct MassWeighted
{
    double mass = 0;    ///< sum of m_i
    Vec3d sum{0, 0, 0}; ///< sum of m_i v_i, in body order

    /// sum / mass; (0, 0, 0) when the total mass is not positive.
    Vec3d mean() const { return mass > 0 ? (1 / mass) * sum : Vec3d{0, 0, 0}; }
};

/// The sums of mass[i] and mass[i] * values[i] over all bodies, in order.
inline MassWeighted massWeighted(const std::vector<double>& mass, const std::vector<Vec3d>& values)
{
    MassWeighted w;
    for (size_t i = 0; i < mass.size(); ++i)
    {
        w.mass += mass[i];
        w.sum += mass[i] * values[i];
    }
    return w;
}

} // namespace octwalk
