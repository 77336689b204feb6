// libFuzzer target: the GADGET-style HDF5 snapshot reader (through the HDF5 C library, which reads only
// files). Properties: tests/fuzz/snapshot_harness.h; build and run: scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <iostream>

#include "snapshot_harness.h"

OCTWALK_LSAN_SUPPRESS_LIBHDF5_LEAKS

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    static const octwalk::fuzz::ScratchDirectory scratch("hdf5");
    try
    {
        octwalk::fuzz::snapshotInput(data, size, octwalk::SnapshotFormat::Hdf5, scratch);
    }
    catch (const octwalk::fuzz::PropertyViolation& e)
    {
        std::cerr << "property violated: " << e.what() << "\n";
        std::abort();
    }
    return 0;
}
