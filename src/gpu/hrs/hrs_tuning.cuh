// Tuning of the hybrid radix sort (HRS): one policy per key/value size and GPU generation, chosen
// per compute capability through a chain of policies (newest first, as CUB's ChainedPolicy), and
// the run-time thresholds that steer it. Policies are plain structs printed by describe().
#pragma once

#include <cstdint>
#include <ostream>
#include <type_traits>

namespace gpusort::gpu::hrs {

/// Counting-sort passes take 8-bit digits (the paper's section 4.4 trade-off between passes and
/// the write efficiency of the scatter).
inline constexpr int radix_bits = 8;
inline constexpr int radix = 1 << radix_bits;
inline constexpr int warp_threads = 32;
/// Digit codes of a counting pass whose zero digit takes the next 8 bits as well (511 used):
/// see zero_extended_digits in hrs_block.cuh.
inline constexpr int extended_bins = 2 * radix;

/// Launch shape of the counting-sort kernels (histogram and scatter): each key block of a
/// bucket holds block_threads * keys_per_thread keys (the paper's KPB). keys_per_thread is
/// compiled; block_threads is a launch parameter (at most the policy's max_counting_threads).
struct counting_policy {
  int block_threads = 512;
  int keys_per_thread = 16;

  [[nodiscard]] constexpr int keys_per_block() const { return block_threads * keys_per_thread; }
  friend constexpr bool operator==(const counting_policy&, const counting_policy&) = default;
  friend std::ostream& operator<<(std::ostream& os, const counting_policy& p) {
    return os << p.block_threads << "x" << p.keys_per_thread;
  }
};

/// One local-sort configuration (section 4.2): a bucket of up to block_threads *
/// keys_per_thread keys is sorted by one thread block in shared memory. keys_per_thread picks
/// one of the two compiled local-sort kernels; block_threads is a launch parameter, so that
/// several configurations share one kernel.
struct local_config {
  int block_threads = 256;
  int keys_per_thread = 9;

  [[nodiscard]] constexpr std::uint32_t capacity() const {
    return static_cast<std::uint32_t>(block_threads * keys_per_thread);
  }
  friend constexpr bool operator==(const local_config&, const local_config&) = default;
  friend std::ostream& operator<<(std::ostream& os, const local_config& c) {
    return os << c.block_threads << "x" << c.keys_per_thread;
  }
};

/// Round 0's joint histogram counts the top two digits together: radix^2 bins.
inline constexpr std::uint32_t joint_bins = radix * radix;
/// Threads of the joint histogram's blocks: one block a multiprocessor (its 16-bit counters take
/// 128 KiB of shared memory), as many warps as it may have to keep the reads in flight.
inline constexpr int joint_threads = 1024;
/// Joint histogram blocks at most (one a multiprocessor, each leaves its counters in the
/// workspace): the workspace size is known before the device is.
inline constexpr std::uint32_t max_joint_blocks = 160;

/// The local sort's grouping pass takes at most this many bits (4096 counters).
inline constexpr std::uint32_t max_group_bits = 12;

/// The most local-sort configurations a policy may list.
inline constexpr int max_local_configs = 12;

/// How the local sort finds the lanes of a warp that hold the same digit.
enum class match_mode : std::uint8_t {
  atomic_or = 2,  ///< each lane ORs its bit into a per-warp shared word of its digit, then reads it
  match_any = 3,  ///< the warp's match instruction (__match_any_sync)
};

/// The name of a match mode, as the benchmark's --local-match spells it.
inline const char* to_string(match_mode m) {
  switch (m) {
    case match_mode::atomic_or: return "atomic-or";
    case match_mode::match_any: return "match-any";
  }
  return "unknown";
}

/**
 * Hopper (sm_90), all key/value sizes. Starting point: the paper's Table 3, scaled to Hopper's
 * 228 KiB of shared memory and 64 K registers per multiprocessor:
 * - key blocks of 16 keys per thread, 512 threads (8192 keys; 256 threads when key and value
 *   take more than 8 bytes, for shared memory; the paper: 6912 32-bit / 3456 64-bit keys):
 *   each block writes runs of 32 keys per sub-bucket on average (H100, 2^28 uniform u32 keys:
 *   scatter 1.15 ms a round at 8192 keys per block, 1.63 at 4096, 2.32 at 2048);
 * - local sorts of up to 9216 keys (the paper: 9216 32-bit, 4224 64-bit keys): 2^28 uniform
 *   64-bit keys leave buckets of about 4096 keys after two passes, which the paper's 4224
 *   would send through a third pass whenever one bucket drew a little more;
 * - local configurations every 64 threads up to 512 (9 keys each), then 18 keys per thread.
 */
template <int KeyBytes, int ValueBytes>
struct sm90_policy {
  static constexpr int min_compute_capability = 90;
  static constexpr int max_counting_threads = 512;
  /// Histogram blocks of max_counting_threads a multiprocessor holds at least (a register
  /// bound): the kernel streams its keys and wants every warp it can get. Unbounded, the
  /// vector loads took 60 registers for 64-bit keys and read 2 GiB in 0.92 ms instead of 0.77
  /// (H100); 32 registers spill there, 40 do not.
  static constexpr int histogram_blocks_per_sm = KeyBytes == 8 ? 3 : 4;
  /// Scatter blocks of max_counting_threads a multiprocessor holds at least (3 for 32-bit keys:
  /// 40 registers, and both rounds of 2^28 uniform keys took 2.43 ms instead of 2.23).
  static constexpr int scatter_blocks_per_sm = 2;
  static constexpr counting_policy counting{KeyBytes + ValueBytes <= 8 ? 512 : 256, 16};
  /// The two compiled local-sort kernels: keys per thread.
  static constexpr int small_keys_per_thread = 9;
  static constexpr int large_keys_per_thread = 18;
  static constexpr int max_local_threads = 512;
  static constexpr local_config local_configs[] = {
      {64, 9},  {128, 9}, {192, 9}, {256, 9}, {320, 9}, {384, 9},
      {448, 9}, {512, 9}, {384, 18}, {512, 18}};
  /// 64-bit keys with a payload leave out 512x18: its tiles take more than the 227 KiB of
  /// shared memory a block may have (their local threshold is 6912 keys).
  static constexpr int local_config_count =
      static_cast<int>(sizeof(local_configs) / sizeof(local_configs[0])) -
      (KeyBytes == 8 && ValueBytes != 0 ? 1 : 0);
  static_assert(local_config_count <= max_local_configs);
  /// How a crowded local sort's LSD passes find the lanes of a warp that hold the same digit.
  /// 64-bit keys: the match instruction. Their crowded jobs are skewed, and the lanes' atomics
  /// on the shared match word of a common digit wait for each other (H200, 2^28 keys: AND of 3
  /// words 19.77 -> 18.15 ms, of 4 21.14 -> 19.65, Zipf 13.43 -> 13.08; u64/u64 pairs AND of 3
  /// and 4 words 2.6% and 4.1% faster, of 2 words 5.9% slower). 32-bit keys keep the words:
  /// Zipf 6.77 -> 6.95 ms with the instruction (AND of 3 words 7.34 -> 7.04). One ballot per
  /// digit bit, a third way the local sort had, lost on both (Zipf 10-12% slower).
  static constexpr match_mode local_match =
      KeyBytes == 8 ? match_mode::match_any : match_mode::atomic_or;
  /// A local sort whose keys, grouped by their top 8 differing bits, leave no group larger than
  /// this ranks each key by counting the smaller keys of its group (a comparison per group
  /// member) instead of one LSD pass per further 8 bits. 64-bit keys: 128 (H100, 2^28 AND-ed
  /// keys of 2 words: 16.4 ms at 64, 14.0 at 128, 13.8 at 256, but AND of 4 words 22.7 at 128
  /// and 25.5 at 256); 32-bit keys keep 32 (Zipf 7.03 ms, 7.16 at 128, 8.10 at 256).
  static constexpr std::uint32_t rank_group_max = KeyBytes == 4 ? 32 : 128;
  /// Bits of the local sort's grouping pass (8 to 12; fewer where a block's counter space is
  /// smaller): more bits, smaller groups to rank. A bucket of about 4096 uniform keys leaves
  /// groups of one or two keys at 12 bits and of 16 at 8, whose comparisons dominated (H100,
  /// 2^28 uniform keys: u32 5.69 ms at 12 bits, 6.61 at 8; u64 8.33 against 9.46).
  static constexpr std::uint32_t group_bits = 12;
  /// Sub-buckets are merged into one local sort while their total stays under this (the
  /// paper's lower threshold, section 4.2). 64-bit keys merge less: a merged job's groups
  /// take the top bits of its digit and only a few below, so skewed sub-buckets crowd them and
  /// the job takes the LSD passes. 2^28 keys AND-ed of 2 words (tools/bench/hrs/job_mix.cpp):
  /// 5-70% of the jobs of 577 to 2304 keys crowded at 1152, none at 256; H100: u64 14.04 ->
  /// 12.75 ms, u64/u64 11.71 -> 11.16; AND of 3 words 1-2% faster; uniform, sorted, Zipf and
  /// AND of 4-5 words within 1.1%. 32-bit keys gain on AND of 2 words and lose 2-3% on AND of
  /// 3, and keep 1152.
  static constexpr std::uint32_t merge_threshold = KeyBytes == 8 ? 256 : 1152;
  /// A key block whose largest digit holds more than 1/skew_divisor of its keys partitions
  /// with warp-aggregated shared-memory atomics instead of one atomic per key (section 4.4),
  /// and the histogram reduces its digits in registers first; 1: never. Hopper's shared
  /// atomics serialize equal addresses faster than a warp agreed on them through shared words
  /// (H100, 2^28 keys, 1 against 16: u32 sorted 6.40 -> 5.49 ms, u64 AND of 4 words 24.5 ->
  /// 22.7). With the match instruction, keys alone gain from 2, where a digit holds over half of
  /// a block (H200, 2^28 keys, time against 1: u32 sorted 0.93, Zipf 0.97, AND of 4 words 0.96,
  /// uniform 1.01, as every thread block's first key block of rounds 0 and 1 ranks per warp;
  /// u64 sorted 0.94, Zipf 0.98, AND of 4 0.99); 4 or more lose on AND of 3 words (1.10-1.23),
  /// 16 on AND of 2 (1.27-1.50). Pairs keep 1 (u64/u64 AND of 4 words 1.02, sorted 0.98).
  static constexpr int skew_divisor = ValueBytes == 0 ? 2 : 1;
  /// The first round whose zero digit takes the next 8 bits too (zero_extended_digits: 511
  /// digit codes instead of 256; the key's digits or more: never). AND-ed keys are mostly zero
  /// bits, and an 8-bit pass sends most of a bucket into digit 0, which then takes a pass of
  /// its own. 64-bit keys alone extend from round 0 (H200, 2^28 keys, time against 8-bit digits
  /// with the joint histogram: AND of 3 words 0.880, of 4 0.774, of 5 0.750, all equal 0.84,
  /// AND of 2 1.01, Zipf 1.03, uniform and sorted 1.05, the joint histogram's saved pass).
  /// 32-bit keys keep 8-bit digits: uniform keys 1.10 (a target row of issue 11), sorted 1.10,
  /// though AND of 3 and 4 words gain (0.94, 0.85; Onesweep sorts those under `auto`). Pairs
  /// are compiled with 8-bit digits only. tools/bench/results/2026-11-29-h200-hrs-zero-digits.
  static constexpr bool extends = KeyBytes == 8 && ValueBytes == 0;
  static constexpr int extend_from_round = extends ? 0 : KeyBytes;
  /// Sorts of at least this many keys count round 0's histogram over the top two digits, so
  /// that round 1 needs no histogram pass of its own; below it, the joint histogram's fixed
  /// cost (clearing and summing 128 KiB of counters per multiprocessor) is larger than the pass
  /// it saves (H100, uniform u32 keys: 0.50 ms with it, 0.46 without at 2^24 keys; 1.24 and
  /// 1.29 at 2^26; u64 keys and u32 pairs alike). Never where round 0 extends its zero digit:
  /// the joint histogram counts two 8-bit digits, and would move the first extended round to
  /// round 2 (H200, 2^28 u64 keys, against extending from round 0: AND of 3 words 1.07, of 4
  /// 1.09, of 5 1.11; uniform and sorted 0.95).
  static constexpr std::uint64_t joint_min_keys =
      extends ? ~std::uint64_t{0} : std::uint64_t{1} << 25;
};

/// Policies from the newest GPU generation to the oldest; the dispatch takes the first whose
/// min_compute_capability the device reaches (and the last for older devices). Only sm_90 is
/// tuned and compiled today: an older entry is one more line here.
template <typename... Policies>
struct policy_chain {};

template <int KeyBytes, int ValueBytes>
using policies = policy_chain<sm90_policy<KeyBytes, ValueBytes>>;

/// Calls f(Policy{}) with the policy of `policies` for a device of compute capability `cc`
/// (major * 10 + minor).
template <typename First, typename... Rest, typename F>
void with_policy(policy_chain<First, Rest...>, int cc, F&& f) {
  if constexpr (sizeof...(Rest) == 0) {
    f(First{});
  } else {
    if (cc >= First::min_compute_capability) f(First{});
    else with_policy(policy_chain<Rest...>{}, cc, static_cast<F&&>(f));
  }
}

/// Run-time thresholds (the paper's Table 1) and launch shapes; zero fields take the policy's
/// defaults. They are arguments of the kernels, so that the benchmark sweeps them without
/// recompiling.
struct tuning {
  /// Buckets of at most this many keys are sorted locally (the paper's upper threshold);
  /// at most the largest local configuration's capacity.
  std::uint32_t local_threshold = 0;
  /// Neighbouring sub-buckets are merged while their total stays below this; at most half the
  /// local threshold, so that a merged bucket always fits a local sort.
  std::uint32_t merge_threshold = 0;
  /// Threads of the histogram and scatter blocks (a multiple of 32, at most
  /// max_counting_threads): the key block is this times the compiled keys per thread.
  std::uint32_t counting_threads = 0;
  /// See sm90_policy::skew_divisor; 1 never takes the warp-aggregated path.
  std::uint32_t skew_divisor = 0;
  /// The local sort's warp matching (0: the policy's).
  match_mode local_match = static_cast<match_mode>(0);
  /// See sm90_policy::rank_group_max (0: the policy's); 1 always takes the LSD passes.
  std::uint32_t rank_group_max = 0;
  /// See sm90_policy::group_bits (0: the policy's).
  std::uint32_t group_bits = 0;
  /// See sm90_policy::joint_min_keys (0: the policy's; ~0: never).
  std::uint64_t joint_min_keys = 0;
  /// See sm90_policy::extend_from_round (-1: the policy's; the key's digits or more: never).
  /// A joint histogram counts rounds 0 and 1 with 8-bit digits: where a sort takes one, its
  /// zero digits extend from round 2 at the earliest.
  int extend_from_round = -1;
  /// Local configurations (ascending capacities, keys per thread one of the two compiled);
  /// count 0: the policy's.
  int local_config_count = 0;
  local_config local_configs[max_local_configs] = {};

  friend constexpr bool operator==(const tuning&, const tuning&) = default;
};

/// The first round whose zero digit takes 16 bits in a sort of `n` keys with the resolved
/// tuning `t`: a joint histogram counts rounds 0 and 1 with 8-bit digits.
constexpr int first_extended_round(std::uint64_t n, const tuning& t) {
  return n >= t.joint_min_keys && t.extend_from_round < 2 ? 2 : t.extend_from_round;
}

}  // namespace gpusort::gpu::hrs
