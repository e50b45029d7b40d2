// Checked CUDA calls: every runtime call goes through a macro that throws gpusort::cuda_error
// (or gpusort::out_of_memory for allocations) with the call, file:line, error name and string.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gpusort/error.hpp"

namespace gpusort::gpu::detail {

/// Throws gpusort::cuda_error: "<call>: <file>:<line>: <cudaErrorName>: <description>".
/// Clears the runtime's sticky last error first so that later calls do not report it again.
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);

/// Throws gpusort::out_of_memory for cudaErrorMemoryAllocation, else as throw_cuda_error.
[[noreturn]] void throw_cuda_alloc_error(cudaError_t status, const char* call, const char* file,
                                         int line, std::uint64_t bytes);

}  // namespace gpusort::gpu::detail

/// Runs a CUDA runtime call (or anything returning cudaError_t, e.g. CUB) and throws on failure.
#define GPUSORT_CUDA_TRY(call)                                                           \
  do {                                                                                   \
    const cudaError_t gpusort_status_ = (call);                                          \
    if (gpusort_status_ != cudaSuccess) [[unlikely]]                                     \
      ::gpusort::gpu::detail::throw_cuda_error(gpusort_status_, #call, __FILE__, __LINE__); \
  } while (0)

/// As GPUSORT_CUDA_TRY, for an allocation of `bytes`: out of memory throws gpusort::out_of_memory.
#define GPUSORT_CUDA_TRY_ALLOC(call, bytes)                                                   \
  do {                                                                                        \
    const cudaError_t gpusort_status_ = (call);                                               \
    if (gpusort_status_ != cudaSuccess) [[unlikely]]                                          \
      ::gpusort::gpu::detail::throw_cuda_alloc_error(gpusort_status_, #call, __FILE__, __LINE__, \
                                                     (bytes));                                \
  } while (0)

/// Checks that the last kernel launch was accepted (launch configuration, missing image).
#define GPUSORT_CUDA_CHECK_LAUNCH() GPUSORT_CUDA_TRY(cudaGetLastError())
