// Definitions of the CUB DeviceRadixSort (Onesweep) wrappers declared in onesweep_dispatch.cuh;
// included only by the onesweep_*.cu files, which instantiate them (split so that the heavy CUB
// instantiations compile in parallel).
#pragma once

#include <cub/device/device_radix_sort.cuh>

#include "gpu/cuda_check.cuh"
#include "gpu/onesweep_dispatch.cuh"

namespace gpusort::gpu::detail {

template <typename Word>
std::size_t onesweep_keys_temp_bytes(std::uint32_t n) {
  std::size_t bytes = 0;
  cub::DoubleBuffer<Word> keys(nullptr, nullptr);
  GPUSORT_CUDA_TRY(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys, n));
  return bytes;
}

template <typename Word, typename Value>
std::size_t onesweep_pairs_temp_bytes(std::uint32_t n) {
  std::size_t bytes = 0;
  cub::DoubleBuffer<Word> keys(nullptr, nullptr);
  cub::DoubleBuffer<Value> values(nullptr, nullptr);
  GPUSORT_CUDA_TRY(cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, values, n));
  return bytes;
}

template <typename Word>
bool onesweep_sort_keys(void* d_temp, std::size_t temp_bytes, Word* d_current, Word* d_alternate,
                        std::uint32_t n, cudaStream_t stream) {
  cub::DoubleBuffer<Word> keys(d_current, d_alternate);
  // CUB checks temp_bytes against what it needs and returns cudaErrorInvalidValue if short.
  GPUSORT_CUDA_TRY(cub::DeviceRadixSort::SortKeys(d_temp, temp_bytes, keys, n, 0,
                                                  int(sizeof(Word) * 8), stream));
  // The selector is updated on the host as the passes are enqueued: valid right away.
  return keys.selector != 0;
}

template <typename Word, typename Value>
bool onesweep_sort_pairs(void* d_temp, std::size_t temp_bytes, Word* d_keys_current,
                         Word* d_keys_alternate, Value* d_values_current,
                         Value* d_values_alternate, std::uint32_t n, cudaStream_t stream) {
  cub::DoubleBuffer<Word> keys(d_keys_current, d_keys_alternate);
  cub::DoubleBuffer<Value> values(d_values_current, d_values_alternate);
  GPUSORT_CUDA_TRY(cub::DeviceRadixSort::SortPairs(d_temp, temp_bytes, keys, values, n, 0,
                                                   int(sizeof(Word) * 8), stream));
  GPUSORT_EXPECTS(keys.selector == values.selector,
                  "cub::DeviceRadixSort::SortPairs: keys and values ended in different buffers");
  return keys.selector != 0;
}

}  // namespace gpusort::gpu::detail
