// --unique: only the first record of each run of equal keys reaches the output. Our own
// temporary output file is sorted whole first and then compacted in place; outputs written in
// place (pipes, devices, stdout redirected to a file) are filtered on their way out, in order,
// since what they were given cannot be taken back.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "gpusort/record_format.hpp"
#include "io/file_descriptor.hpp"
#include "io/output_sink.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

/**
 * Wraps a sink: windows and writes, which it takes in offset order (it reports no parallel
 * writes and no mapping), pass on
 * without the records whose key equals the record in front of them, at offsets that close
 * the gaps. kept_bytes() is what reached `inner` once finish() returned.
 */
class unique_stream_sink final : public io::output_sink {
 public:
  unique_stream_sink(std::unique_ptr<io::output_sink> inner, const record_format& format);

  [[nodiscard]] std::size_t max_window() const override { return inner_->max_window(); }
  std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) override;
  void commit(std::uint64_t offset, std::span<std::byte> window) override;
  void write(std::uint64_t offset, std::span<const std::byte> data) override;
  void finish() override { inner_->finish(); }
  [[nodiscard]] const char* name() const override { return inner_->name(); }
  [[nodiscard]] bool parallel_writes() const override { return false; }

  [[nodiscard]] std::uint64_t kept_bytes() const noexcept { return out_offset_; }

 private:
  /// Keeps the records of `data` that differ from the last one passed on, at `dst`.
  std::size_t filter(std::span<const std::byte> data, std::uint64_t offset, std::byte* dst);

  std::unique_ptr<io::output_sink> inner_;
  record_format format_;
  std::uint64_t in_offset_ = 0;   // the next offset the producer must write
  std::uint64_t out_offset_ = 0;  // the next offset in the output
  std::unique_ptr<std::byte[]> last_;  // the last record passed on
  bool have_last_ = false;
};

/**
 * Compacts `records` sorted records at byte `base` of `file` in place, keeping the first of
 * each run of equal keys, and returns the records kept. The file is not truncated. Its two
 * block buffers take at most `buffer_bytes` (at least a record each). Timed as "unique".
 * Parallel on the calling thread's TBB arena.
 * @throw gpusort::error naming the file on a failed read or write.
 */
std::uint64_t unique_in_file(const io::file_descriptor& file, std::uint64_t base,
                             std::uint64_t records, const record_format& format,
                             std::uint64_t buffer_bytes, trace_recorder* trace);

/// unique_in_file on the output's mapping, where the sink maps it whole: compacted at memory
/// speed before it is unmapped. Returns the records kept.
std::uint64_t unique_in_memory(std::span<std::byte> output, const record_format& format,
                               std::uint64_t buffer_bytes, trace_recorder* trace);

}  // namespace gpusort::pipeline
