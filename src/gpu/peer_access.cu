// enable_peer_access: checked, idempotent cudaDeviceEnablePeerAccess.
#include <cuda_runtime_api.h>

#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.cuh"
#include "gpu/peer_access.hpp"

namespace gpusort::gpu {

void enable_peer_access(int device, int peer) {
  device_guard guard(device);
  const cudaError_t status = cudaDeviceEnablePeerAccess(peer, 0);
  if (status == cudaErrorPeerAccessAlreadyEnabled) {
    // Not sticky, but left as the last error: clear it so that a later check does not see it.
    static_cast<void>(cudaGetLastError());
    return;
  }
  GPUSORT_CUDA_TRY(status);
}

}  // namespace gpusort::gpu
