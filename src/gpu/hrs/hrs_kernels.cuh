// The hybrid radix sort's __global__ kernels (Stehle & Jacobsen 2017, section 4): one counting
// pass per round (histogram -> plan -> scatter, a constant number of launches whatever the number
// of buckets; from joint_min_keys keys on, round 0's histogram counts the top two digits and
// round 1 has none), the local sorts at the end, and the initial assignment. Template
// parameters are the key and value words and the tuning policy (hrs_tuning.cuh); launched only
// from hrs_dispatch.cuh. Every loop over work the device produced reads its length from the
// counters, so that the host enqueues the whole sort without waiting.
//
// Buffers: round r reads its buckets from keys[r % 2] and scatters them into keys[(r + 1) % 2];
// every key type has an even number of 8-bit digits, so the last round lands in keys[0], and the
// local sorts write keys[0] too: the sorted keys always end in keys[0] (section 4.1).
//
// Digits: each bucket records the bit where its next digit starts. From a.extend_from_round on,
// a pass's zero digit takes the next 8 bits too (zero_extended_digits, 511 codes), so buckets of
// one round may stand at different bits, and a bucket can run out of bits before the last
// round. Its sub-buckets are then sorted: where they landed in keys[1], they still move to
// keys[0], as local jobs or, larger ones (all keys equal), as buckets of one more pass.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_pipeline.h>

#include "gpu/hrs/hrs_block.cuh"
#include "gpu/hrs/hrs_tuning.cuh"
#include "gpu/hrs/hrs_workspace.cuh"

namespace gpusort::gpu::hrs {

template <typename Key>
inline constexpr int key_digits = static_cast<int>(sizeof(Key));

/// The bit where round r's digit starts: the most significant digit first.
template <typename Key>
__host__ __device__ constexpr unsigned round_shift(int round) {
  return static_cast<unsigned>(radix_bits * (key_digits<Key> - 1 - round));
}

template <typename Value>
inline constexpr bool has_values = !std::is_same_v<Value, no_value>;

/// Digit codes of round `round`'s counting pass (its histograms' bins).
template <typename Key, typename Value>
__host__ __device__ constexpr std::uint32_t bins_of_round(const sort_args<Key, Value>& a,
                                                          int round) {
  return round >= a.extend_from_round ? zero_extended_digits::bins : byte_digits::bins;
}

/// The smallest local configuration that holds `size` keys.
template <typename Key, typename Value>
__device__ __forceinline__ int config_for(const sort_args<Key, Value>& a, std::uint64_t size) {
  int c = 0;
  while (c + 1 < a.config_count && a.config_capacity[c] < size) ++c;
  return c;
}

/// Marks the sort as broken (a bound of the model was exceeded: a bug); the host checks it in
/// tests.
__device__ __forceinline__ void report_overflow(counters* ctr) { atomicExch(&ctr->overflow, 1u); }

// --- initial assignment ------------------------------------------------------------------------

/**
 * Round 0: one bucket of all n keys split into key blocks, or, when n fits a local sort and
 * `count_all` is false, one local job. The counters were zeroed before.
 */
template <typename Key, typename Value, typename Policy>
__global__ void init_kernel(sort_args<Key, Value> a, bool count_all) {
  const std::uint64_t kpb = a.keys_per_block;
  const std::uint64_t n = a.n;
  const std::uint64_t tid = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  if (n <= a.local_threshold && !count_all) {
    if (tid == 0 && n > 0) {
      const int c = config_for(a, n);
      a.ws.jobs[c][0] = local_job{0, static_cast<std::uint32_t>(n), 0};
      a.ws.ctr->jobs[c] = 1;
    }
    return;
  }
  const std::uint64_t blocks = (n + kpb - 1) / kpb;
  if (tid == 0) {
    a.ws.buckets[0][0] = bucket{0, n, ~std::uint64_t{0}, 0, 0, round_shift<Key>(0)};
    a.ws.ctr->buckets[0] = 1;
    a.ws.ctr->blocks[0] = static_cast<std::uint32_t>(blocks);
  }
  for (std::uint64_t i = tid; i < bins_of_round(a, 0); i += stride) a.ws.bucket_hist[0][i] = 0;
  if (a.ws.joint != nullptr)
    for (std::uint64_t i = tid; i < joint_bins; i += stride) a.ws.joint_carries[i] = 0;
  for (std::uint64_t b = tid; b < blocks; b += stride) {
    const std::uint64_t first = b * kpb;
    a.ws.blocks[0][b] =
        key_block{first, static_cast<std::uint32_t>(n - first < kpb ? n - first : kpb), 0};
  }
}

/// Round 0's scatter cursors, chosen by the caller (digit d's keys go to base + at[d] on):
/// one per digit, written over the counts of the round's only bucket.
struct first_round_cursors {
  std::uint64_t at[radix];
};

template <typename Key, typename Value, typename Policy>
__global__ void __launch_bounds__(radix) set_cursors_kernel(sort_args<Key, Value> a,
                                                             first_round_cursors c) {
  a.ws.bucket_hist[0][threadIdx.x] = c.at[threadIdx.x];
}

/// Round 0's key blocks cut into `sections` runs of consecutive blocks: where section j begins
/// among `blocks` (j = sections: the end). A multi-GPU exchange scatters its slice a section at a
/// time, so that each section's keys can cross the link while the next one is scattered.
__host__ __device__ constexpr std::uint32_t section_first_block(std::uint32_t j,
                                                                std::uint32_t sections,
                                                                std::uint32_t blocks) {
  return static_cast<std::uint32_t>(std::uint64_t{blocks} * j / sections);
}

/**
 * The digit counts of each section of round 0, summed from the key blocks' stored histograms
 * into out[j * radix + d] (zeroed before): grid (parts, sections) of radix threads, each block
 * summing a run of the section's blocks, one atomic per digit.
 */
template <typename Key, typename Value, typename Policy>
__global__ void __launch_bounds__(radix) section_counts_kernel(sort_args<Key, Value> a,
                                                               std::uint32_t blocks,
                                                               unsigned long long* out) {
  const std::uint32_t j = blockIdx.y;
  const std::uint32_t first = section_first_block(j, gridDim.y, blocks);
  const std::uint32_t last = section_first_block(j + 1, gridDim.y, blocks);
  const std::uint32_t per = (last - first + gridDim.x - 1) / gridDim.x;
  const std::uint64_t begin = first + std::uint64_t{blockIdx.x} * per;
  const std::uint64_t end = begin + per < last ? begin + per : last;
  unsigned long long sum = 0;
  for (std::uint64_t b = begin; b < end; ++b) sum += a.ws.block_hist[b * radix + threadIdx.x];
  if (sum != 0) atomicAdd(&out[std::uint64_t{j} * radix + threadIdx.x], sum);
}

/// The key blocks [first, last) of a round that a scatter launch takes (last is clamped to the
/// round's count): all of them in a sort, one section of round 0 in a multi-GPU exchange.
struct block_window {
  std::uint32_t first = 0;
  std::uint32_t last = ~std::uint32_t{0};
};

/// Digit counts of keys that someone else already partitioned by their top digit, laid out
/// digit after digit in keys[1] (what round 0's scatter would have left).
struct first_round_counts {
  std::uint64_t count[radix];
};

/**
 * Round 0 as its histogram pass would have left it for the plan: one bucket of all n keys with
 * these digit counts. Its extremes are left unequal, so that the plan partitions it (a bucket
 * of equal keys stops in round 2). The counters were zeroed before; one block of radix threads.
 */
template <typename Key, typename Value, typename Policy>
__global__ void __launch_bounds__(radix) seed_second_round_kernel(sort_args<Key, Value> a,
                                                                  first_round_counts c) {
  if (threadIdx.x == 0) {
    a.ws.buckets[0][0] = bucket{0, a.n, 0, ~std::uint64_t{0}, 0, round_shift<Key>(0)};
    a.ws.ctr->buckets[0] = 1;
  }
  a.ws.bucket_hist[0][threadIdx.x] = c.count[threadIdx.x];
}

// --- counting pass 1: histograms ----------------------------------------------------------------

/// The key blocks [first, last) a thread block of the grid takes: contiguous ranges, so that a
/// thread block mostly stays inside one bucket.
struct block_range {
  std::uint32_t first;
  std::uint32_t last;
};
__device__ __forceinline__ block_range range_of_grid_block(std::uint32_t total) {
  const std::uint32_t per = (total + gridDim.x - 1) / gridDim.x;
  const std::uint64_t first = std::uint64_t{blockIdx.x} * per;
  const std::uint64_t last = first + per < total ? first + per : total;
  return first < last ? block_range{static_cast<std::uint32_t>(first),
                                    static_cast<std::uint32_t>(last)}
                      : block_range{0, 0};
}

/**
 * Histogram of round `round`'s digit codes (Digits, at each bucket's shift) for every key block
 * (section 4.3). The keys are read in 16-byte vectors (the block's unaligned first and last few
 * keys one at a time): the order of the keys does not matter to a histogram, and a quarter of the
 * load instructions keeps the kernel at the memory's pace for 32-bit keys. Counting takes one
 * shared atomic per key while the thread block's last key block had no crowded digit; after a
 * crowded one (and for the first key block of a thread block), each thread first reduces its digits
 * in registers (a sorting network over groups of 8, then one atomic per run of equal digits), so
 * that skewed inputs do not serialize on one counter. With skew_divisor 1 (Hopper's policy for
 * pairs) no digit is crowded and every key takes one atomic. The block's histogram is stored for
 * the scatter; the bucket's histogram is accumulated in shared memory while consecutive key blocks
 * belong to the same bucket and added to device memory with one atomic per digit when the bucket
 * changes, with the bucket's smallest and largest key in even rounds (the plan looks for all-equal
 * buckets there).
 */
template <typename Key, typename Value, typename Policy, typename Digits>
__global__ void __launch_bounds__(Policy::max_counting_threads, Policy::histogram_blocks_per_sm)
    histogram_kernel(sort_args<Key, Value> a, int round) {
  const unsigned threads = blockDim.x;
  constexpr int kpt = Policy::counting.keys_per_thread;
  constexpr int group = kpt < 8 ? kpt : 8;
  static_assert(kpt % group == 0 && (group & (group - 1)) == 0);
  constexpr std::uint32_t bins = Digits::bins;
  __shared__ std::uint32_t hist[bins];
  __shared__ std::uint32_t acc[bins];
  __shared__ std::uint64_t scratch[Policy::max_counting_threads / warp_threads];

  const block_range range = range_of_grid_block(a.ws.ctr->blocks[round]);
  if (range.first == range.last) return;
  const int parity = round & 1;
  const bool extremes = parity == 0;
  unsigned shift = 0;  // the current bucket's
  const Key* src = a.keys[parity];
  for (unsigned t = threadIdx.x; t < bins; t += threads) acc[t] = 0;
  Key key_min = ~Key{0};
  Key key_max = 0;
  std::uint32_t current = ~0u;

  // Adds the accumulated histogram and extremes to bucket `b` (every thread calls it).
  auto flush = [&](std::uint32_t b) {
    for (unsigned t = threadIdx.x; t < bins; t += threads) {
      if (acc[t] != 0)
        atomicAdd(&a.ws.bucket_hist[parity][std::uint64_t{b} * bins + t],
                  static_cast<unsigned long long>(acc[t]));
      acc[t] = 0;
    }
    if (!extremes) return;
    const std::uint64_t lo = block::all_reduce(std::uint64_t{key_min}, block::op_min{}, scratch);
    const std::uint64_t hi = block::all_reduce(std::uint64_t{key_max}, block::op_max{}, scratch);
    if (threadIdx.x == 0) {
      auto* entry = &a.ws.buckets[parity][b];
      atomicMin(reinterpret_cast<unsigned long long*>(&entry->min_key), lo);
      atomicMax(reinterpret_cast<unsigned long long*>(&entry->max_key), hi);
    }
    key_min = ~Key{0};
    key_max = 0;
  };
  auto note = [&](Key key, auto with_extremes) {
    if constexpr (decltype(with_extremes)::value) {
      key_min = key < key_min ? key : key_min;
      key_max = key > key_max ? key : key_max;
    }
  };

  // Two copies of the loop: odd rounds keep no extremes, at no cost in the loop.
  auto count_blocks = [&](auto with_extremes) {
    // This thread's digits of the last key block: one held too many keys (assumed of the first
    // block, unless skew is never to be reduced).
    bool crowded = a.skew_divisor > 1;
    for (std::uint32_t b = range.first; b < range.last; ++b) {
      const key_block blk = a.ws.blocks[parity][b];
      if (blk.bucket != current) {
        if (current != ~0u) flush(current);
        current = blk.bucket;
        shift = a.ws.buckets[parity][current].shift;
      }
      // Thread t zeroes and later reads hist[t] itself: no barrier between its read of the last
      // block and this store; the barrier orders the store before everyone's atomics, and votes
      // on the last block's skew.
      for (unsigned t = threadIdx.x; t < bins; t += threads) hist[t] = 0;
      const bool reduce_first = __syncthreads_or(crowded) != 0;

      const block::vector_block<Key> span(src + blk.offset, blk.count);
      std::uint32_t digits[kpt];
      block::read_labels(
          span, digits, bins, [&](Key key) { return Digits::code_of(key, shift); },
          [&](Key key) { note(key, with_extremes); });
      if (const std::uint32_t e = span.edge(threadIdx.x); e < blk.count) {
        const Key key = span.keys[e];
        atomicAdd(&hist[Digits::code_of(key, shift)], 1u);
        note(key, with_extremes);
      }
      if (reduce_first) {
        block::add_label_runs<group>(
            digits, bins, [&](std::uint32_t d, std::uint32_t run) { atomicAdd(&hist[d], run); });
      } else {
#pragma unroll
        for (int i = 0; i < kpt; ++i)
          if (digits[i] < bins) atomicAdd(&hist[digits[i]], 1u);
      }
      __syncthreads();
      crowded = false;
      for (unsigned t = threadIdx.x; t < bins; t += threads) {
        const std::uint32_t c = hist[t];
        a.ws.block_hist[std::uint64_t{b} * bins + t] = c;
        acc[t] += c;
        crowded |= c * a.skew_divisor > blk.count;
      }
    }
  };
  if (parity == 0) count_blocks(std::true_type{});
  else count_blocks(std::false_type{});
  flush(current);
}

/// Dynamic shared memory of the joint histogram: a 16-bit counter per bin, two a word.
inline constexpr std::size_t joint_smem_bytes = joint_bins * sizeof(std::uint16_t);
/// A 16-bit counter that reaches this value passes it on to device memory (its top bit clear
/// again): between two barriers a block adds fewer than this to a counter, so that the top bit
/// absorbs whatever arrives before the subtraction and no carry reaches the neighbouring bin.
inline constexpr std::uint32_t joint_carry = 1u << 15;
/// Threads that saw two neighbouring keys with the same top two digits, in one step of the
/// joint histogram, above which the next step reduces equal bins in registers first. Uniform
/// keys leave about 0.2 such threads a step; a bin of 1/16 of the keys, about 60.
inline constexpr int joint_crowded_threads = 8;

/**
 * Round 0's histogram over the top two digits together (joint_bins bins), so that round 1 needs
 * no histogram pass: its buckets' histograms are rows of this one. Each thread block counts a
 * contiguous range of the keys into 16-bit shared counters (one atomic per key, or after a
 * crowded step one per run of equal bins of a thread's sorted groups of 8, as histogram_kernel
 * does), leaves them in joint_partials for joint_totals_kernel, and adds the keys' extremes to
 * round 0's bucket. There are no key blocks to count here: the scatter counts its own.
 */
template <typename Key, typename Value, typename Policy>
__global__ void __launch_bounds__(joint_threads, 1)
    joint_histogram_kernel(sort_args<Key, Value> a) {
  constexpr int kpt = Policy::counting.keys_per_thread;
  constexpr int group = kpt < 8 ? kpt : 8;
  static_assert(kpt % group == 0);
  static_assert(joint_threads * kpt < joint_carry, "a step could carry into the next bin");
  extern __shared__ uint4 smem[];
  std::uint32_t* counters = reinterpret_cast<std::uint32_t*>(smem);
  __shared__ std::uint64_t scratch[joint_threads / warp_threads];
  const unsigned threads = blockDim.x;
  const unsigned shift = round_shift<Key>(1);
  constexpr std::uint32_t no_key = joint_bins;

  for (unsigned w = threadIdx.x; w < joint_bins / 2; w += threads) counters[w] = 0;
  const std::uint64_t step = std::uint64_t{threads} * kpt;
  const std::uint64_t steps = (a.n + step - 1) / step;
  const std::uint64_t per = (steps + gridDim.x - 1) / gridDim.x;
  auto at_most_n = [&](std::uint64_t i) { return i < a.n ? i : a.n; };
  const std::uint64_t first = at_most_n(blockIdx.x * per * step);
  const std::uint64_t last = at_most_n(first + per * step);
  const Key* src = a.keys[0];
  Key key_min = ~Key{0};
  Key key_max = 0;
  auto bin_of = [&](Key key) { return static_cast<std::uint32_t>(key >> shift) & (no_key - 1); };
  auto add = [&](std::uint32_t bin, std::uint32_t count) {
    const unsigned half = (bin & 1u) * 16u;
    std::uint32_t* word = &counters[bin >> 1];
    const std::uint32_t old = atomicAdd(word, count << half) >> half & 0xffffu;
    if (old < joint_carry && old + count >= joint_carry) {
      atomicSub(word, joint_carry << half);
      atomicAdd(&a.ws.joint_carries[bin], static_cast<unsigned long long>(joint_carry));
    }
  };
  __syncthreads();

  bool crowded = true;  // the last step's keys: reduce equal bins first
  for (std::uint64_t at = first; at < last; at += step) {
    const block::vector_block<Key> span(
        src + at, static_cast<std::uint32_t>(last - at < step ? last - at : step));
    std::uint32_t bins[kpt];
    auto note = [&](Key key) {
      key_min = key < key_min ? key : key_min;
      key_max = key > key_max ? key : key_max;
    };
    block::read_labels(span, bins, no_key, bin_of, note);
    if (const std::uint32_t e = span.edge(threadIdx.x); e < span.count) {
      const Key key = span.keys[e];
      add(bin_of(key), 1);
      note(key);
    }
    bool repeats = false;  // two neighbouring keys of this thread share their bin
#pragma unroll
    for (int i = 1; i < kpt; ++i) repeats |= bins[i] == bins[i - 1] && bins[i] != no_key;
    if (crowded) {
      block::add_label_runs<group>(bins, no_key, add);
    } else {
#pragma unroll
      for (int i = 0; i < kpt; ++i)
        if (bins[i] != no_key) add(bins[i], 1);
    }
    // The barrier bounds what a counter gains before a carry is taken off it (joint_carry).
    crowded = __syncthreads_count(repeats) > joint_crowded_threads;
  }
  std::uint32_t* partial = a.ws.joint_partials + std::uint64_t{blockIdx.x} * (joint_bins / 2);
  for (unsigned w = threadIdx.x; w < joint_bins / 2; w += threads) partial[w] = counters[w];
  const std::uint64_t lo = block::all_reduce(std::uint64_t{key_min}, block::op_min{}, scratch);
  const std::uint64_t hi = block::all_reduce(std::uint64_t{key_max}, block::op_max{}, scratch);
  if (threadIdx.x == 0 && first < last) {
    auto* entry = &a.ws.buckets[0][0];
    atomicMin(reinterpret_cast<unsigned long long*>(&entry->min_key), lo);
    atomicMax(reinterpret_cast<unsigned long long*>(&entry->max_key), hi);
  }
}

/**
 * Sums the joint histogram blocks' counters and carries into the totals, and each row (a top
 * digit) into round 0's bucket histogram: block d of radix / 2 threads sums row d, two bins a
 * thread (one word of every block's counters).
 */
template <typename Key, typename Value, typename Policy>
__global__ void __launch_bounds__(radix / 2) joint_totals_kernel(sort_args<Key, Value> a,
                                                                  std::uint32_t blocks) {
  __shared__ std::uint64_t scratch[radix / 2 / warp_threads];
  const std::uint32_t w = blockIdx.x * (radix / 2) + threadIdx.x;
  std::uint64_t even = a.ws.joint_carries[2 * w];
  std::uint64_t odd = a.ws.joint_carries[2 * w + 1];
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const std::uint32_t v = a.ws.joint_partials[std::uint64_t{b} * (joint_bins / 2) + w];
    even += v & 0xffffu;
    odd += v >> 16;
  }
  a.ws.joint[2 * w] = even;
  a.ws.joint[2 * w + 1] = odd;
  const std::uint64_t row = block::all_reduce(even + odd, block::op_sum{}, scratch);
  if (threadIdx.x == 0) a.ws.bucket_hist[0][blockIdx.x] = row;
}

// --- counting pass 2: plan ----------------------------------------------------------------------

/**
 * One thread block of Digits::bins threads per bucket of round `round`, thread d for digit code
 * d: turns the bucket's histogram into the scatter's write cursors, and assigns the
 * sub-buckets: larger than the local threshold -> a bucket of the next round with its key
 * blocks (the next pass's block assignments, produced here on the device); otherwise -> a
 * local-sort job, neighbouring sub-buckets of fewer than merge_threshold keys merged (section
 * 4.2). A bucket whose keys are all equal is done; in an odd round it still has to move to
 * keys[0], so only even rounds stop. A sub-bucket whose key bits have all been taken is sorted:
 * in keys[0] it is finished, in keys[1] it still moves (a job, or a bucket of equal keys).
 *
 * Merging, in parallel: the tiny sub-buckets (fewer than merge_threshold keys) of a bucket are
 * grouped by floor(G / merge_threshold), G being the keys in tiny sub-buckets before them; a
 * group also ends at any larger or finished sub-bucket. A merged job thus holds fewer than twice
 * merge_threshold keys, and the jobs per bucket stay bounded (hrs_workspace.cuh).
 */
template <typename Key, typename Value, typename Policy, typename Digits>
__global__ void __launch_bounds__(Digits::bins) plan_kernel(sort_args<Key, Value> a, int round) {
  constexpr std::uint32_t bins = Digits::bins;
  const std::uint32_t kpb = a.keys_per_block;
  __shared__ std::uint64_t s_start[bins];      // sub-bucket offsets in the bucket
  __shared__ std::uint64_t s_count[bins];
  __shared__ std::uint32_t s_block_first[bins + 1];
  __shared__ std::uint32_t s_large_rank[bins];
  __shared__ std::uint32_t s_large_code[bins];  // the code of the r-th large sub-bucket
  __shared__ std::uint32_t s_large_shift[bins];  // and where its next digit starts
  __shared__ std::uint64_t s_tiny_before[bins];  // G above
  __shared__ std::uint32_t s_kind[bins];
  __shared__ std::uint32_t s_starts[bins];
  __shared__ std::int32_t s_next_boundary[bins];
  __shared__ std::uint32_t s_jobs[max_local_configs];
  __shared__ std::uint32_t s_job_base[max_local_configs];
  __shared__ std::uint32_t s_bucket_base;
  __shared__ std::uint32_t s_block_base;
  __shared__ std::uint64_t scratch64[bins / warp_threads];
  __shared__ std::int32_t scratch32[bins / warp_threads];
  __shared__ std::uint32_t scratchu[bins / warp_threads];
  enum : std::uint32_t {
    kind_empty = 0,
    kind_tiny = 1,     // below the merge threshold: merged with its tiny neighbours
    kind_job = 2,      // a local job of its own
    kind_bucket = 3,   // above the local threshold: the next round's
    kind_finished = 4  // sorted and in keys[0]: nothing to do
  };

  const int parity = round & 1;
  const int next = parity ^ 1;
  const std::uint32_t next_bins = bins_of_round(a, round + 1);
  const std::uint32_t buckets = a.ws.ctr->buckets[round];
  const std::uint32_t d = threadIdx.x;
  const std::uint64_t local_threshold = a.local_threshold;
  const std::uint64_t merge_threshold = a.merge_threshold;

  for (std::uint32_t i = blockIdx.x; i < buckets; i += gridDim.x) {
    const bucket bk = a.ws.buckets[parity][i];
    unsigned long long* hist = a.ws.bucket_hist[parity] + std::uint64_t{i} * bins;
    if (parity == 0 && bk.min_key == bk.max_key) {
      if (d == 0) a.ws.buckets[parity][i].done = 1;
      continue;
    }
    const std::uint64_t c = hist[d];
    const std::uint64_t p = block::exclusive_scan(c, block::op_sum{}, std::uint64_t{0}, scratch64);
    hist[d] = bk.offset + p;  // the scatter's cursor of sub-bucket d
    // Every code takes at least 8 bits: the last digit's sub-buckets are sorted, and in keys[0].
    if (bk.shift == 0 && next == 0) continue;

    // A sub-bucket whose bits ran out holds equal keys in sorted place.
    const bool exhausted = bk.shift < Digits::bits_of(d);
    const bool finished = exhausted && next == 0;
    // Sub-buckets larger than the local threshold: buckets of the next round.
    const bool large = c > local_threshold && !finished;
    const std::uint32_t blocks = large ? static_cast<std::uint32_t>((c + kpb - 1) / kpb) : 0;
    std::uint32_t large_total = 0;
    std::uint32_t block_total = 0;
    const std::uint32_t large_rank =
        block::exclusive_scan(large ? 1u : 0u, block::op_sum{}, 0u, scratchu, &large_total);
    const std::uint32_t block_first =
        block::exclusive_scan(blocks, block::op_sum{}, 0u, scratchu, &block_total);
    s_start[d] = p;
    s_count[d] = c;
    s_block_first[d] = block_first;
    if (d == 0) s_block_first[bins] = block_total;
    s_large_rank[d] = large_rank;
    if (large) {
      s_large_code[large_rank] = d;
      s_large_shift[large_rank] = exhausted ? 0u : bk.shift - Digits::bits_of(d);
    }
    if (d == 0) {
      std::uint32_t bucket_base = 0;
      std::uint32_t block_base = 0;
      if (large_total != 0) {
        bucket_base = atomicAdd(&a.ws.ctr->buckets[round + 1], large_total);
        block_base = atomicAdd(&a.ws.ctr->blocks[round + 1], block_total);
        if (std::uint64_t{bucket_base} + large_total > a.ws.bucket_capacity ||
            std::uint64_t{block_base} + block_total > a.ws.block_capacity) {
          report_overflow(a.ws.ctr);
          bucket_base = ~0u;
        }
      }
      s_bucket_base = bucket_base;
      s_block_base = block_base;
    }
    __syncthreads();
    const std::uint32_t bucket_base = s_bucket_base;
    const std::uint32_t block_base = s_block_base;
    if (large_total != 0 && bucket_base != ~0u) {
      if (large)
        a.ws.buckets[next][bucket_base + large_rank] =
            bucket{bk.offset + p, c, ~std::uint64_t{0}, 0, 0, s_large_shift[large_rank]};
      unsigned long long* next_hist =
          a.ws.bucket_hist[next] + std::uint64_t{bucket_base} * next_bins;
      // Round 1's histograms: rows of the joint histogram where round 0 counted it (8-bit
      // digits in both rounds), else counted by round 1's histogram pass.
      const bool rows = round == 0 && a.ws.joint != nullptr;
      for (std::uint32_t e = d; e < large_total * next_bins; e += bins)
        next_hist[e] =
            rows ? a.ws.joint[s_large_code[e / next_bins] * radix + e % next_bins] : 0;
      for (std::uint32_t e = d; e < block_total; e += bins) {
        // The sub-bucket whose blocks include e: the last code whose first block is <= e.
        std::uint32_t lo = 0;
        std::uint32_t hi = bins;  // s_block_first[hi] > e
        while (hi - lo > 1) {
          const std::uint32_t mid = (lo + hi) / 2;
          if (s_block_first[mid] <= e) lo = mid;
          else hi = mid;
        }
        const std::uint64_t k = e - s_block_first[lo];
        const std::uint64_t left = s_count[lo] - k * kpb;
        a.ws.blocks[next][block_base + e] =
            key_block{bk.offset + s_start[lo] + k * kpb,
                      static_cast<std::uint32_t>(left < kpb ? left : kpb),
                      bucket_base + s_large_rank[lo]};
      }
    }

    // Sub-buckets at or below the local threshold: local-sort jobs, tiny ones merged.
    const bool tiny = c > 0 && c < merge_threshold && !finished;
    const std::uint64_t tiny_before =
        block::exclusive_scan(tiny ? c : 0, block::op_sum{}, std::uint64_t{0}, scratch64);
    const std::int32_t prev_nonzero = block::exclusive_scan(
        c > 0 ? static_cast<std::int32_t>(d) : -1, block::op_max{}, -1, scratch32);
    s_kind[d] = c == 0      ? kind_empty
                : finished  ? kind_finished
                : large     ? kind_bucket
                : tiny      ? kind_tiny
                            : kind_job;
    s_tiny_before[d] = tiny_before;
    if (d < max_local_configs) s_jobs[d] = 0;
    __syncthreads();
    bool starts = false;
    if (c > 0 && !large && !finished) {
      if (!tiny) {
        starts = true;
      } else {
        starts = prev_nonzero < 0 || s_kind[prev_nonzero] != kind_tiny ||
                 s_tiny_before[prev_nonzero] / merge_threshold != tiny_before / merge_threshold;
      }
    }
    s_starts[d] = starts ? 1u : 0u;
    __syncthreads();
    // The next job start, bucket or finished sub-bucket after d ends d's job: a suffix scan,
    // done as a prefix scan in mirrored order (thread t takes code bins-1-t).
    {
      const std::uint32_t mirrored = bins - 1 - d;
      const std::uint32_t kind = s_kind[mirrored];
      const bool boundary =
          kind == kind_bucket || kind == kind_finished || s_starts[mirrored] != 0;
      s_next_boundary[mirrored] = block::exclusive_scan(
          boundary ? static_cast<std::int32_t>(mirrored) : static_cast<std::int32_t>(bins),
          block::op_min{}, static_cast<std::int32_t>(bins), scratch32);
    }
    __syncthreads();
    int config = 0;
    std::uint32_t job_rank = 0;
    local_job job{};
    if (starts) {
      const std::int32_t end_code = s_next_boundary[d];
      const std::uint64_t end = end_code < static_cast<std::int32_t>(bins) ? s_start[end_code]
                                                                           : bk.size;
      job = local_job{bk.offset + p, static_cast<std::uint32_t>(end - p),
                      static_cast<std::uint32_t>(next)};
      config = config_for(a, end - p);
      job_rank = atomicAdd(&s_jobs[config], 1u);
    }
    __syncthreads();
    if (d < static_cast<std::uint32_t>(a.config_count) && s_jobs[d] != 0) {
      std::uint32_t base = atomicAdd(&a.ws.ctr->jobs[d], s_jobs[d]);
      if (std::uint64_t{base} + s_jobs[d] > a.ws.job_capacity[d]) {
        report_overflow(a.ws.ctr);
        base = ~0u;
      }
      s_job_base[d] = base;
    }
    __syncthreads();
    if (starts && s_job_base[config] != ~0u) a.ws.jobs[config][s_job_base[config] + job_rank] = job;
    __syncthreads();  // the shared arrays are reused by the next bucket
  }
}

// --- counting pass 3: scatter -------------------------------------------------------------------

/// Dynamic shared memory of the scatter kernel: the key tile, and for pairs the tile's source
/// indices and the staged values.
template <typename Key, typename Value>
constexpr std::size_t scatter_smem_bytes(int block_threads, int keys_per_thread) {
  const std::size_t kpb = static_cast<std::size_t>(block_threads) * keys_per_thread;
  std::size_t bytes = (kpb * sizeof(Key) + 15) / 16 * 16;
  if (has_values<Value>)  // the values with a vector of slack (block::staged_in)
    bytes += (kpb * sizeof(std::uint16_t) + 15) / 16 * 16 + kpb * sizeof(Value) + sizeof(uint4);
  return bytes;
}

/**
 * Scatters each key block into its bucket's sub-buckets, one per digit code (section 4.4): the
 * block reserves its chunk of every sub-bucket with one atomic per (block, sub-bucket), places its
 * keys in shared memory by code (one shared atomic per key, or per warp and code when the block is
 * skewed), and writes each local sub-bucket out contiguously (write combining). Thread blocks take
 * the window's key blocks in turn (its b-th by thread block b mod grid), so that the key blocks of
 * one bucket are scattered at the same time and each sub-bucket fills from few write fronts that
 * stay in L2. The next key block's entry is read while this one is scattered. Pairs note each key's
 * source index in the tile and fetch the values, copied into shared memory while the keys are
 * partitioned, in tile order.
 *
 * The key block's histogram: where the round had a histogram pass (CountsItself false), the one
 * it stored, fetched (cp.async) while the key block before it is scattered. Rounds 0 and 1
 * after a joint histogram have none: the block counts its keys itself, and each key's place
 * among its digit's keys comes back from the same shared atomic, held as a 16-bit rank in
 * registers (the skew then decided by the thread block's last key block). Stored histograms
 * stay the rule where a pass stores them: with the ranks, 64-bit keys spill 32 bytes and
 * scatter 6% slower (H100).
 */
template <typename Key, typename Value, typename Policy, bool CountsItself, typename Digits>
__global__ void __launch_bounds__(Policy::max_counting_threads, Policy::scatter_blocks_per_sm)
    scatter_kernel(sort_args<Key, Value> a, int round, block_window window) {
  constexpr std::uint32_t bins = Digits::bins;
  const unsigned threads = blockDim.x;
  constexpr int kpt = Policy::counting.keys_per_thread;
  constexpr int per_vector = block::vector_block<Key>::per_vector;
  static_assert(kpt % per_vector == 0);
  // Positions in a key block (ranks, index_tile) take 16 bits.
  static_assert(Policy::max_counting_threads * kpt <= 1 << 16);
  const std::uint32_t kpb = a.keys_per_block;
  extern __shared__ uint4 smem[];
  Key* tile = reinterpret_cast<Key*>(smem);
  std::uint16_t* index_tile = reinterpret_cast<std::uint16_t*>(
      reinterpret_cast<std::byte*>(smem) + (kpb * sizeof(Key) + 15) / 16 * 16);
  Value* value_stage = reinterpret_cast<Value*>(
      reinterpret_cast<std::byte*>(index_tile) + (kpb * sizeof(std::uint16_t) + 15) / 16 * 16);
  // Each code's keys in the key block, then (scanned) the first tile position of its keys.
  __shared__ std::uint32_t s_local[bins];
  __shared__ std::uint32_t s_fill[bins];  // stored histograms: keys placed so far per code
  __shared__ std::uint64_t s_delta[bins];  // destination index - tile position
  __shared__ std::uint32_t s_fetched[CountsItself ? 1 : 2][bins];  // this and the next block's
  __shared__ std::uint32_t scratch[Policy::max_counting_threads / warp_threads];

  const std::uint32_t total =
      a.ws.ctr->blocks[round] < window.last ? a.ws.ctr->blocks[round] : window.last;
  if (std::uint64_t{window.first} + blockIdx.x >= total) return;
  const int parity = round & 1;
  const int next = parity ^ 1;
  const Key* src = a.keys[parity];
  Key* dst = a.keys[next];
  if constexpr (CountsItself)
    for (unsigned t = threadIdx.x; t < bins; t += threads) s_local[t] = 0;

  // A key block's stored histogram is fetched while the key block before it is scattered.
  auto fetch_histogram = [&](std::uint32_t b, int buffer) {
    if constexpr (!CountsItself) {
      for (unsigned t = threadIdx.x; t < bins; t += threads)
        __pipeline_memcpy_async(&s_fetched[buffer][t],
                                &a.ws.block_hist[std::uint64_t{b} * bins + t],
                                sizeof(std::uint32_t));
    }
    __pipeline_commit();
  };
  const std::uint32_t first_block = window.first + blockIdx.x;
  key_block upcoming = a.ws.blocks[parity][first_block];
  bool upcoming_done = a.ws.buckets[parity][upcoming.bucket].done != 0;
  unsigned upcoming_shift = a.ws.buckets[parity][upcoming.bucket].shift;
  fetch_histogram(first_block, 0);
  int buffer = 0;
  // Counting itself: the last key block had a digit of more than 1/skew_divisor of its keys,
  // so this one ranks per warp and digit (the first one too, unless skew_divisor is 1).
  bool skewed = a.skew_divisor > 1;
  for (std::uint32_t b = first_block; b < total; b += gridDim.x, buffer ^= 1) {
    const key_block blk = upcoming;
    const bool done = upcoming_done;  // all of the bucket's keys are equal and in place
    const unsigned shift = upcoming_shift;
    const bool more = b + gridDim.x < total;
    if (more) {
      upcoming = a.ws.blocks[parity][b + gridDim.x];
      fetch_histogram(b + gridDim.x, buffer ^ 1);
    } else {
      __pipeline_commit();  // an empty group: the wait below always leaves the newest one
    }
    if (done) {
      if (more) {
        upcoming_done = a.ws.buckets[parity][upcoming.bucket].done != 0;
        upcoming_shift = a.ws.buckets[parity][upcoming.bucket].shift;
      }
      __pipeline_wait_prior(1);  // its histogram's buffer takes a later key block's
      continue;
    }
    // The keys first: their loads are in flight while the block reserves its chunks. Item i
    // of a thread is element i % per_vector of its (i / per_vector)-th vector; its head or
    // tail key, if any, comes after them.
    const block::vector_block<Key> span(src + blk.offset, blk.count);
    auto index_of = [&](int i) {
      const std::uint32_t v = static_cast<std::uint32_t>(i / per_vector) * threads + threadIdx.x;
      return v < span.vectors ? span.index(v, i % per_vector) : blk.count;
    };
    Key keys[kpt];
#pragma unroll
    for (int i = 0; i < kpt / per_vector; ++i) {
      const std::uint32_t v = static_cast<std::uint32_t>(i) * threads + threadIdx.x;
      Key vk[per_vector] = {};
      if (v < span.vectors) span.unpack(span.vector(v), vk);
#pragma unroll
      for (int e = 0; e < per_vector; ++e) keys[i * per_vector + e] = vk[e];
    }
    const std::uint32_t edge = span.edge(threadIdx.x);
    const Key edge_key = edge < blk.count ? span.keys[edge] : Key{0};
    __pipeline_wait_prior(1);  // this key block's histogram, not the next one's
    // The last block's write-out has read the tile, s_delta and the stage (and zeroed s_local),
    // and every thread's part of the histogram is in.
    __syncthreads();
    // The next key block's entry has arrived by now: its flag has the rest of this one to come.
    if (more) {
      upcoming_done = a.ws.buckets[parity][upcoming.bucket].done != 0;
      upcoming_shift = a.ws.buckets[parity][upcoming.bucket].shift;
    }
    const Value* block_values = nullptr;  // pairs: in value_stage, once the copy below is in
    if constexpr (has_values<Value>) {
      // Copied asynchronously: the values are needed only by the write-out.
      block::copy_to_shared(value_stage, a.values[parity] + blk.offset, blk.count);
      __pipeline_commit();
      block_values = block::staged_in(value_stage, a.values[parity] + blk.offset);
    }

    // Counting itself: key i's place among the key block's keys of its digit, two 16-bit
    // ranks a register.
    static_assert(kpt % 2 == 0);
    std::uint32_t ranks[CountsItself ? kpt / 2 : 1] = {};
    std::uint32_t edge_rank = 0;
    auto set_rank = [&](int i, std::uint32_t r) { ranks[i / 2] |= r << (i % 2 * 16); };
    auto rank_of = [&](int i) { return ranks[i / 2] >> (i % 2 * 16) & 0xffffu; };
    // A key's place among its digit's keys: ranked now (counting itself) or once the counts
    // are scanned (stored histogram), one shared atomic per key or per warp and digit.
    std::uint32_t* const rank_counters = CountsItself ? s_local : s_fill;
    auto rank_keys = [&](auto with_rank) {
      if (edge < blk.count) {
        const std::uint32_t r = atomicAdd(&rank_counters[Digits::code_of(edge_key, shift)], 1u);
        with_rank(-1, r);
      }
      if (!skewed) {
#pragma unroll
        for (int i = 0; i < kpt; ++i)
          if (index_of(i) < blk.count)
            with_rank(i, atomicAdd(&rank_counters[Digits::code_of(keys[i], shift)], 1u));
      } else {
#pragma unroll
        for (int i = 0; i < kpt; ++i) {
          const bool valid = index_of(i) < blk.count;
          const std::uint32_t d = valid ? Digits::code_of(keys[i], shift) : bins;
          // The match instruction: agreeing through shared words, the lanes' atomics on the
          // crowded digit's word waited for each other.
          const std::uint32_t matched = __match_any_sync(block::full_mask, d);
          const std::uint32_t peers = valid ? matched : 0u;
          const int leader = valid ? __ffs(peers) - 1 : 0;
          std::uint32_t first = 0;
          if (valid && static_cast<int>(block::lane_id()) == leader)
            first = atomicAdd(&rank_counters[d], static_cast<std::uint32_t>(__popc(peers)));
          first = __shfl_sync(block::full_mask, first, leader);
          if (valid) with_rank(i, first + __popc(peers & block::lanes_below()));
        }
      }
    };
    if constexpr (CountsItself) {
      rank_keys([&](int i, std::uint32_t r) {
        if (i < 0) edge_rank = r;
        else set_rank(i, r);
      });
      __syncthreads();
      // Counts -> first tile positions; the same barrier votes on the skew, for the next block.
      block::exclusive_sum(s_local, bins, scratch, blk.count / a.skew_divisor, &skewed);
    } else {
      bool crowded = false;  // a digit holds more than 1/skew_divisor of the block's keys
      for (unsigned t = threadIdx.x; t < bins; t += threads) {
        const std::uint32_t c = s_fetched[buffer][t];
        s_local[t] = c;
        s_fill[t] = 0;
        crowded |= c * a.skew_divisor > blk.count;
      }
      // One barrier both publishes the counters and votes on the skew.
      skewed = __syncthreads_or(crowded) != 0;
      block::exclusive_sum(s_local, bins, scratch);
    }
    unsigned long long* cursors = a.ws.bucket_hist[parity] + std::uint64_t{blk.bucket} * bins;
    for (unsigned t = threadIdx.x; t < bins; t += threads) {
      const std::uint32_t c = (t + 1 < bins ? s_local[t + 1] : blk.count) - s_local[t];
      if (c != 0)
        s_delta[t] = atomicAdd(&cursors[t], static_cast<unsigned long long>(c)) - s_local[t];
    }

    auto place = [&](int i, std::uint32_t rank) {
      const Key key = i < 0 ? edge_key : keys[i];
      const std::uint32_t position = s_local[Digits::code_of(key, shift)] + rank;
      tile[position] = key;
      if constexpr (has_values<Value>)
        index_tile[position] = static_cast<std::uint16_t>(i < 0 ? edge : index_of(i));
    };
    if constexpr (CountsItself) {
      if (edge < blk.count) place(-1, edge_rank);
#pragma unroll
      for (int i = 0; i < kpt; ++i)
        if (index_of(i) < blk.count) place(i, rank_of(i));
    } else {
      rank_keys(place);
    }
    if constexpr (has_values<Value>) __pipeline_wait_prior(0);  // the staged values
    __syncthreads();
    if constexpr (CountsItself)
      for (unsigned t = threadIdx.x; t < bins; t += threads) s_local[t] = 0;
    for (std::uint32_t i = threadIdx.x; i < blk.count; i += threads) {
      const Key key = tile[i];
      const std::uint64_t to = s_delta[Digits::code_of(key, shift)] + i;
      // Unsigned address arithmetic: round 0's cursors may reach another allocation (another
      // GPU's, through unified addressing) as an index from dst modulo 2^64.
      *reinterpret_cast<Key*>(reinterpret_cast<std::uintptr_t>(dst) + to * sizeof(Key)) = key;
      if constexpr (has_values<Value>) a.values[next][to] = block_values[index_tile[i]];
    }
  }
}

// --- local sort ---------------------------------------------------------------------------------

/// Dynamic shared memory of a local sort of block_threads x keys_per_thread keys: per-warp digit
/// counters and match words, the key tile, the next job's keys (copied in while this job
/// sorts), and for pairs the index tile and the staged values.
template <typename Key, typename Value>
constexpr std::size_t local_smem_bytes(int block_threads, int keys_per_thread) {
  const std::size_t capacity = static_cast<std::size_t>(block_threads) * keys_per_thread;
  const std::size_t per_warp = static_cast<std::size_t>(block_threads / warp_threads) * radix * 4;
  const std::size_t indices = (capacity * sizeof(std::uint16_t) + 15) / 16 * 16;
  // counters, words, 2 tiles (the second with a vector of slack: it mirrors the alignment of
  // the keys in device memory)
  std::size_t bytes = 2 * per_warp + 2 * capacity * sizeof(Key) + sizeof(uint4);
  if (has_values<Value>) bytes += indices + capacity * sizeof(Value) + sizeof(uint4);
  return bytes;
}

/**
 * Sorts each job of local configuration `config` in one thread block, in shared memory, in one
 * read and one write (section 4.2). Only the bits in which the job's keys differ count (found by
 * OR-ing every key with the first). First an unstable counting pass on the top a.group_bits
 * of those bits groups the keys; where every group holds at most a.rank_group_max keys
 * (uniform-like keys: about 16 per group for 4096 keys and 8 bits), each key's place in its
 * group is the number of smaller keys there (equal keys by position), and the job is done in
 * that one pass. Otherwise an LSD radix sort whose 8-bit windows cover exactly the differing
 * bits, each window a stable pass ranked per warp (shared match words or the match instruction,
 * a.local_match). Pairs carry a 16-bit index and fetch their values from shared memory at the
 * end. The block size is the configuration's (a launch parameter); KeysPerThread is compiled.
 * The result goes to keys[0].
 *
 * A block holds one job at a time, so while a job sorts, the block's next job is copied into
 * shared memory asynchronously (cp.async), and the grouping pass writes each key straight to
 * its final place: groups are small, so a warp's writes stay nearly contiguous (H100, 2^28
 * uniform u32 keys: local sorts 2.17 ms, 2.22 with a second tile and the copies in turn).
 * The kernel is bound by instructions and barriers, not memory: the block-wide OR of the keys
 * and the check that no group is too large take one barrier each (a shared atomic per warp, a
 * barrier vote), and each job clears its counters behind its own last barrier.
 */
template <typename Key, typename Value, typename Policy, int KeysPerThread>
__global__ void __launch_bounds__(Policy::max_local_threads,
                                  KeysPerThread <= Policy::small_keys_per_thread ? 2 : 1)
    local_sort_kernel(sort_args<Key, Value> a, int config) {
  constexpr int kpt = KeysPerThread;
  constexpr bool pairs = has_values<Value>;
  extern __shared__ uint4 smem[];
  const unsigned warps = block::warp_count();
  const unsigned warp = block::warp_id();
  const unsigned lane = block::lane_id();
  const std::uint32_t capacity = blockDim.x * kpt;
  std::uint32_t* counts = reinterpret_cast<std::uint32_t*>(smem);  // [warps][radix]
  std::uint32_t* match_words = counts + warps * radix;               // [warps][radix]
  Key* tile = reinterpret_cast<Key*>(match_words + warps * radix);
  // The block's next job, copied in while this one sorts (block::copy_to_shared). Where its
  // first key lands is block::staged_in's formula, spelled out: calling it made ptxas spill 28
  // bytes instead of 4 in the 32-bit keys' kernel, and their local sorts 13% slower (H100).
  Key* incoming = tile + capacity;
  auto staged = [&](const Key* from) {
    return incoming + reinterpret_cast<std::uintptr_t>(from) % sizeof(uint4) / sizeof(Key);
  };
  const std::size_t index_bytes = (capacity * sizeof(std::uint16_t) + 15) / 16 * 16;
  std::uint16_t* index_tile =
      reinterpret_cast<std::uint16_t*>(incoming + capacity + block::vector_block<Key>::per_vector);
  Value* value_stage = reinterpret_cast<Value*>(
      reinterpret_cast<std::byte*>(index_tile) + index_bytes);
  __shared__ Key s_differ;  // all_or's word
  __shared__ std::uint32_t totals[radix];
  __shared__ std::uint32_t scratch32[Policy::max_local_threads / warp_threads];

  const std::uint32_t jobs = a.ws.ctr->jobs[config];
  const local_job* job_list = a.ws.jobs[config];
  const match_mode match = a.local_match;
  // Item i of a thread is key base + 32 i: warp w holds keys [w * 32 kpt, (w + 1) * 32 kpt),
  // so visiting items in order, lanes in order, is visiting keys in order (stability).
  const std::uint32_t base = warp * warp_threads * kpt + lane;
  std::uint32_t* warp_counts = counts + warp * radix;
  std::uint32_t* warp_words = match_words + warp * radix;
  // The grouping pass's counters: as many as the counters and match words hold, at most
  // a.group_bits bits' worth. Recomputed where used (a few instructions), not held across the
  // job in registers, of which the kernel has none to spare.
  auto group_bits = [&] {
    return min(a.group_bits, 31u - __clz(static_cast<int>(2 * warps * radix - 1)));
  };
  std::uint32_t* group_first = counts;  // [groups + 1]: counts, then first positions
  // A job leaves the counters, the match words and all_or's word zero at its end, after its
  // last barrier, so that the next job starts on them at once.
  auto clear_counters = [&] {
    const std::uint32_t dirty = max((1u << group_bits()) + 1, warps * radix);
    for (unsigned e = threadIdx.x; e < dirty; e += blockDim.x) counts[e] = 0;
    if (threadIdx.x == 0) s_differ = 0;
  };
  for (unsigned e = threadIdx.x; e < 2 * warps * radix; e += blockDim.x) counts[e] = 0;
  if (threadIdx.x == 0) s_differ = 0;

  // Waiting for every copy group waits for exactly the job about to sort: one group per job.
  auto copy_in = [&](std::uint32_t j) {
    if (j >= jobs) return;
    const local_job next = job_list[j];
    block::copy_to_shared(incoming, a.keys[next.buffer] + next.offset, next.size);
    __pipeline_commit();
  };
  copy_in(blockIdx.x);

  for (std::uint32_t j = blockIdx.x; j < jobs; j += gridDim.x) {
    const local_job job = job_list[j];
    Key* dst = a.keys[0] + job.offset;
    Key keys[kpt];
    std::uint32_t index[kpt];  // pairs: where the key's value waits in value_stage
    std::uint32_t ranks[kpt];  // a key's place among its digit's (or its group's) keys
    __pipeline_wait_prior(0);
    __syncthreads();
    const Key* job_keys = staged(a.keys[job.buffer] + job.offset);
    const Key first = job_keys[0];
    Key differ = 0;
#pragma unroll
    for (int i = 0; i < kpt; ++i) {
      const std::uint32_t idx = base + static_cast<std::uint32_t>(i) * warp_threads;
      index[i] = idx;
      if (idx < job.size) {
        keys[i] = job_keys[idx];
        differ |= keys[i] ^ first;
      } else {
        keys[i] = ~Key{0};  // padding sorts after every key and is never written
      }
    }
    // Its barrier also tells every thread that all have their keys: the buffer takes the next
    // job.
    differ = block::all_or(differ, &s_differ);
    copy_in(j + gridDim.x);
    if constexpr (pairs) {
      // Copied asynchronously (waited for before the first barrier that precedes a read): the
      // values are needed only by the last write.
      block::copy_to_shared(value_stage, a.values[job.buffer] + job.offset, job.size);
      __pipeline_commit();
    }
    // Keys that are all equal and already in keys[0] need no write.
    bool write_keys = differ != 0 || job.buffer != 0;

    if (differ != 0) {
      // Group by the top differing bits (unstable: a shared atomic per key gives its place in
      // its group), counters in the space of the LSD counters and match words.
      constexpr unsigned key_bits = 8 * sizeof(Key);
      const unsigned top =
          key_bits - 1 -
          static_cast<unsigned>(sizeof(Key) == 8 ? __clzll(static_cast<long long>(differ))
                                                 : __clz(static_cast<int>(differ)));
      const unsigned bits = group_bits();
      const std::uint32_t groups = 1u << bits;
      const unsigned group_shift = top + 1 >= bits ? top + 1 - bits : 0;
      auto group_of = [&](Key key) {
        return static_cast<std::uint32_t>(key >> group_shift) & (groups - 1);
      };
#pragma unroll
      for (int i = 0; i < kpt; ++i) {
        const std::uint32_t idx = base + static_cast<std::uint32_t>(i) * warp_threads;
        if (idx < job.size) ranks[i] = atomicAdd(&group_first[group_of(keys[i])], 1u);
      }
      __syncthreads();
      // The scan's last barrier also votes on whether a group holds more than rank_group_max
      // keys (a compare per counter, not per key); then the counters are discarded.
      bool crowded = false;
      block::exclusive_sum(group_first, groups + 1, scratch32, a.rank_group_max, &crowded);
      if (!crowded) {  // group_first[groups] = job.size
#pragma unroll
        for (int i = 0; i < kpt; ++i) {
          const std::uint32_t idx = base + static_cast<std::uint32_t>(i) * warp_threads;
          if (idx < job.size) {
            const std::uint32_t pos = group_first[group_of(keys[i])] + ranks[i];
            tile[pos] = keys[i];
            if constexpr (pairs) index_tile[pos] = static_cast<std::uint16_t>(index[i]);
          }
        }
        if constexpr (pairs) __pipeline_wait_prior(0);  // the staged values
        __syncthreads();
        // A key's place in its group: the group's keys smaller than it, and equal ones before it.
        for (std::uint32_t p = threadIdx.x; p < job.size; p += blockDim.x) {
          const Key key = tile[p];
          const std::uint32_t g = group_of(key);
          const std::uint32_t first_in_group = group_first[g];
          const std::uint32_t end_of_group = group_first[g + 1];
          // The kernel's hottest loop, over one to three keys mostly: unrolled (by 4, as the
          // compiler would), its remainder's dispatch cost more than the comparisons.
          std::uint32_t rank = 0;
          if constexpr (sizeof(Key) == 4) {
            // (key, position) as one 64-bit word: one wide comparison (two instructions) per
            // group member instead of three and a select.
            const std::uint64_t mine = std::uint64_t{key} << 32 | p;
#pragma unroll 1
            for (std::uint32_t j = first_in_group; j < end_of_group; ++j)
              rank += (std::uint64_t{tile[j]} << 32 | j) < mine ? 1u : 0u;
          } else if (group_shift <= 32) {
            // The keys of a group agree in every bit from group_shift up, so their low words
            // order them: the 32-bit keys' comparison, on half the shared-memory loads. Keys
            // that took three counting rounds or more always get here (AND-ed keys).
            const auto* low_words = reinterpret_cast<const std::uint32_t*>(tile);
            const std::uint64_t mine = std::uint64_t{static_cast<std::uint32_t>(key)} << 32 | p;
#pragma unroll 1
            for (std::uint32_t j = first_in_group; j < end_of_group; ++j)
              rank += (std::uint64_t{low_words[2 * j]} << 32 | j) < mine ? 1u : 0u;
          } else {
#pragma unroll 1
            for (std::uint32_t j = first_in_group; j < end_of_group; ++j) {
              const Key other = tile[j];
              rank += (other < key || (other == key && j < p)) ? 1u : 0u;
            }
          }
          dst[first_in_group + rank] = key;
          if constexpr (pairs)
            a.values[0][job.offset + first_in_group + rank] =
                block::staged_in(value_stage, a.values[job.buffer] + job.offset)[index_tile[p]];
        }
        write_keys = false;  // and no LSD pass either
        differ = 0;
      } else {
        // Skewed: the LSD passes below; their match words must be zero again.
        for (unsigned e = lane; e < radix; e += warp_threads) warp_words[e] = 0;
        if constexpr (pairs) __pipeline_wait_prior(0);  // the staged values
        __syncthreads();
      }
    } else if constexpr (pairs) {
      __pipeline_wait_prior(0);
      __syncthreads();  // equal keys: the staged values, read by other threads, are complete
    }

    while (differ != 0) {  // one stable pass per 8-bit window, lowest first
      const unsigned shift = static_cast<unsigned>(__ffsll(static_cast<long long>(differ)) - 1);
      // Only this warp touches its counters until the barrier after the ranking.
      for (unsigned e = lane; e < radix; e += warp_threads) warp_counts[e] = 0;
      __syncwarp();
#pragma unroll
      for (int i = 0; i < kpt; ++i) {
        const std::uint32_t d = block::digit_of(keys[i], shift);
        std::uint32_t peers;
        if (match == match_mode::match_any) {
          peers = __match_any_sync(block::full_mask, d);
        } else {
          atomicOr(&warp_words[d], 1u << lane);
          __syncwarp();
          peers = warp_words[d];
        }
        const std::uint32_t before = warp_counts[d];
        __syncwarp();
        ranks[i] = before + __popc(peers & block::lanes_below());
        if (lane == 31u - __clz(peers)) {
          warp_counts[d] = before + __popc(peers);
          if (match == match_mode::atomic_or) warp_words[d] = 0;
        }
        __syncwarp();
      }
      __syncthreads();
      // Digit-major offsets: all keys of smaller digits, then this digit's keys in earlier warps.
      for (unsigned dd = threadIdx.x; dd < radix; dd += blockDim.x) {
        std::uint32_t running = 0;
        for (unsigned w = 0; w < warps; ++w) {
          const std::uint32_t c = counts[w * radix + dd];
          counts[w * radix + dd] = running;
          running += c;
        }
        totals[dd] = running;
      }
      __syncthreads();
      block::exclusive_sum_radix(totals, scratch32);
      for (unsigned dd = threadIdx.x; dd < radix; dd += blockDim.x) {
        const std::uint32_t t = totals[dd];
        for (unsigned w = 0; w < warps; ++w) counts[w * radix + dd] += t;
      }
      __syncthreads();
#pragma unroll
      for (int i = 0; i < kpt; ++i) {
        const std::uint32_t pos = warp_counts[block::digit_of(keys[i], shift)] + ranks[i];
        tile[pos] = keys[i];
        if constexpr (pairs) index_tile[pos] = static_cast<std::uint16_t>(index[i]);
      }
      __syncthreads();
#pragma unroll
      for (int i = 0; i < kpt; ++i) {
        const std::uint32_t idx = base + static_cast<std::uint32_t>(i) * warp_threads;
        keys[i] = tile[idx];
        if constexpr (pairs) index[i] = index_tile[idx];
      }
      const Key window = static_cast<Key>(radix - 1) << shift;
      differ &= ~window;
      __syncthreads();  // the tile and the counters are rewritten by the next pass
    }
    if (write_keys) {
#pragma unroll
      for (int i = 0; i < kpt; ++i) {
        const std::uint32_t idx = base + static_cast<std::uint32_t>(i) * warp_threads;
        if (idx < job.size) {
          dst[idx] = keys[i];
          if constexpr (pairs)
            a.values[0][job.offset + idx] =
                block::staged_in(value_stage, a.values[job.buffer] + job.offset)[index[i]];
        }
      }
    }
    __syncthreads();  // the tiles, value_stage and the counters are reused by the next job
    clear_counters();
  }
}

}  // namespace gpusort::gpu::hrs
