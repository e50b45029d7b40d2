#include "io/release_in_background.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <vector>

namespace gpusort::io {
namespace {

/// Closes the descriptors first..last (last: ~0u for all above first). Async-signal-safe.
void close_between(unsigned first, unsigned last, int limit) noexcept {
  if (first > last) return;
  if (::close_range(first, last, 0) == 0) return;
  for (unsigned fd = first; fd <= last && fd < static_cast<unsigned>(limit); ++fd)
    ::close(static_cast<int>(fd));
}

/// Closes every descriptor but those of `keep` (sorted ascending; limit: the highest one
/// there can be, where close_range is missing). Async-signal-safe.
void close_all_but(const int* keep, std::size_t count, int limit) noexcept {
  unsigned first = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const auto k = static_cast<unsigned>(keep[i]);
    if (k > first) close_between(first, k - 1, limit);
    first = k + 1;
  }
  close_between(first, ~0u, limit);
}

/// The grandchild: the files' last holder once the caller lets go. Only async-signal-safe
/// calls: it is a copy of a process that may run many threads. `keep`: the files and the
/// gate, sorted.
[[noreturn]] void hold_until_let_go(const int* keep, std::size_t count, int gate,
                                    int fd_limit) noexcept {
  ::setsid();  // out of the caller's process group: a signal to the group does not reach it
  struct sigaction plain {};
  plain.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s)
    if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &plain, nullptr);  // no cleanup of ours
  close_all_but(keep, count, fd_limit);
  char byte = 0;
  while (::read(gate, &byte, 1) < 0 && errno == EINTR) {
  }
  ::_exit(0);  // closes the files: the kernel frees them here
}

}  // namespace

void release_in_background(std::vector<file_descriptor> files) noexcept {
  try {
    std::erase_if(files, [](const file_descriptor& f) { return !f; });
    if (files.empty()) return;
    rlimit limit{};
    const int fd_limit = ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < (1u << 20)
                             ? static_cast<int>(limit.rlim_cur)
                             : 1 << 20;
    int gate[2];
    if (::pipe2(gate, O_CLOEXEC) != 0) return;  // the files close here
    // What the grandchild keeps, prepared here: after fork it may not allocate.
    std::vector<int> keep;
    keep.reserve(files.size() + 1);
    for (const file_descriptor& f : files) keep.push_back(f.get());
    keep.push_back(gate[0]);
    std::sort(keep.begin(), keep.end());
    const pid_t child = ::fork();
    if (child == 0) {
      if (::fork() == 0) hold_until_let_go(keep.data(), keep.size(), gate[0], fd_limit);
      ::_exit(0);
    }
    ::close(gate[0]);
    if (child > 0) {
      int status = 0;
      while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
    }
    // Our copies go first, so that the grandchild's are the last; then its wait ends.
    files.clear();
    ::close(gate[1]);
  } catch (...) {  // no memory for the list: the files close here, as they would have
  }
}

void release_in_background(file_descriptor file) noexcept {
  std::vector<file_descriptor> files;
  try {
    files.push_back(std::move(file));
  } catch (...) {
    return;
  }
  release_in_background(std::move(files));
}

}  // namespace gpusort::io
