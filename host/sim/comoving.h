#pragma once
/// @file comoving.h
/// The settings and the clock of a comoving (cosmological) run: time is the scale factor a, steps are
/// equal in ln a between stops (the output list and a_end), and the state is comoving positions x in the
/// periodic box [0, L)^3 with canonical momenta p = a^2 dx/dt, as in GADGET-2 (Springel 2005, eqs. 27-28).
///
/// Equations of motion. With phi_c the potential of the comoving mass distribution with its mean
/// subtracted (the periodic solver's), the peculiar potential is phi_c / a and
///   dx/dt = p / a^2,    dp/dt = g / a,    g = -grad phi_c = G sum_j m_j (x_j - x) / |x_j - x|^3 (+ Ewald),
/// that is, with dt = da / (a H0 E(a)),
///   drift: x += p * driftFactor(a0, a1) / H0,   kick: p += g * kickFactor(a0, a1) / H0
/// (cosmology.h), where g is exactly what the solver returns for comoving positions (G included): GADGET-2
/// kicks P.Vel += G * GravAccel * get_gravkick_factor with P.Vel = a^2 dx/dt. Peculiar velocities, which
/// ParticleSet::vel and the snapshots hold, are v = a dx/dt = p / a.
///
/// A step from a0 to a1 is kick (a0 -> sqrt(a0 a1)), drift (a0 -> a1), forces at a1, kick
/// (sqrt(a0 a1) -> a1): the half steps are halves in ln a, as GADGET-2's integer time line is.
///
/// The step: --dlna fixed, or GADGET-2's ErrTolIntAccuracy criterion shared by all bodies,
///   dlna = min_i H(a) sqrt(2 eta a eps(a) / |g_i / a^2|),  capped at max_dlna (MaxSizeTimestep),
/// where a eps(a) is the physical softening and g / a^2 the physical peculiar acceleration. Then the
/// interval to the next stop is divided into the fewest equal ln a steps no longer than that, so every
/// output scale factor is reached exactly, and the next step depends only on the current state (a
/// restart continues bit-identically).
///
/// Softening: Plummer epsilon fixed in comoving units up to a maximum physical size (GADGET's
/// SofteningHalo and SofteningHaloMaxPhys): eps(a) = min(eps, eps_max_phys / a).

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "host/core/cosmology.h"
#include "host/core/particles.h"

namespace octwalk {

/// The settings of a comoving run (stored in the checkpoint; a restart cannot change them). The box is
/// the solver's Parameters::box_size (> 0 in a comoving run).
struct ComovingSettings
{
    Cosmology cosmology;
    CosmoUnits units = CosmoUnits::NBody;
    /// First and last scale factor. 0 < a_begin < a_end
    double aBegin = 0.02, aEnd = 1.0;
    /// Scale factors at which snapshots are written (besides a_begin and a_end): increasing, in [a_begin, a_end].
    std::vector<double> outputList;
    /// Fixed step in ln a; 0: the ErrTolIntAccuracy criterion. >= 0
    double dlna = 0.0;
    /// GADGET's ErrTolIntAccuracy, eta of the step criterion (when dlna is 0). > 0
    double errTolIntAccuracy = 0.025;
    /// GADGET's MaxSizeTimestep: the longest step in ln a (with the criterion). > 0
    double maxDlna = 0.025;
    /// GADGET's SofteningHaloMaxPhys [physical length]; 0: the comoving epsilon at every a. >= 0
    double softeningMaxPhys = 0.0;
};

/// A comoving run's default softening: 1/30 of the mean interparticle spacing boxSize / n^(1/3), a common choice
/// for cosmological boxes (GADGET users pick 1/20 to 1/50). The command line and the Python module take it here.
inline double defaultComovingSoftening(double boxSize, int64_t n)
{
    return (1.0 / 30) * boxSize / std::cbrt(double(n));
}

/// ParameterError naming the first bad value: the cosmology (validateCosmology over [a_begin, a_end]),
/// a_begin/a_end, the step settings, the output list (out of order or outside [a_begin, a_end]).
void validate(const ComovingSettings& s);

/// Reads an output list: one scale factor per line ('#' starts a comment; blank lines are skipped).
/// InputError naming the file and line for anything that is not a number; the order and range are
/// checked by validate.
std::vector<double> readOutputList(const std::string& path);

/// The settings as "name=value" lines (reals with 17 digits, exact), and back (FormatError naming the
/// line on anything unreadable, unknown, repeated or missing).
std::string toText(const ComovingSettings& s);
ComovingSettings comovingSettingsFromText(const std::string& text);

/// The Plummer softening at scale factor a: min(eps, eps_max_phys / a) (eps alone when eps_max_phys is 0).
double comovingSoftening(const ComovingSettings& s, double epsilon, double a);
/// Its square from epsilon_squared without a square root, so that an unclipped epsilon_squared is used exactly as
/// given: what each evaluation of a comoving run takes (one process's classic and pipelined steps, several ranks').
double comovingEpsilonSquared(const ComovingSettings& s, double epsilonSquared, double a);

/// The first stop after a: the next entry of the output list, or a_end.
double nextStop(const ComovingSettings& s, double a);

/// Whether a is one of the output list's scale factors (the clock reaches them exactly).
bool isOutputTime(const ComovingSettings& s, double a);

/// The scale factor after a step from a: the fewest equal steps in ln a to `stop` no longer than
/// maxDlna, and this is the first of them (stop itself when one is enough).
double nextScaleFactor(double a, double stop, double maxDlna);

/// The most steps a comoving run may need (as for a run in time).
constexpr double kMaxComovingSteps = 1e12;

/// Steps from a to a_end at a fixed maxDlna under nextScaleFactor's rule (exact for --dlna; an estimate
/// with the criterion). ParameterError beyond kMaxComovingSteps.
int64_t stepsToEnd(const ComovingSettings& s, double a, double maxDlna);

/// GADGET-2's criterion: min over bodies of H(a) sqrt(2 eta a eps / (|g| / a^2)), capped at max_dlna.
/// g: the solver's accelerations (G included) in comoving units; hubble0: H0 in the run's units.
double criterionDlna(const ComovingSettings& s, double hubble0, double a, double epsilon, const std::vector<Vec3d>& g);
/// The same criterion from the largest |g|^2 alone (the pipelined step's backend reduces it where its forces are).
double criterionDlnaOfLargest(const ComovingSettings& s, double hubble0, double a, double epsilon, double largest);

/// x wrapped into [0, boxSize).
double wrapPeriodic(double x, double boxSize);

/// Each coordinate of x wrapped into [0, boxSize): where a drift in a periodic box puts a body.
Vec3d wrapIntoBox(const Vec3d& x, double boxSize);

/// InputError naming the first body (index, id and coordinate) outside [0, boxSize)^3.
void checkInsideBox(const ParticleSet& p, double boxSize);

struct Parameters;

/// ParameterError for a comoving run's settings, a box_size that is not > 0, or the step criterion without
/// softening.
void checkComovingStart(const Parameters& p, const ComovingSettings& s);

/// H0 in the run's units for bodies of total mass `mass` in the box: GADGET's, or in N-body units the one that
/// makes the box's mean density the matter density (cosmology.h). Checks what the units fix (ParameterError for
/// G, InputError for the mass).
double comovingHubble0(double mass, const Parameters& p, const ComovingSettings& s);

} // namespace octwalk
