// make_plan: every decision of a sort in one place, each with its reason.
#include "pipeline/plan.hpp"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <thread>

#include "core/memory_limit.hpp"
#include "core/parse_size.hpp"
#include "cpu/multiway_merge.hpp"
#include "cpu/radix_sort.hpp"
#include "cpu/sort_items.hpp"
#include "gpusort/error.hpp"
#include "pipeline/gpu_run_formation.hpp"
#include "pipeline/gpu_selection.hpp"
#include "pipeline/pipeline_config.hpp"
#include "pipeline/staging_pool.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

unsigned available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

unsigned thread_count(const sort_options& options, unsigned cpus) noexcept {
  return options.threads != 0 ? std::min(options.threads, cpus) : cpus;
}

const char* strategy_name(strategy s) noexcept {
  switch (s) {
    case strategy::gpu_one_chunk: return "gpu-one-chunk";
    case strategy::gpu_runs: return "gpu-runs";
    case strategy::gpu_ranges: return "gpu-ranges";
    case strategy::gpu_exchange: return "gpu-exchange";
    case strategy::gpu_partition: return "gpu-partition";
    case strategy::cpu_one_run: return "cpu-one-run";
    case strategy::cpu_runs: return "cpu-runs";
    case strategy::cpu_spilled_runs: return "cpu-spilled-runs";
    case strategy::merge_inputs: return "merge-inputs";
  }
  return "?";
}

namespace {

/// One number from a /proc/sys file; 0 when it cannot be read.
std::uint64_t read_sysctl(const char* path) {
  std::ifstream in(path);
  std::uint64_t value = 0;
  if (!(in >> value)) return 0;
  return value;
}

}  // namespace

gpu::chunk_algorithm chunk_algorithm_for(const sort_options& options, bool sorts_records) {
  if (!sorts_records) return gpu::chunk_algorithm::onesweep;
  switch (options.algo) {
    case algorithm::hrs:
      GPUSORT_EXPECTS(options.format.key_only() || !(options.stable || options.unique),
                      std::string("--algorithm hrs does not keep equal keys of records with a "
                                  "payload in input order, which ") +
                          (options.stable ? "-s/--stable" : "-u/--unique") +
                          " needs: use --algorithm onesweep or auto");
      return gpu::chunk_algorithm::hrs;
    case algorithm::automatic:
      return options.format.key_only() ? gpu::chunk_algorithm::automatic
                                       : gpu::chunk_algorithm::onesweep;
    default: return gpu::chunk_algorithm::onesweep;
  }
}

gpu::chunk_algorithm exchange_local_sort(const sort_options& options,
                                         key_spread spread) noexcept {
  switch (options.algo) {
    case algorithm::hrs: return gpu::chunk_algorithm::hrs;
    case algorithm::automatic: break;
    default: return gpu::chunk_algorithm::onesweep;
  }
  if (spread == key_spread::unknown) return gpu::chunk_algorithm::automatic;
  return spread == key_spread::few_distinct || spread == key_spread::even ||
                 spread == key_spread::patterned
             ? gpu::chunk_algorithm::hrs
             : gpu::chunk_algorithm::onesweep;
}

host_facts probe_host(const sort_options& options, std::optional<std::uint64_t> input_bytes,
                      key_spread spread) {
  host_facts facts;
  const memory_limit memory = probe_memory_limit();
  facts.usable_memory = memory.bytes;
  if (memory.from_cgroup())
    facts.memory_note = "memory limited to " + format_bytes(memory.bytes) + " by " +
                        memory.source + " (RAM " + format_bytes(memory.physical_bytes) + ")";
  facts.cpus = available_cpus();
  facts.dirty_bytes = read_sysctl("/proc/sys/vm/dirty_bytes");
  facts.dirty_ratio = static_cast<unsigned>(read_sysctl("/proc/sys/vm/dirty_ratio"));
  facts.dirty_background_bytes = read_sysctl("/proc/sys/vm/dirty_background_bytes");
  facts.dirty_background_ratio =
      static_cast<unsigned>(read_sysctl("/proc/sys/vm/dirty_background_ratio"));
  facts.gpu_allowed = gpu_backend_built() && options.algo != algorithm::cpu &&
                      options.devices.how != device_selection::mode::none &&
                      !options.merge_only &&
                      cpu_crossover_reason(options, input_bytes, facts.cpus, spread).empty();
  facts.spread = spread;
  return facts;
}

bool gpu_demanded(const sort_options& options) noexcept {
  using mode = device_selection::mode;
  return options.algo == algorithm::onesweep || options.algo == algorithm::hrs ||
         options.merge == merge_location::gpu || options.devices.how == mode::list ||
         options.devices.how == mode::all;
}

static_assert(cpu_crossover_records_per_cpu % (std::uint64_t{1} << 20) == 0,
              "cpu_crossover_reason counts the records in Mi");

cpu_crossover cpu_crossover_for(unsigned cpus, key_spread spread) noexcept {
  const std::uint64_t n = std::max(cpus, 1u);
  const std::uint64_t bytes_per_cpu = spread == key_spread::even
                                          ? cpu_crossover_even_bytes_per_cpu
                                          : cpu_crossover_bytes_per_cpu;
  cpu_crossover c{bytes_per_cpu * n, cpu_crossover_records_per_cpu * n};
  if (spread == key_spread::few_distinct) {
    c.bytes *= 4;
    c.records *= 4;
  } else if (spread == key_spread::skewed) {
    c.bytes /= 2;
  }
  return c;
}

namespace {

/// Whether the options leave `auto` free to sort on the CPU rather than the GPU.
bool may_choose_cpu(const sort_options& options) noexcept {
  // --devices none, --algorithm cpu and --merge never probe: nothing to say for them here.
  return !(gpu_demanded(options) || options.gpu_memory_bytes != 0 ||
           options.algo == algorithm::cpu || options.merge_only ||
           options.devices.how == device_selection::mode::none);
}

bool within(const cpu_crossover& c, std::uint64_t bytes, std::uint32_t record_size) noexcept {
  return bytes <= c.bytes && bytes / std::max(record_size, 1u) <= c.records;
}

std::string describe_spread(key_spread spread) {
  switch (spread) {
    case key_spread::few_distinct: return " for keys with few distinct values";
    case key_spread::even: return " for evenly spread keys in no order";
    case key_spread::patterned: return " for keys in order or a little skewed";
    case key_spread::skewed: return " for skewed keys";
    case key_spread::unknown: break;
  }
  return "";
}

}  // namespace

std::string cpu_crossover_reason(const sort_options& options,
                                 std::optional<std::uint64_t> input_bytes, unsigned cpus,
                                 key_spread spread) {
  if (!may_choose_cpu(options) || !input_bytes) return {};
  const cpu_crossover c = cpu_crossover_for(cpus, spread);
  if (!within(c, *input_bytes, options.format.record_size)) return {};
  return format_bytes(*input_bytes) + " is within " + format_bytes(c.bytes) + " and " +
         std::to_string(c.records >> 20) + " Mi records (on " + std::to_string(cpus) + " CPUs" +
         describe_spread(spread) +
         "), which the CPU sorts sooner than the GPU path starts (--devices all, or "
         "--algorithm onesweep or hrs, to sort on the GPU)";
}

bool crossover_depends_on_keys(const sort_options& options,
                               std::optional<std::uint64_t> input_bytes, unsigned cpus) {
  if (!may_choose_cpu(options) || !input_bytes) return false;
  const std::uint32_t record_size = options.format.record_size;
  // The widest crossover and the narrowest: between them the keys decide.
  return within(cpu_crossover_for(cpus, key_spread::few_distinct), *input_bytes, record_size) !=
         within(cpu_crossover_for(cpus, key_spread::skewed), *input_bytes, record_size);
}

void probe_gpu(const sort_options& options, host_facts& facts,
               std::optional<std::uint64_t> input_bytes) {
  if (options.merge_only)
    facts.gpu_note = "--merge";
  else if (options.algo == algorithm::cpu)
    facts.gpu_note = "--algorithm cpu";
  else if (options.devices.how == device_selection::mode::none)
    facts.gpu_note = "--devices none";
  else if (std::string why = cpu_crossover_reason(options, input_bytes, facts.cpus, facts.spread);
           !why.empty())
    facts.gpu_note = std::move(why);
  else
    facts.gpu = find_gpu(options, input_bytes, facts.gpu_note);
}

namespace {

run_layout layout_for(std::optional<std::uint64_t> input_bytes, const sort_options& options,
                      std::uint64_t budget) {
  return make_run_layout(input_bytes, options.format, budget, [&](std::uint64_t records) {
    return cpu::sort_scratch_bytes(records, options.format);
  });
}

/// Whether one CPU run of `input_bytes` is to write each page of the output once
/// (output_plan::write_once). Past the write-back threshold the kernel writes pages back
/// between two writes: 16 GiB on the H200 machine (16 cores, threshold 12.6 GiB) took 7.75 s
/// written twice and 4.66 s once; 6 GiB on the 2-core VM (threshold 2.3 GiB) 29-240 s twice,
/// 14.3-18.1 s once. Below it the choice moves the time by 12-30% either way (8 GiB on the
/// H200 machine 2.61 s twice, 2.30 s once; 2 GiB on the VM 4.0-5.4 s twice, 5.9-7.3 s once:
/// on 2 cores the faults cannot hide behind idle ones), so the line keeps a quarter of the
/// threshold spare for other dirty pages (tools/bench/results/2026-11-29-h200-one-run-write-once).
bool writes_one_run_once(std::uint64_t input_bytes, const output_plan& out) {
  return input_bytes > out.prefault_ahead_beside_runs(0);
}

std::string write_once_reason(const output_plan& out) {
  return "one CPU run: sorted through a scratch buffer, its last pass writing each page of the "
         "output mapping once (the output is over three quarters of the kernel's write-back "
         "threshold of " + format_bytes(out.write_back_beside_runs(0)) + ")";
}

/// plan_output, given the run layout make_plan has already made.
output_plan plan_output(std::optional<std::uint64_t> input_bytes, const sort_options& options,
                        const host_facts& facts, const run_layout& layout) {
  const std::uint64_t budget = layout.budget_bytes;
  // Every prefault takes half the threads (the GPU case below says why).
  const unsigned prefault_threads = std::max(1u, thread_count(options, facts.cpus) / 2);
  output_plan out;
  out.background_bytes = facts.dirty_background_bytes;
  out.background_ratio = facts.dirty_background_ratio;
  out.usable_memory = facts.usable_memory;
  if (facts.output_in_place) {
    out.in_place = true;
    out.why = "the output is written in place (a pipe, a device or standard output): in "
              "order, never mapped";
    return out;
  }
  if (std::string direct = direct_io_reason(input_bytes, options, facts, budget);
      !direct.empty()) {
    out.mode = output_mode::direct;
    out.why = "output written with O_DIRECT: " + direct;
    return out;
  }
  if (options.merge_only && input_bytes && *input_bytes > 0 && *input_bytes <= budget) {
    // The inputs are mapped and checked before the merge writes a byte: the output's pages
    // are faulted in meanwhile. (Past the budget the merge's threads map and fault in its
    // windows: one mapping faulted in ahead of the merge, as for spilled runs, measured no
    // faster on the H200 machine, 16 GiB in four inputs with -S 4G 1.98 s against 1.91 s;
    // tools/bench/results/2026-11-29-h200-merge-inputs.)
    out.mode = output_mode::mapped_whole;
    out.prefault = true;
    out.prefault_threads = prefault_threads;
    out.why = "the output fits the host budget: mapped whole and faulted in while the inputs "
              "are checked";
    return out;
  }
  if (input_bytes && *input_bytes > 0 && *input_bytes <= budget && facts.gpu_allowed) {
    // A GPU sort leaves the host's cores idle until the sorted records come back: fault the
    // output's pages in meanwhile, from the start (CUDA takes ~0.3 s to initialise), so that
    // writing it is a copy. Half the threads: 8 of 16 on the H200 machine ended the 8 GiB
    // sort soonest (4 prefaulted too slowly, 16 slowed the read and the pinning). Only within
    // the host budget: prefaulting an output larger than memory would only evict it again.
    // Whole, past the kernel's write-back threshold too: the GPU's copies write each page
    // once, after it is faulted in. 24 GiB on the H200 machine (threshold 12.5 GiB) took
    // 4.1-4.4 s so, 5.1-5.2 s with the prefault held three quarters of the threshold ahead
    // of the copies, 10.7-11.2 s with none (tools/bench/results/2026-11-29-h200-one-chunk-ahead).
    out.mode = output_mode::mapped_whole;
    out.prefault = true;
    out.prefault_threads = prefault_threads;
    // Should no GPU turn up, one CPU run still writes each page once after the prefault.
    out.write_once = layout.single_run && writes_one_run_once(*input_bytes, out);
    out.why = "the output fits the host budget and a GPU may sort it: mapped whole and " +
              std::string("faulted in on idle cores from the start");
    return out;
  }
  if (!input_bytes && facts.gpu_allowed) {
    // A stream's size is known once it ends, while the GPU still sorts its last chunk: the
    // output opens then and faults in meanwhile. 8 GiB from a pipe on the H100 machine: 1.51 s
    // in all; written after the sort instead, in windows, the output took 1.26 s (6.8 GB/s)
    // and the sort 2.17 s.
    out.whole_up_to = budget;
    out.prefault = true;
    out.prefault_threads = prefault_threads;
    out.why = "a stream's size is known when it ends: mapped whole then and faulted in while "
              "the GPU sorts, if it fits the host budget (" + format_bytes(budget) +
              "), else written in windows";
    return out;
  }
  if (input_bytes && *input_bytes > 0 && layout.single_run) {
    out.mode = output_mode::mapped_whole;
    out.write_once = writes_one_run_once(*input_bytes, out);
    out.why = out.write_once ? write_once_reason(out)
                             : "one CPU run: its last pass writes into the output mapping";
  } else if (input_bytes && *input_bytes > 0 && !options.merge_only) {
    // Runs are merged after they have all formed, into one mapping of the output whose pages
    // are faulted in from the start, at most output_plan::prefault_ahead_beside_runs ahead of
    // the merge, which then mostly stores (the runs' strategy holds the prefault back).
    // - Runs that spill: 16 GiB with -S 4G on the H200 machine's 16 cores, CPU path / GPU runs:
    //   a mapping per 64 MiB window (mapped with MAP_POPULATE and unmapped by each merge
    //   thread) 9.4 / 7.5 s, merging at 3.4 GB/s; mapped whole and faulted in ahead 6.8 /
    //   6.5 s; mapped whole and faulted in by the merge's threads alone 9.0 / 7.2 s
    //   (tools/bench/results/2026-11-29-h200-spill-merge).
    // - Runs kept in memory, written in windows before: 16 GiB with -S 24G there 5.55 s
    //   against 5.37 s (merge 1.43-1.54 s against 1.13-1.14 s); 3 GiB with -S 4G on the 2-core
    //   VM 9.1-11.6 s against 6.1-8.9 s (merge and write 3.7 s against 1.1 s)
    //   (tools/bench/results/2026-11-29-h200-one-chunk-ahead).
    // Where the write-back threshold is unknown, nothing says how far ahead is safe, and the
    // merge's threads fault in what they write; where the whole output is within the
    // distance, it is all faulted in from the start. Half the threads here too: on the CPU
    // path, 4 or 2 ended the spilled sort later (medians 7.20 / 7.33 s against 6.68 s;
    // tools/bench/results/2026-11-29-h200-growth).
    const std::string runs = layout.resident_bytes >= *input_bytes ? "runs kept in memory"
                                                                   : "runs spilled";
    out.mode = output_mode::mapped_whole;
    out.prefault = out.knows_write_back_beside_runs(*input_bytes);
    out.prefault_threads = out.prefault ? prefault_threads : 0;
    out.why = out.prefault
                  ? runs + ": mapped whole and faulted in from the start, ahead of the merge"
                  : runs + ": mapped whole, each merge thread faulting in what it writes";
  } else if (!input_bytes && !options.merge_only) {
    // A stream's size is known once it ends, when its runs have formed: the merge then writes
    // one mapping of the output, if it fits the host budget, faulted in from there at most
    // output_plan::prefault_ahead_beside_runs ahead of it (the runs' strategy sets the
    // distance once it knows their size); else windows. 3 GiB from a pipe on the 2-core VM
    // (-S 8G, two runs): merge and write 1.95-2.08 s into windows, 0.85-1.02 s so; 16 GiB on
    // the H200 machine's 16 cores (two runs): 1.77-2.13 s either way
    // (tools/bench/results/2026-11-29-h200-stream-output).
    out.whole_up_to = budget;
    out.prefault = out.knows_write_back_beside_runs(0);
    out.prefault_threads = out.prefault ? prefault_threads : 0;
    out.why = "a stream's size is known when it ends: its runs are merged into one mapping of "
              "the output then, " +
              std::string(out.prefault ? "faulted in ahead of the merge"
                                       : "each merge thread faulting in what it writes") +
              ", if it fits the host budget (" + format_bytes(budget) +
              "), else written in windows";
  } else {
    out.why = "merged runs: written in windows";
  }
  return out;
}

/// Why strategy gpu_ranges cannot sort this input ("" when it can).
std::string gpu_ranges_unfit(std::optional<std::uint64_t> input_bytes,
                             const sort_options& options, const gpu_facts& gpu,
                             const sort_plan& plan) {
  if (!gpu.sorts_records)
    return describe(options.format) + " goes to the GPU as (key, index) items, which a range "
           "sort cannot place";
  if (input_bytes && *input_bytes > plan.budget_bytes && plan.bypass_page_cache)
    return "its runs spill past the host budget of " + format_bytes(plan.budget_bytes) +
           " with O_DIRECT, and a range sort reads runs through mappings of the page cache";
  return {};
}

/// Whether strategy gpu_partition sorts this input: a file whose runs would spill past the
/// host budget (--merge-on auto), of records a GPU sorts directly with a numeric key, on one
/// GPU, through the page cache into an output mapped whole. On the H200 machine it took 4.2 s
/// where the spilled runs' host merge took 5.8 s (tools/bench/results/2026-11-29-h200-partition).
bool gpu_partition_fits(std::optional<std::uint64_t> input_bytes, const sort_options& options,
                        const gpu_facts& gpu, const sort_plan& plan) {
  return options.merge == merge_location::automatic && input_bytes &&
         *input_bytes > plan.budget_bytes && plan.sort_devices.size() == 1 &&
         gpu.sorts_records && options.format.type != key_type::bytes &&
         !plan.bypass_page_cache && plan.output.mode == output_mode::mapped_whole;
}

/// Why the host merge is chosen for runs that spill ("" when they do not). Both read the
/// spilled runs from the page cache and write the output beside their dirty pages, which the
/// kernel's dirty-page limit throttles either way: 16 GiB of u64 with -S 4G and --gpu-memory
/// 2G on the H200 machine took 5.7-8.9 s (median 6.58) merged on the host and 5.9-8.3 s
/// (6.33) sorted again by key range (tools/bench/results/2026-11-29-h200-spilled-ranges).
std::string gpu_ranges_spilled(std::optional<std::uint64_t> input_bytes, const sort_plan& plan) {
  if (!input_bytes || *input_bytes <= plan.budget_bytes) return {};
  return "its runs spill past the host budget of " + format_bytes(plan.budget_bytes) +
         ", where the range sort measured no faster (--merge-on gpu to insist)";
}

/// The kernel's dirty-page limit while runs of `input_bytes` sit in anonymous memory, which
/// the page cache cannot use (0 when unknown).
std::uint64_t dirty_limit_beside_runs(std::uint64_t input_bytes, const host_facts& facts) {
  if (facts.dirty_bytes != 0) return facts.dirty_bytes;
  if (facts.dirty_ratio == 0 || facts.usable_memory <= input_bytes) return 0;
  return (facts.usable_memory - input_bytes) / 100 * facts.dirty_ratio;
}

/// Why the host merge is expected to beat gpu_ranges on this host ("" when it is not). The runs
/// sit in anonymous memory, which the page cache cannot use: where the output is larger than
/// the kernel's dirty-page limit over what is left, gpu_ranges' writes of the whole output in
/// its last pass are throttled to disk speed. On the H200 machine (128 GiB, vm.dirty_ratio 20)
/// 24 GiB of u64 with --gpu-memory 4G took 19.7-20.3 s that way against 12.4-13.9 s merged on
/// the host, whose slower merge the throttling hides; at 16 GiB gpu_ranges took 3.6 s and the
/// host merge 6.2 s.
std::string gpu_ranges_throttled(std::optional<std::uint64_t> input_bytes,
                                 const host_facts& facts, const sort_plan& plan) {
  if (!input_bytes || plan.output.mode != output_mode::mapped_whole) return {};
  const std::uint64_t limit = dirty_limit_beside_runs(*input_bytes, facts);
  if (limit == 0 || *input_bytes <= limit) return {};
  return "its output of " + format_bytes(*input_bytes) + " passes the kernel's dirty-page limit "
         "of " + format_bytes(limit) + " beside the runs, where writing it in one last pass is "
         "throttled to disk speed (--merge-on gpu to insist)";
}

/// Why the host merge is expected to beat gpu_ranges because the runs are few ("" when not):
/// the vector merge takes a few runs of 64-bit keys at 20 GB/s and more. (32-bit keys move
/// half the bytes per record through it, and were not measured against gpu_ranges.)
std::string gpu_ranges_few_runs(std::optional<std::uint64_t> input_bytes,
                                const sort_options& options, const gpu_facts& gpu,
                                std::size_t sorting_gpus) {
  if (!input_bytes || gpu.chunk_records == 0 || options.format.key_size != 8 ||
      !cpu::merges_with_vectors(options.format, cpu::merge_policy{}))
    return {};
  const std::vector<int> devices(std::max<std::size_t>(sorting_gpus, 1));
  const std::uint64_t runs =
      file_runs(*input_bytes, options.format.record_size, devices, gpu.chunk_records);
  if (runs > host_merge_max_runs) return {};
  return "its " + std::to_string(runs) + " runs are few enough (at most " +
         std::to_string(host_merge_max_runs) + ") for the host's vector merge to beat a second "
         "pass through the GPU (--merge-on gpu to insist)";
}

/// The line of `plan.why` that says how far ahead of a merge from the output's start the
/// output is faulted in, where that distance holds it back.
void explain_prefault_ahead(std::optional<std::uint64_t> input_bytes, sort_plan& plan) {
  if (!input_bytes || !plan.output.prefault ||
      *input_bytes <= plan.output.prefault_ahead_beside_runs(*input_bytes))
    return;
  plan.why.push_back("the output faulted in at most " +
                     format_bytes(plan.output.prefault_ahead_beside_runs(*input_bytes)) +
                     " ahead of the merge, which writes it from the start: three quarters of "
                     "where the kernel starts writing dirty pages back beside the runs");
}

}  // namespace

std::string direct_io_reason(std::optional<std::uint64_t> bytes, const sort_options& options,
                             const host_facts& facts, std::uint64_t budget) {
  switch (options.direct) {
    case direct_io::never: return {};
    case direct_io::always: return "--direct-io";
    case direct_io::automatic: break;
  }
  if (!bytes || *bytes == 0) return {};
  // The sort's own memory never exceeds its input, whatever the budget allows.
  const std::uint64_t in_use = std::min(budget, *bytes);
  const std::uint64_t room = facts.usable_memory > in_use ? facts.usable_memory - in_use : 0;
  if (*bytes <= room) return {};
  return format_bytes(*bytes) + " is more than the " + format_bytes(room) +
         " of memory left to the page cache beside the sort's own " + format_bytes(in_use) +
         (facts.memory_note.empty() ? std::string() : " (" + facts.memory_note + ")") +
         " (--direct-io never to insist on the page cache)";
}

output_plan plan_output(std::optional<std::uint64_t> input_bytes, const sort_options& options,
                        const host_facts& facts) {
  return plan_output(input_bytes, options, facts,
                     layout_for(input_bytes, options, host_budget(options, facts.usable_memory)));
}

std::uint64_t host_budget(const sort_options& options, std::uint64_t usable_memory) noexcept {
  const std::uint64_t asked =
      options.buffer_bytes != 0 ? options.buffer_bytes : usable_memory / 2;
  return std::clamp(asked, min_buffer_bytes, std::max(usable_memory, min_buffer_bytes));
}

sort_plan make_plan(std::optional<std::uint64_t> input_bytes, const sort_options& options,
                    const host_facts& facts) {
  const record_format& format = options.format;
  sort_plan plan;
  plan.budget_bytes = host_budget(options, facts.usable_memory);
  if (options.buffer_bytes != 0 && plan.budget_bytes != options.buffer_bytes)
    plan.why.push_back("host budget " + format_bytes(options.buffer_bytes) + " adjusted to " +
                       format_bytes(plan.budget_bytes) + " (at least " +
                       format_bytes(min_buffer_bytes) + ", at most the usable memory)");
  if (!facts.memory_note.empty()) plan.why.push_back(facts.memory_note);
  plan.threads = thread_count(options, facts.cpus);
  if (options.threads > facts.cpus)
    plan.why.push_back(std::to_string(options.threads) + " threads asked, " +
                       std::to_string(facts.cpus) + " CPUs available: using " +
                       std::to_string(plan.threads));
  plan.layout = layout_for(input_bytes, options, plan.budget_bytes);
  plan.output = plan_output(input_bytes, options, facts, plan.layout);
  if (std::string direct = direct_io_reason(input_bytes, options, facts, plan.budget_bytes);
      !direct.empty()) {
    plan.bypass_page_cache = true;
    plan.why.push_back("input read and runs spilled with O_DIRECT" +
                       (plan.output.mode == output_mode::direct ? std::string(", as the output")
                                                                : ": " + direct));
  }
  const std::string size_words = input_bytes ? format_bytes(*input_bytes) : "a stream";

  if (options.merge_only) {
    plan.how = strategy::merge_inputs;
    plan.why.push_back("--merge: every input is a sorted run already; each is checked, then "
                       "all are merged on the host from the page cache (streams are copied "
                       "to a temporary file first)");
    plan.why.push_back(plan.output.why);
    return plan;
  }
  if (facts.gpu) {
    const gpu_facts& gpu = *facts.gpu;
    if (!facts.gpu_note.empty()) plan.why.push_back(facts.gpu_note);
    plan.device = gpu.device;
    plan.device_name = gpu.name;
    plan.devices = gpu.devices.empty() ? std::vector<int>{gpu.device} : gpu.devices;
    plan.sort_devices = {gpu.device};
    plan.topology = gpu.topology;
    plan.gpu_chunk_records = gpu.chunk_records;
    const std::uint64_t records = input_bytes ? *input_bytes / format.record_size : 0;
    if (input_bytes && records <= gpu.one_chunk()) {
      plan.how = strategy::gpu_one_chunk;
      plan.gpu_chunk_records = gpu.one_chunk();
      plan.why.push_back(size_words + " fits one GPU chunk of " +
                         std::to_string(gpu.one_chunk()) + " records: sorted runs go " +
                         "straight into the output, no merge");
    } else {
      const std::string runs_words = size_words + " exceeds one GPU chunk of " +
                                     std::to_string(gpu.one_chunk()) + " records: ";
      if (plan.devices.size() > 1 && input_bytes && records <= gpu.exchange_records &&
          options.merge != merge_location::host) {
        plan.how = strategy::gpu_exchange;
        plan.sort_devices = plan.devices;
        plan.why.push_back(runs_words + "the " + std::to_string(plan.devices.size()) +
                           " GPUs hold it together (up to " +
                           std::to_string(gpu.exchange_records) + " records): each reads an " +
                           "equal share, the keys are partitioned across them by their top " +
                           "bits, each key written into the GPU that sorts it, and each GPU's " +
                           "key range is sorted there and written at its place in the output " +
                           "(no runs, no merge)");
        plan.exchange_local = exchange_local_sort(options, facts.spread);
        const auto local_words = [](gpu::chunk_algorithm a) -> std::string {
          switch (a) {
            case gpu::chunk_algorithm::hrs: return "the hybrid radix sort";
            case gpu::chunk_algorithm::onesweep: return "Onesweep";
            case gpu::chunk_algorithm::automatic: break;
          }
          return "the hybrid radix sort or Onesweep, as a sample of the keys says";
        };
        plan.why.push_back("each GPU sorts its key range with " +
                           local_words(plan.exchange_local) +
                           (options.algo == algorithm::automatic ? describe_spread(facts.spread)
                                                                 : " (--algorithm)"));
        plan.layout.resident_bytes = plan.budget_bytes;
        plan.layout.single_run = false;
        plan.why.push_back(plan.output.why);
        return plan;
      }
      if (plan.devices.size() > 1 && input_bytes) {
        plan.sort_devices = plan.devices;
        plan.why.push_back(std::to_string(plan.devices.size()) + " GPUs form runs at once, each " +
                           "taking the file's next chunk from one queue as it finishes the " +
                           "last (each its own equal share where one holds less than a " +
                           "chunk), with its own readers and staging");
      } else if (plan.devices.size() > 1) {
        plan.why.push_back("a stream is read in order: GPU " + std::to_string(gpu.device) +
                           " forms every run, the other selected GPUs idle");
      }
      std::string ranges_unfit = gpu_ranges_unfit(input_bytes, options, gpu, plan);
      GPUSORT_EXPECTS(options.merge != merge_location::gpu || ranges_unfit.empty(),
                      "--merge-on gpu: " + ranges_unfit);
      if (ranges_unfit.empty() && options.merge == merge_location::automatic)
        ranges_unfit = gpu_ranges_spilled(input_bytes, plan);
      if (ranges_unfit.empty() && options.merge == merge_location::automatic)
        ranges_unfit = gpu_ranges_throttled(input_bytes, facts, plan);
      if (ranges_unfit.empty() && options.merge == merge_location::automatic)
        ranges_unfit = gpu_ranges_few_runs(input_bytes, options, gpu, plan.sort_devices.size());
      if (gpu_partition_fits(input_bytes, options, gpu, plan)) {
        plan.how = strategy::gpu_partition;
        plan.why.push_back(runs_words + "its runs would spill past the host budget of " +
                           format_bytes(plan.budget_bytes) + "; instead its keys are counted " +
                           "into key ranges of at most one chunk, each chunk sorted on the " +
                           "GPU is scattered into its ranges' places in the output, and each " +
                           "range is sorted there again on the GPU (no runs, no merge: only " +
                           "the output's pages are written)");
      } else if (options.merge == merge_location::host) {
        plan.how = strategy::gpu_runs;
        plan.why.push_back(runs_words + "runs come back to the host and are merged there " +
                           "(--merge-on host)");
      } else if (!ranges_unfit.empty()) {
        plan.how = strategy::gpu_runs;
        plan.why.push_back(runs_words + "runs come back to the host and are merged there, " +
                           "as " + ranges_unfit);
      } else {
        plan.how = strategy::gpu_ranges;
        plan.why.push_back(runs_words + "runs come back to the host, are cut into key ranges " +
                           "of one chunk and each range is sorted again on the GPU into its " +
                           "place in the output (no host merge)" +
                           (plan.sort_devices.size() > 1
                                ? "; the " + std::to_string(plan.sort_devices.size()) +
                                      " GPUs take the ranges from one queue"
                                : std::string()) +
                           (input_bytes && *input_bytes > plan.budget_bytes
                                ? "; runs past the host budget spill, and are read back "
                                  "through mappings of the page cache"
                                : std::string()) +
                           (input_bytes || options.merge == merge_location::gpu
                                ? std::string()
                                : "; should the stream's runs spill, they are merged on the "
                                  "host"));
      }
    }
    // GPU runs need no host scratch: they stay in memory while they fit the whole budget. An
    // input that does not fit spills, and then the runs held outside the store and the two
    // page-locked staging pools are memory beside the resident runs, within -S as well (at
    // 16 GiB with -S 4G and --gpu-memory 2G, the whole budget resident, a 6 GiB cgroup killed
    // the sort on the H200 machine).
    // (A stream keeps the whole budget for resident runs: room for two of the device's largest
    // chunks would leave nothing resident on a large GPU, spilling every stream.)
    plan.layout.resident_bytes = plan.budget_bytes;
    if (input_bytes && *input_bytes > plan.budget_bytes) {
      const std::uint64_t run_bytes =
          gpu.chunk_records * (gpu.sorts_records ? format.record_size
                                                 : format.record_size + sizeof(cpu::sort_item));
      // Each GPU that forms runs holds its own and has its own staging.
      const std::uint64_t beside =
          plan.sort_devices.size() *
          (gpu_runs_held * run_bytes + 2 * staging_buffers * std::uint64_t{max_staging_bytes});
      plan.layout.resident_bytes = plan.budget_bytes > beside ? plan.budget_bytes - beside : 0;
      if (plan.how != strategy::gpu_partition)
        plan.why.push_back("runs resident up to " + format_bytes(plan.layout.resident_bytes) +
                         ", the rest of the budget left to " +
                         std::to_string(plan.sort_devices.size() * gpu_runs_held) +
                         " runs on their way to disk and the staging buffers");
    }
    plan.layout.single_run = false;
    plan.why.push_back(plan.output.why);
    if (plan.how == strategy::gpu_runs) explain_prefault_ahead(input_bytes, plan);
    return plan;
  }

  if (!facts.gpu_note.empty())
    plan.why.push_back(facts.gpu_note + ": sorting on the CPU");
  else if (!facts.gpu_allowed)
    plan.why.push_back("--devices none, --algorithm cpu or a build without CUDA: sorting on "
                       "the CPU");
  if (input_bytes && *input_bytes > 0 && plan.layout.single_run && facts.output_in_place) {
    // (cpu_one_run sorts into the output mapping, which an output written in place lacks.)
    plan.how = strategy::cpu_runs;
    plan.why.push_back(size_words + " and its sort fit the host budget: one run, sorted in " +
                       "memory and written out in order");
  } else if (input_bytes && *input_bytes > 0 && plan.layout.single_run) {
    plan.how = strategy::cpu_one_run;
    plan.why.push_back(size_words + " and its sort fit the host budget: one run, sorted " +
                       "from the input into the output mapping");
    // (Planned for a GPU, the output's reason does not say it.)
    if (plan.output.write_once && plan.output.prefault)
      plan.why.push_back(write_once_reason(plan.output) +
                         "; the prefault started for the GPU stops where it is");
  } else if (input_bytes && plan.layout.resident_bytes >= *input_bytes) {
    plan.how = strategy::cpu_runs;
    plan.why.push_back(input_bytes == 0
                           ? std::string("an empty input")
                           : size_words + " fits the host budget, its sort does not: runs " +
                                 "kept in memory and merged");
  } else {
    plan.how = strategy::cpu_spilled_runs;
    plan.why.push_back(
        input_bytes ? size_words + " exceeds the host budget: runs spilled to temporary files "
                                   "and merged in passes"
                    : std::string("a stream of unknown size: runs kept in memory up to half ") +
                          "the budget, spilled beyond, and merged");
  }
  plan.why.push_back(plan.output.why);
  if (plan.how == strategy::cpu_runs || plan.how == strategy::cpu_spilled_runs)
    explain_prefault_ahead(input_bytes, plan);
  return plan;
}

std::string sort_plan::describe(const record_format& format) const {
  std::string s = std::string("plan: ") + strategy_name(how);
  if (sort_devices.size() > 1)
    s += " on GPUs " + device_list_text(sort_devices) + " (" + device_name + ")";
  else if (device)
    s += " on GPU " + std::to_string(*device) + " (" + device_name + ")";
  s += ", " + std::to_string(threads) + " host threads; ";
  // GPU chunks are the device's; of the host layout only the budget and the fan-in apply.
  // --merge forms no runs: the inputs are the runs.
  if (how == strategy::merge_inputs)
    s += "budget " + format_bytes(budget_bytes) + ", one run per input";
  else
    s += device ? "budget " + format_bytes(budget_bytes) + ", merge fan-in " +
                      std::to_string(layout.merge_fanin)
                : layout.describe(format);
  s += output.in_place                          ? "; output written in place"
       : output.mode == output_mode::mapped_whole ? "; output mapped whole"
       : output.mode == output_mode::direct     ? "; output written with O_DIRECT"
       : output.whole_up_to > 0 ? "; output mapped whole once the stream ends within " +
                                      format_bytes(output.whole_up_to) + ", else in windows"
                                : "; output in windows";
  if (bypass_page_cache) s += "; input and spills with O_DIRECT";
  if (output.prefault)
    s += ", prefaulted by " + std::to_string(output.prefault_threads) +
         (output.prefault_threads == 1 ? " thread" : " threads");
  for (const std::string& line : why) s += "\n  because " + line;
  if (devices.size() > 1) s += "\n  GPUs selected: " + device_list_text(devices);
  for (const std::string& line : topology.describe()) s += "\n  " + line;
  return s;
}

}  // namespace gpusort::pipeline
