#include "host/core/cosmology.h"

#include <cmath>
#include <sstream>

#include "common/errors.h"

namespace octwalk {
namespace {

double omegaCurvature(const Cosmology& c)
{
    return 1.0 - c.omega0 - c.omegaLambda;
}

double hubbleRateSquared(const Cosmology& c, double a)
{
    return c.omega0 / (a * a * a) + omegaCurvature(c) / (a * a) + c.omegaLambda;
}

/// Composite 8-point Gauss-Legendre over `panels` equal panels: the integrands here are smooth on
/// [a0, a1] with a0 > 0 (or vanish like a^(3/2) at 0), so this reaches double round-off with few panels.
template<class F>
double integrate(F f, double a0, double a1, int panels = 64)
{
    static constexpr double x[4] = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267,
                                    0.9602898564975363};
    static constexpr double w[4] = {0.3626837833783620, 0.3137066458778873, 0.2223810344533745,
                                    0.1012285362903763};
    double h   = (a1 - a0) / panels;
    double sum = 0.0;
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

/// int_0^a da' / (a' E(a'))^3, the growth integral.
double growthIntegral(const Cosmology& c, double a)
{
    auto integrand = [&](double x) {
        double ae = x * std::sqrt(hubbleRateSquared(c, x));
        return 1.0 / (ae * ae * ae);
    };
    return integrate(integrand, 0.0, a, 256);
}

std::string describe(double value)
{
    std::ostringstream s;
    s.precision(17);
    s << value;
    return s.str();
}

} // namespace

void validateCosmology(const Cosmology& c, double aMin, double aMax)
{
    if (!(std::isfinite(c.omega0) && c.omega0 >= 0.0))
    {
        throw ParameterError("Omega0 must be finite and >= 0, got " + describe(c.omega0));
    }
    if (!(std::isfinite(c.omegaLambda) && c.omegaLambda >= 0.0))
    {
        throw ParameterError("OmegaLambda must be finite and >= 0, got " + describe(c.omegaLambda));
    }
    if (!(std::isfinite(c.hubbleParam) && c.hubbleParam > 0.0))
    {
        throw ParameterError("HubbleParam must be finite and > 0, got " + describe(c.hubbleParam));
    }
    if (!(std::isfinite(aMin) && aMin > 0.0 && std::isfinite(aMax) && aMax >= aMin))
    {
        throw ParameterError("scale factors must satisfy 0 < a_begin <= a_end, got a_begin = " + describe(aMin) +
                             ", a_end = " + describe(aMax));
    }
    // E^2 = Omega0 a^-3 + Omega_k a^-2 + OmegaLambda; in 1/a it is a cubic whose minimum on the
    // interval is at an end point or where dE^2/da = 0, i.e. 3 Omega0 / a = -2 Omega_k.
    double candidates[3] = {aMin, aMax, omegaCurvature(c) < 0.0 ? -1.5 * c.omega0 / omegaCurvature(c) : aMin};
    for (double a : candidates)
    {
        if (a >= aMin && a <= aMax && !(hubbleRateSquared(c, a) > 0.0))
        {
            throw ParameterError("H(a)^2 <= 0 at a = " + describe(a) + " for Omega0 = " + describe(c.omega0) +
                                 ", OmegaLambda = " + describe(c.omegaLambda));
        }
    }
}

double hubbleRate(const Cosmology& c, double a)
{
    return std::sqrt(hubbleRateSquared(c, a));
}

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
    double e2     = hubbleRateSquared(c, a);
    double dE2da  = -3.0 * c.omega0 / (a * a * a * a) - 2.0 * omegaCurvature(c) / (a * a * a);
    double ae     = a * std::sqrt(e2);
    return a * dE2da / (2.0 * e2) + a / (ae * ae * ae * growthIntegral(c, a));
}

} // namespace octwalk
