#include "host/models/linear_power.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/errors.h"
#include "host/core/number_text.h"
#include "host/core/text_input.h"

namespace octwalk {
namespace {

double cube(double x) { return x * x * x; }

/// EH98 eqs. 2-24 (the fit with baryon oscillations), k in 1/Mpc. Variable names follow the paper.
double transferWithWiggles(double omhh, double fBaryon, double theta, double k)
{
    const double obhh   = omhh * fBaryon;
    const double theta2 = theta * theta;
    const double zEq    = 2.50e4 * omhh / (theta2 * theta2); // eq. 2 (1 + z_eq)
    const double kEq    = 0.0746 * omhh / theta2;            // eq. 3
    const double b1     = 0.313 * std::pow(omhh, -0.419) * (1 + 0.607 * std::pow(omhh, 0.674));
    const double b2     = 0.238 * std::pow(omhh, 0.223);
    const double zDrag =
        1291 * std::pow(omhh, 0.251) / (1 + 0.659 * std::pow(omhh, 0.828)) * (1 + b1 * std::pow(obhh, b2)); // eq. 4
    const double rDrag = 31.5 * obhh / (theta2 * theta2) * (1000 / zDrag);                                  // eq. 5
    const double rEq   = 31.5 * obhh / (theta2 * theta2) * (1000 / zEq);
    const double s     = 2.0 / (3.0 * kEq) * std::sqrt(6.0 / rEq) *
                     std::log((std::sqrt(1 + rDrag) + std::sqrt(rDrag + rEq)) / (1 + std::sqrt(rEq))); // eq. 6
    const double kSilk    = 1.6 * std::pow(obhh, 0.52) * std::pow(omhh, 0.73) * (1 + std::pow(10.4 * omhh, -0.95));
    const double a1       = std::pow(46.9 * omhh, 0.670) * (1 + std::pow(32.1 * omhh, -0.532)); // eq. 11
    const double a2       = std::pow(12.0 * omhh, 0.424) * (1 + std::pow(45.0 * omhh, -0.582));
    const double alphaC   = std::pow(a1, -fBaryon) * std::pow(a2, -cube(fBaryon));
    const double bb1      = 0.944 / (1 + std::pow(458 * omhh, -0.708)); // eq. 12
    const double bb2      = std::pow(0.395 * omhh, -0.0266);
    const double betaC    = 1.0 / (1 + bb1 * (std::pow(1 - fBaryon, bb2) - 1));
    const double y        = zEq / (1 + zDrag); // eq. 15
    const double sy       = std::sqrt(1 + y);
    const double gy       = y * (-6 * sy + (2 + 3 * y) * std::log((sy + 1) / (sy - 1)));
    const double alphaB   = 2.07 * kEq * s * std::pow(1 + rDrag, -0.75) * gy;                            // eq. 14
    const double betaNode = 8.41 * std::pow(omhh, 0.435);                                                // eq. 23
    const double betaB    = 0.5 + fBaryon + (3 - 2 * fBaryon) * std::sqrt(std::pow(17.2 * omhh, 2) + 1); // eq. 24

    const double q  = k / (13.41 * kEq); // eq. 10
    const double ks = k * s;
    // eqs. 17-20: the CDM part, T0(k, alpha, beta)
    auto t0 = [q](double alpha, double beta) {
        double l = std::log(M_E + 1.8 * beta * q);
        double c = 14.2 / alpha + 386 / (1 + 69.9 * std::pow(q, 1.08));
        return l / (l + c * q * q);
    };
    const double f  = 1 / (1 + std::pow(ks / 5.4, 4));
    const double tc = f * t0(1, betaC) + (1 - f) * t0(alphaC, betaC);
    // eqs. 21-22: the baryon part, with the shifted node s~
    const double sTilde = s / std::cbrt(1 + cube(betaNode / ks));
    const double xt     = k * sTilde;
    const double sinc   = xt > 0 ? std::sin(xt) / xt : 1.0;
    const double tb     = sinc * (t0(1, 1) / (1 + std::pow(ks / 5.2, 2)) +
                              alphaB / (1 + cube(betaB / ks)) * std::exp(-std::pow(k / kSilk, 1.4)));
    return fBaryon * tb + (1 - fBaryon) * tc; // eq. 16
}

/// EH98 eqs. 26-31 (no wiggles), k in 1/Mpc.
double transferNoWiggle(double omhh, double fBaryon, double theta, double k)
{
    const double obhh = omhh * fBaryon;
    const double s    = 44.5 * std::log(9.83 / omhh) / std::sqrt(1 + 10 * std::pow(obhh, 0.75)); // eq. 26
    const double alphaG =
        1 - 0.328 * std::log(431 * omhh) * fBaryon + 0.38 * std::log(22.3 * omhh) * fBaryon * fBaryon; // eq. 31
    const double gammaEff = omhh * (alphaG + (1 - alphaG) / (1 + std::pow(0.43 * k * s, 4))); // eq. 30 (times h)
    const double q        = k * theta * theta / gammaEff;                                     // eq. 28
    const double l0       = std::log(2 * M_E + 1.8 * q);                                      // eq. 29
    const double c0       = 14.2 + 731 / (1 + 62.5 * q);
    return l0 / (l0 + c0 * q * q);
}

/// 8-point Gauss-Legendre on [a, b].
template<class F>
double gaussLegendre8(F f, double a, double b)
{
    static constexpr double x[4] = {0.1834346424956498, 0.5255324099163290, 0.7966664774136267, 0.9602898564975363};
    static constexpr double w[4] = {0.3626837833783620, 0.3137066458778873, 0.2223810344533745, 0.1012285362903763};
    double mid = 0.5 * (a + b), half = 0.5 * (b - a), sum = 0.0;
    for (int i = 0; i < 4; ++i) sum += w[i] * (f(mid - half * x[i]) + f(mid + half * x[i]));
    return sum * half;
}

double topHatWindow(double x)
{
    // The series avoids the cancellation of sin x - x cos x at small x.
    if (x < 1e-3) return 1.0 - x * x / 10.0;
    return 3.0 * (std::sin(x) - x * std::cos(x)) / (x * x * x);
}

/// A line as a message quotes it: its first 80 characters.
std::string quoted(const std::string& text)
{
    return "'" +
           (text.size() > 80 ? text.substr(0, 80) + "...' (" + std::to_string(text.size()) + " bytes)" : text + "'");
}

[[noreturn]] void tableError(const std::string& path, int64_t line, const std::string& what)
{
    throw FormatError("power spectrum file '" + path + "' line " + std::to_string(line) + ": " + what);
}

} // namespace

TransferModel parseTransferModel(const std::string& name)
{
    if (name == "eh98") return TransferModel::EisensteinHu;
    if (name == "eh98-nowiggle") return TransferModel::EisensteinHuNoWiggle;
    throw ParameterError("transfer function '" + name + "' is unknown: use eh98 or eh98-nowiggle");
}

std::string toString(TransferModel model) { return model == TransferModel::EisensteinHu ? "eh98" : "eh98-nowiggle"; }

void validateSpectrum(const Cosmology& c, const SpectrumParams& s)
{
    if (!(std::isfinite(c.omega0) && c.omega0 > 0))
    {
        throw ParameterError("Omega0 = " + exactDigits(c.omega0) + " is invalid for a power spectrum: must be > 0");
    }
    if (!(std::isfinite(c.hubbleParam) && c.hubbleParam > 0))
    {
        throw ParameterError("HubbleParam = " + exactDigits(c.hubbleParam) + " is invalid: must be > 0");
    }
    if (!(s.omegaBaryon >= 0 && s.omegaBaryon < c.omega0))
    {
        throw ParameterError("omega-baryon = " + exactDigits(s.omegaBaryon) +
                             " is invalid: must be in [0, Omega0 = " + exactDigits(c.omega0) + ")");
    }
    if (!std::isfinite(s.ns)) throw ParameterError("ns = " + exactDigits(s.ns) + " is invalid: must be finite");
    if (!(std::isfinite(s.sigma8) && s.sigma8 > 0))
    {
        throw ParameterError("sigma8 = " + exactDigits(s.sigma8) + " is invalid: must be finite and > 0");
    }
    if (!(std::isfinite(s.tcmb) && s.tcmb > 0))
    {
        throw ParameterError("tcmb = " + exactDigits(s.tcmb) + " is invalid: must be finite and > 0");
    }
}

double eisensteinHuTransfer(const Cosmology& c, const SpectrumParams& s, double k)
{
    if (k <= 0) return 1.0;
    const double h       = c.hubbleParam;
    const double omhh    = c.omega0 * h * h;
    const double fBaryon = s.omegaBaryon / c.omega0;
    const double theta   = s.tcmb / 2.7;
    const double kMpc    = k * h;
    // The wiggle fit divides by the baryon fraction's powers and logs; without baryons it is the CDM part,
    // which the no-wiggle fit also reduces to.
    if (s.transfer == TransferModel::EisensteinHuNoWiggle || fBaryon == 0)
    {
        return transferNoWiggle(omhh, fBaryon, theta, kMpc);
    }
    return transferWithWiggles(omhh, fBaryon, theta, kMpc);
}

double sigmaTopHat(const std::function<double(double)>& power, double radius)
{
    if (!(radius > 0 && std::isfinite(radius)))
    {
        throw ParameterError("top-hat radius = " + exactDigits(radius) + " is invalid: must be > 0");
    }
    // In ln k: dk k^2 P = dlnk k^3 P. Panels of at most 0.05 in ln k and a quarter of the window's
    // period 2 pi / R in k; above kR = 2000 the window's tail (~ 9 / (kR)^4) adds < 1e-12.
    const double lnEnd = std::log(2000.0 / radius);
    double lnK = std::log(1e-6), sum = 0.0;
    auto integrand = [&](double lnk) {
        double k = std::exp(lnk), w = topHatWindow(k * radius);
        return k * k * k * power(k) * w * w;
    };
    while (lnK < lnEnd)
    {
        double k    = std::exp(lnK);
        double step = std::min(0.05, 0.25 / (k * radius));
        double next = std::min(lnEnd, lnK + step);
        sum += gaussLegendre8(integrand, lnK, next);
        lnK = next;
    }
    return std::sqrt(sum / (2 * M_PI * M_PI));
}

LinearPower LinearPower::eisensteinHu(const Cosmology& c, const SpectrumParams& s)
{
    validateSpectrum(c, s);
    LinearPower p;
    p.cosmology_ = c;
    p.spectrum_  = s;
    p.amplitude_ = 1.0;
    p.kMax_      = std::numeric_limits<double>::infinity();
    double sigma = sigmaTopHat([&](double k) { return p(k); }, 8.0);
    p.amplitude_ = s.sigma8 * s.sigma8 / (sigma * sigma);
    std::ostringstream d;
    d.precision(8);
    d << "EH98 " << (s.transfer == TransferModel::EisensteinHu ? "(baryon wiggles)" : "(no wiggles)")
      << ", Omega0 = " << c.omega0 << ", Omega_b = " << s.omegaBaryon << ", h = " << c.hubbleParam << ", ns = " << s.ns
      << ", sigma8 = " << s.sigma8 << ", T_CMB = " << s.tcmb << " K";
    p.description_ = d.str();
    return p;
}

LinearPower LinearPower::fromTable(const std::string& path)
{
    LinearPower p;
    p.table_ = true;
    forEachTextLine(path, "power spectrum file", [&](int64_t line, const std::string& text) {
        size_t first = text.find_first_not_of(" \t\r");
        if (first == std::string::npos || text[first] == '#') return;
        std::istringstream fields(text);
        std::string kText, powerText;
        double k = 0, power = 0;
        if (!(fields >> kText >> powerText))
        {
            tableError(path, line, "expected two numbers 'k P', got " + quoted(text));
        }
        for (const auto& [token, value] : {std::pair{&kText, &k}, std::pair{&powerText, &power}})
        {
            if (!parseRealToken(*token, *value))
            {
                tableError(path, line, quoted(*token) + " is not a number (expected 'k P', got " + quoted(text) + ")");
            }
        }
        if (!(std::isfinite(k) && k > 0)) tableError(path, line, "k = " + exactDigits(k) + " must be finite and > 0");
        if (!p.lnK_.empty() && !(std::log(k) > p.lnK_.back()))
        {
            tableError(path, line, "k = " + exactDigits(k) + " is not larger than the k before it (k must increase)");
        }
        if (!(std::isfinite(power) && power > 0))
        {
            tableError(path, line,
                       "P = " + exactDigits(power) + " must be finite and > 0 (it is interpolated in log-log)");
        }
        p.lnK_.push_back(std::log(k));
        p.lnP_.push_back(std::log(power));
    });
    if (p.lnK_.size() < 2)
    {
        throw FormatError("power spectrum file '" + path + "' has " + std::to_string(p.lnK_.size()) +
                          " rows 'k P': at least 2 are needed");
    }
    p.kMin_        = std::exp(p.lnK_.front());
    p.kMax_        = std::exp(p.lnK_.back());
    p.description_ = "table " + path;
    return p;
}

double LinearPower::operator()(double k) const
{
    if (!(k > 0)) return 0.0;
    if (!table_)
    {
        double t = eisensteinHuTransfer(cosmology_, spectrum_, k);
        return amplitude_ * std::pow(k, spectrum_.ns) * t * t;
    }
    if (k < kMin_ || k > kMax_) return 0.0;
    double lnk = std::log(k);
    size_t hi  = size_t(std::upper_bound(lnK_.begin(), lnK_.end(), lnk) - lnK_.begin());
    hi         = std::min(std::max<size_t>(hi, 1), lnK_.size() - 1);
    double t   = (lnk - lnK_[hi - 1]) / (lnK_[hi] - lnK_[hi - 1]);
    return std::exp(lnP_[hi - 1] + t * (lnP_[hi] - lnP_[hi - 1]));
}

} // namespace octwalk
