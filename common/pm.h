#pragma once
/// @file pm.h
/// The particle mesh's arithmetic, once for both meshes: the host's (host/pm/pm_mesh.h, FFTW) and the
/// device's (device/pm_gpu.h, cuFFT). A body's cloud on each axis (cloud in cell or triangular-shaped
/// cloud), the wavenumber of a storage index, the per-axis factor of the long-range Green's function
/// (the split's Gaussian over the assignment window squared) and the factor of one mode. Both meshes
/// build their tables and stencils from these, so they differ only in the order of their sums (the
/// transforms' and the mass assignment's), the device's fixed-point assignment and its fused multiply-adds.

#include <charconv>
#include <cstdint>
#include <string>

#include "common/errors.h"
#include "common/hostdevice.h"
#include "common/integrate.h"
#include "common/treepm.h"
#include "common/vec.h"

namespace octwalk {

/// Cells of a body's cloud per axis: 2 for CIC, 3 for TSC.
HOST_DEVICE inline int pmStencilWidth(MassAssignment a) { return a == MassAssignment::Cic ? 2 : 3; }

/// The cells of one axis that a body's cloud covers and its weights there (Width 2: CIC, 3: TSC).
template<int Width>
struct PmAxisStencil
{
    int64_t cell[Width];
    double weight[Width];
};

/// The stencil of coordinate x for mesh points at i L / n, i in [0, n), cellsPerLength = n / L.
template<int Width>
HOST_DEVICE inline PmAxisStencil<Width> pmAxisStencil(double x, double cellsPerLength, int64_t n)
{
    static_assert(Width == 2 || Width == 3, "CIC or TSC");
    const double g = x * cellsPerLength;
    PmAxisStencil<Width> s;
    int64_t first;
    if constexpr (Width == 2)
    {
        const double base = floor(g), d = g - base;
        first       = int64_t(base);
        s.weight[0] = 1.0 - d;
        s.weight[1] = d;
    }
    else
    {
        const double nearest = floor(g + 0.5), d = g - nearest;
        first       = int64_t(nearest) - 1;
        s.weight[0] = 0.5 * (0.5 - d) * (0.5 - d);
        s.weight[1] = 0.75 - d * d;
        s.weight[2] = 0.5 * (0.5 + d) * (0.5 + d);
    }
    // x * n / L may round up to n, and a cloud reaches past either face: the periodic cell. first + k lies
    // in [-1, n + 2], so at most two steps of n (selects, not an integer division per cell).
    for (int k = 0; k < Width; ++k)
    {
        int64_t c = first + k;
        c         = c < 0 ? c + n : c;
        c         = c >= n ? c - n : c;
        s.cell[k] = c >= n ? c - n : c;
    }
    return s;
}

template<int Width>
struct PmStencil
{
    PmAxisStencil<Width> x, y, z;
};

template<int Width>
HOST_DEVICE inline PmStencil<Width> pmStencilOf(double x, double y, double z, double cellsPerLength, int64_t n)
{
    return {pmAxisStencil<Width>(x, cellsPerLength, n), pmAxisStencil<Width>(y, cellsPerLength, n),
            pmAxisStencil<Width>(z, cellsPerLength, n)};
}

/// A body's place on a mesh shifted by half a cell along each axis (mesh points at (i + 1/2) L / n), as a place on
/// the unshifted mesh: p - h/2 per axis, wrapped into [0, L) (halfCell = L / 2n). Every mesh computes an interlaced
/// pass by running unchanged on these places. A coordinate within rounding of L after the wrap is 0, its image.
HOST_DEVICE inline double pmShiftedCoordinate(double x, double halfCell, double L)
{
    double s = x - halfCell;
    s        = s < 0 ? s + L : s;
    return s < L ? s : 0.0;
}

HOST_DEVICE inline Vec3d pmShiftedPosition(Vec3d p, double halfCell, double L)
{
    return {pmShiftedCoordinate(p.x, halfCell, L), pmShiftedCoordinate(p.y, halfCell, L),
            pmShiftedCoordinate(p.z, halfCell, L)};
}

/// The signed wavenumber of storage index i along a full axis of n: i for i <= n/2, else i - n.
/// A body's value of mesh field `component`, as the meshes transform the fields back one after another: 0 its
/// potential, 1-3 its acceleration along x, y, z.
HOST_DEVICE inline double& pmBodyField(int component, Vec3d& acc, double& pot)
{
    return component == 0 ? pot : component == 1 ? acc.x : component == 2 ? acc.y : acc.z;
}

HOST_DEVICE inline int pmWavenumber(int i, int n) { return i <= n / 2 ? i : i - n; }

/// One axis of the Green's function at storage index i of an n mesh over the box side L, split scale rs:
/// its wavenumber k_i and exp(-k_i^2 rs^2) / W_i(k_i)^2, W_i = sinc(pi h / n)^p (p = pmStencilWidth: once for
/// the assignment, once for the interpolation). The smoothing and the deconvolution both separate into
/// the three axes, so a mode's factor is the product of three of these over k^2 (pmModeFactor).
struct PmAxisFactor
{
    double k, factor;
};

HOST_DEVICE inline PmAxisFactor pmAxisFactor(int i, int n, double boxSize, double splitScale, MassAssignment a)
{
    const double pi = treepm_detail::kPi;
    const int h     = pmWavenumber(i, n);
    const double k  = 2 * pi * h / boxSize;
    const double x  = pi * h / n;
    const double w  = pow(x == 0 ? 1.0 : sin(x) / x, double(pmStencilWidth(a)));
    return {k, exp(-k * k * splitScale * splitScale) / (w * w)};
}

/// What every mode of the masses' spectrum is multiplied by besides its own factors: -4 pi G / L^3, so that the
/// backward transform's sum over k is the potential (G applied).
HOST_DEVICE inline double pmGreenScale(double G, double boxSize)
{
    return -4 * treepm_detail::kPi * G / (boxSize * boxSize * boxSize);
}

/// The factor of mode (i, j, l) from its first two axes' kxy2 = k_i^2 + k_j^2 and fxy = scale f_i f_j and the
/// third axis' k_l and f_l: fxy f_l / k^2, 0 at k = 0 (the background has no potential).
HOST_DEVICE inline double pmModeFactor(double kxy2, double fxy, double kl, double fl)
{
    const double k2 = kxy2 + kl * kl;
    return k2 > 0 ? fxy * fl / k2 : 0.0;
}

/// The Nyquist index of an even axis has no sign: -i k there would not be Hermitian, so its slope is zero
/// (which also keeps the mesh force antisymmetric: no net self-force on the mesh).
HOST_DEVICE inline double pmSlope(int64_t index, int64_t n, double k) { return n % 2 == 0 && index == n / 2 ? 0.0 : k; }

/// The largest mesh: n^3 cells must index in 64 bits with room to spare.
constexpr int kPmMaxMeshSize = 1 << 15;

namespace pm_detail {

/// The shortest text that reads back as value (1e-09, not 1.0000000000000001e-09).
inline std::string text(double value)
{
    char buffer[32];
    return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value).ptr);
}

} // namespace pm_detail

/// meshSize after every parameter of a mesh has been checked (ParameterError naming the bad one).
inline int pmCheckedMeshSize(double boxSize, int meshSize, double asmth, double G)
{
    using pm_detail::text;
    if (!(std::isfinite(boxSize) && boxSize > 0))
        throw ParameterError("PM mesh: box size L = " + text(boxSize) + " is invalid: must be finite and > 0");
    if (meshSize < 2 || meshSize > kPmMaxMeshSize)
        throw ParameterError("PM mesh: mesh size n = " + std::to_string(meshSize) + " is invalid: must be in [2, " +
                             std::to_string(kPmMaxMeshSize) + "]");
    if (!(std::isfinite(asmth) && asmth > 0))
        throw ParameterError("PM mesh: split scale asmth = " + text(asmth) +
                             " cells is invalid: must be finite and > 0 (r_s = asmth L / n)");
    if (!std::isfinite(G)) throw ParameterError("PM mesh: G = " + text(G) + " is invalid: must be finite");
    return meshSize;
}

/// Whether a body cannot be put on the mesh of the box [0, L)^3: a position outside it or not finite, or a
/// mass that is not finite.
HOST_DEVICE inline bool pmBodyIsBad(Vec3d p, double m, double L)
{
    auto outside = [L](double x) { return !(x >= 0.0 && x < L); };
    return !finiteValue(m) || outside(p.x) || outside(p.y) || outside(p.z);
}

/// InputError naming body i and its first bad value (pmBodyIsBad).
[[noreturn]] inline void throwBadPmBody(int64_t i, Vec3d p, double m, double L)
{
    using pm_detail::text;
    const std::string body = "PM mesh: body " + std::to_string(i);
    if (!std::isfinite(m)) throw InputError(body + " has mass " + text(m) + ": must be finite");
    const double c[3]    = {p.x, p.y, p.z};
    const char* names[3] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d)
    {
        if (!(c[d] >= 0.0 && c[d] < L))
        {
            throw InputError(body + ": position " + names[d] + " = " + text(c[d]) +
                             " is outside the periodic box [0, " + text(L) + ")");
        }
    }
    throw InputError(body + " cannot be put on the mesh"); // unreachable for a body pmBodyIsBad refuses
}

} // namespace octwalk
