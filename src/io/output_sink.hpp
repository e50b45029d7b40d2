// Where sorted bytes go: a mapped, preallocated file, or io_uring writes (files and pipes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "io/output_file.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::io {

/// How output bytes reach the file.
enum class write_method : std::uint8_t {
  automatic,  ///< mmap for regular files where fallocate works, else uring
  mmap,       ///< fallocate + shared mapping + parallel stores (fastest into the page cache)
  uring,      ///< io_uring writes from staging buffers (the only way into a pipe)
  direct,     ///< O_DIRECT writes past the page cache (our temporary file; else as automatic)
};

/// Parses "auto", "mmap", "uring" or "direct"; throws gpusort::error otherwise.
write_method parse_write_method(std::string_view name);

/**
 * The producer side of the output.
 * - A producer either fills windows in place (acquire, fill, commit) or hands over finished
 *   memory (write). Windows are at most max_window() bytes.
 * - Stream outputs take windows and writes in increasing, contiguous offset order; file
 *   outputs take any order, and acquire/commit may be called from several threads.
 * - finish() waits for every byte and rethrows the first write error.
 */
class output_sink {
 public:
  virtual ~output_sink() = default;
  [[nodiscard]] virtual std::size_t max_window() const = 0;
  [[nodiscard]] virtual std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) = 0;
  virtual void commit(std::uint64_t offset, std::span<std::byte> window) = 0;
  virtual void write(std::uint64_t offset, std::span<const std::byte> data) = 0;
  virtual void finish() = 0;
  /// Readies the output's pages with `threads` threads, so that later writes only copy (a
  /// mapped sink with a persistent mapping faults the file in; the others ignore it). In the
  /// background unless `wait`; a background prefault is stopped by finish() or the destructor.
  /// At most `ahead_bytes` ahead of where written_through() last said the writes are (of the
  /// output's start until it is called; about: in steps of 64 MiB); writes fault in what the
  /// prefault has not reached. A second call sets the distance anew.
  virtual void prefault(unsigned threads, bool wait = false,
                        std::uint64_t ahead_bytes = ~std::uint64_t{0}) {
    static_cast<void>(threads);
    static_cast<void>(wait);
    static_cast<void>(ahead_bytes);
  }
  /// The writes have filled the output's first `bytes`: a prefault held `ahead_bytes` ahead
  /// moves on.
  virtual void written_through(std::uint64_t bytes) { static_cast<void>(bytes); }
  /// The whole output as one writable span when the sink maps it whole (a mapped sink with a
  /// persistent mapping), else empty. Stores into it need no acquire/commit; finish() still
  /// ends the output.
  [[nodiscard]] virtual std::span<std::byte> mapping() { return {}; }
  [[nodiscard]] virtual const char* name() const = 0;
  /// True when several threads may fill windows and write at once, in any order (a mapped
  /// file); false when the sink serializes them (staged writes, a stream).
  [[nodiscard]] virtual bool parallel_writes() const = 0;
};

/// Sink for `total_bytes` of output into `out`; time spent writing is recorded on the "write"
/// track of `trace` when given. Throws gpusort::error (e.g. ENOSPC from fallocate, reported
/// with the path before any byte is written).
/// `persistent_mapping` (mmap only): map the whole output once instead of a window per write,
/// which also allows prefault(). In the GPU process on the H200 machine, windowed writes of
/// 8 GiB ran at 2.9-3.3 GB/s, the persistent mapping at 4.7-5.4 GB/s, and with prefault(8)
/// started before the sort the writes themselves at 31-41 GB/s (8.9 GB/s in a plain process
/// without prefaulting).
/// `min_window`: the largest window a producer will ask for at once (one record); staged
/// sinks size their buffers to hold it.
std::unique_ptr<output_sink> make_output_sink(output_file& out, std::uint64_t total_bytes,
                                              write_method method,
                                              trace_recorder* trace = nullptr,
                                              bool persistent_mapping = false,
                                              std::size_t min_window = 0);

}  // namespace gpusort::io
