// How much counting work the hybrid radix sort would do on a chunk, estimated from a sample of
// its normalized keys. `auto` uses it to keep skewed chunks away from HRS: every round of HRS
// refines only the buckets still above the local-sort threshold, so keys whose digits are
// unevenly spread (AND-ed words, Zipf) stay in counting rounds longer, where Onesweep's cost does
// not depend on the distribution. Plain C++ (header only): the run former, the planner and CPU
// tests share it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace gpusort::gpu {

/// Keys `auto` samples from each chunk. At 2^28 keys a sample key stands for 2^15 keys, so a
/// bucket needs two sample keys (see estimate_hrs_rounds) to count as larger than the local
/// threshold: the estimate misses buckets of a few local-sort sizes, which is the same for
/// every distribution and is absorbed by the thresholds in chunk_algorithm.hpp, calibrated
/// with this sample size.
inline constexpr std::uint32_t hrs_key_sample_size = 8192;

/// The counting work of one HRS sort, in units of "every key once".
struct hrs_round_estimate {
  /// Sum over the counting rounds of the fraction of keys a round's histogram reads.
  double histogram_rounds = 0;
  /// The same for the scatter, which skips buckets whose keys are all equal.
  double scatter_rounds = 0;
  /// How unevenly the top digit spreads the keys: the chance that two sample keys share it,
  /// times the 256 digits (1 for uniform keys, 256 for one digit; unbiased for the sample).
  /// HRS's first scatter is its cheapest where this is near 1.
  double top_digit_concentration = 0;
};

/**
 * Replays HRS's bucket refinement on `sample` (normalized keys in the low `key_bits` bits; sorted
 * in place): each round splits every bucket above `local_threshold` keys by its next 8-bit
 * digit, as the counting passes do, and from round `extend_from_round` on a zero digit by the
 * 8 bits after it too (HRS's zero-extended digits); buckets at or below the threshold go to a
 * local sort. A sample key stands for records / sample.size() keys of the chunk, and a bucket
 * counts as above the threshold only when two or more sample keys fall into it: one key is too
 * weak a sign of a large bucket when a sample key stands for more keys than the threshold.
 */
[[nodiscard]] inline hrs_round_estimate estimate_hrs_rounds(std::span<std::uint64_t> sample,
                                                            unsigned key_bits,
                                                            std::uint64_t records,
                                                            std::uint64_t local_threshold,
                                                            int extend_from_round = 64) {
  constexpr unsigned digit_bits = 8;
  constexpr std::size_t min_sample_keys = 2;
  hrs_round_estimate estimate;
  if (sample.empty() || records <= local_threshold) return estimate;
  std::sort(sample.begin(), sample.end());
  if (sample.size() >= 2) {
    const unsigned top_shift = key_bits - digit_bits;
    double pairs = 0;
    for (std::size_t i = 0; i < sample.size();) {
      std::size_t j = i + 1;
      while (j < sample.size() && (sample[j] >> top_shift) == (sample[i] >> top_shift)) ++j;
      const double c = static_cast<double>(j - i);
      pairs += c * (c - 1);
      i = j;
    }
    const double s = static_cast<double>(sample.size());
    estimate.top_digit_concentration = pairs / (s * (s - 1)) * (1u << digit_bits);
  }
  const double per_key = 1.0 / static_cast<double>(sample.size());
  const double keys_per_sample_key = static_cast<double>(records) * per_key;
  struct pending_bucket {
    std::size_t first;
    std::size_t last;
    int round;
    unsigned shift;  // where the bucket's next digit starts
  };
  std::vector<pending_bucket> pending{{0, sample.size(), 0, key_bits - digit_bits}};
  while (!pending.empty()) {
    const pending_bucket b = pending.back();
    pending.pop_back();
    const std::size_t count = b.last - b.first;
    // Round 0 is the whole chunk, known to be above the threshold.
    const bool counting =
        b.round == 0 || (count >= min_sample_keys &&
                         static_cast<double>(count) * keys_per_sample_key >
                             static_cast<double>(local_threshold));
    if (!counting) continue;
    estimate.histogram_rounds += static_cast<double>(count) * per_key;
    if (sample[b.first] == sample[b.last - 1]) continue;  // all equal: done after its histogram
    estimate.scatter_rounds += static_cast<double>(count) * per_key;
    const bool extended = b.round >= extend_from_round && b.shift >= digit_bits;
    for (std::size_t i = b.first; i < b.last;) {
      // The bits this key's sub-bucket takes: 16 for a zero digit in an extended round.
      const bool zero = ((sample[i] >> b.shift) & ((1u << digit_bits) - 1)) == 0;
      const unsigned taken = extended && zero ? 2 * digit_bits : digit_bits;
      const unsigned low = b.shift + digit_bits - taken;  // the sub-bucket's lowest bit
      const std::uint64_t prefix = sample[i] >> low;
      std::size_t j = i + 1;
      while (j < b.last && (sample[j] >> low) == prefix) ++j;
      // A sub-bucket with no bits left is sorted by this scatter.
      if (b.shift >= taken) pending.push_back({i, j, b.round + 1, b.shift - taken});
      i = j;
    }
  }
  return estimate;
}

}  // namespace gpusort::gpu
