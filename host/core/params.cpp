#include "host/core/params.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>
#include <type_traits>
#include <utility>

#include "common/errors.h"

namespace octwalk {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

} // namespace

// The table. A row: name, option, alias, command-line form, member, unit, range, help, fixed on restart,
// default when absent from a file (rows added after checkpoints with parameter text existed).
// The default is the member's initialiser in params.h.
const std::vector<ParameterInfo>& parameterTable()
{
    static const std::vector<ParameterInfo> table{
        {"opening_angle",
         "opening-angle",
         "theta",
         CliForm::Plain,
         &Parameters::opening_angle,
         "",
         {0, 1, true, false},
         "opening angle theta",
         true},
        {"epsilon_squared",
         "epsilon",
         nullptr,
         CliForm::Length,
         &Parameters::epsilon_squared,
         "length",
         {0, kInf, false, true},
         "Plummer softening length (0: none; a positive one must be >= 2^-63 = 1.0842022e-19, whose square is "
         "float32's smallest normal number)",
         true},
        {"gravitational_constant",
         "G",
         nullptr,
         CliForm::Plain,
         &Parameters::gravitational_constant,
         "",
         {0, kInf, true, true},
         "gravitational constant",
         true},
        {"n_leaf",
         "n-leaf",
         nullptr,
         CliForm::Plain,
         &Parameters::n_leaf,
         "",
         {1, kInf, false, true},
         "most bodies in a leaf",
         true},
        {"n_group",
         "n-group",
         nullptr,
         CliForm::Plain,
         &Parameters::n_group,
         "",
         {1, kInf, false, true},
         "most bodies in a walk group",
         true},
        {"merge_groups",
         "no-merge-groups",
         nullptr,
         CliForm::Negated,
         &Parameters::merge_groups,
         "",
         {},
         "keep the groups as the tree cuts them (default: neighbouring groups are joined up to n-group bodies, "
         "fewer and fuller groups: 1.7x faster walk + forces on the H200 at a lower error)",
         true},
        {"mac",
         "mac",
         nullptr,
         CliForm::Plain,
         &Parameters::mac,
         "",
         {},
         "acceptance criterion: bonsai (d > l/theta + delta), octgrav (d > l/theta) or relative (bonsai with a "
         "per-group theta_g = theta min(1, (c_ref/c_g)^(1/3)), c = phi^2/|a| estimated at the group's centre; for "
         "isolated "
         "systems only)",
         true},
        {"use_quadrupole",
         "monopole",
         nullptr,
         CliForm::Negated,
         &Parameters::use_quadrupole,
         "",
         {},
         "monopole only (drop the quadrupole moments)",
         true},
        // Where the forces run, not what they are: a restart keeps the checkpoint's.
        {"backend",
         "backend",
         nullptr,
         CliForm::Plain,
         &Parameters::backend,
         "",
         {},
         "auto (GPU if present, else CPU), cpu or gpu",
         false},
        {"box_size",
         "box-size",
         nullptr,
         CliForm::Plain,
         &Parameters::box_size,
         "length",
         {0, kInf, false, true},
         "periodic box side L (bodies in [0, L)^3, Ewald-summed images); 0: isolated",
         true,
         // Checkpoints written before it existed hold isolated runs.
         true},
        {"softened_quadrupole",
         "traceless-quadrupole",
         nullptr,
         CliForm::Negated,
         &Parameters::softened_quadrupole,
         "",
         {},
         "expand the unsoftened potential (traceless quadrupole only; default: the softened potential's "
         "expansion, whose second-moment trace term eps^2 sum m |s|^2 Bonsai also keeps)",
         true,
         // Absent from a checkpoint written before it existed: the default, so such a run continues with
         // the softened expansion (the interaction lists are the same, the forces more accurate).
         true},
        {"err_tol_force_acc",
         "err-tol-force-acc",
         nullptr,
         CliForm::Plain,
         &Parameters::err_tol_force_acc,
         "",
         {0, kInf, false, true},
         "periodic boxes: a group opens to theta_g = min(theta, (alpha |a_g| L^2 / (G M))^(1/3)), |a_g| its net "
         "force estimated at theta 0.8 (in a run's later steps: its bodies' mean acceleration of the previous step), "
         "so the tree's error (~theta^3 of the box's pull G M / L^2) stays near "
         "alpha of the net force (GADGET's ErrTolForceAcc, with the box's pull for the node's); with TreePM "
         "(pm_grid > 0), a node too wide for the split's fixed size bound is still expanded where its estimated "
         "error is below alpha times the smallest |a| of the group's previous accelerations (a run's steps after "
         "the first), and a node whose truncation (its octupole's estimated pull) exceeds that tolerance is opened; "
         "0: theta everywhere, the fixed bound only",
         true,
         // Checkpoints written before it existed take the default (they ran with theta everywhere).
         true},
        {"far_field_ratio",
         "far-field-ratio",
         nullptr,
         CliForm::Plain,
         &Parameters::far_field_ratio,
         "",
         {0, kInf, false, true},
         "accepted nodes farther than this many group radii from a group's centre pull it through "
         "one fourth-order expansion about the centre (per group, not per body; error ~ ratio^-4 of their pull); "
         "0: every node body by body; else >= 2 (in a periodic box: the groups small enough to expand their Ewald "
         "correction, or under TreePM to take each node at one image, for nodes within 2 r_s^2 / R of a group of "
         "radius R)",
         true,
         // Checkpoints written before it existed take the default.
         true},
        {"max_energy_error",
         "max-energy-error",
         nullptr,
         CliForm::Plain,
         &Parameters::max_energy_error,
         "",
         {0, kInf, false, true},
         "run and hermite: stop with an error at the first energy.csv row whose |dE/E0| exceeds this (energy lost "
         "or gained far beyond any integration error worth keeping, e.g. an unsoftened head-on collision); 0: no "
         "bound; isolated systems only (not comoving runs or periodic boxes)",
         true,
         // Checkpoints written before it existed take the default.
         true},
        // TreePM's rows: checkpoints written before they existed hold tree + Ewald runs (pm_grid 0) with
        // GADGET-2's split in these rows.
        {"pm_grid",
         "pm-grid",
         nullptr,
         CliForm::OrAuto,
         &Parameters::pm_grid,
         "",
         {0, 32768, false, false},
         "periodic boxes: TreePM, a particle mesh of this many cells per side for the long-range force (GADGET's "
         "PMGRID) and the tree for the short-range force within rcut r_s, r_s = asmth L / pm-grid; auto: 2 N^(1/3) "
         "rounded up to 2^a 3^b 5^c, at least 32, at most 1024 (no mesh in an isolated system); 0: the tree with "
         "Ewald's sum (the reference, 2.4-2.8 times slower steps at 256^3; TreePM's median force error is at most its "
         "own on evolved and uniform boxes); else more than 2 rcut asmth (21 with the defaults), which keeps the "
         "cutoff below L/2",
         true,
         true,
         "0"},
        {"asmth",
         "asmth",
         nullptr,
         CliForm::Plain,
         &Parameters::asmth,
         "",
         {0, kInf, true, true},
         "TreePM: the force split scale r_s in mesh cells (GADGET's ASMTH; GADGET-2's 1.25 on one mesh is 3-15 times "
         "less accurate than tree + Ewald)",
         true,
         true,
         "1.25"},
        {"rcut",
         "rcut",
         nullptr,
         CliForm::Plain,
         &Parameters::rcut,
         "",
         {0, kInf, true, true},
         "TreePM: the tree's short-range cutoff in units of r_s (GADGET's RCUT; GADGET-2's is 4.5)",
         true,
         true,
         "4.5"},
        {"pm_assignment",
         "pm-assignment",
         nullptr,
         CliForm::Plain,
         &Parameters::pm_assignment,
         "",
         {},
         "TreePM: the mesh's mass assignment and force interpolation, tsc (triangular-shaped cloud) or cic "
         "(cloud in cell)",
         true,
         true},
        // Checkpoints written before it existed ran one mesh.
        {"pm_interlace",
         "no-pm-interlace",
         nullptr,
         CliForm::Negated,
         &Parameters::pm_interlace,
         "",
         {},
         "TreePM: one mesh (default: the mean of the forces on the mesh and on a mesh shifted by half a cell, whose "
         "aliasing errors cancel: twice the mesh's work, a median force error several times smaller)",
         true,
         true,
         "false"},
        // Where the mesh runs, not what it computes: a restart keeps the checkpoint's, as backend.
        {"pm_backend",
         "pm-backend",
         nullptr,
         CliForm::Plain,
         &Parameters::pm_backend,
         "",
         {},
         "TreePM: where the mesh runs, auto (on the GPU with the gpu backend, else on the host's cores), cpu "
         "(the host's FFTW) or gpu (cuFFT); under mpirun, gpu puts the whole mesh on the first rank's GPU (the "
         "bodies gathered there) and cpu cuts it into slabs over the ranks' hosts",
         false,
         true},
    };
    return table;
}

namespace {

const std::vector<std::pair<Mac, std::string>>& namesOf(Mac)
{
    static const std::vector<std::pair<Mac, std::string>> names{
        {Mac::Bonsai, "bonsai"}, {Mac::Octgrav, "octgrav"}, {Mac::Relative, "relative"}};
    return names;
}

const std::vector<std::pair<Backend, std::string>>& namesOf(Backend)
{
    static const std::vector<std::pair<Backend, std::string>> names{
        {Backend::Auto, "auto"}, {Backend::Cpu, "cpu"}, {Backend::Gpu, "gpu"}};
    return names;
}

const std::vector<std::pair<MassAssignment, std::string>>& namesOf(MassAssignment)
{
    static const std::vector<std::pair<MassAssignment, std::string>> names{{MassAssignment::Tsc, "tsc"},
                                                                           {MassAssignment::Cic, "cic"}};
    return names;
}

template<class T>
constexpr bool isChoice = std::is_enum_v<T>;

/// "'bonsai' or 'octgrav'", "'auto', 'cpu' or 'gpu'".
template<class E>
std::string choicesText()
{
    const auto& names = namesOf(E{});
    std::string s;
    for (size_t i = 0; i < names.size(); ++i)
    {
        s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + ("'" + names[i].second + "'");
    }
    return s;
}

template<class E>
std::string nameOf(E value)
{
    for (const auto& [v, name] : namesOf(E{}))
    {
        if (v == value) return name;
    }
    return namesOf(E{}).front().second;
}

template<class E>
E parseChoice(const std::string& parameter, const std::string& name)
{
    for (const auto& [v, n] : namesOf(E{}))
    {
        if (n == name) return v;
    }
    throw ParameterError("parameter " + parameter + " = '" + name + "' is invalid: must be " + choicesText<E>());
}

std::string number(double v, int precision)
{
    std::ostringstream s;
    s.precision(precision);
    s << v;
    return s.str();
}

/// The shortest text (6 to 17 significant digits) that reads back as v: 1.0000001 stays 1.0000001, not 1.
std::string shortestNumber(double v)
{
    for (int precision = 6; precision < 17; ++precision)
    {
        const std::string text = number(v, precision);
        if (std::strtod(text.c_str(), nullptr) == v) return text;
    }
    return number(v, 17);
}

[[noreturn]] void unreadable(const ParameterInfo& row, const std::string& text, const char* what)
{
    throw ParameterError(std::string("parameter ") + row.name + " = '" + text + "' is invalid: " + what);
}

bool inRange(const Range& r, double v)
{
    bool above = r.minOpen ? v > r.min : v >= r.min;
    bool below = r.maxOpen ? v < r.max : v <= r.max;
    return above && below;
}

} // namespace

const ParameterInfo* findParameter(const std::string& name)
{
    for (const ParameterInfo& row : parameterTable())
    {
        if (name == row.name) return &row;
    }
    return nullptr;
}

std::string rangeText(const ParameterInfo& row)
{
    return std::visit(
        [&row](auto member) -> std::string {
            using T        = std::decay_t<decltype(Parameters{}.*member)>;
            const Range& r = row.range;
            if constexpr (isChoice<T>)
            {
                return "must be " + choicesText<T>();
            }
            else if constexpr (std::is_same_v<T, bool>)
            {
                return "must be true or false";
            }
            else
            {
                if (std::isfinite(r.min) && std::isfinite(r.max))
                {
                    return std::string(row.form == CliForm::OrAuto ? "must be auto or in " : "must be in ") +
                           (r.minOpen ? "(" : "[") + number(r.min, 6) + ", " + number(r.max, 6) +
                           (r.maxOpen ? ")" : "]");
                }
                std::string finite = std::is_floating_point_v<T> ? "finite and " : "";
                return "must be " + finite + (r.minOpen ? "> " : ">= ") + number(r.min, 6);
            }
        },
        row.member);
}

namespace {

/// Whether value is the automatic value of an OrAuto row.
bool isAuto(const ParameterInfo& row, double value) { return row.form == CliForm::OrAuto && value == kPmGridAuto; }

/// Whether the transforms of an n-point axis are fast: n = 2^a 3^b 5^c.
bool fastFftSize(int n)
{
    for (int f : {2, 3, 5})
    {
        while (n % f == 0) n /= f;
    }
    return n == 1;
}

/// The smallest fast size >= n.
int fastFftSizeFrom(int n)
{
    while (!fastFftSize(n)) ++n;
    return n;
}

/// TreePM's rows together: the short-range sum takes each source's nearest image only, which holds every pair
/// within the cutoff only while the cutoff is below L / 2. That the box is periodic is the solver's check
/// (GravitySolver::setParameters): a comoving run's command line takes the box's size from its input file after
/// validating the parameters.
void validateTreePm(const Parameters& p)
{
    if (p.pm_grid == 0 || p.pm_grid == kPmGridAuto) return;
    if (p.pm_grid < 2)
    {
        throw ParameterError("parameter pm_grid = " + std::to_string(p.pm_grid) +
                             " is invalid: must be 0 (tree and Ewald) or >= 2 mesh cells per side");
    }
    const double cutoffCells = p.rcut * p.asmth;
    if (!(2 * cutoffCells < double(p.pm_grid)))
    {
        throw ParameterError(
            "parameter pm_grid = " + std::to_string(p.pm_grid) + " is invalid with asmth = " + number(p.asmth, 17) +
            " and rcut = " + number(p.rcut, 17) +
            ": the short-range cutoff rcut asmth L / pm_grid = " + number(cutoffCells / double(p.pm_grid), 6) +
            " L must be below L / 2 (pm_grid > 2 rcut asmth = " + number(2 * cutoffCells, 6) + ")");
    }
}

} // namespace

int automaticPmGrid(const Parameters& p, int64_t numBodies)
{
    if (p.pm_grid != kPmGridAuto) return p.pm_grid;
    if (!(p.box_size > 0)) return 0;
    // The cutoff rcut asmth L / pm_grid must stay below L / 2 (validateTreePm).
    const int smallest  = fastFftSizeFrom(std::max(32, int(std::floor(2 * p.rcut * p.asmth)) + 1));
    const double wanted = std::ceil(2 * std::cbrt(double(std::max<int64_t>(numBodies, 1))) - 1e-9);
    const int size      = fastFftSizeFrom(int(std::min(wanted, double(kPmGridAutoMax))));
    return std::max(smallest, std::min(size, kPmGridAutoMax));
}

Parameters withPmGridFor(Parameters p, int64_t numBodies)
{
    if (p.box_size > 0) p.pm_grid = automaticPmGrid(p, numBodies);
    return p;
}

void validate(const Parameters& p)
{
    for (const ParameterInfo& row : parameterTable())
    {
        std::visit(
            [&](auto member) {
                using T = std::decay_t<decltype(p.*member)>;
                if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
                {
                    if (isAuto(row, double(p.*member))) return;
                    double v = double(p.*member);
                    if (!(inRange(row.range, v) && std::isfinite(v)))
                    {
                        std::ostringstream s;
                        s << "parameter " << row.name << " = " << shortestNumber(v)
                          << " is invalid: " << rangeText(row);
                        throw ParameterError(s.str());
                    }
                }
            },
            row.member);
    }
    if (p.mac == Mac::Relative && p.box_size > 0)
    {
        throw ParameterError("parameter mac = relative is invalid with box_size = " + number(p.box_size, 17) +
                             ": the relative criterion is for isolated systems (box_size 0)");
    }
    // The float32 walk adds eps^2 to r^2: a positive eps^2 below float32's normal range would act as none.
    if (p.epsilon_squared > 0 && p.epsilon_squared < 0x1p-126)
    {
        throw ParameterError("parameter epsilon_squared = " + shortestNumber(p.epsilon_squared) +
                             " is invalid: must be 0 or >= 2^-126 = 1.1754944e-38 (epsilon >= 2^-63 = 1.0842022e-19): "
                             "a smaller softening is below float32's normal range and would act as none");
    }
    validateTreePm(p);
    if (p.far_field_ratio > 0 && p.far_field_ratio < 2)
    {
        // The expansion about the centre converges only for nodes beyond the group's radius, slowly near it.
        throw ParameterError("parameter far_field_ratio = " + number(p.far_field_ratio, 17) +
                             " is invalid: must be 0 (off) or >= 2");
    }
}

std::string parameterText(const ParameterInfo& row, const Parameters& p)
{
    return std::visit(
        [&p, &row](auto member) -> std::string {
            using T = std::decay_t<decltype(p.*member)>;
            if constexpr (isChoice<T>) return nameOf(p.*member);
            else if constexpr (std::is_same_v<T, bool>) return p.*member ? "true" : "false";
            else if constexpr (std::is_same_v<T, int>)
                return isAuto(row, p.*member) ? "auto" : std::to_string(p.*member);
            else return number(p.*member, 17);
        },
        row.member);
}

void parameterFromText(const ParameterInfo& row, Parameters& p, const std::string& text)
{
    std::visit(
        [&](auto member) {
            using T = std::decay_t<decltype(p.*member)>;
            if constexpr (isChoice<T>)
            {
                p.*member = parseChoice<T>(row.name, text);
            }
            else if constexpr (std::is_same_v<T, bool>)
            {
                if (text != "true" && text != "false") unreadable(row, text, "must be true or false");
                p.*member = text == "true";
            }
            else if constexpr (std::is_same_v<T, int>)
            {
                if (row.form == CliForm::OrAuto && text == "auto")
                {
                    p.*member = kPmGridAuto;
                    return;
                }
                bool digits = !text.empty() && text.find_first_not_of("-0123456789") == std::string::npos;
                char* end   = nullptr;
                errno       = 0;
                long long v = digits ? std::strtoll(text.c_str(), &end, 10) : 0;
                if (!digits || end != text.c_str() + text.size() || errno == ERANGE || v < INT_MIN || v > INT_MAX)
                {
                    unreadable(row, text, row.form == CliForm::OrAuto ? "not auto or an integer" : "not an integer");
                }
                p.*member = int(v);
            }
            else
            {
                bool plain = !text.empty() && text.find_first_not_of("0123456789.eE+-") == std::string::npos;
                char* end  = nullptr;
                errno      = 0;
                double v   = plain ? std::strtod(text.c_str(), &end) : 0.0;
                if (!plain || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(v))
                {
                    unreadable(row, text, "not a finite number");
                }
                p.*member = v;
            }
        },
        row.member);
}

std::vector<std::string> choiceNames(const ParameterInfo& row)
{
    return std::visit(
        [](auto member) {
            using T = std::decay_t<decltype(Parameters{}.*member)>;
            std::vector<std::string> names;
            if constexpr (isChoice<T>)
            {
                for (const auto& entry : namesOf(T{})) names.push_back(entry.second);
            }
            return names;
        },
        row.member);
}

std::string toString(Mac mac) { return nameOf(mac); }

std::string toString(Backend backend) { return nameOf(backend); }

Mac parseMac(const std::string& name) { return parseChoice<Mac>("mac", name); }

Backend parseBackend(const std::string& name) { return parseChoice<Backend>("backend", name); }

std::string toJson(const Parameters& p)
{
    std::string s = "{";
    for (const ParameterInfo& row : parameterTable())
    {
        const std::string text = parameterText(row, p);
        const bool quoted      = !choiceNames(row).empty() || text == "auto";
        s += (s.size() > 1 ? ", \"" : "\"") + std::string(row.name) + "\": ";
        s += quoted ? "\"" + text + "\"" : text;
    }
    return s + "}";
}

std::string toText(const Parameters& p)
{
    std::string s;
    for (const ParameterInfo& row : parameterTable()) s += std::string(row.name) + "=" + parameterText(row, p) + "\n";
    return s;
}

Parameters parametersFromText(const std::string& text)
{
    Parameters p;
    std::vector<std::string> seen, unknown, repeated;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line))
    {
        size_t eq = line.find('=');
        if (eq == std::string::npos) throw ParameterError("parameter line '" + line + "' is not name=value");
        std::string name         = line.substr(0, eq);
        const ParameterInfo* row = findParameter(name);
        if (!row)
        {
            unknown.push_back(name);
            continue;
        }
        if (std::find(seen.begin(), seen.end(), name) != seen.end()) repeated.push_back(name);
        seen.push_back(name);
        parameterFromText(*row, p, line.substr(eq + 1));
    }
    std::vector<std::string> missing;
    for (const ParameterInfo& row : parameterTable())
    {
        bool absent = std::find(seen.begin(), seen.end(), row.name) == seen.end();
        if (absent && !row.defaultWhenAbsent) missing.push_back(row.name);
        if (absent && row.defaultWhenAbsent && row.absentText) parameterFromText(row, p, row.absentText);
    }
    auto list = [](const char* what, const std::vector<std::string>& names) {
        std::string s;
        for (const std::string& n : names) s += (s.empty() ? std::string(what) + " " : ", ") + n;
        return s;
    };
    std::string problems;
    for (const std::string& part : {list("unknown parameters:", unknown), list("repeated parameters:", repeated),
                                    list("missing parameters:", missing)})
    {
        if (!part.empty()) problems += (problems.empty() ? "" : "; ") + part;
    }
    if (!problems.empty()) throw ParameterError(problems);
    return p;
}

} // namespace octwalk
