// Output sinks: a mapped preallocated file filled by parallel stores, and io_uring writes from
// staging buffers by a writer thread.
#include "io/output_sink.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "core/ordered_worker.hpp"
#include "core/parallel_copy.hpp"
#include "core/trace.hpp"
#include "gpusort/error.hpp"
#include "io/allocate_space.hpp"
#include "io/direct_sink.hpp"
#include "io/uring.hpp"

namespace gpusort::io {
namespace {

const std::uint64_t page_size = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));

/// Preallocates the output and maps it: a window per write, mapped with MAP_POPULATE by the
/// thread that fills it (so page-table population runs in parallel too), or the whole file
/// once (persistent), whose pages background threads can fault in ahead of the writes.
class mapped_sink final : public output_sink {
 public:
  mapped_sink(output_file& out, std::uint64_t total, bool persistent, trace_recorder* trace)
      : out_(out), data_(out.data_offset()), total_(total), trace_(trace) {
    if (total_ == 0) return;
    trace_recorder::scope timer(trace_, "write");
    // The records start after the header (commit() writes it): the file holds both.
    const int ret = allocate_file(out_.fd().get(), data_ + total_);
    if (ret != 0) throw_error("cannot allocate " + std::to_string(data_ + total_) +
                                  " bytes for " + out_.target(), ret);
    if (persistent) {
      // Mapped from offset 0, as mappings start on a page; whole_ skips the header.
      void* p = ::mmap(nullptr, static_cast<std::size_t>(data_ + total_), PROT_READ | PROT_WRITE,
                       MAP_SHARED, out_.fd().get(), 0);
      if (p == MAP_FAILED) throw_error("mmap " + out_.target(), errno);
      map_ = static_cast<std::byte*>(p);
      whole_ = map_ + data_;
    }
  }

  ~mapped_sink() override {
    stop_prefault();
    if (map_ == nullptr) return;
    // Tearing down 8 GiB of page tables takes 0.21-0.3 s on the H200 machine; slicing it into
    // parallel MADV_DONTNEED calls, or leaving it to exit, measured no faster.
    try {
      trace_recorder::scope timer(trace_, "unmap");
      ::munmap(map_, static_cast<std::size_t>(data_ + total_));
    } catch (...) {  // the trace failed to record; the mapping is gone all the same
    }
  }
  mapped_sink(const mapped_sink&) = delete;
  mapped_sink& operator=(const mapped_sink&) = delete;

  [[nodiscard]] std::size_t max_window() const override { return std::size_t{64} << 20; }

  std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) override {
    GPUSORT_EXPECTS(offset + len <= total_, "output window past the end of " + out_.target());
    if (len == 0) return {};
    if (whole_ != nullptr) {
      if (!prefaulted(offset, len)) populate(offset, len, false);
      return {whole_ + offset, len};
    }
    trace_recorder::scope timer(trace_, "write", len);
    const std::uint64_t at = data_ + offset;  // in the file
    const std::uint64_t base = at / page_size * page_size;
    const std::size_t map_len = static_cast<std::size_t>(at + len - base);
    void* p = ::mmap(nullptr, map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                     out_.fd().get(), static_cast<off_t>(base));
    if (p == MAP_FAILED) throw_error("mmap " + out_.target(), errno);
    return {static_cast<std::byte*>(p) + (at - base), len};
  }

  void commit(std::uint64_t offset, std::span<std::byte> window) override {
    if (window.empty() || whole_ != nullptr) return;
    trace_recorder::scope timer(trace_, "write");
    const std::uint64_t at = data_ + offset;
    const std::uint64_t base = at / page_size * page_size;
    std::byte* p = window.data() - (at - base);
    if (::munmap(p, static_cast<std::size_t>(at + window.size() - base)) != 0)
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
        trace_recorder::scope timer(trace_, "write", whole_ != nullptr ? len : 0);
        std::memcpy(dst.data(), data.data() + begin, len);
      }
      commit(offset + begin, dst);
    });
  }

  std::span<std::byte> mapping() override {
    return whole_ != nullptr ? std::span<std::byte>(whole_, static_cast<std::size_t>(total_))
                             : std::span<std::byte>();
  }

  void prefault(unsigned threads, bool wait, std::uint64_t ahead_bytes) override {
    if (whole_ == nullptr) return;
    if (prefault_done_ == nullptr) {
      prefault_windows_ = (total_ + prefault_window - 1) / prefault_window;
      prefault_done_ = std::make_unique<std::atomic<bool>[]>(prefault_windows_);
    }
    {
      std::lock_guard lock(prefault_mutex_);
      prefault_ahead_ = ahead_bytes;
      prefault_drain_ = false;
      prefault_end_.store(prefault_end_for());  // lower, too: threads past it stop
      skip_written_windows();
    }
    prefault_moved_.notify_all();
    // A second call (say, with every thread, to wait) joins the threads already at work.
    while (prefaulters_.size() < threads) {
      if (!start_prefaulter()) break;
    }
    if (wait) stop_prefault_after_work();
  }

  void written_through(std::uint64_t bytes) override {
    {
      std::lock_guard lock(prefault_mutex_);
      written_ = std::max(written_, bytes);
      prefault_end_.store(std::max(prefault_end_.load(), prefault_end_for()));
      skip_written_windows();
    }
    prefault_moved_.notify_all();
  }

  void finish() override { stop_prefault(); }
  [[nodiscard]] const char* name() const override { return "mmap"; }
  [[nodiscard]] bool parallel_writes() const override { return true; }

 private:
  /// Starts one more background prefault thread; false when the system has no thread to
  /// spare (prefaulting is an optimisation: the writers fault the rest themselves).
  bool start_prefaulter() {
    try {
      prefaulters_.emplace_back([this] {
        for (;;) {
          const std::optional<std::uint64_t> next = claim_prefault_window();
          if (!next) return;
          const std::uint64_t w = *next;
          const std::uint64_t offset = w * prefault_window;
          try {
            populate(offset, static_cast<std::size_t>(std::min(prefault_window, total_ - offset)),
                     true);
            prefault_done_[w].store(true);
          } catch (...) {
            return;  // the writers fault these pages themselves and report what fails
          }
        }
      });
      return true;
    } catch (const std::system_error&) {
      return false;
    }
  }

  /// Output bytes each prefault step maps in: large enough that the per-call cost vanishes,
  /// small enough that writers rarely find their window half done.
  static constexpr std::uint64_t prefault_window = std::uint64_t{64} << 20;

  /// The next window to fault in, once it is within the distance ahead of the writes; none
  /// when every window is taken or the prefault stops first (or, after work, would wait).
  std::optional<std::uint64_t> claim_prefault_window() {
    for (;;) {
      if (stop_prefault_.load()) return std::nullopt;
      std::uint64_t w = next_prefault_.load();
      if (w >= prefault_windows_) return std::nullopt;
      if (w < prefault_end_.load()) {
        if (next_prefault_.compare_exchange_weak(w, w + 1)) return w;
        continue;
      }
      std::unique_lock lock(prefault_mutex_);
      prefault_moved_.wait(lock, [&] {
        return next_prefault_.load() < prefault_end_.load() || stop_prefault_.load() ||
               prefault_drain_;
      });
      if (next_prefault_.load() >= prefault_end_.load()) return std::nullopt;
    }
  }
  /// Windows wholly behind the writes were faulted in by them: the prefault goes on from the
  /// first the writes have not passed (it had trailed them, re-populating their pages, where
  /// the writes went faster). Called under prefault_mutex_.
  void skip_written_windows() {
    const std::uint64_t passed = written_ / prefault_window;
    std::uint64_t w = next_prefault_.load();
    while (w < passed && !next_prefault_.compare_exchange_weak(w, passed)) {
    }
  }
  /// The windows the prefault may reach now. Called under prefault_mutex_.
  [[nodiscard]] std::uint64_t prefault_end_for() const {
    const std::uint64_t left = total_ - std::min(written_, total_);
    const std::uint64_t through = prefault_ahead_ >= left ? total_ : written_ + prefault_ahead_;
    return (through + prefault_window - 1) / prefault_window;
  }

  void stop_prefault() noexcept {
    stop_prefault_.store(true);
    stop_prefault_after_work();
  }
  void stop_prefault_after_work() noexcept {
    {
      std::lock_guard lock(prefault_mutex_);
      prefault_drain_ = true;
    }
    prefault_moved_.notify_all();
    for (std::thread& t : prefaulters_) t.join();
    prefaulters_.clear();
  }

  /// True when background prefaulting already made every page of the range writable.
  bool prefaulted(std::uint64_t offset, std::size_t len) const {
    if (prefault_done_ == nullptr) return false;
    for (std::uint64_t w = offset / prefault_window; w * prefault_window < offset + len; ++w)
      if (!prefault_done_[w].load()) return false;
    return true;
  }

  /// Faults the window's pages in with one call instead of one trap per page (Linux 5.14+;
  /// on older kernels the stores fault them in as before).
  /// `background`: on the "prefault" track with its bytes; else inside a write, which counts
  /// the bytes itself.
  void populate(std::uint64_t offset, std::size_t len, bool background) {
    trace_recorder::scope timer(trace_, background ? "prefault" : "write", background ? len : 0);
    const std::uint64_t at = data_ + offset;  // madvise takes page-aligned file positions
    const std::uint64_t base = at / page_size * page_size;
    if (::madvise(map_ + base, static_cast<std::size_t>(at + len - base),
                  MADV_POPULATE_WRITE) != 0 && errno != EINVAL)
      throw_error("madvise(MADV_POPULATE_WRITE) " + out_.target(), errno);
  }

  static constexpr std::size_t write_window = std::size_t{4} << 20;
  output_file& out_;
  std::uint64_t data_;  // where the records start in the file (after a header)
  std::uint64_t total_;
  trace_recorder* trace_;
  std::byte* map_ = nullptr;    // persistent: the whole file, mapped once
  std::byte* whole_ = nullptr;  // persistent: its records, from data_ on
  std::uint64_t prefault_windows_ = 0;
  std::unique_ptr<std::atomic<bool>[]> prefault_done_;
  std::atomic<std::uint64_t> next_prefault_{0};
  std::atomic<std::uint64_t> prefault_end_{0};  // windows [0, end) may be faulted in
  std::mutex prefault_mutex_;                   // guards the three below
  std::condition_variable prefault_moved_;      // prefault_end_ grew, or the prefault ends
  std::uint64_t prefault_ahead_ = ~std::uint64_t{0};
  std::uint64_t written_ = 0;                   // written_through()
  bool prefault_drain_ = false;                 // threads at the end leave instead of waiting
  std::atomic<bool> stop_prefault_{false};
  std::vector<std::thread> prefaulters_;  // last: joined before the members they use go away
};

/// Staging buffers written by a writer thread with io_uring; the only sink for pipes.
class uring_sink final : public output_sink {
 public:
  uring_sink(output_file& out, std::uint64_t total, std::size_t min_window,
             trace_recorder* trace)
      : out_(out), total_(total), trace_(trace),
        window_bytes_(std::max(default_window_bytes, min_window)) {
    if (out_.is_private_file() && total_ > 0) {
      // Preallocation makes buffered writes faster (no block allocation on the write path);
      // a filesystem without it still works. Only into our own temporary: a file we write
      // through belongs to the caller.
      const std::uint64_t bytes = out_.data_offset() + total_;
      const int ret = allocate_file(out_.fd().get(), bytes);
      if (ret != 0 && ret != EOPNOTSUPP && ret != EINVAL)
        throw_error("cannot allocate " + std::to_string(bytes) + " bytes for " + out_.target(),
                    ret);
    }
    for (std::size_t i = 0; i < buffer_count; ++i) {
      void* p = std::aligned_alloc(4096, (window_bytes_ + 4095) / 4096 * 4096);
      if (p == nullptr) throw out_of_memory("output staging buffer", window_bytes_);
      buffers_.push_back(static_cast<std::byte*>(p));
      free_.push_back(static_cast<std::byte*>(p));
    }
    // A stream's header goes ahead of every record.
    run_in_order([this] { out_.write_stream_header(ring_); }, nullptr);
  }

  ~uring_sink() override {
    try {
      worker_.drain();  // the writes still queued use the buffers
    } catch (...) {  // reported by finish() or a later acquire(); a destructor cannot
    }
    for (std::byte* p : buffers_) std::free(p);
  }

  [[nodiscard]] std::size_t max_window() const override { return window_bytes_; }

  std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) override {
    GPUSORT_EXPECTS(len <= window_bytes_, "output window larger than the staging buffer");
    (void)offset;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return !free_.empty() || failed_; });
      if (!failed_) {
        std::byte* p = free_.back();
        free_.pop_back();
        return {p, len};
      }
    }
    worker_.drain();  // rethrows the failure
    throw_error("output to " + out_.target() + " failed");  // not reached
  }

  void commit(std::uint64_t offset, std::span<std::byte> window) override {
    run_in_order([this, offset, window] { write_job(offset, window); }, window.data());
  }

  void write(std::uint64_t offset, std::span<const std::byte> data) override {
    // Written from the caller's memory by the writer thread, in order with earlier commits.
    run_in_order([this, offset, data] { write_job(offset, data); }, nullptr);
    worker_.drain();
  }

  void finish() override { worker_.drain(); }
  [[nodiscard]] const char* name() const override { return "uring"; }
  [[nodiscard]] bool parallel_writes() const override { return false; }

 private:
  static constexpr std::size_t buffer_count = 3;
  static constexpr std::size_t default_window_bytes = std::size_t{32} << 20;

  /// Queues `task` on the writer thread. Once it has run (or failed), `staged`, a staging
  /// buffer, goes back to the pool; a failure wakes acquire(), since the writer skips every
  /// task after one that failed (and their buffers with them).
  template <typename Task>
  void run_in_order(Task task, std::byte* staged) {
    worker_.push([this, task = std::move(task), staged] {
      struct settle {
        uring_sink& sink;
        std::byte* staged;
        int unwinding = std::uncaught_exceptions();
        ~settle() {
          {
            std::lock_guard lock(sink.mutex_);
            if (staged != nullptr) sink.free_.push_back(staged);
            if (std::uncaught_exceptions() > unwinding) sink.failed_ = true;
          }
          sink.cv_.notify_all();
        }
      } done{*this, staged};
      task();
    });
  }

  void write_job(std::uint64_t offset, std::span<const std::byte> data) {
    trace_recorder::scope timer(trace_, "write", data.size());
    if (out_.is_stream()) {
      GPUSORT_EXPECTS(offset == stream_pos_, "out-of-order write to " + out_.target());
      ring_.write_stream(out_.fd(), data);
      stream_pos_ += data.size();
    } else {
      ring_.write_exact(out_.fd(), out_.data_offset() + offset, data);
    }
  }

  output_file& out_;
  std::uint64_t total_;
  trace_recorder* trace_;
  std::size_t window_bytes_;  // at least one record
  std::uint64_t stream_pos_ = 0;  // the writer thread's
  std::vector<std::byte*> buffers_;
  uring ring_{32};  // the writer thread's
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::byte*> free_;
  bool failed_ = false;
  // Last: drained and joined before the members its tasks use go.
  gpusort::detail::ordered_worker worker_;
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
  if (name == "direct") return write_method::direct;
  throw_error("unknown write method '" + std::string(name) +
              "' (expected auto, mmap, uring or direct)");
}

std::unique_ptr<output_sink> make_output_sink(output_file& out, std::uint64_t total_bytes,
                                              write_method method, trace_recorder* trace,
                                              bool persistent_mapping, std::size_t min_window) {
  if (method == write_method::direct) {
    if (out.is_private_file()) {
      if (std::unique_ptr<output_sink> direct =
              make_direct_sink(out, total_bytes, min_window, trace))
        return direct;
    }
    method = write_method::automatic;  // a stream, or a filesystem without O_DIRECT
  }
  if (method == write_method::automatic)
    method = (out.is_private_file() && fallocate_works(out)) ? write_method::mmap
                                                             : write_method::uring;
  if (method == write_method::mmap) {
    GPUSORT_EXPECTS(out.is_private_file(),
                    "cannot map " + out.target() + ": it is written in place, not replaced");
    return std::make_unique<mapped_sink>(out, total_bytes, persistent_mapping, trace);
  }
  return std::make_unique<uring_sink>(out, total_bytes, min_window, trace);
}

}  // namespace gpusort::io
