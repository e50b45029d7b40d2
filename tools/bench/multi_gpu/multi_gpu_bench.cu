// gpusort-bench-multi-gpu: the device-resident multi-GPU sort (gpu/multi_gpu_sort) on the first
// 1, 2, ..., g slots of --devices, keys generated on each GPU; per phase the median of --repeat
// sorts as CSV, with the rate against one slot (issue 12: 2^31 u64 keys, 2 GPUs >= 1.8x one).
// Every sort's result is checked on the devices (each range sorted, ranges in order, counts).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/tool_support.hpp"
#include "core/parse_size.hpp"
#include "gpu/chunk_sorter.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_keys.cuh"
#include "gpu/device_memory.cuh"
#include "gpu/multi_gpu_sort.hpp"
#include "gpusort/error.hpp"
#include "gpusort/record_format.hpp"

namespace po = boost::program_options;
using namespace gpusort;

namespace {

constexpr const char* tool_name = "gpusort-bench-multi-gpu";

struct options {
  std::vector<int> devices{0};
  std::uint64_t keys = std::uint64_t{1} << 28;
  gpu::multi_gpu_key key = gpu::multi_gpu_key::u64;
  test::key_distribution dist{};
  unsigned digit_bits = 8;
  int repeat = 5;
  int warmup = 1;
  bool only_all = false;  // only g = every slot (skip 1..g-1)
  bool fuse = true;       // multi_gpu_sort_config::fuse_exchange
  gpu::chunk_algorithm local = gpu::chunk_algorithm::onesweep;  // ::local_algorithm
  std::uint32_t sections = gpu::multi_gpu_sort_config{}.exchange_sections;  // ::exchange_sections
  bool overlap = true;  // ::exchange_overlap
};

test::key_distribution parse_dist(const std::string& text) {
  if (text == "uniform") return {test::key_dist::uniform, 1};
  if (text == "equal") return {test::key_dist::equal, 1};
  if (text == "zipf") return {test::key_dist::zipf, 1};
  if (text == "sorted") return {test::key_dist::sorted, 1};
  if (text == "reverse") return {test::key_dist::reverse, 1};
  if (text.rfind("and", 0) == 0 && text.size() > 3)
    return {test::key_dist::and_words, static_cast<unsigned>(std::stoul(text.substr(3)))};
  throw error("--dist '" + text + "': expected uniform, andQ, equal, zipf, sorted or reverse");
}

template <typename Word>
__global__ void order_kernel(const Word* keys, std::uint64_t n, unsigned long long* breaks) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i + 1 < n;
       i += stride)
    if (keys[i] > keys[i + 1]) atomicAdd(breaks, 1ull);
}

/// Throws unless the ranges are each sorted, in order, and hold `n` keys in all.
template <typename Word>
void validate(const gpu::multi_gpu_result& result, std::uint64_t n) {
  std::uint64_t total = 0;
  std::optional<Word> previous_last;
  for (std::size_t d = 0; d < result.ranges.size(); ++d) {
    const gpu::multi_gpu_range& r = result.ranges[d];
    total += r.records;
    if (r.records == 0) continue;
    gpu::device_guard guard(r.device);
    gpu::device_buffer scratch(sizeof(unsigned long long), r.device);
    auto* breaks = reinterpret_cast<unsigned long long*>(scratch.data());
    GPUSORT_CUDA_TRY(cudaMemset(breaks, 0, sizeof *breaks));
    const auto* keys = static_cast<const Word*>(r.d_keys);
    order_kernel<Word><<<1024, 256>>>(keys, r.records, breaks);
    GPUSORT_CUDA_CHECK_LAUNCH();
    unsigned long long h_breaks = 0;
    Word first{};
    Word last{};
    GPUSORT_CUDA_TRY(cudaMemcpy(&h_breaks, breaks, sizeof h_breaks, cudaMemcpyDeviceToHost));
    GPUSORT_CUDA_TRY(cudaMemcpy(&first, keys, sizeof first, cudaMemcpyDeviceToHost));
    GPUSORT_CUDA_TRY(cudaMemcpy(&last, keys + r.records - 1, sizeof last, cudaMemcpyDeviceToHost));
    GPUSORT_EXPECTS(h_breaks == 0, "validation: range " + std::to_string(d) + " is not sorted");
    GPUSORT_EXPECTS(!previous_last || *previous_last <= first,
                    "validation: range " + std::to_string(d) + " begins below its predecessor");
    previous_last = last;
  }
  GPUSORT_EXPECTS(total == n, "validation: " + std::to_string(total) + " keys out of " +
                                  std::to_string(n));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// one_slot: the total of the one-slot sort, once it ran; alone_ms: the local algorithm alone.
struct one_slot_times {
  double total_ms = 0;
  double alone_ms = 0;
};

/// The local algorithm alone, as the single-GPU command sorts a chunk (gpu::chunk_sorter), on
/// the first device over all the keys (of the same distribution, drawn with one seed where the
/// slots take one each): what the slots are measured against. CUDA events around the sort,
/// median of --repeat.
template <typename Word>
double alone_ms(const options& o) {
  const int device = o.devices.front();
  gpu::device_guard guard(device);
  const auto sorter =
      gpu::make_chunk_sorter(o.local, format_preset(sizeof(Word) == 4 ? "u32" : "u64"), false);
  gpu::device_buffer data(sorter->slot_bytes(o.keys), device);
  gpu::device_buffer aux(sorter->slot_bytes(o.keys), device);
  gpu::device_buffer workspace(std::max<std::uint64_t>(1, sorter->workspace_bytes(o.keys)),
                               device);
  gpu::stream s(device);
  const gpu::event begin(device, true);
  const gpu::event end(device, true);
  std::vector<double> times;
  for (int r = 0; r < o.warmup + o.repeat; ++r) {
    test::generate_keys<Word>(reinterpret_cast<Word*>(data.data()), o.keys, o.dist, 0x5eed,
                              s.get());
    begin.record(s.get());
    (void)sorter->sort({data.data(), aux.data(), workspace.data(), workspace.size()}, o.keys,
                       s.get(), {}, {});
    end.record(s.get());
    s.synchronize();
    if (r >= o.warmup) times.push_back(gpu::elapsed_ms(begin, end));
  }
  return median(times);
}

template <typename Word>
void run_slots(const options& o, const std::vector<int>& devices, one_slot_times& one_slot) {
  const std::size_t g = devices.size();
  std::vector<std::uint64_t> sizes(g, o.keys / g);
  for (std::size_t i = 0; i < o.keys % g; ++i) ++sizes[i];
  std::vector<gpu::device_buffer> inputs;
  std::vector<gpu::multi_gpu_slice> slices;
  for (std::size_t i = 0; i < g; ++i) {
    inputs.emplace_back(sizes[i] * sizeof(Word), devices[i]);
    gpu::device_guard guard(devices[i]);
    auto* d_keys = reinterpret_cast<Word*>(inputs.back().data());
    test::generate_keys<Word>(d_keys, sizes[i], o.dist, 0x5eed + i, nullptr);
    GPUSORT_CUDA_TRY(cudaDeviceSynchronize());
    slices.push_back({d_keys, sizes[i]});
  }
  gpu::multi_gpu_sort_config config;
  config.key = o.key;
  config.digit_bits = o.digit_bits;
  config.fuse_exchange = o.fuse;
  config.local_algorithm = o.local;
  config.exchange_sections = o.sections;
  config.exchange_overlap = o.overlap;
  gpu::multi_gpu_sorter sorter(devices, config);
  const std::vector<gpu::multi_gpu_memory> memory = sorter.memory(sizes);
  for (std::size_t i = 0; i < g; ++i)
    std::fprintf(stderr,
                 "%s: g=%zu slot %zu (GPU %d): %s of device memory beside the slice, %s\n",
                 tool_name, g, i, devices[i], format_bytes(memory[i].total()).c_str(),
                 sorter.fused() ? "scattered into the destinations"
                                : "scattered locally, then copied");
  sorter.reserve(sizes);

  std::vector<double> hist, plan, scatter, exchange, local, total;
  gpu::multi_gpu_result last;
  bool first_round = true;
  std::uint32_t staged = 0;
  for (int r = 0; r < o.warmup + o.repeat; ++r) {
    gpu::multi_gpu_result result = sorter.sort(slices);
    validate<Word>(result, o.keys);
    if (r < o.warmup) continue;
    hist.push_back(result.ms.histogram);
    plan.push_back(result.ms.plan);
    scatter.push_back(result.ms.scatter);
    exchange.push_back(result.ms.exchange);
    local.push_back(result.ms.local_sort);
    total.push_back(result.ms.total);
    first_round = first_round && result.first_round_exchange;
    staged = result.staged_sections;
    last = std::move(result);
  }
  std::uint64_t most = 0;
  for (const std::uint64_t c : last.plan.destination_records) most = std::max(most, c);
  std::string list;
  for (std::size_t i = 0; i < g; ++i) list += (i ? " " : "") + std::to_string(devices[i]);
  const double t = median(total);
  if (g == 1) one_slot.total_ms = t;
  std::printf(
      "%s,%zu,%s,%s,%llu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%u,%llu,%llu,%.3f,%s,%.3f,%.3f,%d,"
      "%u,%d\n",
      list.c_str(), g, gpu::to_string(o.key).c_str(), o.dist.name().c_str(),
      static_cast<unsigned long long>(o.keys), median(hist), median(plan),
      median(scatter), median(exchange), median(local), t,
      t > 0 ? static_cast<double>(o.keys) / 1e9 / (t / 1e3) : 0.0, last.plan.passes,
      static_cast<unsigned long long>(most),
      static_cast<unsigned long long>(last.plan.bound()),
      one_slot.total_ms > 0 && t > 0 ? one_slot.total_ms / t : 0.0,
      gpu::to_string(o.local), one_slot.alone_ms,
      one_slot.alone_ms > 0 && t > 0 ? one_slot.alone_ms / t : 0.0, first_round ? 1 : 0,
      staged, o.overlap ? 1 : 0);
  std::fflush(stdout);
}

int run(const options& o) {
  std::printf("devices,slots,key,dist,keys,histogram_ms,plan_ms,scatter_ms,exchange_ms,"
              "local_sort_ms,total_ms,gkeys_s,passes,max_destination_keys,bound,speedup_vs_1,local,"
              "alone_ms,speedup_vs_alone,first_round,staged_sections,overlap\n");
  one_slot_times one_slot;
  one_slot.alone_ms = o.key == gpu::multi_gpu_key::u32 ? alone_ms<std::uint32_t>(o)
                                                       : alone_ms<std::uint64_t>(o);
  const std::size_t first = o.only_all ? o.devices.size() : 1;
  for (std::size_t g = first; g <= o.devices.size(); ++g) {
    const std::vector<int> devices(o.devices.begin(),
                                   o.devices.begin() + static_cast<std::ptrdiff_t>(g));
    if (o.key == gpu::multi_gpu_key::u32) run_slots<std::uint32_t>(o, devices, one_slot);
    else run_slots<std::uint64_t>(o, devices, one_slot);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  po::options_description desc(
      std::string("Usage: ") + tool_name +
      " [OPTION]...\nThe device-resident multi-GPU sort on the first 1, 2, ..., g slots of "
      "--devices (keys generated on each GPU, split evenly), the median of --repeat sorts per "
      "phase, as CSV:\ndevices,slots,key,dist,keys,histogram_ms,plan_ms,scatter_ms,"
      "exchange_ms,local_sort_ms,total_ms,gkeys_s,passes,max_destination_keys,bound,"
      "speedup_vs_1,local,alone_ms,speedup_vs_alone,first_round,staged_sections,overlap "
      "(device phases: the slowest slot; total: host clock; speedup_vs_1: against the one-slot "
      "sort's total; alone_ms: the local algorithm alone sorting all the keys on the first "
      "device, as the single-GPU command does, CUDA events; speedup_vs_alone: alone_ms / "
      "total_ms; first_round: 1 when every sort's exchange was HRS's first round; "
      "staged_sections: the most sections a source staged in, in the last sort; overlap: 0 "
      "with --no-overlap)\n\nOptions");
  desc.add_options()
      ("devices", po::value<std::string>()->value_name("LIST"),
       "device ids, comma-separated; repeats run several slots on one GPU (default 0)")
      ("keys", po::value<std::string>()->value_name("N"),
       "keys in all, K/M/G suffixes as powers of 1024 (default 256M)")
      ("key", po::value<std::string>()->value_name("u32|u64"), "key width (default u64)")
      ("dist", po::value<std::string>()->value_name("D"),
       "uniform (default), andQ, equal, zipf, sorted, reverse")
      ("digit-bits", po::value<unsigned>()->value_name("B"), "bits per histogram pass (8)")
      ("only-all", "time only all slots of --devices, not 1..g-1 too")
      ("no-fuse", "scatter into a local buffer and copy the pieces after, even where the GPUs "
                  "reach each other's memory")
      ("local", po::value<std::string>()->value_name("onesweep|hrs"),
       "each destination's sort of its range (default onesweep)")
      ("sections", po::value<std::uint32_t>()->value_name("N"),
       "where the exchange is HRS's first round, scatter the keys for other GPUs locally in up "
       "to N sections, each copied over while the next is scattered; 0: store straight into "
       "the peers (default 8)")
      ("no-overlap", "where the exchange is staged, sort each destination's range after every "
                     "key arrived, not its first half while the rest crosses the link")
      ("repeat", po::value<int>()->value_name("N"), "timed sorts, median reported (default 5)")
      ("warmup", po::value<int>()->value_name("N"), "untimed sorts first (default 1)")
      ("help", "print this help and exit")
      ("version", "print the version and exit");
  const tools::tool_options parsed = tools::parse_options_only(argc, argv, desc, tool_name);
  if (!parsed.values) return parsed.status;
  const po::variables_map* vm = &*parsed.values;
  options o;
  if (vm->count("devices"))
    o.devices = tools::parse_device_ids((*vm)["devices"].as<std::string>(),
                                        "expected device ids such as 0,1", true);
  if (vm->count("keys")) o.keys = parse_size((*vm)["keys"].as<std::string>(), 0, "--keys");
  if (vm->count("key")) {
    const std::string k = (*vm)["key"].as<std::string>();
    GPUSORT_EXPECTS(k == "u32" || k == "u64", "--key '" + k + "': expected u32 or u64");
    o.key = k == "u32" ? gpu::multi_gpu_key::u32 : gpu::multi_gpu_key::u64;
  }
  if (vm->count("dist")) o.dist = parse_dist((*vm)["dist"].as<std::string>());
  if (vm->count("digit-bits")) o.digit_bits = (*vm)["digit-bits"].as<unsigned>();
  o.only_all = vm->count("only-all") != 0;
  o.fuse = vm->count("no-fuse") == 0;
  if (vm->count("local")) {
    const std::string l = (*vm)["local"].as<std::string>();
    GPUSORT_EXPECTS(l == "onesweep" || l == "hrs", "--local '" + l + "': expected onesweep or hrs");
    o.local = l == "hrs" ? gpu::chunk_algorithm::hrs : gpu::chunk_algorithm::onesweep;
  }
  o.overlap = vm->count("no-overlap") == 0;
  if (vm->count("sections")) o.sections = (*vm)["sections"].as<std::uint32_t>();
  if (vm->count("repeat")) o.repeat = (*vm)["repeat"].as<int>();
  if (vm->count("warmup")) o.warmup = (*vm)["warmup"].as<int>();
  GPUSORT_EXPECTS(o.repeat > 0 && o.warmup >= 0, "--repeat must be > 0, --warmup >= 0");
  return run(o);
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s: error: %s\n", tool_name, e.what());
  return 2;
}
