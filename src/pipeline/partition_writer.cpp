#include "pipeline/partition_writer.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include "gpusort/error.hpp"
#include "pipeline/pipeline_config.hpp"

namespace gpusort::pipeline {
namespace {

/// Gives a piece's staging buffer back once the last of its stretches is written.
struct piece_release {
  staging_pool& pool;
  std::byte* buffer;
  ~piece_release() { pool.release(buffer); }
};

}  // namespace

partition_writer::partition_writer(staging_pool& staging, io::output_sink& sink,
                                   std::span<const key_range> ranges, const key_reader& keys,
                                   tbb::task_arena& arena)
    : staging_(staging), sink_(sink), ranges_(ranges), keys_(keys), arena_(arena),
      filled_(ranges.size(), 0) {
  GPUSORT_EXPECTS(sink.parallel_writes(), "partition_writer: an output written in order");
}

partition_writer::~partition_writer() noexcept {
  try {
    arena_.execute([&] { writes_.wait(); });  // errors were reported by drain() already
  } catch (...) {
  }
}

std::span<std::byte> partition_writer::piece_buffer(std::uint64_t, std::uint64_t,
                                                    std::size_t len) {
  GPUSORT_EXPECTS(len <= staging_.buffer_bytes(), "run former piece larger than staging");
  std::byte* p = staging_.try_acquire();
  if (p == nullptr) return {};
  return {p, len};
}

void partition_writer::piece_done(std::uint64_t, std::uint64_t, std::span<std::byte> piece) {
  const std::uint32_t size = keys_.format().record_size;
  const std::uint64_t count = piece.size() / size;
  const auto release = std::make_shared<piece_release>(staging_, piece.data());
  if (count == 0) return;
  // The piece is sorted: the ranges it touches follow one another, from the last whose start
  // its first record is not before to the last whose start its last record is not before.
  const std::byte* first = piece.data();
  const std::uint64_t first_key = keys_(first);
  const std::uint64_t last_key = keys_(first + (count - 1) * size);
  const auto range_of = [&](std::uint64_t key) {
    const auto after =
        std::partition_point(ranges_.begin() + 1, ranges_.end(),
                             [&](const key_range& r) { return !r.start.before(key); });
    return static_cast<std::size_t>(after - ranges_.begin()) - 1;
  };
  const std::size_t lo = range_of(first_key);
  const std::size_t hi = range_of(last_key);
  std::uint64_t from = 0;
  for (std::size_t r = lo; r <= hi; ++r) {
    const std::uint64_t to =
        r == hi ? count : records_before(first, count, keys_, ranges_[r + 1].start);
    const std::uint64_t n = to - from;
    if (n == 0) continue;
    const key_range& range = ranges_[r];
    if (filled_[r] + n > range.records)
      throw error("sort: range " + std::to_string(r) + " received more than the " +
                  std::to_string(range.records) + " records counted in the input: the input "
                  "changed while it was sorted");
    const std::uint64_t at = (range.first_record + filled_[r]) * size;
    filled_[r] += n;
    const std::span<const std::byte> stretch = piece.subspan(from * size, n * size);
    from = to;
    // Long stretches in parts, so that every thread copies.
    arena_.execute([&] {
      for (std::size_t done = 0; done < stretch.size(); done += range_copy_grain) {
        const std::span<const std::byte> part =
            stretch.subspan(done, std::min(range_copy_grain, stretch.size() - done));
        writes_.run([this, at = at + done, part, release] { sink_.write(at, part); });
      }
    });
  }
}

void partition_writer::run_done(std::uint64_t, std::uint64_t records) {
  {
    std::lock_guard lock(mutex_);
    records_ += records;
  }
  arrived_.notify_all();
}

void partition_writer::drain() { arena_.execute([&] { writes_.wait(); }); }

void partition_writer::wait_for(std::uint64_t records, const std::function<void()>& check) {
  // The former's thread delivers the runs; this one waits for the count, asking the former
  // now and then whether it failed (it then delivers nothing more).
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (arrived_.wait_for(lock, std::chrono::milliseconds(20),
                            [&] { return records_ >= records; }))
        break;
    }
    check();
  }
  drain();
  for (std::size_t r = 0; r < ranges_.size(); ++r)
    if (filled_[r] != ranges_[r].records)
      throw error("sort: range " + std::to_string(r) + " received " + std::to_string(filled_[r]) +
                  " of the " + std::to_string(ranges_[r].records) + " records counted in the "
                  "input: the input changed while it was sorted");
}

}  // namespace gpusort::pipeline
