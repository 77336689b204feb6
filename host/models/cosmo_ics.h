#pragma once
/// @file cosmo_ics.h
/// Cosmological initial conditions: a grid of n^3 equal-mass particles in a periodic box, displaced
/// from a linear P(k) by the Zel'dovich approximation (1LPT) or second-order Lagrangian perturbation
/// theory (2LPT; Scoccimarro 1998, Crocce, Pueblas & Scoccimarro 2006), as N-GenIC and 2LPTic do.
///
/// The Gaussian field: each Fourier mode with integer wavenumber (kx, ky, kz) gets its complex
/// amplitude from a counter-based hash of (seed, kx, ky, kz) (splitmix64, Box-Muller), so the same
/// seed gives the same phases and amplitudes of the common modes whatever n and whatever the thread
/// count; a mode and its mirror -k are one draw (Hermitian symmetry exactly); the k = 0 mode and every
/// mode on a Nyquist plane (|ki| = n/2 on any axis) are zero.
///
/// With fixAmplitudes every mode keeps its phase and takes unit modulus; with invertPhases every mode is
/// negated (the two compose: fixed, inverted pairs).
///
/// Output convention (ParticleSet): comoving positions in [0, L), `vel` the peculiar velocity a dx/dt,
/// time = a_begin, cosmology and boxSize set, type 1, ids 0..n^3-1 in grid order (id = (i n + j) n + l
/// for the particle starting at grid point (i, j, l) L / n).

#include <complex>
#include <cstdint>
#include <functional>
#include <string>

#include "host/core/particles.h"
#include "host/models/lattice_modes.h"
#include "host/models/linear_power.h"

namespace octwalk {

/// A unit system of a cosmological set: how long its length unit is, and G and H0 in it.
/// Every system takes masses so that the mean matter density is Omega0 3 H0^2 / (8 pi G).
struct IcUnits
{
    /// "nbody": length Mpc/h, G = 1, H0 = 1 (time unit 1/H0 = 9.78 / h Gyr, velocity unit 100 km/s,
    /// critical density 3 / (8 pi)). "gadget-mpc": length Mpc/h, velocity km/s, mass 1e10 Msun/h,
    /// G = 43.0071, H0 = 100. "gadget-kpc": as GADGET-2's default, length kpc/h, G = 43007.1, H0 = 0.1.
    std::string name             = "nbody";
    double lengthInMpcOverH      = 1.0;
    double gravitationalConstant = 1.0;
    double hubble0               = 1.0;
};

/// The units named "nbody", "gadget-mpc" or "gadget-kpc"; ParameterError naming the value otherwise.
IcUnits icUnits(const std::string& name);

struct CosmoIcParams
{
    /// Particles per side (N = nGrid^3), >= 2, nGrid^3 <= 2^30 - 1.
    int64_t nGrid = 64;
    /// Side of the periodic box in the length unit of `units`. > 0.
    double boxSize = 100.0;
    /// Starting redshift, >= 0 (a_begin = 1 / (1 + z)).
    double zBegin = 49.0;
    uint64_t seed = 1;
    /// 1: Zel'dovich; 2: 2LPT.
    int lptOrder = 2;
    /// Every mode's amplitude |g| = 1 instead of a Rayleigh draw (monofonIC's DoFixing; Angulo & Pontzen
    /// 2016): the realisation's power equals P(k) mode by mode, its phases stay random.
    bool fixAmplitudes = false;
    /// Every mode's phase shifted by pi, g -> -g (monofonIC's DoInversion): a run and its inverted twin
    /// have opposite first-order fields, so the second-order term 2 Re(delta1 delta2*) of a bin's power,
    /// which does not average away over a bin's few large-scale modes, cancels in the pair's mean.
    bool invertPhases = false;
    /// Particle-linear-theory correction of the first-order displacement (Garrison, Eisenstein, Ferrer,
    /// Metchnik & Pinto 2016, MNRAS 461, 4125, "rescaling"; see PltCorrector): each mode's component
    /// along the lattice's growing eigenvector is scaled so that the lattice's own growth brings it to
    /// the fluid's amplitude at pltATarget, and moves with that eigenmode's growth rate.
    bool plt = false;
    /// The scale factor at which the PLT-corrected modes match the fluid's linear amplitude; > a_begin.
    double pltATarget = 1.0;
    Cosmology cosmology;
    IcUnits units;
};

/// ParameterError naming the value (n-grid, box-size, z-begin, lpt, plt-a-target when plt) or the cosmology (validateCosmology
/// from a_begin to 1) before any work.
void validateCosmoIcs(const CosmoIcParams& p);

/// The Fourier amplitude of unit variance (<|g|^2> = 1, real and imaginary parts each of variance 1/2)
/// of the mode with integer wavenumber (kx, ky, kz): the hash described above, conjugated for the
/// mirror half so that g(-k) = conj(g(k)); 0 for k = 0.
std::complex<double> whiteNoiseMode(uint64_t seed, int64_t kx, int64_t ky, int64_t kz);

/// whiteNoiseMode with p's seed, its amplitude fixed to 1 (p.fixAmplitudes) and negated (p.invertPhases)
/// as asked.
std::complex<double> icMode(const CosmoIcParams& p, int64_t kx, int64_t ky, int64_t kz);

/// The PLT correction of one mode: its growing eigenvector e (e.k >= 0) with eigenvalue eps, the factor
/// by which the displacement's component along e is scaled, [D(a_t) / D(a_0)] / [g(a_t) / g(a_0)], and
/// the growth rate f = dln g / dln a at a_0 that its velocity takes (v = a H f psi).
struct PltCorrection
{
    Vector3 e{};
    double eps            = 1.0;
    double amplitudeScale = 1.0;
    double growthRate     = 1.0;
};

/// The PLT corrections of every mode of p's grid: the lattice's dynamical matrices (LatticeModes) and
/// the growth of their growing eigenvalues from a_begin to p.pltATarget (LatticeGrowthTable).
///
/// What Garrison et al. 2016 do and what this does: they displace each mode along the lattice's growing
/// eigenvector only (no component on the other two, whose growth differs) with the amplitude rescaled by
/// the growth ratio above and the velocity from the eigenmode's own rate, in Einstein-de Sitter (g ~
/// a^alpha). Here the growth is integrated in the run's cosmology, and the other two eigen-components of
/// the Zel'dovich displacement are kept as they are with the fluid's velocity: their weight
/// (k.e_j)^2 / k^2 is below 1e-3 for k <= k_Nyquist / 2 at 16^3 (measured: (2,1,0) 7e-4, (2,2,1) 4e-4).
/// The 2LPT term is not corrected.
class PltCorrector
{
public:
    /// @param[in] p  the grid, a_begin, p.pltATarget and the cosmology (validated here)
    explicit PltCorrector(const CosmoIcParams& p);

    /// The correction of the mode with integer wavenumber (kx, ky, kz), each in [-n/2, n/2], not all 0.
    PltCorrection at(int kx, int ky, int kz) const;

private:
    LatticeModes modes_;
    LatticeGrowthTable growth_;
    double fluidRatio_;
};

/// How much of the box's Fourier modes a P(k) reaches: a table has no power outside its k range.
struct SpectrumCoverage
{
    /// The smallest and largest |k| of the box's non-zero modes (the Nyquist planes excluded) [h/Mpc];
    /// 0 and 0 when the grid has none (n-grid 2).
    double boxKMin = 0, boxKMax = 0;
    /// The non-zero modes (k and -k counted apart), and those with kMin <= |k| <= kMax of the spectrum.
    int64_t modes = 0, covered = 0;
};

/// The coverage of p's modes by power (every mode for EH98). Costs O(n-grid^2 log n-grid).
SpectrumCoverage spectrumCoverage(const CosmoIcParams& p, const LinearPower& power);

/// "k = 0.0628 to 1.36 h/Mpc (n-grid 16, box 100)": the box's modes as messages name them.
std::string boxModesText(const CosmoIcParams& p, const SpectrumCoverage& c);

/// The initial conditions described above.
/// @param[in] p      grid, box, redshift, seed, LPT order, cosmology and units (validated here)
/// @param[in] power  the linear P(k) at z = 0 [(Mpc/h)^3, k in h/Mpc], scaled by D(a_begin)^2; a table
///                   that covers none of the box's modes (spectrumCoverage) is a ParameterError naming
///                   both k ranges (its field would be zero: an unperturbed lattice)
ParticleSet makeCosmoIcs(const CosmoIcParams& p, const LinearPower& power);

/// The lattice displaced by 1LPT or 2LPT from a given linear density field at a_begin: the engine of
/// makeCosmoIcs, open for tests with fields whose displacements are known analytically. Body (i, j, l), index
/// (i n + j) n + l, starts at the cell centre ((i, j, l) + 1/2) L / n, displaced by the fields there.
/// @param[in] p       as above (p.seed unused)
/// @param[in] delta0  delta(k) at a_begin of the mode with integer wavenumber (kx, ky, kz), kz >= 0, in
///                    the convention delta(x) = sum_k delta(k) e^{i k.x}; must be Hermitian on the
///                    plane kz = 0; not called for k = 0 and the Nyquist planes (zero)
ParticleSet makeLptIcs(const CosmoIcParams& p, const std::function<std::complex<double>(int, int, int)>& delta0);

} // namespace octwalk
