// A run sink that writes sorted runs straight into the output, at their final offsets: the
// one chunk of strategy gpu_one_chunk, and every key range of strategy gpu_ranges.
#pragma once

#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/ordered_worker.hpp"
#include "gpu/run_former.hpp"
#include "io/output_sink.hpp"
#include "pipeline/staging_pool.hpp"

namespace gpusort::pipeline {

/// Pieces come back through `staging` and go to the sink that `open_sink(output_bytes)` returns
/// (opened with the first piece): run r's piece at `offset` lands at run_offset(r) + offset
/// (run 0 at 0 unless set).
/// A mapped output takes pieces concurrently on the arena's threads, a stream in order on a
/// worker thread, so that the run former's thread never waits on a write.
class gpu_output_writer final : public gpu::run_sink {
 public:
  using staging_future = std::shared_future<std::shared_ptr<staging_pool>>;

  gpu_output_writer(staging_future staging,
                    const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                    std::uint64_t output_bytes, tbb::task_arena& arena);
  ~gpu_output_writer() noexcept override;
  gpu_output_writer(const gpu_output_writer&) = delete;
  gpu_output_writer& operator=(const gpu_output_writer&) = delete;

  /// Where the former's run r begins in the output, in bytes (a GPU sorting the key ranges it
  /// takes from a queue: the range it took r-th; strategy gpu_partition: the r-th range it
  /// sorts in place); `run_offset` is called on the former's thread. Set before the first
  /// piece arrives; unset, runs follow each other (the one chunk).
  void set_run_offsets(std::function<std::uint64_t(std::uint64_t)> run_offset) noexcept {
    run_offset_ = std::move(run_offset);
  }

  std::span<std::byte> piece_buffer(std::uint64_t run, std::uint64_t offset,
                                    std::size_t len) override;
  void piece_done(std::uint64_t run, std::uint64_t offset, std::span<std::byte> piece) override;
  void run_done(std::uint64_t run, std::uint64_t records) override;

  /// Waits for every queued write; rethrows the first failure.
  void drain();
  [[nodiscard]] std::uint64_t records() const noexcept { return records_.load(); }

 private:
  staging_pool& staging() { return *staging_.get(); }
  /// Notes that [at, at + bytes) is written, and tells the sink how far the output is written
  /// without a gap from its start (output_sink::written_through: a prefault held back behind
  /// the writes, as beside spilled runs, moves on).
  void note_written(std::uint64_t at, std::uint64_t bytes);

  staging_future staging_;
  const std::function<io::output_sink&(std::uint64_t)>& open_sink_;
  std::uint64_t output_bytes_;
  tbb::task_arena& arena_;
  std::function<std::uint64_t(std::uint64_t)> run_offset_;
  io::output_sink* sink_ = nullptr;
  std::atomic<std::uint64_t> records_{0};
  std::mutex front_mutex_;
  std::map<std::uint64_t, std::uint64_t> written_beyond_;  // start -> end, past the front
  std::uint64_t front_ = 0;       // written without a gap from the output's start
  tbb::task_group writes_;        // concurrent writes into a mapped output
  detail::ordered_worker worker_;  // in-order writes into a stream; last: joined first
};

}  // namespace gpusort::pipeline
