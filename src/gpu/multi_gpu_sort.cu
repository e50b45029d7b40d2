// multi_gpu_sorter: the RMG phases driven from one host thread (see multi_gpu_sort.hpp).
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/first_round_layout.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.cuh"
#include "gpu/dispatch.cuh"
#include "gpu/hrs/hrs_dispatch.cuh"
#include "gpu/multi_gpu_kernels.cuh"
#include "gpu/multi_gpu_sort.hpp"
#include "gpu/onesweep_dispatch.cuh"
#include "gpu/peer_access.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/error.hpp"

namespace gpusort::gpu {

namespace mg = detail::multi_gpu;

namespace {

using host_clock = std::chrono::steady_clock;

double ms_since(host_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(host_clock::now() - t0).count();
}

constexpr std::uint64_t alignment = 256;

std::uint64_t aligned(std::uint64_t bytes) {
  return (bytes + alignment - 1) / alignment * alignment;
}

std::uint64_t segments_of(std::uint64_t records) {
  return (records + mg::segment_keys - 1) / mg::segment_keys;
}

/// Histogram counters of the widest pass: the first (one bucket) or a refinement of at most
/// g - 1 buckets.
std::uint64_t max_histogram_counters(std::size_t slots, unsigned digit_bits) {
  return std::max<std::uint64_t>(1, slots - 1) << digit_bits;
}

/// Classes of a scatter: g ranges and up to g - 1 single-key buckets between them.
std::uint64_t max_classes(std::size_t slots) { return 2 * slots - 1; }

/// One copy of a batch: `bytes` from `from` to `to`, anywhere unified addressing reaches.
struct copy_piece {
  void* to;
  const void* from;
  std::size_t bytes;
};

/// Enqueues the pieces on `stream` as one batch (one driver call, whatever their number), in
/// stream order, the copies themselves in any order among them.
void enqueue_copies(std::span<const copy_piece> pieces, cudaStream_t stream) {
  if (pieces.empty()) return;
  std::vector<void*> to(pieces.size());
  std::vector<const void*> from(pieces.size());
  std::vector<std::size_t> bytes(pieces.size());
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    to[i] = pieces[i].to;
    from[i] = pieces[i].from;
    bytes[i] = pieces[i].bytes;
  }
  cudaMemcpyAttributes attributes{};
  attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  attributes.flags = cudaMemcpyFlagPreferOverlapWithCompute;
  std::size_t first = 0;
  GPUSORT_CUDA_TRY(cudaMemcpyBatchAsync(to.data(), from.data(), bytes.data(), pieces.size(),
                                        &attributes, &first, 1, stream));
}

/// What the exchange needs of a (source, destination) pair that peer copies cannot serve.
struct staged_piece {
  pinned_buffer host;
  event copied_down;
};

}  // namespace

struct multi_gpu_sorter::impl {
  struct slot {
    int device = 0;
    stream s;
    /// The slot's own piece moves on this stream, beside the peer copies on `s`: the copy
    /// within the GPU and the one over the link use different engines (one after the other
    /// they took 14.7 ms of 102 for 2^31 u64 keys on two H100s).
    stream own;
    event scatter_begin, scatter_end, exchange_end, sort_end;  // timing
    event scattered;   // every key of the slot's slice is where its destination reads it
    event early_sent;  // ... every key of an early digit (first_round_layout)
    event own_copied;
    device_buffer scatter, receive, alternate, sort_temp, histogram, seg_counts, seg_offsets,
        scan_temp;
    pinned_buffer h_histogram;
    /// The hybrid radix sort's launch shapes on this device, and the top-digit counts of the
    /// slice its first round leaves here (local_algorithm hrs).
    hrs::device_shapes hrs_shapes;
    pinned_buffer h_first_digit;
    /// The sections the slice's first round was counted in (config.exchange_sections; 1 where
    /// the exchange is not staged), their counts (h_first_digit, section after section), and
    /// the end of each section's scatter, which its copies to the peers wait for.
    std::uint32_t sections = 1;
    std::vector<event> section_scattered;
  };

  std::vector<int> devices;
  multi_gpu_sort_config config;
  std::vector<slot> slots;
  std::vector<std::vector<bool>> peer;  // per (source slot, destination slot)
  /// Sources scatter straight into the destinations' receive buffers (every pair of slots
  /// reaches the other's memory, and config.fuse_exchange); else pieces are copied after.
  bool fused = false;

  /// Where slot i's slice lies in an in-place sorter.
  [[nodiscard]] device_buffer& slice_buffer(std::size_t i) {
    return fused ? slots[i].scatter : slots[i].receive;
  }

  [[nodiscard]] unsigned key_bits() const { return config.key == multi_gpu_key::u32 ? 32 : 64; }
  [[nodiscard]] std::uint32_t key_bytes() const { return key_bits() / 8; }

  /// Runs `f` with slot i's device current; CUDA errors name the slot, its device and `what`.
  template <typename F>
  decltype(auto) on_slot(std::size_t i, const char* what, F&& f) const {
    const std::string context = "multi-GPU sort: slot " + std::to_string(i) + " (GPU " +
                                std::to_string(devices[i]) + "): " + what + ": ";
    try {
      device_guard guard(devices[i]);
      return f();
    } catch (const out_of_memory& e) {
      throw out_of_memory(context + e.what(), e.bytes());
    } catch (const cuda_error& e) {
      throw cuda_error(context + e.what());
    }
  }

  [[nodiscard]] std::uint64_t padding_for(std::uint64_t n) const {
    return config.padding ? *config.padding
                          : default_padding(n, static_cast<std::uint32_t>(devices.size()));
  }

  template <typename Word>
  std::vector<multi_gpu_memory> memory(std::span<const std::uint64_t> slice_records) const;
  template <typename Word>
  void reserve(std::span<const std::uint64_t> slice_records);
  template <typename Word>
  multi_gpu_result sort(std::span<const multi_gpu_slice> slices);
  template <typename Word>
  std::vector<std::vector<std::uint64_t>> histograms(std::span<const multi_gpu_slice> slices,
                                                     std::span<const key_bucket> buckets,
                                                     unsigned digit_bits);
  template <typename Word>
  void scatter(std::size_t i, const multi_gpu_slice& slice, const partition_plan& plan);
  void exchange(std::size_t d, const partition_plan& plan, std::vector<staged_piece>& staged);
  void arrive(std::size_t d, const partition_plan& plan);
  /// Makes slot d's stream wait for event `sent` of every slot that sends it keys (and of d
  /// itself where `own`); call on d's device.
  void wait_for_sources(std::size_t d, const partition_plan& plan, event slot::*sent, bool own);
  template <typename Word>
  void local_sort(std::size_t d, const partition_plan& plan, multi_gpu_range& range);
  /// Whether the exchange may be HRS's first round (see multi_gpu_sort.hpp).
  [[nodiscard]] bool first_round_possible() const {
    return fused && config.local_algorithm == chunk_algorithm::hrs &&
           config.digit_bits == hrs::radix_bits;
  }
  /// The sections slot i's first round is counted in: more than one where its keys for other
  /// GPUs may go through its alternate buffer (multi_gpu_sort_config::exchange_sections).
  [[nodiscard]] std::uint32_t first_round_sections(std::size_t i, std::uint64_t records) const {
    const bool other_device = std::any_of(devices.begin(), devices.end(),
                                          [&](int d) { return d != devices[i]; });
    if (config.in_place || config.exchange_sections == 0 || !other_device) return 1;
    return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(
        records / hrs::min_section_keys, 1, config.exchange_sections));
  }
  template <typename Word>
  std::vector<std::vector<std::uint64_t>> first_digit_histograms(
      std::span<const multi_gpu_slice> slices);
  /// Returns the most sections a source staged its keys for other GPUs in (0: none staged).
  template <typename Word>
  std::uint32_t first_round_exchange(std::span<const multi_gpu_slice> slices,
                                     const partition_plan& plan,
                                     const std::vector<std::vector<std::uint64_t>>& counts,
                                     std::vector<multi_gpu_range>& ranges);
  template <typename Word>
  void transform(std::size_t i, void* d_keys, std::uint64_t n, bool normalize);
};

namespace {

/// One slot's memory for a slice of `slice` keys among `g` slots, destinations of at most
/// `bound` keys; CUB is asked on the current device.
template <typename Word>
multi_gpu_memory slot_memory(std::uint64_t slice, std::uint64_t bound, std::size_t g,
                             unsigned digit_bits, bool in_place, bool fused,
                             chunk_algorithm local) {
  multi_gpu_memory m;
  if (in_place && fused) {
    // The slice lies in the scatter buffer, which is the sort's alternate once scattered.
    m.scatter = aligned(std::max(slice, bound) * sizeof(Word));
    m.receive = aligned(bound * sizeof(Word));
  } else if (in_place) {
    // The slice's buffer receives the range; the scatter buffer is the sort's alternate.
    m.receive = aligned(std::max(slice, bound) * sizeof(Word));
    m.scatter = m.receive;
  } else if (fused) {
    // The keys go from the caller's slice straight into the destinations.
    m.receive = aligned(bound * sizeof(Word));
    m.alternate = m.receive;
  } else {
    m.scatter = aligned(slice * sizeof(Word));
    m.receive = aligned(bound * sizeof(Word));
    m.alternate = m.receive;
  }
  int device = 0;
  GPUSORT_CUDA_TRY(cudaGetDevice(&device));
  // HRS's workspace also serves the slice's own first round when the exchange is that round.
  m.sort_temp =
      local == chunk_algorithm::hrs
          ? aligned(hrs::workspace_bytes<Word, hrs::no_value>(
                std::max(slice, bound), hrs::tuning{}, hrs::compute_capability(device)))
          : aligned(detail::onesweep_keys_temp_bytes<Word>(static_cast<std::uint32_t>(bound)));
  const std::uint64_t class_counters = max_classes(g) * segments_of(slice);
  std::size_t scan_bytes = 0;
  GPUSORT_CUDA_TRY(cub::DeviceScan::ExclusiveSum(
      nullptr, scan_bytes, static_cast<const unsigned long long*>(nullptr),
      static_cast<unsigned long long*>(nullptr), static_cast<std::int64_t>(class_counters)));
  m.small = aligned(max_histogram_counters(g, digit_bits) * 8) + 2 * aligned(class_counters * 8) +
            aligned(scan_bytes);
  return m;
}

/// The most keys a destination receives of `n` among `g` slots with `padding`.
std::uint64_t destination_bound(std::uint64_t n, std::size_t g, std::uint64_t padding) {
  const std::uint64_t bound = std::min(n, (n + g - 1) / g + 2 * padding);
  GPUSORT_EXPECTS(bound <= detail::max_sort_items,
                  "multi-GPU sort: a destination may receive " + std::to_string(bound) +
                      " keys, more than the local sort takes (" +
                      std::to_string(detail::max_sort_items) + "): use more GPUs");
  return bound;
}

}  // namespace

template <typename Word>
std::vector<multi_gpu_memory> multi_gpu_sorter::impl::memory(
    std::span<const std::uint64_t> slice_records) const {
  const std::size_t g = devices.size();
  GPUSORT_EXPECTS(slice_records.size() == g,
                  "multi-GPU sort: " + std::to_string(slice_records.size()) + " slices for " +
                      std::to_string(g) + " slots");
  std::uint64_t n = 0;
  for (const std::uint64_t r : slice_records) n += r;
  const std::uint64_t bound = destination_bound(n, g, padding_for(n));
  std::vector<multi_gpu_memory> out(g);
  for (std::size_t i = 0; i < g; ++i)
    out[i] = on_slot(i, "workspace size", [&] {
      return slot_memory<Word>(slice_records[i], bound, g, config.digit_bits, config.in_place,
                               fused, config.local_algorithm);
    });
  return out;
}

template <typename Word>
void multi_gpu_sorter::impl::reserve(std::span<const std::uint64_t> slice_records) {
  const std::vector<multi_gpu_memory> need = memory<Word>(slice_records);
  const std::size_t g = slots.size();
  for (std::size_t i = 0; i < g; ++i) {
    slot& sl = slots[i];
    on_slot(i, "allocate workspace", [&] {
      // Freed before allocating, so that growing does not need both at once.
      const auto grow = [&](device_buffer& buffer, std::uint64_t bytes) {
        if (buffer.size() >= bytes) return;
        buffer = device_buffer();
        buffer = device_buffer(bytes, sl.device);
      };
      grow(sl.scatter, need[i].scatter);
      grow(sl.receive, need[i].receive);
      grow(sl.alternate, need[i].alternate);
      grow(sl.sort_temp, need[i].sort_temp);
      // need[i].small, in the parts memory() added up.
      const std::uint64_t hist = aligned(max_histogram_counters(g, config.digit_bits) * 8);
      const std::uint64_t counts = aligned(max_classes(g) * segments_of(slice_records[i]) * 8);
      grow(sl.histogram, hist);
      grow(sl.seg_counts, counts);
      grow(sl.seg_offsets, counts);
      grow(sl.scan_temp, need[i].small - hist - 2 * counts);
    });
  }
}

template <typename Word>
std::vector<std::vector<std::uint64_t>> multi_gpu_sorter::impl::histograms(
    std::span<const multi_gpu_slice> slices, std::span<const key_bucket> buckets,
    unsigned digit_bits) {
  GPUSORT_EXPECTS(!buckets.empty() && buckets.size() <= mg::max_pending,
                  "multi-GPU sort: " + std::to_string(buckets.size()) +
                      " buckets in one histogram pass");
  mg::histogram_params p{};
  p.buckets = static_cast<unsigned>(buckets.size());
  p.key_bits = key_bits();
  p.bucket_bits = buckets.front().bits;
  p.digit_bits = digit_bits;
  for (std::size_t j = 0; j < buckets.size(); ++j) {
    GPUSORT_EXPECTS(buckets[j].bits == p.bucket_bits,
                    "multi-GPU sort: pending buckets of different widths");
    p.prefixes[j] = buckets[j].prefix;
  }
  const std::uint64_t counters = std::uint64_t{p.buckets} << digit_bits;
  const bool use_shared = counters <= mg::shared_histogram_counters;
  for (std::size_t i = 0; i < slots.size(); ++i) {
    on_slot(i, "histogram", [&] {
      slot& sl = slots[i];
      auto* d_counts = reinterpret_cast<unsigned long long*>(sl.histogram.data());
      GPUSORT_CUDA_TRY(cudaMemsetAsync(d_counts, 0, counters * 8, sl.s.get()));
      const std::uint64_t n = slices[i].records;
      if (n != 0) {
        // Enough blocks to fill an H100/H200; each block flushes its shared counters once,
        // so more blocks would only add global atomics.
        constexpr std::uint64_t tile = std::uint64_t{mg::block_threads} * mg::histogram_items;
        const std::uint64_t blocks = std::min<std::uint64_t>(1024, (n + tile - 1) / tile);
        mg::histogram_kernel<Word><<<static_cast<unsigned>(blocks), mg::block_threads,
                                     use_shared ? counters * sizeof(unsigned) : 0, sl.s.get()>>>(
            static_cast<const Word*>(slices[i].d_keys), n, p, d_counts, use_shared);
        GPUSORT_CUDA_CHECK_LAUNCH();
      }
      GPUSORT_CUDA_TRY(cudaMemcpyAsync(sl.h_histogram.data(), d_counts, counters * 8,
                                       cudaMemcpyDeviceToHost, sl.s.get()));
    });
  }
  std::vector<std::vector<std::uint64_t>> out(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    on_slot(i, "histogram copy", [&] { slots[i].s.synchronize(); });
    out[i].resize(counters);
    std::memcpy(out[i].data(), slots[i].h_histogram.data(), counters * 8);
  }
  return out;
}

namespace {

/// The key classes of a plan: a class for every destination range between its cuts, and one
/// for each bucket that a cut splits by records (a single key, or the last bucket at the end
/// of the input). A stable partition by class then lays the slice out by destination, with
/// the records of a split bucket in input order, as the plan counts them.
template <typename Word>
mg::class_params<Word> classes_of(const partition_plan& plan, unsigned key_bits) {
  std::vector<std::uint64_t> points;
  const std::uint64_t key_max =
      key_bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << key_bits) - 1;
  for (std::uint32_t d = 1; d < plan.destinations; ++d) {
    const destination_begin& b = plan.begins[d];
    const unsigned free_bits = key_bits - b.bucket.bits;
    const std::uint64_t lo = free_bits == 64 ? 0 : b.bucket.prefix << free_bits;
    const std::uint64_t hi = free_bits == 64 ? key_max : lo | ((std::uint64_t{1} << free_bits) - 1);
    points.push_back(lo);
    const bool split = std::any_of(b.before.begin(), b.before.end(),
                                   [](std::uint64_t c) { return c != 0; });
    if (split && hi != key_max) points.push_back(hi + 1);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  // A point at 0 would only add an empty first class.
  if (!points.empty() && points.front() == 0) points.erase(points.begin());
  GPUSORT_EXPECTS(points.size() < mg::max_classes,
                  "multi-GPU sort: " + std::to_string(points.size() + 1) + " key classes");
  mg::class_params<Word> p{};
  p.count = static_cast<unsigned>(points.size());
  for (std::size_t k = 0; k < points.size(); ++k) p.points[k] = static_cast<Word>(points[k]);
  return p;
}

}  // namespace

template <typename Word>
void multi_gpu_sorter::impl::scatter(std::size_t i, const multi_gpu_slice& slice,
                                     const partition_plan& plan) {
  on_slot(i, "scatter", [&] {
    slot& sl = slots[i];
    sl.scatter_begin.record(sl.s.get());
    const std::uint64_t n = slice.records;
    if (n != 0) {
      const mg::class_params<Word> p = classes_of<Word>(plan, key_bits());
      const std::uint64_t segments = segments_of(n);
      const std::uint64_t blocks = (segments + mg::block_warps - 1) / mg::block_warps;
      const auto* keys = static_cast<const Word*>(slice.d_keys);
      auto* counts = reinterpret_cast<unsigned long long*>(sl.seg_counts.data());
      auto* offsets = reinterpret_cast<unsigned long long*>(sl.seg_offsets.data());
      GPUSORT_EXPECTS(blocks <= 0x7fffffffu, "multi-GPU sort: slice too large to scatter");
      mg::class_count_kernel<Word><<<static_cast<unsigned>(blocks), mg::block_threads, 0,
                                     sl.s.get()>>>(keys, n, p, segments, counts);
      GPUSORT_CUDA_CHECK_LAUNCH();
      std::size_t scan_bytes = sl.scan_temp.size();
      GPUSORT_CUDA_TRY(cub::DeviceScan::ExclusiveSum(
          sl.scan_temp.data(), scan_bytes, counts, offsets,
          static_cast<std::int64_t>((std::uint64_t{p.count} + 1) * segments), sl.s.get()));
      // Fused: each destination's piece straight into its receive buffer; else the slice laid
      // out by destination in the scatter buffer, for exchange() to copy.
      mg::piece_params<Word> out{};
      if (fused) {
        const auto g = static_cast<std::uint32_t>(slots.size());
        const auto src = static_cast<std::uint32_t>(i);
        out.count = g;
        for (std::uint32_t d = 0; d < g; ++d) {
          out.begin[d] = plan.send_offset(src, d);
          out.out[d] = reinterpret_cast<Word*>(slots[d].receive.data()) +
                       plan.receive_offset(src, d);
        }
        out.begin[g] = n;
      } else {
        out.count = 1;
        out.begin[0] = 0;
        out.begin[1] = n;
        out.out[0] = reinterpret_cast<Word*>(sl.scatter.data());
      }
      mg::class_scatter_kernel<Word><<<static_cast<unsigned>(blocks), mg::block_threads, 0,
                                       sl.s.get()>>>(keys, n, p, segments, offsets, out);
      GPUSORT_CUDA_CHECK_LAUNCH();
    }
    sl.scatter_end.record(sl.s.get());
    sl.scattered.record(sl.s.get());
  });
}

void multi_gpu_sorter::impl::exchange(std::size_t d, const partition_plan& plan,
                                      std::vector<staged_piece>& staged) {
  const std::uint32_t g = plan.destinations;
  // The destination pulls every piece on its own stream, so its local sort is ordered after
  // them without further events; staged pieces go down on the source's stream first.
  bool own_pending = false;
  const auto destination = static_cast<std::uint32_t>(d);
  for (std::uint32_t s = 0; s < g; ++s) {
    const std::uint64_t count = plan.count(s, destination);
    if (count == 0) continue;
    const std::uint64_t bytes = count * key_bytes();
    const std::byte* from =
        slots[s].scatter.data() + plan.send_offset(s, destination) * key_bytes();
    std::byte* to = slots[d].receive.data() + plan.receive_offset(s, destination) * key_bytes();
    const bool same_device = devices[s] == devices[d];
    if (s == d) {
      on_slot(d, "exchange (own piece)", [&] {
        slot& sl = slots[d];
        GPUSORT_CUDA_TRY(cudaStreamWaitEvent(sl.own.get(), sl.scattered.get(), 0));
        GPUSORT_CUDA_TRY(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, sl.own.get()));
        sl.own_copied.record(sl.own.get());
      });
      own_pending = true;
      continue;
    }
    if (same_device || peer[s][d]) {
      on_slot(d, "exchange", [&] {
        GPUSORT_CUDA_TRY(cudaStreamWaitEvent(slots[d].s.get(), slots[s].scattered.get(), 0));
        if (same_device)
          GPUSORT_CUDA_TRY(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice,
                                           slots[d].s.get()));
        else
          GPUSORT_CUDA_TRY(cudaMemcpyPeerAsync(to, devices[d], from, devices[s], bytes,
                                               slots[d].s.get()));
      });
      continue;
    }
    staged_piece& piece = staged.emplace_back();
    on_slot(s, "exchange (down to host)", [&] {
      piece.host = pinned_buffer(bytes, devices[s]);
      piece.copied_down = event(devices[s], /*timing=*/false);
      GPUSORT_CUDA_TRY(cudaMemcpyAsync(piece.host.data(), from, bytes, cudaMemcpyDeviceToHost,
                                       slots[s].s.get()));
      piece.copied_down.record(slots[s].s.get());
    });
    on_slot(d, "exchange (up from host)", [&] {
      GPUSORT_CUDA_TRY(cudaStreamWaitEvent(slots[d].s.get(), piece.copied_down.get(), 0));
      GPUSORT_CUDA_TRY(cudaMemcpyAsync(to, piece.host.data(), bytes, cudaMemcpyHostToDevice,
                                       slots[d].s.get()));
    });
  }
  on_slot(d, "exchange", [&] {
    slot& sl = slots[d];
    // Joined after every pull is queued, so that they run beside it.
    if (own_pending) GPUSORT_CUDA_TRY(cudaStreamWaitEvent(sl.s.get(), sl.own_copied.get(), 0));
    sl.exchange_end.record(sl.s.get());
  });
}

void multi_gpu_sorter::impl::arrive(std::size_t d, const partition_plan& plan) {
  on_slot(d, "exchange (fused)", [&] {
    slot& sl = slots[d];
    // The other sources wrote their pieces into this receive buffer as they scattered.
    wait_for_sources(d, plan, &slot::scattered, false);
    sl.exchange_end.record(sl.s.get());
  });
}

void multi_gpu_sorter::impl::wait_for_sources(std::size_t d, const partition_plan& plan,
                                              event slot::*sent, bool own) {
  for (std::size_t s = 0; s < slots.size(); ++s) {
    const auto source = static_cast<std::uint32_t>(s);
    if (s == d ? own : plan.count(source, static_cast<std::uint32_t>(d)) != 0)
      GPUSORT_CUDA_TRY(cudaStreamWaitEvent(slots[d].s.get(), (slots[s].*sent).get(), 0));
  }
}

template <typename Word>
void multi_gpu_sorter::impl::local_sort(std::size_t d, const partition_plan& plan,
                                        multi_gpu_range& range) {
  const std::uint64_t records = plan.destination_records[d];
  on_slot(d, "local sort", [&] {
    slot& sl = slots[d];
    auto* current = reinterpret_cast<Word*>(sl.receive.data());
    auto* alternate = reinterpret_cast<Word*>(sl.alternate.data());
    if (config.in_place && fused) {
      // The slice's buffer, read by this slot's own scatter only.
      alternate = reinterpret_cast<Word*>(sl.scatter.data());
    } else if (config.in_place) {
      // The scatter buffer is the alternate once every slot has pulled its pieces out of it.
      alternate = reinterpret_cast<Word*>(sl.scatter.data());
      for (std::size_t e = 0; e < slots.size(); ++e)
        if (e != d && plan.count(static_cast<std::uint32_t>(d), static_cast<std::uint32_t>(e)) != 0)
          GPUSORT_CUDA_TRY(cudaStreamWaitEvent(sl.s.get(), slots[e].exchange_end.get(), 0));
    }
    bool in_alternate = false;
    if (records > 1 && config.local_algorithm == chunk_algorithm::hrs) {
      Word* const keys[2] = {current, alternate};
      hrs::no_value* const values[2] = {nullptr, nullptr};
      hrs::sort<Word, hrs::no_value>(sl.hrs_shapes, hrs::tuning{}, keys, values, records,
                                     sl.sort_temp.data(), sl.sort_temp.size(), sl.s.get());
    } else if (records > 1) {
      in_alternate = detail::onesweep_sort_keys<Word>(sl.sort_temp.data(), sl.sort_temp.size(),
                                                      current, alternate,
                                                      static_cast<std::uint32_t>(records),
                                                      sl.s.get());
    }
    sl.sort_end.record(sl.s.get());
    range.slot = d;
    range.device = devices[d];
    range.d_keys = in_alternate ? static_cast<const void*>(alternate) : current;
    range.records = records;
  });
}

template <typename Word>
std::vector<std::vector<std::uint64_t>> multi_gpu_sorter::impl::first_digit_histograms(
    std::span<const multi_gpu_slice> slices) {
  for (std::size_t i = 0; i < slots.size(); ++i) {
    slots[i].sections = 1;  // an empty slice is not counted
    if (slices[i].records == 0) continue;
    on_slot(i, "first round histogram", [&] {
      slot& sl = slots[i];
      sl.sections = first_round_sections(i, slices[i].records);
      hrs::count_first_digit<Word>(sl.hrs_shapes, hrs::tuning{},
                                   static_cast<const Word*>(slices[i].d_keys), slices[i].records,
                                   sl.sort_temp.data(), sl.sort_temp.size(), sl.sections,
                                   reinterpret_cast<std::uint64_t*>(sl.h_first_digit.data()),
                                   sl.s.get());
    });
  }
  std::vector<std::vector<std::uint64_t>> out(slots.size(), std::vector<std::uint64_t>(hrs::radix));
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slices[i].records == 0) continue;
    on_slot(i, "first round histogram copy", [&] { slots[i].s.synchronize(); });
    const auto* counts = reinterpret_cast<const std::uint64_t*>(slots[i].h_first_digit.data());
    for (std::uint32_t j = 0; j < slots[i].sections; ++j)
      for (int d = 0; d < hrs::radix; ++d) out[i][d] += counts[std::size_t{j} * hrs::radix + d];
  }
  return out;
}

template <typename Word>
std::uint32_t multi_gpu_sorter::impl::first_round_exchange(
    std::span<const multi_gpu_slice> slices, const partition_plan& plan,
    const std::vector<std::vector<std::uint64_t>>& counts, std::vector<multi_gpu_range>& ranges) {
  const std::size_t g = slots.size();
  constexpr int radix = hrs::radix;
  std::vector<first_round_source> sources(g);
  for (std::size_t s = 0; s < g; ++s) {
    sources[s].digit_counts = counts[s];
    sources[s].device = devices[s];
    // The alternate buffer is free until the slot's own local sort; in place, it holds nothing.
    if (slots[s].sections > 1 && !config.in_place)
      sources[s].staging_capacity = slots[s].alternate.size() / sizeof(Word);
  }
  const first_round_layout layout =
      make_first_round_layout(sources, plan.destination_records, config.exchange_overlap);

  // Cursors are indices from the source's own receive buffer modulo 2^64, which reach any
  // other buffer because the key size divides 2^64.
  static_assert((std::uint64_t{1} << 63) % sizeof(Word) == 0);
  std::uint32_t staged_sections = 0;
  for (std::size_t s = 0; s < g; ++s) {
    on_slot(s, "first round scatter", [&] {
      slot& sl = slots[s];
      sl.scatter_begin.record(sl.s.get());
      const std::uint64_t n = slices[s].records;
      const bool staged = n != 0 && layout.staged[s];
      auto* base = reinterpret_cast<Word*>(sl.receive.data());
      auto* stage = reinterpret_cast<Word*>(sl.alternate.data());
      const auto destination = [&](int k) {
        return reinterpret_cast<Word*>(slots[layout.owner[k]].receive.data()) + layout.to[s][k];
      };
      std::vector<std::uint64_t> cursors(radix, 0);
      for (int k = 0; k < radix; ++k) {
        const Word* at = layout.crosses[s][k] ? stage + layout.stage[s][k] : destination(k);
        cursors[k] =
            (reinterpret_cast<std::uintptr_t>(at) - reinterpret_cast<std::uintptr_t>(base)) /
            sizeof(Word);
      }
      const auto scatter = [&](hrs::first_round_section section) {
        hrs::scatter_first_digit<Word>(sl.hrs_shapes, hrs::tuning{},
                                       static_cast<const Word*>(slices[s].d_keys), base, n,
                                       cursors.data(), section, sl.sort_temp.data(),
                                       sl.sort_temp.size(), sl.s.get());
      };
      if (n != 0 && !staged) scatter({0, 1});
      if (staged) {
        // Section j's keys of a digit follow those of the sections before it, in the staging
        // buffer as in the owner's: each section's pieces are known before it runs. Early
        // digits cross as their sections are scattered, late ones after.
        const auto* section_counts =
            reinterpret_cast<const std::uint64_t*>(sl.h_first_digit.data());
        std::vector<std::uint64_t> done(radix, 0);
        std::vector<copy_piece> early, late;
        for (std::uint32_t j = 0; j < sl.sections; ++j) {
          scatter({j, sl.sections});
          sl.section_scattered[j].record(sl.s.get());
          GPUSORT_CUDA_TRY(cudaStreamWaitEvent(sl.own.get(), sl.section_scattered[j].get(), 0));
          early.clear();
          for (int k = 0; k < radix; ++k) {
            const std::uint64_t c = section_counts[std::size_t{j} * radix + k];
            if (!layout.crosses[s][k] || c == 0) continue;
            (layout.late[k] ? late : early)
                .push_back({destination(k) + done[k], stage + layout.stage[s][k] + done[k],
                            c * sizeof(Word)});
            done[k] += c;
          }
          enqueue_copies(early, sl.own.get());
        }
        sl.early_sent.record(sl.own.get());
        enqueue_copies(late, sl.own.get());
        sl.scattered.record(sl.own.get());
        staged_sections = std::max(staged_sections, sl.sections);
      }
      sl.scatter_end.record(sl.s.get());
      if (!staged) {
        sl.early_sent.record(sl.s.get());
        sl.scattered.record(sl.s.get());
      }
    });
  }
  for (std::size_t t = 0; t < g; ++t) {
    on_slot(t, "local sort (from HRS's second round)", [&] {
      slot& sl = slots[t];
      // Every source's keys of a group, this slot's own copies out of its staging buffer
      // (the alternate, which the sort overwrites) included.
      const auto wait_for = [&](event slot::*sent) { wait_for_sources(t, plan, sent, true); };
      // The slice's buffer (in place) or the alternate: either is free once this slot's own
      // scatter, earlier on its stream, has read it.
      Word* const out = reinterpret_cast<Word*>(config.in_place ? sl.scatter.data()
                                                                : sl.alternate.data());
      Word* const in = reinterpret_cast<Word*>(sl.receive.data());
      const std::uint64_t records = plan.destination_records[t];
      // Its digits in two groups where the layout splits them, else one.
      const std::uint64_t first = layout.early_records[t];
      std::vector<std::uint64_t> early(radix, 0), late(radix, 0);
      for (int k = 0; k < radix; ++k)
        (layout.late[k] ? late : early)[k] = layout.owned[t][k];
      wait_for(layout.split ? &slot::early_sent : &slot::scattered);
      sl.exchange_end.record(sl.s.get());
      Word* const keys[2] = {out, in};
      hrs::sort_from_second_round<Word>(sl.hrs_shapes, hrs::tuning{}, keys, early.data(), first,
                                        sl.sort_temp.data(), sl.sort_temp.size(), sl.s.get());
      if (layout.split) {
        wait_for(&slot::scattered);
        Word* const rest[2] = {out + first, in + first};
        hrs::sort_from_second_round<Word>(sl.hrs_shapes, hrs::tuning{}, rest, late.data(),
                                          records - first, sl.sort_temp.data(),
                                          sl.sort_temp.size(), sl.s.get());
      }
      sl.sort_end.record(sl.s.get());
      ranges[t] = {t, devices[t], out, records};
    });
  }
  return staged_sections;
}

template <typename Word>
void multi_gpu_sorter::impl::transform(std::size_t i, void* d_keys, std::uint64_t n,
                                       bool normalize) {
  const bool needed = config.descending || (config.type != key_type::u32 &&
                                            config.type != key_type::u64);
  if (!needed || n == 0) return;
  on_slot(i, normalize ? "normalize keys" : "restore keys", [&] {
    detail::transform_keys<Word>(static_cast<Word*>(d_keys), n,
                                 gpusort::detail::make_key_codec<Word>(config.type,
                                                                       config.descending),
                                 normalize, slots[i].s.get());
  });
}

template <typename Word>
multi_gpu_result multi_gpu_sorter::impl::sort(std::span<const multi_gpu_slice> slices) {
  const host_clock::time_point t0 = host_clock::now();
  const std::size_t g = slots.size();
  GPUSORT_EXPECTS(slices.size() == g, "multi-GPU sort: " + std::to_string(slices.size()) +
                                          " slices for " + std::to_string(g) + " slots");
  std::vector<std::uint64_t> sizes(g);
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < g; ++i) {
    sizes[i] = slices[i].records;
    n += sizes[i];
    GPUSORT_EXPECTS(sizes[i] == 0 || slices[i].d_keys != nullptr,
                    "multi-GPU sort: slice " + std::to_string(i) + " has keys but no pointer");
  }
  reserve<Word>(sizes);
  if (config.in_place)
    for (std::size_t i = 0; i < g; ++i)
      transform<Word>(i, const_cast<void*>(slices[i].d_keys), sizes[i], true);

  multi_gpu_result result;
  // Histogram passes until no destination boundary cuts a bucket: the host plans between them.
  partition_config pc;
  pc.key_bits = key_bits();
  pc.digit_bits = config.digit_bits;
  pc.sources = static_cast<std::uint32_t>(g);
  pc.destinations = static_cast<std::uint32_t>(g);
  pc.padding = padding_for(n);
  partition_planner planner(pc);
  // HRS's first histogram is the planner's first pass; the exchange is HRS's first round
  // where that pass puts every boundary on a digit edge.
  bool first_round = first_round_possible();
  std::vector<std::vector<std::uint64_t>> first_digit;
  if (first_round) {
    const host_clock::time_point th = host_clock::now();
    first_digit = first_digit_histograms<Word>(slices);
    result.ms.histogram += ms_since(th);
    const host_clock::time_point tp = host_clock::now();
    planner.add_histograms(first_digit);
    result.ms.plan += ms_since(tp);
    first_round = planner.done();
  }
  while (!planner.done()) {
    const host_clock::time_point th = host_clock::now();
    const std::vector<std::vector<std::uint64_t>> counts =
        histograms<Word>(slices, planner.pending(), planner.next_digit_bits());
    result.ms.histogram += ms_since(th);
    const host_clock::time_point tp = host_clock::now();
    planner.add_histograms(counts);
    result.ms.plan += ms_since(tp);
  }
  const host_clock::time_point tp = host_clock::now();
  result.plan = planner.plan();
  result.ms.plan += ms_since(tp);

  result.ranges.resize(g);
  result.first_round_exchange = first_round;
  std::vector<staged_piece> staged;
  if (first_round) {
    result.staged_sections =
        first_round_exchange<Word>(slices, result.plan, first_digit, result.ranges);
  } else {
    // Each source lays its slice out by destination, then each destination pulls its pieces.
    for (std::size_t i = 0; i < g; ++i) scatter<Word>(i, slices[i], result.plan);
    for (std::size_t d = 0; d < g; ++d) {
      if (fused) arrive(d, result.plan);
      else exchange(d, result.plan, staged);
    }
    for (std::size_t d = 0; d < g; ++d) local_sort<Word>(d, result.plan, result.ranges[d]);
  }
  if (config.in_place)
    for (std::size_t d = 0; d < g; ++d)
      transform<Word>(d, const_cast<void*>(result.ranges[d].d_keys), result.ranges[d].records,
                      false);
  for (std::size_t i = 0; i < g; ++i) on_slot(i, "synchronize", [&] { slots[i].s.synchronize(); });

  for (std::size_t i = 0; i < g; ++i) {
    on_slot(i, "phase timing", [&] {
      const slot& sl = slots[i];
      result.ms.scatter = std::max<double>(result.ms.scatter,
                                           elapsed_ms(sl.scatter_begin, sl.scatter_end));
      result.ms.exchange = std::max<double>(result.ms.exchange,
                                            elapsed_ms(sl.scatter_end, sl.exchange_end));
      result.ms.local_sort = std::max<double>(result.ms.local_sort,
                                              elapsed_ms(sl.exchange_end, sl.sort_end));
    });
  }
  result.ms.total = ms_since(t0);
  return result;
}

// ---------------------------------------------------------------------------------------------

multi_gpu_sorter::multi_gpu_sorter(std::vector<int> devices, const multi_gpu_sort_config& config)
    : impl_(std::make_unique<impl>()) {
  impl& m = *impl_;
  GPUSORT_EXPECTS(!devices.empty(), "multi-GPU sort: no devices");
  GPUSORT_EXPECTS(devices.size() <= multi_gpu_max_slots,
                  "multi-GPU sort: " + std::to_string(devices.size()) + " slots, at most " +
                      std::to_string(multi_gpu_max_slots));
  GPUSORT_EXPECTS(config.digit_bits >= min_digit_bits && config.digit_bits <= max_digit_bits,
                  "multi-GPU sort: digit_bits " + std::to_string(config.digit_bits));
  GPUSORT_EXPECTS(config.exchange_sections <= multi_gpu_max_sections,
                  "multi-GPU sort: " + std::to_string(config.exchange_sections) +
                      " exchange sections, at most " + std::to_string(multi_gpu_max_sections));
  GPUSORT_EXPECTS(config.local_algorithm != chunk_algorithm::automatic,
                  "multi-GPU sort: the local sort is onesweep or hrs, chosen by the caller");
  // The widest refinement pass must fit the histogram kernel's bucket table.
  static_assert(multi_gpu_max_slots - 1 <= mg::max_pending);
  static_assert(2 * multi_gpu_max_slots - 1 <= mg::max_classes);
  m.devices = std::move(devices);
  m.config = config;
  const std::size_t g = m.devices.size();
  m.slots.resize(g);
  for (std::size_t i = 0; i < g; ++i) {
    m.on_slot(i, "setup", [&] {
      impl::slot& sl = m.slots[i];
      sl.device = m.devices[i];
      sl.s = stream(sl.device);
      sl.own = stream(sl.device);
      sl.own_copied = event(sl.device, false);
      sl.scatter_begin = event(sl.device, true);
      sl.scatter_end = event(sl.device, true);
      sl.exchange_end = event(sl.device, true);
      sl.sort_end = event(sl.device, true);
      sl.scattered = event(sl.device, false);
      sl.early_sent = event(sl.device, false);
      sl.h_histogram = pinned_buffer(max_histogram_counters(g, config.digit_bits) * 8, sl.device);
      if (config.local_algorithm == chunk_algorithm::hrs) {
        sl.hrs_shapes = config.key == multi_gpu_key::u32
                            ? hrs::prepare<std::uint32_t, hrs::no_value>(sl.device, hrs::tuning{})
                            : hrs::prepare<std::uint64_t, hrs::no_value>(sl.device, hrs::tuning{});
        const std::uint32_t sections = std::max(1u, config.exchange_sections);
        sl.h_first_digit =
            pinned_buffer(std::size_t{sections} * hrs::radix * sizeof(std::uint64_t), sl.device);
        for (std::uint32_t j = 0; j < sections; ++j)
          sl.section_scattered.emplace_back(sl.device, /*timing=*/false);
      }
    });
  }
  m.peer.assign(g, std::vector<bool>(g, false));
  for (std::size_t s = 0; s < g; ++s) {
    for (std::size_t d = 0; d < g; ++d) {
      if (m.devices[s] == m.devices[d]) continue;
      m.on_slot(d, "peer access", [&] {
        int can = 0;
        GPUSORT_CUDA_TRY(cudaDeviceCanAccessPeer(&can, m.devices[d], m.devices[s]));
        // The destination pulls from the source: it is the one that needs access.
        if (can != 0) enable_peer_access(m.devices[d], m.devices[s]);
        m.peer[s][d] = can != 0;
      });
    }
  }
  m.fused = config.fuse_exchange;
  for (std::size_t s = 0; s < g; ++s)
    for (std::size_t d = 0; d < g; ++d)
      if (m.devices[s] != m.devices[d] && !(m.peer[s][d] && m.peer[d][s])) m.fused = false;
}

multi_gpu_sorter::~multi_gpu_sorter() = default;
multi_gpu_sorter::multi_gpu_sorter(multi_gpu_sorter&&) noexcept = default;
multi_gpu_sorter& multi_gpu_sorter::operator=(multi_gpu_sorter&&) noexcept = default;

const std::vector<int>& multi_gpu_sorter::devices() const noexcept { return impl_->devices; }
std::size_t multi_gpu_sorter::slots() const noexcept { return impl_->devices.size(); }
std::uint32_t multi_gpu_sorter::key_bytes() const noexcept { return impl_->key_bytes(); }
bool multi_gpu_sorter::fused() const noexcept { return impl_->fused; }

std::vector<multi_gpu_memory> multi_gpu_sorter::memory(
    std::span<const std::uint64_t> slice_records) const {
  if (impl_->config.key == multi_gpu_key::u32)
    return impl_->memory<std::uint32_t>(slice_records);
  return impl_->memory<std::uint64_t>(slice_records);
}

void multi_gpu_sorter::reserve(std::span<const std::uint64_t> slice_records) {
  if (impl_->config.key == multi_gpu_key::u32) impl_->reserve<std::uint32_t>(slice_records);
  else impl_->reserve<std::uint64_t>(slice_records);
}

multi_gpu_result multi_gpu_sorter::sort(std::span<const multi_gpu_slice> slices) {
  GPUSORT_EXPECTS(!impl_->config.in_place,
                  "multi-GPU sort: an in-place sorter sorts its own slices (sort_in_place)");
  if (impl_->config.key == multi_gpu_key::u32) return impl_->sort<std::uint32_t>(slices);
  return impl_->sort<std::uint64_t>(slices);
}

void multi_gpu_sorter::copy_in(std::size_t slot, std::uint64_t offset,
                               std::span<const std::byte> host) {
  impl& m = *impl_;
  GPUSORT_EXPECTS(m.config.in_place && slot < m.slots.size(),
                  "multi-GPU sort: copy_in needs an in-place sorter and a slot of it");
  impl::slot& sl = m.slots[slot];
  device_buffer& slice = m.slice_buffer(slot);
  GPUSORT_EXPECTS(offset + host.size() <= slice.size(),
                  "multi-GPU sort: copy_in of " + std::to_string(host.size()) + " bytes at " +
                      std::to_string(offset) + " passes slot " + std::to_string(slot) +
                      "'s slice buffer of " + std::to_string(slice.size()) +
                      " bytes (reserve() first)");
  if (host.empty()) return;
  m.on_slot(slot, "copy in", [&] {
    GPUSORT_CUDA_TRY(cudaMemcpyAsync(slice.data() + offset, host.data(), host.size(),
                                     cudaMemcpyHostToDevice, sl.s.get()));
    sl.s.synchronize();
  });
}

multi_gpu_result multi_gpu_sorter::sort_in_place(std::span<const std::uint64_t> slice_records) {
  impl& m = *impl_;
  GPUSORT_EXPECTS(m.config.in_place, "multi-GPU sort: sort_in_place needs config.in_place");
  GPUSORT_EXPECTS(slice_records.size() == m.slots.size(),
                  "multi-GPU sort: " + std::to_string(slice_records.size()) + " slices for " +
                      std::to_string(m.slots.size()) + " slots");
  // Growing a buffer now would lose the keys copied in: the workspace must be reserved.
  const std::vector<multi_gpu_memory> need = memory(slice_records);
  for (std::size_t i = 0; i < need.size(); ++i) {
    const impl::slot& sl = m.slots[i];
    GPUSORT_EXPECTS(sl.receive.size() >= need[i].receive && sl.scatter.size() >= need[i].scatter &&
                        sl.sort_temp.size() >= need[i].sort_temp,
                    "multi-GPU sort: slot " + std::to_string(i) +
                        " was not reserved for these slices (reserve() before copy_in())");
  }
  std::vector<multi_gpu_slice> slices(m.slots.size());
  for (std::size_t i = 0; i < slices.size(); ++i)
    slices[i] = {m.slice_buffer(i).data(), slice_records[i]};
  if (m.config.key == multi_gpu_key::u32) return m.sort<std::uint32_t>(slices);
  return m.sort<std::uint64_t>(slices);
}

void multi_gpu_sorter::copy_out(const multi_gpu_range& range, std::uint64_t offset,
                                std::span<std::byte> host) {
  impl& m = *impl_;
  GPUSORT_EXPECTS(range.slot < m.slots.size() && range.device == m.devices[range.slot],
                  "multi-GPU sort: copy_out of a range not of this sorter");
  GPUSORT_EXPECTS(offset + host.size() <= range.records * m.key_bytes(),
                  "multi-GPU sort: copy_out of " + std::to_string(host.size()) + " bytes at " +
                      std::to_string(offset) + " passes a range of " +
                      std::to_string(range.records) + " keys");
  if (host.empty()) return;
  impl::slot& sl = m.slots[range.slot];
  m.on_slot(range.slot, "copy out", [&] {
    const auto* from = static_cast<const std::byte*>(range.d_keys) + offset;
    GPUSORT_CUDA_TRY(cudaMemcpyAsync(host.data(), from, host.size(), cudaMemcpyDeviceToHost,
                                     sl.s.get()));
    sl.s.synchronize();
  });
}

bool exchange_supports(const record_format& format) noexcept {
  return format.key_only() && format.type != key_type::bytes &&
         (format.key_size == 4 || format.key_size == 8);
}

std::uint64_t exchange_slot_bytes(std::uint64_t records, std::uint32_t key_bytes,
                                  std::size_t slots, int device, chunk_algorithm local) {
  GPUSORT_EXPECTS(slots >= 1 && (key_bytes == 4 || key_bytes == 8),
                  "multi-GPU sort: " + std::to_string(slots) + " slots of " +
                      std::to_string(key_bytes) + "-byte keys");
  const std::uint64_t bound = destination_bound(
      records, slots, default_padding(records, static_cast<std::uint32_t>(slots)));
  const std::uint64_t slice = (records + slots - 1) / slots;
  const unsigned digit_bits = multi_gpu_sort_config{}.digit_bits;
  device_guard guard(device);
  const multi_gpu_memory m =
      key_bytes == 4
          ? slot_memory<std::uint32_t>(slice, bound, slots, digit_bits, true, false, local)
          : slot_memory<std::uint64_t>(slice, bound, slots, digit_bits, true, false, local);
  return m.total();
}

std::string to_string(multi_gpu_key key) { return key == multi_gpu_key::u32 ? "u32" : "u64"; }

}  // namespace gpusort::gpu
