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

/// From how many records per chunk the hybrid radix sort beats Onesweep, by key and packed
/// payload size (value_size 0: key-only).
struct hrs_crossover {
  std::uint32_t key_size;
  std::uint32_t value_size;
  std::uint64_t min_records;
};

/// A crossover HRS never reaches: Onesweep for every chunk.
inline constexpr std::uint64_t hrs_never = ~std::uint64_t{0};

/// Measured with gpusort-bench-hrs on the H100 machine (tools/bench/results/2026-11-25-h100-hrs,
/// uniform keys, HRS time / CUB time): 64-bit keys 1.82 at 2^16, 1.10 at 2^20, 0.82 at 2^22,
/// 0.52 at 2^26, 0.56 at 2^28: HRS from 2^22 on. 32-bit keys: 1.37 at 2^22, 0.94 at 2^26 but
/// 1.03 at 2^28: never. Pairs: not measured with the last HRS (auto gives records with a
/// payload to Onesweep anyway). Skewed keys (AND of 2..5 words) ran 1.17-1.56x slower with HRS
/// at 2^28, all-equal keys 17x faster: auto decides on size alone.
inline constexpr hrs_crossover hrs_crossovers[] = {
    {4, 0, hrs_never}, {8, 0, std::uint64_t{1} << 22}, {4, 4, hrs_never},
    {4, 8, hrs_never}, {8, 4, hrs_never},               {8, 8, hrs_never},
};

/// The sorter `automatic` gives a chunk of `records` records: HRS from its crossover on,
/// Onesweep below it and for shapes without a measured crossover.
[[nodiscard]] constexpr chunk_algorithm choose_chunk_algorithm(std::uint32_t key_size,
                                                               std::uint32_t value_size,
                                                               std::uint64_t records) noexcept {
  for (const hrs_crossover& c : hrs_crossovers)
    if (c.key_size == key_size && c.value_size == value_size)
      return c.min_records != hrs_never && records >= c.min_records ? chunk_algorithm::hrs
                                                                     : chunk_algorithm::onesweep;
  return chunk_algorithm::onesweep;
}

}  // namespace gpusort::gpu
