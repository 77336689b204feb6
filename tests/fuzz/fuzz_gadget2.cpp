// libFuzzer target: the GADGET-2 snapshot reader (format 1 and 2: reading as Gadget2 reads both).
// Properties: tests/fuzz/snapshot_harness.h; build and run: scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <iostream>

#include "snapshot_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const octwalk::fuzz::ScratchDirectory scratch("gadget2");
    try
    {
        octwalk::fuzz::snapshotInput(data, size, octwalk::SnapshotFormat::Gadget2, scratch);
    }
    catch (const octwalk::fuzz::PropertyViolation& e)
    {
        std::cerr << "property violated: " << e.what() << "\n";
        std::abort();
    }
    return 0;
}
