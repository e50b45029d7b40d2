// The strategies a sort_plan names, one entry point each, and what they share: the opened
// input and output, the plan, the arena and the trace. A CPU-only build links gpu_stub.cpp
// in place of the GPU ones.
#pragma once

#include <tbb/task_arena.h>

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "gpusort/options.hpp"
#include "io/input_source.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/run_store.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

/// The output sink, opened once for the whole output in the plan's output mode: sort_file
/// opens it before the GPU is probed when it is to be prefaulted, the single-run strategy
/// before it sorts, the merges when the number of records is known.
/// With `unique_stream`, the sink of an output written in place drops records equal to the
/// one in front (--unique; our own temporary file is compacted after the sort instead, see
/// unique_output.hpp).
class output_opener {
 public:
  output_opener(io::output_file& out, const output_plan& plan, const record_format& format,
                bool unique_stream, trace_recorder* trace)
      : out_(out), plan_(plan), format_(format), unique_stream_(unique_stream), trace_(trace) {}

  /// The sink for `total_bytes`; later calls must name the same size.
  io::output_sink& open(std::uint64_t total_bytes);
  /// Keeps the plan's prefault at most `bytes` ahead of the writes (io::output_sink::prefault),
  /// from now on or from the open.
  void limit_prefault(std::uint64_t bytes);
  /// For a merge that writes the output from its start while `run_bytes` of runs sit in
  /// memory: keeps a planned prefault within the kernel's write-back threshold ahead of it
  /// (output_plan::prefault_ahead_beside_runs), or pages faulted in are written back before
  /// the merge writes them and fault again.
  void keep_prefault_beside_runs(std::uint64_t run_bytes) {
    if (plan_.prefault) limit_prefault(plan_.prefault_ahead_beside_runs(run_bytes));
  }
  [[nodiscard]] bool is_open() const noexcept { return sink_ != nullptr; }
  /// Bytes that reached a --unique stream output (after finish()); nullopt for other outputs.
  [[nodiscard]] std::optional<std::uint64_t> unique_stream_bytes() const;
  /// The whole output, while the sink maps it whole (io::output_sink::mapping); else empty.
  [[nodiscard]] std::span<std::byte> mapping() const {
    return sink_ != nullptr ? sink_->mapping() : std::span<std::byte>{};
  }

 private:
  io::output_file& out_;
  output_plan plan_;
  record_format format_;
  bool unique_stream_;
  trace_recorder* trace_;
  std::unique_ptr<io::output_sink> sink_;
  std::uint64_t bytes_ = 0;
  std::uint64_t prefault_ahead_ = ~std::uint64_t{0};
};

/// What every strategy works with.
struct sort_context {
  io::input_source& input;
  output_opener& output;
  const sort_options& options;
  const sort_plan& plan;
  tbb::task_arena& arena;
  trace_recorder* trace;
};

/// What a strategy reports for sort_stats.
struct strategy_result {
  strategy ran = strategy::cpu_runs;  ///< the plan's, unless a fallback below took over
  std::uint64_t records = 0;
  std::uint64_t runs = 0;
  std::uint32_t merge_passes = 0;
  bool spilled = false;
  std::string gpu_sorter;  ///< gpu_run_result::sorter; empty on the CPU
  /// Run memory still being given back (run_store::release_in_background) while the output
  /// closes; waited for before the sort is reported done.
  std::future<void> releasing;
  /// What the strategy still holds (gpu_run_result::release_after_commit): let go once the
  /// output is committed.
  std::vector<std::shared_ptr<void>> release_after_commit;
  /// Lines for --verbose about what the strategy found as it ran (a fallback and why).
  std::vector<std::string> notes;
};

/// gpu_one_chunk, gpu_runs and gpu_ranges (strategy_gpu.cpp): chunks sorted on plan.device,
/// or runs formed on every GPU of plan.sort_devices at once.
/// The run former confirms the plan's chunk count with the device memory free at setup; if
/// that shrank in between, one planned chunk becomes runs, which gpu_ranges sorts again by key
/// range on the GPU and the others merge on the host (also when a stream's runs spilled).
strategy_result sort_on_gpu(const sort_context& ctx);

/// gpu_exchange (strategy_gpu_exchange.cpp): the selected GPUs (plan.sort_devices) read equal
/// shares of a file of key-only records, partition the keys among them by exchange, sort each
/// GPU's key range there and write it at its place in the output.
strategy_result sort_by_exchange(const sort_context& ctx);

/// gpu_partition (strategy_gpu_partition.cpp): a file on plan.device whose runs would spill,
/// sorted through its output: its keys counted into key ranges of one GPU chunk, its sorted
/// chunks scattered into the ranges' places, each range sorted again where it lies. Falls back
/// to gpu_runs, before writing anything, where the file is not in the page cache, a range
/// between two sampled keys holds more than a chunk, or the output is not mapped whole.
strategy_result sort_by_partition(const sort_context& ctx);

/// cpu_one_run (strategy_cpu_one_run.cpp): one radix sort into the output mapping; where the
/// output cannot be mapped (a pipe, a filesystem without fallocate), one run written out.
strategy_result sort_cpu_one_run(const sort_context& ctx);

/// cpu_runs and cpu_spilled_runs (strategy_cpu_runs.cpp): runs sorted on the host into a
/// run store that keeps plan.layout.resident_bytes in memory and spills the rest, merged.
strategy_result sort_cpu_runs(const sort_context& ctx);

/// merge_inputs (strategy_merge_inputs.cpp, --merge): every input is a sorted run; all are
/// checked before the output is opened, then merged from their mappings.
/// @throw gpusort::error naming the first input found out of order, and where.
strategy_result merge_sorted_inputs(const sort_context& ctx);

/// Writes the runs in `store` to the output (shared by the strategies that form runs): one
/// resident run as it is, several merged in as many passes as the fan-in needs.
strategy_result write_runs(const sort_context& ctx, run_store& store);

/// The GPU facts for probe_gpu, once the options allow a GPU (gpu_probe.cpp; gpu_stub.cpp in
/// CPU-only builds): the device the options select and its chunk size, or none with the
/// reason in `gpu_note`. Of several selected GPUs, only the first is opened for a stream
/// (`input_bytes` nullopt) or an input of one chunk, which it sorts alone.
/// @throw gpusort::error when the options demand a GPU that cannot be used.
std::optional<gpu_facts> find_gpu(const sort_options& options,
                                  std::optional<std::uint64_t> input_bytes, std::string& gpu_note);

/// True in builds with the CUDA backend.
[[nodiscard]] bool gpu_backend_built() noexcept;

/// "CUDA backend, sm_90" or "CPU only" (gpu_probe.cpp or gpu_stub.cpp).
[[nodiscard]] std::string backend_description();

}  // namespace gpusort::pipeline
