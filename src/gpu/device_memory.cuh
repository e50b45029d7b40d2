// RAII handles for device resources: device_guard, device_buffer, stream, event. Move-only;
// a move leaves the source empty; destructors never throw.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "gpu/cuda_check.cuh"

namespace gpusort::gpu {

/// Makes `device` current for the calling thread and restores the previous one on exit, so
/// that library calls do not change the caller's current device behind its back.
class device_guard {
 public:
  explicit device_guard(int device) {
    GPUSORT_CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ != device) GPUSORT_CUDA_TRY(cudaSetDevice(device));
    changed_ = previous_ != device;
  }
  ~device_guard() {
    if (changed_) static_cast<void>(cudaSetDevice(previous_));
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

/// Uninitialized device memory on one device (cudaMalloc: 256-byte aligned).
class device_buffer {
 public:
  device_buffer() = default;
  /// @throw gpusort::out_of_memory when the device cannot hold `bytes`, gpusort::cuda_error
  device_buffer(std::size_t bytes, int device) : size_(bytes) {
    if (bytes == 0) return;
    device_guard guard(device);
    void* p = nullptr;
    GPUSORT_CUDA_TRY_ALLOC(cudaMalloc(&p, bytes), bytes);
    data_ = static_cast<std::byte*>(p);
  }
  ~device_buffer() { release(); }
  device_buffer(device_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

 private:
  void release() noexcept {
    // cudaFree needs no current device (unified addressing); during process teardown it
    // returns cudaErrorCudartUnloading, which is harmless here.
    if (data_ != nullptr) static_cast<void>(cudaFree(data_));
    data_ = nullptr;
    size_ = 0;
  }
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

/// A non-blocking stream (no implicit ordering with the legacy default stream).
class stream {
 public:
  stream() = default;
  explicit stream(int device) {
    device_guard guard(device);
    GPUSORT_CUDA_TRY(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
  }
  ~stream() { release(); }
  stream(stream&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  stream& operator=(stream&& other) noexcept {
    if (this != &other) {
      release();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  [[nodiscard]] cudaStream_t get() const noexcept { return handle_; }
  /// @throw gpusort::cuda_error
  void synchronize() const { GPUSORT_CUDA_TRY(cudaStreamSynchronize(handle_)); }

 private:
  void release() noexcept {
    if (handle_ != nullptr) static_cast<void>(cudaStreamDestroy(handle_));
    handle_ = nullptr;
  }
  cudaStream_t handle_ = nullptr;
};

/// A CUDA event; with `timing` it can be used with cudaEventElapsedTime.
class event {
 public:
  event() = default;
  event(int device, bool timing) {
    device_guard guard(device);
    GPUSORT_CUDA_TRY(
        cudaEventCreateWithFlags(&handle_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~event() { release(); }
  event(event&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  event& operator=(event&& other) noexcept {
    if (this != &other) {
      release();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  [[nodiscard]] cudaEvent_t get() const noexcept { return handle_; }
  [[nodiscard]] explicit operator bool() const noexcept { return handle_ != nullptr; }

  /// @throw gpusort::cuda_error
  void record(cudaStream_t s) const { GPUSORT_CUDA_TRY(cudaEventRecord(handle_, s)); }
  /// True once all work captured by the last record() has completed.
  /// @throw gpusort::cuda_error for any status other than done / not ready
  [[nodiscard]] bool query() const {
    const cudaError_t status = cudaEventQuery(handle_);
    if (status == cudaErrorNotReady) return false;
    GPUSORT_CUDA_TRY(status);
    return true;
  }
  /// @throw gpusort::cuda_error
  void synchronize() const { GPUSORT_CUDA_TRY(cudaEventSynchronize(handle_)); }

 private:
  void release() noexcept {
    if (handle_ != nullptr) static_cast<void>(cudaEventDestroy(handle_));
    handle_ = nullptr;
  }
  cudaEvent_t handle_ = nullptr;
};

/// Milliseconds between two completed timing events.
/// @throw gpusort::cuda_error
inline float elapsed_ms(const event& from, const event& to) {
  float ms = 0;
  GPUSORT_CUDA_TRY(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return ms;
}

}  // namespace gpusort::gpu
