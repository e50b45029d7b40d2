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
 *   `even_rounds` rounds and, below `skew_tolerant_records`, spread over the top digit about
 *   evenly (concentration at most `even_concentration`): HRS's margin is thinner on smaller
 *   chunks, where Zipf keys already lose. Past `even_max_records` evenly spread keys need a
 *   third counting round, which a sample of hrs_key_sample_size keys cannot see (two rounds
 *   leave 2^16 buckets).
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
};

/// A crossover HRS never reaches: Onesweep for every chunk.
inline constexpr std::uint64_t hrs_never = ~std::uint64_t{0};

/// Measured with gpusort-bench-hrs on the H100 machine (HRS time / CUB time, device-resident
/// keys; sampled scatter rounds and top-digit concentration in parentheses), last in
/// tools/bench/results/2026-11-27-h100-hrs-joint (`bench-final.csv`, `sweep-final.csv`, with
/// one atomic per key however skewed; rows at 2^22 and below from 2026-11-27-h100-hrs-vectors):
/// - 64-bit keys, 2^28: uniform 0.44, sorted 0.45, Zipf 0.87, AND of 2 words 0.74 (2.68; 0.81
///   before 64-bit keys merged sub-buckets only below 256 keys, 2026-11-27-h100-hrs-skew), of
///   3 1.26 (3.86), of 4 1.39, all equal 0.07. 2^27: uniform 0.43, Zipf 0.88, AND 2 0.86, AND 3
///   1.27; 2^26: uniform 0.47, Zipf 0.95, AND 2 0.84, AND 3 1.28; 2^24: uniform 0.59, Zipf
///   1.17, AND 2 0.94, AND 3 1.42; 2^22: uniform 0.65, Zipf 1.76 (1.98, 1.51), AND 2 1.32
///   (1.94, 5.9), equal 0.40; 2^20: uniform 1.00, so the crossover stays at 2^22. Below 2^26 the
///   rounds do not tell uniform from AND 2 or Zipf; the top digit's concentration does, and
///   keeps AND 2 at 2^24 (0.94) with Onesweep too.
/// - 32-bit keys: uniform 0.70 at 2^28, 0.72 at 2^27, 0.75 at 2^26, 0.89 at 2^25, 0.97 at 2^24;
///   sorted 0.83 at 2^28, 0.85 at 2^27, 0.90 at 2^26, 1.06 at 2^25 (the same rounds and
///   concentration as uniform keys), 1.10 at 2^24: even keys from 2^26 on; every skewed
///   distribution loses (1.13-1.27 at 2^28, 1.18-1.24 at 2^27: Zipf concentration 1.5, AND of
///   2 5.9); all equal wins (0.28 at 2^24, 0.11 at 2^28; 1.39 at 2^22). Larger chunks
///   (tools/bench/results/2026-11-27-h100x2-first-round/hrs-u32-sizes.txt, an earlier build):
///   uniform 0.97 and sorted 0.98 at 2^29, but 1.30 and 1.50 at 2^30, 1.30 and 1.53 at 2^31:
///   from about 9216 x 2^16 keys (the local threshold times the buckets of two rounds) the
///   buckets need a third round. 64-bit keys keep their margin there (2^31 uniform: 0.70).
/// - Pairs (key + record index or value): HRS is faster on evenly spread ones (64/64 0.46 at
///   2^27, 0.43-0.68 from 2^20 to 2^26; 32/32 0.89 at 2^28, 0.92 at 2^26), but it leaves equal
///   keys in no particular order, and gpusort keeps records with equal keys in input order
///   unless told --algorithm hrs: records with a payload stay with Onesweep.
inline constexpr hrs_crossover hrs_crossovers[] = {
    {4, 0, std::uint64_t{1} << 22, 1.0, std::uint64_t{1} << 26, std::uint64_t{9216} << 16, 2.4,
     hrs_never, 1.2},
    {8, 0, std::uint64_t{1} << 22, 1.0, std::uint64_t{1} << 22, hrs_never, 3.2,
     std::uint64_t{1} << 26, 1.2},
    {4, 4, hrs_never, 0, hrs_never, 0, 0, hrs_never, 0},
    {4, 8, hrs_never, 0, hrs_never, 0, 0, hrs_never, 0},
    {8, 4, hrs_never, 0, hrs_never, 0, 0, hrs_never, 0},
    {8, 8, hrs_never, 0, hrs_never, 0, 0, hrs_never, 0},
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
  const bool even = records >= c->skew_tolerant_records || concentration <= c->even_concentration;
  return records >= c->even_min_records && records <= c->even_max_records &&
                 scatter_rounds <= c->even_rounds && even
             ? chunk_algorithm::hrs
             : chunk_algorithm::onesweep;
}

}  // namespace gpusort::gpu
