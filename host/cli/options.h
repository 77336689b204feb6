#pragma once
/// @file cli_common.h
/// Pieces shared by the octwalk subcommands (internal to the CLI).

#include <boost/program_options.hpp>

#include <stdexcept>
#include <string>

#include "host/core/params.h"
#include "host/core/version.h"
#include "host/io/json.h"
#include "host/solver/solver.h"

namespace octwalk::cli {

namespace po = boost::program_options;

/// A mistake in the command line itself (exit code 2).
class UsageError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

extern const char* const kUnits;

struct SolverOptions
{
    double theta = 0.5, epsilon = 0.0, G = 1.0;
    int nLeaf = 16, nGroup = 64;
    std::string mac = "bonsai", backend = "auto";
    bool monopole = false, mergeGroups = false;
};

/// The force-solver options, shared by every command that computes forces.
po::options_description solverOptions(SolverOptions& s);

/// Resolves and validates the solver options (ParameterError / UsageError).
Parameters toParameters(SolverOptions s, const po::variables_map& vm);

/// Parses argv[2..] against the options; rejects unknown, repeated and positional arguments.
po::variables_map parseOptions(int argc, const char* const* argv, const po::options_description& all,
                               const po::positional_options_description& positional = {});

/// Refuses to overwrite an existing output (the caller writes nothing until all checks pass).
void checkNewOutput(const std::string& path);

/// "gpu: NAME" or "cpu (N OpenMP threads)".
std::string backendLine(const GravitySolver& s);

} // namespace octwalk::cli

namespace octwalk::cli {

/// `octwalk run`, `octwalk ic` and `octwalk convert` (cli_run.cpp).
int runCommand(int argc, const char* const* argv, std::ostream& out);
int icCommand(int argc, const char* const* argv, std::ostream& out);
int convertCommand(int argc, const char* const* argv, std::ostream& out);

/// `octwalk accuracy` and `octwalk profile` (cli_study.cpp).
int accuracyCommand(int argc, const char* const* argv, std::ostream& out);
int profileCommand(int argc, const char* const* argv, std::ostream& out);

} // namespace octwalk::cli
