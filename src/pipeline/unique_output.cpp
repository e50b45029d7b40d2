// In-place compaction of a sorted output (a file, or its mapping): blocks are read, compacted
// and written back at the running output offset, which never passes the read offset. Until the
// first record is dropped every record is already where it belongs, so an output without equal
// keys is only read.
#include "pipeline/unique_output.hpp"

#include <tbb/parallel_for.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/host_buffer.hpp"
#include "core/parallel_copy.hpp"
#include "core/trace.hpp"
#include "cpu/key_order.hpp"
#include "gpusort/error.hpp"

namespace gpusort::pipeline {
namespace {

/// Bytes compacted per step, and per read or write call within it (several run at once).
constexpr std::uint64_t block_bytes = std::uint64_t{64} << 20;
constexpr std::uint64_t piece_bytes = std::uint64_t{8} << 20;

/// pread or pwrite of `len` bytes at `offset`, in pieces on the arena's threads.
template <typename Transfer>
void transfer_in_pieces(std::uint64_t offset, std::uint64_t len, Transfer&& one) {
  const std::uint64_t pieces = (len + piece_bytes - 1) / piece_bytes;
  tbb::parallel_for(std::uint64_t{0}, pieces, [&](std::uint64_t p) {
    std::uint64_t done = p * piece_bytes;
    const std::uint64_t end = std::min(len, done + piece_bytes);
    while (done < end) done += one(offset + done, done, end - done);
  });
}

}  // namespace

unique_stream_sink::unique_stream_sink(std::unique_ptr<io::output_sink> inner,
                                       const record_format& format)
    : inner_(std::move(inner)),
      format_(format),
      last_(std::make_unique<std::byte[]>(format.record_size)) {}

std::span<std::byte> unique_stream_sink::acquire(std::uint64_t offset, std::size_t len) {
  return inner_->acquire(offset, len);
}

std::size_t unique_stream_sink::filter(std::span<const std::byte> data, std::uint64_t offset,
                                       std::byte* dst) {
  const std::uint32_t rec = format_.record_size;
  GPUSORT_EXPECTS(offset == in_offset_ && data.size() % rec == 0,
                  "unique: stream output written out of order");
  in_offset_ += data.size();
  const std::uint64_t n = data.size() / rec;
  if (n == 0) return 0;
  // Remember the last record before `dst` (which may be `data`) is overwritten.
  const std::byte* tail = data.data() + (n - 1) * rec;
  std::unique_ptr<std::byte[]> next_last = std::make_unique<std::byte[]>(rec);
  std::memcpy(next_last.get(), tail, rec);
  const std::uint64_t kept =
      cpu::unique_records(data.data(), n, have_last_ ? last_.get() : nullptr, dst, format_);
  last_ = std::move(next_last);
  have_last_ = true;
  return static_cast<std::size_t>(kept * rec);
}

void unique_stream_sink::commit(std::uint64_t offset, std::span<std::byte> window) {
  // In place: the window is the inner sink's own staging memory.
  const std::size_t kept = filter(window, offset, window.data());
  inner_->commit(out_offset_, window.first(kept));
  out_offset_ += kept;
}

void unique_stream_sink::write(std::uint64_t offset, std::span<const std::byte> data) {
  const std::uint32_t rec = format_.record_size;
  const std::size_t step = std::max<std::size_t>(rec, inner_->max_window() / rec * rec);
  for (std::size_t done = 0; done < data.size(); done += step) {
    const std::size_t len = std::min(step, data.size() - done);
    std::span<std::byte> window = inner_->acquire(out_offset_, len);
    const std::size_t kept = filter(data.subspan(done, len), offset + done, window.data());
    inner_->commit(out_offset_, window.first(kept));
    out_offset_ += kept;
  }
}

namespace {

/**
 * Compacts `records` sorted records block by block: `load(first, n)` returns the records
 * [first, first + n), `store(at, data, n)` puts n compacted records at record `at` (never past
 * the block being compacted). Until the first record is dropped every record is already in
 * its place: such blocks are only checked for equal neighbours, not copied.
 */
template <typename Load, typename Store>
std::uint64_t compact_blocks(std::uint64_t records, const record_format& format,
                             std::uint64_t block_records, Load&& load, Store&& store) {
  const std::uint64_t rec = format.record_size;
  host_buffer out;  // compacted records, from the first drop on
  host_buffer last(rec);
  bool have_last = false;
  std::uint64_t kept_total = 0;
  for (std::uint64_t first = 0; first < records; first += block_records) {
    const std::uint64_t n = std::min(block_records, records - first);
    const std::byte* block = load(first, n);
    const std::byte* previous = have_last ? last.data() : nullptr;
    if (kept_total == first &&
        !cpu::first_disorder(block, n, previous, format, false, /*strict=*/true)) {
      std::memcpy(last.data(), block + (n - 1) * rec, rec);
      have_last = true;
      kept_total += n;
      continue;
    }
    if (out.size() == 0) out = host_buffer(static_cast<std::size_t>(block_records * rec));
    const std::uint64_t kept = cpu::unique_records(block, n, previous, out.data(), format);
    // Before the store, which may overwrite the block.
    std::memcpy(last.data(), block + (n - 1) * rec, rec);
    have_last = true;
    store(kept_total, out.data(), kept);
    kept_total += kept;
  }
  return kept_total;
}

std::uint64_t block_records_for(std::uint64_t records, std::uint32_t record_size,
                                std::uint64_t buffer_bytes) {
  return std::clamp<std::uint64_t>(std::min(block_bytes, buffer_bytes / 2) / record_size, 1,
                                   std::max<std::uint64_t>(records, 1));
}

}  // namespace

std::uint64_t unique_in_file(const io::file_descriptor& file, std::uint64_t base,
                             std::uint64_t records, const record_format& format,
                             std::uint64_t buffer_bytes, trace_recorder* trace) {
  const std::uint64_t rec = format.record_size;
  const std::uint64_t block_records = block_records_for(records, format.record_size, buffer_bytes);
  trace_recorder::scope timer(trace, "unique", records * rec);
  host_buffer in(static_cast<std::size_t>(block_records * rec));
  auto load = [&](std::uint64_t first, std::uint64_t n) -> const std::byte* {
    transfer_in_pieces(base + first * rec, n * rec,
                       [&](std::uint64_t at, std::uint64_t pos, std::uint64_t len) {
      const ssize_t got = ::pread(file.get(), in.data() + pos, len, static_cast<off_t>(at));
      if (got < 0 && errno == EINTR) return std::uint64_t{0};
      if (got <= 0) throw_error("unique: read " + file.path(), got < 0 ? errno : EIO);
      return static_cast<std::uint64_t>(got);
    });
    return in.data();
  };
  auto store = [&](std::uint64_t at_record, const std::byte* data, std::uint64_t n) {
    transfer_in_pieces(base + at_record * rec, n * rec,
                       [&](std::uint64_t at, std::uint64_t pos, std::uint64_t len) {
      const ssize_t put = ::pwrite(file.get(), data + pos, len, static_cast<off_t>(at));
      if (put < 0 && errno == EINTR) return std::uint64_t{0};
      if (put <= 0) throw_error("unique: write " + file.path(), put < 0 ? errno : EIO);
      return static_cast<std::uint64_t>(put);
    });
  };
  return compact_blocks(records, format, block_records, load, store);
}

std::uint64_t unique_in_memory(std::span<std::byte> output, const record_format& format,
                               std::uint64_t buffer_bytes, trace_recorder* trace) {
  const std::uint64_t rec = format.record_size;
  const std::uint64_t records = output.size() / rec;
  trace_recorder::scope timer(trace, "unique", output.size());
  auto load = [&](std::uint64_t first, std::uint64_t) -> const std::byte* {
    return output.data() + first * rec;
  };
  auto store = [&](std::uint64_t at_record, const std::byte* data, std::uint64_t n) {
    gpusort::detail::parallel_copy(output.data() + at_record * rec, data,
                                   static_cast<std::size_t>(n * rec));
  };
  return compact_blocks(records, format,
                        block_records_for(records, format.record_size, buffer_bytes), load, store);
}

}  // namespace gpusort::pipeline
