#include "host/cli/study_report.h"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "common/errors.h"
#include "device/gpu_solver.h"
#include "octwalk_version.h"

namespace fs = std::filesystem;

namespace octwalk::cli {

const char* const kReportOutputHelp = "write the report to this new file: JSON when FILE ends in .json, CSV when it "
                                      "ends in .csv (the same as --json FILE or --csv FILE)";

std::string num(double v, bool json)
{
    if (!std::isfinite(v)) return json ? "null" : "";
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.9g", v);
    return buf;
}

std::string csvField(const std::string& s)
{
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

std::string cell(const char* format, double v)
{
    char buf[32];
    std::snprintf(buf, sizeof(buf), format, v);
    return buf;
}

std::string title(int width, const char* text)
{
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%*s", width, text);
    return buf;
}

std::string multipoleName(const Parameters& p) { return p.use_quadrupole ? "quadrupole" : "monopole"; }

std::string provenanceJson(double G)
{
    return "\"octwalk\": " + jsonString(OCTWALK_VERSION) + ", \"git\": " + jsonString(OCTWALK_GIT_HASH) +
           ", \"units\": " + jsonString("N-body, G = " + num(G));
}

void resolveReports(const std::string& output, std::string& csv, std::string& json)
{
    if (!output.empty())
    {
        auto endsWith = [&output](const std::string& tail) {
            return output.size() > tail.size() && output.compare(output.size() - tail.size(), tail.size(), tail) == 0;
        };
        std::string* target = endsWith(".json") ? &json : endsWith(".csv") ? &csv : nullptr;
        if (!target)
        {
            throw UsageError("option -o/--output = '" + output +
                             "' is invalid: the name must end in .json or .csv "
                             "(the report's format)");
        }
        if (!target->empty())
        {
            throw UsageError(std::string("option -o/--output and --") + (target == &json ? "json" : "csv") +
                             " both name the " + (target == &json ? "JSON" : "CSV") + " report; give one");
        }
        *target = output;
    }
    if (!csv.empty() && csv == json) throw UsageError("--csv and --json name the same file '" + csv + "'");
    checkNewOutput(!output.empty() && output == csv ? "-o/--output" : "--csv", csv);
    checkNewOutput(!output.empty() && output == json ? "-o/--output" : "--json", json);
}

Parameters studyParameters(const po::variables_map& vm, const std::vector<std::string>& swept)
{
    Parameters p = toParameters(vm, Parameters{}, swept);
    if (p.backend == Backend::Gpu && !gpuAvailable())
    {
        throw BackendError("backend gpu requested, but no CUDA device is available (" + gpuDescription() + ")");
    }
    return p;
}

} // namespace octwalk::cli
