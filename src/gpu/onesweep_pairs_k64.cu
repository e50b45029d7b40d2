// CUB Onesweep instantiations for 64-bit normalized keys with 32- or 64-bit packed payloads.
#include "gpu/onesweep.cuh"

namespace gpusort::gpu::detail {

template std::size_t onesweep_pairs_temp_bytes<std::uint64_t, std::uint32_t>(std::uint32_t);
template std::size_t onesweep_pairs_temp_bytes<std::uint64_t, std::uint64_t>(std::uint32_t);
template bool onesweep_sort_pairs<std::uint64_t, std::uint32_t>(
    void*, std::size_t, std::uint64_t*, std::uint64_t*, std::uint32_t*, std::uint32_t*,
    std::uint32_t, cudaStream_t);
template bool onesweep_sort_pairs<std::uint64_t, std::uint64_t>(
    void*, std::size_t, std::uint64_t*, std::uint64_t*, std::uint64_t*, std::uint64_t*,
    std::uint32_t, cudaStream_t);

}  // namespace gpusort::gpu::detail
