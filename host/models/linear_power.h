#pragma once
/// @file linear_power.h
/// The linear matter power spectrum at z = 0 that cosmological initial conditions start from and that
/// `octwalk power --linear` compares with: the Eisenstein & Hu (1998, ApJ 496, 605) transfer function
/// (with baryon wiggles, or their "no-wiggle" shape fit) times k^ns normalised to sigma8, or a table
/// as CAMB and CLASS write it. Wavenumbers are in h/Mpc and P in (Mpc/h)^3 throughout, whatever
/// units the particles use (the caller converts its box length to Mpc/h).

#include <functional>
#include <string>
#include <vector>

#include "host/core/cosmology.h"

namespace octwalk {

enum class TransferModel
{
    EisensteinHu,         ///< EH98 eqs. 2-24, baryon acoustic wiggles included
    EisensteinHuNoWiggle, ///< EH98 eqs. 26-31, the zero-baryon shape with the baryon suppression
};

/// "eh98" or "eh98-nowiggle"; ParameterError naming the value otherwise.
TransferModel parseTransferModel(const std::string& name);
std::string toString(TransferModel model);

/// The parameters of the spectrum beyond the background (Omega0 and h come from Cosmology).
struct SpectrumParams
{
    /// Omega_baryon today, in [0, Omega0).
    double omegaBaryon = 0.049;
    /// Primordial spectral index n_s.
    double ns = 0.965;
    /// rms linear density contrast in top-hat spheres of 8 Mpc/h at z = 0. > 0.
    double sigma8 = 0.81;
    /// CMB temperature today [K] (EH98's Theta_2.7 = tcmb / 2.7).
    double tcmb            = 2.7255;
    TransferModel transfer = TransferModel::EisensteinHu;
};

/// ParameterError naming the value when omegaBaryon is not in [0, omega0), ns or tcmb are not finite
/// (tcmb > 0), or sigma8 is not > 0 and finite.
void validateSpectrum(const Cosmology& c, const SpectrumParams& s);

/// The EH98 transfer function T(k), T -> 1 as k -> 0.
/// @param[in] c  Omega0 (matter: CDM + baryons) and h
/// @param[in] s  omegaBaryon, tcmb and which fit
/// @param[in] k  wavenumber [h/Mpc], >= 0
double eisensteinHuTransfer(const Cosmology& c, const SpectrumParams& s, double k);

/// sigma(R) of a spectrum: sqrt(int dk k^2 P(k) W(kR)^2 / (2 pi^2)) with the top-hat window
/// W(x) = 3 (sin x - x cos x) / x^3, integrated in ln k over [1e-6, 1e4] h/Mpc by Gauss-Legendre
/// panels fine enough that the window's oscillations are resolved (converged to 1e-9 relative).
/// @param[in] power  P(k) [(Mpc/h)^3] of k [h/Mpc]
/// @param[in] radius R [Mpc/h], > 0
double sigmaTopHat(const std::function<double(double)>& power, double radius);

/// A linear P(k) at z = 0: EH98 normalised to sigma8, or a table interpolated in log-log.
class LinearPower
{
public:
    /// EH98 times k^ns, normalised so that sigmaTopHat(8) = s.sigma8. Validates c and s.
    static LinearPower eisensteinHu(const Cosmology& c, const SpectrumParams& s);

    /// A CAMB/CLASS table: lines "k P" (k [h/Mpc] > 0 and strictly increasing, P [(Mpc/h)^3] > 0 as
    /// it is interpolated in log-log, both finite; further columns ignored; '#' lines and blank lines skipped), at z = 0. At least 2 rows.
    /// FormatError naming the file, the line and the value otherwise.
    static LinearPower fromTable(const std::string& path);

    /// P(k) [(Mpc/h)^3] at k [h/Mpc]; 0 for k <= 0. A table is interpolated linearly in (ln k, ln P)
    /// and extrapolated as zero outside its k range (the field then has no power there).
    double operator()(double k) const;

    /// What it is, for output headers: "EH98 (wiggles), sigma8 = 0.81, ns = 0.965, ..." or "table FILE".
    const std::string& description() const { return description_; }

    /// Smallest and largest k of a table [h/Mpc] (0 and infinity for EH98).
    double kMin() const { return kMin_; }
    double kMax() const { return kMax_; }
    /// A table (whose power is zero outside [kMin, kMax]), not EH98.
    bool isTable() const { return table_; }

private:
    LinearPower() = default;
    std::string description_;
    // EH98: amplitude * k^ns * T(k)^2
    Cosmology cosmology_;
    SpectrumParams spectrum_;
    double amplitude_ = 0.0;
    // table
    std::vector<double> lnK_, lnP_;
    double kMin_ = 0.0, kMax_ = 0.0;
    bool table_ = false;
};

} // namespace octwalk
