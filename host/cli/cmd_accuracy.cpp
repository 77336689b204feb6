// octwalk accuracy: tree forces against direct summation over a sweep of settings (the measurements live in
// host/study/study.cpp).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "common/errors.h"
#include "device/gpu_solver.h"
#include "host/cli/commands.h"
#include "host/cli/lists.h"
#include "host/cli/options.h"
#include "host/cli/study_report.h"
#include "host/io/atomic_file.h"
#include "host/io/snapshot.h"
#include "host/study/study.h"

namespace fs = std::filesystem;

namespace octwalk::cli {

namespace {

/// The bodies of a study: a built-in model or a snapshot.
struct Source
{
    ModelOptions model;
    std::string input;

    std::string json(int64_t numBodies) const
    {
        if (!input.empty()) return "{\"input\": " + jsonString(input) + ", \"n\": " + std::to_string(numBodies) + "}";
        return "{\"model\": " + jsonString(model.model) + ", \"n\": " + std::to_string(numBodies) +
               ", \"seed\": " + std::to_string(model.seed) + "}";
    }
    std::string name() const { return input.empty() ? model.model : input; }
};

/// The parameters the accuracy sweep takes as lists instead of the table's single-valued options.
const std::vector<std::string> kAccuracySweptParameters{"opening_angle", "mac", "n_leaf", "n_group", "use_quadrupole"};

std::string joined(const std::vector<std::string>& names)
{
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

struct AccuracyOptions
{
    Source source;
    int64_t sample = 10000;
    int repeat     = 1;
    // The sweep's lists; a list of one value defaults to the table's default.
    std::string theta = "0.2:0.8:0.1", mac = "bonsai,octgrav", nLeaf = defaultText("n_leaf"),
                nGroup = defaultText("n_group"), multipole = multipoleName(Parameters{});
    std::string reference = "auto", output, csv, json, errorsDir;
};

std::string settingJson(const Parameters& p)
{
    return "\"theta\": " + num(p.opening_angle) + ", \"mac\": " + jsonString(toString(p.mac)) +
           ", \"n_leaf\": " + std::to_string(p.n_leaf) + ", \"n_group\": " + std::to_string(p.n_group) +
           ", \"multipole\": " + jsonString(multipoleName(p));
}

std::string accuracyHeaderJson(const AccuracyOptions& o, const Parameters& base, const ParticleSet& bodies,
                               const DirectReference& ref)
{
    std::ostringstream j;
    j << "{" << provenanceJson(base.gravitational_constant)
      << ", \"command\": \"accuracy\", \"source\": " << o.source.json(bodies.size()) << ", \"n\": " << bodies.size()
      << ", \"sample\": " << ref.index.size() << ", \"sampled\": " << (ref.sampled() ? "true" : "false")
      << ", \"sample_seed\": " << o.source.model.seed + 1
      << ", \"reference\": {\"backend\": " << jsonString(toString(ref.backend))
      << ", \"description\": " << jsonString(ref.description) << ", \"seconds\": " << num(ref.seconds)
      << "}, \"repeat\": " << o.repeat << ", \"epsilon\": " << num(std::sqrt(base.epsilon_squared))
      << ", \"G\": " << num(base.gravitational_constant) << ", \"backend\": " << jsonString(toString(base.backend))
      << ", \"merge_groups\": " << (base.merge_groups ? "true" : "false")
      << ", \"softened_quadrupole\": " << (base.softened_quadrupole ? "true" : "false")
      << ", \"error\": \"|a_tree - a_direct| / |a_direct| over the reference bodies; percentiles by nearest rank\""
      << ", \"potential_energy_error\": \"(W_tree - W_direct) / |W_direct|, W = 1/2 sum m phi over the reference "
         "bodies\"}";
    return j.str();
}

const char* const kAccuracyCsvColumns =
    "setting,theta,mac,n_leaf,n_group,multipole,epsilon,G,backend,model,n,sample,reference,median,p90,p99,p999,max,"
    "potential_energy_error,node_per_body,leaf_per_body,host_seconds,walk_seconds,walk_forces_seconds";

std::string accuracyCsvRow(size_t k, const AccuracyResult& r, const Source& s, int64_t n, const DirectReference& ref)
{
    const Parameters& p = r.params;
    std::ostringstream c;
    c << k << ',' << num(p.opening_angle, false) << ',' << toString(p.mac) << ',' << p.n_leaf << ',' << p.n_group << ','
      << multipoleName(p) << ',' << num(std::sqrt(p.epsilon_squared), false) << ','
      << num(p.gravitational_constant, false) << ',' << toString(r.backend) << ',' << csvField(s.name()) << ',' << n
      << ',' << ref.index.size() << ',' << toString(ref.backend) << ',' << num(r.error.median, false) << ','
      << num(r.error.p90, false) << ',' << num(r.error.p99, false) << ',' << num(r.error.p999, false) << ','
      << num(r.error.max, false) << ',' << num(r.potentialError(), false) << ',' << num(r.nodesPerBody, false) << ','
      << num(r.leavesPerBody, false) << ',' << num(r.hostSeconds, false) << ',' << num(r.walkSeconds, false) << ','
      << num(r.walkForcesSeconds, false) << '\n';
    return c.str();
}

std::string accuracyJsonRow(size_t k, const AccuracyResult& r)
{
    std::ostringstream j;
    j << "    {\"setting\": " << k << ", " << settingJson(r.params) << ", \"parameters\": " << toJson(r.params)
      << ", \"backend\": " << jsonString(toString(r.backend)) << ",\n     \"error\": {\"count\": " << r.error.count
      << ", \"median\": " << num(r.error.median) << ", \"p90\": " << num(r.error.p90)
      << ", \"p99\": " << num(r.error.p99) << ", \"p999\": " << num(r.error.p999) << ", \"max\": " << num(r.error.max)
      << "},\n     \"potential_energy\": " << num(r.potentialEnergy)
      << ", \"reference_potential_energy\": " << num(r.referencePotentialEnergy)
      << ", \"potential_energy_error\": " << num(r.potentialError())
      << ",\n     \"node_per_body\": " << num(r.nodesPerBody) << ", \"leaf_per_body\": " << num(r.leavesPerBody)
      << ", \"host_seconds\": " << num(r.hostSeconds) << ", \"walk_seconds\": " << num(r.walkSeconds)
      << ", \"walk_forces_seconds\": " << num(r.walkForcesSeconds) << "}";
    return j.str();
}

std::string accuracyTableHeader()
{
    char lead[64];
    std::snprintf(lead, sizeof(lead), "%7s  %-8s %4s %5s %-10s", "theta", "mac", "leaf", "group", "multipole");
    std::string s = lead;
    for (const char* t :
         {"median", "p90", "p99", "p99.9", "max", "dW/W", "node/body", "leaf/body", "host[s]", "walk[s]", "w+f[s]"})
    {
        s += title(10, t);
    }
    return s + "\n";
}

std::string accuracyTableRow(const AccuracyResult& r)
{
    const Parameters& p = r.params;
    char lead[64];
    std::snprintf(lead, sizeof(lead), "%7.3g  %-8s %4d %5d %-10s", p.opening_angle, toString(p.mac).c_str(), p.n_leaf,
                  p.n_group, multipoleName(p).c_str());
    return std::string(lead) + cell("%10.3e", r.error.median) + cell("%10.3e", r.error.p90) +
           cell("%10.3e", r.error.p99) + cell("%10.3e", r.error.p999) + cell("%10.3e", r.error.max) +
           cell("%10.2e", r.potentialError()) + cell("%10.1f", r.nodesPerBody) + cell("%10.1f", r.leavesPerBody) +
           cell("%10.3g", r.hostSeconds) + cell("%10.3g", r.walkSeconds) + cell("%10.3g", r.walkForcesSeconds) + "\n";
}

/// One CSV per setting: index (caller's order), id and error of every reference body.
void writeErrorFiles(const std::string& dir, const std::vector<AccuracyResult>& results, const std::string& header,
                     const ParticleSet& bodies, const DirectReference& ref)
{
    fs::create_directories(dir);
    for (size_t k = 0; k < results.size(); ++k)
    {
        const AccuracyResult& r = results[k];
        const Parameters& p     = r.params;
        char name[160];
        std::snprintf(name, sizeof(name), "errors_%03zu_theta%.6g_%s_leaf%d_group%d_%s.csv", k, p.opening_angle,
                      toString(p.mac).c_str(), p.n_leaf, p.n_group, multipoleName(p).c_str());
        std::ostringstream f;
        f << std::setprecision(9);
        // The first line is one JSON object (the study header plus this setting), for the plot script.
        f << "# " << header.substr(0, header.size() - 1) << ", \"setting\": " << k << ", " << settingJson(p) << "}\n";
        f << "index,id,error\n";
        for (size_t i = 0; i < ref.index.size(); ++i)
        {
            f << ref.index[i] << ',' << bodies.id[ref.index[i]] << ',' << num(r.errors[i], false) << '\n';
        }
        writeFileAtomically((fs::path(dir) / name).string(), f.str());
    }
}

void checkSource(const Source& s, const po::variables_map& vm)
{
    checkModel(s.model);
    if (!s.input.empty() && (!vm["model"].defaulted() || !vm["n"].defaulted()))
    {
        throw UsageError("give --input or --model/--n, not both");
    }
}

ParticleSet loadBodies(const Source& s)
{
    if (!s.input.empty()) return readSnapshot(s.input);
    return buildModel(s.model);
}

/// A periodic input (a BoxSize in its header) is measured in its box, as `octwalk run --input` runs it, unless
/// --box-size is given: 0 for isolated forces, or the file's value.
void adoptInputBox(const ParticleSet& bodies, const po::variables_map& vm, Parameters& base,
                   std::vector<Parameters>& settings)
{
    if (!(bodies.boxSize > 0)) return;
    const bool boxGiven = vm.count("box-size") && !vm["box-size"].defaulted();
    if (boxGiven)
    {
        if (base.box_size > 0) checkAgrees("box-size", base.box_size, bodies.boxSize);
        return;
    }
    base.box_size = bodies.boxSize;
    for (Parameters& p : settings) p.box_size = bodies.boxSize;
}

StudyGrid accuracyGrid(const AccuracyOptions& o)
{
    StudyGrid g;
    g.theta = parseThetaList("theta", o.theta);
    g.mac.clear();
    for (const std::string& m : parseNameList("mac", o.mac, choiceNames(*findParameter("mac"))))
        g.mac.push_back(parseMac(m));
    g.nLeaf  = parseIntList("n-leaf", o.nLeaf, 1);
    g.nGroup = parseIntList("n-group", o.nGroup, 1);
    g.quadrupole.clear();
    for (const std::string& m : parseNameList("multipole", o.multipole, {"quadrupole", "monopole"}))
    {
        g.quadrupole.push_back(m == "quadrupole");
    }
    return g;
}

} // namespace

int accuracyCommand(int argc, const char* const* argv, std::ostream& out)
{
    AccuracyOptions o;
    po::options_description cmd(
        "octwalk accuracy: tree forces against exact direct summation over a sweep of settings (every combination "
        "of the lists), with error percentiles, the potential-energy error, interactions and time per setting.\n"
        "Lists are comma-separated; --theta also takes start:stop:step (inclusive), e.g. 0.2:0.8:0.1.\nSweep");
    // One option per line: Boost.Program_options chains read best that way.
    // clang-format off
    cmd.add_options()("help,h", "this help")
        ("theta", po::value(&o.theta)->default_value(o.theta), listHelp("opening_angle", "opening angles").c_str())
        ("mac", po::value(&o.mac)->default_value(o.mac),
         ("acceptance criteria: " + joined(choiceNames(*findParameter("mac")))).c_str())
        ("n-leaf", po::value(&o.nLeaf)->default_value(o.nLeaf), listHelp("n_leaf", "").c_str())
        ("n-group", po::value(&o.nGroup)->default_value(o.nGroup), listHelp("n_group", "").c_str())
        ("multipole", po::value(&o.multipole)->default_value(o.multipole), "quadrupole, monopole")
        ("sample", po::value(&o.sample)->default_value(o.sample),
         "reference bodies: all when N <= sample, else this many drawn at random, >= 1")
        ("reference", po::value(&o.reference)->default_value(o.reference),
         "direct-summation backend: auto (GPU with float64 accumulation if present, else CPU float64), cpu, gpu")
        ("repeat", po::value(&o.repeat)->default_value(o.repeat), "evaluations per setting (times are medians), >= 1")
        ("csv", po::value(&o.csv), "write one row per setting to this new CSV file")
        ("json", po::value(&o.json), "write the study to this new JSON file")
        ("errors-dir", po::value(&o.errorsDir), "write the per-body errors of every setting into this new directory");
    // clang-format on
    po::options_description all;
    all.add(cmd)
        .add(modelOptions(o.source.model, 131072, false))
        .add(inputOption(o.source.input, "read the bodies from this snapshot instead (format detected; a periodic "
                                         "file, with a BoxSize, is measured in its box unless --box-size is given)"))
        .add(outputOption(o.output, kReportOutputHelp))
        .add(solverOptions(Parameters{}, withRunOnlyParameters(kAccuracySweptParameters)));
    po::variables_map vm = parseOptions(argc, argv, all);
    if (vm.count("help"))
    {
        out << all << "\n" << kUnits << "\n";
        return 0;
    }
    checkSource(o.source, vm);
    if (o.sample < 1)
        throw ParameterError("option --sample = " + std::to_string(o.sample) + " is invalid: must be >= 1");
    if (o.repeat < 1)
        throw ParameterError("option --repeat = " + std::to_string(o.repeat) + " is invalid: must be >= 1");
    Backend refBackend = Backend::Auto;
    try
    {
        refBackend = parseBackend(o.reference);
    }
    catch (const ParameterError&)
    {
        throw ParameterError("option --reference = '" + o.reference + "' is invalid: use auto, cpu or gpu");
    }
    if (refBackend == Backend::Gpu && !gpuAvailable())
    {
        throw BackendError("--reference gpu requested, but no CUDA device is available (" + gpuDescription() + ")");
    }
    Parameters base                  = studyParameters(vm, withRunOnlyParameters(kAccuracySweptParameters));
    std::vector<Parameters> settings = expandGrid(base, accuracyGrid(o));
    resolveReports(o.output, o.csv, o.json);
    if (!o.errorsDir.empty()) checkNewDirectory("--errors-dir", o.errorsDir);

    ParticleSet bodies = loadBodies(o.source);
    adoptInputBox(bodies, vm, base, settings);
    DirectReference ref = directReference(bodies, o.sample, o.source.model.seed + 1, base.epsilon_squared,
                                          base.gravitational_constant, refBackend, base.box_size);
    out << versionHeader() << ": accuracy of " << o.source.name() << ", N = " << bodies.size() << ", "
        << settings.size() << " settings, tree on " << toString(base.backend) << "\n";
    out << "reference: " << ref.description << ", " << ref.index.size() << (ref.sampled() ? " sampled" : " (all)")
        << " bodies, " << num(ref.seconds) << " s\n";
    out << accuracyTableHeader();
    std::vector<AccuracyResult> results = accuracySweep(
        bodies, settings, ref, o.repeat, [&out](const AccuracyResult& r) { out << accuracyTableRow(r) << std::flush; });

    std::string headerJson = accuracyHeaderJson(o, base, bodies, ref);
    if (!o.csv.empty())
    {
        std::string text = "# " + headerJson + "\n" + kAccuracyCsvColumns + "\n";
        for (size_t k = 0; k < results.size(); ++k) text += accuracyCsvRow(k, results[k], o.source, bodies.size(), ref);
        writeFileAtomically(o.csv, text);
    }
    if (!o.json.empty())
    {
        std::string text = headerJson.substr(0, headerJson.size() - 1) + ",\n  \"settings\": [\n";
        for (size_t k = 0; k < results.size(); ++k)
        {
            text += accuracyJsonRow(k, results[k]) + (k + 1 < results.size() ? ",\n" : "\n");
        }
        writeFileAtomically(o.json, text + "  ]\n}\n");
    }
    if (!o.errorsDir.empty()) writeErrorFiles(o.errorsDir, results, headerJson, bodies, ref);
    return 0;
}

} // namespace octwalk::cli
