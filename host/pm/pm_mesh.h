#pragma once
/// @file pm_mesh.h
/// The long-range half of the TreePM force in a periodic box (the split: common/treepm.h). Bodies'
/// masses are assigned to an n^3 mesh (cloud-in-cell or triangular-shaped cloud), transformed, multiplied
/// by the long-range Green's function -4 pi G / k^2 exp(-k^2 r_s^2) divided by the assignment window
/// squared, W(k) = prod_i sinc(k_i L / 2n)^p (p = 2 CIC, 3 TSC; once for the assignment, once for the
/// interpolation), with the k = 0 mode zero; the acceleration is -i k phi(k) transformed back component by
/// component (spectral differentiation, no finite-difference error), and the potential and the three
/// components are interpolated to the bodies with the same window.
///
/// Interlaced (the default of the parameter pm_interlace), the mesh computes the forces a second time on a mesh
/// shifted by half a cell along each axis and returns the mean of the two (interlacing, Hockney & Eastwood 1988):
/// the leading aliases of the assignment and the interpolation, which make a pair's mesh force depend on where the
/// bodies sit in their cells, have opposite signs on the two meshes and cancel. Twice the mesh's work; a pair's
/// error between r_s and 4 r_s falls 7-8 times (docs/periodic.md).
///
/// The potential follows host/reference/ewald_direct.h (GADGET-2's convention: mean density subtracted,
/// zero mean over the box) and includes the two terms of the split that belong to no pair: the body's own
/// short-range term G m_i / (sqrt(pi) r_s) and the background's G M 4 pi r_s^2 / L^3 (common/treepm.h). The
/// mesh potential plus the short-range pairs (host/reference/short_range_direct.h) is then the Ewald potential.
///
/// The mesh holds n^3 doubles and two half spectra: each field is transformed back into the doubles and
/// interpolated to the bodies before the next (the potential, then the accelerations along x, y, z), as the
/// device's mesh does (device/pm_gpu.h).
///
/// Every sum has a fixed order (the mass assignment gathers each x slab from the bodies sorted by slab, no
/// atomics; the FFT is SlabFftGrid), so results are bit-identical for any number of OpenMP threads.

#include <memory>
#include <complex>
#include <cstdint>
#include <vector>

#include "common/treepm.h"
#include "common/vec.h"
#include "host/core/params.h"
#include "host/pm/mesh_planes.h"
#include "host/pm/slab_fft_grid.h"

namespace octwalk {

/// Seconds spent in each part of the last computeForces.
struct PmTimings
{
    double check       = 0; ///< the bodies' positions and masses
    double sort        = 0; ///< bodies by x slab
    double assign      = 0; ///< masses to the mesh
    double fft         = 0; ///< one forward and four backward transforms
    double green       = 0; ///< the Green's function and the three gradients in Fourier space
    double interpolate = 0; ///< potential and acceleration to the bodies, and the non-pair terms

    double total() const { return check + sort + assign + fft + green + interpolate; }
};

class PmMesh
{
public:
    /// @param boxSize     L: the box [0, L)^3, finite and > 0
    /// @param meshSize    n >= 2 cells per side
    /// @param asmth       the split scale in cells, finite and > 0: r_s = asmth L / n (kTreePmAsmth = 1.25 usual)
    /// @param assignment  CIC or TSC, for the assignment and the interpolation
    /// @param G           the gravitational constant, finite
    /// @param interlaced  the mean of the forces on this mesh and on the mesh shifted by half a cell
    /// ParameterError naming the value otherwise; BackendError when the mesh cannot be allocated.
    PmMesh(double boxSize, int meshSize, double asmth, MassAssignment assignment, double G, bool interlaced = false);

    double boxSize() const { return boxSize_; }
    int meshSize() const { return fft_.n(); }
    /// r_s = asmth L / n.
    double splitScale() const { return splitScale_; }
    MassAssignment assignment() const { return assignment_; }
    bool interlaced() const { return interlaced_; }
    /// The parts of the last computeForces, both passes' when interlaced.
    const PmTimings& timings() const { return timings_; }

    /// Long-range accelerations and potentials (G applied) of n bodies on themselves, indexed like pos.
    /// InputError naming the body and the value for a position outside [0, L) or not finite, or a mass that
    /// is not finite.
    void computeForces(const Vec3d* pos, const double* mass, int64_t n, std::vector<Vec3d>& acc,
                       std::vector<double>& pot);

    /// Adds the two non-pair terms of the potential: the body's own short-range term and the background's,
    /// which is proportional to totalMass, the mass of the whole box.
    void addNonPairTerms(const double* mass, int64_t n, double totalMass, std::vector<double>& pot) const;

private:
    /// The bodies' masses on the mesh (checked by the caller), sorted by plane.
    void assignMasses(const Vec3d* pos, const double* mass, int64_t n);
    /// The potential and the three accelerations on the mesh from its masses, each interpolated to the bodies of
    /// the last assignMasses in turn: write(component, body, sum) once a body and component (0: the potential,
    /// 1-3: the acceleration along x, y, z).
    template<class Write>
    void solveAndInterpolate(Write&& write);
    /// The unshifted mesh's fields in acc and pot averaged with the shifted mesh's (the class comment).
    void averageWithShiftedMesh(const Vec3d* pos, const double* mass, int64_t n, std::vector<Vec3d>& acc,
                                std::vector<double>& pot);
    /// The whole mesh's planes as the passes over them see it (host/pm/mesh_planes.h).
    PmPlanes planes() const;
    void applyGreensFunction();
    void differentiate(int axis);

    double boxSize_, splitScale_, G_;
    MassAssignment assignment_;
    bool interlaced_;
    /// The bodies' places on the shifted mesh (pmShiftedPosition), kept from call to call as order_.
    std::vector<Vec3d> shifted_;
    SlabFftGrid fft_;
    /// Per axis and storage index: the wavenumber k_i and exp(-k_i^2 r_s^2) / W_i(k_i)^2 (the Green's
    /// function's smoothing and the deconvolution both separate into the three axes).
    std::vector<double> k_, axisFactor_;
    /// The potential's spectrum, kept while each component of the acceleration is transformed back.
    std::vector<std::complex<double>> potentialSpectrum_;
    /// Kept from call to call, so that a run that calls every step allocates (and the system pages in) the
    /// bodies' arrays once.
    PmPlaneOrder order_;
    PmTimings timings_;
};

/// InputError naming the first of n bodies (the same for any thread count) whose position is outside [0, boxSize)
/// or not finite, or whose mass is not finite, and its value (pmBodyIsBad, common/pm.h).
void checkPmBodies(const Vec3d* pos, const double* mass, int64_t n, double boxSize);

/// Whether mesh (a PmMesh or a GpuMesh, or none) is the mesh of p's TreePM settings.
template<class Mesh>
bool isMeshOf(const Mesh* mesh, const Parameters& p)
{
    return mesh && mesh->meshSize() == p.pm_grid && mesh->boxSize() == p.box_size &&
           mesh->splitScale() == p.asmth * p.box_size / double(p.pm_grid) && mesh->assignment() == p.pm_assignment &&
           mesh->interlaced() == p.pm_interlace;
}

/// The mesh of p's TreePM settings (G = 1), made anew when mesh is not.
template<class Mesh>
void keepMeshOf(std::unique_ptr<Mesh>& mesh, const Parameters& p)
{
    if (isMeshOf(mesh.get(), p)) return;
    mesh.reset();
    mesh = std::make_unique<Mesh>(p.box_size, p.pm_grid, p.asmth, p.pm_assignment, 1.0, p.pm_interlace);
}

} // namespace octwalk
