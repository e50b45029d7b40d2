// gpusort::sort_file and sort_buffer: the driver that reads like the data flow.
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <cstdio>
#include <thread>

#include "core/host_buffer.hpp"
#include "core/parse_size.hpp"
#include "core/trace.hpp"
#include "cpu/radix_sort.hpp"
#include "gpusort/sort.hpp"
#include "io/input_source.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "pipeline/cpu_run_formation.hpp"
#include "pipeline/merge_runs.hpp"
#include "pipeline/run_store.hpp"
#include "pipeline/sort_plan.hpp"

namespace gpusort {
namespace {

std::uint64_t host_budget(const sort_options& options) {
  return options.buffer_bytes != 0 ? options.buffer_bytes : physical_memory_bytes() / 2;
}

unsigned thread_count(const sort_options& options) {
  return options.threads != 0 ? options.threads
                              : std::max(1u, std::thread::hardware_concurrency());
}

void notice(const sort_options& options, const std::string& line) {
  if (options.verbose) std::fprintf(stderr, "gpusort: %s\n", line.c_str());
}

sort_stats finish_stats(const trace_recorder& trace, sort_stats stats) {
  stats.wall_seconds = trace.now();
  stats.stages = trace.summarize();
  return stats;
}

}  // namespace

sort_stats sort_file(const std::vector<std::string>& inputs, const std::string& output,
                     const sort_options& options) {
  options.format.validate();
  trace_recorder trace;
  // Open everything first: a missing input or an unwritable output fails before any work.
  io::input_source input(inputs, options.format.record_size);
  io::output_file out(output);

  sort_stats stats;
  stats.backend = "cpu";
  tbb::task_arena arena(static_cast<int>(thread_count(options)));
  arena.execute([&] {
    const record_format& format = options.format;
    const std::uint64_t budget = host_budget(options);
    const pipeline::sort_plan plan = pipeline::make_cpu_plan(
        input.known_size(), format, budget,
        [&](std::uint64_t records) { return cpu::sort_scratch_bytes(records, format); });
    notice(options, "sorting " + input.describe() + " (" + describe(format) + ") on the CPU; " +
                        plan.describe(format));

    // Sorted runs: read chunks and radix-sort them on the host.
    pipeline::run_store runs(format.record_size, plan.resident_bytes, options.temp_dir, &trace);
    pipeline::form_runs_on_cpu(input, plan, format, options.descending, runs, &trace);
    const std::uint64_t records = runs.total_records();
    stats.records = records;
    stats.input_bytes = records * format.record_size;
    stats.runs = runs.runs().size();
    stats.spilled = runs.any_spilled();

    // Output: one run is written as it is; several are merged into the output.
    std::unique_ptr<io::output_sink> sink =
        io::make_output_sink(out, stats.input_bytes, io::write_method::automatic, &trace);
    if (runs.runs().size() == 1 && runs.runs()[0].resident()) {
      const pipeline::sorted_run& run = runs.runs()[0];
      sink->write(0, {run.memory.data(), static_cast<std::size_t>(stats.input_bytes)});
    } else if (!runs.runs().empty()) {
      stats.merge_passes = pipeline::merge_runs(runs, *sink, format, options.descending, plan,
                                                &trace);
    }
    sink->finish();
  });
  {
    trace_recorder::scope timer(&trace, "commit");
    out.commit(options.fsync);
  }
  stats = finish_stats(trace, std::move(stats));
  if (!options.trace_path.empty()) trace.write_chrome_trace(options.trace_path);
  return stats;
}

sort_stats sort_buffer(std::span<std::byte> data, const sort_options& options) {
  options.format.validate();
  const record_format& format = options.format;
  GPUSORT_EXPECTS(data.size() % format.record_size == 0,
                  "buffer size " + std::to_string(data.size()) +
                      " is not a multiple of the record size " +
                      std::to_string(format.record_size));
  trace_recorder trace;
  sort_stats stats;
  stats.backend = "cpu";
  stats.records = data.size() / format.record_size;
  stats.input_bytes = data.size();
  stats.runs = stats.records > 0 ? 1 : 0;
  tbb::task_arena arena(static_cast<int>(thread_count(options)));
  arena.execute([&] {
    host_buffer scratch(static_cast<std::size_t>(cpu::sort_scratch_bytes(stats.records, format)));
    trace_recorder::scope timer(&trace, "sort", data.size());
    std::byte* sorted = cpu::sort_records(data.data(), scratch.data(), stats.records, format,
                                          options.descending);
    if (sorted != data.data()) std::memcpy(data.data(), sorted, data.size());
  });
  return finish_stats(trace, std::move(stats));
}

std::string version_string() {
#ifdef GPUSORT_HAVE_CUDA
  return std::string("gpusort ") + GPUSORT_VERSION + " (CUDA backend, sm_90)";
#else
  return std::string("gpusort ") + GPUSORT_VERSION + " (CPU only)";
#endif
}

}  // namespace gpusort
