// RAII handles for device resources: device_guard, device_buffer, stream, event. Each records
// the device it was created on (device()) and is destroyed with that device current, as rmm's
// device_buffer is, so that a handle may outlive a change of the current device (several GPUs
// served from one thread). Move-only; a move leaves the source empty; destructors never throw.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "gpu/cuda_check.cuh"

namespace gpusort::gpu {

/// The device of a handle that holds nothing (default-constructed or moved from).
inline constexpr int no_device = -1;

/// Makes `device` current for the calling thread and restores the previous one on exit, so
/// that library calls do not change the caller's current device behind its back.
class device_guard {
 public:
  /// @throw gpusort::cuda_error when the current device cannot be read or changed
  explicit device_guard(int device) {
    GPUSORT_CUDA_TRY(cudaGetDevice(&previous_));
    if (previous_ != device) GPUSORT_CUDA_TRY(cudaSetDevice(device));
    changed_ = previous_ != device;
  }
  /// For destructors, which must not throw: a device that cannot be made current is left as
  /// it is, and the call that follows reports the failure through its own status (ignored
  /// there: at process teardown every call returns cudaErrorCudartUnloading).
  device_guard(int device, std::nothrow_t) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return;
    }
    changed_ = previous_ != device && cudaSetDevice(device) == cudaSuccess;
    if (previous_ != device && !changed_) static_cast<void>(cudaGetLastError());
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
  device_buffer(std::size_t bytes, int device) : size_(bytes), device_(device) {
    if (bytes == 0) return;
    device_guard guard(device);
    void* p = nullptr;
    GPUSORT_CUDA_TRY_ALLOC(cudaMalloc(&p, bytes), bytes);
    data_ = static_cast<std::byte*>(p);
  }
  ~device_buffer() { release(); }
  device_buffer(device_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        device_(std::exchange(other.device_, no_device)) {}
  device_buffer& operator=(device_buffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
      device_ = std::exchange(other.device_, no_device);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// The device the memory lives on (also for 0 bytes); no_device when default-constructed
  /// or moved from.
  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  void release() noexcept {
    // cudaFree synchronizes the device that is current: with the owner current, freeing does
    // not wait for another GPU's work. During process teardown it returns
    // cudaErrorCudartUnloading, which is harmless here.
    if (data_ != nullptr) {
      device_guard guard(device_, std::nothrow);
      static_cast<void>(cudaFree(data_));
    }
    data_ = nullptr;
    size_ = 0;
    device_ = no_device;
  }
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  int device_ = no_device;
};

/// A non-blocking stream (no implicit ordering with the legacy default stream).
class stream {
 public:
  stream() = default;
  /// @throw gpusort::cuda_error
  explicit stream(int device) {
    device_guard guard(device);
    GPUSORT_CUDA_TRY(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
    device_ = device;
  }
  ~stream() { release(); }
  stream(stream&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        device_(std::exchange(other.device_, no_device)) {}
  stream& operator=(stream&& other) noexcept {
    if (this != &other) {
      release();
      handle_ = std::exchange(other.handle_, nullptr);
      device_ = std::exchange(other.device_, no_device);
    }
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  [[nodiscard]] cudaStream_t get() const noexcept { return handle_; }
  /// The device whose work the stream orders; no_device when it holds nothing.
  [[nodiscard]] int device() const noexcept { return device_; }
  /// @throw gpusort::cuda_error
  void synchronize() const { GPUSORT_CUDA_TRY(cudaStreamSynchronize(handle_)); }

 private:
  void release() noexcept {
    if (handle_ != nullptr) {
      device_guard guard(device_, std::nothrow);
      static_cast<void>(cudaStreamDestroy(handle_));
    }
    handle_ = nullptr;
    device_ = no_device;
  }
  cudaStream_t handle_ = nullptr;
  int device_ = no_device;
};

/// A CUDA event; with `timing` it can be used with cudaEventElapsedTime.
class event {
 public:
  event() = default;
  /// @throw gpusort::cuda_error
  event(int device, bool timing) {
    device_guard guard(device);
    GPUSORT_CUDA_TRY(
        cudaEventCreateWithFlags(&handle_, timing ? cudaEventDefault : cudaEventDisableTiming));
    device_ = device;
  }
  ~event() { release(); }
  event(event&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        device_(std::exchange(other.device_, no_device)) {}
  event& operator=(event&& other) noexcept {
    if (this != &other) {
      release();
      handle_ = std::exchange(other.handle_, nullptr);
      device_ = std::exchange(other.device_, no_device);
    }
    return *this;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  [[nodiscard]] cudaEvent_t get() const noexcept { return handle_; }
  [[nodiscard]] explicit operator bool() const noexcept { return handle_ != nullptr; }
  /// The device the event was created on; no_device when it holds nothing. It may only be
  /// recorded on a stream of that device (another device's stream may wait on it).
  [[nodiscard]] int device() const noexcept { return device_; }

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
    if (handle_ != nullptr) {
      device_guard guard(device_, std::nothrow);
      static_cast<void>(cudaEventDestroy(handle_));
    }
    handle_ = nullptr;
    device_ = no_device;
  }
  cudaEvent_t handle_ = nullptr;
  int device_ = no_device;
};

/// Milliseconds between two completed timing events.
/// @throw gpusort::cuda_error
inline float elapsed_ms(const event& from, const event& to) {
  float ms = 0;
  GPUSORT_CUDA_TRY(cudaEventElapsedTime(&ms, from.get(), to.get()));
  return ms;
}

}  // namespace gpusort::gpu
