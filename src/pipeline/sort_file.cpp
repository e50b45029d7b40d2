// gpusort::sort_file and sort_buffer: open, plan, run the plan's strategy, commit.
#include <tbb/task_arena.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include "core/host_buffer.hpp"
#include "core/parse_size.hpp"
#include "core/progress.hpp"
#include "core/trace.hpp"
#include "cpu/key_order.hpp"
#include "cpu/radix_sort.hpp"
#include "gpusort/sort.hpp"
#include "gpusort/version.hpp"
#include "io/input_source.hpp"
#include "io/npy_header.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "pipeline/input_format.hpp"
#include "pipeline/key_sample.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/strategy.hpp"
#include "pipeline/unique_output.hpp"

namespace gpusort {
namespace {

void notice(const sort_options& options, const std::string& line) {
  if (options.verbose) std::fprintf(stderr, "gpusort: %s\n", line.c_str());
}

sort_stats finish_stats(const trace_recorder& trace, sort_stats stats) {
  stats.wall_seconds = trace.now();
  stats.stages = trace.summarize();
  return stats;
}

pipeline::strategy_result run_strategy(const pipeline::sort_context& ctx) {
  switch (ctx.plan.how) {
    case pipeline::strategy::gpu_one_chunk:
    case pipeline::strategy::gpu_runs:
    case pipeline::strategy::gpu_ranges: return pipeline::sort_on_gpu(ctx);
    case pipeline::strategy::gpu_exchange: return pipeline::sort_by_exchange(ctx);
    case pipeline::strategy::gpu_partition: return pipeline::sort_by_partition(ctx);
    case pipeline::strategy::cpu_one_run: return pipeline::sort_cpu_one_run(ctx);
    case pipeline::strategy::cpu_runs:
    case pipeline::strategy::cpu_spilled_runs: return pipeline::sort_cpu_runs(ctx);
    case pipeline::strategy::merge_inputs: return pipeline::merge_sorted_inputs(ctx);
  }
  throw error("sort: unknown strategy");
}

/// The trace, written before the output replaces the old one, so that a trace that cannot be
/// written fails the sort while the old output is still in place; it ends before "commit".
void write_trace(const trace_recorder& trace, io::output_file& trace_out, bool fsync) {
  const std::string json = trace.chrome_trace();
  const std::unique_ptr<io::output_sink> sink =
      io::make_output_sink(trace_out, json.size(), io::write_method::uring);
  sink->write(0, std::as_bytes(std::span(json)));
  sink->finish();
  trace_out.commit(fsync, json.size());
}

}  // namespace

sort_stats sort_file(const std::vector<std::string>& inputs, const std::string& output,
                     const sort_options& options) {
  return sort_file(inputs, output, options, committed_callback{});
}

sort_stats sort_file(const std::vector<std::string>& inputs, const std::string& output,
                     const sort_options& requested, const committed_callback& committed) {
  requested.format.validate();
  trace_recorder trace;
  // Open everything first: a missing input or an unwritable output (the trace too) fails
  // before any work, and nothing can fail once the output has replaced the old one.
  io::input_source input(inputs, requested.format.record_size);
  const sort_options options = pipeline::with_input_format(requested, input);
  // A pipe's helper threads are CPU work too: half of --parallel, as half the CPUs without it.
  if (options.threads != 0) input.limit_pipe_lanes(options.threads / 2);
  io::output_file out(output);
  std::optional<io::output_file> trace_out;
  if (!options.trace_path.empty()) trace_out.emplace(options.trace_path);
  // .npy in, .npy out: the input's header, with the shape of what is written. Every sink
  // writes the records after it; its length is fixed now, for the most records there can be.
  const io::npy_header* npy = input.npy();
  std::uint64_t npy_header_bytes = 0;
  if (npy != nullptr) {
    GPUSORT_EXPECTS(!(options.unique && out.is_stream()),
                    (output == "-" ? std::string("standard output") : output) +
                        ": --unique cannot write an .npy file that is written in order (a "
                        "pipe, a device, >> a file): its header goes first and gives the "
                        "number of records, which only the end of the sort knows; write to a "
                        "file (or redirect stdout to one with >)");
    npy_header_bytes = io::npy_output_header_bytes(*npy, input.npy_records());
    out.set_header(io::format_npy_header(*npy, input.npy_records(), npy_header_bytes));
  }

  std::optional<progress_reporter> progress;
  if (options.progress) progress.emplace(trace, input.known_size(), STDERR_FILENO);
  const unsigned cpus = pipeline::available_cpus();
  tbb::task_arena arena(static_cast<int>(pipeline::thread_count(options, cpus)));
  // Between the CPU crossovers of the key spreads, a sample of the keys picks the backend.
  const pipeline::key_spread spread =
      pipeline::crossover_depends_on_keys(options, input.known_size(), cpus)
          ? arena.execute([&] {
              return pipeline::sample_key_spread(input, options.format, options.descending);
            })
          : pipeline::key_spread::unknown;
  pipeline::host_facts facts = pipeline::probe_host(options, input.known_size(), spread);
  facts.output_in_place = !out.is_private_file();
  pipeline::strategy_result result;
  std::string backend;
  // --unique: our own temporary file is compacted after the sort; an output written in place
  // (a pipe, stdout redirected to a file, which may not be readable) is filtered on its way
  // out, in order.
  const bool unique_stream = options.unique && !out.is_private_file();
  std::optional<std::uint64_t> unique_stream_bytes;
  std::uint64_t output_records = 0;
  bool compacted = false;  // --unique already applied to the mapped output
  // Outlives the commit: unmapping a mapped output is left until the output is in place.
  std::optional<pipeline::output_opener> output_holder;
  arena.execute([&] {
    // The output first: an output to be prefaulted starts faulting while CUDA initialises.
    const pipeline::output_plan writing = pipeline::plan_output(input.known_size(), options, facts);
    pipeline::output_opener& opener =
        output_holder.emplace(out, writing, options.format, unique_stream, &trace);
    if (writing.prefault && input.known_size()) opener.open(*input.known_size());
    pipeline::probe_gpu(options, facts, input.known_size());
    const pipeline::sort_plan plan = pipeline::make_plan(input.known_size(), options, facts);
    notice(options, "sorting " + input.describe() + " (" +
                        (npy != nullptr ? ".npy of " + npy->dtype + ", " : std::string()) +
                        describe(options.format) + "); " + plan.describe(options.format));
    if (plan.bypass_page_cache) input.read_past_cache();
    result = run_strategy({input, opener, options, plan, arena, &trace});
    for (const std::string& line : result.notes) notice(options, line);
    backend = !plan.on_gpu() ? std::string("cpu")
              : plan.sort_devices.size() > 1
                  ? std::to_string(plan.sort_devices.size()) + " x " + plan.device_name
                  : plan.device_name;
    unique_stream_bytes = opener.unique_stream_bytes();
    // --unique into a mapped output: compacted before the mapping goes.
    const std::span<std::byte> mapped = opener.mapping();
    if (options.unique && !unique_stream && !mapped.empty()) {
      output_records = pipeline::unique_in_memory(
          mapped.first(static_cast<std::size_t>(result.records * options.format.record_size)),
          options.format, pipeline::host_budget(options, facts.usable_memory) / 4, &trace);
      compacted = true;
    }
  });
  const std::uint32_t rec = options.format.record_size;
  if (!compacted) output_records = result.records;
  if (unique_stream_bytes) {
    output_records = *unique_stream_bytes / rec;
  } else if (options.unique && !compacted) {
    arena.execute([&] {
      output_records = pipeline::unique_in_file(
          out.fd(), out.data_offset(), result.records, options.format,
          pipeline::host_budget(options, facts.usable_memory) / 4, &trace);
    });
  }
  if (options.unique && !unique_stream) out.shrink(result.records * rec, output_records * rec);
  // Nothing reads the input any more; an input that is also the output must not be held open
  // past the commit, which hands the replaced file to another process to free.
  input.close();

  sort_stats stats;
  stats.backend = backend;
  stats.strategy = pipeline::strategy_name(result.ran);
  stats.gpu_sorter = result.gpu_sorter;
  stats.records = result.records;
  stats.output_records = output_records;
  stats.input_bytes = result.records * rec;
  stats.runs = result.runs;
  stats.merge_passes = result.merge_passes;
  stats.spilled = result.spilled;
  if (trace_out) write_trace(trace, *trace_out, options.fsync);
  if (npy != nullptr)
    out.set_header(io::format_npy_header(*npy, output_records, npy_header_bytes));
  {
    trace_recorder::scope timer(&trace, "commit");
    out.commit(options.fsync, output_records * rec);
  }
  progress.reset();  // its line is erased before the caller prints anything
  // What the sort held goes once the output is in place: the output's mapping (0.46-0.57 s
  // to unmap 16 GiB on the H200 machine) and the runs' memory (0.8 s for 16 GiB of runs),
  // then the rest as the sort's objects end.
  std::exception_ptr failed;
  if (committed) {
    try {
      committed(finish_stats(trace, stats));
    } catch (...) {
      failed = std::current_exception();
    }
  }
  result.release_after_commit.clear();
  output_holder.reset();
  if (result.releasing.valid()) result.releasing.get();
  if (failed) std::rethrow_exception(failed);
  return finish_stats(trace, std::move(stats));
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
  tbb::task_arena arena(
      static_cast<int>(pipeline::thread_count(options, pipeline::available_cpus())));
  arena.execute([&] {
    host_buffer scratch(static_cast<std::size_t>(cpu::sort_scratch_bytes(stats.records, format)));
    trace_recorder::scope timer(&trace, "sort", data.size());
    std::byte* sorted = cpu::sort_records(data.data(), scratch.data(), stats.records, format,
                                          options.descending);
    if (sorted != data.data()) std::memcpy(data.data(), sorted, data.size());
  });
  stats.output_records = stats.records;
  if (options.unique) {
    trace_recorder::scope timer(&trace, "unique", data.size());
    stats.output_records =
        cpu::unique_records(data.data(), stats.records, nullptr, data.data(), format);
  }
  return finish_stats(trace, std::move(stats));
}

std::string version_string() {
  return std::string("gpusort ") + GPUSORT_VERSION + " (" + pipeline::backend_description() + ")";
}

}  // namespace gpusort
