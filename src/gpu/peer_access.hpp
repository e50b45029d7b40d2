// Peer access between two GPUs: one enabled once, so that copies and kernels on `device` reach
// `peer`'s memory directly (NVLink or PCIe) instead of through host memory.
#pragma once

namespace gpusort::gpu {

/**
 * Lets `device` access `peer`'s memory (cudaDeviceEnablePeerAccess with `device` current; the
 * caller's current device is kept). Enabling it again is not an error. The reverse direction
 * is separate. Only for pairs that gpu_topology::peer() reports.
 * @throw gpusort::cuda_error, e.g. cudaErrorPeerAccessUnsupported
 */
void enable_peer_access(int device, int peer);

}  // namespace gpusort::gpu
