#pragma once
/// @file short_range_direct.h
/// The short-range half of the TreePM force (common/treepm.h) summed pair by pair in double: the
/// reference the tree's short-range forces are measured against, and with the mesh's long-range forces
/// (host/pm/pm_mesh.h) a check of the split against the Ewald sum (host/reference/ewald_direct.h).
///
/// Target i takes every body j and every periodic image of it within the cutoff, body i's own
/// images but not itself: the Newtonian pull less the long-range pull that the mesh carries (LongRangePair in
/// common/treepm.h, at the unsoftened distance r), acc += m_j (d / (r^2 + eps2)^(3/2) - acc_long(r) d),
/// pot -= m_j (1 / sqrt(r^2 + eps2) - pot_long(r)). Softening applies to the nearest image only, as in the Ewald
/// reference, so that the sum plus the mesh's force is the Ewald sum's softened force; with eps2 = 0 the sum plus the
/// mesh's potential (which holds the self and background terms, see common/treepm.h) is the Ewald potential of the
/// same bodies.

#include <cstdint>
#include <vector>

#include "common/vec.h"

namespace octwalk {

/// The split and its cutoff for one box.
struct ShortRangeSplit
{
    double boxSize;    ///< L > 0
    double splitScale; ///< r_s > 0
    double cutoff;     ///< pairs at r >= cutoff are left out; > 0
};

/// Short-range accelerations and potentials (G applied) on the bodies listed in targets from all n
/// bodies (positions in [0, L)^3), in double; acc/pot indexed like targets. Cost O(targets * n * images
/// within the cutoff): one image per pair while the cutoff is below L/2.
/// ParameterError naming the value for L, r_s or a cutoff that is not finite and > 0, or eps2 < 0.
void shortRangeDirectSum(const Vec3d* pos, const double* mass, int64_t n, const std::vector<int64_t>& targets,
                         const ShortRangeSplit& split, double eps2, double G, std::vector<Vec3d>& acc,
                         std::vector<double>& pot);

} // namespace octwalk
