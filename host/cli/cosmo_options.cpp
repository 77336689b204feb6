#include "host/cli/cosmo_options.h"

#include <sstream>

#include "host/io/json.h"

namespace octwalk::cli {

namespace po = boost::program_options;

const char* const kCosmoUnits =
    "Units (--units): nbody: length Mpc/h, G = 1, H0 = 1 (time unit 1/H0, velocity unit 100 km/s, mean density "
    "Omega0 3/(8 pi)); gadget-mpc: Mpc/h, km/s, 1e10 Msun/h, G = 43.0071, H0 = 100; gadget-kpc: kpc/h, km/s, "
    "1e10 Msun/h, G = 43007.1, H0 = 0.1. Velocities are peculiar, a dx/dt. k in h/Mpc and P(k) in (Mpc/h)^3 for "
    "--power-spectrum whatever the units.";

po::options_description cosmoOptions(CosmoOptions& o)
{
    po::options_description d("Cosmology and linear power spectrum");
    // clang-format off
    d.add_options()
        ("omega0", po::value(&o.cosmology.omega0)->default_value(o.cosmology.omega0),
         "Omega0: matter density today / critical density, > 0")
        ("omega-lambda", po::value(&o.cosmology.omegaLambda)->default_value(o.cosmology.omegaLambda),
         "OmegaLambda: cosmological constant today / critical density, >= 0")
        ("hubble-param", po::value(&o.cosmology.hubbleParam)->default_value(o.cosmology.hubbleParam),
         "h, H0 = 100 h km/s/Mpc, > 0")
        ("omega-baryon", po::value(&o.spectrum.omegaBaryon)->default_value(o.spectrum.omegaBaryon),
         "Omega_baryon today (EH98), in [0, Omega0)")
        ("ns", po::value(&o.spectrum.ns)->default_value(o.spectrum.ns), "primordial spectral index (EH98)")
        ("sigma8", po::value(&o.spectrum.sigma8)->default_value(o.spectrum.sigma8),
         "rms linear density contrast in 8 Mpc/h top-hat spheres at z = 0 (EH98), > 0")
        ("transfer", po::value(&o.transfer)->default_value(o.transfer),
         "transfer function: eh98 (Eisenstein & Hu 1998 with baryon wiggles) or eh98-nowiggle")
        ("tcmb", po::value(&o.spectrum.tcmb)->default_value(o.spectrum.tcmb), "CMB temperature today (EH98) [K]")
        ("power-spectrum", po::value(&o.powerSpectrumFile),
         "tabulated linear P(k) at z = 0 instead of EH98: columns k [h/Mpc], P [(Mpc/h)^3] as CAMB and CLASS "
         "write them ('#' lines skipped)")
        ("units", po::value(&o.units)->default_value(o.units), "unit system: nbody, gadget-mpc or gadget-kpc");
    // clang-format on
    return d;
}

LinearPower linearPower(CosmoOptions& o)
{
    o.spectrum.transfer = parseTransferModel(o.transfer);
    if (!o.powerSpectrumFile.empty()) return LinearPower::fromTable(o.powerSpectrumFile);
    return LinearPower::eisensteinHu(o.cosmology, o.spectrum);
}

std::string cosmoJson(const CosmoOptions& o)
{
    const IcUnits u = icUnits(o.units);
    std::ostringstream s;
    s.precision(17);
    s << "{\"omega0\": " << o.cosmology.omega0 << ", \"omega_lambda\": " << o.cosmology.omegaLambda
      << ", \"hubble_param\": " << o.cosmology.hubbleParam << ", \"units\": " << jsonString(u.name)
      << ", \"G\": " << u.gravitationalConstant << ", \"H0\": " << u.hubble0
      << ", \"length_unit_mpc_over_h\": " << u.lengthInMpcOverH;
    if (o.powerSpectrumFile.empty())
    {
        s << ", \"transfer\": " << jsonString(o.transfer) << ", \"omega_baryon\": " << o.spectrum.omegaBaryon
          << ", \"ns\": " << o.spectrum.ns << ", \"sigma8\": " << o.spectrum.sigma8
          << ", \"tcmb\": " << o.spectrum.tcmb;
    }
    else
    {
        s << ", \"power_spectrum\": " << jsonString(o.powerSpectrumFile);
    }
    return s.str() + "}";
}

} // namespace octwalk::cli
