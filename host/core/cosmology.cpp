#include "host/core/cosmology.h"

#include <cmath>
#include <sstream>
#include <utility>

#include "common/errors.h"
#include "host/core/number_text.h"

namespace octwalk {
namespace {

double omegaCurvature(const Cosmology& c) { return 1.0 - c.omega0 - c.omegaLambda; }

double hubbleRateSquared(const Cosmology& c, double a)
{
    return c.omega0 / (a * a * a) + omegaCurvature(c) / (a * a) + c.omegaLambda;
}

/// Composite 8-point Gauss-Legendre over `panels` equal panels: the integrands here are smooth on
/// [a0, a1] with a0 > 0 (or vanish like a^(3/2) at 0), so this reaches double round-off with few panels.
template<class F>
double integrate(F f, double a0, double a1, int panels = 64)
{
    static constexpr double x[4] = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363};
    static constexpr double w[4] = {0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763};
    double h                     = (a1 - a0) / panels;
    double sum                   = 0.0;
    for (int i = 0; i < panels; ++i)
    {
        double mid  = a0 + (i + 0.5) * h;
        double half = 0.5 * h;
        for (int k = 0; k < 4; ++k)
        {
            sum += w[k] * half * (f(mid - half * x[k]) + f(mid + half * x[k]));
        }
    }
    return sum;
}

/// int_0^a da' / (a' E(a'))^3, the growth integral. The integrand goes like a'^(3/2) at 0; with a' = u^2
/// it becomes 2 u / (u^2 E(u^2))^3, smooth there (like u^4), so the quadrature reaches round-off.
double growthIntegral(const Cosmology& c, double a)
{
    auto integrand = [&](double u) {
        double x  = u * u;
        double ae = x * std::sqrt(hubbleRateSquared(c, x));
        return 2.0 * u / (ae * ae * ae);
    };
    return integrate(integrand, 0.0, std::sqrt(a), 256);
}

} // namespace

void validateCosmology(const Cosmology& c, double aMin, double aMax)
{
    if (!(std::isfinite(c.omega0) && c.omega0 >= 0.0))
    {
        throw ParameterError("Omega0 must be finite and >= 0, got " + exactDigits(c.omega0));
    }
    if (!(std::isfinite(c.omegaLambda) && c.omegaLambda >= 0.0))
    {
        throw ParameterError("OmegaLambda must be finite and >= 0, got " + exactDigits(c.omegaLambda));
    }
    if (!(std::isfinite(c.hubbleParam) && c.hubbleParam > 0.0))
    {
        throw ParameterError("HubbleParam must be finite and > 0, got " + exactDigits(c.hubbleParam));
    }
    if (!(std::isfinite(aMin) && aMin > 0.0 && std::isfinite(aMax) && aMax >= aMin))
    {
        throw ParameterError("scale factors must satisfy 0 < a_begin <= a_end, got a_begin = " + exactDigits(aMin) +
                             ", a_end = " + exactDigits(aMax));
    }
    // E^2 = Omega0 a^-3 + Omega_k a^-2 + OmegaLambda; in 1/a it is a cubic whose minimum on the
    // interval is at an end point or where dE^2/da = 0, i.e. 3 Omega0 / a = -2 Omega_k.
    double candidates[3] = {aMin, aMax, omegaCurvature(c) < 0.0 ? -1.5 * c.omega0 / omegaCurvature(c) : aMin};
    for (double a : candidates)
    {
        if (a >= aMin && a <= aMax && !(hubbleRateSquared(c, a) > 0.0))
        {
            throw ParameterError("H(a)^2 <= 0 at a = " + exactDigits(a) + " for Omega0 = " + exactDigits(c.omega0) +
                                 ", OmegaLambda = " + exactDigits(c.omegaLambda));
        }
    }
}

const UnitSystem& unitSystem(CosmoUnits units)
{
    // GADGET-2's G: 6.672e-8 cm^3 g^-1 s^-2 in kpc/h, 1e10 Msun/h and km/s (its UnitLength_in_cm =
    // 3.085678e21, UnitMass_in_g = 1.989e43, UnitVelocity_in_cm_per_s = 1e5); H0 = 100 km/s/Mpc.
    static const UnitSystem systems[3] = {
        {CosmoUnits::NBody, "nbody", "N-body: G as given (default 1), H0 from the mean density of the box", 0.0, 0.0},
        {CosmoUnits::GadgetKpc, "gadget-kpc", "GADGET: length kpc/h, mass 1e10 Msun/h, velocity km/s", 43007.1, 0.1},
        {CosmoUnits::GadgetMpc, "gadget-mpc", "GADGET: length Mpc/h, mass 1e10 Msun/h, velocity km/s", 43.0071, 100.0},
    };
    return systems[int(units)];
}

CosmoUnits parseCosmoUnits(const std::string& name)
{
    for (CosmoUnits u : {CosmoUnits::NBody, CosmoUnits::GadgetKpc, CosmoUnits::GadgetMpc})
    {
        if (name == unitSystem(u).name) return u;
    }
    throw ParameterError("units '" + name + "' are not one of nbody, gadget-kpc, gadget-mpc");
}

double hubbleConstantForDensity(double totalMass, double boxSize, double omega0, double G)
{
    for (auto [name, value] :
         {std::pair<const char*, double>{"total mass", totalMass}, {"box size", boxSize}, {"Omega0", omega0}, {"G", G}})
    {
        if (!(std::isfinite(value) && value > 0.0))
        {
            throw ParameterError(std::string("H0 from the mean density needs ") + name + " > 0, got " +
                                 exactDigits(value));
        }
    }
    return std::sqrt(8.0 * M_PI * G * totalMass / (3.0 * omega0 * boxSize * boxSize * boxSize));
}

double hubbleRate(const Cosmology& c, double a) { return std::sqrt(hubbleRateSquared(c, a)); }

double driftFactor(const Cosmology& c, double a0, double a1)
{
    return integrate([&](double a) { return 1.0 / (a * a * a * hubbleRate(c, a)); }, a0, a1);
}

double kickFactor(const Cosmology& c, double a0, double a1)
{
    return integrate([&](double a) { return 1.0 / (a * a * hubbleRate(c, a)); }, a0, a1);
}

double growthFactor(const Cosmology& c, double a)
{
    return hubbleRate(c, a) * growthIntegral(c, a) / (hubbleRate(c, 1.0) * growthIntegral(c, 1.0));
}

double growthRate(const Cosmology& c, double a)
{
    double e2    = hubbleRateSquared(c, a);
    double dE2da = -3.0 * c.omega0 / (a * a * a * a) - 2.0 * omegaCurvature(c) / (a * a * a);
    double ae    = a * std::sqrt(e2);
    return a * dE2da / (2.0 * e2) + a / (ae * ae * ae * growthIntegral(c, a));
}

} // namespace octwalk
