#include "pipeline/gpu_range_sort.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "core/each_until_failure.hpp"
#include "core/ordered_worker.hpp"
#include "core/trace.hpp"
#include "cpu/multiway_merge.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/error.hpp"
#include "pipeline/chunk_queue.hpp"
#include "pipeline/gpu_output_writer.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/range_feeder.hpp"
#include "pipeline/staging_pool.hpp"

namespace gpusort::pipeline {
namespace {

/// What every GPU's part of the pass reads: the runs and where the ranges cut them.
struct range_pass {
  const run_store& store;
  std::vector<cpu::run_view> views;
  /// Spilled runs' mappings (nothing for resident runs): views[j] points into mappings[j].
  std::vector<std::optional<io::file_view>> mappings;
  std::vector<std::vector<std::uint64_t>> cuts;  // cuts[r][j]: records of run j before range r
  bool all_pinned = true;
  bool any_mapped = false;
  std::uint64_t total = 0;
  std::uint32_t record_size = 0;

  /// Asks the kernel to read range r's pieces of the spilled runs in the background (a lookup
  /// per page where they are cached): a piece not in the page cache would otherwise be read
  /// page by page as the stage-in copy faults it in.
  void read_ahead(std::uint64_t r) const {
    if (r + 1 >= cuts.size()) return;
    for (std::size_t j = 0; j < mappings.size(); ++j)
      if (mappings[j])
        mappings[j]->will_need(cuts[r][j] * record_size,
                               (cuts[r + 1][j] - cuts[r][j]) * record_size);
  }
};

/// One GPU's part of the pass: its staging, the writer its ranges go out through and its run
/// former, whose chunk decides how many records a range holds.
class range_lane {
 public:
  /// Sets up `device` for chunks of at most `max_chunk` records (pinning overlaps the setup).
  range_lane(const range_pass& pass, const sort_options& options, int device,
             std::uint64_t max_chunk,
             const std::function<io::output_sink&(std::uint64_t)>& open_sink,
             tbb::task_arena& arena, trace_recorder* trace)
      : pass_(pass), device_(device), arena_(arena), trace_(trace) {
    const std::uint64_t total_bytes = pass.total * pass.record_size;
    const std::size_t staging_bytes = staging_size(total_bytes);
    piece_bytes_ = staging_bytes / pass.record_size * pass.record_size;
    // Pinning (~85 ms per GiB) overlaps the device setup. Page-locked runs need no input
    // staging.
    auto pin = [staging_bytes, device, trace] {
      trace_recorder::scope timer(trace, "pin", staging_buffers * staging_bytes);
      return std::make_shared<staging_pool>(staging_buffers, staging_bytes, device);
    };
    std::future<std::shared_ptr<staging_pool>> pinning_in;
    if (!pass.all_pinned) pinning_in = std::async(std::launch::async, pin);
    writer_ = std::make_unique<gpu_output_writer>(std::async(std::launch::async, pin).share(),
                                                  open_sink, total_bytes, arena);
    gpu::run_former_config config = range_former_config(options, device);
    config.max_chunk_records = std::max<std::uint64_t>(1, max_chunk);
    config.expected_records = pass.total;
    config.piece_bytes = piece_bytes_;
    trace_recorder::scope timer(trace, "GPU setup");
    former_.emplace(config, *writer_, trace);
    if (pinning_in.valid()) staging_in_ = pinning_in.get();
  }
  range_lane(const range_lane&) = delete;
  range_lane& operator=(const range_lane&) = delete;
  ~range_lane() {
    // The former first: its thread calls the writer, its callbacks release into staging_in_.
    former_.reset();
  }

  [[nodiscard]] std::uint64_t chunk() const noexcept { return former_->chunk_records(); }

  /// Sorts the key ranges of `ranges` (one chunk of records each, shared by every GPU) into
  /// the output, taking the next one as it is done with the last, until all are taken: a GPU
  /// that sorts faster takes more. Ends early, throwing, once `stop` is set (another GPU
  /// failed).
  void sort(chunk_queue& ranges, const std::atomic<bool>& stop) {
    const std::uint32_t record_size = pass_.record_size;
    // The former's run k is the k-th range this GPU took. Every range but the last holds
    // exactly one chunk, and the last is taken last, so the former's chunks are the ranges.
    taker_.emplace(ranges);
    writer_->set_run_offsets([this, range_bytes = ranges.chunk_records() * record_size](
                                 std::uint64_t run) { return taker_->taken(run) * range_bytes; });
    std::uint64_t records = 0;
    // The read-ahead of spilled runs runs one range ahead of the copies, off this thread
    // (which only a pass with spilled runs starts).
    std::optional<detail::ordered_worker> ahead;
    if (pass_.any_mapped) ahead.emplace();
    bool first = true;
    try {
      range_feeder feeder(*former_, staging_in_.get(), piece_bytes_, arena_, trace_);
      for (;;) {
        if (stop.load(std::memory_order_relaxed))
          throw error("range sort stopped: another GPU failed");
        const std::optional<std::uint64_t> taken = taker_->take();
        if (!taken) break;
        const std::uint64_t r = *taken;
        if (pass_.any_mapped) {
          if (first) pass_.read_ahead(r);
          ahead->push([this, r] { pass_.read_ahead(r + 1); });
          first = false;
        }
        records += (ranges.last_byte(r) - ranges.first_byte(r)) / record_size;
        for (std::size_t j = 0; j < pass_.views.size(); ++j) {
          const std::uint64_t from = pass_.cuts[r][j];
          const std::byte* src = pass_.views[j].data + from * record_size;
          const std::uint64_t bytes = (pass_.cuts[r + 1][j] - from) * record_size;
          if (pass_.store.runs()[j].pin != nullptr) feeder.append_pinned(src, bytes);
          else feeder.append(src, bytes);
        }
      }
      feeder.flush();
      former_->finish();
    } catch (...) {
      // Let queued writes finish (or fail) before the buffers they use go away.
      try {
        writer_->drain();
      } catch (...) {
      }
      throw;
    }
    writer_->drain();
    GPUSORT_EXPECTS(writer_->records() == records,
                    "sort_ranges_on_gpu: " + std::to_string(writer_->records()) + " of " +
                        std::to_string(records) + " records came back from GPU " +
                        std::to_string(device_));
  }

 private:
  const range_pass& pass_;
  int device_;
  tbb::task_arena& arena_;
  trace_recorder* trace_;
  std::size_t piece_bytes_ = 0;
  std::unique_ptr<gpu_output_writer> writer_;  // outlives the former, whose thread calls it
  std::shared_ptr<staging_pool> staging_in_;   // before the former: its callbacks release here
  /// The ranges in the order this GPU took them (read by the writer on the former's thread).
  std::optional<chunk_queue::taker> taker_;
  std::optional<gpu::run_former> former_;
};

}  // namespace

range_sort_result sort_ranges_on_gpu(run_store& store, const sort_options& options,
                                 const std::vector<int>& devices,
                                 const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                                 tbb::task_arena& arena, trace_recorder* trace) {
  const record_format& format = options.format;
  GPUSORT_EXPECTS(gpu::supports_format(format),
                  "sort_ranges_on_gpu: " + describe(format) + " is not sorted directly on a GPU");
  GPUSORT_EXPECTS(!devices.empty(), "sort_ranges_on_gpu: no device");
  GPUSORT_EXPECTS(store.total_records() > 0, "sort_ranges_on_gpu: no records");
  range_pass pass{.store = store, .total = store.total_records(),
                  .record_size = format.record_size};
  for (const sorted_run& run : store.runs()) {
    std::optional<io::file_view> mapped = map_spilled(run);
    GPUSORT_EXPECTS(run.resident() || mapped,
                    "sort_ranges_on_gpu: a spilled run that cannot be mapped");
    pass.views.push_back({mapped ? mapped->data() : run.memory.data(), run.records});
    pass.all_pinned = pass.all_pinned && run.pin != nullptr;
    pass.any_mapped = pass.any_mapped || mapped.has_value();
    pass.mappings.push_back(std::move(mapped));
  }

  // The first GPU's chunk decides the ranges; where it holds them all, it sorts alone.
  std::vector<std::unique_ptr<range_lane>> lanes;
  lanes.push_back(std::make_unique<range_lane>(pass, options, devices.front(), pass.total,
                                               open_sink, arena, trace));
  std::uint64_t chunk = lanes.front()->chunk();
  // Several GPUs write their ranges at once, so only into an output that takes writes in any
  // order (a mapping); a stream is written in order by the first GPU alone.
  bool several = devices.size() > 1 && pass.total > chunk;
  if (several) {
    io::output_sink* sink = nullptr;
    arena.execute([&] { sink = &open_sink(pass.total * format.record_size); });
    several = sink->parallel_writes();
  }
  if (several) {
    // Every GPU must cut the ranges alike: a GPU that holds less sets the chunk for all, and
    // those set up for more are set up again.
    for (std::size_t i = 1; i < devices.size(); ++i) {
      lanes.push_back(std::make_unique<range_lane>(pass, options, devices[i], chunk, open_sink,
                                                   arena, trace));
      chunk = std::min(chunk, lanes.back()->chunk());
    }
    // Chunks only shrink (each set up with the smallest so far as its most): this settles.
    for (bool settled = false; !settled;) {
      settled = true;
      for (std::size_t i = 0; i < lanes.size(); ++i) {
        if (lanes[i]->chunk() == chunk) continue;
        lanes[i].reset();
        lanes[i] = std::make_unique<range_lane>(pass, options, devices[i], chunk, open_sink,
                                                arena, trace);
        if (lanes[i]->chunk() < chunk) {  // its memory shrank meanwhile
          chunk = lanes[i]->chunk();
          settled = false;
        }
      }
    }
  }
  // The GPUs take the ranges from one queue, in key order, as they finish the last. Every
  // range but the last holds exactly one chunk, so the formers cut their chunks at the range
  // boundaries.
  chunk_queue queue(pass.total, chunk, format.record_size, lanes.size());
  const std::uint64_t ranges = queue.chunks();
  pass.cuts.resize(ranges + 1);
  {
    trace_recorder::scope timer(trace, "select");
    arena.execute([&] {
      tbb::parallel_for(std::uint64_t{0}, ranges + 1, [&](std::uint64_t r) {
        pass.cuts[r] = cpu::select_cuts(pass.views, std::min(pass.total, r * chunk), format,
                                        options.descending);
      });
    });
  }

  const std::uint64_t g = std::min<std::uint64_t>(lanes.size(), ranges);
  detail::each_until_failure(g, [&](std::size_t i, const std::atomic<bool>& stop) {
    lanes[i]->sort(queue, stop);
  });
  // Every range is in the output: tearing the lanes down (freeing device memory, unlocking
  // the staging: 20-30 ms for 16 GiB on the H200 machine) waits until it is in place.
  return {ranges,
          std::make_shared<std::vector<std::unique_ptr<range_lane>>>(std::move(lanes))};
}

}  // namespace gpusort::pipeline
