#pragma once
/// @file ewald_direct.h
/// The exact periodic reference: Ewald-summed direct summation in double, its own implementation
/// (real-space erfc sum over images + Fourier-space sum), the yardstick of the periodic tree walk and
/// the source of the correction table (ewald_table.h).
///
/// Convention (GADGET-2's): a cube of side L, every mass with all its periodic images and a uniform
/// neutralising background (the mean density subtracted), so the potential's mean over the box is
/// zero. With the code's sign (pot accumulates -m/r, G = 1) the potential of body i is
///   pot_i = sum_{j != i} m_j phi(x_i - x_j) + m_i xi,
/// phi the periodic potential of a unit mass, and xi = lim_{r->0} (phi(r) + 1/r) = +2.8372975/L the
/// self term (a body's own images and the background): the Madelung-like constant of the simple cubic
/// lattice (-2.837297 in the +1/r sign convention). Softening, when eps2 > 0, applies to the nearest
/// image only (as in the tree walk and in GADGET-2).
///
/// Splitting parameter alpha (in units of 1/L); real-space images up to r = 6/alpha (erfc(6) = 2e-17)
/// and wave vectors up to |k| = 12 alpha (exp(-k^2/4alpha^2) = 2e-16): converged to double precision for
/// any alpha, which the tests check by comparing alpha = 2 (the usual) with others.

#include <cstdint>
#include <vector>

#include "common/vec.h"

namespace octwalk {

/// The usual splitting: alpha = 2 / L (GADGET-2's table uses it).
constexpr double kEwaldAlphaUsual = 2.0;

/// Acceleration and potential at the target of a unit mass at offset d (source - target), G = 1.
struct EwaldTerm
{
    Vec3d acc;
    double pot;
};

/// The exact periodic pull of a unit mass (all images and the background) at offset d, minus the
/// Newtonian pull of the image at d itself: smooth where d is not a non-zero lattice vector; at d = 0
/// the self term (acc 0, pot xi). This is what common/ewald.h tabulates.
/// @param d       offset source - target (any; not wrapped)
/// @param L       box side, > 0
/// @param alphaL  alpha * L
EwaldTerm ewaldCorrectionExact(Vec3d d, double L, double alphaL = kEwaldAlphaUsual);

/// xi: the potential of a body's own images and the background (see the file comment), G = m = 1.
double ewaldSelfPotential(double L, double alphaL = kEwaldAlphaUsual);

/// Periodic accelerations and potentials (G applied) on the bodies listed in targets from all n bodies
/// (positions in [0, L)^3), in double; acc/pot indexed like targets. The Fourier part goes through
/// the structure factors of all bodies, so the cost is O(n * (targets + wave vectors)).
/// @param eps2    Plummer softening squared of the nearest image
/// @param alphaL  alpha * L: larger moves work from the real-space images to the wave vectors (7 keeps
///                at most one image per axis in the real sum besides the nearest)
void ewaldDirectSum(const Vec3d* pos, const double* mass, int64_t n, const std::vector<int64_t>& targets, double L,
                    double eps2, double G, std::vector<Vec3d>& acc, std::vector<double>& pot, double alphaL = 7.0);

} // namespace octwalk
