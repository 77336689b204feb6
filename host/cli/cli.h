#pragma once
/// @file cli.h
/// The octwalk command line: `octwalk <command> [options]`. Every library error becomes one line
/// on err and a non-zero return; nothing is computed or written before all options are checked.

#include <iosfwd>

namespace octwalk {

/// Runs the command line; returns the process exit code (0 ok, 1 runtime error, 2 usage error).
int runCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

} // namespace octwalk
