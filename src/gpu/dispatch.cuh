// Dispatch layer between run_former and the device code: launch shapes, workspace sizes, CUB
// calls and their error checks. Host code outside src/gpu/*_kernels.cu and onesweep_*.cu never
// launches a kernel itself. Every function is asynchronous on `stream` unless noted.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/record_layout.cuh"
#include "gpusort/detail/key_codec.hpp"

namespace gpusort::gpu::detail {

/// Largest chunk the CUB calls take: they are instantiated with 32-bit (unsigned) item counts,
/// which CUB's Onesweep handles in portions of 2^28 with 32-bit global offsets.
inline constexpr std::uint64_t max_sort_items = (std::uint64_t{1} << 32) - 1;

/// Normalizes (normalize = true) or denormalizes `n` keys in place; `d_keys` 16-byte aligned.
/// @throw gpusort::cuda_error when the launch fails
template <typename Word>
void transform_keys(Word* d_keys, std::uint64_t n, const gpusort::detail::key_codec<Word>& codec,
                    bool normalize, cudaStream_t stream);

/// Splits `n` records (16-byte aligned) into normalized keys and packed payloads.
/// @throw gpusort::cuda_error
template <typename Word, typename Value>
void split_records(const std::byte* d_records, Word* d_keys, Value* d_values, std::uint64_t n,
                   record_layout layout, const gpusort::detail::key_codec<Word>& codec,
                   cudaStream_t stream);

/// Reassembles `n` records (16-byte aligned output) from normalized keys and packed payloads.
/// @throw gpusort::cuda_error
template <typename Word, typename Value>
void merge_records(const Word* d_keys, const Value* d_values, std::byte* d_records,
                   std::uint64_t n, record_layout layout,
                   const gpusort::detail::key_codec<Word>& codec, cudaStream_t stream);

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

/// The record-kernel policies in use, for describe(): "transform 256x4, records 256x4".
std::string kernel_policies_description();

}  // namespace gpusort::gpu::detail
