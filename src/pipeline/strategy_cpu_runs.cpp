// Strategies cpu_runs and cpu_spilled_runs: runs read and radix-sorted on the host, kept in
// memory up to plan.layout.resident_bytes and spilled beyond, then merged into the output.
#include "pipeline/cpu_run_formation.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

strategy_result sort_cpu_runs(const sort_context& ctx) {
  run_store runs(ctx.options.format.record_size, ctx.plan.layout.resident_bytes,
                 ctx.options.temp_dir, ctx.plan.bypass_page_cache, ctx.trace);
  // An input read past the page cache is not mapped, which would fill the cache after all.
  std::future<void> unmapping =
      form_runs_on_cpu(ctx.input, ctx.plan.layout, ctx.options.format, ctx.options.descending,
                       !ctx.plan.bypass_page_cache, runs, ctx.trace);
  strategy_result result;
  try {
    result = write_runs(ctx, runs);
  } catch (...) {
    if (unmapping.valid()) unmapping.wait();
    throw;
  }
  result.ran = runs.any_spilled() || ctx.plan.how == strategy::cpu_spilled_runs
                   ? strategy::cpu_spilled_runs
                   : strategy::cpu_runs;
  std::future<void> releasing = runs.release_in_background();
  if (!unmapping.valid()) {
    result.releasing = std::move(releasing);
  } else {
    result.releasing = std::async(std::launch::async, [r = std::move(releasing),
                                                       u = std::move(unmapping)]() mutable {
      u.get();
      r.get();
    });
  }
  return result;
}

}  // namespace gpusort::pipeline
