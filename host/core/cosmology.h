#pragma once
/// @file cosmology.h
/// The background cosmology of a comoving run: the Hubble rate, the linear growth factor and the
/// leapfrog's drift and kick factors, as GADGET-2 (Springel 2005, eqs. 27-28) defines them.
///
/// Time is the scale factor a. Rates are in units of H0 (so the caller multiplies by H0 in its own
/// time unit); the state holds comoving positions x and canonical momenta p = a^2 dx/dt, so that
///   drift:  x += p * driftFactor(a0, a1) / H0,   driftFactor = int_{a0}^{a1} da / (a^3 E(a))
///   kick:   p += g * kickFactor(a0, a1)  / H0,   kickFactor  = int_{a0}^{a1} da / (a^2 E(a))
/// where g is the peculiar acceleration from the comoving positions (mean density subtracted) and
/// E(a) = H(a)/H0 = sqrt(Omega0/a^3 + (1 - Omega0 - OmegaLambda)/a^2 + OmegaLambda).

#include <string>

namespace octwalk {

/// The cosmological parameters, as GADGET-2's parameter file names them.
struct Cosmology
{
    /// Omega0: matter density today in units of the critical density. >= 0.
    double omega0 = 0.3;
    /// OmegaLambda: cosmological-constant density today in units of the critical density. >= 0.
    double omegaLambda = 0.7;
    /// HubbleParam: h, H0 = 100 h km/s/Mpc; it only converts units (lengths in Mpc/h do not need it).
    double hubbleParam = 0.7;
};

/// The unit systems of a comoving run (`octwalk run --units`).
enum class CosmoUnits
{
    NBody,     ///< G as given (1 by default); H0 from the box's mean density (hubbleConstantForDensity)
    GadgetKpc, ///< GADGET-2's defaults: kpc/h, 1e10 Msun/h, km/s; G = 43007.1, H0 = 0.1
    GadgetMpc, ///< the same with Mpc/h lengths: G = 43.0071, H0 = 100
};

/// What a unit system fixes.
struct UnitSystem
{
    CosmoUnits units;
    const char* name;             ///< as `--units` spells it
    const char* description;      ///< lengths, masses, velocities (for run.json and file headers)
    double gravitationalConstant; ///< G in these units; 0 for N-body units (the run's --G)
    double hubble0;               ///< H0 in these units; 0 for N-body units (derived from the density)
};

/// The unit system of an enum value.
const UnitSystem& unitSystem(CosmoUnits units);

/// "nbody", "gadget-kpc", "gadget-mpc"; ParameterError naming the text otherwise.
CosmoUnits parseCosmoUnits(const std::string& name);

/// The H0 at which a box of side boxSize holding totalMass has the matter density of the cosmology,
/// Omega0 * 3 H0^2 / (8 pi G): sqrt(8 pi G totalMass / (3 omega0 boxSize^3)). The time unit of N-body
/// runs follows from it. ParameterError when omega0, totalMass, boxSize or G is not > 0.
double hubbleConstantForDensity(double totalMass, double boxSize, double omega0, double G);

/// Throws ParameterError naming the value when omega0 or omegaLambda is negative or not finite,
/// hubbleParam is not > 0, or E(a)^2 <= 0 anywhere in [aMin, aMax] (a bouncing or recollapsing
/// universe: the integrals below would be meaningless). aMin must be > 0.
void validateCosmology(const Cosmology& c, double aMin, double aMax);

/// E(a) = H(a) / H0.
double hubbleRate(const Cosmology& c, double a);

/// int_{a0}^{a1} da / (a^3 E(a)), the drift factor (in units of 1/H0). a1 < a0 gives the negative.
double driftFactor(const Cosmology& c, double a0, double a1);

/// int_{a0}^{a1} da / (a^2 E(a)), the kick factor (in units of 1/H0).
double kickFactor(const Cosmology& c, double a0, double a1);

/// The linear growing mode D(a) of a matter + curvature + Lambda universe (Heath 1977:
/// D proportional to E(a) int_0^a da' / (a' E(a'))^3), normalised to D(1) = 1.
/// For Einstein-de Sitter D(a) = a.
double growthFactor(const Cosmology& c, double a);

/// f = dln D / dln a, the logarithmic growth rate (Zel'dovich velocities: v = a H f psi).
double growthRate(const Cosmology& c, double a);

} // namespace octwalk
