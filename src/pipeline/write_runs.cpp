// The end of every strategy that forms runs: the runs into the output.
#include "pipeline/merge_runs.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

strategy_result write_runs(const sort_context& ctx, run_store& store) {
  strategy_result result;
  result.records = store.total_records();
  result.runs = store.runs().size();
  result.spilled = store.any_spilled();
  const std::uint64_t bytes = result.records * store.record_size();
  io::output_sink& sink = ctx.output.open(bytes);
  if (store.runs().size() == 1 && store.runs()[0].resident()) {
    const sorted_run& run = store.runs()[0];
    sink.write(0, {run.memory.data(), static_cast<std::size_t>(bytes)});
  } else if (!store.runs().empty()) {
    result.merge_passes =
        merge_runs(store, sink, ctx.options.format, ctx.options.descending, ctx.plan.layout,
                   ctx.trace);
  }
  sink.finish();
  return result;
}

}  // namespace gpusort::pipeline
