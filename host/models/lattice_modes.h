#pragma once
/// @file lattice_modes.h
/// Particle linear theory (PLT) of a perturbed simple cubic lattice (Marcos, Baertschiger, Joyce,
/// Gabrielli & Sylos Labini 2006; Joyce & Marcos 2007; Garrison, Eisenstein, Ferrer, Metchnik & Pinto
/// 2016, MNRAS 461, 4125): a lattice of spacing 1 displaced by u exp(i k.q) feels, to first order in u,
/// the acceleration D(k) u, where D is the dynamical matrix of gravity on the lattice with the mean
/// density subtracted (Ewald-summed; units 4 pi G rho = 1). In the fluid limit D -> k k^T / k^2; on the
/// lattice each k has three eigenvalues eps_j (summing to 1, Kohn's sum rule) and eigenvectors close
/// to, but not exactly, along and across k. Each eigenmode grows as g_j(a), the solution of
///     g'' + (2 + dln H / dln a) g' = 3/2 Omega_m(a) eps_j g     (' = d / dln a),
/// so the fluid's growing mode (eps = 1: D(a)) is not the lattice's.

#include <array>
#include <vector>

#include "host/core/cosmology.h"

namespace octwalk {

using Vector3 = std::array<double, 3>;
using Matrix3 = std::array<Vector3, 3>;

/// The dynamical matrix D(k) of the unit-spacing simple cubic lattice (4 pi G rho = 1): Ewald's
/// real-space erfc sum over lattice vectors plus the reciprocal sum, both converged to double precision.
/// @param[in] k  wavevector in units of 1 / spacing (the first Brillouin zone, |k_i| <= pi)
Matrix3 latticeDynamicalMatrix(const Vector3& k);

/// Eigenvalues (descending) and unit eigenvectors of a symmetric 3x3 matrix (cyclic Jacobi rotations).
struct SymmetricEigen
{
    Vector3 values;
    /// vectors[j] belongs to values[j].
    std::array<Vector3, 3> vectors;
};

/// The eigen-decomposition of a symmetric matrix (only the upper triangle is read).
SymmetricEigen symmetricEigen(const Matrix3& m);

/// The lattice's growing eigenmode of one wavevector: the largest eigenvalue and its eigenvector,
/// oriented so that e.k >= 0.
struct GrowingMode
{
    double eps = 1.0;
    Vector3 e{};
};

/// D(k) and its growing mode for every integer wavenumber of an n^3 grid (k = 2 pi m / n per spacing),
/// computed once per wavenumber up to the cubic symmetry (|m_x| >= |m_y| >= |m_z|: about (n/2)^3 / 6
/// matrices) and mapped to the others by the axis permutation and reflections that bring them there.
class LatticeModes
{
public:
    /// ParameterError for n < 2.
    explicit LatticeModes(int n);

    int n() const { return n_; }

    /// D(k) of the mode with integer wavenumber (mx, my, mz), each in [-n/2, n/2].
    Matrix3 matrix(int mx, int my, int mz) const;

    /// The growing mode of (mx, my, mz), each in [-n/2, n/2]; k = 0 gives eps 1 and e = 0.
    GrowingMode growingMode(int mx, int my, int mz) const;

    /// The smallest and largest growing-mode eigenvalue over the table.
    double smallestGrowingEps() const { return smallestEps_; }
    double largestGrowingEps() const { return largestEps_; }

private:
    struct Entry
    {
        Matrix3 matrix;
        GrowingMode mode;
    };
    int n_;
    int half_;
    std::vector<Entry> entries_; ///< indexed by sortedIndex(a >= b >= c)
    double smallestEps_ = 1.0;
    double largestEps_  = 1.0;
    int64_t sortedIndex(int a, int b, int c) const;
};

/// The growth of a lattice eigenmode with eigenvalue eps from a0 to a1 along its growing solution
/// (started deep in matter domination as g ~ a^alpha, alpha = (-1 + sqrt(1 + 24 eps)) / 4, and integrated
/// by RK4 in ln a): g(a1) / g(a0), and its growth rate f = dln g / dln a at a0. eps = 1 gives the fluid's
/// D(a1) / D(a0) and f(a0).
struct LatticeGrowthAt
{
    double ratio = 1.0;
    double rate  = 1.0;
};

/// The direct integration; ParameterError naming the value for eps <= -1/24 (no growing solution),
/// a0 <= 0 or a1 < a0. The cosmology must satisfy validateCosmology on (0, a1].
LatticeGrowthAt latticeGrowth(const Cosmology& c, double eps, double a0, double a1);

/// latticeGrowth tabulated over eps in [epsMin, epsMax] at fixed a0 and a1, linearly interpolated (the
/// table's spacing keeps the interpolation error of the ratio below 1e-6; tested).
class LatticeGrowthTable
{
public:
    /// @param[in] c       the cosmology
    /// @param[in] a0      the start (ICs' a_begin)
    /// @param[in] a1      the target, > a0
    /// @param[in] epsMin  smallest eps served, > -1/24
    /// @param[in] epsMax  largest eps served, >= epsMin
    LatticeGrowthTable(const Cosmology& c, double a0, double a1, double epsMin, double epsMax);

    /// The interpolated growth; eps outside [epsMin, epsMax] is clamped to the table's ends.
    LatticeGrowthAt at(double eps) const;

private:
    double epsMin_;
    double step_;
    std::vector<LatticeGrowthAt> nodes_;
};

} // namespace octwalk
