// Strategy gpu_partition: a file whose GPU runs would spill past the host budget is sorted
// through the output itself, with no runs and no merge. Its keys are first counted into key
// ranges of at most one GPU chunk each (key_partition.hpp); pass one sorts the file's chunks on
// the GPU and scatters each sorted chunk into the ranges' regions of the output
// (partition_writer.hpp); pass two sorts every range on the GPU where it lies. The sort dirties
// only the output's pages, where spilled runs and the output together passed the kernel's
// dirty-page limit, and holds no host memory beyond its staging. One GPU, one former for both
// passes (its chunk decides the ranges).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/trace.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/error.hpp"
#include "io/parallel_reader.hpp"
#include "pipeline/gpu_output_writer.hpp"
#include "pipeline/key_partition.hpp"
#include "pipeline/key_sample.hpp"
#include "pipeline/partition_writer.hpp"
#include "pipeline/pipeline_config.hpp"
#include "pipeline/range_feeder.hpp"
#include "pipeline/staging_pool.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {
namespace {

/// What one GPU holds for both passes: the staging, the sinks its former's runs go to (pass
/// one's partition_writer, pass two's output writer, chosen by run id) and the former.
class partition_lane {
 public:
  partition_lane(const sort_context& ctx, std::uint64_t total_bytes)
      : staging_bytes_(staging_size(total_bytes)) {
    const sort_options& options = ctx.options;
    const int device = *ctx.plan.device;
    auto pin = [this, device, trace = ctx.trace] {
      trace_recorder::scope timer(trace, "pin", staging_buffers * staging_bytes_);
      return std::make_shared<staging_pool>(staging_buffers, staging_bytes_, device);
    };
    std::future<std::shared_ptr<staging_pool>> pinning_in = std::async(std::launch::async, pin);
    staging_out_ = std::async(std::launch::async, pin).share();
    gpu::run_former_config config = range_former_config(options, device);
    config.max_chunk_records = ctx.plan.gpu_chunk_records;
    config.piece_bytes = staging_bytes_ / options.format.record_size * options.format.record_size;
    trace_recorder::scope timer(ctx.trace, "GPU setup");
    former_.emplace(config, forward_, ctx.trace);
    staging_in_ = pinning_in.get();
  }
  partition_lane(const partition_lane&) = delete;
  partition_lane& operator=(const partition_lane&) = delete;
  ~partition_lane() {
    // The former first: its thread calls the sinks, its callbacks release into staging_in_.
    former_.reset();
  }

  gpu::run_former& former() { return *former_; }
  /// Abandons the sort (run_former's destructor): no more callbacks into the sinks.
  void stop_former() { former_.reset(); }
  staging_pool& staging_in() { return *staging_in_; }
  std::size_t piece_bytes(std::uint32_t record_size) const {
    return staging_bytes_ / record_size * record_size;
  }

  /// Runs before `first_sorted` go to `scatter`, the others to `sorted`.
  void route(gpu::run_sink& scatter, gpu::run_sink& sorted, std::uint64_t first_sorted) {
    forward_.scatter = &scatter;
    forward_.sorted = &sorted;
    forward_.first_sorted = first_sorted;
  }
  [[nodiscard]] gpu_output_writer::staging_future staging_out() const { return staging_out_; }

 private:
  struct routing_sink final : gpu::run_sink {
    gpu::run_sink* scatter = nullptr;
    gpu::run_sink* sorted = nullptr;
    std::uint64_t first_sorted = 0;
    gpu::run_sink& to(std::uint64_t run) const { return run < first_sorted ? *scatter : *sorted; }
    std::span<std::byte> piece_buffer(std::uint64_t r, std::uint64_t o, std::size_t l) override {
      return to(r).piece_buffer(r, o, l);
    }
    void piece_done(std::uint64_t r, std::uint64_t o, std::span<std::byte> p) override {
      to(r).piece_done(r, o, p);
    }
    void run_done(std::uint64_t r, std::uint64_t n) override { to(r).run_done(r, n); }
  };

  std::size_t staging_bytes_;
  gpu_output_writer::staging_future staging_out_;
  std::shared_ptr<staging_pool> staging_in_;  // before the former: its callbacks release here
  routing_sink forward_;
  std::optional<gpu::run_former> former_;
};

}  // namespace

strategy_result sort_by_partition(const sort_context& ctx) {
  const sort_options& options = ctx.options;
  const record_format& format = options.format;
  const std::uint32_t rec = format.record_size;
  const auto fall_back = [&](const std::string& why) {
    // Before any output is written: the plan's runs, merged on the host.
    sort_plan runs_plan = ctx.plan;
    runs_plan.how = strategy::gpu_runs;
    strategy_result r = sort_on_gpu({ctx.input, ctx.output, options, runs_plan, ctx.arena,
                                     ctx.trace});
    r.notes.push_back("gpu-partition not taken: " + why + "; " + strategy_name(r.ran) +
                      " instead");
    return r;
  };
  const std::optional<std::uint64_t> known = ctx.input.known_size();
  GPUSORT_EXPECTS(known && ctx.plan.device, "sort_by_partition: needs a file and a GPU");
  const std::uint64_t total = *known / rec;
  if (ctx.input.input_count() != 1) return fall_back("the input is several files");
  const key_reader keys(format, options.descending);

  // The device sets up while the keys are sampled and counted.
  std::future<std::unique_ptr<partition_lane>> setting_up = std::async(
      std::launch::async, [&] { return std::make_unique<partition_lane>(ctx, *known); });
  const std::size_t splitters = partition_splitters(total, ctx.plan.gpu_chunk_records);
  const std::size_t sampled = splitters * partition_sample_per_splitter;
  std::optional<std::vector<std::uint64_t>> sample;
  {
    trace_recorder::scope timer(ctx.trace, "sample keys");
    ctx.arena.execute([&] {
      sample = read_cached_keys(
          ctx.input, format, options.descending, sampled,
          [&](std::uint64_t k) { return sample_position(k, sampled, total); });
    });
  }
  if (!sample) {
    setting_up.get().reset();
    return fall_back("the input is not in the page cache, and counting its keys would read it "
                     "from the disk twice");
  }
  const bucket_classifier classes(choose_splitters(std::move(*sample), splitters),
                                  keys.key_bits());
  // Counted while the device sets up. (Counted beside pass one instead, the count and pass
  // one's reads and writes held each other back: 5.07 s against 4.75 s in all,
  // tools/bench/results/2026-11-29-h200-partition.)
  std::vector<std::uint64_t> counts;
  {
    const std::optional<io::input_mapping> mapped = ctx.input.map_input(0, false);
    GPUSORT_EXPECTS(mapped.has_value(), "sort_by_partition: the input cannot be mapped");
    trace_recorder::scope timer(ctx.trace, "count keys", *known);
    counts = count_buckets(mapped->bytes().first(static_cast<std::size_t>(total * rec)), keys,
                           classes, ctx.arena);
  }
  std::unique_ptr<partition_lane> lane = setting_up.get();
  const std::uint64_t chunk = lane->former().chunk_records();
  std::optional<std::vector<key_range>> cut = group_ranges(classes, counts, chunk);
  if (!cut) {
    lane.reset();
    return fall_back("a key range between two sampled keys holds more than one GPU chunk of " +
                     std::to_string(chunk) + " records");
  }
  const std::vector<key_range>& ranges = *cut;
  std::vector<std::uint64_t> unsorted;  // pass two's ranges: those of more than one key
  for (std::size_t r = 0; r < ranges.size(); ++r)
    if (!ranges[r].one_key && ranges[r].records > 1) unsorted.push_back(r);
  io::output_sink* sink = nullptr;
  ctx.arena.execute([&] { sink = &ctx.output.open(*known); });
  // Only the output's pages are written here, and every range from pass one on: all of them
  // fault in from the start, where the plan (made for runs that spill) did not say so.
  if (!ctx.plan.output.prefault)
    sink->prefault(std::max(1u, ctx.plan.threads / 2), /*wait=*/false);
  const std::span<std::byte> out = ctx.output.mapping();
  if (out.empty() || !sink->parallel_writes()) {
    lane.reset();
    return fall_back("the output is not mapped whole");
  }

  // Pass one: the file's chunks, sorted, scattered into their ranges. Every chunk but the
  // last is whole, so the former's runs before `first_sorted` are pass one's.
  const std::uint64_t first_sorted = (total + chunk - 1) / chunk;
  partition_writer scatter(*lane->staging_out().get(), *sink, ranges, keys, ctx.arena);
  const std::function<io::output_sink&(std::uint64_t)> open_sink =
      [sink](std::uint64_t) -> io::output_sink& { return *sink; };
  gpu_output_writer sorted(lane->staging_out(), open_sink, *known, ctx.arena);
  sorted.set_run_offsets([&](std::uint64_t run) {
    return ranges[unsorted[run - first_sorted]].first_record * rec;
  });
  lane->route(scatter, sorted, first_sorted);
  gpu::run_former& former = lane->former();
  staging_pool& staging_in = lane->staging_in();
  const auto drain_both = [&] {
    try {
      scatter.drain();
    } catch (...) {
    }
    try {
      sorted.drain();
    } catch (...) {
    }
  };
  try {
    {
      io::transfer_config config;
      config.block_bytes = std::size_t{1} << 20;
      config.queue_depth = reader_queue_depth;
      io::parallel_reader reader(ctx.input, 0, *known, lane->piece_bytes(rec), reader_threads,
                                 staging_in, config, ctx.trace);
      for (;;) {
        const io::parallel_reader::piece got = reader.next();
        if (got.bytes == 0) break;
        std::byte* p = got.data;
        former.push({p, got.bytes}, [&staging_in, p] { staging_in.release(p); });
      }
    }
    staging_in.reopen();  // the reader closed it as it ended
    former.end_run();
    scatter.wait_for(total, [&] { former.check(); });

    // Pass two: every range of more than one key, sorted where it lies.
    range_feeder feeder(former, &staging_in, lane->piece_bytes(rec), ctx.arena, ctx.trace);
    for (const std::uint64_t r : unsorted) {
      const key_range& range = ranges[r];
      feeder.append(out.data() + range.first_record * rec, range.records * rec);
      feeder.end_run();
    }
    former.finish();
    sorted.drain();
  } catch (...) {
    // The former first (no more callbacks), then the writes that use the staging.
    lane->stop_former();
    drain_both();
    throw;
  }
  strategy_result result;
  result.ran = strategy::gpu_partition;
  result.records = total;
  // Pass one's chunks are scattered, not kept as sorted runs, and nothing is merged: one run,
  // as --stats counts it. The note below says how the ranges went.
  result.runs = total > 0 ? 1 : 0;
  result.gpu_sorter = former.choices();
  if (result.gpu_sorter.empty())
    result.gpu_sorter = gpu::to_string(chunk_algorithm_for(options, true));
  result.notes.push_back(std::to_string(ranges.size()) + " key ranges of at most " +
                         std::to_string(chunk) + " records, " +
                         std::to_string(unsorted.size()) + " sorted again in place");
  sink->finish();
  // The former's device memory and the page-locked staging go after the commit.
  result.release_after_commit.push_back(std::shared_ptr<partition_lane>(std::move(lane)));
  return result;
}

}  // namespace gpusort::pipeline
