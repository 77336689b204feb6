#include "host/cli/options.h"

#include <omp.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <vector>

#include "device/gravity_gpu.h"
#include "common/errors.h"

namespace octwalk::cli {

const char* const kUnits = "Units: N-body (Henon) units, G = 1 unless --G is given; length, mass and time are "
                               "those of the model or snapshot.";

po::options_description solverOptions(SolverOptions& s)
{
    Parameters defaults;
    po::options_description d("Force solver");
    d.add_options()
        ("opening-angle", po::value<double>(), "opening angle theta, (0, 1] (default 0.5)")
        ("theta", po::value<double>(), "the same as --opening-angle")
        ("epsilon", po::value(&s.epsilon)->default_value(s.epsilon), "Plummer softening length [length], >= 0")
        ("G", po::value(&s.G)->default_value(defaults.gravitational_constant), "gravitational constant, > 0")
        ("n-leaf", po::value(&s.nLeaf)->default_value(defaults.n_leaf), "most bodies in a leaf, >= 1")
        ("n-group", po::value(&s.nGroup)->default_value(defaults.n_group), "most bodies in a walk group, >= 1")
        ("merge-groups", po::bool_switch(&s.mergeGroups),
         "join neighbouring groups up to n-group bodies (fewer, fuller groups)")
        ("mac", po::value(&s.mac)->default_value(toString(defaults.mac)),
         "acceptance criterion: bonsai (d > l/theta + delta) or octgrav (d > l/theta)")
        ("backend", po::value(&s.backend)->default_value(toString(defaults.backend)),
         "auto (GPU if present, else CPU), cpu or gpu")
        ("monopole", po::bool_switch(&s.monopole), "monopole only (drop the quadrupole moments)");
    return d;
}

Parameters toParameters(SolverOptions s, const po::variables_map& vm)
{
    if (vm.count("opening-angle") && vm.count("theta"))
    {
        throw UsageError("--opening-angle and --theta are the same option; give one");
    }
    if (vm.count("opening-angle")) s.theta = vm["opening-angle"].as<double>();
    if (vm.count("theta")) s.theta = vm["theta"].as<double>();
    if (!(s.epsilon >= 0) || !std::isfinite(s.epsilon))
    {
        throw ParameterError("option --epsilon = " + std::to_string(s.epsilon) + " is invalid: must be finite and >= 0");
    }
    Parameters p;
    p.opening_angle          = s.theta;
    p.epsilon_squared        = s.epsilon * s.epsilon;
    p.gravitational_constant = s.G;
    p.n_leaf                 = s.nLeaf;
    p.n_group                = s.nGroup;
    p.mac                    = parseMac(s.mac);
    p.backend                = parseBackend(s.backend);
    p.use_quadrupole         = !s.monopole;
    p.merge_groups           = s.mergeGroups;
    validate(p);
    return p;
}

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
    po::store(po::command_line_parser(args).options(all).positional(positional).style(po::command_line_style::default_style &
                                                                ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
    return vm;
}

/// Refuses to overwrite an existing output (the caller writes nothing until all checks pass).
void checkNewOutput(const std::string& path)
{
    if (!path.empty() && std::filesystem::exists(path))
    {
        throw UsageError("output file '" + path + "' already exists; refusing to overwrite it");
    }
}

std::string backendLine(const GravitySolver& s)
{
    if (s.activeBackend() == Backend::Gpu) return "gpu: " + gpuDescription();
    return "cpu (" + std::to_string(omp_get_max_threads()) + " OpenMP threads)";
}

} // namespace octwalk::cli
