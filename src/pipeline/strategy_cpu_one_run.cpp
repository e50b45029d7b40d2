// Strategy cpu_one_run: the whole input is one run, radix-sorted from the input's page cache
// into the output mapping (no copy of the sorted run; through a scratch buffer where the output
// passes the kernel's write-back threshold, output_plan::write_once).
#include "pipeline/cpu_run_formation.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

strategy_result sort_cpu_one_run(const sort_context& ctx) {
  const std::uint64_t bytes = ctx.input.known_size().value_or(0);
  io::output_sink& sink = ctx.output.open(bytes);
  // A prefault started for a GPU that did not turn up stops where it is: faulting a page in
  // writes it, and the sort is to write each page once.
  if (ctx.plan.output.write_once) ctx.output.limit_prefault(0);
  if (!sort_single_run_into(ctx.input, ctx.plan.layout, ctx.options.format,
                            ctx.options.descending, sink, bytes, ctx.plan.threads,
                            ctx.plan.output.write_once, ctx.trace))
    return sort_cpu_runs(ctx);  // the output is not mapped (a pipe): one run, written out
  sink.finish();
  strategy_result result;
  result.ran = strategy::cpu_one_run;
  result.records = bytes / ctx.options.format.record_size;
  result.runs = 1;
  return result;
}

}  // namespace gpusort::pipeline
