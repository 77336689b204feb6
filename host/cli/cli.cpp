#include "host/cli/cli.h"

#include <boost/program_options.hpp>

#include <iostream>
#include <map>
#include <string>

#include "common/errors.h"
#include "host/cli/commands.h"
#include "host/cli/options.h"

namespace po = boost::program_options;

namespace octwalk {

namespace {

using namespace cli;

void printUsage(std::ostream& out)
{
    out << versionHeader() << ": a gravitational N-body tree-code (host-built octree, GPU group walk)\n\n"
        << "usage: octwalk <command> [options]      octwalk <command> --help\n\n"
        << "commands:\n"
        << "  run       shared-timestep leapfrog simulation of a model or snapshot, with diagnostics,\n"
        << "            snapshots, checkpoints and restart\n"
        << "  ic        write initial conditions (plummer, hernquist, uniform, galaxy, merger) as a snapshot\n"
        << "  convert   convert a snapshot between formats (tipsy, tipsy-native, tipsy-bonsai, gadget2, "
           "gadget2-format2, hdf5)\n"
        << "  forces    tree forces for a built-in model: timings, interactions, error vs direct summation\n"
        << "  accuracy  error percentiles vs direct summation over a sweep of theta, MAC, n-leaf, n-group, multipole\n"
        << "  profile   per-phase timings, GFLOP/s, walk bandwidth and speed-up over direct summation vs N and "
           "theta\n\n"
        << "options: --help, --version\n"
        << kUnits << "\n";
}

} // namespace

int runCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err)
{
    using Command = int (*)(int, const char* const*, std::ostream&);
    const std::map<std::string, Command> commands{
        {"forces", cli::forcesCommand},   {"run", cli::runCommand},           {"ic", cli::icCommand},
        {"convert", cli::convertCommand}, {"accuracy", cli::accuracyCommand}, {"profile", cli::profileCommand}};
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
