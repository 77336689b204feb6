#pragma once
// What every GPU test file shares: the skip without a device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "device/gpu_solver.h"

namespace octwalk {

/// Skips the calling test without a CUDA device, unless OCTWALK_REQUIRE_GPU=1 makes that a failure (set it where a
/// GPU is meant to be present, so that a missing one cannot pass as skipped tests). Call from SetUp or the test body.
inline void requireGpu()
{
    if (gpuAvailable()) return;
    const char* require = std::getenv("OCTWALK_REQUIRE_GPU");
    if (require && std::string(require) == "1") FAIL() << "no GPU but OCTWALK_REQUIRE_GPU=1";
    GTEST_SKIP() << "no CUDA device (" << gpuDescription() << ")";
}

} // namespace octwalk
