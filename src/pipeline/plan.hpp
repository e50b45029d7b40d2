// The plan of one sort: which strategy forms and merges the runs, on which device, how the
// output is written, and why. make_plan decides everything once, from the input's size, the
// options and what the host has (host_facts), so that its choices are tested without the
// hardware; sort_file then runs the strategy it names (pipeline/strategy.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/chunk_algorithm.hpp"
#include "gpu/topology.hpp"
#include "gpusort/options.hpp"
#include "pipeline/run_layout.hpp"

namespace gpusort::pipeline {

/// How the runs are formed and merged; each has one entry point in its own file.
enum class strategy : std::uint8_t {
  gpu_one_chunk,     ///< the input is one GPU chunk, sorted straight into the output
  gpu_runs,          ///< GPU chunks become runs (in memory, spilled past the budget), merged
  gpu_ranges,        ///< GPU chunks become runs in memory, cut into key ranges sorted on the GPU
  /// Several GPUs hold the input together: keys partitioned across them peer to peer, each
  /// GPU's key range sorted there and written at its place (RMG sort; key-only records)
  gpu_exchange,
  /// A file whose runs would spill: its keys counted into key ranges of one chunk, its sorted
  /// chunks scattered into the ranges' places in the output, each range sorted there again
  gpu_partition,
  cpu_one_run,       ///< one host radix sort from the input into the output mapping
  cpu_runs,          ///< host-sorted runs kept in memory, merged
  cpu_spilled_runs,  ///< host-sorted runs in temporary files, merged in passes
  merge_inputs,      ///< --merge: the inputs are sorted runs already, merged on the host
};

/// "gpu-one-chunk", "cpu-spilled-runs", ...: the names --verbose and --stats print.
[[nodiscard]] const char* strategy_name(strategy s) noexcept;

/// What a GPU offers this sort (gpu::query_device and gpu::plan_chunks, asked by probe_host).
struct gpu_facts {
  int device = 0;  ///< the first selected GPU: it takes a stream, or an input of one chunk
  std::string name;
  std::uint64_t free_bytes = 0;  ///< of the selected GPU with the least memory free
  /// Records of the input per GPU chunk: the run former's own plan for this format within
  /// --gpu-memory, on the selected GPU with the least memory free, so that every one holds
  /// it. Formats sorted as (key, index) items count items.
  std::uint64_t chunk_records = 0;
  /// The same on the first GPU, which takes an input of one chunk alone; chunk_records where
  /// one GPU is selected. 0: as chunk_records.
  std::uint64_t one_chunk_records = 0;
  [[nodiscard]] std::uint64_t one_chunk() const noexcept {
    return one_chunk_records != 0 ? one_chunk_records : chunk_records;
  }
  /// The GPU sorts the records themselves (gpu::supports_format), not (key, index) items.
  bool sorts_records = true;
  /// Every GPU the options select, in order; `device` is the first. Each forms runs of
  /// `chunk_records` from its share.
  std::vector<int> devices;
  /// How the selected GPUs are connected (gpu::probe_topology), in the order of `devices`.
  gpu::gpu_topology topology;
  /// Records that every selected GPU together sorts by exchange (strategy gpu_exchange)
  /// within --gpu-memory (or the memory free) on each; 0 for one GPU or a format it does not
  /// take (gpu::exchange_supports).
  std::uint64_t exchange_records = 0;
};

/// How the keys of an input spread (pipeline/key_sample.hpp), which sets how fast the CPU
/// sorts them: keys with few distinct values it only copies (its radix sort skips the digits
/// that never vary), skewed keys take it more passes over memory, and 64-bit keys in order or
/// a little skewed take it 10-35% longer than keys in no order (16 CPUs, 1 GiB).
enum class key_spread : std::uint8_t {
  unknown,       ///< not sampled (a stream, a cold file, keys that are not numbers, a small input)
  few_distinct,  ///< all equal, or a handful of values
  even,          ///< spread evenly and in no order: uniform, Zipf keys
  /// Spread evenly enough for the GPU, but in order or in reverse order (the sample is), or a
  /// little skewed (AND of 2 words).
  patterned,
  skewed,  ///< AND-ed words and the like
};

/// What the host has, as far as the plan depends on it.
struct host_facts {
  /// The RAM, or the memory limit of the cgroup that holds us where that is smaller (page
  /// cache and page-locked memory count against it): what -S percentages and the default
  /// budget are taken of.
  std::uint64_t usable_memory = 0;
  /// Where usable_memory comes from when a cgroup limits it (for --verbose), else empty.
  std::string memory_note;
  unsigned cpus = 1;         ///< CPUs this process may run on (its affinity mask)
  /// The kernel's dirty-page limit (vm.dirty_bytes, or vm.dirty_ratio percent of the memory
  /// the page cache may use); both 0 when unknown.
  std::uint64_t dirty_bytes = 0;
  unsigned dirty_ratio = 0;
  /// Where the kernel starts writing dirty pages back (vm.dirty_background_bytes, or
  /// vm.dirty_background_ratio percent of the same memory); both 0 when unknown.
  std::uint64_t dirty_background_bytes = 0;
  unsigned dirty_background_ratio = 0;
  /// The output is written in place, in order or at offsets from where it stood (a pipe, a
  /// device, standard output): never mapped, never prefaulted.
  bool output_in_place = false;
  bool gpu_allowed = false;  ///< built with CUDA, and the options do not rule a GPU out
  std::optional<gpu_facts> gpu;  ///< the GPU to sort on; none when there is none to use
  std::string gpu_note;  ///< why there is none ("no usable CUDA device"), or a note on the one
  key_spread spread = key_spread::unknown;  ///< how the input's keys spread, where sampled
};

/**
 * The GPU sort algorithm for this sort's chunks: --algorithm onesweep -> Onesweep; hrs -> the
 * hybrid radix sort where the GPU sorts the records themselves (`sorts_records`); auto -> per
 * chunk by size and sampled key skew (gpu::choose_chunk_algorithm) for records that are their
 * own key, where the order of equal keys cannot be seen, and Onesweep, which keeps equal keys
 * in input order, for every other record (and for (key, index) items, always).
 * @throw gpusort::error for --algorithm hrs with -s or -u on records with a payload
 */
[[nodiscard]] gpu::chunk_algorithm chunk_algorithm_for(const sort_options& options,
                                                       bool sorts_records);

/**
 * How each GPU of the exchange sort (strategy gpu_exchange, key-only records) sorts its key
 * range: --algorithm onesweep or hrs as asked; auto -> the hybrid radix sort where the sampled
 * keys spread evenly or have few distinct values, Onesweep for other sampled keys, and
 * `automatic` for keys not sampled yet (the strategy samples them). Measured on 2 x H100 with
 * 2^30 keys a GPU, the whole sort by HRS against by Onesweep: u64 uniform 0.59x and u32
 * uniform 0.84x, where the exchange is HRS's first round
 * (tools/bench/results/2026-11-27-h100x2-first-round/); the local sorts alone
 * (2026-11-27-h100x2-local-sort/): all equal 0.06x, u64 Zipf 1.07x, AND of 2 words 1.05x,
 * of 3 1.39x.
 */
[[nodiscard]] gpu::chunk_algorithm exchange_local_sort(const sort_options& options,
                                                       key_spread spread) noexcept;

/// The host's memory and CPUs, and whether the options allow a GPU for an input of
/// `input_bytes` (not below the CPU crossover, cpu_crossover_reason); no CUDA call.
[[nodiscard]] host_facts probe_host(const sort_options& options,
                                    std::optional<std::uint64_t> input_bytes = std::nullopt,
                                    key_spread spread = key_spread::unknown);

/// Whether the options ask for a GPU, so that sorting without one is an error: --algorithm
/// onesweep or hrs, --merge-on gpu, --devices all or a list.
[[nodiscard]] bool gpu_demanded(const sort_options& options) noexcept;


/// Input bytes per CPU up to which `--algorithm auto` with the default device selection sorts
/// on the CPU without initialising CUDA, for patterned keys and keys not sampled; see
/// cpu_crossover_for.
inline constexpr std::uint64_t cpu_crossover_bytes_per_cpu = std::uint64_t{56} << 20;
/// The same for keys that spread evenly in no order, which the CPU sorts fastest.
inline constexpr std::uint64_t cpu_crossover_even_bytes_per_cpu = std::uint64_t{64} << 20;
/// Input records per CPU up to which it does, however few bytes they take: the CPU's cost
/// follows the records, the GPU's the bytes.
inline constexpr std::uint64_t cpu_crossover_records_per_cpu = std::uint64_t{10} << 20;

/// The largest input `auto` sorts on the CPU: both limits hold.
struct cpu_crossover {
  std::uint64_t bytes = 0;
  std::uint64_t records = 0;
};

/**
 * The CPU crossover on `cpus` CPUs for keys that spread as `spread`. Measured on the H100
 * machine (16 CPUs; tools/bench/results/2026-11-28-h100-auto/, page cache warm; the GPU path
 * waits 0.21-0.40 s for CUDA to start, then takes about 0.1 s for 1 GiB; 4 GiB in all took
 * 0.66-0.85 s) and on the H200 machine (16 CPUs; 2026-11-28-h200-auto-split/, CUDA's start
 * 0.22-0.24 s; medians of 8, the faster GPU backend):
 * - evenly spread keys: the CPU sorted 256 MiB of u64 in 0.10-0.12 s against the GPU path's
 *   0.29-0.31; 1 GiB (128 Mi records) of u64 in no order (uniform, Zipf) in 0.29-0.34 s
 *   against 0.33-0.35 (H100, H200): up to 64 MiB per CPU (even); 1 GiB of sorted, reverse or
 *   AND-2 u64 in 0.37-0.46 s against 0.33-0.36: up to 56 MiB per CPU (patterned, unknown);
 *   640 MiB of u32 (160 Mi records) in 0.28-0.31 s, sorted or not, against 0.31-0.34
 *   (H200), 1 GiB of u32 (256 Mi) in 0.49-0.62 s against 0.35-0.42 (H100): up to 10 Mi
 *   records per CPU;
 * - few distinct keys: 0.18-0.21 s for 1 GiB against 0.33-0.38, 0.66-0.73 s for 4 GiB against
 *   0.66-0.67: four times both limits;
 * - skewed keys (AND of 3 to 5 words): 1 GiB of u64 0.55-0.86 s against 0.33-0.39, 256 MiB
 *   0.18-0.30 against 0.29-0.30; u32 256 MiB 0.17-0.24 against 0.28-0.29: half the bytes;
 * - unknown: as evenly spread keys.
 * The CPU's rate grows with its cores, so both limits are per CPU.
 */
[[nodiscard]] cpu_crossover cpu_crossover_for(unsigned cpus, key_spread spread) noexcept;

/// Why `auto` leaves a GPU unused for an input of `input_bytes` (records of
/// options.format) whose keys spread as `spread` on `cpus` CPUs (the CPU sorts it sooner than
/// the GPU path starts); empty when the GPU should be probed: the size is unknown or larger,
/// or the options ask for the GPU (--algorithm onesweep or hrs, --devices all or a list,
/// --gpu-memory, --merge-on gpu).
[[nodiscard]] std::string cpu_crossover_reason(const sort_options& options,
                                               std::optional<std::uint64_t> input_bytes,
                                               unsigned cpus,
                                               key_spread spread = key_spread::unknown);

/// Whether the spread of the keys can change cpu_crossover_reason for this input: only then is
/// it worth sampling them (pipeline/key_sample.hpp).
[[nodiscard]] bool crossover_depends_on_keys(const sort_options& options,
                                             std::optional<std::uint64_t> input_bytes,
                                             unsigned cpus);

/**
 * Fills facts.gpu (and facts.gpu_note): the device the options select and its chunk size for
 * `options.format`. Initialises CUDA (0.3 s on the H100 machine), unless the options rule the
 * GPU out or cpu_crossover_reason() gives one for `input_bytes`.
 * @throw gpusort::error when the options demand a GPU (--algorithm onesweep or hrs,
 *        --devices all or LIST) that cannot be used.
 */
void probe_gpu(const sort_options& options, host_facts& facts,
               std::optional<std::uint64_t> input_bytes = std::nullopt);

/// How the output is written (io::make_output_sink).
enum class output_mode : std::uint8_t {
  mapped_whole,  ///< one mapping of the whole output: parallel stores, prefault possible
  windows,       ///< a window per write (merges of runs in memory, --merge); io_uring where
                 ///< mapping is not possible
  /// O_DIRECT writes past the page cache (--direct-io, or an output larger than the memory
  /// left to the page cache); buffered where the output or its filesystem does not allow it.
  direct,
};

struct output_plan {
  output_mode mode = output_mode::windows;
  /// Written in place (host_facts::output_in_place): windows of it go out in order.
  bool in_place = false;
  /// A stream (size unknown until it ends): mapped whole after all, and prefaulted where
  /// `prefault` says, when its size turns out to be at most this many bytes; 0: never.
  std::uint64_t whole_up_to = 0;
  /// Fault the output's pages in as soon as it is opened (from the start where its size is
  /// known), on idle cores, so that writing it is a copy. Only where it is mapped whole.
  bool prefault = false;
  unsigned prefault_threads = 0;
  /// The kernel's threshold for writing dirty pages back: vm.dirty_background_bytes, else
  /// vm.dirty_background_ratio percent of the memory the page cache may use (`usable_memory`
  /// less what processes hold); 0 and 0 when unknown.
  std::uint64_t background_bytes = 0;
  unsigned background_ratio = 0;
  std::uint64_t usable_memory = 0;
  /// How far ahead of a merge that writes it from the start the output may be faulted in
  /// while `run_bytes` of runs sit in anonymous memory beside it: three quarters of the
  /// write-back threshold (unlimited when unknown). Pages faulted in past the threshold are
  /// written back as zeros while the merge runs into them.
  [[nodiscard]] std::uint64_t prefault_ahead_beside_runs(std::uint64_t run_bytes) const noexcept {
    const std::uint64_t threshold = write_back_beside_runs(run_bytes);
    return threshold != 0 ? threshold / 4 * 3 : ~std::uint64_t{0};
  }
  /// The write-back threshold while `run_bytes` sit in anonymous memory; 0 when unknown.
  [[nodiscard]] std::uint64_t write_back_beside_runs(std::uint64_t run_bytes) const noexcept {
    if (background_bytes != 0) return background_bytes;
    if (background_ratio != 0 && usable_memory > run_bytes)
      return (usable_memory - run_bytes) / 100 * background_ratio;
    return 0;
  }
  /// Whether that threshold is known, so that prefault_ahead_beside_runs bounds a prefault (an
  /// output within the distance is faulted in whole, from the start).
  [[nodiscard]] bool knows_write_back_beside_runs(std::uint64_t run_bytes) const noexcept {
    return write_back_beside_runs(run_bytes) != 0;
  }
  /// One CPU run is sorted into the output through a scratch buffer of its size (which the
  /// run layout's working set already counts), writing each page of the output once (not
  /// faulted in first; a prefault started for a GPU that did not turn up stops): the output
  /// is larger than three quarters of the (known) write-back threshold, and pages the kernel
  /// writes back between two writes fault again on the second and are throttled to the
  /// disk's pace.
  bool write_once = false;
  std::string why;
  /// Whether an output of `total_bytes` is mapped whole: the mode's, or a stream's that ended
  /// within whole_up_to.
  [[nodiscard]] bool whole(std::uint64_t total_bytes) const noexcept {
    return mode == output_mode::mapped_whole || (whole_up_to > 0 && total_bytes <= whole_up_to);
  }
};

/**
 * The output's part of the plan. It depends only on what is known before the GPU is probed,
 * so that sort_file can start faulting the output in while CUDA initialises: a known size
 * within the host budget is mapped whole, and prefaulted when a GPU may sort it (the host's
 * cores idle meanwhile; without a GPU the CPU strategies write into the same pages). A stream
 * that a GPU may sort is opened when it ends and treated alike if it ended within the budget.
 * Else a single CPU run maps it whole and faults it in itself; the runs of a file, spilled or
 * kept in memory, are merged into one mapping of it, faulted in from the start, ahead of the
 * merge, where the kernel's write-back threshold says how far; a stream's runs alike, from
 * when it ends, if it ended within the budget; and the other merges (a stream's past the
 * budget, --merge past it) write windows.
 */
[[nodiscard]] output_plan plan_output(std::optional<std::uint64_t> input_bytes,
                                      const sort_options& options, const host_facts& facts);

struct sort_plan {
  strategy how = strategy::cpu_runs;
  std::optional<int> device;       ///< set for the GPU strategies: the GPU that sorts
  std::string device_name;
  /// Every selected GPU (gpu_facts::devices), `device` first; empty on the CPU.
  std::vector<int> devices;
  /// The GPUs that form runs: `device` alone for one chunk or a stream, every selected GPU
  /// for runs of a file, taking its chunks from one queue (or each an equal share of it,
  /// share_input, where one holds less than the planned chunk).
  std::vector<int> sort_devices;
  /// gpu_exchange: how each GPU sorts its key range (exchange_local_sort; automatic: as a
  /// sample of the keys taken by the strategy says).
  gpu::chunk_algorithm exchange_local = gpu::chunk_algorithm::onesweep;
  gpu::gpu_topology topology;      ///< of `devices`, for --verbose
  std::uint64_t gpu_chunk_records = 0;  ///< records per GPU chunk (gpu_facts::chunk_records)
  unsigned threads = 1;            ///< host threads (TBB arena)
  std::uint64_t budget_bytes = 0;  ///< host memory
  run_layout layout;               ///< chunks, residency and fan-in of host runs and merges
  output_plan output;              ///< plan_output's answer
  /// Read the input (regular files) and spill runs with O_DIRECT: --direct-io, or an input
  /// larger than the memory left to the page cache, which would only evict it again.
  bool bypass_page_cache = false;
  std::vector<std::string> why;    ///< one line per decision, for --verbose

  [[nodiscard]] bool on_gpu() const noexcept { return device.has_value(); }
  /// The plan in a few lines ("strategy gpu-runs on NVIDIA H100: ...; because ..."), then
  /// the selected GPUs and their peer access where there are any.
  [[nodiscard]] std::string describe(const record_format& format) const;
};

/// Why `bytes` of data should bypass the page cache under `options` (--direct-io, or more
/// than the usable memory less the host memory the sort itself takes, `budget` at most);
/// empty when it should not. Unknown sizes (streams) stay buffered unless --direct-io always.
[[nodiscard]] std::string direct_io_reason(std::optional<std::uint64_t> bytes,
                                           const sort_options& options, const host_facts& facts,
                                           std::uint64_t budget);

/// The CPUs this process may run on (its affinity mask), at least 1.
[[nodiscard]] unsigned available_cpus();

/// Host threads for `options` (--parallel, else all) capped at `cpus`.
[[nodiscard]] unsigned thread_count(const sort_options& options, unsigned cpus) noexcept;

/// The host budget the options give: --buffer-size (else half the usable memory), raised to
/// min_buffer_bytes and capped at the usable memory.
[[nodiscard]] std::uint64_t host_budget(const sort_options& options,
                                        std::uint64_t usable_memory) noexcept;

/**
 * Plans the sort of `input_bytes` of records (nullopt: a stream of unknown length), output
 * included (plan_output).
 * - A GPU strategy when facts.gpu is set: one chunk when the input's size is known and fits
 *   one chunk of the first GPU; else runs, formed by every selected GPU at once for a file (a
 *   stream by the first), merged on the host or sorted again by key range on the GPU.
 * - Else the CPU: one run when the input's size is known and its sort fits the budget; runs
 *   kept in memory when the input fits the budget; spilled runs otherwise (and for streams,
 *   whose runs spill once they outgrow half the budget).
 * Pure: the same arguments give the same plan.
 */
[[nodiscard]] sort_plan make_plan(std::optional<std::uint64_t> input_bytes,
                                  const sort_options& options, const host_facts& facts);

}  // namespace gpusort::pipeline
