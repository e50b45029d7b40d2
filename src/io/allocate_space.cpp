#include "io/allocate_space.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <thread>

namespace gpusort::io {

int allocate_space(const space_watch& watch) {
  int ret = watch.allocate();
  if (ret != ENOSPC) return ret;
  using clock = std::chrono::steady_clock;
  std::uint64_t seen = watch.free_bytes();
  clock::time_point grew = clock::now();
  while (clock::now() - grew < watch.patience) {
    std::this_thread::sleep_for(watch.poll);
    const std::uint64_t now = watch.free_bytes();
    if (now <= seen) continue;
    seen = now;
    grew = clock::now();
    ret = watch.allocate();
    if (ret != ENOSPC) return ret;
  }
  return ret;
}

int allocate_file(int fd, std::uint64_t bytes) {
  space_watch watch;
  watch.allocate = [fd, bytes] { return ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); };
  watch.free_bytes = [fd]() -> std::uint64_t {
    struct statvfs s {};
    if (::fstatvfs(fd, &s) != 0) return 0;
    return static_cast<std::uint64_t>(s.f_bavail) * s.f_frsize;
  };
  return allocate_space(watch);
}

}  // namespace gpusort::io
