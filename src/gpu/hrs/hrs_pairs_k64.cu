// HRS instantiations: 64-bit normalized keys with 32- or 64-bit packed payloads.
#include "gpu/hrs/hrs_dispatch_impl.cuh"

GPUSORT_HRS_INSTANTIATE(std::uint64_t, std::uint32_t)
GPUSORT_HRS_INSTANTIATE(std::uint64_t, std::uint64_t)
