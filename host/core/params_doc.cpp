#include "host/core/params_doc.h"

#include <cctype>
#include <cmath>
#include <locale>
#include <sstream>
#include <type_traits>
#include <vector>

#include "host/core/params.h"

namespace octwalk {

const char* const kParameterReferenceCommand =
    "cmake --build build --target octwalk_params_doc && build/octwalk_params_doc > docs/parameters.md";

namespace {

/// A real as the command line's help shows it (12 digits), whatever the global locale.
std::string shortNumber(double v)
{
    std::ostringstream s;
    s.imbue(std::locale::classic());
    s.precision(12);
    s << v;
    return s.str();
}

/// Text as Markdown shows it literally: the characters that could start emphasis, code, links, HTML or a
/// table cell are escaped.
std::string escaped(const std::string& text)
{
    std::string s;
    for (char c : text)
    {
        if (std::string("\\`*_|<[]").find(c) != std::string::npos) s += '\\';
        s += c;
    }
    return s;
}

std::string code(const std::string& text) { return "`" + text + "`"; }

/// "real", "integer", "switch", "choice".
std::string typeName(const ParameterInfo& row)
{
    return std::visit(
        [](auto member) -> std::string {
            using T = std::decay_t<decltype(Parameters{}.*member)>;
            if constexpr (std::is_enum_v<T>) return "choice";
            else if constexpr (std::is_same_v<T, bool>) return "true or false";
            else if constexpr (std::is_same_v<T, int>) return "integer";
            else return "real";
        },
        row.member);
}

bool isBool(const ParameterInfo& row) { return std::holds_alternative<bool Parameters::*>(row.member); }

/// What the option's value is called on the command line: VALUE, LENGTH, NAME; empty for a switch.
std::string metavariable(const ParameterInfo& row)
{
    if (isBool(row)) return "";
    if (row.form == CliForm::Length) return "LENGTH";
    if (!choiceNames(row).empty()) return "NAME";
    return "VALUE";
}

/// "`--opening-angle VALUE`", "`--monopole`".
std::string spelling(const ParameterInfo& row, const char* option)
{
    std::string meta = metavariable(row);
    return code(std::string("--") + option + (meta.empty() ? "" : " " + meta));
}

/// The option, its alias, in one cell.
std::string optionsCell(const ParameterInfo& row)
{
    std::string s = spelling(row, row.option);
    if (row.alias) s += ", " + spelling(row, row.alias);
    return s;
}

/// The default as the command line spells it (--epsilon: the length), as options.cpp's defaultText does.
std::string cliDefault(const ParameterInfo& row, const Parameters& defaults)
{
    if (row.form == CliForm::Length)
    {
        return shortNumber(std::sqrt(defaults.*std::get<double Parameters::*>(row.member)));
    }
    if (std::holds_alternative<double Parameters::*>(row.member))
    {
        return shortNumber(defaults.*std::get<double Parameters::*>(row.member));
    }
    return parameterText(row, defaults);
}

/// The default: the command line's value, or for a switch the member's value without it.
std::string defaultCell(const ParameterInfo& row)
{
    const Parameters defaults;
    if (isBool(row)) return code(parameterText(row, defaults)) + " (without the switch)";
    if (row.form == CliForm::Length)
    {
        return code(cliDefault(row, defaults)) + " (" + code(row.name) + " = " +
               code(shortNumber(defaults.*std::get<double Parameters::*>(row.member))) + ")";
    }
    return code(cliDefault(row, defaults));
}

std::string unitCell(const ParameterInfo& row)
{
    if (!*row.unit) return "-";
    if (row.form == CliForm::Length) return std::string(row.unit) + " (" + code(row.name) + ": " + row.unit + "^2)";
    return row.unit;
}

/// rangeText without "must be ": "in (0, 1]", "finite and >= 0", "'bonsai', 'octgrav' or 'relative'".
std::string validValues(const ParameterInfo& row)
{
    std::string text      = rangeText(row);
    const std::string cut = "must be ";
    if (text.rfind(cut, 0) == 0) text = text.substr(cut.size());
    return text;
}

/// What a checkpoint without the row takes.
std::string absentCell(const ParameterInfo& row)
{
    if (!row.defaultWhenAbsent) return "the checkpoint is refused (a missing parameter)";
    if (row.absentText)
    {
        return code(row.absentText) +
               ", what runs before the parameter existed ran with (checkpoints written then lack it)";
    }
    return "the default (checkpoints written before the parameter existed lack it)";
}

/// What giving the option does, said for the row's form.
std::string commandLineLine(const ParameterInfo& row)
{
    std::string s = spelling(row, row.option);
    if (row.alias) s += " or " + spelling(row, row.alias) + " (the same option under two names; give one)";
    switch (row.form)
    {
    case CliForm::Length: return s + ": sets " + code(row.name) + " to LENGTH^2";
    case CliForm::Negated: return s + ": a switch that sets " + code(row.name) + " to " + code("false");
    case CliForm::OrAuto: return s + ": sets " + code(row.name) + " (" + code("auto") + ": its automatic value)";
    case CliForm::Plain: break;
    }
    if (isBool(row)) return s + ": a switch that sets " + code(row.name) + " to " + code("true");
    return s + ": sets " + code(row.name);
}

/// The description: the table's help, as a sentence.
std::string sentence(const std::string& help)
{
    std::string s = help;
    if (!s.empty()) s[0] = char(std::toupper(static_cast<unsigned char>(s[0])));
    if (!s.empty() && s.back() != '.') s += '.';
    return escaped(s);
}

void summary(std::ostringstream& page)
{
    page << "| Option | Name | Default | Unit | Valid values |\n"
         << "|---|---|---|---|---|\n";
    for (const ParameterInfo& row : parameterTable())
    {
        page << "| " << optionsCell(row) << " | [" << code(row.name) << "](#" << row.name << ") | " << defaultCell(row)
             << " | " << unitCell(row) << " | " << escaped(validValues(row)) << " |\n";
    }
}

void section(std::ostringstream& page, const ParameterInfo& row)
{
    const Parameters defaults;
    page << "### " << row.name << "\n\n"
         << sentence(row.help) << "\n\n"
         << "- Command line: " << commandLineLine(row) << "\n"
         << "- Name in run.json and checkpoints: " << code(row.name) << " (" << typeName(row) << ")\n"
         << "- Default: " << defaultCell(row) << "\n"
         << "- Unit: " << unitCell(row) << "\n"
         << "- Valid values: " << escaped(validValues(row)) << "\n"
         << "- Restart: "
         << (row.fixedOnRestart ? "`octwalk run --restart` refuses the option (the checkpoint holds the value)"
                                : "`octwalk run --restart` does not refuse the option")
         << "\n"
         << "- Absent from a checkpoint: " << absentCell(row) << "\n\n";
}

} // namespace

std::string parameterReferenceMarkdown()
{
    std::ostringstream page;
    page << "# Parameter reference\n\n"
         << "<!-- Generated from the parameter table (host/core/params.cpp) by octwalk_params_doc; do not edit. -->\n\n"
         << "This page is generated from the parameter table, `parameterTable()` in "
         << "[host/core/params.cpp](../host/core/params.cpp) (the members and their defaults: "
         << "[host/core/params.h](../host/core/params.h)). The table is the one list of the force solver's "
         << "parameters: the command-line options below (and their `--help`), the `parameters` object of run.json "
         << "and the other JSON outputs, and the parameters a checkpoint stores all come from it. Do not edit the "
         << "page by hand: change the table, then regenerate the page from the repository root with\n\n"
         << "```sh\n"
         << kParameterReferenceCommand << "\n"
         << "```\n\n"
         << "The test `ParamsDoc.PageMatchesTheTable` (tests/unit/test_params_doc.cpp) fails while the committed "
         << "page differs from what the table generates.\n\n"
         << "Only the table's parameters are here. The options that belong to one command (bodies and models, "
         << "initial conditions and cosmology, timestep, tree rebuilds, snapshots and outputs, ...) are not in the "
         << "table; `octwalk COMMAND --help` lists them. A command may also use a default of its own for a "
         << "parameter below, or take a list of values in place of one option; its `--help` shows which.\n\n"
         << "Names are the keys of run.json and of a checkpoint's parameter lines; they follow AMUSE's and "
         << "GADGET's names where those codes have the parameter. Units are N-body units, G = 1 unless `--G` "
         << "says otherwise; a unit is that of the command-line value, and `-` where the table gives none. Checks "
         << "that involve two parameters, or more than a range, are stated in the descriptions.\n\n"
         << "## Force solver\n\n"
         << "The table holds one group, the force solver's parameters (the \"Force solver\" options of "
         << "`octwalk forces --help`, `octwalk run --help`, ...).\n\n";
    summary(page);
    page << "\n";
    for (const ParameterInfo& row : parameterTable()) section(page, row);
    std::string text = page.str();
    text.pop_back(); // one newline at the end, not a blank line
    return text;
}

} // namespace octwalk
