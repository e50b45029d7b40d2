// O_DIRECT output: staging windows laid out like the file, written by the threads that fill
// them, each with an io_uring ring from a small pool.
#include "io/direct_sink.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/trace.hpp"
#include "gpusort/error.hpp"
#include "io/direct_io.hpp"
#include "io/uring.hpp"

namespace gpusort::io {
namespace {

constexpr std::size_t block = direct_io_alignment;

struct free_deleter {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};
using aligned_bytes = std::unique_ptr<std::byte, free_deleter>;

class direct_sink final : public output_sink {
 public:
  direct_sink(output_file& out, file_descriptor direct_fd, std::uint64_t total,
              std::size_t min_window, trace_recorder* trace)
      : out_(out), direct_(std::move(direct_fd)), data_(out.data_offset()), total_(total),
        trace_(trace), window_bytes_(std::max(default_window_bytes, min_window)) {
    if (total_ == 0) return;
    // Writes into preallocated blocks need no block allocation on the way to the disk.
    const int ret = ::posix_fallocate(out_.fd().get(), 0, static_cast<off_t>(data_ + total_));
    if (ret != 0 && ret != EOPNOTSUPP && ret != EINVAL)
      throw_error("cannot allocate " + std::to_string(total_) + " bytes for " + out_.target(),
                  ret);
  }

  [[nodiscard]] std::size_t max_window() const override { return window_bytes_; }

  std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) override {
    GPUSORT_EXPECTS(len <= window_bytes_, "output window larger than the staging buffer");
    GPUSORT_EXPECTS(offset + len <= total_, "output window past the end of " + out_.target());
    return {take_staging() + (data_ + offset) % block, len};
  }

  void commit(std::uint64_t offset, std::span<std::byte> window) override {
    std::byte* base = window.data() - (data_ + offset) % block;
    try {
      write(offset, window);
    } catch (...) {
      give_staging(base);
      throw;
    }
    give_staging(base);
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

  void finish() override {}
  [[nodiscard]] const char* name() const override { return "direct"; }
  [[nodiscard]] bool parallel_writes() const override { return true; }

 private:
  static constexpr std::size_t default_window_bytes = std::size_t{32} << 20;
  /// O_DIRECT requests never hit the cache: 4 MiB requests, 8 in flight per writing thread.
  static constexpr transfer_config transfer{std::size_t{4} << 20, 8, false};

  std::byte* take_staging() {
    {
      std::lock_guard lock(mutex_);
      if (!free_staging_.empty()) {
        std::byte* p = free_staging_.back();
        free_staging_.pop_back();
        return p;
      }
    }
    // One more window (as many as threads fill at once): a window laid out at the file's
    // alignment starts up to one block into its buffer.
    const std::size_t bytes = (window_bytes_ + 2 * block) / block * block;
    void* p = std::aligned_alloc(block, bytes);
    if (p == nullptr) throw out_of_memory("output staging window", bytes);
    std::lock_guard lock(mutex_);
    staging_.emplace_back(static_cast<std::byte*>(p));
    return staging_.back().get();
  }
  void give_staging(std::byte* p) {
    std::lock_guard lock(mutex_);
    free_staging_.push_back(p);
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
  std::vector<aligned_bytes> staging_;
  std::vector<std::byte*> free_staging_;
  std::vector<std::unique_ptr<uring>> rings_;
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
