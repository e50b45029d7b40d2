#include "pipeline/gpu_range_sort.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "core/trace.hpp"
#include "cpu/multiway_merge.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/error.hpp"
#include "pipeline/gpu_output_writer.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/staging_pool.hpp"

namespace gpusort::pipeline {
namespace {

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

}  // namespace

std::uint64_t sort_ranges_on_gpu(run_store& store, const sort_options& options, int device,
                                 const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                                 tbb::task_arena& arena, trace_recorder* trace) {
  const record_format& format = options.format;
  GPUSORT_EXPECTS(gpu::supports_format(format),
                  "sort_ranges_on_gpu: " + describe(format) + " is not sorted directly on a GPU");
  const std::uint32_t record_size = format.record_size;
  std::vector<cpu::run_view> views;
  bool all_pinned = true;
  for (const sorted_run& run : store.runs()) {
    GPUSORT_EXPECTS(run.resident(), "sort_ranges_on_gpu: a run was spilled");
    views.push_back({run.memory.data(), run.records});
    all_pinned = all_pinned && run.pin != nullptr;
  }
  const std::uint64_t total = store.total_records();
  const std::uint64_t total_bytes = total * record_size;
  const std::size_t staging_bytes = staging_size(total_bytes);
  const std::size_t piece_bytes = staging_bytes / record_size * record_size;

  // Pinning (~85 ms per GiB) overlaps the device setup. Page-locked runs need no input staging.
  auto pin = [&] {
    trace_recorder::scope timer(trace, "pin", staging_buffers * staging_bytes);
    return std::make_shared<staging_pool>(staging_buffers, staging_bytes, device);
  };
  std::future<std::shared_ptr<staging_pool>> pinning_in;
  if (!all_pinned) pinning_in = std::async(std::launch::async, pin);
  const gpu_output_writer::staging_future staging_out = std::async(std::launch::async, pin).share();

  gpu::run_former_config config;
  config.device = device;
  config.format = format;
  config.descending = options.descending;
  config.algorithm = chunk_algorithm_for(options, true);
  config.memory_budget = options.gpu_memory_bytes;
  config.max_chunk_records = std::max<std::uint64_t>(1, total);
  config.expected_records = total;
  config.piece_bytes = piece_bytes;

  // The writer outlives the former, whose thread calls it; the input staging is declared
  // before the former, whose on_consumed callbacks release into it until it is gone.
  gpu_output_writer writer(staging_out, open_sink, total_bytes, arena);
  std::shared_ptr<staging_pool> staging_in;
  std::optional<trace_recorder::scope> setup_timer(std::in_place, trace, "GPU setup");
  std::optional<gpu::run_former> former(std::in_place, config, writer, trace);
  if (pinning_in.valid()) staging_in = pinning_in.get();
  setup_timer.reset();
  const std::uint64_t chunk = former->chunk_records();
  writer.set_run_bytes(chunk * record_size);
  const std::uint64_t ranges = (total + chunk - 1) / chunk;

  // cuts[r][j]: records of run j before range r. Every range but the last holds exactly one
  // chunk, so the former cuts its chunks at the range boundaries.
  std::vector<std::vector<std::uint64_t>> cuts(ranges + 1);
  {
    trace_recorder::scope timer(trace, "select");
    arena.execute([&] {
      tbb::parallel_for(std::uint64_t{0}, ranges + 1, [&](std::uint64_t r) {
        cuts[r] = cpu::select_cuts(views, std::min(total, r * chunk), format, options.descending);
      });
    });
  }

  try {
    range_feeder feeder(*former, staging_in.get(), piece_bytes, arena, trace);
    for (std::uint64_t r = 0; r < ranges; ++r) {
      for (std::size_t j = 0; j < views.size(); ++j) {
        const std::uint64_t begin = cuts[r][j];
        const std::byte* src = views[j].data + begin * record_size;
        const std::uint64_t bytes = (cuts[r + 1][j] - begin) * record_size;
        if (store.runs()[j].pin != nullptr) feeder.append_pinned(src, bytes);
        else feeder.append(src, bytes);
      }
    }
    feeder.flush();
    former->finish();
  } catch (...) {
    // Let queued writes finish (or fail) before the buffers they use go away.
    try {
      writer.drain();
    } catch (...) {
    }
    throw;
  }
  writer.drain();
  GPUSORT_EXPECTS(writer.records() == total, "sort_ranges_on_gpu: " +
                                                 std::to_string(writer.records()) + " of " +
                                                 std::to_string(total) + " records came back");
  {
    trace_recorder::scope timer(trace, "GPU teardown");
    former.reset();
    staging_in.reset();
  }
  return ranges;
}

}  // namespace gpusort::pipeline
