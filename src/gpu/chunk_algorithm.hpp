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
 * (gpu/hrs_round_estimate.hpp). HRS from `min_records` records on when
 * - the keys leave HRS at most `few_keys_rounds` scatter rounds (few distinct keys), or
 * - they leave it at most `even_rounds` rounds and, below `skew_tolerant_records`, spread over
 *   the top digit about evenly (concentration at most `even_concentration`): HRS's margin is
 *   thinner on smaller chunks, where Zipf keys already lose.
 */
struct hrs_crossover {
  std::uint32_t key_size;
  std::uint32_t value_size;
  std::uint64_t min_records;
  double few_keys_rounds;
  double even_rounds;
  std::uint64_t skew_tolerant_records;
  double even_concentration;
};

/// A crossover HRS never reaches: Onesweep for every chunk.
inline constexpr std::uint64_t hrs_never = ~std::uint64_t{0};

/// Measured with gpusort-bench-hrs on the H100 machine (tools/bench/results/2026-11-25-h100-auto,
/// HRS time / CUB time, device-resident keys; sampled scatter rounds in parentheses):
/// - 64-bit keys, 2^28: uniform 0.56 (2.12), sorted 0.61 (2.00), Zipf 0.92 (2.08), AND of 2
///   words 1.16 (2.68), of 3 1.38 (3.86), of 5 1.56 (7.0), all equal 0.06 (0). 2^26: uniform
///   0.50, Zipf 1.05, AND 2 1.10, equal 0.08. 2^22: uniform 0.82 (2.00), sorted 0.81, Zipf
///   1.80 (1.98), AND 2 1.39 (1.94), equal 0.44; below 2^22 uniform keys lose (1.10 at 2^20).
///   At 2^22 the rounds do not tell uniform from AND 2 or Zipf; the top digit's concentration
///   does (about 1, 1.4 and 6).
/// - 32-bit keys: uniform 1.37 at 2^22, 0.94 at 2^26, 1.04 at 2^28; every skewed distribution
///   loses (1.3-2.4); all equal wins (0.85 at 2^22, 0.17 at 2^26, 0.13 at 2^28).
/// - Pairs (auto gives records with a payload to Onesweep anyway): HRS was 1.14x faster for
///   uniform 64/64 pairs but slower for skewed ones and for 32/32 pairs: never.
inline constexpr hrs_crossover hrs_crossovers[] = {
    {4, 0, std::uint64_t{1} << 22, 1.0, 0.0, hrs_never, 0.0},
    {8, 0, std::uint64_t{1} << 22, 1.0, 2.4, std::uint64_t{1} << 27, 1.2},
    {4, 4, hrs_never, 0, 0, hrs_never, 0},
    {4, 8, hrs_never, 0, 0, hrs_never, 0},
    {8, 4, hrs_never, 0, 0, hrs_never, 0},
    {8, 8, hrs_never, 0, 0, hrs_never, 0},
};

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
  if (c == nullptr || c->min_records == hrs_never || records < c->min_records)
    return chunk_algorithm::onesweep;
  if (scatter_rounds <= c->few_keys_rounds) return chunk_algorithm::hrs;
  const bool even = records >= c->skew_tolerant_records || concentration <= c->even_concentration;
  return scatter_rounds <= c->even_rounds && even ? chunk_algorithm::hrs
                                                  : chunk_algorithm::onesweep;
}

}  // namespace gpusort::gpu
