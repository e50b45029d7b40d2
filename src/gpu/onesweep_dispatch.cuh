// Declarations of the CUB DeviceRadixSort (Onesweep) wrappers: workspace sizes, the sorts and
// their error checks. Defined in onesweep.cuh, instantiated in onesweep_*.cu (the heavy CUB
// instantiations compile in parallel). Every sort is asynchronous on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace gpusort::gpu::detail {

/// Largest chunk the CUB calls take: they are instantiated with 32-bit (unsigned) item counts,
/// which CUB's Onesweep handles in portions of 2^28 with 32-bit global offsets.
inline constexpr std::uint64_t max_sort_items = (std::uint64_t{1} << 32) - 1;

/// Temporary storage CUB's DeviceRadixSort needs for `n` keys (pairs: keys and Value payloads)
/// sorted with a DoubleBuffer. Host-only, synchronous.
/// @throw gpusort::cuda_error
template <typename Word>
std::size_t onesweep_keys_temp_bytes(std::uint32_t n);
template <typename Word, typename Value>
std::size_t onesweep_pairs_temp_bytes(std::uint32_t n);

/**
 * Sorts `n` unsigned keys ascending and stably with CUB's Onesweep radix sort over all bits.
 * The result lands in `d_current` or `d_alternate`; both are overwritten.
 * @return true when the sorted keys are in `d_alternate` (known on the host at once)
 * @throw gpusort::cuda_error when CUB reports an error (also when temp_bytes is too small)
 */
template <typename Word>
bool onesweep_sort_keys(void* d_temp, std::size_t temp_bytes, Word* d_current, Word* d_alternate,
                        std::uint32_t n, cudaStream_t stream);

/// As onesweep_sort_keys, moving the payloads along; keys and payloads land on the same side.
template <typename Word, typename Value>
bool onesweep_sort_pairs(void* d_temp, std::size_t temp_bytes, Word* d_keys_current,
                         Word* d_keys_alternate, Value* d_values_current,
                         Value* d_values_alternate, std::uint32_t n, cudaStream_t stream);

}  // namespace gpusort::gpu::detail
