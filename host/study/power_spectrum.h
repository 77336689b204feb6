#pragma once
/// @file power_spectrum.h
/// The matter power spectrum of a periodic particle set: mass assignment (CIC or TSC) onto an
/// n_mesh^3 grid, optional interlacing (a second grid shifted by half a cell, which cancels the odd
/// aliasing images; Sefusatti et al. 2016), a forward FFT, division by the assignment window
/// W(k) = prod_i sinc(pi k_i / (2 k_Nyquist))^p (p = 2 CIC, 3 TSC; Jing 2005), and spherical k-bins.
///
/// P(k) = V <|delta_k|^2> with delta the mass density contrast; shot noise is NOT subtracted, it is
/// reported (V sum m^2 / (sum m)^2, V / N for equal masses), since for a lattice-like start
/// (initial conditions, early times) the Poisson value does not apply.
///
/// The window deconvolution assumes a distribution without structure on the mesh scale. A perturbed
/// lattice (initial conditions, early times) is over-corrected: the mode-weighted P / P_linear of a
/// 64^3 box of 256 Mpc/h at z = 49 over 0.1 < k < 0.75 h/Mpc is 1.48 with n_mesh = 64 (the lattice),
/// 1.020 with 128 and 1.006 with 256 (measured, CIC or TSC, interlaced): use n_mesh >= 2-4 times
/// the particles per side for such sets.

#include <cstdint>
#include <string>
#include <vector>

#include "common/treepm.h"
#include "host/core/particles.h"

namespace octwalk {

/// "cic" or "tsc"; ParameterError naming the value otherwise.
MassAssignment parseMassAssignment(const std::string& name);
std::string toString(MassAssignment a);

struct PowerOptions
{
    /// Grid cells per side, >= 4 and <= 2048.
    int nMesh                 = 128;
    MassAssignment assignment = MassAssignment::Cic;
    bool interlace            = false;
    /// Number of bins from kF / 2 to k_Nyquist + kF / 2 (kF = 2 pi / L); 0: n_mesh / 2, one per kF.
    int nBins = 0;
    /// Bins equally spaced in ln k instead of k.
    bool logBins = false;
};

/// ParameterError naming the value: n-mesh outside [4, 2048], n-bins < 0.
void validatePowerOptions(const PowerOptions& o);

struct PowerBin
{
    double kLow = 0, kHigh = 0; ///< bin edges [1 / length]
    double kMean  = 0;          ///< mean |k| of its modes (0 when empty)
    double power  = 0;          ///< mean V |delta_k|^2 of its modes [length^3] (0 when empty)
    int64_t modes = 0;          ///< modes counted (k and -k separately)
};

struct PowerSpectrum
{
    std::vector<PowerBin> bins;
    double boxSize   = 0; ///< [length]
    double shotNoise = 0; ///< V sum m^2 / (sum m)^2 [length^3], not subtracted from `power`
};

/// The binned power spectrum of `particles` in the periodic box [0, boxSize)^3. Positions outside
/// are wrapped. Deterministic for any thread count (assignment is serial; the rest writes disjoint cells).
/// @param[in] particles  positions and masses (masses > 0 in total; InputError otherwise, or for a
///                       non-finite position, naming the body index)
/// @param[in] boxSize    side of the box [length], > 0
/// @param[in] options    mesh, assignment, interlacing and binning (validated here)
PowerSpectrum measurePowerSpectrum(const ParticleSet& particles, double boxSize, const PowerOptions& options);

} // namespace octwalk
