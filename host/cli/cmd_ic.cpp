// octwalk ic: initial conditions as a snapshot, with the settings beside it.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "host/cli/commands.h"
#include "host/cli/cosmo_options.h"
#include "host/cli/options.h"
#include "host/io/atomic_file.h"
#include "host/io/snapshot.h"
#include "host/models/cosmo_ics.h"
#include "octwalk_version.h"

namespace octwalk::cli {

namespace {

/// `octwalk ic cosmo ...` or `octwalk ic --model cosmo ...`.
bool isCosmoModel(int argc, const char* const* argv)
{
    for (int i = 2; i < argc; ++i)
    {
        const std::string arg = argv[i];
        if (arg == "cosmo" && (i == 2 || std::strcmp(argv[i - 1], "--model") == 0)) return true;
        if (arg == "--model=cosmo") return true;
    }
    return false;
}

/// N = n^3 from --n-grid, or from --n when it is a cube; UsageError for both or a non-cube.
int64_t gridSide(const po::variables_map& vm)
{
    if (vm.count("n-grid") && vm.count("n")) throw UsageError("give --n-grid or --n, not both");
    if (!vm.count("n")) return vm.count("n-grid") ? vm["n-grid"].as<int64_t>() : 64;
    const int64_t n = vm["n"].as<int64_t>();
    int64_t side    = std::llround(std::cbrt(double(n)));
    if (n < 8 || side * side * side != n)
    {
        throw ParameterError("option --n = " + std::to_string(n) + " is invalid: cosmo needs a cube n-grid^3 >= 8");
    }
    return side;
}

/// A table has no power outside its k range: says how many of the box's modes lie there (makeCosmoIcs
/// refuses a table that reaches none of them).
void noteSpectrumCoverage(const CosmoIcParams& p, const LinearPower& power, std::ostream& out)
{
    const SpectrumCoverage c = spectrumCoverage(p, power);
    if (c.covered == c.modes) return;
    std::ostringstream s;
    s.precision(4);
    s << "note: the power spectrum table covers k = " << power.kMin() << " to " << power.kMax() << " h/Mpc; "
      << c.modes - c.covered << " of the box's " << c.modes << " modes, " << boxModesText(p, c)
      << ", lie outside it and were given no power (P = 0 outside the table)\n";
    out << s.str();
}

/// Writes snapshot `output` and its sidecar output.json as one: the sidecar's bytes go to its temporary
/// first, and a sidecar that cannot be completed after the snapshot takes the snapshot away again, so a
/// failed command leaves neither file (and its retry is not refused as "already exists").
void writeSnapshotAndSidecar(const std::string& output, SnapshotFormat f, const ParticleSet& bodies,
                             const SnapshotMeta& meta, const std::string& sidecarJson)
{
    AtomicFile sidecar(output + ".json");
    sidecar.write(sidecarJson);
    writeSnapshot(output, f, bodies, meta);
    try
    {
        sidecar.commit();
    }
    catch (...)
    {
        std::error_code ignored;
        std::filesystem::remove(output, ignored);
        throw;
    }
}

int cosmoIcCommand(int argc, const char* const* argv, std::ostream& out)
{
    CosmoIcParams p;
    CosmoOptions co;
    std::string output, format = "gadget2", model;
    int64_t nGrid = p.nGrid;
    po::options_description cmd("octwalk ic cosmo: cosmological initial conditions, a grid of n^3 particles in a "
                                "periodic box displaced by 2LPT (or Zel'dovich) from a linear P(k), as a snapshot "
                                "(and FILE.json with the settings)\nCommand");
    // clang-format off
    cmd.add_options()
        ("help,h", "this help")
        ("model", po::value(&model), "cosmo")
        ("n-grid", po::value(&nGrid), "particles per side, N = n-grid^3 (default 64), >= 2")
        ("n", po::value<int64_t>(), "number of particles, a cube (instead of --n-grid)")
        ("box-size", po::value(&p.boxSize)->default_value(p.boxSize),
         "side of the periodic box [length unit of --units: Mpc/h, or kpc/h for gadget-kpc], > 0")
        ("z-begin", po::value(&p.zBegin)->default_value(p.zBegin), "starting redshift, >= 0")
        ("seed", po::value(&p.seed)->default_value(p.seed),
         "random seed of the phases (a mode's amplitude depends on the seed and its integer wavenumber only, so "
         "the same seed gives the same large-scale modes whatever n-grid)")
        ("lpt", po::value(&p.lptOrder)->default_value(p.lptOrder), "Lagrangian perturbation order: 1 Zel'dovich, 2 2LPT")
        ("fix-amplitudes", po::bool_switch(&p.fixAmplitudes),
         "every mode's amplitude set to its mean, |delta(k)|^2 = P(k) / V, phases random (monofonIC's DoFixing)")
        ("invert-phases", po::bool_switch(&p.invertPhases),
         "every mode negated (monofonIC's DoInversion): with the same seed, the paired twin whose mean power "
         "cancels the realisation's second-order term")
        ("plt", po::bool_switch(&p.plt),
         "particle-linear-theory correction of the first-order displacement (Garrison, Eisenstein, Ferrer, "
         "Metchnik & Pinto 2016, MNRAS 461, 4125): each mode's component along the lattice's growing "
         "eigenvector (Ewald-summed dynamical matrix of the n-grid^3 lattice) is scaled so that the lattice's "
         "slower growth reaches the fluid's linear amplitude at --plt-a-target, with that eigenmode's growth "
         "rate in its velocity; the 2LPT term is left as it is")
        ("plt-a-target", po::value(&p.pltATarget)->default_value(p.pltATarget),
         "scale factor at which the --plt modes match linear theory, > a_begin");
    // clang-format on
    po::options_description all;
    all.add(cmd)
        .add(cosmoOptions(co))
        .add(outputOption(output, "new snapshot file (required)"))
        .add(formatOption(format));
    po::positional_options_description positional;
    positional.add("model", 1);
    po::variables_map vm = parseOptions(argc, argv, all, positional);
    if (vm.count("help"))
    {
        out << all << "\n" << kCosmoUnits << "\n";
        return 0;
    }
    if (output.empty()) throw UsageError("option -o/--output is required (the new snapshot file)");
    if (!vm["plt-a-target"].defaulted() && !p.plt) throw UsageError("option --plt-a-target needs --plt");
    SnapshotFormat f = parseSnapshotFormat(format);
    p.nGrid          = gridSide(vm);
    p.cosmology      = co.cosmology;
    p.units          = icUnits(co.units);
    validateCosmoIcs(p);
    LinearPower power = linearPower(co);
    checkNewOutput("-o/--output", output);
    checkNewOutput("-o/--output (its sidecar)", output + ".json");

    ParticleSet bodies = makeCosmoIcs(p, power);
    noteSpectrumCoverage(p, power, out);
    std::ostringstream settings;
    settings.precision(17);
    settings << "{\"model\": \"cosmo\", \"n_grid\": " << p.nGrid << ", \"box_size\": " << p.boxSize
             << ", \"z_begin\": " << p.zBegin << ", \"a_begin\": " << bodies.time << ", \"seed\": " << p.seed
             << ", \"lpt\": " << p.lptOrder << ", \"fix_amplitudes\": " << (p.fixAmplitudes ? "true" : "false")
             << ", \"invert_phases\": " << (p.invertPhases ? "true" : "false")
             << ", \"plt\": " << (p.plt ? "true" : "false") << ", \"plt_a_target\": " << p.pltATarget
             << ", \"growth_factor\": " << growthFactor(p.cosmology, bodies.time)
             << ", \"particle_mass\": " << bodies.mass[0] << ", \"linear_power\": " << jsonString(power.description())
             << ", \"cosmology\": " << cosmoJson(co) << "}";
    SnapshotMeta meta{settings.str(), versionAndHash(), p.units.gravitationalConstant};
    writeSnapshotAndSidecar(output, f, bodies, meta,
                            "{\"octwalk\": " + jsonString(OCTWALK_VERSION) +
                                ", \"git\": " + jsonString(OCTWALK_GIT_HASH) +
                                ", \"units\": " + jsonString(p.units.name) + ", \"format\": " + jsonString(format) +
                                ", \"initial_conditions\": " + settings.str() + "}\n");
    out << "wrote " << bodies.size() << " particles (cosmo, " << p.nGrid << "^3 in a box of " << p.boxSize
        << ", a = " << bodies.time << ", " << power.description() << ") to " << output << " [" << format << "]\n";
    return 0;
}

} // namespace

int icCommand(int argc, const char* const* argv, std::ostream& out)
{
    if (isCosmoModel(argc, argv)) return cosmoIcCommand(argc, argv, out);
    ModelOptions mo;
    std::string output, format = "tipsy";
    po::options_description cmd("octwalk ic [MODEL]: write initial conditions as a snapshot (and FILE.json with the "
                                "settings)\nCommand");
    cmd.add_options()("help,h", "this help");
    po::options_description all;
    all.add(cmd)
        .add(outputOption(output, "new snapshot file (required)"))
        .add(formatOption(format))
        .add(modelOptions(mo, 65536, true));
    po::positional_options_description positional;
    positional.add("model", 1);
    po::variables_map vm = parseOptions(argc, argv, all, positional);
    if (vm.count("help"))
    {
        out << all << "\n"
            << kUnits << "\n"
            << "Model cosmo (cosmological initial conditions): see octwalk ic cosmo --help\n";
        return 0;
    }
    if (output.empty()) throw UsageError("option -o/--output is required (the new snapshot file)");
    SnapshotFormat f = parseSnapshotFormat(format);
    checkModel(mo);
    checkNewOutput("-o/--output", output);
    checkNewOutput("-o/--output (its sidecar)", output + ".json");
    ParticleSet bodies   = buildModel(mo);
    std::string settings = modelJson(mo);
    writeSnapshotAndSidecar(output, f, bodies, SnapshotMeta{settings, versionAndHash(), 1.0},
                            "{\"octwalk\": " + jsonString(OCTWALK_VERSION) +
                                ", \"git\": " + jsonString(OCTWALK_GIT_HASH) +
                                ", \"units\": \"N-body, G = 1\", \"format\": " + jsonString(format) +
                                ", \"initial_conditions\": " + settings + "}\n");
    out << "wrote " << bodies.size() << " bodies (" << mo.model << ") to " << output << " [" << format << "]\n";
    return 0;
}

} // namespace octwalk::cli
