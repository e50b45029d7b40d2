// CUB Onesweep instantiations for key-only chunks (32- and 64-bit normalized keys).
#include "gpu/onesweep.cuh"

namespace gpusort::gpu::detail {

template std::size_t onesweep_keys_temp_bytes<std::uint32_t>(std::uint32_t);
template std::size_t onesweep_keys_temp_bytes<std::uint64_t>(std::uint32_t);
template bool onesweep_sort_keys<std::uint32_t>(void*, std::size_t, std::uint32_t*,
                                                std::uint32_t*, std::uint32_t, cudaStream_t);
template bool onesweep_sort_keys<std::uint64_t>(void*, std::size_t, std::uint64_t*,
                                                std::uint64_t*, std::uint32_t, cudaStream_t);

}  // namespace gpusort::gpu::detail
