#include "host/cli/options.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <new>
#include <regex>
#include <sstream>
#include <type_traits>

#include "common/errors.h"
#include "host/core/number_text.h"
#include "host/io/atomic_file.h"
#include "device/gpu_solver.h"
#include "host/models/models.h"
#include "host/tree/octree.h"

namespace octwalk::cli {

const char* const kUnits = "Units: N-body (Henon) units, G = 1 unless --G is given; length, mass and time are "
                           "those of the model or snapshot.";

namespace {

const ParameterInfo& row(const char* name)
{
    const ParameterInfo* r = findParameter(name);
    if (!r) throw std::logic_error(std::string("no parameter '") + name + "' in the table");
    return *r;
}

/// "(0, 1]", ">= 0" (or "in (0, 1]" with keepIn): the range of a numeric row without "must be", for the help.
std::string shortRange(const ParameterInfo& r, bool keepIn = false)
{
    std::string text = rangeText(r);
    for (const char* cut : {"must be ", keepIn ? "" : "in ", "finite and "})
    {
        if (text.rfind(cut, 0) == 0) text = text.substr(std::string(cut).size());
    }
    return text;
}

bool isNumeric(const ParameterInfo& r)
{
    return std::holds_alternative<double Parameters::*>(r.member) ||
           std::holds_alternative<int Parameters::*>(r.member);
}

std::string rowHelp(const ParameterInfo& r)
{
    std::string help = r.help;
    if (*r.unit) help += std::string(" [") + r.unit + "]";
    if (isNumeric(r)) help += ", " + shortRange(r);
    return help;
}

bool given(const po::variables_map& vm, const char* option)
{
    return option && vm.count(option) && !vm[option].defaulted();
}

const std::vector<std::string>& modelNames()
{
    static const std::vector<std::string> names{"plummer", "hernquist", "uniform", "galaxy", "merger"};
    return names;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Solver options

std::string defaultText(const char* name, const Parameters& defaults)
{
    const ParameterInfo& r = row(name);
    if (r.form == CliForm::Length)
        return significantDigits(std::sqrt(defaults.*std::get<double Parameters::*>(r.member)), 12);
    if (std::holds_alternative<double Parameters::*>(r.member))
    {
        return significantDigits(defaults.*std::get<double Parameters::*>(r.member), 12);
    }
    return parameterText(r, defaults);
}

po::options_description solverOptions(const Parameters& defaults, const std::vector<std::string>& except)
{
    po::options_description d("Force solver");
    for (const ParameterInfo& r : parameterTable())
    {
        if (std::find(except.begin(), except.end(), r.name) != except.end()) continue;
        const std::string def = defaultText(r.name, defaults);
        // An option with two spellings has no po default (both would count as given); its help says it.
        const std::string help = rowHelp(r) + (r.alias ? " (default " + def + ")" : "");
        std::visit(
            [&](auto member) {
                using T = std::decay_t<decltype(defaults.*member)>;
                if constexpr (std::is_same_v<T, bool>)
                {
                    d.add_options()(r.option, po::bool_switch(), help.c_str());
                }
                else if (r.form == CliForm::OrAuto)
                {
                    d.add_options()(r.option, po::value<std::string>()->default_value(def), help.c_str());
                }
                else
                {
                    using Value               = std::conditional_t<std::is_enum_v<T>, std::string, T>;
                    po::typed_value<Value>* v = po::value<Value>();
                    if (!r.alias)
                    {
                        std::istringstream in(def);
                        Value shown{};
                        in >> shown;
                        v->default_value(shown, def);
                    }
                    d.add_options()(r.option, v, help.c_str());
                    if (r.alias)
                    {
                        d.add_options()(r.alias, po::value<Value>(),
                                        (std::string("the same as --") + r.option).c_str());
                    }
                }
            },
            r.member);
    }
    return d;
}

Parameters toParameters(const po::variables_map& vm, const Parameters& defaults, const std::vector<std::string>& except)
{
    Parameters p = defaults;
    for (const ParameterInfo& r : parameterTable())
    {
        if (std::find(except.begin(), except.end(), r.name) != except.end()) continue;
        if (given(vm, r.option) && given(vm, r.alias))
        {
            throw UsageError(std::string("--") + r.option + " and --" + r.alias + " are the same option; give one");
        }
        const char* option = given(vm, r.option) ? r.option : given(vm, r.alias) ? r.alias : nullptr;
        if (!option) continue;
        const po::variable_value& v = vm[option];
        std::visit(
            [&](auto member) {
                using T = std::decay_t<decltype(p.*member)>;
                if constexpr (std::is_same_v<T, bool>)
                {
                    if (v.as<bool>()) p.*member = r.form != CliForm::Negated;
                }
                else if constexpr (std::is_enum_v<T>)
                {
                    parameterFromText(r, p, v.as<std::string>());
                }
                else if (r.form == CliForm::OrAuto)
                {
                    parameterFromText(r, p, v.as<std::string>());
                }
                else if constexpr (std::is_same_v<T, double>)
                {
                    double x = v.as<double>();
                    if (r.form == CliForm::Length)
                    {
                        if (!(x >= 0) || !std::isfinite(x))
                        {
                            std::ostringstream s;
                            s << "option --" << option << " = " << x << " is invalid: " << rangeText(r);
                            throw ParameterError(s.str());
                        }
                        // A length whose square leaves float32's normal range (or double's: 1e-200) would
                        // silently act as no softening.
                        if (x > 0 && x * x < 0x1p-126)
                        {
                            std::ostringstream s;
                            s.precision(8);
                            s << "option --" << option << " = " << x
                              << " is invalid: must be 0 or >= 2^-63 = 1.0842022e-19 (its square must reach 2^-126, "
                                 "float32's smallest normal number; a smaller softening would act as none)";
                            throw ParameterError(s.str());
                        }
                        x = x * x;
                    }
                    p.*member = x;
                }
                else
                {
                    p.*member = v.as<T>();
                }
            },
            r.member);
    }
    validate(p);
    return p;
}

std::vector<std::string> withRunOnlyParameters(std::vector<std::string> also)
{
    also.push_back("max_energy_error");
    return also;
}

std::vector<std::string> fixedOnRestartOptions()
{
    std::vector<std::string> options;
    for (const ParameterInfo& r : parameterTable())
    {
        if (!r.fixedOnRestart) continue;
        options.push_back(r.option);
        if (r.alias) options.push_back(r.alias);
    }
    return options;
}

std::string listHelp(const char* name, const std::string& plural)
{
    const ParameterInfo& r = row(name);
    std::string noun       = plural.empty() ? std::string(r.help) : plural;
    std::string each       = isNumeric(r) ? ", each " + shortRange(r, true) : "";
    return noun + each;
}

// ---------------------------------------------------------------------------------------------
// Model options

po::options_description modelOptions(ModelOptions& m, int64_t defaultN, bool withOrbit)
{
    po::options_description d(withOrbit ? "Initial conditions (G = 1, total mass 1 per galaxy; galaxy lengths in disk "
                                          "scale lengths)"
                                        : "Bodies (G = 1, total mass 1)");
    d.add_options()("model", po::value(&m.model)->default_value(m.model),
                    "plummer, hernquist, uniform, galaxy or merger");
    if (defaultN > 0)
    {
        m.n = defaultN;
        d.add_options()("n", po::value(&m.n)->default_value(m.n),
                        "number of bodies, 2 to 2^30 - 1 (galaxy: >= 6; merger: >= 6 in each galaxy)");
    }
    d.add_options()("seed", po::value(&m.seed)->default_value(m.seed),
                    "random seed (the same seed gives the same bodies; a sample for direct summation uses seed + 1)");
    if (withOrbit)
    {
        // One option per line: Boost.Program_options chains read best that way.
        // clang-format off
        d.add_options()
            ("mass-ratio", po::value(&m.orbit.massRatio)->default_value(m.orbit.massRatio),
             "merger: mass of the second galaxy over the first, (0, 1]")
            ("pericentre", po::value(&m.orbit.pericentre)->default_value(m.orbit.pericentre),
             "merger: pericentre of the parabolic orbit [R_d]")
            ("separation", po::value(&m.orbit.separation)->default_value(m.orbit.separation),
             "merger: initial separation of the centres [R_d]")
            ("inclination", po::value(&m.orbit.inclination)->default_value(m.orbit.inclination),
             "merger: tilt of the second disk [degrees]");
        // clang-format on
    }
    return d;
}

namespace {

/// The smallest galaxy makeGalaxy builds (a bulge, a disk and a halo body at least, see galaxy.cpp).
constexpr int64_t kMinGalaxyBodies = 6;

/// The least --n of a model: 2, a galaxy 6, a merger enough for 6 bodies in its smaller galaxy.
int64_t minimumBodies(const ModelOptions& m)
{
    if (m.model == "galaxy") return kMinGalaxyBodies;
    if (m.model != "merger") return 2;
    const double q = m.orbit.massRatio; // n2 = round(n q / (1 + q)) as in makeMerger
    int64_t n      = std::max<int64_t>(2 * kMinGalaxyBodies, int64_t(std::floor(5.5 * (1 + q) / q)) - 1);
    while (std::llround(double(n) * q / (1 + q)) < kMinGalaxyBodies ||
           n - std::llround(double(n) * q / (1 + q)) < kMinGalaxyBodies)
    {
        ++n;
    }
    return n;
}

void checkOrbit(const MergerOrbit& o)
{
    auto bad = [](const char* option, double value, const std::string& rule) {
        std::ostringstream s;
        s << "option --" << option << " = " << value << " is invalid: " << rule;
        throw ParameterError(s.str());
    };
    if (!(o.massRatio > 0 && o.massRatio <= 1)) bad("mass-ratio", o.massRatio, "must be in (0, 1]");
    if (!(o.pericentre > 0) || !std::isfinite(o.pericentre)) bad("pericentre", o.pericentre, "must be finite and > 0");
    if (!(o.separation > o.pericentre) || !std::isfinite(o.separation))
    {
        bad("separation", o.separation, "must be finite and larger than --pericentre");
    }
    if (!std::isfinite(o.inclination)) bad("inclination", o.inclination, "must be finite");
}

} // namespace

void checkModel(const ModelOptions& m)
{
    const std::vector<std::string>& names = modelNames();
    if (std::find(names.begin(), names.end(), m.model) == names.end())
    {
        throw ParameterError("option --model = '" + m.model +
                             "' is invalid: use plummer, hernquist, uniform, galaxy "
                             "or merger");
    }
    if (m.model == "merger") checkOrbit(m.orbit);
    std::ostringstream why;
    if (m.model == "galaxy") why << " for --model galaxy (a bulge, a disk and a halo)";
    if (m.model == "merger")
        why << " for --model merger at --mass-ratio " << m.orbit.massRatio << " (6 in each galaxy)";
    checkBodyCount("n", m.n, minimumBodies(m), why.str());
}

void checkBodyCount(const std::string& option, int64_t n, int64_t least, const std::string& why)
{
    if (n < least)
    {
        throw ParameterError("option --" + option + " = " + std::to_string(n) +
                             " is invalid: must be >= " + std::to_string(least) + why);
    }
    if (n > kMaxBodies)
    {
        throw ParameterError("option --" + option + " = " + std::to_string(n) +
                             " is invalid: must be <= " + std::to_string(kMaxBodies) +
                             " (2^30 - 1, the most bodies the tree's 32-bit indices hold)");
    }
}

ParticleSet buildModel(const ModelOptions& m)
{
    checkModel(m);
    try
    {
        if (m.model == "merger") return makeMerger(m.n, m.seed, m.orbit);
        return makeModel(m.model, m.n, m.seed);
    }
    catch (const std::bad_alloc&)
    {
        throw BackendError("out of host memory while making the " + m.model + " model of N = " + std::to_string(m.n) +
                           " bodies (about " + std::to_string(m.n * 88 / 1048576) + " MiB for the bodies alone)");
    }
}

std::string modelJson(const ModelOptions& m)
{
    std::ostringstream s;
    s.precision(17);
    s << "{\"model\": " << jsonString(m.model) << ", \"n\": " << m.n << ", \"seed\": " << m.seed;
    if (m.model == "merger")
    {
        s << ", \"mass_ratio\": " << m.orbit.massRatio << ", \"pericentre\": " << m.orbit.pericentre
          << ", \"separation\": " << m.orbit.separation << ", \"inclination\": " << m.orbit.inclination;
    }
    return s.str() + "}";
}

// ---------------------------------------------------------------------------------------------
// Snapshot and output options

void checkAgrees(const char* option, double given, double inFile)
{
    if (!(std::fabs(given - inFile) <= 1e-6 * std::fabs(inFile)))
    {
        std::ostringstream m;
        m.precision(15);
        m << "option --" << option << " = " << given << " does not match the input file's value " << inFile;
        throw ParameterError(m.str());
    }
}

po::options_description inputOption(std::string& input, const char* what)
{
    po::options_description d("Input");
    // An empty name is a mistake (an unset shell variable), not a request for the built-in model.
    d.add_options()("input", po::value(&input)->notifier([](const std::string& name) {
        if (name.empty()) throw UsageError("option --input is empty: name a snapshot file");
    }),
                    what);
    return d;
}

po::options_description inputFormatOption(std::string& format)
{
    po::options_description d("Input");
    d.add_options()("input-format", po::value(&format)->default_value(format),
                    "auto (from the content), tipsy, tipsy-native, tipsy-bonsai, gadget2 (either GADGET-2 format), "
                    "gadget2-format2 or hdf5");
    return d;
}

po::options_description formatOption(std::string& format)
{
    po::options_description d("Snapshots");
    d.add_options()("format", po::value(&format)->default_value(format),
                    "snapshot format: tipsy (big-endian), tipsy-native, tipsy-bonsai, gadget2, gadget2-format2 "
                    "(labelled blocks) or hdf5");
    return d;
}

po::options_description outputOption(std::string& output, const char* what)
{
    po::options_description d("Output");
    d.add_options()("output,o", po::value(&output), what);
    return d;
}

po::options_description timestepOptions(const std::string& what)
{
    po::options_description d("Timestep");
    const std::string help = "largest timestep [time] (default 1/128)" + what;
    // clang-format off
    d.add_options()("timestep", po::value<double>(), help.c_str())
        ("dt", po::value<double>(), "the same as --timestep");
    // clang-format on
    return d;
}

double timestepOption(const po::variables_map& vm)
{
    if (vm.count("timestep") && vm.count("dt")) throw UsageError("--timestep and --dt are the same option; give one");
    if (vm.count("timestep")) return vm["timestep"].as<double>();
    if (vm.count("dt")) return vm["dt"].as<double>();
    return kRunTimestep;
}

namespace {

/// A step count option's value: "auto" (autoValue) or a whole number >= least; UsageError naming the option,
/// the value and what it must be otherwise.
int64_t parseStepsOrAuto(const char* option, const std::string& text, int64_t autoValue, int64_t least,
                         const char* must)
{
    if (text == "auto") return autoValue;
    size_t used = 0;
    int64_t k   = least - 1;
    try
    {
        k = std::stoll(text, &used);
    }
    catch (const std::exception&)
    {
        used = 0;
    }
    if (used != text.size() || text.empty() || k < least)
    {
        throw UsageError(std::string("option --") + option + " = '" + text + "' is invalid: must be " + must);
    }
    return k;
}

} // namespace

int64_t parseRebuildEvery(const std::string& text)
{
    return parseStepsOrAuto("rebuild-every", text, kRebuildAutomatic, 0, "auto, 0 or a whole number >= 1");
}

int64_t parseRebuildLag(const std::string& text)
{
    return parseStepsOrAuto("rebuild-lag", text, kRebuildLagAutomatic, 1, "auto or a whole number >= 1");
}

po::options_description rebuildOptions(ForceOptions& forces, const std::string& what)
{
    po::options_description d("Tree rebuilds");
    const std::string every =
        "steps between host tree builds [steps]: auto (the default) takes the pipelined step with continuous "
        "builds (0) where the run supports it and the classic step (1) otherwise; 1 builds a fresh tree every "
        "step (the classic step, for comparisons); K >= 2 keeps the state on the force backend and refits the "
        "tree in between, adopting a tree built in the background every K steps; 0 rebuilds continuously: each "
        "build starts in the step that adopts the one before. The pipelined step (0 or K >= 2) takes isolated "
        "tree runs and TreePM boxes (the default for periodic boxes), comoving too (not tree + Ewald boxes, --direct, "
        "--zero-net-force or the relative MAC)" +
        what;
    const std::string lag =
        "steps between the positions a background tree is built from and the step that adopts it [steps]: the "
        "build overlaps that many force-backend steps (1 to K; with 0 any >= 1, a tree adopted every L steps). "
        "auto (the default): 1 from 2^18 bodies on (each step walks a tree predicted for it), else 2. "
        "Background trees are built from the positions predicted for the middle of the steps that will walk "
        "them; forces always use the true positions and refitted cells. A larger lag hides a slower host build "
        "behind the device's steps for older trees (more interactions)" +
        what;
    d.add_options()("rebuild-every",
                    po::value<std::string>()->default_value("auto")->notifier(
                        [&forces](const std::string& text) { forces.rebuildEvery = parseRebuildEvery(text); }),
                    every.c_str())(
        "rebuild-lag", po::value<std::string>()->default_value("auto")->notifier([&forces](const std::string& text) {
            forces.rebuildLag = parseRebuildLag(text);
        }),
        lag.c_str());
    return d;
}

void checkRebuildOptions(const po::variables_map& vm, const ForceOptions& forces)
{
    if (forces.rebuildEvery == 1 && vm.count("rebuild-lag") && !vm["rebuild-lag"].defaulted())
    {
        throw UsageError("--rebuild-lag " + vm["rebuild-lag"].as<std::string>() +
                         " needs --rebuild-every 0 or >= 2: the classic step (--rebuild-every 1) builds each tree "
                         "from the step's own positions");
    }
}

// ---------------------------------------------------------------------------------------------
// Shared helpers

/// Parses argv[first..] against the options; rejects unknown, repeated and positional arguments.
po::variables_map parseOptions(int argc, const char* const* argv, const po::options_description& all,
                               const po::positional_options_description& positional)
{
    po::variables_map vm;
    std::vector<std::string> args(argv + 2, argv + argc);
    // Boost.Program_options (1.74) loops forever composing an error message about an argument that
    // holds one of its message placeholders ('--x%canonical_option%', '--n %value%'): such an
    // argument is refused before Boost sees it (found by tests/fuzz/fuzz_cli.cpp).
    static const std::regex placeholder("%[a-z_]+%");
    for (const std::string& a : args)
    {
        std::smatch m;
        if (std::regex_search(a, m, placeholder))
        {
            throw UsageError("argument '" + a + "' contains '" + m.str() + "', which octwalk does not accept");
        }
    }
    // Boost reads "-1" into an unsigned option as 2^64 - 1: a negative --seed is refused by name.
    for (size_t k = 0; k < args.size(); ++k)
    {
        const std::string& a = args[k];
        std::string value    = a.rfind("--seed=", 0) == 0             ? a.substr(7)
                               : a == "--seed" && k + 1 < args.size() ? args[k + 1]
                                                                      : "";
        if (!value.empty() && value[0] == '-')
        {
            throw ParameterError("option --seed = " + value + " is invalid: must be an integer >= 0");
        }
    }
    po::store(po::command_line_parser(args)
                  .options(all)
                  .positional(positional)
                  .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
    return vm;
}

namespace {

namespace fs = std::filesystem;

/// UsageError unless a new file can be created in dir: an AtomicFile temporary is created there and
/// removed (so permissions, a read-only file system and a missing directory all show, for root too).
void probeWritable(const std::string& option, const std::string& path, const fs::path& dir)
{
    try
    {
        AtomicFile probe((dir / ".octwalk-write-probe").string(), Existing::Replace);
    }
    catch (const FormatError& e)
    {
        throw UsageError("option " + option + " = '" + path + "' cannot be written: " + e.what());
    }
}

} // namespace

void checkNewOutput(const std::string& option, const std::string& path)
{
    if (path.empty()) return;
    std::error_code ec;
    if (fs::exists(fs::symlink_status(path, ec)))
    {
        throw UsageError("option " + option + ": output file '" + path + "' already exists; refusing to overwrite it");
    }
    if (path.back() == '/') throw UsageError("option " + option + " = '" + path + "' names a directory, not a file");
    fs::path parent = fs::path(path).parent_path();
    probeWritable(option, path, parent.empty() ? fs::path(".") : parent);
}

void checkNewDirectory(const std::string& option, const std::string& dir, const std::string& hint)
{
    if (dir.empty()) throw UsageError("option " + option + " is empty: name a directory");
    std::error_code ec;
    const fs::file_status st = fs::status(dir, ec);
    if (fs::exists(st))
    {
        if (!fs::is_directory(st))
        {
            throw UsageError("option " + option + " = '" + dir + "' is a file, not a directory");
        }
        if (!fs::is_empty(dir, ec) || ec)
        {
            throw UsageError("output directory '" + dir + "' (" + option + ") exists and is not empty; refusing " +
                             "to overwrite it" + hint);
        }
        probeWritable(option, dir, dir);
        return;
    }
    // It will be created: the nearest existing ancestor must be a directory that takes new entries.
    fs::path ancestor = fs::path(dir).parent_path();
    while (!ancestor.empty() && !fs::exists(fs::status(ancestor, ec))) ancestor = ancestor.parent_path();
    if (ancestor.empty()) ancestor = ".";
    if (!fs::is_directory(fs::status(ancestor, ec)))
    {
        throw UsageError("option " + option + " = '" + dir + "' cannot be created: '" + ancestor.string() +
                         "' is not a directory");
    }
    probeWritable(option, dir, ancestor);
}

std::string backendLine(const GravitySolver& s)
{
    if (s.activeBackend() == Backend::Gpu) return "gpu: " + gpuDescription();
    return "cpu (" + std::to_string(omp_get_max_threads()) + " OpenMP threads)";
}

} // namespace octwalk::cli
