// libFuzzer target: the TIPSY snapshot reader (all three variants: byte order from ndim, Bonsai ids
// from the header). Properties: tests/fuzz/snapshot_harness.h; build and run: scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <iostream>

#include "snapshot_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const octwalk::fuzz::ScratchDirectory scratch("tipsy");
    try
    {
        octwalk::fuzz::snapshotInput(data, size, octwalk::SnapshotFormat::TipsyStandard, scratch);
    }
    catch (const octwalk::fuzz::PropertyViolation& e)
    {
        std::cerr << "property violated: " << e.what() << "\n";
        std::abort();
    }
    return 0;
}
