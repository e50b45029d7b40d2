// HRS instantiation: 64-bit normalized keys, no payload.
#include "gpu/hrs/hrs_dispatch_impl.cuh"

GPUSORT_HRS_INSTANTIATE(std::uint64_t, gpusort::gpu::hrs::no_value)
GPUSORT_HRS_INSTANTIATE_FIRST_ROUND(std::uint64_t)
