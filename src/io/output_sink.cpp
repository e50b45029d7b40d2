// Output sinks: a mapped preallocated file filled by parallel stores, and io_uring writes from
// staging buffers by a writer thread.
#include "io/output_sink.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tbb/parallel_for.h>

#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/parallel_copy.hpp"
#include "core/trace.hpp"
#include "gpusort/error.hpp"
#include "io/uring.hpp"

namespace gpusort::io {
namespace {

const std::uint64_t page_size = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));

/// Preallocates and maps windows of the output. Each window is mapped with MAP_POPULATE by the
/// thread that fills it, so page-table population runs in parallel too.
class mapped_sink final : public output_sink {
 public:
  mapped_sink(output_file& out, std::uint64_t total, bool persistent, trace_recorder* trace)
      : out_(out), total_(total), trace_(trace) {
    if (total_ == 0) return;
    trace_recorder::scope timer(trace_, "write");
    const int ret = ::posix_fallocate(out_.fd().get(), 0, static_cast<off_t>(total_));
    if (ret != 0) throw_error("cannot allocate " + std::to_string(total_) + " bytes for " +
                                  out_.target(), ret);
    if (persistent) {
      void* p = ::mmap(nullptr, static_cast<std::size_t>(total_), PROT_READ | PROT_WRITE,
                       MAP_SHARED, out_.fd().get(), 0);
      if (p == MAP_FAILED) throw_error("mmap " + out_.target(), errno);
      whole_ = static_cast<std::byte*>(p);
    }
  }

  ~mapped_sink() override {
    if (whole_ != nullptr) ::munmap(whole_, static_cast<std::size_t>(total_));
  }
  mapped_sink(const mapped_sink&) = delete;
  mapped_sink& operator=(const mapped_sink&) = delete;

  [[nodiscard]] std::size_t max_window() const override { return std::size_t{64} << 20; }

  std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) override {
    GPUSORT_EXPECTS(offset + len <= total_, "output window past the end of " + out_.target());
    if (len == 0) return {};
    if (whole_ != nullptr) return {whole_ + offset, len};
    trace_recorder::scope timer(trace_, "write", len);
    const std::uint64_t base = offset / page_size * page_size;
    const std::size_t map_len = static_cast<std::size_t>(offset + len - base);
    void* p = ::mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                     out_.fd().get(), static_cast<off_t>(base));
    if (p == MAP_FAILED) throw_error("mmap " + out_.target(), errno);
    return {static_cast<std::byte*>(p) + (offset - base), len};
  }

  void commit(std::uint64_t offset, std::span<std::byte> window) override {
    if (window.empty() || whole_ != nullptr) return;
    trace_recorder::scope timer(trace_, "write");
    const std::uint64_t base = offset / page_size * page_size;
    std::byte* p = window.data() - (offset - base);
    if (::munmap(p, static_cast<std::size_t>(offset + window.size() - base)) != 0)
      throw_error("munmap " + out_.target(), errno);
  }

  void write(std::uint64_t offset, std::span<const std::byte> data) override {
    // Small windows so that even one staging piece is mapped and copied by every thread.
    const std::size_t window = write_window;
    const std::size_t pieces = (data.size() + window - 1) / window;
    tbb::parallel_for(std::size_t{0}, pieces, [&](std::size_t i) {
      const std::size_t begin = i * window;
      const std::size_t len = std::min(window, data.size() - begin);
      std::span<std::byte> dst = acquire(offset + begin, len);
      {
        trace_recorder::scope timer(trace_, "write");
        std::memcpy(dst.data(), data.data() + begin, len);
      }
      commit(offset + begin, dst);
    });
  }

  void finish() override {}
  [[nodiscard]] const char* name() const override { return "mmap"; }

 private:
  static constexpr std::size_t write_window = std::size_t{4} << 20;
  output_file& out_;
  std::uint64_t total_;
  trace_recorder* trace_;
  std::byte* whole_ = nullptr;  // persistent: the whole output, mapped once
};

/// Staging buffers written by a writer thread with io_uring; the only sink for pipes.
class uring_sink final : public output_sink {
 public:
  uring_sink(output_file& out, std::uint64_t total, trace_recorder* trace)
      : out_(out), total_(total), trace_(trace) {
    if (!out_.is_stream() && total_ > 0) {
      // Preallocation makes buffered writes faster (no block allocation on the write path);
      // a filesystem without it still works.
      const int ret = ::posix_fallocate(out_.fd().get(), 0, static_cast<off_t>(total_));
      if (ret != 0 && ret != EOPNOTSUPP && ret != EINVAL)
        throw_error("cannot allocate " + std::to_string(total_) + " bytes for " + out_.target(),
                    ret);
    }
    for (std::size_t i = 0; i < buffer_count; ++i) {
      void* p = std::aligned_alloc(4096, window_bytes);
      if (p == nullptr) throw out_of_memory("output staging buffer", window_bytes);
      buffers_.push_back(static_cast<std::byte*>(p));
      free_.push_back(static_cast<std::byte*>(p));
    }
    writer_ = std::thread([this] { run_writer(); });
  }

  ~uring_sink() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    writer_.join();
    for (std::byte* p : buffers_) std::free(p);
  }

  [[nodiscard]] std::size_t max_window() const override { return window_bytes; }

  std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) override {
    GPUSORT_EXPECTS(len <= window_bytes, "output window larger than the staging buffer");
    (void)offset;
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !free_.empty() || error_; });
    rethrow_locked();
    std::byte* p = free_.back();
    free_.pop_back();
    return {p, len};
  }

  void commit(std::uint64_t offset, std::span<std::byte> window) override {
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(job{offset, window, true});
    }
    cv_.notify_all();
  }

  void write(std::uint64_t offset, std::span<const std::byte> data) override {
    // Written from the caller's memory by the writer thread, in order with earlier commits.
    {
      std::lock_guard lock(mutex_);
      jobs_.push_back(job{offset, {const_cast<std::byte*>(data.data()), data.size()}, false});
    }
    cv_.notify_all();
    wait_idle();
  }

  void finish() override { wait_idle(); }
  [[nodiscard]] const char* name() const override { return "uring"; }

 private:
  static constexpr std::size_t buffer_count = 3;
  static constexpr std::size_t window_bytes = std::size_t{32} << 20;

  struct job {
    std::uint64_t offset;
    std::span<std::byte> data;
    bool staged;  // return the buffer to the pool afterwards
  };

  void wait_idle() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return (jobs_.empty() && !busy_) || error_; });
    rethrow_locked();
  }

  void rethrow_locked() {
    if (error_) std::rethrow_exception(error_);
  }

  void run_writer() {
    uring ring(32);
    for (;;) {
      job j{};
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
        if (jobs_.empty()) return;
        j = jobs_.front();
        jobs_.pop_front();
        busy_ = true;
      }
      try {
        trace_recorder::scope timer(trace_, "write", j.data.size());
        if (!error_) {
          if (out_.is_stream()) {
            GPUSORT_EXPECTS(j.offset == stream_pos_, "out-of-order write to " + out_.target());
            ring.write_stream(out_.fd(), j.data);
            stream_pos_ += j.data.size();
          } else {
            ring.write_exact(out_.fd(), j.offset, j.data);
          }
        }
      } catch (...) {
        std::lock_guard lock(mutex_);
        error_ = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        if (j.staged) free_.push_back(j.data.data());
        busy_ = false;
      }
      cv_.notify_all();
    }
  }

  output_file& out_;
  std::uint64_t total_;
  trace_recorder* trace_;
  std::uint64_t stream_pos_ = 0;
  std::vector<std::byte*> buffers_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::byte*> free_;
  std::deque<job> jobs_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread writer_;
};

bool fallocate_works(const output_file& out) {
  // A zero-length probe tells whether the filesystem supports preallocation at all.
  const int ret = ::fallocate(out.fd().get(), FALLOC_FL_KEEP_SIZE, 0, 1);
  return ret == 0;
}

}  // namespace

write_method parse_write_method(std::string_view name) {
  if (name == "auto") return write_method::automatic;
  if (name == "mmap") return write_method::mmap;
  if (name == "uring") return write_method::uring;
  throw_error("unknown write method '" + std::string(name) + "' (expected auto, mmap or uring)");
}

std::unique_ptr<output_sink> make_output_sink(output_file& out, std::uint64_t total_bytes,
                                              write_method method, trace_recorder* trace,
                                              bool persistent_mapping) {
  if (method == write_method::automatic)
    method = (!out.is_stream() && fallocate_works(out)) ? write_method::mmap : write_method::uring;
  if (method == write_method::mmap) {
    GPUSORT_EXPECTS(!out.is_stream(), "cannot map " + out.target() + ": it is not a regular file");
    return std::make_unique<mapped_sink>(out, total_bytes, persistent_mapping, trace);
  }
  return std::make_unique<uring_sink>(out, total_bytes, trace);
}

}  // namespace gpusort::io
