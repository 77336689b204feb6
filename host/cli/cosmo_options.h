#pragma once
/// @file cosmo_options.h
/// The command-line options of cosmological initial conditions and power spectra (internal to the
/// CLI, shared by `ic cosmo` and `power`): the background (--omega0, --omega-lambda, --hubble-param),
/// the linear spectrum (--omega-baryon, --ns, --sigma8, --transfer, --tcmb, --power-spectrum) and
/// the unit system (--units).

#include <boost/program_options.hpp>

#include <string>

#include "host/core/cosmology.h"
#include "host/models/cosmo_ics.h"
#include "host/models/linear_power.h"

namespace octwalk::cli {

struct CosmoOptions
{
    Cosmology cosmology;
    SpectrumParams spectrum;
    std::string transfer = toString(SpectrumParams{}.transfer);
    std::string powerSpectrumFile;
    std::string units = "nbody";
};

/// The options above with their defaults shown (Cosmology{} and SpectrumParams{}).
boost::program_options::options_description cosmoOptions(CosmoOptions& o);

/// The linear P(k) at z = 0 the options name: the --power-spectrum table when given, else EH98
/// normalised to --sigma8 (ParameterError / FormatError naming the value).
LinearPower linearPower(CosmoOptions& o);

/// The options as one JSON object (for the settings an output records).
std::string cosmoJson(const CosmoOptions& o);

/// The unit help line: what each --units choice means.
extern const char* const kCosmoUnits;

} // namespace octwalk::cli
