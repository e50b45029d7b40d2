// A pool of equal buffers handed out by one thread and returned by others; the storage is
// owned elsewhere (pinned staging on the GPU path, plain vectors in tests).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

#include "io/parallel_reader.hpp"

namespace gpusort::io {

class buffer_pool : public piece_buffers {
 public:
  /// Makes `buffer` available; call before any acquire().
  void add(std::byte* buffer) {
    std::lock_guard lock(mutex_);
    free_.push_back(buffer);
  }
  /// Waits for a free buffer; nullptr once closed.
  std::byte* acquire() override {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !free_.empty() || closed_; });
    if (closed_) return nullptr;
    return take_locked();
  }
  /// A free buffer, or nullptr when none is free now.
  std::byte* try_acquire() {
    std::lock_guard lock(mutex_);
    return free_.empty() ? nullptr : take_locked();
  }
  void release(std::byte* buffer) override {
    {
      std::lock_guard lock(mutex_);
      free_.push_back(buffer);
    }
    cv_.notify_all();
  }
  void close() override {
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
    }
    cv_.notify_all();
  }
  /// Hands buffers out again after close() (a reader closes its pool as it ends), for a
  /// next use of the same buffers once every one is back.
  void reopen() {
    std::lock_guard lock(mutex_);
    closed_ = false;
  }
  [[nodiscard]] std::size_t free_count() {
    std::lock_guard lock(mutex_);
    return free_.size();
  }

 private:
  std::byte* take_locked() {
    std::byte* p = free_.back();
    free_.pop_back();
    return p;
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::byte*> free_;
  bool closed_ = false;
};

}  // namespace gpusort::io
