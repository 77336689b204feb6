#include "host/sim/comoving.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "common/errors.h"
#include "common/integrate.h"
#include "host/core/text_input.h"

namespace octwalk {

namespace {

std::string exact(double v)
{
    char text[32];
    std::snprintf(text, sizeof(text), "%.17g", v);
    return text;
}

void require(bool ok, const std::string& name, double value, const std::string& rule)
{
    if (!ok) throw ParameterError("comoving parameter " + name + " = " + exact(value) + " is invalid: " + rule);
}

/// A whole string as a finite double, or false.
bool parseReal(const std::string& text, double& value)
{
    std::istringstream s(text);
    s >> value;
    return !s.fail() && (s >> std::ws).eof() && std::isfinite(value);
}

} // namespace

void validate(const ComovingSettings& s)
{
    require(std::isfinite(s.aBegin) && s.aBegin > 0, "a_begin", s.aBegin, "must be finite and > 0");
    require(std::isfinite(s.aEnd) && s.aEnd > s.aBegin, "a_end", s.aEnd,
            "must be finite and after a_begin = " + exact(s.aBegin));
    validateCosmology(s.cosmology, s.aBegin, s.aEnd);
    require(std::isfinite(s.dlna) && s.dlna >= 0, "dlna", s.dlna, "must be finite and >= 0 (0: the criterion)");
    require(std::isfinite(s.errTolIntAccuracy) && s.errTolIntAccuracy > 0, "err_tol_int_accuracy", s.errTolIntAccuracy,
            "must be finite and > 0");
    require(std::isfinite(s.maxDlna) && s.maxDlna > 0, "max_dlna", s.maxDlna, "must be finite and > 0");
    require(std::isfinite(s.softeningMaxPhys) && s.softeningMaxPhys >= 0, "softening_max_phys", s.softeningMaxPhys,
            "must be finite and >= 0 (0: none)");
    for (size_t i = 0; i < s.outputList.size(); ++i)
    {
        const double a = s.outputList[i];
        require(std::isfinite(a) && a >= s.aBegin && a <= s.aEnd, "output_list[" + std::to_string(i) + "]", a,
                "must lie in [a_begin, a_end] = [" + exact(s.aBegin) + ", " + exact(s.aEnd) + "]");
        require(i == 0 || a > s.outputList[i - 1], "output_list[" + std::to_string(i) + "]", a,
                "must be after the entry before it, " + (i > 0 ? exact(s.outputList[i - 1]) : std::string()));
    }
}

std::vector<double> readOutputList(const std::string& path)
{
    std::vector<double> list;
    forEachTextLine(path, "output list", [&](int64_t number, const std::string& text) {
        const std::string line = text.substr(0, text.find('#'));
        if (line.find_first_not_of(" \t\r") == std::string::npos) return;
        double a = 0;
        if (!parseReal(line, a))
        {
            throw InputError("output list '" + path + "' line " + std::to_string(number) + ": '" + line.substr(0, 80) +
                             (line.size() > 80 ? "...'" : "'") + " is not a scale factor");
        }
        list.push_back(a);
    });
    return list;
}

std::string toText(const ComovingSettings& s)
{
    std::string list;
    for (size_t i = 0; i < s.outputList.size(); ++i) list += (i ? "," : "") + exact(s.outputList[i]);
    return "units=" + std::string(unitSystem(s.units).name) + "\nomega0=" + exact(s.cosmology.omega0) +
           "\nomega_lambda=" + exact(s.cosmology.omegaLambda) + "\nhubble_param=" + exact(s.cosmology.hubbleParam) +
           "\na_begin=" + exact(s.aBegin) + "\na_end=" + exact(s.aEnd) + "\noutput_list=" + list +
           "\ndlna=" + exact(s.dlna) + "\nerr_tol_int_accuracy=" + exact(s.errTolIntAccuracy) +
           "\nmax_dlna=" + exact(s.maxDlna) + "\nsoftening_max_phys=" + exact(s.softeningMaxPhys) + "\n";
}

ComovingSettings comovingSettingsFromText(const std::string& text)
{
    ComovingSettings s;
    std::map<std::string, double*> reals{{"omega0", &s.cosmology.omega0},
                                         {"omega_lambda", &s.cosmology.omegaLambda},
                                         {"hubble_param", &s.cosmology.hubbleParam},
                                         {"a_begin", &s.aBegin},
                                         {"a_end", &s.aEnd},
                                         {"dlna", &s.dlna},
                                         {"err_tol_int_accuracy", &s.errTolIntAccuracy},
                                         {"max_dlna", &s.maxDlna},
                                         {"softening_max_phys", &s.softeningMaxPhys}};
    std::map<std::string, int> seen;
    std::istringstream in(text);
    std::string line;
    auto fail = [](const std::string& why) { throw FormatError("comoving settings: " + why); };
    while (std::getline(in, line))
    {
        const size_t eq = line.find('=');
        if (eq == std::string::npos) fail("line '" + line + "' is not name=value");
        const std::string name = line.substr(0, eq), value = line.substr(eq + 1);
        if (++seen[name] > 1) fail("'" + name + "' is repeated");
        if (name == "units")
        {
            try
            {
                s.units = parseCosmoUnits(value);
            }
            catch (const ParameterError& e)
            {
                fail(e.what());
            }
        }
        else if (name == "output_list")
        {
            std::istringstream items(value);
            std::string item;
            while (std::getline(items, item, ','))
            {
                double a = 0;
                if (!parseReal(item, a)) fail("output_list entry '" + item + "' is not a number");
                s.outputList.push_back(a);
            }
        }
        else if (reals.count(name))
        {
            if (!parseReal(value, *reals[name])) fail(name + " = '" + value + "' is not a finite number");
        }
        else
        {
            fail("unknown name '" + name + "'");
        }
    }
    for (const auto& [name, member] : reals)
    {
        if (!seen.count(name)) fail("'" + name + "' is missing");
    }
    if (!seen.count("units") || !seen.count("output_list")) fail("'units' or 'output_list' is missing");
    return s;
}

double comovingSoftening(const ComovingSettings& s, double epsilon, double a)
{
    return s.softeningMaxPhys > 0 ? std::min(epsilon, s.softeningMaxPhys / a) : epsilon;
}

double comovingEpsilonSquared(const ComovingSettings& s, double epsilonSquared, double a)
{
    if (!(s.softeningMaxPhys > 0)) return epsilonSquared;
    const double clip = s.softeningMaxPhys / a;
    return std::min(epsilonSquared, clip * clip);
}

double nextStop(const ComovingSettings& s, double a)
{
    auto it = std::upper_bound(s.outputList.begin(), s.outputList.end(), a);
    return it == s.outputList.end() ? s.aEnd : std::min(*it, s.aEnd);
}

bool isOutputTime(const ComovingSettings& s, double a)
{
    return std::binary_search(s.outputList.begin(), s.outputList.end(), a);
}

double nextScaleFactor(double a, double stop, double maxDlna)
{
    const double span = std::log(stop / a);
    // The margin keeps a span that is a whole number of steps (up to round-off) from gaining one.
    const double steps = std::max(1.0, std::ceil(span / maxDlna * (1 - 1e-12)));
    return steps <= 1.0 ? stop : a * std::exp(span / steps);
}

int64_t stepsToEnd(const ComovingSettings& s, double a, double maxDlna)
{
    double steps = 0;
    for (double stop = nextStop(s, a); a < s.aEnd; stop = nextStop(s, a))
    {
        const double span = std::log(stop / a);
        steps += std::max(1.0, std::ceil(span / maxDlna * (1 - 1e-12)));
        a = stop;
    }
    if (!(steps <= kMaxComovingSteps))
    {
        throw ParameterError("a step of " + exact(maxDlna) +
                             " in ln a needs more than 1e12 steps to a_end = " + exact(s.aEnd));
    }
    return int64_t(steps);
}

double criterionDlna(const ComovingSettings& s, double hubble0, double a, double epsilon, const std::vector<Vec3d>& g)
{
    double largest = 0;
#pragma omp parallel for reduction(max : largest) schedule(static)
    for (int64_t i = 0; i < int64_t(g.size()); ++i) largest = std::max(largest, dot(g[i], g[i]));
    return criterionDlnaOfLargest(s, hubble0, a, epsilon, largest);
}

double criterionDlnaOfLargest(const ComovingSettings& s, double hubble0, double a, double epsilon, double largest)
{
    if (!(largest > 0)) return s.maxDlna;
    const double physicalAcceleration = std::sqrt(largest) / (a * a);
    const double dt                   = std::sqrt(2 * s.errTolIntAccuracy * a * epsilon / physicalAcceleration);
    return std::min(s.maxDlna, hubble0 * hubbleRate(s.cosmology, a) * dt);
}

double wrapPeriodic(double x, double boxSize) { return wrapCoordinate(x, boxSize); }

Vec3d wrapIntoBox(const Vec3d& x, double boxSize) { return wrapPosition(x, boxSize); }

void checkInsideBox(const ParticleSet& p, double boxSize)
{
    for (int64_t i = 0; i < p.size(); ++i)
    {
        const Vec3d& x = p.pos[i];
        for (double c : {x.x, x.y, x.z})
        {
            if (!(c >= 0 && c < boxSize))
            {
                throw InputError("body " + std::to_string(i) + " (id " + std::to_string(p.id[i]) + "): coordinate " +
                                 exact(c) + " lies outside the box [0, " + exact(boxSize) + ")");
            }
        }
    }
}

} // namespace octwalk
