// Launches of the record kernels (key transform, split, join) with the sm_90 policies, and
// their explicit instantiations for 32/64-bit keys and 32/64-bit payloads.
#include <algorithm>
#include <sstream>

#include "gpu/cuda_check.cuh"
#include "gpu/dispatch.cuh"
#include "gpu/record_kernels.cuh"
#include "gpu/tuning.cuh"

namespace gpusort::gpu::detail {
namespace {

using policies = sm90_policies;

/// Enough blocks to cover `tiles`, capped so that huge chunks loop inside the kernels instead
/// of launching millions of short-lived blocks.
unsigned grid_for(std::uint64_t tiles) {
  constexpr std::uint64_t max_blocks = 1u << 20;
  return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min(tiles, max_blocks)));
}

}  // namespace

template <typename Word>
void transform_keys(Word* d_keys, std::uint64_t n, const gpusort::detail::key_codec<Word>& codec,
                    bool normalize, cudaStream_t stream) {
  if (n == 0) return;
  constexpr kernel_policy p = policies::transform;
  const std::uint64_t vectors = n * sizeof(Word) / 16;
  const unsigned grid = grid_for((vectors + p.tile_items() - 1) / p.tile_items());
  if (normalize)
    transform_keys_kernel<Word, true, p.block_threads, p.items_per_thread>
        <<<grid, p.block_threads, 0, stream>>>(d_keys, n, codec);
  else
    transform_keys_kernel<Word, false, p.block_threads, p.items_per_thread>
        <<<grid, p.block_threads, 0, stream>>>(d_keys, n, codec);
  GPUSORT_CUDA_CHECK_LAUNCH();
}

template <typename Word, typename Value>
void split_records(const std::byte* d_records, Word* d_keys, Value* d_values, std::uint64_t n,
                   record_layout layout, const gpusort::detail::key_codec<Word>& codec,
                   cudaStream_t stream) {
  if (n == 0) return;
  constexpr kernel_policy p = policies::records;
  const unsigned grid = grid_for((n + p.tile_items() - 1) / p.tile_items());
  split_records_kernel<Word, Value, p.block_threads, p.items_per_thread>
      <<<grid, p.block_threads, 0, stream>>>(d_records, d_keys, d_values, n, layout, codec);
  GPUSORT_CUDA_CHECK_LAUNCH();
}

template <typename Word, typename Value>
void join_records(const Word* d_keys, const Value* d_values, std::byte* d_records,
                  std::uint64_t n, record_layout layout,
                  const gpusort::detail::key_codec<Word>& codec, cudaStream_t stream) {
  if (n == 0) return;
  constexpr kernel_policy p = policies::records;
  const unsigned grid = grid_for((n + p.tile_items() - 1) / p.tile_items());
  join_records_kernel<Word, Value, p.block_threads, p.items_per_thread>
      <<<grid, p.block_threads, 0, stream>>>(d_keys, d_values, d_records, n, layout, codec);
  GPUSORT_CUDA_CHECK_LAUNCH();
}

std::string kernel_policies_description() {
  std::ostringstream os;
  os << "transform " << policies::transform << ", records " << policies::records;
  return os.str();
}

template void transform_keys<std::uint32_t>(std::uint32_t*, std::uint64_t,
                                            const gpusort::detail::key_codec<std::uint32_t>&, bool,
                                            cudaStream_t);
template void transform_keys<std::uint64_t>(std::uint64_t*, std::uint64_t,
                                            const gpusort::detail::key_codec<std::uint64_t>&, bool,
                                            cudaStream_t);

#define GPUSORT_INSTANTIATE_RECORDS(WORD, VALUE)                                                 \
  template void split_records<WORD, VALUE>(const std::byte*, WORD*, VALUE*, std::uint64_t,       \
                                           record_layout,                                        \
                                           const gpusort::detail::key_codec<WORD>&, cudaStream_t); \
  template void join_records<WORD, VALUE>(const WORD*, const VALUE*, std::byte*, std::uint64_t,  \
                                          record_layout,                                         \
                                          const gpusort::detail::key_codec<WORD>&, cudaStream_t);
GPUSORT_INSTANTIATE_RECORDS(std::uint32_t, std::uint32_t)
GPUSORT_INSTANTIATE_RECORDS(std::uint32_t, std::uint64_t)
GPUSORT_INSTANTIATE_RECORDS(std::uint64_t, std::uint32_t)
GPUSORT_INSTANTIATE_RECORDS(std::uint64_t, std::uint64_t)
#undef GPUSORT_INSTANTIATE_RECORDS

}  // namespace gpusort::gpu::detail
