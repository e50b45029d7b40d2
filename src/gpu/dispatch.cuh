// Dispatch layer of the record kernels shared by the chunk sorters (key transform, split, join):
// launch shapes and error checks. Host code outside the dispatch files (dispatch_kernels.cu,
// onesweep_*.cu, hrs/hrs_dispatch*.cu) never launches a kernel itself. Every function is
// asynchronous on `stream` unless noted.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/record_layout.cuh"
#include "gpusort/detail/key_codec.hpp"

namespace gpusort::gpu::detail {

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

/// Reassembles `n` records (16-byte aligned output) from normalized keys and packed payloads
/// (the inverse of split_records; "join", so that "merge" stays free for merging sorted runs).
/// @throw gpusort::cuda_error
template <typename Word, typename Value>
void join_records(const Word* d_keys, const Value* d_values, std::byte* d_records,
                  std::uint64_t n, record_layout layout,
                  const gpusort::detail::key_codec<Word>& codec, cudaStream_t stream);

/// The record-kernel policies in use, for describe(): "transform 256x4, records 256x4".
std::string kernel_policies_description();

}  // namespace gpusort::gpu::detail
