// The host side of gpu_topology: NUMA nodes from sysfs and the --verbose lines. Built into
// every build (no CUDA), so the plan and its tests use it without a GPU.
#include <algorithm>
#include <cctype>
#include <fstream>

#include "core/parse_size.hpp"
#include "gpu/topology.hpp"

namespace gpusort::gpu {

int numa_node_of(std::string_view pci_bus_id, const std::filesystem::path& sysfs_root) noexcept {
  try {
    // CUDA spells bus ids in upper case, sysfs in lower case.
    std::string id(pci_bus_id);
    std::transform(id.begin(), id.end(), id.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (id.empty() || id.find('/') != std::string::npos) return unknown_numa_node;
    std::ifstream in(sysfs_root / "bus" / "pci" / "devices" / id / "numa_node");
    int node = unknown_numa_node;
    if (!(in >> node) || node < 0) return unknown_numa_node;
    return node;
  } catch (...) {
    return unknown_numa_node;  // a path that cannot be built: unknown, as the contract says
  }
}

std::vector<std::string> gpu_topology::describe() const {
  std::vector<std::string> lines;
  if (devices.empty()) return lines;
  for (const gpu_device_facts& d : devices)
    lines.push_back("GPU " + std::to_string(d.id) + ": " + d.name + ", " +
                    format_bytes(d.total_bytes) + ", PCI " +
                    (d.pci_bus_id.empty() ? std::string("unknown") : d.pci_bus_id) +
                    ", NUMA node " +
                    (d.numa_node == unknown_numa_node ? std::string("unknown")
                                                      : std::to_string(d.numa_node)));
  // "peer access (row from, column to) 0 1: 0 [- y] 1 [y -]"
  std::string matrix = "peer access (row from, column to)";
  // Appended piece by piece: `" " + std::to_string(id)` trips GCC 12's -Wrestrict.
  for (const gpu_device_facts& d : devices) matrix.append(" ").append(std::to_string(d.id));
  matrix += ":";
  for (std::size_t i = 0; i < devices.size(); ++i) {
    matrix.append(" ").append(std::to_string(devices[i].id)).append(" [");
    for (std::size_t j = 0; j < devices.size(); ++j) {
      if (j != 0) matrix += ' ';
      matrix += i == j ? '-' : peer(i, j) ? 'y' : 'n';
    }
    matrix += "]";
  }
  lines.push_back(std::move(matrix));
  return lines;
}

}  // namespace gpusort::gpu
