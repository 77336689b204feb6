#pragma once
/// @file lists.h
/// The command line's list options (`--theta 0.2:0.8:0.1`, `--n 2^15:2^24`, `--mac bonsai,octgrav`).
/// Each parser is strict (no empty items, no trailing characters) and throws ParameterError naming
/// the option and the offending text.

#include <cstdint>
#include <string>
#include <vector>

namespace octwalk::cli {

/// Opening angles: a list "0.2,0.3,0.5" or an inclusive range "start:stop:step" ("0.2:0.8:0.1").
/// Every value must lie in (0, 1]. Range values are rounded to 12 significant digits so
/// "0.2:0.8:0.1" gives exactly 0.3, not 0.30000000000000004.
std::vector<double> parseThetaList(const std::string& option, const std::string& text);

/// Positive integers as a list "8,16,32"; each >= minValue.
std::vector<int> parseIntList(const std::string& option, const std::string& text, int minValue);

/// Body counts: a list of integers or powers "2^k" ("1000,2^12"), or a power-of-two range
/// "2^15:2^24" (every power of two from the first bound to the second, both powers of two).
/// Each >= minValue.
std::vector<int64_t> parseCountList(const std::string& option, const std::string& text, int64_t minValue);

/// Names from a fixed set, as a list "bonsai,octgrav".
std::vector<std::string> parseNameList(const std::string& option, const std::string& text,
                                       const std::vector<std::string>& allowed);

} // namespace octwalk::cli
