// The non-template part of the HRS dispatch layer: device queries and the counters read-back.
#include "gpu/cuda_check.cuh"
#include "gpu/hrs/hrs_dispatch.cuh"

namespace gpusort::gpu::hrs {

int compute_capability(int device) {
  int major = 0;
  int minor = 0;
  GPUSORT_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  GPUSORT_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major * 10 + minor;
}

counters read_counters(const std::byte* d_workspace, cudaStream_t stream) {
  // The counters sit at the start of the workspace (make_layout puts them first).
  counters c{};
  GPUSORT_CUDA_TRY(cudaMemcpyAsync(&c, d_workspace, sizeof c, cudaMemcpyDeviceToHost, stream));
  GPUSORT_CUDA_TRY(cudaStreamSynchronize(stream));
  return c;
}

}  // namespace gpusort::gpu::hrs
