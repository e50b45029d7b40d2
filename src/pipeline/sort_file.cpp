// gpusort::sort_file and sort_buffer: the driver that reads like the data flow.
#include <sched.h>

#include <tbb/task_arena.h>

#include <algorithm>
#include <cstring>
#include <optional>
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
#ifdef GPUSORT_HAVE_CUDA
#include "gpu/run_former.hpp"
#include "pipeline/gpu_run_formation.hpp"
#endif

namespace gpusort {
namespace {

std::uint64_t host_budget(const sort_options& options) {
  const std::uint64_t physical = physical_memory_bytes();
  const std::uint64_t asked = options.buffer_bytes != 0 ? options.buffer_bytes : physical / 2;
  return std::clamp(asked, min_buffer_bytes, std::max(physical, min_buffer_bytes));
}

/// The CPUs this process may run on (its affinity mask), at least 1.
unsigned available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned thread_count(const sort_options& options) {
  const unsigned cpus = available_cpus();
  return options.threads != 0 ? std::min(options.threads, cpus) : cpus;
}

void notice(const sort_options& options, const std::string& line) {
  if (options.verbose) std::fprintf(stderr, "gpusort: %s\n", line.c_str());
}

/// Whether the options let gpusort sort on a GPU at all (whether one is present is decided by
/// choose_device).
bool gpu_allowed(const sort_options& options) {
#ifdef GPUSORT_HAVE_CUDA
  return options.algo != algorithm::cpu && options.devices.how != device_selection::mode::none;
#else
  static_cast<void>(options);
  return false;
#endif
}

/// The GPU to sort on, or nothing for the CPU path. Throws when a GPU was demanded and none
/// can be used.
std::optional<int> choose_device(const sort_options& options) {
  const bool demanded = options.algo == algorithm::onesweep ||
                        options.devices.how == device_selection::mode::list;
  if (options.algo == algorithm::cpu || options.devices.how == device_selection::mode::none)
    return std::nullopt;
#ifdef GPUSORT_HAVE_CUDA
  const int count = gpu::device_count();
  if (count == 0) {
    GPUSORT_EXPECTS(!demanded, "no usable CUDA device found (needed by --algorithm onesweep or "
                               "--devices); use --devices none for the CPU path");
    notice(options, "no usable CUDA device found: sorting on the CPU");
    return std::nullopt;
  }
  const int id = options.devices.ids.empty() ? 0 : options.devices.ids.front();
  GPUSORT_EXPECTS(id < count, "--devices " + std::to_string(id) + ": only " +
                                  std::to_string(count) + " CUDA device(s) present");
  if (options.devices.ids.size() > 1)
    notice(options, "several devices given: this version sorts on the first, device " +
                        std::to_string(id));
  return id;
#else
  GPUSORT_EXPECTS(!demanded, "this gpusort was built without CUDA (see --version); use "
                             "--devices none or rebuild with nvcc present");
  notice(options, "built without CUDA: sorting on the CPU");
  return std::nullopt;
#endif
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
  // Open everything first: a missing input or an unwritable output (the trace too) fails
  // before any work, and nothing can fail once the output has replaced the old one.
  io::input_source input(inputs, options.format.record_size);
  io::output_file out(output);
  std::optional<io::output_file> trace_out;
  if (!options.trace_path.empty()) trace_out.emplace(options.trace_path);
  if (options.buffer_bytes != 0 && host_budget(options) != options.buffer_bytes)
    notice(options, "host budget " + format_bytes(options.buffer_bytes) + " adjusted to " +
                        format_bytes(host_budget(options)));
  if (options.threads > thread_count(options))
    notice(options, std::to_string(options.threads) + " threads asked, " +
                        std::to_string(thread_count(options)) + " CPUs available: using " +
                        std::to_string(thread_count(options)));

  sort_stats stats;
  stats.backend = "cpu";
  tbb::task_arena arena(static_cast<int>(thread_count(options)));
  arena.execute([&] {
    const record_format& format = options.format;
    const std::uint64_t budget = host_budget(options);
    std::unique_ptr<io::output_sink> sink;
    std::uint64_t sink_bytes = 0;
    // Opened once: the GPU path and the single-run CPU path open it before the sort. One
    // mapping of the whole file serves them (see make_output_sink); the merges write windows.
    bool whole_mapping = false;
    auto open_sink = [&](std::uint64_t total) -> io::output_sink& {
      if (sink != nullptr) {
        GPUSORT_EXPECTS(total == sink_bytes, "output opened for " + std::to_string(sink_bytes) +
                                                 " bytes, written with " + std::to_string(total));
        return *sink;
      }
      sink = io::make_output_sink(out, total, io::write_method::automatic, &trace, whole_mapping,
                                format.record_size);
      sink_bytes = total;
      return *sink;
    };
    const std::optional<std::uint64_t> known = input.known_size();
    if (gpu_allowed(options) && known && *known <= budget) {
      // A GPU sort leaves the host's cores idle until the sorted records come back: fault the
      // output's pages in meanwhile, from the start (CUDA takes ~0.2 s to initialise), so that
      // writing the output is a copy. Half the threads: 8 of 16 on the H200 machine ended the
      // 8 GiB sort soonest (4 prefaulted too slowly, 16 slowed the read and the pinning).
      // Bounded by the host budget: prefaulting an output larger than memory would only evict
      // it again. Without a GPU the CPU path uses the pages as well.
      whole_mapping = true;
      open_sink(*known).prefault(std::max(1u, thread_count(options) / 2));
    }
    const std::optional<int> device = choose_device(options);
    if (device) whole_mapping = true;
    // The merge's fan-in and windows follow the host budget whatever formed the runs.
    const pipeline::sort_plan plan = pipeline::make_cpu_plan(
        input.known_size(), format, budget,
        [&](std::uint64_t records) { return cpu::sort_scratch_bytes(records, format); });
    // GPU runs need no host scratch: they stay resident while they fit the whole budget.
    pipeline::run_store runs(format.record_size, device ? budget : plan.resident_bytes,
                             options.temp_dir, &trace);

    // Sorted runs: chunks sorted on the GPU, or read and radix-sorted on the host.
    if (device) {
#ifdef GPUSORT_HAVE_CUDA
      pipeline::gpu_stage_config gpu_config;
      gpu_config.device = *device;
      gpu_config.host_budget = budget;
      const pipeline::gpu_run_result r = pipeline::form_runs_on_gpu(
          input, options, gpu_config, runs, open_sink, arena, &trace);
      stats.backend = r.device_name;
      notice(options, "sorted " + input.describe() + " (" + describe(format) + ") on " +
                          r.device_name);
      if (r.wrote_output) {
        stats.records = r.records;
        stats.input_bytes = r.records * format.record_size;
        stats.runs = r.records > 0 ? 1 : 0;
        if (sink == nullptr) open_sink(0);
        sink->finish();
        return;
      }
#endif
    } else {
      notice(options, "sorting " + input.describe() + " (" + describe(format) +
                          ") on the CPU; " + plan.describe(format));
      // One run into a file: the sort's last pass writes straight into the output mapping.
      const std::uint64_t input_bytes = input.known_size().value_or(0);
      if (plan.single_run && input_bytes > 0) {
        whole_mapping = true;
        if (pipeline::sort_single_run_into(input, plan, format, options.descending,
                                           open_sink(input_bytes), input_bytes,
                                           thread_count(options), &trace)) {
          stats.records = input_bytes / format.record_size;
          stats.input_bytes = input_bytes;
          stats.runs = 1;
          sink->finish();
          return;
        }
      }
      pipeline::form_runs_on_cpu(input, plan, format, options.descending, runs, &trace);
    }
    const std::uint64_t records = runs.total_records();
    stats.records = records;
    stats.input_bytes = records * format.record_size;
    stats.runs = runs.runs().size();
    stats.spilled = runs.any_spilled();

    // Output: one run is written as it is; several are merged into the output.
    open_sink(stats.input_bytes);
    if (runs.runs().size() == 1 && runs.runs()[0].resident()) {
      const pipeline::sorted_run& run = runs.runs()[0];
      sink->write(0, {run.memory.data(), static_cast<std::size_t>(stats.input_bytes)});
    } else if (!runs.runs().empty()) {
      stats.merge_passes = pipeline::merge_runs(runs, *sink, format, options.descending, plan,
                                                &trace);
    }
    sink->finish();
  });
  if (trace_out) {
    // Written before the output replaces the old one, so that a trace that cannot be written
    // fails the sort while the old output is still in place; the trace ends before "commit".
    const std::string json = trace.chrome_trace();
    const std::unique_ptr<io::output_sink> trace_sink =
        io::make_output_sink(*trace_out, json.size(), io::write_method::uring);
    trace_sink->write(0, std::as_bytes(std::span(json)));
    trace_sink->finish();
    trace_out->commit(options.fsync, json.size());
  }
  {
    trace_recorder::scope timer(&trace, "commit");
    out.commit(options.fsync, stats.input_bytes);
  }
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
  return std::string("gpusort ") + GPUSORT_VERSION + " (CUDA backend, sm_" +
         GPUSORT_CUDA_ARCHS + ")";
#else
  return std::string("gpusort ") + GPUSORT_VERSION + " (CPU only)";
#endif
}

}  // namespace gpusort
