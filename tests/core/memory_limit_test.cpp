// cgroup memory limits read from a made-up cgroup tree.
#include "core/memory_limit.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "test_support.hpp"

namespace gpusort {
namespace {

void put(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

TEST(MemoryLimit, CgroupV2TakesTheSmallestLimitOfTheGroupAndItsAncestors) {
  test::scratch_dir dir;
  const std::filesystem::path root = dir.path();
  put(root / "batch/memory.max", "8589934592");
  put(root / "batch/job/memory.max", "max");
  put(root / "batch/job/memory.high", "6442450944");
  put(root / "batch/job/step/memory.max", "max");
  std::string source;
  EXPECT_EQ(cgroup_memory_limit("0::/batch/job/step\n", root.string(), &source),
            std::uint64_t{6} << 30);
  EXPECT_EQ(source, (root / "batch/job/memory.high").string());
  EXPECT_EQ(cgroup_memory_limit("0::/batch\n", root.string()), std::uint64_t{8} << 30);
}

TEST(MemoryLimit, NoLimitAnywhereIsZero) {
  test::scratch_dir dir;
  put(dir.path() / "a/memory.max", "max");
  EXPECT_EQ(cgroup_memory_limit("0::/a\n", dir.path().string()), 0u);
  EXPECT_EQ(cgroup_memory_limit("0::/\n", dir.path().string()), 0u);
  EXPECT_EQ(cgroup_memory_limit("", dir.path().string()), 0u);
  EXPECT_EQ(cgroup_memory_limit("garbage\n0:x\n", dir.path().string()), 0u);
}

TEST(MemoryLimit, CgroupV1MemoryControllerAndItsUnlimitedValue) {
  test::scratch_dir dir;
  const std::filesystem::path root = dir.path();
  put(root / "memory/jobs/memory.limit_in_bytes", "9223372036854771712");  // v1's "no limit"
  put(root / "memory/jobs/42/memory.limit_in_bytes", "4294967296");
  const std::string self = "9:cpu,cpuacct:/jobs/42\n4:memory:/jobs/42\n0::/\n";
  EXPECT_EQ(cgroup_memory_limit(self, root.string()), std::uint64_t{4} << 30);
  EXPECT_EQ(cgroup_memory_limit("4:memory:/jobs\n", root.string()), 0u);
}

TEST(MemoryLimit, ProbeIsAtMostThePhysicalMemory) {
  const memory_limit m = probe_memory_limit();
  EXPECT_GT(m.bytes, 0u);
  EXPECT_LE(m.bytes, m.physical_bytes);
  EXPECT_EQ(m.from_cgroup(), m.bytes < m.physical_bytes);
  EXPECT_FALSE(m.source.empty());
}

}  // namespace
}  // namespace gpusort
