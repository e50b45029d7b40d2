// gpusort-bench-p2p: for each ordered pair of the selected GPUs, the bandwidth of a peer copy
// (cudaMemcpyPeerAsync, peer access enabled where the pair has it; what the staged exchange
// does) and of a kernel that stores into the peer's memory (what the multi-GPU sort's scatter
// does), each one way and both ways at once, and of the same bytes staged through page-locked
// host memory (D2H, then H2D); with one GPU, the copy within it and the staged D2H/H2D. Timed
// with CUDA events, the median of --repeat runs, as CSV on stdout.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "common/tool_support.hpp"
#include "core/parse_size.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.cuh"
#include "gpu/peer_access.hpp"
#include "gpu/run_former.hpp"
#include "gpu/topology.hpp"
#include "gpusort/error.hpp"

namespace po = boost::program_options;
using namespace gpusort;

namespace {

constexpr const char* tool_name = "gpusort-bench-p2p";
constexpr double bytes_per_gb = 1e9;
constexpr double ms_per_s = 1e3;

struct options {
  std::vector<int> devices;  // empty: every visible GPU
  std::uint64_t bytes = std::uint64_t{1} << 30;
  int repeat = 5;
  int warmup = 1;
};

/// One GPU's side of the measurements: a source and a destination buffer, a stream, events.
struct device_side {
  int id = 0;
  gpu::device_buffer src;
  gpu::device_buffer dst;
  gpu::stream s;
  gpu::event begin;
  gpu::event end;

  device_side(int device, std::size_t bytes)
      : id(device),
        src(bytes, device),
        dst(bytes, device),
        s(device),
        begin(device, /*timing=*/true),
        end(device, /*timing=*/true) {
    // Touched once, so that the first timed copy does not pay for mapping the pages.
    gpu::device_guard guard(device);
    GPUSORT_CUDA_TRY(cudaMemsetAsync(src.data(), 1, bytes, s.get()));
    GPUSORT_CUDA_TRY(cudaMemsetAsync(dst.data(), 0, bytes, s.get()));
    s.synchronize();
  }
};

/// Copies n words from src to dst, a grid-stride loop of coalesced stores: with dst in a peer's
/// memory, each warp's stores cross the link as the scatter's do.
template <typename Word>
__global__ void store_kernel(const Word* src, Word* dst, std::uint64_t n) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = src[i];
}

/// Enqueues store_kernel of `bytes` from `from` into `to` on `stream` (the current device's).
template <typename Word>
void launch_stores(const std::byte* from, std::byte* to, std::size_t bytes, cudaStream_t stream) {
  constexpr int threads = 512;
  int device = 0;
  int sms = 0;
  GPUSORT_CUDA_TRY(cudaGetDevice(&device));
  GPUSORT_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  store_kernel<Word><<<sms * 4, threads, 0, stream>>>(reinterpret_cast<const Word*>(from),
                                                       reinterpret_cast<Word*>(to),
                                                       bytes / sizeof(Word));
  GPUSORT_CUDA_CHECK_LAUNCH();
}

/// Milliseconds of `copy` enqueued on `side`'s stream between its two events.
template <typename Copy>
double timed_ms(device_side& side, Copy&& copy) {
  side.begin.record(side.s.get());
  copy();
  side.end.record(side.s.get());
  side.end.synchronize();
  return gpu::elapsed_ms(side.begin, side.end);
}

struct timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
};

timing summarize(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  const double median = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  return {median, ms.front(), ms.back()};
}

void print_row(int from, int to, const char* kind, bool peer, std::uint64_t bytes,
               const timing& t) {
  const double gb_s = t.median_ms > 0 ? static_cast<double>(bytes) / bytes_per_gb /
                                            (t.median_ms / ms_per_s)
                                      : 0;
  std::printf("%d,%d,%s,%s,%llu,%.3f,%.2f,%.3f,%.3f\n", from, to, kind, peer ? "yes" : "no",
              static_cast<unsigned long long>(bytes), t.median_ms, gb_s, t.min_ms, t.max_ms);
  std::fflush(stdout);
}

/// Runs `measure` warmup + repeat times and keeps the last `repeat` results.
template <typename Measure>
timing measured(const options& o, Measure&& measure) {
  std::vector<double> ms;
  for (int i = 0; i < o.warmup + o.repeat; ++i) {
    const double t = measure();
    if (i >= o.warmup) ms.push_back(t);
  }
  return summarize(std::move(ms));
}

int run(const options& o) {
  int count = 0;
  GPUSORT_CUDA_TRY(cudaGetDeviceCount(&count));
  std::vector<int> ids = o.devices;
  if (ids.empty()) {
    ids.resize(static_cast<std::size_t>(count));
    std::iota(ids.begin(), ids.end(), 0);
  }
  for (const int id : ids)
    GPUSORT_EXPECTS(id < count, "--devices: no CUDA device " + std::to_string(id) + " (" +
                                    std::to_string(count) + " present)");
  GPUSORT_EXPECTS(!ids.empty(), "no CUDA device present");
  const gpu::gpu_topology topology = gpu::probe_topology(ids);
  for (const std::string& line : topology.describe())
    std::fprintf(stderr, "%s: %s\n", tool_name, line.c_str());

  const std::size_t bytes = static_cast<std::size_t>(o.bytes);
  std::vector<device_side> sides;
  sides.reserve(ids.size());
  for (const int id : ids) sides.emplace_back(id, bytes);
  // One staging buffer, page-locked for every device (portable registration).
  gpu::pinned_buffer host(bytes, ids.front());

  std::printf("from,to,kind,peer_access,bytes,median_ms,median_gb_s,min_ms,max_ms\n");
  for (std::size_t i = 0; i < sides.size(); ++i) {
    for (std::size_t j = 0; j < sides.size(); ++j) {
      device_side& from = sides[i];
      device_side& to = sides[j];
      const bool peer = i != j && topology.peer(i, j);
      if (i == j) {
        const timing within = measured(o, [&] {
          return timed_ms(from, [&] {
            GPUSORT_CUDA_TRY(cudaMemcpyAsync(from.dst.data(), from.src.data(), bytes,
                                             cudaMemcpyDeviceToDevice, from.s.get()));
          });
        });
        print_row(from.id, to.id, "d2d", false, o.bytes, within);
      } else {
        // Without peer access the driver still copies, through host memory: measured too,
        // and labelled by the peer_access column.
        if (peer) gpu::enable_peer_access(from.id, to.id);
        const timing p2p = measured(o, [&] {
          return timed_ms(from, [&] {
            GPUSORT_CUDA_TRY(cudaMemcpyPeerAsync(to.dst.data(), to.id, from.src.data(), from.id,
                                                 bytes, from.s.get()));
          });
        });
        print_row(from.id, to.id, "p2p", peer, o.bytes, p2p);
        if (peer) {
          gpu::enable_peer_access(to.id, from.id);
          // `move(a, b)` enqueues on a's stream a move of a.src into b.dst. "both": the pair's
          // other direction at the same time (the exchange), the slower side's time.
          auto timed = [&](auto&& move, bool both) {
            return measured(o, [&] {
              to.s.synchronize();
              if (both) {
                gpu::device_guard guard(to.id);
                to.begin.record(to.s.get());
                move(to, from);
                to.end.record(to.s.get());
              }
              gpu::device_guard guard(from.id);
              const double ms = timed_ms(from, [&] { move(from, to); });
              if (!both) return ms;
              to.end.synchronize();
              return std::max(ms, static_cast<double>(gpu::elapsed_ms(to.begin, to.end)));
            });
          };
          const auto copy = [&](device_side& a, device_side& b) {
            GPUSORT_CUDA_TRY(cudaMemcpyPeerAsync(b.dst.data(), b.id, a.src.data(), a.id, bytes,
                                                 a.s.get()));
          };
          // Stores by a kernel of the source, 8 and 16 bytes a thread.
          const auto stores = [&](auto word) {
            return [&, word](device_side& a, device_side& b) {
              launch_stores<decltype(word)>(a.src.data(), b.dst.data(), bytes, a.s.get());
            };
          };
          print_row(from.id, to.id, "p2p-both", peer, o.bytes, timed(copy, true));
          print_row(from.id, to.id, "kernel8", peer, o.bytes,
                    timed(stores(std::uint64_t{}), false));
          print_row(from.id, to.id, "kernel16", peer, o.bytes, timed(stores(uint4{}), false));
          print_row(from.id, to.id, "kernel8-both", peer, o.bytes,
                    timed(stores(std::uint64_t{}), true));
          print_row(from.id, to.id, "kernel16-both", peer, o.bytes, timed(stores(uint4{}), true));
        }
      }
      // Staged: D2H on the source, then H2D on the destination, one after the other (events
      // of two devices cannot be compared, so each leg is timed on its own device).
      std::vector<double> d2h_ms;
      std::vector<double> h2d_ms;
      std::vector<double> staged_ms;
      for (int r = 0; r < o.warmup + o.repeat; ++r) {
        const double down = timed_ms(from, [&] {
          GPUSORT_CUDA_TRY(cudaMemcpyAsync(host.data(), from.src.data(), bytes,
                                           cudaMemcpyDeviceToHost, from.s.get()));
        });
        const double up = timed_ms(to, [&] {
          GPUSORT_CUDA_TRY(cudaMemcpyAsync(to.dst.data(), host.data(), bytes,
                                           cudaMemcpyHostToDevice, to.s.get()));
        });
        if (r < o.warmup) continue;
        d2h_ms.push_back(down);
        h2d_ms.push_back(up);
        staged_ms.push_back(down + up);
      }
      if (i == j) {
        print_row(from.id, to.id, "d2h", false, o.bytes, summarize(d2h_ms));
        print_row(from.id, to.id, "h2d", false, o.bytes, summarize(h2d_ms));
      }
      print_row(from.id, to.id, "staged", false, o.bytes, summarize(staged_ms));
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  po::options_description desc(
      std::string("Usage: ") + tool_name +
      " [OPTION]...\nCopy bandwidth between GPUs: peer to peer and staged through page-locked "
      "host memory, for each ordered pair (within the GPU, and D2H/H2D, for one), as CSV:\n"
      "from,to,kind(d2d|p2p|p2p-both|kernel8|kernel16|kernel8-both|kernel16-both|d2h|h2d|"
      "staged),"
      "peer_access,bytes,median_ms,median_gb_s,min_ms,max_ms (GB = 1e9 bytes; kernelW: a "
      "kernel of the source storing W bytes a thread into the peer; -both: the other "
      "direction at once; staged = D2H then H2D, not overlapped)\n\nOptions");
  desc.add_options()
      ("devices", po::value<std::string>()->value_name("LIST"),
       "all (default) or device ids, comma-separated")
      ("bytes", po::value<std::string>()->value_name("SIZE"), "bytes per copy (default 1G)")
      ("repeat", po::value<int>()->value_name("N"), "timed copies per measurement, median "
       "reported (default 5)")
      ("warmup", po::value<int>()->value_name("N"), "untimed copies first (default 1)")
      ("help", "print this help and exit")
      ("version", "print the version and exit");
  const tools::tool_options parsed = tools::parse_options_only(argc, argv, desc, tool_name);
  if (!parsed.values) return parsed.status;
  const po::variables_map* vm = &*parsed.values;
  options o;
  if (vm->count("devices")) {
    const std::string text = (*vm)["devices"].as<std::string>();
    if (text != "all")
      o.devices = tools::parse_device_ids(text, "expected all or device ids such as 0,1", false);
  }
  if (vm->count("bytes")) o.bytes = parse_size((*vm)["bytes"].as<std::string>(), 0, "--bytes");
  if (vm->count("repeat")) o.repeat = (*vm)["repeat"].as<int>();
  if (vm->count("warmup")) o.warmup = (*vm)["warmup"].as<int>();
  GPUSORT_EXPECTS(o.bytes > 0, "--bytes must be positive");
  GPUSORT_EXPECTS(o.repeat > 0 && o.warmup >= 0, "--repeat must be > 0, --warmup >= 0");
  return run(o);
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s: error: %s\n", tool_name, e.what());
  return 2;
}
