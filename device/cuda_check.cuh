#pragma once
/// @file cuda_check.cuh
/// CUDA error checking that throws BackendError (library code never exits). Include from .cu files only.

#include <cuda_runtime.h>

#include <string>

#include "common/errors.h"

namespace octwalk::detail {

[[noreturn]] inline void throwCudaError(cudaError_t err, const char* expr, const char* file, int line)
{
    // Non-sticky errors stay recorded as the "last error"; clearing it keeps a later, unrelated
    // check from reporting this failure a second time.
    cudaGetLastError();
    throw BackendError(std::string("CUDA error ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") in `" +
                       expr + "` at " + file + ":" + std::to_string(line));
}

inline void cudaCheck(cudaError_t err, const char* expr, const char* file, int line)
{
    if (err != cudaSuccess) throwCudaError(err, expr, file, line);
}

} // namespace octwalk::detail

/// Throws octwalk::BackendError naming the failed expression, file and line.
#define CUDA_CHECK(expr) ::octwalk::detail::cudaCheck((expr), #expr, __FILE__, __LINE__)

/// After every kernel launch: reports a bad launch configuration (asynchronous faults surface at
/// the next synchronising CUDA_CHECK).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
