#include "host/core/phases.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "host/core/number_text.h"

namespace octwalk {

namespace {

std::string groupJson(const PhaseTimes& t, PhaseGroup g)
{
    std::string s = "{";
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (kPhases[k].group != g) continue;
        s += "\"" + std::string(kPhases[k].name) + "\": " + significantDigits(t.seconds[k], 9) + ", ";
    }
    return s + "\"total\": " + significantDigits(t.sum(g), 9) + "}";
}

std::string groupText(const PhaseTimes& t, PhaseGroup g, long long numBodies)
{
    std::ostringstream s;
    s.precision(4);
    s << (g == PhaseGroup::Host ? "host   [s]:" : "walk   [s]:");
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (kPhases[k].group == g) s << " " << kPhases[k].label << " " << t.seconds[k] << " ";
    }
    double total = t.sum(g);
    s << " total " << total << "  (" << (total > 0 ? double(numBodies) / total / 1e6 : 0.0) << " M bodies/s)\n";
    return s.str();
}

/// Each phase's label, right-aligned in `width` columns (cut to width - 1 characters).
template<class Infos>
std::string labelColumns(const Infos& infos, int width)
{
    std::string s;
    char buf[64];
    for (const auto& p : infos)
    {
        std::snprintf(buf, sizeof(buf), "%*.*s", width, width - 1, p.label);
        s += buf;
    }
    return s;
}

/// Each value in milliseconds, `width` columns each.
template<class Seconds>
std::string millisecondColumns(const Seconds& seconds, int width)
{
    std::string s;
    char buf[64];
    for (double v : seconds)
    {
        std::snprintf(buf, sizeof(buf), "%*.3f", width, 1e3 * v);
        s += buf;
    }
    return s;
}

} // namespace

std::string phasesJson(const PhaseTimes& t)
{
    return "\"host_seconds\": " + groupJson(t, PhaseGroup::Host) +
           ", \"walk_seconds\": " + groupJson(t, PhaseGroup::Walk);
}

std::string phasesCsvHeader()
{
    std::string s;
    for (const PhaseInfo& p : kPhases) s += std::string(p.name) + ",";
    return s + "host_seconds,walk_seconds";
}

std::string phasesCsv(const PhaseTimes& t)
{
    std::string s;
    for (double v : t.seconds) s += significantDigits(v, 9) + ",";
    return s + significantDigits(t.host(), 9) + "," + significantDigits(t.walk(), 9);
}

std::string phasesText(const PhaseTimes& t, long long numBodies)
{
    return groupText(t, PhaseGroup::Host, numBodies) + groupText(t, PhaseGroup::Walk, numBodies);
}

std::string phasesTableHeader(int width) { return labelColumns(kPhases, width); }

std::string phasesTableRow(const PhaseTimes& t, int width) { return millisecondColumns(t.seconds, width); }

std::string stepPhasesCsvHeader()
{
    std::string s;
    for (const StepPhaseInfo& p : kStepPhases) s += std::string(s.empty() ? "" : ",") + p.name;
    return s;
}

std::string stepPhasesCsv(const StepTimes& t)
{
    std::string s;
    for (double v : t.seconds) s += (s.empty() ? "" : ",") + significantDigits(v, 9);
    return s;
}

std::string stepPhasesJson(const StepTimes& t)
{
    std::string s = "{";
    for (size_t k = 0; k < kNumStepPhases; ++k)
    {
        s += "\"" + std::string(kStepPhases[k].name) + "\": " + significantDigits(t.seconds[k], 9) +
             (k + 1 < kNumStepPhases ? ", " : "}");
    }
    return s;
}

std::string stepTimesCsvHeader()
{
    std::string s;
    for (const PhaseInfo& p : kPhases) s += std::string(p.name) + ",";
    return s + stepPhasesCsvHeader();
}

std::string stepTimesCsv(const StepTimes& t)
{
    std::string s;
    for (double v : t.forces.seconds) s += significantDigits(v, 9) + ",";
    return s + stepPhasesCsv(t);
}

std::string stepTimesJson(const StepTimes& t)
{
    std::string s = "{";
    for (size_t k = 0; k < kNumPhases; ++k)
        s += "\"" + std::string(kPhases[k].name) + "\": " + significantDigits(t.forces.seconds[k], 9) + ", ";
    return s + stepPhasesJson(t).substr(1);
}

std::string stepTimesText(const StepTimes& t)
{
    std::string s;
    char buf[96];
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        std::snprintf(buf, sizeof(buf), "%s %.3g ", kPhases[k].label, 1e3 * t.forces.seconds[k]);
        s += buf;
    }
    for (size_t k = 0; k < kNumStepPhases; ++k)
    {
        std::snprintf(buf, sizeof(buf), "%s %.3g ", kStepPhases[k].label, 1e3 * t.seconds[k]);
        s += buf;
    }
    return s + "ms";
}

std::string stepPhasesTableHeader(int width) { return labelColumns(kStepPhases, width); }

std::string stepPhasesTableRow(const StepTimes& t, int width) { return millisecondColumns(t.seconds, width); }

void chainSpans(PhaseTimes& t, PhaseGroup g, double begin)
{
    double at = begin;
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (kPhases[k].group != g) continue;
        t.spans.begin[k] = at;
        at += t.seconds[k];
        t.spans.end[k] = at;
    }
}

void copySpans(PhaseSpans& to, const PhaseSpans& from, PhaseGroup g)
{
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (kPhases[k].group != g) continue;
        to.begin[k] = from.begin[k];
        to.end[k]   = from.end[k];
    }
}

SpanExtent spanExtent(const PhaseSpans& spans)
{
    SpanExtent e;
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        if (!spans.has(k)) continue;
        e.begin = e.empty() ? spans.begin[k] : std::min(e.begin, spans.begin[k]);
        e.end   = std::max(e.end, spans.end[k]);
    }
    return e;
}

double median(std::vector<double> values)
{
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    size_t n = values.size();
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

PhaseTimes medianPhases(const std::vector<PhaseTimes>& times)
{
    PhaseTimes m;
    for (size_t k = 0; k < kNumPhases; ++k)
    {
        std::vector<double> v;
        for (const PhaseTimes& t : times) v.push_back(t.seconds[k]);
        m.seconds[k] = median(std::move(v));
    }
    return m;
}

StepTimes medianStepTimes(const std::vector<StepTimes>& times)
{
    StepTimes m;
    std::vector<PhaseTimes> forces;
    for (const StepTimes& t : times) forces.push_back(t.forces);
    m.forces = medianPhases(forces);
    for (size_t k = 0; k < kNumStepPhases; ++k)
    {
        std::vector<double> v;
        for (const StepTimes& t : times) v.push_back(t.seconds[k]);
        m.seconds[k] = median(std::move(v));
    }
    return m;
}

} // namespace octwalk
