// gpusort-bench-chunked: the paper's chunked GPU sort (Stehle & Jacobsen 2017, §5)
// from page-locked host memory to page-locked host memory, no file I/O. Uniform random u64
// keys; run i overwrites chunk i in place. Reports throughput per chunk count against the
// one-way pinned H2D bandwidth measured in the same run, and CUB's on-GPU rate for one chunk.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <tbb/parallel_for.h>
#include <tbb/parallel_reduce.h>

#include "core/parse_size.hpp"
#include "core/trace.hpp"
#include "gpu/device_memory.cuh"
#include "gpu/onesweep_dispatch.cuh"
#include "gpu/run_former.hpp"
#include "gpusort/error.hpp"
#include "gpusort/version.hpp"

namespace {

using namespace gpusort;
using clock_type = std::chrono::steady_clock;

struct options {
  std::uint64_t bytes = std::uint64_t{16} << 30;
  std::uint64_t budget = std::uint64_t{4} << 30;
  std::vector<std::uint64_t> chunks{1, 2, 4, 8, 16};  ///< 0 stands for "auto"
  int repeat = 3;
  int device = 0;
  std::size_t piece_bytes = 0;
  bool strict_budget = false;
  std::uint64_t seed = 42;
  std::string trace_prefix;
  std::string csv;
};

void usage() {
  std::cout <<
      "usage: gpusort-bench-chunked [--bytes 16G] [--budget 4G] [--chunks auto,1,2,4,8,16]\n"
      "                             [--repeat 3] [--device 0] [--piece 32M] [--strict-budget]\n"
      "                             [--seed N] [--trace PREFIX] [--csv FILE] [--version]\n"
      "Sorts --bytes of uniform random u64 keys from pinned host memory into pinned host memory\n"
      "in chunks (run i overwrites chunk i). For s chunks, max_chunk_records = ceil(total/s); a\n"
      "chunk that needs more than --budget of GPU memory runs with a raised budget (flagged '*')\n"
      "unless --strict-budget, which reports it as not possible.\n";
}

options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      GPUSORT_EXPECTS(i + 1 < argc, "option " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--bytes") {
      o.bytes = parse_size(value(), physical_memory_bytes(), "--bytes");
    } else if (arg == "--budget") {
      o.budget = parse_size(value(), 0, "--budget");
    } else if (arg == "--chunks") {
      o.chunks.clear();
      std::stringstream list(value());
      for (std::string item; std::getline(list, item, ',');) {
        if (item == "auto") o.chunks.push_back(0);
        else o.chunks.push_back(std::stoull(item));
        GPUSORT_EXPECTS(item == "auto" || o.chunks.back() > 0, "--chunks: counts must be > 0");
      }
    } else if (arg == "--repeat") {
      o.repeat = std::stoi(value());
    } else if (arg == "--device") {
      o.device = std::stoi(value());
    } else if (arg == "--piece") {
      o.piece_bytes = parse_size(value(), 0, "--piece");
    } else if (arg == "--strict-budget") {
      o.strict_budget = true;
    } else if (arg == "--seed") {
      o.seed = std::stoull(value());
    } else if (arg == "--trace") {
      o.trace_prefix = value();
    } else if (arg == "--csv") {
      o.csv = value();
    } else if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    } else if (arg == "--version") {
      std::cout << "gpusort-bench-chunked (gpusort) " GPUSORT_VERSION "\n";
      std::exit(0);
    } else {
      usage();
      throw error("unknown option: " + arg);
    }
  }
  GPUSORT_EXPECTS(o.bytes >= 8 && o.repeat > 0, "--bytes must hold a key and --repeat be > 0");
  return o;
}

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void fill_random(std::uint64_t* keys, std::uint64_t n, std::uint64_t seed) {
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, n, 1 << 20), [&](const auto& r) {
    for (std::uint64_t i = r.begin(); i != r.end(); ++i) keys[i] = splitmix64(seed + i);
  });
}

/// Order-independent fingerprint of a multiset of keys.
struct checksum {
  std::uint64_t sum = 0;
  std::uint64_t mix = 0;
  bool operator==(const checksum&) const = default;
};

checksum fingerprint(const std::uint64_t* keys, std::uint64_t n) {
  return tbb::parallel_reduce(
      tbb::blocked_range<std::uint64_t>(0, n, 1 << 20), checksum{},
      [&](const auto& r, checksum c) {
        for (std::uint64_t i = r.begin(); i != r.end(); ++i) {
          c.sum += keys[i];
          c.mix += splitmix64(keys[i]);
        }
        return c;
      },
      [](checksum a, checksum b) { return checksum{a.sum + b.sum, a.mix + b.mix}; });
}

bool is_sorted_parallel(const std::uint64_t* keys, std::uint64_t n) {
  if (n < 2) return true;
  return tbb::parallel_reduce(
      tbb::blocked_range<std::uint64_t>(1, n, 1 << 20), true,
      [&](const auto& r, bool ok) {
        for (std::uint64_t i = r.begin(); ok && i != r.end(); ++i) ok = keys[i - 1] <= keys[i];
        return ok;
      },
      [](bool a, bool b) { return a && b; });
}

/// Delivers run i into the bytes chunk i came from: the paper's in-place host layout. The
/// chunk size is set once the former planned it (before any callback can run).
class in_place_sink : public gpu::run_sink {
 public:
  explicit in_place_sink(std::byte* base) : base_(base) {}
  void set_chunk_bytes(std::uint64_t chunk_bytes) { chunk_bytes_ = chunk_bytes; }
  std::span<std::byte> piece_buffer(std::uint64_t run, std::uint64_t offset,
                                    std::size_t len) override {
    return {base_ + run * chunk_bytes_ + offset, len};
  }
  void piece_done(std::uint64_t, std::uint64_t, std::span<std::byte>) override {}
  void run_done(std::uint64_t, std::uint64_t) override { ++runs_; }
  [[nodiscard]] std::uint64_t runs() const { return runs_; }

 private:
  std::byte* base_;
  std::uint64_t chunk_bytes_ = 0;
  std::uint64_t runs_ = 0;
};

struct bandwidth {
  double h2d = 0;
  double d2h = 0;
  double both_h2d = 0;  ///< each direction while the other runs too
  double both_d2h = 0;
};

/// Pinned copy rates over `bytes` of the host buffer, through a device buffer of <= 1 GiB.
bandwidth measure_bandwidth(std::byte* host, std::uint64_t bytes, int device, int repeat) {
  gpu::device_guard guard(device);
  const std::uint64_t piece = std::min<std::uint64_t>(bytes, std::uint64_t{1} << 30);
  gpu::device_buffer d_a(piece, device);
  gpu::device_buffer d_b(piece, device);
  gpu::stream s1(device), s2(device);
  gpu::event e0(device, true), e1(device, true), e2(device, true), e3(device, true);
  auto copy = [&](cudaStream_t s, std::byte* d, std::byte* h, std::uint64_t n,
                  cudaMemcpyKind kind) {
    for (std::uint64_t off = 0; off < n; off += piece) {
      const std::uint64_t len = std::min(piece, n - off);
      if (kind == cudaMemcpyHostToDevice)
        GPUSORT_CUDA_TRY(cudaMemcpyAsync(d, h + off, len, kind, s));
      else
        GPUSORT_CUDA_TRY(cudaMemcpyAsync(h + off, d, len, kind, s));
    }
  };
  std::vector<double> h2d, d2h, both_h2d, both_d2h;
  for (int r = 0; r < repeat + 1; ++r) {  // the first round warms up
    e0.record(s1.get());
    copy(s1.get(), d_a.data(), host, bytes, cudaMemcpyHostToDevice);
    e1.record(s1.get());
    copy(s1.get(), d_a.data(), host, bytes, cudaMemcpyDeviceToHost);
    e2.record(s1.get());
    e2.synchronize();
    if (r > 0) {
      h2d.push_back(bytes / (gpu::elapsed_ms(e0, e1) * 1e6));
      d2h.push_back(bytes / (gpu::elapsed_ms(e1, e2) * 1e6));
    }
    // Both directions at once, half of the buffer each way.
    const std::uint64_t half = bytes / 2;
    e0.record(s1.get());
    GPUSORT_CUDA_TRY(cudaStreamWaitEvent(s2.get(), e0.get(), 0));
    copy(s1.get(), d_a.data(), host, half, cudaMemcpyHostToDevice);
    copy(s2.get(), d_b.data(), host + half, half, cudaMemcpyDeviceToHost);
    e1.record(s1.get());
    e3.record(s2.get());
    e1.synchronize();
    e3.synchronize();
    if (r > 0) {
      both_h2d.push_back(half / (gpu::elapsed_ms(e0, e1) * 1e6));
      both_d2h.push_back(half / (gpu::elapsed_ms(e0, e3) * 1e6));
    }
  }
  return {median(h2d), median(d2h), median(both_h2d), median(both_d2h)};
}

/// CUB Onesweep on `n` device-resident u64 keys (the chunk's sort alone): median Gkeys/s.
std::optional<double> measure_cub(const std::byte* host_keys, std::uint64_t n, int device,
                                  int repeat) {
  if (n == 0) return std::nullopt;
  gpu::device_guard guard(device);
  const std::size_t temp_bytes =
      gpu::detail::onesweep_keys_temp_bytes<std::uint64_t>(static_cast<std::uint32_t>(n));
  try {
    gpu::device_buffer keys(n * 8, device);
    gpu::device_buffer alt(n * 8, device);
    gpu::device_buffer temp(temp_bytes, device);
    gpu::stream s(device);
    gpu::event begin(device, true), end(device, true);
    std::vector<double> rates;
    for (int r = 0; r < repeat + 1; ++r) {
      GPUSORT_CUDA_TRY(
          cudaMemcpyAsync(keys.data(), host_keys, n * 8, cudaMemcpyHostToDevice, s.get()));
      begin.record(s.get());
      gpu::detail::onesweep_sort_keys<std::uint64_t>(
          temp.data(), temp.size(), reinterpret_cast<std::uint64_t*>(keys.data()),
          reinterpret_cast<std::uint64_t*>(alt.data()), static_cast<std::uint32_t>(n), s.get());
      end.record(s.get());
      end.synchronize();
      if (r > 0) rates.push_back(n / (gpu::elapsed_ms(begin, end) * 1e6));
    }
    return median(rates);
  } catch (const out_of_memory&) {
    return std::nullopt;
  }
}

struct row {
  std::string chunks;
  std::uint64_t chunk_records = 0;
  std::uint64_t runs = 0;
  std::uint64_t budget = 0;
  bool raised_budget = false;
  bool possible = true;
  std::string note;
  double setup_s = 0;
  double median_s = 0;
  double gbps = 0;
  double ratio = 0;
  std::optional<double> cub_gkeys;
  double h2d_busy = 0, sort_busy = 0, d2h_busy = 0;
  bool verified = true;
};

/// One table row: s chunks (0: as large as the budget allows), o.repeat timed sorts.
row run_chunk_count(const options& o, std::uint64_t s, gpu::pinned_buffer& host,
                    const bandwidth& bw) {
  const std::uint64_t n = host.size() / 8;
  const std::uint64_t bytes = n * 8;
  auto* keys = reinterpret_cast<std::uint64_t*>(host.data());
  row r;
  r.chunks = s == 0 ? "auto" : std::to_string(s);
  const std::uint64_t want = s == 0 ? 0 : (n + s - 1) / s;
  gpu::run_former_config config;
  config.device = o.device;
  config.max_chunk_records = want;
  config.memory_budget = o.budget;
  config.piece_bytes = o.piece_bytes;
  // Does the chunk fit the budget? Ask a former (it plans on construction).
  std::uint64_t planned = 0;
  {
    in_place_sink probe_sink(host.data());
    try {
      gpu::run_former probe(config, probe_sink, nullptr);
      planned = probe.chunk_records();
      probe.finish();
    } catch (const out_of_memory&) {
      planned = 0;
    }
  }
  if (planned == 0 || (want != 0 && planned < want)) {
    if (o.strict_budget || want == 0) {
      r.possible = false;
      r.note = want == 0 ? "the budget holds no chunk"
                         : "a chunk of " + format_bytes(want * 8) + " needs 3 slots > budget";
      return r;
    }
    // Three slots plus CUB's workspace (a few MiB per GiB) and slack.
    config.memory_budget = 3 * want * 8 + want / 16 + (std::uint64_t{64} << 20);
    r.raised_budget = true;
  }
  r.budget = config.memory_budget;
  // CUB's rate on fresh uniform keys (the buffer holds the previous row's sorted runs).
  const std::uint64_t cub_items = want != 0 ? want : std::min(n, planned);
  fill_random(keys, cub_items, (o.seed << 40) + (std::uint64_t{15} << 36));
  r.cub_gkeys = measure_cub(host.data(), cub_items, o.device, o.repeat);

  std::vector<double> times, setups, h2d_busy, sort_busy, d2h_busy;
  for (int rep = 0; rep < o.repeat; ++rep) {
    fill_random(keys, n, (o.seed << 40) + (std::uint64_t(rep + 1) << 36));
    trace_recorder trace;
    in_place_sink sink(host.data());
    std::uint64_t chunk = 0;
    std::vector<checksum> sums;
    double elapsed = 0;
    {
      const auto setup_start = clock_type::now();
      gpu::run_former former(config, sink, &trace);
      chunk = former.chunk_records();
      sink.set_chunk_bytes(chunk * 8);
      setups.push_back(seconds_since(setup_start));
      if (rep == 0) std::printf("chunks=%s: %s\n", r.chunks.c_str(), former.describe().c_str());
      for (std::uint64_t first = 0; first < n; first += chunk)
        sums.push_back(fingerprint(keys + first, std::min(chunk, n - first)));
      const auto start = clock_type::now();
      former.push({host.data(), bytes}, nullptr);
      former.finish();
      elapsed = seconds_since(start);
    }
    times.push_back(elapsed);
    for (const stage_stats& st : trace.summarize()) {
      if (st.name == "H2D") h2d_busy.push_back(st.busy_seconds);
      if (st.name == "sort") sort_busy.push_back(st.busy_seconds);
      if (st.name == "D2H") d2h_busy.push_back(st.busy_seconds);
    }
    if (rep == 0 && !o.trace_prefix.empty())
      trace.write_chrome_trace(o.trace_prefix + "-chunks" + r.chunks + ".json");
    r.chunk_records = chunk;
    r.runs = sink.runs();
    // Each run: sorted, and the same multiset of keys as its chunk.
    for (std::uint64_t i = 0; i < sums.size(); ++i) {
      const std::uint64_t first = i * chunk;
      const std::uint64_t count = std::min(chunk, n - first);
      if (!is_sorted_parallel(keys + first, count) ||
          !(fingerprint(keys + first, count) == sums[i]))
        r.verified = false;
    }
    if (sums.size() != r.runs) r.verified = false;
  }
  r.setup_s = median(setups);
  r.median_s = median(times);
  r.gbps = bytes / r.median_s / 1e9;
  r.ratio = r.gbps / bw.h2d;
  if (!h2d_busy.empty()) r.h2d_busy = median(h2d_busy);
  if (!sort_busy.empty()) r.sort_busy = median(sort_busy);
  if (!d2h_busy.empty()) r.d2h_busy = median(d2h_busy);
  return r;
}

int run(const options& o) {
  const int devices = gpu::device_count();
  GPUSORT_EXPECTS(devices > o.device, "no CUDA device " + std::to_string(o.device));
  const gpu::device_info info = gpu::query_device(o.device);
  const std::uint64_t n = o.bytes / 8;
  const std::uint64_t bytes = n * 8;
  std::printf("GPU %d: %s, %s total, %s free\n", info.id, info.name.c_str(),
              format_bytes(info.total_bytes).c_str(), format_bytes(info.free_bytes).c_str());
  std::printf("input: %llu u64 keys (%s), uniform random; GPU budget %s; %d repeats\n",
              static_cast<unsigned long long>(n), format_bytes(bytes).c_str(),
              format_bytes(o.budget).c_str(), o.repeat);

  auto t = clock_type::now();
  gpu::pinned_buffer host(bytes, o.device);
  std::printf("pinned_buffer of %s: %.3f s (mmap + parallel first touch + cudaHostRegister)\n",
              format_bytes(bytes).c_str(), seconds_since(t));
  auto* keys = reinterpret_cast<std::uint64_t*>(host.data());
  fill_random(keys, n, o.seed << 40);

  const bandwidth bw = measure_bandwidth(host.data(), bytes, o.device, o.repeat);
  std::printf("pinned copies of %s: H2D %.1f GB/s, D2H %.1f GB/s, both at once %.1f + %.1f GB/s\n",
              format_bytes(bytes).c_str(), bw.h2d, bw.d2h, bw.both_h2d, bw.both_d2h);

  std::vector<row> rows;
  for (const std::uint64_t s : o.chunks) {
    try {
      rows.push_back(run_chunk_count(o, s, host, bw));
    } catch (const out_of_memory& e) {
      row r;
      r.chunks = s == 0 ? "auto" : std::to_string(s);
      r.possible = false;
      r.note = e.what();
      rows.push_back(r);
    }
  }

  std::printf("\n%-6s %6s %10s %9s %8s %8s %7s %9s %10s %8s %8s %8s %6s\n", "chunks", "runs",
              "chunk", "budget", "setup_s", "sort_s", "GB/s", "vs_H2D", "CUB_Gk/s", "H2D_s",
              "CUB_s", "D2H_s", "check");
  for (const row& r : rows) {
    if (!r.possible) {
      std::printf("%-6s not possible within the budget: %s\n", r.chunks.c_str(), r.note.c_str());
      continue;
    }
    char cub[32] = "n/a";
    if (r.cub_gkeys) std::snprintf(cub, sizeof cub, "%.2f", *r.cub_gkeys);
    std::printf("%-6s %6llu %10s %8s%s %8.3f %8.3f %7.1f %8.1f%% %10s %8.3f %8.3f %8.3f %6s\n",
                r.chunks.c_str(), static_cast<unsigned long long>(r.runs),
                format_bytes(r.chunk_records * 8).c_str(), format_bytes(r.budget).c_str(),
                r.raised_budget ? "*" : " ", r.setup_s, r.median_s, r.gbps, 100 * r.ratio, cub,
                r.h2d_busy, r.sort_busy, r.d2h_busy, r.verified ? "ok" : "FAIL");
  }
  std::printf("GB/s: input bytes / median time from the first push to finish() (device memory\n"
              "allocation not included: setup_s). vs_H2D: against one-way pinned H2D %.1f GB/s.\n"
              "CUB_Gk/s: DeviceRadixSort (Onesweep) on one device-resident chunk. "
              "H2D_s/CUB_s/D2H_s:\n"
              "busy time per stream from the trace. *: budget raised so that the chunk fits.\n",
              bw.h2d);
  if (!o.csv.empty()) {
    std::ofstream csv(o.csv);
    csv << "gpu,bytes,chunks,runs,chunk_bytes,budget,raised_budget,possible,setup_s,sort_s,gbps,"
           "ratio_h2d,h2d_gbps,d2h_gbps,both_h2d_gbps,both_d2h_gbps,cub_gkeys,h2d_busy_s,"
           "sort_busy_s,d2h_busy_s,verified\n";
    for (const row& r : rows)
      csv << '"' << info.name << "\"," << bytes << ',' << r.chunks << ',' << r.runs << ','
          << r.chunk_records * 8 << ',' << r.budget << ',' << r.raised_budget << ',' << r.possible
          << ',' << r.setup_s << ',' << r.median_s << ',' << r.gbps << ',' << r.ratio << ','
          << bw.h2d << ',' << bw.d2h << ',' << bw.both_h2d << ',' << bw.both_d2h << ','
          << (r.cub_gkeys ? *r.cub_gkeys : 0.0) << ',' << r.h2d_busy << ',' << r.sort_busy << ','
          << r.d2h_busy << ',' << r.verified << '\n';
  }
  for (const row& r : rows)
    if (r.possible && !r.verified) return 1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_options(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusort-bench-chunked: error: %s\n", e.what());
    return 2;
  }
}
