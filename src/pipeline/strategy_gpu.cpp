// Strategies gpu_one_chunk, gpu_runs and gpu_ranges: chunks sorted on the GPU, written
// straight into the output when the input is one chunk; else kept as runs (formed by every
// GPU of the plan, each from its share of the input), which are either merged on the host or
// cut into key ranges that the GPUs sort again into the output.
#include <algorithm>
#include <cstdint>
#include <future>
#include <optional>

#include "pipeline/gpu_range_sort.hpp"
#include "pipeline/gpu_run_formation.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

strategy_result sort_on_gpu(const sort_context& ctx) {
  const sort_plan& plan = ctx.plan;
  run_store runs(ctx.options.format.record_size, plan.layout.resident_bytes,
                 ctx.options.temp_dir, plan.bypass_page_cache, ctx.trace);
  gpu_stage_config config;
  config.devices = plan.sort_devices.empty() ? std::vector<int>{*plan.device} : plan.sort_devices;
  // Several GPUs cut their shares into the plan's chunks (planned on the one with the least
  // memory free), not each into as large a chunk as its own memory holds.
  if (config.devices.size() > 1) config.max_chunk_records = plan.gpu_chunk_records;
  // Runs that go back to the GPU are page-locked as they form: no staging copy either way.
  // (Not where the input passes the runs' room: a run that spills drops its lock, which was
  // then taken for nothing, at about 23 GB/s, beside the copies it stalls.)
  const std::optional<std::uint64_t> input_size = ctx.input.known_size();
  if (plan.how == strategy::gpu_ranges &&
      (!input_size || *input_size <= plan.layout.resident_bytes))
    config.pin_chunk_records = plan.gpu_chunk_records;
  const auto open_output = [&](std::uint64_t total) -> io::output_sink& {
    return ctx.output.open(total);
  };
  // The host merge writes the output from its start beside the runs in memory, and so do
  // ranges of spilled runs: their prefault keeps its distance. A file's output faults in from
  // the start; a stream's opens when the stream ends.
  const auto keep_prefault_beside_runs = [&](std::uint64_t bytes) {
    if (plan.how == strategy::gpu_runs ||
        (plan.how == strategy::gpu_ranges && bytes > plan.layout.resident_bytes))
      ctx.output.keep_prefault_beside_runs(bytes);
  };
  if (input_size) keep_prefault_beside_runs(*input_size);
  gpu_run_result r =
      form_runs_on_gpu(ctx.input, ctx.options, config, runs, open_output, ctx.arena, ctx.trace);
  if (!r.wrote_output && !ctx.input.known_size())
    keep_prefault_beside_runs(runs.total_records() * ctx.options.format.record_size);
  strategy_result result;
  result.gpu_sorter = r.sorter;
  if (r.wrote_output) {
    result.ran = strategy::gpu_one_chunk;
    result.records = r.records;
    result.runs = r.records > 0 ? 1 : 0;
    result.release_after_commit = std::move(r.release_after_commit);
    ctx.output.open(r.records * ctx.options.format.record_size).finish();
    return result;
  }
  // The range pass reads spilled runs through mappings of the page cache (not those spilled
  // with O_DIRECT, which the host merge reads in windows), where --merge-on gpu asks for it.
  const bool ranges_read_all =
      !runs.any_spilled() ||
      (ctx.options.merge == merge_location::gpu &&
       std::all_of(runs.runs().begin(), runs.runs().end(),
                   [](const sorted_run& run) { return run.resident() || map_spilled(run); }));
  if (plan.how == strategy::gpu_ranges && runs.runs().size() > 1 && ranges_read_all) {
    // The range pass takes the devices' memory again.
    for (std::future<void>& t : r.teardowns) t.get();
    result.ran = strategy::gpu_ranges;
    result.records = runs.total_records();
    result.runs = runs.runs().size();
    result.spilled = runs.any_spilled();
    range_sort_result sorted =
        sort_ranges_on_gpu(runs, ctx.options, config.devices, open_output, ctx.arena, ctx.trace);
    result.release_after_commit.push_back(std::move(sorted.leftovers));
    result.releasing = runs.release_in_background();
    ctx.output.open(result.records * ctx.options.format.record_size).finish();
    return result;
  }
  // One run here is one chunk of a stream, or of (key, index) items gathered on the host, and
  // is written as it is; several are merged, also when a planned single chunk no longer fit
  // the device or a stream's runs spilled. Spilled runs are read back through windows of the
  // memory budget: the page-locked staging goes first, as the budget assumes.
  if (runs.any_spilled())
    for (std::future<void>& t : r.teardowns) t.get();
  result = write_runs(ctx, runs);
  result.gpu_sorter = r.sorter;
  result.ran = result.runs > 1 ? strategy::gpu_runs : strategy::gpu_one_chunk;
  result.releasing = runs.release_in_background();
  return result;
}

}  // namespace gpusort::pipeline
