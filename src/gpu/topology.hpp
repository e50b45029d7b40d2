// The GPUs of a sort as the host sees them: name, memory, PCI bus, NUMA node, and which pairs
// can reach each other's memory directly (peer to peer). Plain C++ (no CUDA types), so that
// the plan, --verbose and a CPU-only build use it; probe_topology itself needs CUDA.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpusort::gpu {

/// NUMA node of a device the kernel does not place on one (or that sysfs does not show).
inline constexpr int unknown_numa_node = -1;

struct gpu_device_facts {
  int id = 0;                 ///< CUDA device ordinal (as CUDA_VISIBLE_DEVICES numbers them)
  std::string name;
  std::uint64_t total_bytes = 0;
  std::string pci_bus_id;     ///< "0000:1b:00.0", lower case as sysfs spells it
  int numa_node = unknown_numa_node;
};

struct gpu_topology {
  std::vector<gpu_device_facts> devices;  ///< in the order of the selection
  /// can_access[i * devices.size() + j]: devices[i] can read and write devices[j]'s memory
  /// directly (cudaDeviceCanAccessPeer); the diagonal is true.
  std::vector<bool> can_access;

  [[nodiscard]] bool peer(std::size_t from, std::size_t to) const {
    return can_access[from * devices.size() + to];
  }
  /// One line per GPU, then one line with the peer-access matrix (rows from, columns to),
  /// for --verbose; nothing without devices.
  [[nodiscard]] std::vector<std::string> describe() const;
};

/**
 * The NUMA node of the PCI device `pci_bus_id` ("0000:1B:00.0", any case) from
 * `<sysfs_root>/bus/pci/devices/<bus id>/numa_node`; unknown_numa_node when that file is
 * missing or unreadable, or holds -1 (no NUMA, or firmware that does not say). Never throws.
 */
[[nodiscard]] int numa_node_of(std::string_view pci_bus_id,
                               const std::filesystem::path& sysfs_root = "/sys") noexcept;

/// The NUMA node GPU `device` hangs off (its PCI bus id looked up in /sys), or
/// unknown_numa_node; never throws. Defined in CUDA builds only.
[[nodiscard]] int device_numa_node(int device) noexcept;

/**
 * Probes `devices` (CUDA ordinals, each at most once) once: properties, PCI bus, NUMA node and
 * peer access of every ordered pair. Creates no context on them (no cudaSetDevice, no memory
 * query), so probing GPUs that will not sort costs little. Defined in CUDA builds only.
 * @throw gpusort::cuda_error
 */
[[nodiscard]] gpu_topology probe_topology(std::span<const int> devices);

}  // namespace gpusort::gpu
