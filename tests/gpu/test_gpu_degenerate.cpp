// Degenerate input on the GPU backend: the matrix of tests/degenerate_cases.h, the same cases and the
// same checks against double-precision direct summation as the CPU run in tests/test_degenerate.cpp.
// Every test skips without a GPU, unless OCTWALK_REQUIRE_GPU=1 makes that a failure (GPU CI).
//
// Running out of device memory is not provoked here: the only sizes the public API lets a test choose
// are backed by host arrays of the same size, so a failing cudaMalloc would need the H200's 141 GB to be
// filled first. device/device_buffer.cuh names the buffer and the bytes in its BackendError instead.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "unit/degenerate_cases.h"
#include "device/gpu_solver.h"

namespace octwalk {
namespace {

class GpuDegenerate : public ::testing::TestWithParam<degenerate::Case>
{
protected:
    void SetUp() override
    {
        if (gpuAvailable()) return;
        const char* require = std::getenv("OCTWALK_REQUIRE_GPU");
        if (require && std::string(require) == "1") FAIL() << "no GPU but OCTWALK_REQUIRE_GPU=1";
        GTEST_SKIP() << "no CUDA device (" << gpuDescription() << ")";
    }
};

TEST_P(GpuDegenerate, GpuTreeMatchesDirectOrNamesTheProblem) { degenerate::run(GetParam(), Backend::Gpu); }

INSTANTIATE_TEST_SUITE_P(Matrix, GpuDegenerate, ::testing::ValuesIn(degenerate::cases()), degenerate::caseName);

} // namespace
} // namespace octwalk
