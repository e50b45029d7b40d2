// Where sorted GPU runs go when they are not the output (gpu_output_writer takes that case):
// the run_sink that collects each run's pieces in host memory and hands complete runs, in order,
// to a run_storer on a worker thread of its own, so that the run former's thread never waits on
// a host copy or a disk.
#pragma once

#include <tbb/task_arena.h>
#include <tbb/task_group.h>

#include <condition_variable>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>

#include "core/host_buffer.hpp"
#include "core/ordered_worker.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/record_format.hpp"
#include "io/uring.hpp"
#include "pipeline/run_pinner.hpp"
#include "pipeline/run_store.hpp"
#include "pipeline/staging_pool.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

/// What becomes of a complete run. Called on the collector's worker thread, one run at a time,
/// in run order; `ring` is the stage's own.
class run_storer {
 public:
  virtual ~run_storer() = default;
  /// Run `run` of `records` records lies in `memory` (page-locked where `memory.pin` is set).
  virtual void store(std::uint64_t run, run_pinner::run_memory memory, std::uint64_t records,
                     io::uring& ring) = 0;
};

/// Runs of records the GPU sorted directly: into the run store as they are.
class record_storer final : public run_storer {
 public:
  explicit record_storer(run_store& store) : store_(store) {}
  void store(std::uint64_t run, run_pinner::run_memory memory, std::uint64_t records,
             io::uring& ring) override;

 private:
  run_store& store_;
};

/**
 * Runs of (key, index) items of records the GPU does not sort directly: each chunk's records
 * are kept until its items come back sorted; the ties beyond the 8-byte key prefix are then
 * settled and the records gathered in the items' order into the run store.
 */
class item_gatherer final : public run_storer {
 public:
  item_gatherer(run_store& store, const record_format& format, bool descending,
                tbb::task_arena& arena, trace_recorder* trace)
      : store_(store), format_(format), descending_(descending), arena_(arena), trace_(trace) {}
  /// The records of chunk `run`, before its items can come back.
  void keep_chunk(std::uint64_t run, host_buffer records);
  void store(std::uint64_t run, run_pinner::run_memory memory, std::uint64_t records,
             io::uring& ring) override;

 private:
  run_store& store_;
  record_format format_;
  bool descending_;
  tbb::task_arena& arena_;
  trace_recorder* trace_;
  std::mutex chunks_mutex_;
  std::map<std::uint64_t, host_buffer> chunks_;
};

/**
 * The run sink of runs that are stored, not written out. Runs whose memory a run_pinner
 * page-locked come back from the GPU straight into it; the others through staging and a host
 * copy (several pieces at once, on the arena's threads). Collection holds back while the runs
 * held outside the store would not fit what it keeps in memory (may_collect). `storer` must
 * outlive the collector.
 */
class run_collector final : public gpu::run_sink {
 public:
  /// `unit_bytes`: bytes per record the GPU sorts (a record, or a (key, index) item).
  run_collector(std::uint32_t unit_bytes, std::uint64_t chunk_records,
                std::shared_future<std::shared_ptr<staging_pool>> staging, run_store& store,
                run_pinner* pinner, run_storer& storer, tbb::task_arena& arena,
                trace_recorder* trace);
  ~run_collector() noexcept override;
  run_collector(const run_collector&) = delete;
  run_collector& operator=(const run_collector&) = delete;

  std::span<std::byte> piece_buffer(std::uint64_t run, std::uint64_t offset,
                                    std::size_t len) override;
  void piece_done(std::uint64_t run, std::uint64_t offset, std::span<std::byte> piece) override;
  void run_done(std::uint64_t run, std::uint64_t records) override;

  /// Waits for every queued copy and stored run; rethrows the first failure.
  void drain();
  [[nodiscard]] std::uint64_t records() const noexcept { return records_; }

 private:
  std::optional<std::byte*> pinned_memory(std::uint64_t run);
  std::byte* run_buffer(std::uint64_t run);
  void piece_copied(std::uint64_t run);
  bool may_collect(std::uint64_t run);
  [[nodiscard]] std::uint64_t run_bytes() const noexcept { return chunk_records_ * unit_bytes_; }
  run_pinner::run_memory take_run(std::uint64_t run, bool& held);
  void finish_run(std::uint64_t run, std::uint64_t records);
  /// Pinned while the input is still being read: the first piece waits for it.
  staging_pool& staging() { return *staging_.get(); }

  std::uint32_t unit_bytes_;
  std::uint64_t chunk_records_;
  std::shared_future<std::shared_ptr<staging_pool>> staging_;
  run_store& store_;
  run_pinner* pinner_;
  run_storer& storer_;
  tbb::task_arena& arena_;
  trace_recorder* trace_;
  struct collected_run {
    host_buffer memory;
    std::uint64_t copies_in_flight = 0;
    std::shared_ptr<void> pin;  // page-locked: pieces land in `memory` without a copy
  };
  std::mutex runs_mutex_;
  std::condition_variable copied_;
  std::map<std::uint64_t, collected_run> runs_;
  std::uint64_t held_ = 0;        // runs in runs_ or being stored
  std::uint64_t resident_room_;   // the store's resident_room() when a run was last stored
  std::uint64_t records_ = 0;
  io::uring ring_;                // the worker's, for every run it stores
  tbb::task_group writes_;        // concurrent piece copies into runs
  detail::ordered_worker worker_;  // last: joined before the members its tasks use go away
};

}  // namespace gpusort::pipeline
