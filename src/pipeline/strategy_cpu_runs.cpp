// Strategies cpu_runs and cpu_spilled_runs: runs read and radix-sorted on the host, kept in
// memory up to plan.layout.resident_bytes and spilled beyond, then merged into the output.
#include <cstdint>
#include <optional>

#include "pipeline/cpu_run_formation.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

strategy_result sort_cpu_runs(const sort_context& ctx) {
  run_store runs(ctx.options.format.record_size, ctx.plan.layout.resident_bytes,
                 ctx.options.temp_dir, ctx.plan.bypass_page_cache, ctx.trace);
  // Runs are merged once all have formed, from the output's start: its prefault, planned from
  // the start for the runs of a file (or for a GPU that did not turn up), keeps its distance.
  if (const std::optional<std::uint64_t> size = ctx.input.known_size())
    ctx.output.keep_prefault_beside_runs(*size);
  // An input read past the page cache is not mapped, which would fill the cache after all.
  form_runs_on_cpu(ctx.input, ctx.plan.layout, ctx.options.format, ctx.options.descending,
                   !ctx.plan.bypass_page_cache, runs, ctx.trace);
  // A stream's output opens when the merge starts (mapped whole where it fits the budget):
  // its prefault keeps the same distance, now that the runs' size is known.
  if (!ctx.input.known_size())
    ctx.output.keep_prefault_beside_runs(runs.total_records() * ctx.options.format.record_size);
  strategy_result result = write_runs(ctx, runs);
  result.ran = runs.any_spilled() || ctx.plan.how == strategy::cpu_spilled_runs
                   ? strategy::cpu_spilled_runs
                   : strategy::cpu_runs;
  result.releasing = runs.release_in_background();
  return result;
}

}  // namespace gpusort::pipeline
