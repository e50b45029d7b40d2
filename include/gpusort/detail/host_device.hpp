// GPUSORT_HD marks functions that are compiled for both the host and the device.
#pragma once

#if defined(__CUDACC__)
#define GPUSORT_HD __host__ __device__ __forceinline__
#else
#define GPUSORT_HD inline
#endif
