// probe_topology: what CUDA says about the selected GPUs and how they reach each other.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "gpu/cuda_check.cuh"
#include "gpu/run_former.hpp"
#include "gpu/topology.hpp"
#include "gpusort/error.hpp"

namespace gpusort::gpu {
namespace {

/// "0000:1b:00.0": cudaDeviceGetPCIBusId's answer, lower-cased as sysfs spells it.
std::string pci_bus_id_of(int device) {
  // 13 characters and a terminator by the CUDA documentation; room to spare for longer domains.
  constexpr int bus_id_capacity = 64;
  char id[bus_id_capacity] = {};
  GPUSORT_CUDA_TRY(cudaDeviceGetPCIBusId(id, bus_id_capacity, device));
  std::string s(id);
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

int device_numa_node(int device) noexcept {
  try {
    return numa_node_of(pci_bus_id_of(device));
  } catch (...) {
    return unknown_numa_node;
  }
}

gpu_topology probe_topology(std::span<const int> devices) {
  gpu_topology topology;
  topology.devices.reserve(devices.size());
  for (const int id : devices) {
    // Properties and bus ids come from the driver without a context on the device.
    const device_info info = describe_device(id);
    gpu_device_facts facts;
    facts.id = id;
    facts.name = info.name;
    facts.total_bytes = info.total_bytes;
    facts.pci_bus_id = pci_bus_id_of(id);
    facts.numa_node = numa_node_of(facts.pci_bus_id);
    topology.devices.push_back(std::move(facts));
  }
  const std::size_t n = devices.size();
  topology.can_access.assign(n * n, false);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      if (i == j) {
        topology.can_access[i * n + j] = true;
        continue;
      }
      int can = 0;
      GPUSORT_CUDA_TRY(cudaDeviceCanAccessPeer(&can, devices[i], devices[j]));
      topology.can_access[i * n + j] = can != 0;
    }
  return topology;
}

}  // namespace gpusort::gpu
