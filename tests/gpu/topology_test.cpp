// Tests for gpu/topology.hpp: NUMA nodes from a sysfs tree, the --verbose lines (no GPU
// needed), and probe_topology on the GPUs present.
#include "gpu/topology.hpp"

#include "gpu/device_memory.cuh"
#include "gpu/peer_access.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <regex>
#include <vector>

#include "gpu_test_support.hpp"

namespace gpusort::gpu {
namespace {

/// A fake sysfs with one PCI device whose numa_node file holds `content`.
void write_numa_node(const std::filesystem::path& root, const std::string& bus_id,
                     const std::string& content) {
  const std::filesystem::path dir = root / "bus" / "pci" / "devices" / bus_id;
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "numa_node") << content;
}

TEST(topology, numa_node_from_sysfs) {
  const test::scratch_dir dir;
  write_numa_node(dir.path(), "0000:1b:00.0", "1\n");
  write_numa_node(dir.path(), "0000:2c:00.0", "-1\n");
  write_numa_node(dir.path(), "0000:3d:00.0", "garbage\n");
  // CUDA spells bus ids in upper case; sysfs in lower case.
  EXPECT_EQ(numa_node_of("0000:1B:00.0", dir.path()), 1);
  EXPECT_EQ(numa_node_of("0000:1b:00.0", dir.path()), 1);
  EXPECT_EQ(numa_node_of("0000:2c:00.0", dir.path()), unknown_numa_node);
  EXPECT_EQ(numa_node_of("0000:3d:00.0", dir.path()), unknown_numa_node);
  EXPECT_EQ(numa_node_of("0000:4e:00.0", dir.path()), unknown_numa_node);
  EXPECT_EQ(numa_node_of("", dir.path()), unknown_numa_node);
  EXPECT_EQ(numa_node_of("../../etc", dir.path()), unknown_numa_node);
}

TEST(topology, describe_has_a_line_per_gpu_and_a_peer_matrix) {
  gpu_topology t;
  EXPECT_TRUE(t.describe().empty());
  t.devices = {{0, "GPU A", std::uint64_t{80} << 30, "0000:1b:00.0", 0},
               {3, "GPU B", std::uint64_t{80} << 30, "", unknown_numa_node}};
  t.can_access = {true, true, false, true};
  const std::vector<std::string> lines = t.describe();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "GPU 0: GPU A, 80 GiB, PCI 0000:1b:00.0, NUMA node 0");
  EXPECT_EQ(lines[1], "GPU 3: GPU B, 80 GiB, PCI unknown, NUMA node unknown");
  EXPECT_EQ(lines[2], "peer access (row from, column to) 0 3: 0 [- y] 3 [n -]");
  EXPECT_TRUE(t.peer(0, 1));
  EXPECT_FALSE(t.peer(1, 0));
}

class topology_test : public test::gpu_test {};

TEST_F(topology_test, probe_every_visible_gpu) {
  std::vector<int> ids(static_cast<std::size_t>(device_count()));
  std::iota(ids.begin(), ids.end(), 0);
  const gpu_topology t = probe_topology(ids);
  ASSERT_EQ(t.devices.size(), ids.size());
  ASSERT_EQ(t.can_access.size(), ids.size() * ids.size());
  const std::regex bus_id("[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-9a-f]");
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(t.devices[i].id, ids[i]);
    EXPECT_FALSE(t.devices[i].name.empty());
    EXPECT_GT(t.devices[i].total_bytes, 0u);
    EXPECT_TRUE(std::regex_match(t.devices[i].pci_bus_id, bus_id)) << t.devices[i].pci_bus_id;
    EXPECT_GE(t.devices[i].numa_node, unknown_numa_node);
    EXPECT_TRUE(t.peer(i, i));
  }
  for (const std::string& line : t.describe()) std::cout << line << "\n";
}

TEST_F(topology_test, probe_keeps_the_selection_order) {
  const int count = device_count();
  if (count < 2) GTEST_SKIP() << "one CUDA device: the order needs two";
  const std::vector<int> ids{1, 0};
  const gpu_topology t = probe_topology(ids);
  EXPECT_EQ(t.devices[0].id, 1);
  EXPECT_EQ(t.devices[1].id, 0);
  EXPECT_NE(t.devices[0].pci_bus_id, t.devices[1].pci_bus_id);
}

TEST_F(topology_test, peer_access_enables_once_and_again_and_copies) {
  const int count = device_count();
  if (count < 2) GTEST_SKIP() << "one CUDA device: peer access needs two";
  const std::vector<int> ids{0, 1};
  const gpu_topology t = probe_topology(ids);
  if (!t.peer(0, 1)) GTEST_SKIP() << "devices 0 and 1 cannot reach each other directly";
  GPUSORT_CUDA_TRY(cudaSetDevice(1));
  enable_peer_access(0, 1);
  enable_peer_access(0, 1);  // again: not an error
  int current = -1;
  GPUSORT_CUDA_TRY(cudaGetDevice(&current));
  EXPECT_EQ(current, 1) << "enable_peer_access changed the current device";
  constexpr std::size_t bytes = 1 << 20;
  device_buffer from(bytes, 0);
  device_buffer to(bytes, 1);
  stream s(0);
  GPUSORT_CUDA_TRY(cudaMemsetAsync(from.data(), 0x5a, bytes, s.get()));
  GPUSORT_CUDA_TRY(cudaMemcpyPeerAsync(to.data(), 1, from.data(), 0, bytes, s.get()));
  s.synchronize();
  std::vector<unsigned char> host(bytes);
  GPUSORT_CUDA_TRY(cudaMemcpy(host.data(), to.data(), bytes, cudaMemcpyDeviceToHost));
  EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](unsigned char c) { return c == 0x5a; }));
}

}  // namespace
}  // namespace gpusort::gpu
