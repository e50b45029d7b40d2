// Reading cgroup memory limits: a sort run under `systemd-run -p MemoryMax=`, in a container,
// or in a batch job's cgroup must size its buffers from that limit, not from the RAM: the
// kernel counts our page cache and page-locked memory against it and kills us past it.
#include "core/memory_limit.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/parse_size.hpp"

namespace gpusort {
namespace {

/// The first number in `path`; 0 for "max", a missing file or anything unreadable.
std::uint64_t read_limit_file(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return 0;
  try {
    std::size_t used = 0;
    const unsigned long long v = std::stoull(word, &used);
    return used == word.size() ? static_cast<std::uint64_t>(v) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

/// Keeps the smaller of `best` and a limit `v` read from `path` (0 means none).
void take_limit(std::uint64_t v, const std::string& path, std::uint64_t& best,
                std::string* source) {
  // cgroup v1 reports "no limit" as a huge page-rounded number (2^63 - 4096).
  if (v == 0 || v >= (std::uint64_t{1} << 62)) return;
  if (best == 0 || v < best) {
    best = v;
    if (source != nullptr) *source = path;
  }
}

/// `group` ("/a/b") and each ancestor up to the root, deepest first.
void for_each_ancestor(std::string group, const auto& visit) {
  while (!group.empty() && group.back() == '/') group.pop_back();
  for (;;) {
    visit(group);
    const std::size_t slash = group.rfind('/');
    if (slash == std::string::npos) return;
    group.resize(slash);
  }
}

}  // namespace

std::uint64_t cgroup_memory_limit(const std::string& proc_self_cgroup,
                                  const std::string& cgroup_root, std::string* source) {
  std::uint64_t best = 0;
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // "hierarchy-id:controllers:path"; v2 is "0::/path".
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string group = line.substr(second + 1);
    if (group.empty() || group[0] != '/') continue;
    if (controllers.empty()) {  // v2 (unified): the limit may sit on any ancestor
      for (const std::string& root : {cgroup_root, cgroup_root + "/unified"}) {
        for_each_ancestor(group, [&](const std::string& g) {
          for (const char* file : {"/memory.max", "/memory.high"}) {
            const std::string path = root + g + file;
            take_limit(read_limit_file(path), path, best, source);
          }
        });
      }
    } else {
      std::istringstream names(controllers);
      for (std::string name; std::getline(names, name, ',');) {
        if (name != "memory") continue;
        for_each_ancestor(group, [&](const std::string& g) {
          const std::string path = cgroup_root + "/memory" + g + "/memory.limit_in_bytes";
          take_limit(read_limit_file(path), path, best, source);
        });
      }
    }
  }
  return best;
}

memory_limit probe_memory_limit() {
  memory_limit m;
  m.physical_bytes = physical_memory_bytes();
  m.bytes = m.physical_bytes;
  m.source = "physical memory";
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  std::string source;
  const std::uint64_t cgroup = cgroup_memory_limit(text.str(), "/sys/fs/cgroup", &source);
  if (cgroup != 0 && cgroup < m.bytes) {
    m.bytes = cgroup;
    m.source = source;
  }
  return m;
}

}  // namespace gpusort
