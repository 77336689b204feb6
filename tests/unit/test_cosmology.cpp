// The background cosmology (host/core/cosmology.h): analytic Einstein-de Sitter factors, the LCDM
// growth factor against an independent formula and a published value, units, and bad parameters.
#include <gtest/gtest.h>

#include <cmath>

#include "common/errors.h"
#include "host/core/cosmology.h"

namespace octwalk {
namespace {

const Cosmology kEdS{1.0, 0.0, 0.7};
const Cosmology kLcdm{0.3, 0.7, 0.7};

TEST(Cosmology, EinsteinDeSitterDriftAndKickFactorsAreAnalytic)
{
    // E(a) = a^(-3/2): drift = int a^(-3/2) da, kick = int a^(-1/2) da.
    for (auto [a0, a1] : {std::pair{0.02, 0.05}, std::pair{0.1, 0.11}, std::pair{0.5, 1.0}, std::pair{1.0, 0.3}})
    {
        EXPECT_NEAR(driftFactor(kEdS, a0, a1), 2.0 * (1.0 / std::sqrt(a0) - 1.0 / std::sqrt(a1)),
                    1e-13 * std::fabs(1.0 / std::sqrt(a0)));
        EXPECT_NEAR(kickFactor(kEdS, a0, a1), 2.0 * (std::sqrt(a1) - std::sqrt(a0)), 1e-14);
        EXPECT_DOUBLE_EQ(hubbleRate(kEdS, a0), std::pow(a0, -1.5));
    }
}

TEST(Cosmology, EinsteinDeSitterGrowthIsTheScaleFactor)
{
    for (double a : {0.01, 0.02, 0.1, 0.5, 1.0})
    {
        EXPECT_NEAR(growthFactor(kEdS, a), a, 1e-12 * a);
        EXPECT_NEAR(growthRate(kEdS, a), 1.0, 1e-12);
    }
}

/// 2F1(a, b; c; x) by its series, |x| < 1.
double hypergeometric(double a, double b, double c, double x)
{
    double sum = 1, term = 1;
    for (int n = 0; n < 4000 && std::fabs(term) > 1e-18; ++n)
    {
        term *= (a + n) * (b + n) / ((c + n) * (n + 1)) * x;
        sum += term;
    }
    return sum;
}

TEST(Cosmology, FlatLcdmGrowthMatchesTheHypergeometricForm)
{
    // Flat LCDM: D(a) proportional to a 2F1(1/3, 1; 11/6; -a^3 OmegaLambda / Omega0) (e.g. Hamilton 2001),
    // a formula independent of the integral the code uses; the series converges for a^3 < Omega0/OmegaLambda.
    auto closedForm = [](double a) { return a * hypergeometric(1.0 / 3, 1.0, 11.0 / 6, -a * a * a * 0.7 / 0.3); };
    for (auto [a0, a1] : {std::pair{0.02, 0.25}, std::pair{0.25, 0.5}, std::pair{0.1, 0.7}})
    {
        EXPECT_NEAR(growthFactor(kLcdm, a1) / growthFactor(kLcdm, a0), closedForm(a1) / closedForm(a0), 1e-10);
    }
}

TEST(Cosmology, LcdmGrowthSuppressionMatchesThePublishedValue)
{
    // Omega0 = 0.3, OmegaLambda = 0.7: D(a=1) is 0.779 of its Einstein-de Sitter extrapolation from early
    // times (Carroll, Press & Turner 1992, ARA&A 30, 499, whose fit formula eq. 29 gives 0.7779, good to ~1%).
    const double a     = 1e-4;
    const double g0    = growthFactor(kLcdm, 1.0) / (growthFactor(kLcdm, a) / a);
    const double omega = 0.3, lambda = 0.7;
    const double fit = 2.5 * omega / (std::pow(omega, 4.0 / 7) - lambda + (1 + omega / 2) * (1 + lambda / 70));
    EXPECT_NEAR(g0, 0.779, 1e-3);
    EXPECT_NEAR(g0, fit, 0.01 * fit);
    // f = Omega(a)^0.55 to within 1% today (Linder 2005).
    const double omegaNow = 0.3;
    EXPECT_NEAR(growthRate(kLcdm, 1.0), std::pow(omegaNow, 0.55), 0.01);
}

TEST(Cosmology, BadParametersAreRejectedNamingTheValue)
{
    auto message = [](const Cosmology& c, double aMin, double aMax) -> std::string {
        try
        {
            validateCosmology(c, aMin, aMax);
        }
        catch (const ParameterError& e)
        {
            return e.what();
        }
        return "";
    };
    EXPECT_NE(message({-0.1, 0.7, 0.7}, 0.1, 1).find("Omega0"), std::string::npos);
    EXPECT_NE(message({0.3, -1.0, 0.7}, 0.1, 1).find("OmegaLambda"), std::string::npos);
    EXPECT_NE(message({0.3, 0.7, 0.0}, 0.1, 1).find("HubbleParam"), std::string::npos);
    EXPECT_NE(message({0.3, 0.7, 0.7}, 0.0, 1).find("a_begin = 0"), std::string::npos);
    EXPECT_NE(message({0.3, 0.7, 0.7}, 0.5, 0.2).find("a_end"), std::string::npos);
    // A bouncing universe: E^2 = 0.1/a^3 - 1.6/a^2 + 2.5 is negative at a = 0.5.
    const std::string bounce = message({0.1, 2.5, 0.7}, 0.5, 1);
    EXPECT_NE(bounce.find("H(a)^2 <= 0 at a = 0.5"), std::string::npos) << bounce;
    EXPECT_EQ(message(kLcdm, 0.02, 1), "");
    EXPECT_EQ(message(kEdS, 1e-3, 1), "");
}

TEST(Cosmology, UnitSystemsAndTheHubbleConstantOfADensity)
{
    EXPECT_EQ(parseCosmoUnits("gadget-kpc"), CosmoUnits::GadgetKpc);
    EXPECT_DOUBLE_EQ(unitSystem(CosmoUnits::GadgetKpc).gravitationalConstant, 43007.1);
    EXPECT_DOUBLE_EQ(unitSystem(CosmoUnits::GadgetMpc).hubble0, 100.0);
    EXPECT_THROW(parseCosmoUnits("si"), ParameterError);
    // The critical density 27.7536627 (1e10 Msun/h) / (Mpc/h)^3 (H0 = 100): a box of it at Omega0 = 1 gives
    // back H0 to the 2.4e-5 by which the constants behind that figure differ from GADGET-2's G.
    EXPECT_NEAR(hubbleConstantForDensity(27.7536627, 1.0, 1.0, 43.0071), 100.0, 5e-3);
    EXPECT_THROW(hubbleConstantForDensity(1.0, 1.0, 0.0, 1.0), ParameterError);
}

} // namespace
} // namespace octwalk
