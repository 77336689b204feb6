// Cosmological initial conditions (host/models/cosmo_ics.h) and the matter power spectrum
// (host/study/power_spectrum.h), as `octwalk ic cosmo` and `octwalk power` compute them.
#include <cmath>

#include "common/errors.h"
#include "host/core/cosmology.h"
#include "host/models/cosmo_ics.h"
#include "host/models/linear_power.h"
#include "host/study/power_spectrum.h"
#include "python/src/bindings.h"

namespace octwalk::python {

namespace {

/// The linear P(k) at z = 0 as `octwalk ic cosmo` takes it: a CAMB/CLASS table when one is named, else
/// EH98 normalised to sigma8.
LinearPower linearPowerOf(const Cosmology& c, SpectrumParams s, const std::string& transfer, const std::string& table)
{
    s.transfer = parseTransferModel(transfer);
    if (!table.empty()) return LinearPower::fromTable(table);
    return LinearPower::eisensteinHu(c, s);
}

py::dict cosmoIcs(int64_t nGrid, double boxSize, double zBegin, uint64_t seed, int lpt, bool fixAmplitudes,
                  bool invertPhases, bool plt, double pltATarget, double omega0, double omegaLambda, double hubbleParam,
                  double omegaBaryon, double ns, double sigma8, double tcmb, const std::string& transfer,
                  const std::string& powerSpectrum, const std::string& units)
{
    CosmoIcParams p;
    p.nGrid                 = nGrid;
    p.boxSize               = boxSize;
    p.zBegin                = zBegin;
    p.seed                  = seed;
    p.lptOrder              = lpt;
    p.fixAmplitudes         = fixAmplitudes;
    p.invertPhases          = invertPhases;
    p.plt                   = plt;
    p.pltATarget            = pltATarget;
    p.cosmology.omega0      = omega0;
    p.cosmology.omegaLambda = omegaLambda;
    p.cosmology.hubbleParam = hubbleParam;
    p.units                 = icUnits(units);
    validateCosmoIcs(p);
    SpectrumParams s;
    s.omegaBaryon     = omegaBaryon;
    s.ns              = ns;
    s.sigma8          = sigma8;
    s.tcmb            = tcmb;
    LinearPower power = linearPowerOf(p.cosmology, s, transfer, powerSpectrum);
    ParticleSet bodies;
    {
        py::gil_scoped_release free;
        bodies = makeCosmoIcs(p, power);
    }
    py::dict d         = particlesToDict(bodies);
    d["a_begin"]       = bodies.time;
    d["G"]             = p.units.gravitationalConstant;
    d["H0"]            = p.units.hubble0;
    d["units"]         = p.units.name;
    d["linear_power"]  = power.description();
    d["growth_factor"] = growthFactor(p.cosmology, bodies.time);
    return d;
}

py::tuple powerSpectrum(py::handle pos, py::handle mass, double boxSize, int nMesh, int nBins,
                        const std::string& assignment, bool interlace, bool logBins)
{
    auto m = scalarsArray(mass, "mass");
    ParticleSet p;
    p.pos  = toVectors(vectorsArray(pos, "pos", int64_t(m.shape(0))));
    p.mass = std::vector<double>(m.data(), m.data() + m.shape(0));
    PowerOptions o;
    o.nMesh      = nMesh;
    o.nBins      = nBins;
    o.assignment = parseMassAssignment(assignment);
    o.interlace  = interlace;
    o.logBins    = logBins;
    if (!(boxSize > 0) || !std::isfinite(boxSize))
    {
        throw ParameterError("box_size = " + std::to_string(boxSize) + " is invalid: must be > 0 and finite");
    }
    PowerSpectrum ps;
    {
        py::gil_scoped_release free;
        ps = measurePowerSpectrum(p, boxSize, o);
    }
    std::vector<double> k, power;
    std::vector<int64_t> modes;
    for (const PowerBin& b : ps.bins)
    {
        k.push_back(b.kMean);
        power.push_back(b.power);
        modes.push_back(b.modes);
    }
    return py::make_tuple(toNumpy(std::move(k)), toNumpy(std::move(power)), copyToNumpy(modes), ps.shotNoise);
}

} // namespace

void bindCosmology(py::module_& m)
{
    const CosmoIcParams p;
    const SpectrumParams s;
    m.def("cosmo_ics", &cosmoIcs, py::kw_only(), py::arg("n_grid") = p.nGrid, py::arg("box_size") = p.boxSize,
          py::arg("z_begin") = p.zBegin, py::arg("seed") = p.seed, py::arg("lpt") = p.lptOrder,
          py::arg("fix_amplitudes") = false, py::arg("invert_phases") = false, py::arg("plt") = false,
          py::arg("plt_a_target") = p.pltATarget, py::arg("omega0") = p.cosmology.omega0,
          py::arg("omega_lambda") = p.cosmology.omegaLambda, py::arg("hubble_param") = p.cosmology.hubbleParam,
          py::arg("omega_baryon") = s.omegaBaryon, py::arg("ns") = s.ns, py::arg("sigma8") = s.sigma8,
          py::arg("tcmb") = s.tcmb, py::arg("transfer") = toString(s.transfer), py::arg("power_spectrum") = "",
          py::arg("units") = p.units.name);
    const PowerOptions o;
    m.def("power_spectrum", &powerSpectrum, py::arg("pos"), py::arg("mass"), py::arg("box_size"), py::kw_only(),
          py::arg("n_mesh") = o.nMesh, py::arg("n_bins") = o.nBins, py::arg("assignment") = toString(o.assignment),
          py::arg("interlace") = o.interlace, py::arg("log_bins") = o.logBins);
}

} // namespace octwalk::python
