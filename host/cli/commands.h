#pragma once
/// @file commands.h
/// The octwalk subcommands, one file each (internal to the CLI; cli.cpp dispatches to them). Each
/// returns the process exit code and throws UsageError / ParameterError / the library's errors.

#include <iosfwd>

namespace octwalk::cli {

int runCommand(int argc, const char* const* argv, std::ostream& out);      ///< cmd_run.cpp
int icCommand(int argc, const char* const* argv, std::ostream& out);       ///< cmd_ic.cpp
int convertCommand(int argc, const char* const* argv, std::ostream& out);  ///< cmd_convert.cpp
int forcesCommand(int argc, const char* const* argv, std::ostream& out);   ///< cmd_forces.cpp
int accuracyCommand(int argc, const char* const* argv, std::ostream& out); ///< cmd_accuracy.cpp
int profileCommand(int argc, const char* const* argv, std::ostream& out);  ///< cmd_profile.cpp
int powerCommand(int argc, const char* const* argv, std::ostream& out);    ///< cmd_power.cpp
int hermiteCommand(int argc, const char* const* argv, std::ostream& out);  ///< cmd_hermite.cpp

} // namespace octwalk::cli
