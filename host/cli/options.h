#pragma once
/// @file options.h
/// Every option of the octwalk subcommands declared once (internal to the CLI): the solver options
/// from the parameter table (host/core/params.h), the model options, the snapshot input/format
/// options and the output option (-o/--output in every command that writes one file), plus the
/// helpers every command shares.

#include <boost/program_options.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "host/core/params.h"
#include "host/core/particles.h"
#include "host/models/galaxy.h"
#include "host/core/version.h"
#include "host/io/json.h"
#include "host/sim/simulation.h"
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

// ---------------------------------------------------------------------------------------------
// Solver options (one per row of parameterTable())

/// The solver options: --opening-angle/--theta, --epsilon, --G, --n-leaf, --n-group, --no-merge-groups,
/// --mac, --monopole, --backend (whatever the table holds), with the defaults of `defaults` shown.
/// @param[in] defaults  the command's defaults (Parameters{} but where a command overrides one:
///                      run's epsilon)
/// @param[in] except    names of parameters (table names) the command declares otherwise, e.g. a
///                      study's lists of opening angles
po::options_description solverOptions(const Parameters& defaults             = Parameters{},
                                      const std::vector<std::string>& except = {});

/// `defaults` with every solver option given on the command line applied; validated
/// (ParameterError naming the option or parameter, UsageError for an option given under both names).
/// except: as given to solverOptions (those parameters keep their defaults).
Parameters toParameters(const po::variables_map& vm, const Parameters& defaults = Parameters{},
                        const std::vector<std::string>& except = {});

/// The table rows that only a run uses (max_energy_error): forces, accuracy and profile do not offer them.
/// `also`: the command's own exceptions, to which they are added.
std::vector<std::string> withRunOnlyParameters(std::vector<std::string> also = {});

/// The options (every spelling) that a restart refuses because the checkpoint holds them.
std::vector<std::string> fixedOnRestartOptions();

/// "most bodies in a leaf, each >= 1 (default 16)": a row's help for a command's list of its values.
std::string listHelp(const char* name, const std::string& plural);

/// A row's default as the command line spells it ("16", "bonsai", "0.5").
std::string defaultText(const char* name, const Parameters& defaults = Parameters{});

// ---------------------------------------------------------------------------------------------
// Model options

struct ModelOptions
{
    std::string model = "plummer";
    int64_t n         = 65536;
    uint64_t seed     = 1;
    MergerOrbit orbit;
};

/// --model, --seed, and --n unless defaultN is 0 (a command that takes --n as a list); withOrbit adds
/// the merger's orbit options (--mass-ratio, --pericentre, --separation, --inclination).
po::options_description modelOptions(ModelOptions& m, int64_t defaultN, bool withOrbit);

/// Checks the model name, n (from the model's minimum to kMaxBodies) and the merger's orbit options
/// before any work (ParameterError naming the option, the value and the limit).
void checkModel(const ModelOptions& m);

/// ParameterError naming --option unless least <= n <= kMaxBodies (host/tree/octree.h).
/// why: said after the minimum (e.g. " for --model galaxy").
void checkBodyCount(const std::string& option, int64_t n, int64_t least = 2, const std::string& why = "");

/// The bodies of the model (the merger with its orbit); BackendError naming the model and N when
/// the host runs out of memory making it.
ParticleSet buildModel(const ModelOptions& m);

/// The model options as one JSON object, for the settings an output records.
std::string modelJson(const ModelOptions& m);

// ---------------------------------------------------------------------------------------------
// Snapshot and output options

/// --input FILE: a snapshot to start from or read (what for: the help text).
po::options_description inputOption(std::string& input, const char* what);

/// An option given beside an input file must agree with the file's header (to 1e-6: headers may hold these in
/// single precision, and a redshift gives a only to round-off); ParameterError naming both values otherwise.
void checkAgrees(const char* option, double given, double inFile);

/// --input-format NAME (auto: detected from the content).
po::options_description inputFormatOption(std::string& format);

/// --format NAME: the snapshot format written.
po::options_description formatOption(std::string& format);

/// -o/--output FILE: the one new file a command writes (what: the help text).
po::options_description outputOption(std::string& output, const char* what);

// ---------------------------------------------------------------------------------------------
// Simulation options (run, and profile --steps)

/// The softening of `octwalk run` unless --epsilon is given: a collisionless run needs some (forces
/// and studies default to none).
inline constexpr double kRunEpsilon = 0.01;

/// The largest timestep of `octwalk run` unless --timestep/--dt is given [time].
inline constexpr double kRunTimestep = 1.0 / 128;

/// --timestep and its alias --dt [time] (default kRunTimestep); what: said after the default.
po::options_description timestepOptions(const std::string& what);

/// The value of --timestep or --dt (UsageError when both are given), else kRunTimestep.
double timestepOption(const po::variables_map& vm);

/// --rebuild-every K and --rebuild-lag L [steps] into forces.rebuildEvery and forces.rebuildLag, whose values are
/// the defaults (host/sim/simulation.h: the pipelined step for K != 1); what: said at the end of the help.
po::options_description rebuildOptions(ForceOptions& forces, const std::string& what = "");
/// `--rebuild-every`'s value: "auto" (kRebuildAutomatic) or a whole number >= 0; UsageError naming it otherwise.
int64_t parseRebuildEvery(const std::string& text);
/// `--rebuild-lag`'s value: "auto" (kRebuildLagAutomatic) or a whole number >= 1; UsageError naming it otherwise.
int64_t parseRebuildLag(const std::string& text);
/// UsageError for a --rebuild-lag given with --rebuild-every 1 (the classic step has no lag), before any work.
void checkRebuildOptions(const po::variables_map& vm, const ForceOptions& forces);

// ---------------------------------------------------------------------------------------------
// Shared helpers

/// Parses argv[2..] against the options; rejects unknown, repeated and positional arguments.
po::variables_map parseOptions(int argc, const char* const* argv, const po::options_description& all,
                               const po::positional_options_description& positional = {});

/// Checks a new output file before any work (the caller writes nothing until all checks pass):
/// UsageError naming the option and the path when it exists, or its directory is missing or does not
/// take a new file (a temporary is created there and removed). Nothing for an empty path (not given).
void checkNewOutput(const std::string& option, const std::string& path);

/// Checks an output directory that will be created or filled before any work: UsageError naming the
/// option and the path when it is empty, names a file, exists and is not empty (hint: appended to that
/// message), or cannot be created or written (its nearest existing ancestor is probed).
void checkNewDirectory(const std::string& option, const std::string& dir, const std::string& hint = "");

/// "gpu: NAME" or "cpu (N OpenMP threads)".
std::string backendLine(const GravitySolver& s);

} // namespace octwalk::cli
