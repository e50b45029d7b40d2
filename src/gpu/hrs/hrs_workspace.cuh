// Bookkeeping of the hybrid radix sort in device memory (the paper's section 4.5): buckets that
// counting passes partition, key blocks assigned to them, per-bucket and per-block histograms,
// local-sort jobs and counters, with capacities bounded by the analytical model so that the
// workspace size is known before the sort (as CUB's temp-storage query).
#pragma once

#include <cstdint>

#include "gpu/hrs/hrs_tuning.cuh"

namespace gpusort::gpu::hrs {

/// Counting passes at most: one per 8-bit digit of a 64-bit key.
inline constexpr int max_rounds = 8;

/// A bucket of more keys than the local threshold: the next counting pass partitions it.
struct bucket {
  std::uint64_t offset = 0;   ///< first key (the same offset in both buffers)
  std::uint64_t size = 0;     ///< keys
  std::uint64_t min_key = 0;  ///< smallest and largest key, gathered by the histogram pass
  std::uint64_t max_key = 0;
  std::uint32_t done = 0;     ///< set by the plan when every key is equal: already sorted
  /// The bit where the bucket's next digit starts: buckets of one round differ where a zero
  /// digit took 16 bits (zero_extended_digits).
  std::uint32_t shift = 0;
};

/// A key block: up to keys_per_block keys of one bucket (the paper's block assignment).
struct key_block {
  std::uint64_t offset = 0;  ///< first key
  std::uint32_t count = 0;
  std::uint32_t bucket = 0;  ///< index in the round's bucket list
};

/// A bucket (or merged neighbouring sub-buckets) that one thread block sorts locally.
struct local_job {
  std::uint64_t offset = 0;
  std::uint32_t size = 0;
  std::uint32_t buffer = 0;  ///< which of the two buffers holds the keys now
};

/// Counters the kernels allocate list entries with (atomics), zeroed before each sort.
struct counters {
  std::uint32_t buckets[max_rounds + 1];  ///< buckets of round r
  std::uint32_t blocks[max_rounds + 1];   ///< key blocks of round r
  std::uint32_t jobs[max_local_configs];  ///< local-sort jobs per configuration
  std::uint32_t overflow;                 ///< non-zero if a bound of the model was exceeded
};

/// Where each list lives in the workspace, and its capacity.
struct workspace_layout {
  std::uint64_t bucket_capacity = 0;  ///< per round
  std::uint64_t block_capacity = 0;   ///< per round
  std::uint64_t job_capacity[max_local_configs] = {};
  std::uint64_t counters_offset = 0;
  std::uint64_t buckets_offset[2] = {};      ///< bucket lists, by round parity
  std::uint64_t bucket_hist_offset[2] = {};  ///< bins u64 counts (then cursors) per bucket
  std::uint64_t blocks_offset[2] = {};       ///< key-block lists, by round parity
  std::uint64_t block_hist_offset = 0;       ///< bins u32 counts per key block
  std::uint64_t jobs_offset[max_local_configs] = {};
  /// Round 0 counts the joint histogram of the top two digits (n >= joint_min_keys).
  bool joint = false;
  std::uint64_t joint_partials_offset = 0;  ///< each block's 16-bit counters, two a word
  std::uint64_t joint_carries_offset = 0;   ///< joint_bins u64: what the 16-bit counters passed on
  std::uint64_t joint_offset = 0;           ///< joint_bins u64: the totals
  /// Digit codes of the widest round: radix, or extended_bins where a zero digit extends.
  std::uint32_t bins = radix;
  std::uint64_t total_bytes = 0;
};

/// What the layout depends on besides the key count.
struct layout_params {
  std::uint32_t key_bytes = 8;
  std::uint32_t keys_per_block = 0;
  std::uint32_t local_threshold = 0;
  std::uint32_t merge_threshold = 0;
  int config_count = 0;
  std::uint32_t config_capacity[max_local_configs] = {};
  std::uint64_t joint_min_keys = ~std::uint64_t{0};
  /// The first round whose zero digit takes 16 bits (key_bytes or more: none).
  int extend_from_round = max_rounds;
};

/**
 * The workspace of a sort of `n` keys (host arithmetic). Bounds, from the paper's rules R1-R4
 * with t = local threshold, m = merge threshold, D = digits per key:
 * - buckets per round <= n / (t + 1): each holds more than t keys and they are disjoint;
 * - key blocks per round <= n / keys_per_block + buckets (one partial block per bucket);
 * - local jobs <= 3n/m + 3D * buckets + 2 over the whole sort: a parent bucket emits one job
 *   per sub-bucket of at least m keys, one merged job per m keys of the smaller ones, and one
 *   more per sub-bucket that interrupts a merge, per parent, and for the one run of codes
 *   whose bits ran out in place (zero_extended_digits); configuration c > 0 takes only
 *   jobs larger than configuration c-1's capacity, at most n / (capacity + 1) of them;
 * - from joint_min_keys keys on, round 0's joint histogram: max_joint_blocks blocks' 16-bit
 *   counters (20 MiB) and two u64 arrays of joint_bins (1 MiB), whatever n.
 */
constexpr workspace_layout make_layout(std::uint64_t n, const layout_params& p) {
  constexpr std::uint64_t align = 256;
  auto round_up = [](std::uint64_t v) { return (v + align - 1) / align * align; };
  workspace_layout l;
  const std::uint64_t digits = p.key_bytes;
  l.bucket_capacity = n / (std::uint64_t{p.local_threshold} + 1) + 1;
  l.block_capacity = n / p.keys_per_block + l.bucket_capacity + 1;
  std::uint64_t jobs = 3 * (n / p.merge_threshold) + 3 * digits * l.bucket_capacity + 2;
  if (jobs > n + 1) jobs = n + 1;
  for (int c = 0; c < p.config_count; ++c) {
    std::uint64_t cap = jobs;
    if (c > 0) {
      const std::uint64_t bigger = n / (std::uint64_t{p.config_capacity[c - 1]} + 1) + 1;
      if (bigger < cap) cap = bigger;
    }
    l.job_capacity[c] = cap;
  }
  l.bins = p.extend_from_round < static_cast<int>(digits) ? extended_bins : radix;
  std::uint64_t at = 0;
  l.counters_offset = at;
  at += round_up(sizeof(counters));
  for (int parity = 0; parity < 2; ++parity) {
    l.buckets_offset[parity] = at;
    at += round_up(l.bucket_capacity * sizeof(bucket));
    l.bucket_hist_offset[parity] = at;
    at += round_up(l.bucket_capacity * l.bins * sizeof(std::uint64_t));
    l.blocks_offset[parity] = at;
    at += round_up(l.block_capacity * sizeof(key_block));
  }
  l.block_hist_offset = at;
  at += round_up(l.block_capacity * l.bins * sizeof(std::uint32_t));
  for (int c = 0; c < p.config_count; ++c) {
    l.jobs_offset[c] = at;
    at += round_up(l.job_capacity[c] * sizeof(local_job));
  }
  l.joint = n >= p.joint_min_keys;
  if (l.joint) {
    l.joint_partials_offset = at;
    at += round_up(std::uint64_t{max_joint_blocks} * joint_bins * sizeof(std::uint16_t));
    l.joint_carries_offset = at;
    at += round_up(std::uint64_t{joint_bins} * sizeof(std::uint64_t));
    l.joint_offset = at;
    at += round_up(std::uint64_t{joint_bins} * sizeof(std::uint64_t));
  }
  l.total_bytes = at;
  return l;
}

/// The workspace as the kernels see it (passed by value).
struct workspace_view {
  counters* ctr = nullptr;
  bucket* buckets[2] = {};
  unsigned long long* bucket_hist[2] = {};
  key_block* blocks[2] = {};
  std::uint32_t* block_hist = nullptr;
  local_job* jobs[max_local_configs] = {};
  std::uint32_t job_capacity[max_local_configs] = {};
  std::uint32_t bucket_capacity = 0;
  std::uint32_t block_capacity = 0;
  std::uint32_t* joint_partials = nullptr;        ///< null where round 0 counts one digit
  unsigned long long* joint_carries = nullptr;
  unsigned long long* joint = nullptr;
};

/// Everything a kernel needs to know about one sort (passed by value).
template <typename Key, typename Value>
struct sort_args {
  Key* keys[2] = {};      ///< [0] holds the input and, at the end, the sorted keys
  Value* values[2] = {};  ///< null for key-only sorts
  std::uint64_t n = 0;
  std::uint32_t keys_per_block = 0;  ///< counting threads x the compiled keys per thread
  std::uint32_t local_threshold = 0;
  std::uint32_t merge_threshold = 0;
  std::uint32_t skew_divisor = 0;
  std::uint32_t rank_group_max = 0;  ///< local sort: largest group ranked by counting
  std::uint32_t group_bits = 0;      ///< local sort: bits of the grouping pass
  /// Rounds from this one on count zero_extended_digits (the key's digits or more: none).
  int extend_from_round = max_rounds;
  match_mode local_match = match_mode::atomic_or;
  int config_count = 0;
  std::uint32_t config_capacity[max_local_configs] = {};
  workspace_view ws;
};

/// Placeholder value type of key-only sorts.
struct no_value {};

}  // namespace gpusort::gpu::hrs
