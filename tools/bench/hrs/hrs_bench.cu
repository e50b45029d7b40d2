// gpusort-bench-hrs: the hybrid radix sort against CUB's Onesweep on device-resident keys, in
// one process on the same GPU: keys generated on the device, each sort timed with CUDA events
// around the sort alone (a device copy restores the input before each run, untimed), warm-up
// runs first, medians of --repeat runs, HRS and CUB interleaved. Every HRS result is compared
// bit for bit with CUB's. Prints CSV (one line per case) and a Markdown table of HRS time / CUB
// time over key entropy.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.cuh"
#include "gpu/device_keys.cuh"
#include "gpu/chunk_algorithm.hpp"
#include "gpu/hrs/hrs_dispatch.cuh"
#include "gpu/hrs_round_estimate.hpp"
#include "gpu/onesweep_dispatch.cuh"
#include "gpusort/error.hpp"

namespace {

using namespace gpusort;
using gpu::hrs::no_value;
using test::key_dist;
using test::key_distribution;

/// A key type and, for pairs, a value type: "u32", "u64", "u32u32", "u64u64", "u32u64",
/// "u64u32"; with ":L", sizes 2^L instead of --log2n.
struct type_spec {
  std::string name;
  int log2n = 0;  ///< 0: --log2n
};

struct options {
  std::vector<type_spec> types{{"u32", 0}, {"u64", 0}};
  std::vector<int> log2n{28};
  std::vector<key_distribution> dists;
  int repeat = 5;
  int warmup = 1;
  int device = 0;
  std::uint64_t seed = 42;
  gpu::hrs::tuning tuning{};
  bool profile = false;
  bool phases = false;
};

void usage() {
  std::cout <<
      "usage: gpusort-bench-hrs [--types u32,u64,u32u32,u64u64:27] [--log2n 28[,24,...]]\n"
      "                         [--dists uniform,and2,and3,and4,and5,equal,zipf,sorted,reverse]\n"
      "                         [--repeat 5] [--warmup 1] [--device 0] [--seed 42]\n"
      "                         [--local-threshold N] [--merge-threshold N] "
      "[--counting-threads N]\n"
      "                         [--skew-divisor N] [--local-match atomic-or|match-any]\n"
      "                         [--rank-group-max N] [--group-bits 8..12] [--joint-min-keys N]\n"
      "                         [--extend-from-round R|never]\n"
      "                         [--local-configs 64x9,128x9,...] [--profile] [--phases]\n"
      "Times the hybrid radix sort and CUB DeviceRadixSort (Onesweep) on the same device-resident\n"
      "keys (CUDA events, medians of --repeat after --warmup runs) and checks HRS against CUB bit\n"
      "for bit (pairs: CUB's keys, and an order-independent hash of the (key, value) pairs).\n"
      "Pair types carry the record index as value. TYPE:L sorts 2^L of that type. CSV on stdout,\n"
      "then a Markdown table of HRS time / CUB time. --profile adds the buckets, key blocks and\n"
      "local jobs of each HRS run; --phases the time of each kernel (one more run, events\n"
      "between the launches). The tuning options override the policy (see hrs_tuning.cuh).\n";
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

key_distribution parse_dist(const std::string& s) {
  if (s == "uniform") return {key_dist::uniform, 1};
  if (s == "equal") return {key_dist::equal, 1};
  if (s == "zipf") return {key_dist::zipf, 1};
  if (s == "sorted") return {key_dist::sorted, 1};
  if (s == "reverse") return {key_dist::reverse, 1};
  if (s.rfind("and", 0) == 0) {
    const int q = std::stoi(s.substr(3));
    GPUSORT_EXPECTS(q >= 1 && q <= 16, "--dists: andQ needs 1 <= Q <= 16");
    return q == 1 ? key_distribution{key_dist::uniform, 1}
                  : key_distribution{key_dist::and_words, static_cast<unsigned>(q)};
  }
  throw error("--dists: unknown distribution '" + s + "'");
}

options parse_options(int argc, char** argv) {
  options o;
  for (const char* d : {"uniform", "and2", "and3", "and4", "equal"})
    o.dists.push_back(parse_dist(d));
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      GPUSORT_EXPECTS(i + 1 < argc, "option " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--types") {
      o.types.clear();
      for (const std::string& item : split(value())) {
        type_spec t;
        const auto colon = item.find(':');
        t.name = item.substr(0, colon);
        if (colon != std::string::npos) t.log2n = std::stoi(item.substr(colon + 1));
        GPUSORT_EXPECTS(t.name == "u32" || t.name == "u64" || t.name == "u32u32" ||
                            t.name == "u64u64" || t.name == "u32u64" || t.name == "u64u32",
                        "--types: u32, u64, u32u32, u64u64, u32u64 or u64u32, not '" +
                            t.name + "'");
        o.types.push_back(t);
      }
    } else if (arg == "--log2n") {
      o.log2n.clear();
      for (const std::string& v : split(value())) o.log2n.push_back(std::stoi(v));
    } else if (arg == "--dists") {
      o.dists.clear();
      for (const std::string& v : split(value())) o.dists.push_back(parse_dist(v));
    } else if (arg == "--repeat") {
      o.repeat = std::stoi(value());
    } else if (arg == "--warmup") {
      o.warmup = std::stoi(value());
    } else if (arg == "--device") {
      o.device = std::stoi(value());
    } else if (arg == "--seed") {
      o.seed = std::stoull(value());
    } else if (arg == "--local-threshold") {
      o.tuning.local_threshold = static_cast<std::uint32_t>(std::stoul(value()));
    } else if (arg == "--merge-threshold") {
      o.tuning.merge_threshold = static_cast<std::uint32_t>(std::stoul(value()));
    } else if (arg == "--counting-threads") {
      o.tuning.counting_threads = static_cast<std::uint32_t>(std::stoul(value()));
    } else if (arg == "--skew-divisor") {
      o.tuning.skew_divisor = static_cast<std::uint32_t>(std::stoul(value()));
    } else if (arg == "--group-bits") {
      o.tuning.group_bits = static_cast<std::uint32_t>(std::stoul(value()));
    } else if (arg == "--joint-min-keys") {
      o.tuning.joint_min_keys = std::stoull(value());
    } else if (arg == "--extend-from-round") {
      const std::string r = value();
      o.tuning.extend_from_round = r == "never" ? gpu::hrs::max_rounds : std::stoi(r);
      GPUSORT_EXPECTS(o.tuning.extend_from_round >= 0,
                      "--extend-from-round: a round from 0, or never");
    } else if (arg == "--rank-group-max") {
      o.tuning.rank_group_max = static_cast<std::uint32_t>(std::stoul(value()));
    } else if (arg == "--local-match") {
      const std::string m = value();
      GPUSORT_EXPECTS(m == "atomic-or" || m == "match-any",
                      "--local-match: atomic-or or match-any");
      o.tuning.local_match = m == "atomic-or" ? gpu::hrs::match_mode::atomic_or
                                              : gpu::hrs::match_mode::match_any;
    } else if (arg == "--local-configs") {
      const std::vector<std::string> items = split(value());
      GPUSORT_EXPECTS(!items.empty() && items.size() <= gpu::hrs::max_local_configs,
                      "--local-configs: 1 to 12 of THREADSxKEYS");
      o.tuning.local_config_count = static_cast<int>(items.size());
      for (std::size_t i = 0; i < items.size(); ++i) {
        const auto x = items[i].find('x');
        GPUSORT_EXPECTS(x != std::string::npos, "--local-configs: THREADSxKEYS, not " + items[i]);
        o.tuning.local_configs[i] = {std::stoi(items[i].substr(0, x)),
                                     std::stoi(items[i].substr(x + 1))};
      }
    } else if (arg == "--profile") {
      o.profile = true;
    } else if (arg == "--phases") {
      o.phases = true;
    } else if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    } else {
      usage();
      throw error("unknown option: " + arg);
    }
  }
  GPUSORT_EXPECTS(o.repeat > 0 && o.warmup >= 0, "--repeat must be > 0, --warmup >= 0");
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Shannon entropy of a key in bits (the paper's x axis): AND of q uniform words sets each bit
/// with probability 2^-q; -1 where it is not known in closed form (Zipf, sorted, reverse: the
/// keys are distinct or nearly so, so their entropy is about log2 n).
double entropy_bits(const key_distribution& d, int key_bits) {
  switch (d.what) {
    case key_dist::uniform: return key_bits;
    case key_dist::equal: return 0;
    case key_dist::and_words: {
      const double p = std::ldexp(1.0, -static_cast<int>(d.and_words));
      return key_bits * -(p * std::log2(p) + (1 - p) * std::log2(1 - p));
    }
    default: return -1;
  }
}

struct result {
  std::string type;
  std::string dist;
  int log2n = 0;
  std::uint64_t n = 0;
  double entropy = 0;
  double hrs_ms = 0;
  double cub_ms = 0;
  bool equal = false;
  /// --algorithm auto's choice for this chunk (key-only shapes): from a strided sample of the
  /// keys, as the run former takes it on the host.
  double sampled_rounds = -1;
  double concentration = -1;  ///< the sample's top-digit concentration
  std::string auto_choice = "onesweep";
  double estimate_us = 0;  ///< host time of the estimate (sort of the sample and the replay)
  std::string profile;
};

/// hrs_key_sample_size keys of `d_keys` at an even stride, as the run former samples a chunk.
template <typename Key>
std::vector<std::uint64_t> sample_keys(const Key* d_keys, std::uint64_t n, cudaStream_t s) {
  const std::uint64_t step = std::max<std::uint64_t>(1, n / gpu::hrs_key_sample_size);
  const std::uint64_t count = (n - step / 2 + step - 1) / step;
  std::vector<Key> host(count);
  GPUSORT_CUDA_TRY(cudaMemcpy2DAsync(host.data(), sizeof(Key), d_keys + step / 2,
                                     step * sizeof(Key), sizeof(Key), count,
                                     cudaMemcpyDeviceToHost, s));
  GPUSORT_CUDA_TRY(cudaStreamSynchronize(s));
  return {host.begin(), host.end()};
}

std::string profile_of(const gpu::hrs::counters& c, int rounds) {
  std::ostringstream os;
  os << "buckets";
  for (int r = 0; r < rounds; ++r) os << (r ? "/" : " ") << c.buckets[r];
  os << " blocks";
  for (int r = 0; r < rounds; ++r) os << (r ? "/" : " ") << c.blocks[r];
  os << " jobs";
  for (int j = 0; j < gpu::hrs::max_local_configs; ++j) os << (j ? "/" : " ") << c.jobs[j];
  if (c.overflow) os << " OVERFLOW";
  return os.str();
}

/// Records an event after each HRS launch; phases() sums the time of each kernel kind per round
/// (local sorts per configuration).
class phase_observer final : public gpu::hrs::launch_observer {
 public:
  explicit phase_observer(int device) : device_(device), start_(device, true) {}
  void begin(cudaStream_t s) { start_.record(s); }
  void launched(const char* kernel, int index, cudaStream_t s) override {
    marks_.push_back({std::string(kernel) + (std::string(kernel) == "local" ? " c" : " r") +
                          std::to_string(index),
                      gpu::event(device_, true)});
    marks_.back().second.record(s);
  }
  /// "histogram r0 0.452 scatter r0 1.210 ..." for every kernel that took >= 5 us.
  std::string phases() {
    std::ostringstream os;
    const gpu::event* previous = &start_;
    for (auto& [name, e] : marks_) {
      e.synchronize();
      const double ms = gpu::elapsed_ms(*previous, e);
      if (ms >= 0.005) os << name << " " << std::fixed << std::setprecision(3) << ms << "; ";
      previous = &e;
    }
    return os.str();
  }

 private:
  int device_;
  gpu::event start_;
  std::vector<std::pair<std::string, gpu::event>> marks_;
};

template <typename Key, typename Value>
std::string type_name() {
  std::string t = sizeof(Key) == 4 ? "u32" : "u64";
  if constexpr (!std::is_same_v<Value, no_value>) t += sizeof(Value) == 4 ? "+u32" : "+u64";
  return t;
}

template <typename Key, typename Value>
result run_case(const options& o, int log2n, const key_distribution& dist) {
  constexpr bool pairs = !std::is_same_v<Value, no_value>;
  const std::uint64_t n = std::uint64_t{1} << log2n;
  const int dev = o.device;
  const gpu::hrs::device_shapes shapes = gpu::hrs::prepare<Key, Value>(dev, o.tuning);
  gpu::stream stream(dev);
  cudaStream_t s = stream.get();
  const std::uint64_t bytes = n * sizeof(Key);
  const std::uint64_t vbytes = pairs ? n * sizeof(Value) : 0;
  gpu::device_buffer input(bytes, dev);
  gpu::device_buffer input_values(vbytes, dev);
  gpu::device_buffer hrs_keys[2] = {gpu::device_buffer(bytes, dev), gpu::device_buffer(bytes, dev)};
  gpu::device_buffer cub_keys[2] = {gpu::device_buffer(bytes, dev), gpu::device_buffer(bytes, dev)};
  gpu::device_buffer hrs_values[2] = {gpu::device_buffer(vbytes, dev),
                                      gpu::device_buffer(vbytes, dev)};
  gpu::device_buffer cub_values[2] = {gpu::device_buffer(vbytes, dev),
                                      gpu::device_buffer(vbytes, dev)};
  const std::uint64_t hrs_ws_bytes =
      gpu::hrs::workspace_bytes<Key, Value>(n, o.tuning, shapes.compute_capability);
  std::uint64_t cub_ws_bytes = 0;
  if constexpr (pairs)
    cub_ws_bytes =
        gpu::detail::onesweep_pairs_temp_bytes<Key, Value>(static_cast<std::uint32_t>(n));
  else
    cub_ws_bytes = gpu::detail::onesweep_keys_temp_bytes<Key>(static_cast<std::uint32_t>(n));
  gpu::device_buffer hrs_ws(hrs_ws_bytes, dev);
  gpu::device_buffer cub_ws(cub_ws_bytes, dev);
  gpu::device_buffer scratch(2 * sizeof(unsigned long long), dev);
  test::generate_keys<Key>(reinterpret_cast<Key*>(input.data()), n, dist, o.seed, s);
  if constexpr (pairs)
    test::generate_indices<Value>(reinterpret_cast<Value*>(input_values.data()), n, s);

  auto keys_of = [](gpu::device_buffer& b) { return reinterpret_cast<Key*>(b.data()); };
  auto values_of = [](gpu::device_buffer& b) { return reinterpret_cast<Value*>(b.data()); };
  gpu::event start(dev, true), stop(dev, true);
  Key* const hk[2] = {keys_of(hrs_keys[0]), keys_of(hrs_keys[1])};
  Value* const hv[2] = {values_of(hrs_values[0]), values_of(hrs_values[1])};
  bool cub_in_alternate = false;
  auto restore = [&](Key* keys, Value* values) {
    GPUSORT_CUDA_TRY(cudaMemcpyAsync(keys, input.data(), bytes, cudaMemcpyDeviceToDevice, s));
    if (pairs)
      GPUSORT_CUDA_TRY(
          cudaMemcpyAsync(values, input_values.data(), vbytes, cudaMemcpyDeviceToDevice, s));
  };
  auto time_hrs = [&] {
    restore(hk[0], hv[0]);
    start.record(s);
    gpu::hrs::sort<Key, Value>(shapes, o.tuning, hk, hv, n, hrs_ws.data(), hrs_ws_bytes, s);
    stop.record(s);
    stop.synchronize();
    return static_cast<double>(gpu::elapsed_ms(start, stop));
  };
  auto time_cub = [&] {
    restore(keys_of(cub_keys[0]), values_of(cub_values[0]));
    const auto items = static_cast<std::uint32_t>(n);
    start.record(s);
    if constexpr (pairs)
      cub_in_alternate = gpu::detail::onesweep_sort_pairs<Key, Value>(
          cub_ws.data(), cub_ws_bytes, keys_of(cub_keys[0]), keys_of(cub_keys[1]),
          values_of(cub_values[0]), values_of(cub_values[1]), items, s);
    else
      cub_in_alternate = gpu::detail::onesweep_sort_keys<Key>(
          cub_ws.data(), cub_ws_bytes, keys_of(cub_keys[0]), keys_of(cub_keys[1]), items, s);
    stop.record(s);
    stop.synchronize();
    return static_cast<double>(gpu::elapsed_ms(start, stop));
  };
  for (int w = 0; w < o.warmup; ++w) {
    (void)time_hrs();
    (void)time_cub();
  }
  std::vector<double> hrs_ms, cub_ms;
  for (int r = 0; r < o.repeat; ++r) {
    hrs_ms.push_back(time_hrs());
    cub_ms.push_back(time_cub());
  }
  result res;
  res.type = type_name<Key, Value>();
  res.dist = dist.name();
  res.log2n = log2n;
  res.n = n;
  res.entropy = entropy_bits(dist, 8 * sizeof(Key));
  res.hrs_ms = median(hrs_ms);
  res.cub_ms = median(cub_ms);
  const int c = cub_in_alternate ? 1 : 0;
  auto* d_scratch = reinterpret_cast<unsigned long long*>(scratch.data());
  const test::compare_result cmp =
      test::compare_keys<Key>(hk[0], keys_of(cub_keys[c]), n, d_scratch, s);
  res.equal = cmp.mismatches == 0;
  if constexpr (pairs) {
    // Equal keys in order and the same multiset of (key, value) pairs: each run of equal keys
    // holds the same values as CUB's.
    res.equal = res.equal && test::pair_multiset_hash<Key, Value>(hk[0], hv[0], n, d_scratch, s) ==
                                 test::pair_multiset_hash<Key, Value>(keys_of(cub_keys[c]),
                                                                      values_of(cub_values[c]), n,
                                                                      d_scratch, s);
  }
  if constexpr (!pairs) {
    std::vector<std::uint64_t> sample =
        sample_keys(reinterpret_cast<const Key*>(input.data()), n, s);
    const gpu::hrs::tuning t = gpu::hrs::resolve<Key, Value>(o.tuning, shapes.compute_capability);
    const auto t0 = std::chrono::steady_clock::now();
    const gpu::hrs_round_estimate e = gpu::estimate_hrs_rounds(
        sample, 8 * sizeof(Key), n, t.local_threshold, gpu::hrs::first_extended_round(n, t));
    const gpu::chunk_algorithm choice =
        gpu::choose_chunk_algorithm(sizeof(Key), 0, n, e.scatter_rounds, e.top_digit_concentration);
    res.estimate_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    res.sampled_rounds = e.scatter_rounds;
    res.concentration = e.top_digit_concentration;
    res.auto_choice = gpu::to_string(choice);
  }
  if (o.profile)
    res.profile = profile_of(gpu::hrs::read_counters(hrs_ws.data(), s),
                             static_cast<int>(sizeof(Key)));
  if (o.phases) {
    restore(hk[0], hv[0]);
    phase_observer observer(dev);
    observer.begin(s);
    gpu::hrs::sort<Key, Value>(shapes, o.tuning, hk, hv, n, hrs_ws.data(), hrs_ws_bytes, s,
                               &observer);
    res.profile += (res.profile.empty() ? "" : " | ") + observer.phases();
  }
  return res;
}

result run_any(const options& o, const std::string& type, int log2n, const key_distribution& d) {
  using u32 = std::uint32_t;
  using u64 = std::uint64_t;
  if (type == "u32") return run_case<u32, no_value>(o, log2n, d);
  if (type == "u64") return run_case<u64, no_value>(o, log2n, d);
  if (type == "u32u32") return run_case<u32, u32>(o, log2n, d);
  if (type == "u64u64") return run_case<u64, u64>(o, log2n, d);
  if (type == "u32u64") return run_case<u32, u64>(o, log2n, d);
  return run_case<u64, u32>(o, log2n, d);
}

}  // namespace

int main(int argc, char** argv) try {
  const options o = parse_options(argc, argv);
  GPUSORT_CUDA_TRY(cudaSetDevice(o.device));
  cudaDeviceProp props{};
  GPUSORT_CUDA_TRY(cudaGetDeviceProperties(&props, o.device));
  std::fprintf(stderr, "device %d: %s, %d SMs\n", o.device, props.name, props.multiProcessorCount);
  for (const type_spec& t : o.types) {
    std::string d;
    const int cc = gpu::hrs::compute_capability(o.device);
    using u32 = std::uint32_t;
    using u64 = std::uint64_t;
    if (t.name == "u32") d = gpu::hrs::describe<u32, no_value>(o.tuning, cc);
    else if (t.name == "u64") d = gpu::hrs::describe<u64, no_value>(o.tuning, cc);
    else if (t.name == "u32u32") d = gpu::hrs::describe<u32, u32>(o.tuning, cc);
    else if (t.name == "u64u64") d = gpu::hrs::describe<u64, u64>(o.tuning, cc);
    else if (t.name == "u32u64") d = gpu::hrs::describe<u32, u64>(o.tuning, cc);
    else d = gpu::hrs::describe<u64, u32>(o.tuning, cc);
    std::fprintf(stderr, "HRS %s: %s\n", t.name.c_str(), d.c_str());
  }

  std::printf("gpu,type,dist,log2n,n,entropy_bits,hrs_ms,cub_ms,hrs_over_cub,cub_over_hrs,"
              "hrs_gkeys_s,cub_gkeys_s,equal,sampled_rounds,concentration,auto,auto_over_best,"
              "estimate_us%s\n",
              o.profile || o.phases ? ",profile" : "");
  std::vector<result> results;
  bool all_equal = true;
  for (const type_spec& t : o.types) {
    const std::vector<int> sizes = t.log2n != 0 ? std::vector<int>{t.log2n} : o.log2n;
    for (const int log2n : sizes) {
      for (const key_distribution& d : o.dists) {
        const result r = run_any(o, t.name, log2n, d);
        all_equal = all_equal && r.equal;
        const double auto_ms = r.auto_choice == "hrs" ? r.hrs_ms : r.cub_ms;
        std::printf("\"%s\",%s,%s,%d,%llu,%.2f,%.4f,%.4f,%.3f,%.3f,%.2f,%.2f,%s,%.3f,%.3f,%s,%.3f,"
                    "%.1f%s%s%s\n",
                    props.name, r.type.c_str(), r.dist.c_str(), r.log2n,
                    static_cast<unsigned long long>(r.n), r.entropy, r.hrs_ms, r.cub_ms,
                    r.hrs_ms / r.cub_ms, r.cub_ms / r.hrs_ms, r.n / r.hrs_ms / 1e6,
                    r.n / r.cub_ms / 1e6, r.equal ? "yes" : "NO", r.sampled_rounds, r.concentration,
                    r.auto_choice.c_str(), auto_ms / std::min(r.hrs_ms, r.cub_ms), r.estimate_us,
                    o.profile || o.phases ? ",\"" : "",
                    r.profile.c_str(), o.profile || o.phases ? "\"" : "");
        std::fflush(stdout);
        results.push_back(r);
      }
    }
  }
  // Markdown: one row per distribution and size, HRS time / CUB time per key type.
  std::printf("\n| keys | distribution | entropy (bits) | HRS ms | CUB ms | HRS/CUB time | "
              "CUB/HRS | auto | auto/best |\n|---|---|---|---|---|---|---|---|---|\n");
  for (const result& r : results) {
    const double auto_ms = r.auto_choice == "hrs" ? r.hrs_ms : r.cub_ms;
    std::printf("| 2^%d %s | %s | %s | %.3f | %.3f | %.2f | %.2fx | %s | %.2f |\n", r.log2n,
                r.type.c_str(), r.dist.c_str(),
                r.entropy < 0 ? "-" : (std::ostringstream() << r.entropy).str().c_str(),
                r.hrs_ms, r.cub_ms, r.hrs_ms / r.cub_ms, r.cub_ms / r.hrs_ms,
                r.auto_choice.c_str(), auto_ms / std::min(r.hrs_ms, r.cub_ms));
  }
  if (!all_equal) {
    std::fprintf(stderr, "gpusort-bench-hrs: HRS and CUB disagree on some case (equal=NO)\n");
    return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gpusort-bench-hrs: error: %s\n", e.what());
  return 2;
}
