// octwalk accuracy and octwalk profile: the study commands (the measurements live in study.cpp).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "device/gravity_gpu.h"
#include "host/cli/options.h"
#include "host/io/atomic_file.h"
#include "host/core/phases.h"
#include "common/errors.h"
#include "host/models/models.h"
#include "host/io/snapshot.h"
#include "host/study/study.h"
#include "octwalk_version.h"

namespace fs = std::filesystem;

namespace octwalk::cli {

namespace {

/// A number for JSON and CSV: 9 significant digits, and null (JSON) / empty (CSV) when not finite,
/// since neither format has a spelling for inf or nan.
std::string num(double v, bool json = true)
{
    if (!std::isfinite(v)) return json ? "null" : "";
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", v);
    return buf;
}

/// A CSV field, quoted when it holds a separator or a quote (a snapshot path may).
std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

/// A fixed-width table cell.
std::string cell(const char* format, double v)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), format, v);
    return buf;
}

std::string multipoleName(const Parameters& p) { return p.use_quadrupole ? "quadrupole" : "monopole"; }

/// The bodies of a study: a built-in model or a snapshot.
struct Source
{
    std::string model = "plummer", input;
    int64_t n = 0;
    uint64_t seed = 1;

    std::string json(int64_t numBodies) const
    {
        if (!input.empty()) return "{\"input\": " + jsonString(input) + ", \"n\": " + std::to_string(numBodies) + "}";
        return "{\"model\": " + jsonString(model) + ", \"n\": " + std::to_string(numBodies) +
               ", \"seed\": " + std::to_string(seed) + "}";
    }
    std::string name() const { return input.empty() ? model : input; }
};

/// The force options every study shares as single values (theta and friends are lists there).
struct CommonOptions
{
    double epsilon = 0.0, G = 1.0;
    std::string backend = "auto";
    bool mergeGroups = false;
};

po::options_description commonOptions(CommonOptions& c)
{
    po::options_description d("Force solver");
    d.add_options()
        ("epsilon", po::value(&c.epsilon)->default_value(c.epsilon), "Plummer softening length [length], >= 0")
        ("G", po::value(&c.G)->default_value(c.G), "gravitational constant, > 0")
        ("backend", po::value(&c.backend)->default_value(c.backend), "auto (GPU if present, else CPU), cpu or gpu")
        ("merge-groups", po::bool_switch(&c.mergeGroups),
         "join neighbouring groups up to n-group bodies (fewer, fuller groups)");
    return d;
}

/// The common options as Parameters (validated), with the library defaults for the rest.
Parameters baseParameters(const CommonOptions& c)
{
    if (!std::isfinite(c.epsilon) || c.epsilon < 0)
    {
        throw ParameterError("option --epsilon = " + num(c.epsilon) + " is invalid: must be finite and >= 0");
    }
    Parameters p;
    p.epsilon_squared        = c.epsilon * c.epsilon;
    p.gravitational_constant = c.G;
    p.backend                = parseBackend(c.backend);
    p.merge_groups           = c.mergeGroups;
    validate(p);
    if (p.backend == Backend::Gpu && !gpuAvailable())
    {
        throw BackendError("backend gpu requested, but no CUDA device is available (" + gpuDescription() + ")");
    }
    return p;
}

/// An output directory that will be created: it must not exist yet (an empty one is accepted).
void checkNewDirectory(const std::string& dir)
{
    if (dir.empty() || !fs::exists(dir)) return;
    if (!fs::is_directory(dir) || !fs::is_empty(dir))
    {
        throw UsageError("output directory '" + dir + "' exists and is not empty; refusing to overwrite it");
    }
}

void checkDistinct(const std::string& a, const std::string& b)
{
    if (!a.empty() && a == b) throw UsageError("--csv and --json name the same file '" + a + "'");
}

/// version, git and units: the first fields of every study output.
std::string provenanceJson(double G)
{
    return "\"octwalk\": " + jsonString(OCTWALK_VERSION) + ", \"git\": " + jsonString(OCTWALK_GIT_HASH) +
           ", \"units\": " + jsonString("N-body, G = " + num(G));
}

// ---------------------------------------------------------------------------------------------
// accuracy

struct AccuracyOptions
{
    Source source;
    int64_t sample = 10000;
    int repeat = 1;
    std::string theta = "0.2:0.8:0.1", mac = "bonsai,octgrav", nLeaf = "16", nGroup = "64", multipole = "quadrupole";
    std::string reference = "auto", csv, json, errorsDir;
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
    j << "{" << provenanceJson(base.gravitational_constant) << ", \"command\": \"accuracy\", \"source\": "
      << o.source.json(bodies.size()) << ", \"n\": " << bodies.size() << ", \"sample\": " << ref.index.size()
      << ", \"sampled\": " << (ref.sampled() ? "true" : "false") << ", \"sample_seed\": " << o.source.seed + 1
      << ", \"reference\": {\"backend\": " << jsonString(toString(ref.backend)) << ", \"description\": "
      << jsonString(ref.description) << ", \"seconds\": " << num(ref.seconds) << "}, \"repeat\": " << o.repeat
      << ", \"epsilon\": " << num(std::sqrt(base.epsilon_squared)) << ", \"G\": " << num(base.gravitational_constant)
      << ", \"backend\": " << jsonString(toString(base.backend))
      << ", \"merge_groups\": " << (base.merge_groups ? "true" : "false")
      << ", \"error\": \"|a_tree - a_direct| / |a_direct| over the reference bodies; percentiles by nearest rank\""
      << ", \"potential_energy_error\": \"(W_tree - W_direct) / |W_direct|, W = 1/2 sum m phi over the reference "
         "bodies\"}";
    return j.str();
}

const char* const kAccuracyCsvColumns =
    "setting,theta,mac,n_leaf,n_group,multipole,epsilon,G,backend,model,n,sample,reference,median,p90,p99,p999,max,"
    "potential_energy_error,node_per_body,leaf_per_body,host_seconds,walk_seconds";

std::string accuracyCsvRow(size_t k, const AccuracyResult& r, const Source& s, int64_t n, const DirectReference& ref)
{
    const Parameters& p = r.params;
    std::ostringstream c;
    c << k << ',' << num(p.opening_angle, false) << ',' << toString(p.mac) << ',' << p.n_leaf << ',' << p.n_group
      << ',' << multipoleName(p) << ',' << num(std::sqrt(p.epsilon_squared), false) << ','
      << num(p.gravitational_constant, false) << ',' << toString(r.backend) << ',' << csvField(s.name()) << ',' << n << ','
      << ref.index.size() << ',' << toString(ref.backend) << ',' << num(r.error.median, false) << ','
      << num(r.error.p90, false) << ',' << num(r.error.p99, false) << ',' << num(r.error.p999, false) << ','
      << num(r.error.max, false) << ',' << num(r.potentialError(), false) << ',' << num(r.nodesPerBody, false) << ','
      << num(r.leavesPerBody, false) << ',' << num(r.hostSeconds, false) << ',' << num(r.walkSeconds, false) << '\n';
    return c.str();
}

std::string accuracyJsonRow(size_t k, const AccuracyResult& r)
{
    std::ostringstream j;
    j << "    {\"setting\": " << k << ", " << settingJson(r.params) << ", \"parameters\": " << toJson(r.params)
      << ", \"backend\": " << jsonString(toString(r.backend)) << ",\n     \"error\": {\"count\": " << r.error.count
      << ", \"median\": " << num(r.error.median) << ", \"p90\": " << num(r.error.p90) << ", \"p99\": "
      << num(r.error.p99) << ", \"p999\": " << num(r.error.p999) << ", \"max\": " << num(r.error.max)
      << "},\n     \"potential_energy\": " << num(r.potentialEnergy) << ", \"reference_potential_energy\": "
      << num(r.referencePotentialEnergy) << ", \"potential_energy_error\": " << num(r.potentialError())
      << ",\n     \"node_per_body\": " << num(r.nodesPerBody) << ", \"leaf_per_body\": " << num(r.leavesPerBody)
      << ", \"host_seconds\": " << num(r.hostSeconds) << ", \"walk_seconds\": " << num(r.walkSeconds) << "}";
    return j.str();
}

/// A header cell as wide as the numbers below it.
std::string title(int width, const char* text)
{
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%*s", width, text);
    return buf;
}

std::string accuracyTableHeader()
{
    char lead[64];
    std::snprintf(lead, sizeof(lead), "%7s  %-8s %4s %5s %-10s", "theta", "mac", "leaf", "group", "multipole");
    std::string s = lead;
    for (const char* t : {"median", "p90", "p99", "p99.9", "max", "dW/W", "node/body", "leaf/body", "host[s]", "walk[s]"})
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
           cell("%10.3g", r.hostSeconds) + cell("%10.3g", r.walkSeconds) + "\n";
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

ParticleSet loadBodies(const Source& s)
{
    if (!s.input.empty()) return readSnapshot(s.input);
    return makeModel(s.model, s.n, s.seed);
}

po::options_description sourceOptions(Source& s, int64_t defaultN)
{
    s.n = defaultN;
    po::options_description d("Bodies");
    d.add_options()
        ("model", po::value(&s.model)->default_value(s.model), "plummer, hernquist, uniform, galaxy or merger")
        ("n", po::value(&s.n)->default_value(s.n), "number of bodies of the model, >= 2")
        ("seed", po::value(&s.seed)->default_value(s.seed), "random seed of the model (the sample uses seed + 1)")
        ("input", po::value(&s.input), "read the bodies from this snapshot instead (format detected)");
    return d;
}

/// The model name, checked before any work (makeModel would only find out after the outputs are checked).
void checkModelName(const std::string& model)
{
    for (const char* known : {"plummer", "hernquist", "uniform", "galaxy", "merger"})
    {
        if (model == known) return;
    }
    throw ParameterError("option --model = '" + model + "' is invalid: use plummer, hernquist, uniform, galaxy or merger");
}

void checkSource(const Source& s, const po::variables_map& vm)
{
    checkModelName(s.model);
    if (!s.input.empty() && (!vm["model"].defaulted() || !vm["n"].defaulted()))
    {
        throw UsageError("give --input or --model/--n, not both");
    }
    if (s.n < 2) throw ParameterError("option --n = " + std::to_string(s.n) + " is invalid: must be >= 2");
}

StudyGrid accuracyGrid(const AccuracyOptions& o)
{
    StudyGrid g;
    g.theta = parseThetaList("theta", o.theta);
    g.mac.clear();
    for (const std::string& m : parseNameList("mac", o.mac, {"bonsai", "octgrav"})) g.mac.push_back(parseMac(m));
    g.nLeaf  = parseIntList("n-leaf", o.nLeaf, 1);
    g.nGroup = parseIntList("n-group", o.nGroup, 1);
    g.quadrupole.clear();
    for (const std::string& m : parseNameList("multipole", o.multipole, {"quadrupole", "monopole"}))
    {
        g.quadrupole.push_back(m == "quadrupole");
    }
    return g;
}

// ---------------------------------------------------------------------------------------------
// profile

struct ProfileOptions
{
    Source source;
    std::string n = "2^20", theta = "0.5", directSample = "auto", mac = "bonsai", csv, json;
    int nLeaf = 16, nGroup = 64, repeat = 5;
    bool monopole = false;
};

/// "auto": enough targets to fill a large GPU (32768 = 128 blocks of 256) or a quick CPU run.
int64_t directSampleSize(const std::string& text, Backend backend)
{
    if (text == "auto") return backend == Backend::Gpu ? 32768 : 1000;
    std::vector<int> v = parseIntList("direct-sample", text, 0);
    if (v.size() != 1) throw ParameterError("option --direct-sample = '" + text + "' is invalid: give one number");
    return v.front();
}

const std::string kProfileCsvColumns =
    "n,theta,mac,n_leaf,n_group,multipole,backend,evaluations," + phasesCsvHeader() +
    ",total_seconds,wall_seconds,device_fraction,node_per_body,leaf_per_body,node_gflops,leaf_gflops,walk_bytes,"
    "walk_bytes_per_second,bodies_per_second,direct_sample,direct_seconds_extrapolated,speedup";

std::string profileCsvRow(const ProfileResult& r)
{
    const PhaseTimes& t = r.median;
    const Parameters& p = r.params;
    std::ostringstream c;
    c << r.n << ',' << num(p.opening_angle, false) << ',' << toString(p.mac) << ',' << p.n_leaf << ',' << p.n_group
      << ',' << multipoleName(p) << ',' << toString(r.backend) << ',' << r.counted << ',' << phasesCsv(t);
    for (double v : {r.total, r.wall, r.deviceFraction,
                     r.stats.nodesPerBody(), r.stats.leavesPerBody(), r.nodeGflops(), r.leafGflops(),
                     r.traffic.bytes(), r.walkBytesPerSecond(), r.bodiesPerSecond()})
    {
        c << ',' << num(v, false);
    }
    c << ',' << r.direct.sample << ',' << num(r.direct.seconds, false) << ',' << num(r.speedup(), false) << '\n';
    return c.str();
}

std::string profileJsonRow(const ProfileResult& r)
{
    const PhaseTimes& t = r.median;
    std::ostringstream j;
    j << "    {\"n\": " << r.n << ", \"theta\": " << num(r.params.opening_angle) << ", \"parameters\": "
      << toJson(r.params) << ", \"backend\": " << jsonString(toString(r.backend)) << ", \"evaluations\": " << r.counted
      << ",\n     " << phasesJson(t)
      << ",\n     \"total_seconds\": " << num(r.total) << ", \"wall_seconds\": " << num(r.wall)
      << ", \"device_fraction\": " << num(r.deviceFraction) << ", \"bodies_per_second\": " << num(r.bodiesPerSecond())
      << ",\n     \"node_interactions\": " << r.stats.nodeInteractions << ", \"leaf_interactions\": "
      << r.stats.leafInteractions << ", \"node_per_body\": " << num(r.stats.nodesPerBody())
      << ", \"leaf_per_body\": " << num(r.stats.leavesPerBody()) << ", \"node_gflops\": " << num(r.nodeGflops())
      << ", \"leaf_gflops\": " << num(r.leafGflops())
      << ",\n     \"walk\": {\"groups\": " << r.traffic.numGroups << ", \"opened_cells\": " << r.traffic.openedCells
      << ", \"node_entries\": " << r.traffic.nodeEntries << ", \"leaf_entries\": " << r.traffic.leafEntries
      << ", \"visited_entries\": " << r.traffic.visitedEntries() << ", \"pass1_bytes\": "
      << num(r.traffic.pass1Bytes()) << ", \"pass2_bytes\": " << num(r.traffic.pass2Bytes())
      << ", \"bytes_per_second\": " << num(r.walkBytesPerSecond()) << "}"
      << ",\n     \"direct\": {\"sample\": " << r.direct.sample << ", \"sample_seconds\": "
      << num(r.direct.sampleSeconds) << ", \"extrapolated_seconds\": " << num(r.direct.seconds)
      << ", \"kernel\": " << jsonString(r.direct.kernel) << "}, \"speedup\": " << num(r.speedup()) << "}";
    return j.str();
}

std::string profileTableHeader()
{
    char lead[32];
    std::snprintf(lead, sizeof(lead), "%10s %6s", "N", "theta");
    return lead + title(10, "host[ms]") + title(10, "walk[ms]") + title(10, "total[ms]") + title(7, "walk%") +
           title(11, "node/body") + title(10, "leaf/body") + title(11, "node GF/s") + title(10, "leaf GF/s") +
           title(10, "walk GB/s") + title(9, "Mbody/s") + title(10, "speed-up") + "\n";
}

std::string profileTableRow(const ProfileResult& r)
{
    char lead[32];
    std::snprintf(lead, sizeof(lead), "%10lld %6.3g", static_cast<long long>(r.n), r.params.opening_angle);
    return std::string(lead) + cell("%10.3f", 1e3 * r.median.host()) +
           cell("%10.3f", 1e3 * r.median.walk()) + cell("%10.3f", 1e3 * r.total) +
           cell("%6.1f%%", 100 * r.deviceFraction) + cell("%11.1f", r.stats.nodesPerBody()) +
           cell("%10.1f", r.stats.leavesPerBody()) + cell("%11.1f", r.nodeGflops()) + cell("%10.1f", r.leafGflops()) +
           cell("%10.2f", r.walkBytesPerSecond() / 1e9) + cell("%9.2f", r.bodiesPerSecond() / 1e6) +
           (r.direct.sample > 0 ? cell("%10.1f", r.speedup()) : std::string("         -")) + "\n";
}

std::string phaseTable(const std::vector<ProfileResult>& results)
{
    char head[32];
    std::snprintf(head, sizeof(head), "%10s %6s", "N", "theta");
    std::string s = std::string("median per phase [ms]\n") + head + phasesTableHeader(11) + "\n";
    for (const ProfileResult& r : results)
    {
        const PhaseTimes& t = r.median;
        char lead[32];
        std::snprintf(lead, sizeof(lead), "%10lld %6.3g", static_cast<long long>(r.n), r.params.opening_angle);
        s += lead + phasesTableRow(t, 11) + "\n";
    }
    return s;
}

} // namespace

int accuracyCommand(int argc, const char* const* argv, std::ostream& out)
{
    AccuracyOptions o;
    CommonOptions common;
    po::options_description cmd(
        "octwalk accuracy: tree forces against exact direct summation over a sweep of settings (every combination "
        "of the lists), with error percentiles, the potential-energy error, interactions and time per setting.\n"
        "Lists are comma-separated; --theta also takes start:stop:step (inclusive), e.g. 0.2:0.8:0.1.\nSweep");
    cmd.add_options()("help,h", "this help")
        ("theta", po::value(&o.theta)->default_value(o.theta), "opening angles, each in (0, 1]")
        ("mac", po::value(&o.mac)->default_value(o.mac), "acceptance criteria: bonsai, octgrav")
        ("n-leaf", po::value(&o.nLeaf)->default_value(o.nLeaf), "most bodies in a leaf, each >= 1")
        ("n-group", po::value(&o.nGroup)->default_value(o.nGroup), "most bodies in a walk group, each >= 1")
        ("multipole", po::value(&o.multipole)->default_value(o.multipole), "quadrupole, monopole")
        ("sample", po::value(&o.sample)->default_value(o.sample),
         "reference bodies: all when N <= sample, else this many drawn at random, >= 1")
        ("reference", po::value(&o.reference)->default_value(o.reference),
         "direct-summation backend: auto (GPU with float64 accumulation if present, else CPU float64), cpu, gpu")
        ("repeat", po::value(&o.repeat)->default_value(o.repeat), "evaluations per setting (times are medians), >= 1")
        ("csv", po::value(&o.csv), "write one row per setting to this new CSV file")
        ("json", po::value(&o.json), "write the study to this new JSON file")
        ("errors-dir", po::value(&o.errorsDir), "write the per-body errors of every setting into this new directory");
    po::options_description all;
    all.add(cmd).add(sourceOptions(o.source, 131072)).add(commonOptions(common));
    po::variables_map vm = parseOptions(argc, argv, all);
    if (vm.count("help"))
    {
        out << all << "\n" << kUnits << "\n";
        return 0;
    }
    checkSource(o.source, vm);
    if (o.sample < 1) throw ParameterError("option --sample = " + std::to_string(o.sample) + " is invalid: must be >= 1");
    if (o.repeat < 1) throw ParameterError("option --repeat = " + std::to_string(o.repeat) + " is invalid: must be >= 1");
    Backend refBackend = parseBackend(o.reference);
    if (refBackend == Backend::Gpu && !gpuAvailable())
    {
        throw BackendError("--reference gpu requested, but no CUDA device is available (" + gpuDescription() + ")");
    }
    Parameters base                  = baseParameters(common);
    std::vector<Parameters> settings = expandGrid(base, accuracyGrid(o));
    checkDistinct(o.csv, o.json);
    checkNewOutput(o.csv);
    checkNewOutput(o.json);
    checkNewDirectory(o.errorsDir);

    ParticleSet bodies  = loadBodies(o.source);
    DirectReference ref = directReference(bodies, o.sample, o.source.seed + 1, base.epsilon_squared,
                                          base.gravitational_constant, refBackend);
    out << versionHeader() << ": accuracy of " << o.source.name() << ", N = " << bodies.size() << ", " << settings.size()
        << " settings, tree on " << toString(base.backend) << "\n";
    out << "reference: " << ref.description << ", " << ref.index.size() << (ref.sampled() ? " sampled" : " (all)")
        << " bodies, " << num(ref.seconds) << " s\n";
    out << accuracyTableHeader();
    std::vector<AccuracyResult> results =
        accuracySweep(bodies, settings, ref, o.repeat, [&out](const AccuracyResult& r) { out << accuracyTableRow(r) << std::flush; });

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

int profileCommand(int argc, const char* const* argv, std::ostream& out)
{
    ProfileOptions o;
    CommonOptions common;
    po::options_description cmd(
        "octwalk profile: medians per phase over repeated force evaluations (the first is a warm-up), interactions, "
        "kernel GFLOP/s, walk bandwidth, bodies per second and the speed-up over direct summation, for every N x "
        "theta.\nSweep");
    cmd.add_options()("help,h", "this help")
        ("n", po::value(&o.n)->default_value(o.n),
         "body counts: a list (1000,2^12) or every power of two in a range (2^15:2^24), each >= 2")
        ("theta", po::value(&o.theta)->default_value(o.theta),
         "opening angles: a list or start:stop:step (inclusive), each in (0, 1]")
        ("mac", po::value(&o.mac)->default_value(o.mac), "acceptance criterion: bonsai or octgrav")
        ("n-leaf", po::value(&o.nLeaf)->default_value(o.nLeaf), "most bodies in a leaf, >= 1")
        ("n-group", po::value(&o.nGroup)->default_value(o.nGroup), "most bodies in a walk group, >= 1")
        ("monopole", po::bool_switch(&o.monopole), "monopole only (drop the quadrupole moments)")
        ("repeat", po::value(&o.repeat)->default_value(o.repeat), "evaluations per setting, >= 2 (first not counted)")
        ("direct-sample", po::value(&o.directSample)->default_value(o.directSample),
         "targets of the timed direct summation, extrapolated to N (auto: 32768 on the GPU, 1000 on the CPU; "
         "0: skip)")
        ("csv", po::value(&o.csv), "write one row per N x theta to this new CSV file")
        ("json", po::value(&o.json), "write the profile to this new JSON file");
    po::options_description all;
    po::options_description model("Bodies");
    model.add_options()
        ("model", po::value(&o.source.model)->default_value(o.source.model),
         "plummer, hernquist, uniform, galaxy or merger")
        ("seed", po::value(&o.source.seed)->default_value(o.source.seed),
         "random seed of the model (the direct-sum sample uses seed + 1)");
    all.add(cmd).add(model).add(commonOptions(common));
    po::variables_map vm = parseOptions(argc, argv, all);
    if (vm.count("help"))
    {
        out << all << "\n" << kUnits << "\n";
        return 0;
    }
    checkModelName(o.source.model);
    std::vector<int64_t> counts = parseCountList("n", o.n, 2);
    std::vector<double> thetas  = parseThetaList("theta", o.theta);
    if (o.repeat < 2)
    {
        throw ParameterError("option --repeat = " + std::to_string(o.repeat) + " is invalid: must be >= 2 (the first "
                             "evaluation is a warm-up)");
    }
    StudyGrid grid;
    grid.theta      = thetas;
    grid.mac        = {parseMac(o.mac)};
    grid.nLeaf      = {o.nLeaf};
    grid.nGroup     = {o.nGroup};
    grid.quadrupole = {!o.monopole};
    std::vector<Parameters> settings = expandGrid(baseParameters(common), grid);
    Backend backend                  = GravitySolver(settings.front()).activeBackend();
    int64_t directSample             = directSampleSize(o.directSample, backend);
    checkDistinct(o.csv, o.json);
    checkNewOutput(o.csv);
    checkNewOutput(o.json);

    out << versionHeader() << ": profile of " << o.source.model << " on " << toString(backend)
        << (backend == Backend::Gpu ? " (" + gpuDescription() + ")" : std::string()) << ", " << o.repeat - 1
        << " counted evaluations per row (medians); speed-up = direct summation time extrapolated from "
        << directSample << " targets to N, over the tree's total per evaluation\n";
    out << profileTableHeader();
    std::vector<ProfileResult> results;
    for (int64_t n : counts)
    {
        ParticleSet bodies = makeModel(o.source.model, n, o.source.seed);
        for (const Parameters& p : settings)
        {
            results.push_back(profileForces(bodies, p, o.repeat, directSample, o.source.seed + 1));
            out << profileTableRow(results.back()) << std::flush;
        }
    }
    out << phaseTable(results);
    out << "walk bytes: " << kWalkTrafficFormula << "\n";

    const Parameters& first = settings.front();
    std::ostringstream head;
    head << "{" << provenanceJson(first.gravitational_constant) << ", \"command\": \"profile\", \"model\": "
         << jsonString(o.source.model) << ", \"seed\": " << o.source.seed << ", \"backend\": "
         << jsonString(toString(backend)) << ", \"device\": "
         << jsonString(backend == Backend::Gpu ? gpuDescription() : "cpu") << ", \"repeat\": " << o.repeat
         << ", \"warmup\": 1, \"statistic\": \"median over the counted evaluations, per phase\""
         << ", \"flops_per_interaction\": {\"body_node\": " << kFlopsPerBodyNode << ", \"body_body\": "
         << kFlopsPerBodyBody << "}, \"walk_bytes\": " << jsonString(kWalkTrafficFormula)
         << ", \"device_fraction\": \"walk phases (upload, pass 1, scan, pass 2, body-node, body-leaf, download) over "
            "host + walk, median per evaluation\", \"direct\": \"one direct-summation evaluation timed on "
         << directSample << " sampled targets and extrapolated linearly to N targets (not measured at N)\"}";
    std::string headJson = head.str();
    if (!o.csv.empty())
    {
        std::string text = "# " + headJson + "\n" + kProfileCsvColumns + "\n";
        for (const ProfileResult& r : results) text += profileCsvRow(r);
        writeFileAtomically(o.csv, text);
    }
    if (!o.json.empty())
    {
        std::string text = headJson.substr(0, headJson.size() - 1) + ",\n  \"results\": [\n";
        for (size_t k = 0; k < results.size(); ++k)
        {
            text += profileJsonRow(results[k]) + (k + 1 < results.size() ? ",\n" : "\n");
        }
        writeFileAtomically(o.json, text + "  ]\n}\n");
    }
    return 0;
}

} // namespace octwalk::cli
