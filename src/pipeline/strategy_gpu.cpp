// Strategies gpu_one_chunk and gpu_runs: chunks sorted on the GPU, written straight into the
// output when the input is one chunk, else kept as runs and merged on the host.
#include "pipeline/gpu_run_formation.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

strategy_result sort_on_gpu(const sort_context& ctx) {
  const sort_plan& plan = ctx.plan;
  run_store runs(ctx.options.format.record_size, plan.layout.resident_bytes,
                 ctx.options.temp_dir, ctx.trace);
  gpu_stage_config config;
  config.device = *plan.device;
  const gpu_run_result r = form_runs_on_gpu(
      ctx.input, ctx.options, config, runs,
      [&](std::uint64_t total) -> io::output_sink& { return ctx.output.open(total); }, ctx.arena,
      ctx.trace);
  if (!r.wrote_output) {
    // One run here is one chunk of (key, index) items, gathered on the host and written as it
    // is; several are merged, also when a planned single chunk no longer fit the device.
    strategy_result result = write_runs(ctx, runs);
    result.ran = result.runs > 1 ? strategy::gpu_runs : strategy::gpu_one_chunk;
    return result;
  }
  strategy_result result;
  result.ran = strategy::gpu_one_chunk;
  result.records = r.records;
  result.runs = r.records > 0 ? 1 : 0;
  ctx.output.open(r.records * ctx.options.format.record_size).finish();
  return result;
}

}  // namespace gpusort::pipeline
