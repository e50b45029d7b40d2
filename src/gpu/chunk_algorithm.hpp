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

/// When the hybrid radix sort beats Onesweep, by key and packed payload size (value_size 0:
/// key-only): from `min_records` records per chunk on, and while the chunk's keys are spread
/// evenly enough that HRS's scatters move every key at most `max_scatter_rounds` times
/// (estimated from a sample, gpu/hrs_round_estimate.hpp).
struct hrs_crossover {
  std::uint32_t key_size;
  std::uint32_t value_size;
  std::uint64_t min_records;
  double max_scatter_rounds;
};

/// A crossover HRS never reaches: Onesweep for every chunk.
inline constexpr std::uint64_t hrs_never = ~std::uint64_t{0};

/// Measured with gpusort-bench-hrs on the H100 machine (tools/bench/results/2026-11-25-h100-hrs,
/// HRS time / CUB time). Size, uniform keys: 64-bit 1.82 at 2^16, 1.10 at 2^20, 0.82 at 2^22,
/// 0.56 at 2^28; 32-bit 1.37 at 2^22, 0.94 at 2^26, 1.03 at 2^28. Skew, 2^28 keys, with the
/// sampled scatter rounds of hrs_round_estimate (8192 keys): 64-bit uniform 2.12 rounds 0.56,
/// sorted 2.11 rounds 0.62, Zipf 2.11 rounds 0.93, AND of 2 words 2.67 rounds 1.17, AND of 3-5
/// words 3.9-7.0 rounds 1.39-1.56, all equal 0 rounds 0.06; 32-bit uniform 2.12 rounds 1.03,
/// AND of 2-5 words 2.7-3.9 rounds 1.53-1.64, all equal 0 rounds 0.13. So 64-bit keys go to HRS
/// below 2.4 rounds, 32-bit keys only when a round or less is left (few distinct keys). Pairs
/// (auto gives records with a payload to Onesweep anyway): HRS was 1.14x faster for uniform
/// 64/64 pairs but slower for skewed ones and for 32/32 pairs, so never.
inline constexpr hrs_crossover hrs_crossovers[] = {
    {4, 0, std::uint64_t{1} << 22, 1.0}, {8, 0, std::uint64_t{1} << 22, 2.4},
    {4, 4, hrs_never, 0},                {4, 8, hrs_never, 0},
    {8, 4, hrs_never, 0},                {8, 8, hrs_never, 0},
};

/// The crossover of a shape; null for shapes without one (Onesweep for every chunk).
[[nodiscard]] constexpr const hrs_crossover* find_hrs_crossover(std::uint32_t key_size,
                                                                std::uint32_t value_size) noexcept {
  for (const hrs_crossover& c : hrs_crossovers)
    if (c.key_size == key_size && c.value_size == value_size) return &c;
  return nullptr;
}

/// The sorter `automatic` gives a chunk of `records` records whose sampled keys would keep HRS
/// scattering for `scatter_rounds` rounds: HRS past its crossover in size and under it in
/// rounds, Onesweep otherwise and for shapes without a measured crossover.
[[nodiscard]] constexpr chunk_algorithm choose_chunk_algorithm(std::uint32_t key_size,
                                                               std::uint32_t value_size,
                                                               std::uint64_t records,
                                                               double scatter_rounds) noexcept {
  const hrs_crossover* c = find_hrs_crossover(key_size, value_size);
  return c != nullptr && c->min_records != hrs_never && records >= c->min_records &&
                 scatter_rounds <= c->max_scatter_rounds
             ? chunk_algorithm::hrs
             : chunk_algorithm::onesweep;
}

}  // namespace gpusort::gpu
