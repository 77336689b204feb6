// octwalk power: the matter power spectrum of a periodic snapshot to a CSV, with linear theory and
// the ratio to a reference (starting) snapshot beside it.
#include <cmath>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "common/errors.h"
#include "host/cli/commands.h"
#include "host/cli/cosmo_options.h"
#include "host/cli/options.h"
#include "host/core/number_text.h"
#include "host/io/atomic_file.h"
#include "host/io/snapshot.h"
#include "host/study/power_spectrum.h"

namespace octwalk::cli {

namespace {

struct Snapshot
{
    ParticleSet particles;
    double a = 0;
};

/// The snapshot and its scale factor: --a when given, else the file's time (a for a cosmological file).
Snapshot readWithScaleFactor(const std::string& path, const std::string& format, const po::variables_map& vm,
                             const char* aOption)
{
    Snapshot s;
    s.particles = format == "auto" ? readSnapshot(path) : readSnapshot(path, parseSnapshotFormat(format));
    s.a         = vm.count(aOption) ? vm[aOption].as<double>() : s.particles.time;
    if (vm.count(aOption) && !(std::isfinite(s.a) && s.a > 0))
    {
        throw ParameterError(std::string("option --") + aOption + " = " + significantDigits(s.a, 10) +
                             " is invalid: a scale factor must be finite and > 0");
    }
    return s;
}

/// The cosmology of the run: each option given on the command line, else the snapshot's, else the default.
Cosmology runCosmology(const po::variables_map& vm, const CosmoOptions& given, const ParticleSet& snapshot)
{
    Cosmology c = snapshot.cosmology ? *snapshot.cosmology : given.cosmology;
    if (vm.count("omega0") && !vm["omega0"].defaulted()) c.omega0 = given.cosmology.omega0;
    if (vm.count("omega-lambda") && !vm["omega-lambda"].defaulted()) c.omegaLambda = given.cosmology.omegaLambda;
    if (vm.count("hubble-param") && !vm["hubble-param"].defaulted()) c.hubbleParam = given.cosmology.hubbleParam;
    return c;
}

} // namespace

int powerCommand(int argc, const char* const* argv, std::ostream& out)
{
    PowerOptions po_;
    CosmoOptions co;
    std::string input, inputFormat = "auto", output, assignment = "cic", reference;
    double boxSize = 0;
    po::options_description cmd("octwalk power SNAPSHOT: the matter power spectrum of a periodic snapshot (mass "
                                "assignment, window deconvolution, optional interlacing, spherical bins) to a CSV\n"
                                "Command");
    // clang-format off
    cmd.add_options()
        ("help,h", "this help")
        ("snapshot", po::value(&input), "the snapshot (positional)")
        ("n-mesh", po::value(&po_.nMesh)->default_value(po_.nMesh), "mesh cells per side, 4 to 2048")
        ("assignment", po::value(&assignment)->default_value(assignment), "mass assignment: cic or tsc")
        ("interlace", po::bool_switch(&po_.interlace), "average with a grid shifted by half a cell (cancels the odd "
         "aliasing images)")
        ("n-bins", po::value(&po_.nBins)->default_value(po_.nBins),
         "k bins from kF/2 to k_Nyquist + kF/2 (kF = 2 pi / box), at most (n-mesh/2 + 1)^2 (the distinct |k| in "
         "that range); 0: n-mesh / 2, one per kF")
        ("log-bins", po::bool_switch(&po_.logBins), "bins equally spaced in ln k")
        ("box-size", po::value(&boxSize), "side of the periodic box [length] (default: the snapshot's BoxSize)")
        ("a", po::value<double>(), "scale factor of the snapshot (default: its time)")
        ("linear", po::bool_switch(), "add P_linear: the linear P(k) (EH98 or --power-spectrum) times "
         "[D(a)/D(1)]^2 at each bin's mean k")
        ("reference", po::value(&reference), "a reference (starting) snapshot of the same run: add its P(k) with "
         "the same mesh and bins, the ratio P/P_reference and the linear-theory ratio [D(a)/D(a_reference)]^2")
        ("reference-a", po::value<double>(), "scale factor of --reference (default: its time)");
    // clang-format on
    po::options_description all;
    all.add(cmd)
        .add(cosmoOptions(co))
        .add(inputFormatOption(inputFormat))
        .add(outputOption(output, "new CSV file (default: standard output)"));
    po::positional_options_description positional;
    positional.add("snapshot", 1);
    po::variables_map vm = parseOptions(argc, argv, all, positional);
    if (vm.count("help"))
    {
        out << all
            << "\nOutput: k [1/length], P [length^3] in the snapshot's units; shot noise is stated, not "
               "subtracted.\n"
            << kCosmoUnits << "\n";
        return 0;
    }
    if (input.empty()) throw UsageError("a snapshot is required: octwalk power SNAPSHOT");
    po_.assignment = parseMassAssignment(assignment);
    validatePowerOptions(po_);
    const bool linear   = vm["linear"].as<bool>();
    const IcUnits units = icUnits(co.units);
    checkNewOutput("-o/--output", output);

    Snapshot snap = readWithScaleFactor(input, inputFormat, vm, "a");
    if (!vm.count("box-size")) boxSize = snap.particles.boxSize;
    if (!(boxSize > 0) || !std::isfinite(boxSize))
    {
        throw ParameterError("box-size = " + significantDigits(boxSize, 10) + " is invalid: the snapshot '" + input +
                             "' has no periodic box; give --box-size > 0");
    }
    if (snap.particles.boxSize > 0 && std::abs(snap.particles.boxSize - boxSize) > 1e-9 * boxSize)
    {
        throw ParameterError(
            "box-size = " + significantDigits(boxSize, 10) +
            " does not match the snapshot's BoxSize = " + significantDigits(snap.particles.boxSize, 10));
    }
    const Cosmology cosmology = runCosmology(vm, co, snap.particles);
    const PowerSpectrum ps    = measurePowerSpectrum(snap.particles, boxSize, po_);

    std::optional<LinearPower> theory;
    if (linear || !reference.empty()) validateCosmology(cosmology, snap.a, snap.a);
    if (linear)
    {
        co.cosmology = cosmology;
        theory       = linearPower(co);
    }
    Snapshot ref;
    PowerSpectrum refPs;
    if (!reference.empty())
    {
        ref = readWithScaleFactor(reference, inputFormat, vm, "reference-a");
        validateCosmology(cosmology, ref.a, ref.a);
        refPs = measurePowerSpectrum(ref.particles, boxSize, po_);
    }

    std::ostringstream csv;
    csv << "# " << versionHeader() << "\n# command:";
    for (int i = 0; i < argc; ++i) csv << " " << (i == 0 ? "octwalk" : argv[i]);
    csv << "\n";
    csv << "# a = " << significantDigits(snap.a, 10) << ", box = " << significantDigits(boxSize, 10)
        << ", N = " << snap.particles.size() << ", units = " << units.name
        << " (k in 1/length, P in length^3; length = " << significantDigits(units.lengthInMpcOverH, 10) << " Mpc/h)\n";
    csv << "# n_mesh = " << po_.nMesh << ", assignment = " << toString(po_.assignment)
        << ", interlace = " << (po_.interlace ? "yes" : "no") << ", n_bins = " << ps.bins.size()
        << ", bins = " << (po_.logBins ? "log" : "linear") << ", window deconvolved\n";
    csv << "# shot noise = " << significantDigits(ps.shotNoise, 10)
        << " (V sum m^2 / (sum m)^2): NOT subtracted from P\n";
    csv << "# cosmology: Omega0 = " << significantDigits(cosmology.omega0, 10)
        << ", OmegaLambda = " << significantDigits(cosmology.omegaLambda, 10)
        << ", h = " << significantDigits(cosmology.hubbleParam, 10) << "\n";
    if (theory)
    {
        csv << "# P_linear: " << theory->description()
            << ", times [D(a)/D(1)]^2 = " << significantDigits(std::pow(growthFactor(cosmology, snap.a), 2), 10)
            << "\n";
    }
    if (!reference.empty())
    {
        csv << "# reference: " << reference << ", a = " << significantDigits(ref.a, 10)
            << "; growth_ratio2 = [D(a)/D(a_ref)]^2\n";
    }
    csv << "k_low,k_high,k_mean,P,modes,shot_noise";
    if (theory) csv << ",P_linear";
    if (!reference.empty()) csv << ",P_reference,ratio,growth_ratio2";
    csv << "\n";
    const double growth2 =
        !reference.empty() ? std::pow(growthFactor(cosmology, snap.a) / growthFactor(cosmology, ref.a), 2) : 0.0;
    const double lengthMpc = units.lengthInMpcOverH;
    for (size_t b = 0; b < ps.bins.size(); ++b)
    {
        const PowerBin& bin = ps.bins[b];
        if (bin.modes == 0) continue;
        csv << significantDigits(bin.kLow, 10) << "," << significantDigits(bin.kHigh, 10) << ","
            << significantDigits(bin.kMean, 10) << "," << significantDigits(bin.power, 10) << "," << bin.modes << ","
            << significantDigits(ps.shotNoise, 10);
        if (theory)
        {
            const double d = growthFactor(cosmology, snap.a);
            // The table is in h/Mpc and (Mpc/h)^3: convert to the snapshot's length unit.
            csv << ","
                << significantDigits(d * d * (*theory)(bin.kMean / lengthMpc) / (lengthMpc * lengthMpc * lengthMpc),
                                     10);
        }
        if (!reference.empty())
        {
            const double pr = refPs.bins[b].power;
            csv << "," << significantDigits(pr, 10) << "," << significantDigits(pr > 0 ? bin.power / pr : 0.0, 10)
                << "," << significantDigits(growth2, 10);
        }
        csv << "\n";
    }
    if (output.empty())
    {
        out << csv.str();
    }
    else
    {
        writeFileAtomically(output, csv.str());
        out << "wrote " << ps.bins.size() << " bins of P(k) of " << input << " (a = " << significantDigits(snap.a, 10)
            << ") to " << output << "\n";
    }
    return 0;
}

} // namespace octwalk::cli
