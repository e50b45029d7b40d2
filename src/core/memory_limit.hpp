// How much memory this process may use: the machine's RAM, or less where a cgroup's memory
// limit (page cache and page-locked memory included) says so.
#pragma once

#include <cstdint>
#include <string>

namespace gpusort {

struct memory_limit {
  std::uint64_t bytes = 0;  ///< the smaller of the RAM and every enclosing cgroup's limit
  std::uint64_t physical_bytes = 0;
  /// Where `bytes` comes from: "physical memory", or the cgroup file that set it.
  std::string source;
  [[nodiscard]] bool from_cgroup() const noexcept { return bytes < physical_bytes; }
};

/// The smallest memory limit among the cgroups that hold this process (cgroup v2: memory.max
/// and memory.high of its group and every ancestor; v1: memory.limit_in_bytes), read from
/// `cgroup_root` (normally /sys/fs/cgroup) with the groups named by `proc_self_cgroup` (the
/// contents of /proc/self/cgroup); 0 when none is set or nothing can be read.
[[nodiscard]] std::uint64_t cgroup_memory_limit(const std::string& proc_self_cgroup,
                                                const std::string& cgroup_root,
                                                std::string* source = nullptr);

/// This process's memory limit, read once per call (no caching: no global state).
[[nodiscard]] memory_limit probe_memory_limit();

}  // namespace gpusort
