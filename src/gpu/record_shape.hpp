// What a chunk of records occupies in a device slot: the AoS records as they arrive, or the
// normalized keys followed by the packed payloads that the sorters work on. Host arithmetic only.
#pragma once

#include <algorithm>
#include <cstdint>

#include "gpusort/record_format.hpp"

namespace gpusort::gpu {

/// Slots and the regions inside them start on this boundary (cudaMalloc gives 256 bytes).
inline constexpr std::uint64_t slot_alignment = 256;

[[nodiscard]] constexpr std::uint64_t align_up(std::uint64_t v, std::uint64_t a) {
  return (v + a - 1) / a * a;
}

/// Record, key and packed payload sizes of a format the GPU sorts directly.
struct record_shape {
  std::uint32_t record_size = 0;
  std::uint32_t key_size = 0;
  std::uint32_t value_size = 0;  ///< packed payload word: 0 (key-only), 4 or 8

  constexpr record_shape() = default;
  explicit record_shape(const record_format& f)
      : record_size(f.record_size),
        key_size(f.key_size),
        value_size(f.key_only() ? 0 : (f.record_size - f.key_size <= 4 ? 4 : 8)) {}

  /// Where the payloads start inside a slot that holds `n` keys followed by their payloads.
  [[nodiscard]] constexpr std::uint64_t values_offset(std::uint64_t n) const {
    return align_up(n * key_size, slot_alignment);
  }
  /// A slot holds the AoS chunk, or the normalized keys followed by the packed payloads.
  [[nodiscard]] constexpr std::uint64_t slot_bytes(std::uint64_t n) const {
    if (value_size == 0) return align_up(n * key_size, slot_alignment);
    return align_up(std::max<std::uint64_t>(n * record_size, values_offset(n) + n * value_size),
                    slot_alignment);
  }
};

}  // namespace gpusort::gpu
