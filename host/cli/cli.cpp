#include "host/cli/cli.h"

#include <boost/program_options.hpp>
#include <omp.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "host/reference/error_stats.h"
#include "host/cli/options.h"
#include "host/io/atomic_file.h"
#include "host/core/phases.h"
#include "host/reference/direct.h"
#include "common/errors.h"
#include "host/models/models.h"
#include "host/core/params.h"
#include "host/solver/solver.h"
#include "octwalk_version.h"

namespace po = boost::program_options;

namespace octwalk {

namespace {

using namespace cli;

int forcesCommand(int argc, const char* const* argv, std::ostream& out)
{
    SolverOptions so;
    std::string model = "plummer", output;
    int64_t n = 1 << 20, sample = 1000;
    uint64_t seed = 1;
    po::options_description cmd("octwalk forces: tree accelerations and potentials of a built-in model, with "
                                "per-phase timings, interactions per body and the error against direct summation\n"
                                "Model");
    cmd.add_options()("help,h", "this help")
        ("model", po::value(&model)->default_value(model), "plummer, hernquist or uniform (mass 1, G = 1)")
        ("n", po::value(&n)->default_value(n), "number of bodies, >= 2")
        ("seed", po::value(&seed)->default_value(seed), "random seed of the model")
        ("sample", po::value(&sample)->default_value(sample),
         "bodies checked against exact double-precision direct summation (0: none, >= N: all)")
        ("output,o", po::value(&output), "also write the report as JSON to this new file");
    po::options_description all;
    all.add(cmd).add(solverOptions(so));
    po::variables_map vm = parseOptions(argc, argv, all);
    if (vm.count("help"))
    {
        out << all << "\n" << kUnits << "\n";
        return 0;
    }
    Parameters p = toParameters(so, vm);
    if (n < 2) throw ParameterError("option --n = " + std::to_string(n) + " is invalid: must be >= 2");
    if (sample < 0) throw ParameterError("option --sample = " + std::to_string(sample) + " is invalid: must be >= 0");
    checkNewOutput(output);

    ParticleSet bodies = makeModel(model, n, seed);
    GravitySolver solver(p);
    solver.setBodies(bodies.pos, bodies.mass, bodies.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    solver.computeForces(acc, pot);

    const PhaseTimes& t = solver.timings();
    const InteractionStats& st = solver.stats();
    std::ostringstream r;
    r << std::setprecision(4);
    r << versionHeader() << "\n";
    r << "model " << model << ", N = " << n << ", seed " << seed << "; backend " << backendLine(solver) << "\n";
    r << "parameters " << toJson(p) << "\n";
    r << "tree: " << st.numInternal << " internal cells, " << st.numLeaves << " leaves, depth " << st.depth << ", "
      << st.numGroups << " groups\n";
    r << phasesText(t, n);
    r << "interactions per body: node " << st.nodesPerBody() << ", leaf (body-body) " << st.leavesPerBody() << "\n";

    ErrorStats e;
    if (sample > 0)
    {
        std::vector<int64_t> idx = sampleIndices(n, sample, seed + 1);
        std::vector<Vec3d> ref, treeAcc;
        std::vector<double> refPot;
        solver.computeDirect(idx, ref, refPot);
        for (int64_t i : idx) treeAcc.push_back(acc[i]);
        e = errorStats(relativeErrors(treeAcc, ref));
        r << "|a_tree - a_direct| / |a_direct| over " << e.count << " bodies: median " << e.median << ", 90% "
          << e.p90 << ", 99% " << e.p99 << ", max " << e.max << "\n";
    }
    out << r.str();
    if (!output.empty())
    {
        std::ostringstream j;
        j << std::setprecision(9) << "{\n  \"octwalk\": \"" << OCTWALK_VERSION << "\", \"git\": \"" << OCTWALK_GIT_HASH
          << "\",\n  \"units\": \"N-body, G = " << p.gravitational_constant << "\",\n  \"model\": \"" << model
          << "\", \"n\": " << n << ", \"seed\": " << seed << ",\n  \"parameters\": " << toJson(p)
          << ",\n  \"backend\": \"" << toString(solver.activeBackend()) << "\",\n  " << phasesJson(t) << ",\n  \"node_per_body\": "
          << st.nodesPerBody() << ", \"leaf_per_body\": " << st.leavesPerBody() << ",\n  \"error\": {\"count\": "
          << e.count << ", \"median\": " << e.median << ", \"p90\": " << e.p90 << ", \"p99\": " << e.p99
          << ", \"max\": " << e.max << "}\n}\n";
        writeFileAtomically(output, j.str());
    }
    return 0;
}

void printUsage(std::ostream& out)
{
    out << versionHeader() << ": a gravitational N-body tree-code (host-built octree, GPU group walk)\n\n"
        << "usage: octwalk <command> [options]      octwalk <command> --help\n\n"
        << "commands:\n"
        << "  run       shared-timestep leapfrog simulation of a model or snapshot, with diagnostics,\n"
        << "            snapshots, checkpoints and restart\n"
        << "  ic        write initial conditions (plummer, hernquist, uniform, galaxy, merger) as a snapshot\n"
        << "  convert   convert a snapshot between formats (tipsy, tipsy-native, tipsy-bonsai, gadget2, hdf5)\n"
        << "  forces    tree forces for a built-in model: timings, interactions, error vs direct summation\n"
        << "  accuracy  error percentiles vs direct summation over a sweep of theta, MAC, n-leaf, n-group, multipole\n"
        << "  profile   per-phase timings, GFLOP/s, walk bandwidth and speed-up over direct summation vs N and theta\n\n"
        << "options: --help, --version\n"
        << kUnits << "\n";
}

} // namespace

int runCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err)
{
    using Command = int (*)(int, const char* const*, std::ostream&);
    const std::map<std::string, Command> commands{{"forces", forcesCommand},
                                                  {"run", cli::runCommand},
                                                  {"ic", cli::icCommand},
                                                  {"convert", cli::convertCommand},
                                                  {"accuracy", cli::accuracyCommand},
                                                  {"profile", cli::profileCommand}};
    if (argc < 2)
    {
        printUsage(err);
        return 2;
    }
    std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help")
    {
        printUsage(out);
        return 0;
    }
    if (name == "--version")
    {
        out << versionHeader() << "\n";
        return 0;
    }
    auto it = commands.find(name);
    try
    {
        if (it == commands.end()) throw cli::UsageError("unknown command '" + name + "' (see octwalk --help)");
        return it->second(argc, argv, out);
    }
    catch (const po::error& e)
    {
        err << "octwalk " << name << ": " << e.what() << "\n";
        return 2;
    }
    catch (const cli::UsageError& e)
    {
        err << "octwalk " << name << ": " << e.what() << "\n";
        return 2;
    }
    catch (const ParameterError& e)
    {
        err << "octwalk " << name << ": " << e.what() << "\n";
        return 2;
    }
    catch (const std::exception& e)
    {
        err << "octwalk " << name << ": error: " << e.what() << "\n";
        return 1;
    }
}

} // namespace octwalk
