// octwalk convert: a snapshot rewritten in another format, optionally keeping only some particle types.
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "host/cli/commands.h"
#include "host/cli/options.h"
#include "host/io/snapshot.h"

namespace fs = std::filesystem;

namespace octwalk::cli {

namespace {

/// "2" or "1,2,3": GADGET types 0..5; UsageError naming --type otherwise.
std::vector<bool> parseTypes(const std::string& list)
{
    std::vector<bool> keep(6, false);
    std::stringstream s(list);
    std::string item;
    bool any = false;
    while (std::getline(s, item, ','))
    {
        if (item.size() != 1 || item[0] < '0' || item[0] > '5')
        {
            throw UsageError("--type '" + list +
                             "' is invalid: give GADGET types 0..5, comma-separated (e.g. 2 or 1,2)");
        }
        keep[size_t(item[0] - '0')] = true;
        any                         = true;
    }
    if (!any) throw UsageError("--type '' is invalid: give GADGET types 0..5, comma-separated (e.g. 2 or 1,2)");
    return keep;
}

/// The bodies of `p` whose type is kept, in their order.
ParticleSet selectTypes(const ParticleSet& p, const std::vector<bool>& keep)
{
    ParticleSet out;
    out.time      = p.time;
    out.boxSize   = p.boxSize;
    out.cosmology = p.cosmology;
    for (int64_t i = 0; i < p.size(); ++i)
    {
        if (!keep[p.type[i]]) continue;
        out.pos.push_back(p.pos[i]);
        out.vel.push_back(p.vel[i]);
        out.mass.push_back(p.mass[i]);
        out.id.push_back(p.id[i]);
        out.type.push_back(p.type[i]);
    }
    return out;
}

/// "1 (4096 bodies), 4 (12 bodies)": the types a set holds.
std::string typesPresent(const ParticleSet& p)
{
    int64_t count[6] = {};
    for (uint8_t t : p.type) ++count[t < 6 ? t : 5];
    std::string s;
    for (int t = 0; t < 6; ++t)
    {
        if (count[t] == 0) continue;
        s += (s.empty() ? "" : ", ") + std::to_string(t) + " (" + std::to_string(count[t]) + " bodies)";
    }
    return s;
}

} // namespace

int convertCommand(int argc, const char* const* argv, std::ostream& out)
{
    std::string input, output, inputFormat = "auto", format = "tipsy", types, cosmology = "auto";
    po::options_description cmd("octwalk convert INPUT OUTPUT (or INPUT -o OUTPUT): rewrite a snapshot in another "
                                "format (by type, in id order within a type); particle types, box size and "
                                "cosmology are kept where the output format has room for them\nCommand");
    // clang-format off
    cmd.add_options()
        ("help,h", "this help")
        ("type", po::value(&types),
         "keep only these GADGET particle types, comma-separated (0 gas, 1 halo, 2 disk, 3 bulge, 4 stars, "
         "5 boundary; octwalk's galaxy model writes halo 1, disk 2, bulge 3)")
        ("read-cosmology", po::value(&cosmology)->default_value(cosmology),
         "how to read a GADGET-2 or HDF5 input: auto (cosmological when BoxSize > 0 and Omega0 > 0, as N-GenIC, "
         "MUSIC and monofonIC write), cosmological (time is a, velocities u = v_pec / sqrt(a)) or isolated");
    // clang-format on
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
    SnapshotReadOptions reading;
    reading.cosmology = parseCosmologyReading(cosmology);
    const std::vector<bool> keep(vm.count("type") ? parseTypes(types) : std::vector<bool>(6, true));
    checkNewOutput("-o/--output", output);
    ParticleSet p = inputFormat == "auto" ? readSnapshot(input, reading)
                                          : readSnapshot(input, parseSnapshotFormat(inputFormat), reading);
    if (vm.count("type"))
    {
        ParticleSet kept = selectTypes(p, keep);
        if (kept.size() == 0 && p.size() > 0)
        {
            throw UsageError("--type " + types + " selects none of the " + std::to_string(p.size()) + " bodies of '" +
                             input + "', whose types are " + typesPresent(p) + "; nothing was written");
        }
        p = std::move(kept);
    }
    writeSnapshot(output, f, p);
    out << "wrote " << p.size() << " bodies to " << output << " [" << format << "]\n";
    const bool tipsy =
        f == SnapshotFormat::TipsyStandard || f == SnapshotFormat::TipsyNative || f == SnapshotFormat::TipsyBonsai;
    const bool darkOnly =
        std::any_of(p.type.begin(), p.type.end(), [](uint8_t t) { return t == 2 || t == 3 || t == 5; });
    if (tipsy && darkOnly)
    {
        out << "note: TIPSY has gas, dark and star records only: types 2, 3 and 5 were written as dark (type 1)\n";
    }
    return 0;
}

} // namespace octwalk::cli
