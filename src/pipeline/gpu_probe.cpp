// find_gpu for CUDA builds: which devices the options select, how they are connected, and how
// large a chunk each of them holds.
#include <algorithm>
#include <atomic>
#include <optional>

#include "core/each_until_failure.hpp"
#include "core/parse_size.hpp"
#include "cpu/sort_items.hpp"
#include "gpu/multi_gpu_sort.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/error.hpp"
#include "gpu/topology.hpp"
#include "pipeline/gpu_selection.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

namespace {

/// The most records that `slots` GPUs sort together by exchange when each may use `budget`
/// bytes (gpu::exchange_slot_bytes, asked on `device`) with either local sort, which the
/// strategy picks later; 0 when none fit.
std::uint64_t exchange_capacity(std::uint32_t key_bytes, std::size_t slots, int device,
                                std::uint64_t budget) {
  const auto fits = [&](std::uint64_t n) {
    try {
      for (const gpu::chunk_algorithm local :
           {gpu::chunk_algorithm::onesweep, gpu::chunk_algorithm::hrs})
        if (gpu::exchange_slot_bytes(n, key_bytes, slots, device, local) > budget) return false;
      return true;
    } catch (const error&) {
      return false;  // a destination could receive more keys than the local sort takes
    }
  };
  // The slot's bytes grow with n: the largest n that fits, by bisection.
  std::uint64_t lo = 0;
  std::uint64_t hi = slots * (std::uint64_t{1} << 32);
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace

std::optional<gpu_facts> find_gpu(const sort_options& options,
                                  std::optional<std::uint64_t> input_bytes, std::string& gpu_note) {
  using mode = device_selection::mode;
  const bool demanded = gpu_demanded(options);
  const int count = gpu::device_count();
  if (count == 0) {
    GPUSORT_EXPECTS(!demanded, "no usable CUDA device found (needed by --algorithm onesweep or "
                               "hrs, --merge-on gpu or --devices all or a list); use --devices "
                               "none for the CPU path");
    gpu_note = "no usable CUDA device found";
    return std::nullopt;
  }
  std::vector<int> devices = resolve_devices(options.devices, count);
  // Formats the former cannot sort directly travel as 16-byte (key, index) items.
  gpu::run_former_config config;
  config.format = gpu::supports_format(options.format) ? options.format : cpu::sort_item_format();
  config.memory_budget = options.gpu_memory_bytes;
  config.algorithm = chunk_algorithm_for(options, gpu::supports_format(options.format));
  std::uint64_t least_budget = ~std::uint64_t{0};  // of the GPUs asked, for the exchange sort
  auto chunk_on = [&](const gpu::device_info& info) {
    config.device = info.id;
    const gpu::chunk_plan chunks = gpu::plan_chunks(config, info);
    least_budget = std::min(least_budget, std::min(chunks.budget_bytes, info.free_bytes));
    if (chunks.chunk_records == 0)
      throw out_of_memory("GPU " + std::to_string(info.id) + " (" + info.name +
                              "): a memory budget of " + format_bytes(chunks.budget_bytes) +
                              " holds no chunk of " + describe(options.format) + " (--gpu-memory)",
                          chunks.budget_bytes);
    return chunks.chunk_records;
  };
  // A stream, or an input of one chunk, goes to the first GPU alone: opening the others held
  // its setup back by 0.2 s (two H200s, 3-16 GiB of u64: set up at 0.54-0.58 s instead of
  // 0.35-0.38 s; tools/bench/results/2026-11-27-h200x2-queue). Whether the input may be one
  // chunk is judged from the first GPU's memory size, read without opening it; where it may,
  // the first is opened alone and the others only where its memory free turns out to hold
  // less.
  const std::uint64_t items = input_bytes ? *input_bytes / options.format.record_size : 0;
  std::string unopened;
  std::optional<gpu::device_info> first_queried;  // not asked again below
  if (devices.size() > 1 &&
      (!input_bytes ||
       gpu::may_hold_chunk(config, gpu::describe_device(devices.front()).total_bytes, items))) {
    const gpu::device_info& first = first_queried.emplace(gpu::query_device(devices.front()));
    if (!input_bytes || items <= chunk_on(first)) {
      const std::vector<int> others(devices.begin() + 1, devices.end());
      unopened = (input_bytes ? "one chunk of " + format_bytes(*input_bytes) : "a stream") +
                 " goes to GPU " + std::to_string(first.id) + " alone: " +
                 (others.size() > 1 ? "GPUs " : "GPU ") + device_list_text(others) +
                 (others.size() > 1 ? " are" : " is") + " not opened";
      devices.resize(1);
    }
  }
  // The GPUs needed are opened here, at once, while the output's prefault runs: a second GPU
  // opened later, as its share set up, held that share's reads back by 0.5-0.7 s (two H100s,
  // 16 GiB; 0.05 s for the first GPU, opened here).
  std::vector<gpu::device_info> infos(devices.size());
  detail::each_until_failure(devices.size(), [&](std::size_t i, const std::atomic<bool>&) {
    infos[i] = i == 0 && first_queried ? *first_queried : gpu::query_device(devices[i]);
  });
  least_budget = ~std::uint64_t{0};  // counted again below, over the GPUs opened
  // An input of one chunk goes to the first GPU; shares are cut into chunks that the GPU with
  // the least memory free holds, so that each GPU holds one.
  const gpu::device_info& first = infos.front();
  const gpu::device_info& least = *std::min_element(
      infos.begin(), infos.end(), [](const gpu::device_info& a, const gpu::device_info& b) {
        return a.free_bytes < b.free_bytes;
      });
  gpu_facts facts;
  facts.device = first.id;
  facts.name = first.name;
  facts.free_bytes = least.free_bytes;
  facts.one_chunk_records = chunk_on(first);
  facts.chunk_records = least.id == first.id ? facts.one_chunk_records : chunk_on(least);
  facts.sorts_records = gpu::supports_format(options.format);
  facts.devices = devices;
  if (devices.size() > 1 && gpu::exchange_supports(options.format)) {
    for (const gpu::device_info& info : infos) chunk_on(info);  // every GPU's budget
    facts.exchange_records =
        exchange_capacity(options.format.record_size, devices.size(), least.id, least_budget);
  }
  // Once, for every GPU opened: --verbose shows how they reach each other.
  facts.topology = gpu::probe_topology(devices);
  if (!unopened.empty())
    gpu_note = unopened;
  else if (devices.size() > 1)
    gpu_note = std::to_string(devices.size()) + " GPUs selected (--devices " +
               (options.devices.how == mode::list ? device_list_text(devices)
                : options.devices.how == mode::all ? std::string("all")
                                                   : std::string("auto")) +
               "); shares are cut into chunks that device " + std::to_string(least.id) +
               " holds (" + least.name + ", " + format_bytes(least.free_bytes) +
               " free, the least of them)";
  return facts;
}

bool gpu_backend_built() noexcept { return true; }

std::string backend_description() {
  return std::string("CUDA backend, sm_") + GPUSORT_CUDA_ARCHS;
}

}  // namespace gpusort::pipeline
