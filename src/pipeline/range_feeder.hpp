// Feeds a run former from host memory that is not page-locked (or partly is): the key ranges
// that strategy gpu_ranges gathers from runs, and those strategy gpu_partition sorts in place;
// and the former both set up.
#pragma once

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/trace.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/options.hpp"
#include "pipeline/pipeline_config.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/staging_pool.hpp"

namespace gpusort::pipeline {

/// The run former of a pass that sorts key ranges of records on `device` (both range sorts):
/// the records themselves, stably where they carry a payload, within --gpu-memory.
[[nodiscard]] inline gpu::run_former_config range_former_config(const sort_options& options,
                                                                int device) {
  gpu::run_former_config config;
  config.device = device;
  config.format = options.format;
  config.descending = options.descending;
  config.algorithm = chunk_algorithm_for(options, true);
  config.memory_budget = options.gpu_memory_bytes;
  return config;
}

/// Hands run pieces to the former in order: page-locked ones as they are, the others through
/// page-locked staging buffers that it fills with consecutive pieces.
class range_feeder {
 public:
  /// `staging` may be null when every piece is page-locked.
  range_feeder(gpu::run_former& former, staging_pool* staging, std::size_t capacity,
               tbb::task_arena& arena, trace_recorder* trace)
      : former_(former), staging_(staging), capacity_(capacity), arena_(arena), trace_(trace) {}

  /// A piece of page-locked memory: copied to the device from where it is.
  void append_pinned(const std::byte* src, std::uint64_t bytes) {
    if (bytes == 0) return;
    flush();  // what is staged comes first
    former_.push({src, static_cast<std::size_t>(bytes)}, [] {});
  }

  void append(const std::byte* src, std::uint64_t bytes) {
    while (bytes > 0) {
      if (buffer_ == nullptr) buffer_ = staging_->acquire();
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(bytes, capacity_ - fill_));
      // Large pieces are split so that every thread copies a part.
      for (std::size_t done = 0; done < n; done += range_copy_grain)
        copies_.push_back(
            {buffer_ + fill_ + done, src + done, std::min(range_copy_grain, n - done)});
      fill_ += n;
      src += n;
      bytes -= n;
      if (fill_ == capacity_) flush();
    }
  }

  /// What was appended so far ends the former's current run (run_former::end_run).
  void end_run() {
    flush();
    former_.end_run();
  }

  /// Pushes the last, partly filled buffer.
  void flush() {
    if (fill_ == 0) return;
    {
      trace_recorder::scope timer(trace_, "stage-in", fill_);
      arena_.execute([&] {
        tbb::parallel_for(std::size_t{0}, copies_.size(), [&](std::size_t i) {
          std::memcpy(copies_[i].dst, copies_[i].src, copies_[i].bytes);
        });
      });
    }
    copies_.clear();
    std::byte* p = buffer_;
    former_.push({p, fill_}, [this, p] { staging_->release(p); });
    buffer_ = nullptr;
    fill_ = 0;
  }

 private:
  struct copy {
    std::byte* dst;
    const std::byte* src;
    std::size_t bytes;
  };
  gpu::run_former& former_;
  staging_pool* staging_;
  std::size_t capacity_;
  tbb::task_arena& arena_;
  trace_recorder* trace_;
  std::byte* buffer_ = nullptr;
  std::size_t fill_ = 0;
  std::vector<copy> copies_;
};

}  // namespace gpusort::pipeline
