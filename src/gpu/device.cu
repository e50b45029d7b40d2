// Device discovery, format support, checked-call error messages and page-locked host memory.

#include <cstring>
#include <string>


#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.cuh"
#include "gpu/run_former.hpp"
#include "gpu/topology.hpp"
#include "gpusort/detail/key_codec.hpp"

namespace gpusort::gpu {
namespace detail {
namespace {

std::string cuda_message(cudaError_t status, const char* call, const char* file, int line) {
  return std::string(call) + ": " + file + ":" + std::to_string(line) + ": " +
         cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  // Reset the non-sticky last error so that a later, unrelated check does not see it again.
  static_cast<void>(cudaGetLastError());
  throw cuda_error(cuda_message(status, call, file, line));
}

void throw_cuda_alloc_error(cudaError_t status, const char* call, const char* file, int line,
                            std::uint64_t bytes) {
  static_cast<void>(cudaGetLastError());
  if (status == cudaErrorMemoryAllocation)
    throw out_of_memory(cuda_message(status, call, file, line) + " (" + std::to_string(bytes) +
                            " bytes)",
                        bytes);
  throw cuda_error(cuda_message(status, call, file, line));
}

}  // namespace detail

int device_count() noexcept {
  int count = 0;
  // Without a driver or device this reports cudaErrorNoDevice / cudaErrorInsufficientDriver;
  // clear it so that it does not surface in a later check.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return 0;
  }
  return count;
}

device_info query_device(int device) {
  device_guard guard(device);
  cudaDeviceProp props{};
  GPUSORT_CUDA_TRY(cudaGetDeviceProperties(&props, device));
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  GPUSORT_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  device_info info;
  info.id = device;
  info.name = props.name;
  info.free_bytes = free_bytes;
  info.total_bytes = total_bytes;
  return info;
}

device_info describe_device(int device) {
  cudaDeviceProp props{};
  GPUSORT_CUDA_TRY(cudaGetDeviceProperties(&props, device));
  device_info info;
  info.id = device;
  info.name = props.name;
  info.free_bytes = props.totalGlobalMem;
  info.total_bytes = props.totalGlobalMem;
  return info;
}

bool supports_format(const record_format& format) noexcept {
  if (format.type == key_type::bytes) return false;
  const std::uint32_t expected = gpusort::detail::has_32bit_word(format.type) ? 4 : 8;
  if (format.key_size != expected) return false;
  if (format.record_size < format.key_size) return false;
  if (format.key_offset > format.record_size - format.key_size) return false;
  return format.record_size <= format.key_size + 8;
}

// --- pinned_buffer -------------------------------------------------------------------------

std::shared_ptr<void> register_host_memory(std::span<std::byte> memory, int device) {
  if (memory.empty()) return {};
  device_guard guard(device);
  // Portable: page-locked for every device, so another GPU can use the same buffer.
  GPUSORT_CUDA_TRY_ALLOC(cudaHostRegister(memory.data(), memory.size(), cudaHostRegisterPortable),
                         memory.size());
  // Errors on unregistering (cudaErrorCudartUnloading at exit) are ignored: the mapping goes
  // anyway.
  return {memory.data(), [](void* p) { static_cast<void>(cudaHostUnregister(p)); }};
}

pinned_buffer::pinned_buffer(std::size_t bytes, int device)
    : memory_(bytes, /*prefault=*/true, device_numa_node(device)) {
  // Touched in parallel first: registering untouched memory faults every page in one thread
  // inside the driver (4.3 s for 8 GiB on the H200 machine against 0.36 s + 0.32 s this way).
  // On the GPU's own NUMA node: copies from the other socket cross the inter-socket link.
  registration_ = register_host_memory(memory_.span(), device);
}

pinned_buffer::~pinned_buffer() = default;
pinned_buffer::pinned_buffer(pinned_buffer&& other) noexcept = default;
pinned_buffer& pinned_buffer::operator=(pinned_buffer&& other) noexcept {
  if (this != &other) {
    registration_.reset();  // unregistered before the memory it covers goes
    memory_ = std::move(other.memory_);
    registration_ = std::move(other.registration_);
  }
  return *this;
}

}  // namespace gpusort::gpu
