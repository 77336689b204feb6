#pragma once
// The command line run in-process for the application tests: octwalk::runCli with "octwalk" as argv[0], its exit
// code and what it printed to each stream.

#include <sstream>
#include <string>
#include <vector>

#include "host/cli/cli.h"

namespace octwalk::test {

struct CliResult
{
    int code;
    std::string out, err;
};

/// `octwalk args...`.
inline CliResult runOctwalk(std::vector<const char*> args)
{
    args.insert(args.begin(), "octwalk");
    std::ostringstream out, err;
    const int code = octwalk::runCli(int(args.size()), args.data(), out, err);
    return {code, out.str(), err.str()};
}

} // namespace octwalk::test
