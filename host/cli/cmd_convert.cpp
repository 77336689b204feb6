// octwalk convert: a snapshot rewritten in another format.
#include <filesystem>
#include <string>

#include "host/cli/commands.h"
#include "host/cli/options.h"
#include "host/io/snapshot.h"

namespace fs = std::filesystem;

namespace octwalk::cli {

int convertCommand(int argc, const char* const* argv, std::ostream& out)
{
    std::string input, output, inputFormat = "auto", format = "tipsy";
    po::options_description cmd("octwalk convert INPUT OUTPUT (or INPUT -o OUTPUT): rewrite a snapshot in another "
                                "format (id order)\nCommand");
    cmd.add_options()("help,h", "this help");
    po::options_description all;
    all.add(cmd)
        .add(inputOption(input, "snapshot to read (or the first positional argument)"))
        .add(inputFormatOption(inputFormat))
        .add(outputOption(output, "new snapshot to write (or the second positional argument)"))
        .add(formatOption(format));
    po::positional_options_description positional;
    positional.add("input", 1).add("output", 1);
    po::variables_map vm = parseOptions(argc, argv, all, positional);
    if (vm.count("help"))
    {
        out << all << "\n";
        return 0;
    }
    if (input.empty()) throw UsageError("give INPUT (the first argument or --input)");
    if (output.empty()) throw UsageError("give OUTPUT (the second argument or -o/--output)");
    if (fs::exists(input) && fs::exists(output) && fs::equivalent(input, output))
    {
        throw UsageError("OUTPUT '" + output + "' is the INPUT file");
    }
    SnapshotFormat f = parseSnapshotFormat(format);
    checkNewOutput("-o/--output", output);
    ParticleSet p = inputFormat == "auto" ? readSnapshot(input) : readSnapshot(input, parseSnapshotFormat(inputFormat));
    writeSnapshot(output, f, p);
    out << "wrote " << p.size() << " bodies to " << output << " [" << format << "]\n";
    return 0;
}

} // namespace octwalk::cli
