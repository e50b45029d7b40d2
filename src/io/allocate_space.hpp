// Preallocating an output while the filesystem may still be freeing space. A sort that
// replaced a large file hands the old one to another process to free (release_in_background),
// and the kernel may still be returning its blocks when the next sort, a moment later,
// preallocates its own output: on a disk that holds both only one after the other, that
// allocation would fail for a few seconds. An allocation that fails for lack of space is
// retried while the free space keeps growing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

namespace gpusort::io {

/// How allocate_space() allocates and watches the free space; tests replace both.
struct space_watch {
  /// posix_fallocate's result: 0, or an errno value.
  std::function<int()> allocate;
  /// Bytes free on the filesystem now; 0 when unknown, which never grows, so that the
  /// allocation fails once `patience` has passed.
  std::function<std::uint64_t()> free_bytes;
  /// Between two looks at the free space.
  std::chrono::milliseconds poll{50};
  /// Give up once the free space has not grown for this long.
  std::chrono::milliseconds patience{2000};
};

/// Calls watch.allocate(); on ENOSPC, waits while watch.free_bytes() grows and tries again
/// each time it has grown. Returns the last result: 0, ENOSPC once the free space stopped
/// growing for `patience`, or another errno value at once.
int allocate_space(const space_watch& watch);

/// posix_fallocate(fd, 0, bytes) through allocate_space(), watching fd's filesystem.
int allocate_file(int fd, std::uint64_t bytes);

}  // namespace gpusort::io
