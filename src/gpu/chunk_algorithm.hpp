// Names of the GPU sort algorithms behind the chunk_sorter seam, and the rule by which
// `automatic` picks one per chunk; plain C++ (header only), so that the pipeline, the planner
// and CPU-only tests use them without CUDA.
#pragma once

#include <cstdint>

namespace gpusort::gpu {

/// The GPU sort algorithms behind chunk_sorter (gpu/chunk_sorter.hpp).
enum class chunk_algorithm : std::uint8_t {
  onesweep,   ///< CUB DeviceRadixSort (Onesweep, LSD), the baseline; stable
  hrs,        ///< the hybrid MSD radix sort (Stehle & Jacobsen 2017, section 4), gpu/hrs/
  automatic,  ///< per chunk, hrs or onesweep by choose_chunk_algorithm()
};

/// "onesweep", "hrs", "auto".
[[nodiscard]] constexpr const char* to_string(chunk_algorithm algorithm) noexcept {
  switch (algorithm) {
    case chunk_algorithm::onesweep: return "onesweep";
    case chunk_algorithm::hrs: return "hrs";
    case chunk_algorithm::automatic: return "auto";
  }
  return "?";
}

/**
 * When the hybrid radix sort beats Onesweep, by key and packed payload size (value_size 0:
 * key-only), in terms of a chunk's size and of the estimate of its sampled keys
 * (gpu/hrs_round_estimate.hpp). HRS when
 * - from `min_records` records on, the keys leave HRS at most `few_keys_rounds` scatter rounds
 *   (few distinct keys), or
 * - from `even_min_records` up to `even_max_records` records, they leave it at most
 *   `even_rounds` rounds and spread over the top digit evenly enough: below
 *   `mild_skew_records` a concentration of at most `even_concentration`, from there at most
 *   `mild_concentration`, from `skew_tolerant_records` on any. HRS's margin is thinner on
 *   smaller chunks, where skewed keys lose first. Past `even_max_records` evenly spread keys
 *   need a third counting round, which a sample of hrs_key_sample_size keys cannot see (two
 *   rounds leave 2^16 buckets).
 */
struct hrs_crossover {
  std::uint32_t key_size;
  std::uint32_t value_size;
  std::uint64_t min_records;
  double few_keys_rounds;
  std::uint64_t even_min_records;
  std::uint64_t even_max_records;
  double even_rounds;
  std::uint64_t skew_tolerant_records;
  double even_concentration;
  std::uint64_t mild_skew_records;
  double mild_concentration;
};

/// A crossover HRS never reaches: Onesweep for every chunk.
inline constexpr std::uint64_t hrs_never = ~std::uint64_t{0};

/// Measured with gpusort-bench-hrs (HRS time / CUB time, device-resident keys; sampled scatter
/// rounds and top-digit concentration in parentheses):
/// - 64-bit keys, whose zero digits take 16 bits from round 0 (H200,
///   tools/bench/results/2026-11-29-h200-hrs-zero-digits, `sweep-u64-call2.csv`,
///   `sweep-large-call7.csv`): from 2^26 to 2^30 HRS is faster on every distribution measured:
///   uniform 0.39-0.65, sorted 0.41, Zipf 0.79-0.91, AND of 2 words 0.66-0.79, of 3 0.91-0.96
///   (2.94, 34-37), of 4 0.84-0.94 (3.67, 92-97), of 5 0.80-0.89 (4.09, 153-157), all equal
///   0.06-0.09. 2^24: uniform 0.54, sorted 0.55, Zipf 0.99 (2.03, 1.49), AND 2 0.89 (2.10,
///   6.23), AND 3 1.11 (2.48, 37), AND 4 1.14, AND 5 1.06 (3.72, 158), equal 0.16. 2^22:
///   uniform 0.68, sorted 0.66, Zipf 1.53 (1.98, 1.51), AND 2 1.08 (1.82, 5.89), AND 3-5
///   1.33-1.43, equal 0.48. Below 2^22 (H100, 2^20 uniform 1.00,
///   tools/bench/results/2026-11-27-h100-hrs-vectors) Onesweep.
/// - 32-bit keys (H100, tools/bench/results/2026-11-27-h100-hrs-joint, `bench-final.csv`,
///   `sweep-final.csv`; rows at 2^22 and below from 2026-11-27-h100-hrs-vectors): uniform 0.70
///   at 2^28, 0.72 at 2^27, 0.75 at 2^26, 0.89 at 2^25, 0.97 at 2^24; sorted 0.83 at 2^28, 0.85
///   at 2^27, 0.90 at 2^26, 1.06 at 2^25 (the same rounds and concentration as uniform keys),
///   1.10 at 2^24: even keys from 2^26 on; every skewed distribution loses (1.13-1.27 at 2^28,
///   1.18-1.24 at 2^27: Zipf concentration 1.5, AND of 2 5.9); all equal wins (0.28 at 2^24,
///   0.11 at 2^28; 1.39 at 2^22). Larger chunks
///   (tools/bench/results/2026-11-27-h100x2-first-round/hrs-u32-sizes.txt, an earlier build):
///   uniform 0.97 and sorted 0.98 at 2^29, but 1.30 and 1.50 at 2^30, 1.30 and 1.53 at 2^31:
///   from about 9216 x 2^16 keys (the local threshold times the buckets of two rounds) the
///   buckets need a third round. 64-bit keys keep their margin there (2^31 uniform: 0.70, H100).
/// - Pairs (key + record index or value): HRS is faster on evenly spread ones (64/64 0.46 at
///   2^27, 0.43-0.68 from 2^20 to 2^26; 32/32 0.89 at 2^28, 0.92 at 2^26), but it leaves equal
///   keys in no particular order, and gpusort keeps records with equal keys in input order
///   unless told --algorithm hrs: records with a payload stay with Onesweep.
inline constexpr hrs_crossover hrs_crossovers[] = {
    {4, 0, std::uint64_t{1} << 22, 1.0, std::uint64_t{1} << 26, std::uint64_t{9216} << 16, 2.4,
     hrs_never, 1.2, hrs_never, 1.2},
    {8, 0, std::uint64_t{1} << 22, 1.0, std::uint64_t{1} << 22, hrs_never, 4.5,
     std::uint64_t{1} << 26, 1.2, std::uint64_t{1} << 24, 12.0},
    {4, 4, hrs_never, 0, hrs_never, 0, 0, hrs_never, 0, hrs_never, 0},
    {4, 8, hrs_never, 0, hrs_never, 0, 0, hrs_never, 0, hrs_never, 0},
    {8, 4, hrs_never, 0, hrs_never, 0, 0, hrs_never, 0, hrs_never, 0},
    {8, 8, hrs_never, 0, hrs_never, 0, 0, hrs_never, 0, hrs_never, 0},
};

/// The fewest records for which a crossover may choose HRS.
[[nodiscard]] constexpr std::uint64_t hrs_smallest_chunk(const hrs_crossover& c) noexcept {
  return c.min_records < c.even_min_records ? c.min_records : c.even_min_records;
}

/// The crossover of a shape; null for shapes without one (Onesweep for every chunk).
[[nodiscard]] constexpr const hrs_crossover* find_hrs_crossover(std::uint32_t key_size,
                                                                std::uint32_t value_size) noexcept {
  for (const hrs_crossover& c : hrs_crossovers)
    if (c.key_size == key_size && c.value_size == value_size) return &c;
  return nullptr;
}

/// The sorter `automatic` gives a chunk of `records` records, from the estimate of its sampled
/// keys (scatter rounds and top-digit concentration): HRS where its crossover says so,
/// Onesweep otherwise and for shapes without a measured crossover.
[[nodiscard]] constexpr chunk_algorithm choose_chunk_algorithm(std::uint32_t key_size,
                                                               std::uint32_t value_size,
                                                               std::uint64_t records,
                                                               double scatter_rounds,
                                                               double concentration) noexcept {
  const hrs_crossover* c = find_hrs_crossover(key_size, value_size);
  if (c == nullptr || hrs_smallest_chunk(*c) == hrs_never) return chunk_algorithm::onesweep;
  if (records >= c->min_records && scatter_rounds <= c->few_keys_rounds)
    return chunk_algorithm::hrs;
  // How unevenly the top digit may spread the keys: the less, the smaller the chunk.
  const double most_concentration =
      records >= c->mild_skew_records ? c->mild_concentration : c->even_concentration;
  const bool even = records >= c->skew_tolerant_records || concentration <= most_concentration;
  return records >= c->even_min_records && records <= c->even_max_records &&
                 scatter_rounds <= c->even_rounds && even
             ? chunk_algorithm::hrs
             : chunk_algorithm::onesweep;
}

}  // namespace gpusort::gpu
