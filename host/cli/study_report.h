#pragma once
/// @file study_report.h
/// What `octwalk accuracy` and `octwalk profile` share (internal to the CLI): number formatting for
/// tables, CSV and JSON, the provenance fields, the report outputs (-o, --csv, --json) and the
/// solver parameters of a study.

#include <string>

#include "host/cli/options.h"

namespace octwalk::cli {

/// A number for JSON and CSV: 9 significant digits, and null (JSON) / empty (CSV) when not finite,
/// since neither format has a spelling for inf or nan.
std::string num(double v, bool json = true);

/// A CSV field, quoted when it holds a separator or a quote (a snapshot path may).
std::string csvField(const std::string& s);

/// A fixed-width table cell.
std::string cell(const char* format, double v);

/// A header cell as wide as the numbers below it.
std::string title(int width, const char* text);

/// "quadrupole" or "monopole".
std::string multipoleName(const Parameters& p);

/// version, git and units: the first fields of every study output.
std::string provenanceJson(double G);

/// The report files of a study: -o FILE (JSON when it ends in .json, CSV when .csv) joins --csv or
/// --json; UsageError naming the option for another ending, for -o and --csv/--json naming the same
/// kind of report, for --csv and --json naming one file, and for an existing file.
/// Each is checked with checkNewOutput (it must not exist, its directory must take a new file).
void resolveReports(const std::string& output, std::string& csv, std::string& json);

/// The study's single-valued solver options as Parameters (validated); BackendError for --backend
/// gpu without a device.
/// swept: the parameters the study takes as lists (as given to solverOptions).
Parameters studyParameters(const po::variables_map& vm, const std::vector<std::string>& swept);

/// The help of a study's -o option.
extern const char* const kReportOutputHelp;

} // namespace octwalk::cli
