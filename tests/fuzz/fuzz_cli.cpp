// libFuzzer target: the octwalk command line (octwalk::runCli), in a sandbox directory, with every
// computation kept tiny. Rules and properties: tests/fuzz/cli_harness.h; build and run: scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <iostream>

#include "cli_harness.h"

OCTWALK_LSAN_SUPPRESS_LIBHDF5_LEAKS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static octwalk::fuzz::CliSandbox sandbox;
    try
    {
        sandbox.run(data, size);
    }
    catch (const octwalk::fuzz::PropertyViolation& e)
    {
        std::cerr << "property violated: " << e.what() << "\n";
        std::abort();
    }
    return 0;
}
