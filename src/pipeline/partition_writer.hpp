// Pass one of strategy gpu_partition: a run sink that scatters every sorted run into the key
// ranges' regions of the output. A run's pieces come back sorted, so each splits into one
// stretch per range it touches; the stretches are appended to their ranges in run order (which
// keeps equal keys in input order) and written on the arena's threads.
#pragma once

#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "gpu/run_former.hpp"
#include "io/output_sink.hpp"
#include "pipeline/key_partition.hpp"
#include "pipeline/staging_pool.hpp"

namespace gpusort::pipeline {

class partition_writer final : public gpu::run_sink {
 public:
  /// Pieces come back through `staging` and go to `sink` (a mapped output, which takes
  /// writes in any order), each stretch at the end of what its range of `ranges` holds so far.
  partition_writer(staging_pool& staging, io::output_sink& sink,
                   std::span<const key_range> ranges, const key_reader& keys,
                   tbb::task_arena& arena);
  ~partition_writer() noexcept override;
  partition_writer(const partition_writer&) = delete;
  partition_writer& operator=(const partition_writer&) = delete;

  std::span<std::byte> piece_buffer(std::uint64_t run, std::uint64_t offset,
                                    std::size_t len) override;
  void piece_done(std::uint64_t run, std::uint64_t offset, std::span<std::byte> piece) override;
  void run_done(std::uint64_t run, std::uint64_t records) override;

  /// Waits for every queued write; rethrows the first failure.
  void drain();
  /// Waits until `records` records came back in complete runs and every write is done, calling
  /// `check` (which throws where the former failed) every 20 ms meanwhile; throws where a range
  /// then holds other than its count (the input changed while it was sorted).
  void wait_for(std::uint64_t records, const std::function<void()>& check);

 private:
  staging_pool& staging_;
  io::output_sink& sink_;
  std::span<const key_range> ranges_;
  const key_reader& keys_;
  tbb::task_arena& arena_;
  std::vector<std::uint64_t> filled_;  // records each range holds so far (the former's thread)
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::uint64_t records_ = 0;  // of complete runs (guarded by mutex_)
  tbb::task_group writes_;
};

}  // namespace gpusort::pipeline
