// HRS instantiation: 32-bit normalized keys, no payload.
#include "gpu/hrs/hrs_dispatch_impl.cuh"

GPUSORT_HRS_INSTANTIATE(std::uint32_t, gpusort::gpu::hrs::no_value)
GPUSORT_HRS_INSTANTIATE_FIRST_ROUND(std::uint32_t)
