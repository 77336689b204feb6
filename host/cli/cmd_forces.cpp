// octwalk forces: tree forces of a built-in model, timings, interactions and the error against direct summation.
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "host/cli/commands.h"
#include "host/cli/options.h"
#include "host/core/phases.h"
#include "host/io/atomic_file.h"
#include "host/reference/direct.h"
#include "host/reference/error_stats.h"
#include "octwalk_version.h"

namespace octwalk::cli {

int forcesCommand(int argc, const char* const* argv, std::ostream& out)
{
    ModelOptions mo;
    std::string output;
    int64_t sample = 1000;
    po::options_description cmd("octwalk forces: tree accelerations and potentials of a built-in model, with "
                                "per-phase timings, interactions per body and the error against direct summation\n"
                                "Forces");
    // One option per line: Boost.Program_options chains read best that way.
    // clang-format off
    cmd.add_options()("help,h", "this help")
        ("sample", po::value(&sample)->default_value(sample),
         "bodies checked against exact double-precision direct summation (0: none, >= N: all)");
    // clang-format on
    po::options_description all;
    all.add(cmd)
        .add(modelOptions(mo, 1 << 20, false))
        .add(outputOption(output, "also write the report as JSON to this new file"))
        .add(solverOptions(Parameters{}, withRunOnlyParameters()));
    po::variables_map vm = parseOptions(argc, argv, all);
    if (vm.count("help"))
    {
        out << all << "\n" << kUnits << "\n";
        return 0;
    }
    Parameters p = toParameters(vm, Parameters{}, withRunOnlyParameters());
    checkModel(mo);
    if (sample < 0) throw ParameterError("option --sample = " + std::to_string(sample) + " is invalid: must be >= 0");
    checkNewOutput("-o/--output", output);

    const int64_t n    = mo.n;
    ParticleSet bodies = buildModel(mo);
    GravitySolver solver(p);
    solver.setBodies(bodies.pos, bodies.mass, bodies.id);
    std::vector<Vec3d> acc;
    std::vector<double> pot;
    solver.computeForces(acc, pot);

    const PhaseTimes& t        = solver.timings();
    const InteractionStats& st = solver.stats();
    std::ostringstream r;
    r << std::setprecision(4);
    r << versionHeader() << "\n";
    r << "model " << mo.model << ", N = " << n << ", seed " << mo.seed << "; backend " << backendLine(solver) << "\n";
    r << "parameters " << toJson(p) << "\n";
    r << "tree: " << st.numInternal << " internal cells, " << st.numLeaves << " leaves, depth " << st.depth << ", "
      << st.numGroups << " groups\n";
    r << phasesText(t, n);
    r << "interactions per body: node " << st.nodesPerBody() << ", leaf (body-body) " << st.leavesPerBody() << "\n";

    ErrorStats e;
    if (sample > 0)
    {
        std::vector<int64_t> idx = sampleIndices(n, sample, mo.seed + 1);
        std::vector<Vec3d> ref, treeAcc;
        std::vector<double> refPot;
        solver.computeDirect(idx, ref, refPot);
        for (int64_t i : idx) treeAcc.push_back(acc[i]);
        e = errorStats(relativeErrors(treeAcc, ref));
        r << "|a_tree - a_direct| / |a_direct| over " << e.count << " bodies: median " << e.median << ", 90% " << e.p90
          << ", 99% " << e.p99 << ", max " << e.max << "\n";
    }
    out << r.str();
    if (!output.empty())
    {
        std::ostringstream j;
        j << std::setprecision(9) << "{\n  \"octwalk\": \"" << OCTWALK_VERSION << "\", \"git\": \"" << OCTWALK_GIT_HASH
          << "\",\n  \"units\": \"N-body, G = " << p.gravitational_constant << "\",\n  \"model\": \"" << mo.model
          << "\", \"n\": " << n << ", \"seed\": " << mo.seed << ",\n  \"parameters\": " << toJson(p)
          << ",\n  \"backend\": \"" << toString(solver.activeBackend()) << "\",\n  " << phasesJson(t)
          << ",\n  \"node_per_body\": " << st.nodesPerBody() << ", \"leaf_per_body\": " << st.leavesPerBody()
          << ",\n  \"error\": {\"count\": " << e.count << ", \"median\": " << e.median << ", \"p90\": " << e.p90
          << ", \"p99\": " << e.p99 << ", \"max\": " << e.max << "}\n}\n";
        writeFileAtomically(output, j.str());
    }
    return 0;
}

} // namespace octwalk::cli
