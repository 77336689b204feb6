// octwalk ic: initial conditions as a snapshot, with the settings beside it.
#include <string>

#include "host/cli/commands.h"
#include "host/cli/options.h"
#include "host/io/atomic_file.h"
#include "host/io/snapshot.h"
#include "octwalk_version.h"

namespace octwalk::cli {

int icCommand(int argc, const char* const* argv, std::ostream& out)
{
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
        out << all << "\n" << kUnits << "\n";
        return 0;
    }
    if (output.empty()) throw UsageError("option -o/--output is required (the new snapshot file)");
    SnapshotFormat f = parseSnapshotFormat(format);
    checkModel(mo);
    checkNewOutput("-o/--output", output);
    checkNewOutput("-o/--output (its sidecar)", output + ".json");
    ParticleSet bodies   = buildModel(mo);
    std::string settings = modelJson(mo);
    writeSnapshot(output, f, bodies, SnapshotMeta{settings, versionAndHash(), 1.0});
    writeFileAtomically(output + ".json", "{\"octwalk\": " + jsonString(OCTWALK_VERSION) +
                                              ", \"git\": " + jsonString(OCTWALK_GIT_HASH) +
                                              ", \"units\": \"N-body, G = 1\", \"format\": " + jsonString(format) +
                                              ", \"initial_conditions\": " + settings + "}\n");
    out << "wrote " << bodies.size() << " bodies (" << mo.model << ") to " << output << " [" << format << "]\n";
    return 0;
}

} // namespace octwalk::cli
