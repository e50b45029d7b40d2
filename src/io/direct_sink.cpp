// O_DIRECT output: staging windows laid out like the file. Windows filled in place go to a
// writer thread that keeps many requests in flight across them, so that the producers (the
// merge) never wait for the disk; writes from the caller's memory go out at once.
#include "io/direct_sink.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/trace.hpp"
#include "gpusort/error.hpp"
#include "io/allocate_space.hpp"
#include "io/direct_io.hpp"
#include "io/uring.hpp"

namespace gpusort::io {
namespace {

constexpr std::size_t block = direct_io_alignment;


class direct_sink final : public output_sink {
 public:
  direct_sink(output_file& out, file_descriptor direct_fd, std::uint64_t total,
              std::size_t min_window, trace_recorder* trace)
      : out_(out), direct_(std::move(direct_fd)), data_(out.data_offset()), total_(total),
        trace_(trace), window_bytes_(std::max(default_window_bytes, min_window)) {
    if (total_ == 0) return;
    // Writes into preallocated blocks need no block allocation on the way to the disk.
    const int ret = allocate_file(out_.fd().get(), data_ + total_);
    if (ret != 0 && ret != EOPNOTSUPP && ret != EINVAL)
      throw_error("cannot allocate " + std::to_string(total_) + " bytes for " + out_.target(),
                  ret);
    writer_ = std::thread([this] { run_writer(); });
  }

  ~direct_sink() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (writer_.joinable()) writer_.join();
  }
  direct_sink(const direct_sink&) = delete;
  direct_sink& operator=(const direct_sink&) = delete;

  [[nodiscard]] std::size_t max_window() const override { return window_bytes_; }

  std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) override {
    GPUSORT_EXPECTS(len <= window_bytes_, "output window larger than the staging buffer");
    GPUSORT_EXPECTS(offset + len <= total_, "output window past the end of " + out_.target());
    return {take_staging() + (data_ + offset) % block, len};
  }

  void commit(std::uint64_t offset, std::span<std::byte> window) override {
    if (window.empty()) {
      give_staging(window.data() - (data_ + offset) % block);
      return;
    }
    {
      std::lock_guard lock(mutex_);
      if (error_) {
        free_staging_.push_back(window.data() - (data_ + offset) % block);
        std::rethrow_exception(error_);
      }
      jobs_.push_back({offset, window});
    }
    cv_.notify_all();
  }

  void write(std::uint64_t offset, std::span<const std::byte> data) override {
    GPUSORT_EXPECTS(offset + data.size() <= total_, "write past the end of " + out_.target());
    if (data.empty()) return;
    trace_recorder::scope timer(trace_, "write", data.size());
    std::unique_ptr<uring> ring = take_ring();
    try {
      write_range({out_.fd(), &direct_}, data_ + offset, data, *ring, transfer);
    } catch (...) {
      give_ring(std::move(ring));
      throw;
    }
    give_ring(std::move(ring));
  }

  void finish() override {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return (jobs_.empty() && !busy_) || error_; });
    if (error_) std::rethrow_exception(error_);
  }

  [[nodiscard]] const char* name() const override { return "direct"; }
  [[nodiscard]] bool parallel_writes() const override { return true; }

 private:
  static constexpr std::size_t default_window_bytes = std::size_t{32} << 20;
  /// Staging windows at most (filled, queued or being written): 256 MiB beside the budget.
  static constexpr std::size_t max_windows = 8;
  /// O_DIRECT requests never hit the cache: 4 MiB requests, 8 in flight per writing thread,
  /// 32 for the writer thread's batches.
  static constexpr transfer_config transfer{std::size_t{4} << 20, 8, false};
  static constexpr transfer_config batch_transfer{std::size_t{4} << 20, 32, false};

  struct job {
    std::uint64_t offset;
    std::span<std::byte> window;
  };

  /// Writes every queued window in one batch, then gives their staging back.
  void run_writer() {
    uring ring(batch_transfer.queue_depth);
    std::vector<io_segment> segments;
    for (;;) {
      std::vector<job> batch;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
        if (jobs_.empty()) return;
        batch.assign(jobs_.begin(), jobs_.end());
        jobs_.clear();
        busy_ = true;
      }
      std::exception_ptr failed;
      try {
        std::uint64_t bytes = 0;
        segments.clear();
        for (const job& j : batch) {
          append_range({out_.fd(), &direct_}, data_ + j.offset, j.window, segments);
          bytes += j.window.size();
        }
        trace_recorder::scope timer(trace_, "write", bytes);
        ring.write_batch(segments, batch_transfer);
      } catch (...) {
        failed = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        for (const job& j : batch)
          free_staging_.push_back(j.window.data() - (data_ + j.offset) % block);
        if (failed && !error_) error_ = failed;
        busy_ = false;
      }
      cv_.notify_all();
    }
  }

  std::byte* take_staging() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock,
             [&] { return !free_staging_.empty() || staging_.size() < max_windows || error_; });
    if (error_) std::rethrow_exception(error_);
    if (!free_staging_.empty()) {
      std::byte* p = free_staging_.back();
      free_staging_.pop_back();
      return p;
    }
    // One more window: a window laid out at the file's alignment starts up to one block into
    // its buffer.
    staging_.push_back(allocate_aligned(window_bytes_ + 2 * block, "output staging window"));
    return staging_.back().get();
  }
  void give_staging(std::byte* p) {
    {
      std::lock_guard lock(mutex_);
      free_staging_.push_back(p);
    }
    cv_.notify_all();
  }

  std::unique_ptr<uring> take_ring() {
    {
      std::lock_guard lock(mutex_);
      if (!rings_.empty()) {
        std::unique_ptr<uring> r = std::move(rings_.back());
        rings_.pop_back();
        return r;
      }
    }
    return std::make_unique<uring>(transfer.queue_depth);
  }
  void give_ring(std::unique_ptr<uring> r) {
    std::lock_guard lock(mutex_);
    rings_.push_back(std::move(r));
  }

  output_file& out_;
  file_descriptor direct_;
  std::uint64_t data_;  // where the records start in the file (after a header)
  std::uint64_t total_;
  trace_recorder* trace_;
  std::size_t window_bytes_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<aligned_bytes> staging_;
  std::vector<std::byte*> free_staging_;
  std::deque<job> jobs_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::vector<std::unique_ptr<uring>> rings_;
  std::thread writer_;  // last: joined before the members it uses go away
};

}  // namespace

std::unique_ptr<output_sink> make_direct_sink(output_file& out, std::uint64_t total_bytes,
                                              std::size_t min_window, trace_recorder* trace) {
  GPUSORT_EXPECTS(out.is_private_file(),
                  "O_DIRECT output only into a temporary file of ours: " + out.target());
  std::optional<file_descriptor> direct = reopen_direct(out.fd(), O_WRONLY);
  if (!direct) return nullptr;
  return std::make_unique<direct_sink>(out, std::move(*direct), total_bytes, min_window, trace);
}

}  // namespace gpusort::io
