#include "io/release_in_background.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace gpusort::io {
namespace {

/// Closes the descriptors first..last (last: ~0u for all above first). Async-signal-safe.
void close_between(unsigned first, unsigned last, int limit) noexcept {
  if (first > last) return;
  if (::close_range(first, last, 0) == 0) return;
  for (unsigned fd = first; fd <= last && fd < static_cast<unsigned>(limit); ++fd)
    ::close(static_cast<int>(fd));
}

/// Closes every descriptor but `keep_a` and `keep_b` (limit: the highest one there can be,
/// where close_range is missing). Async-signal-safe.
void close_all_but(int keep_a, int keep_b, int limit) noexcept {
  const auto low = static_cast<unsigned>(keep_a < keep_b ? keep_a : keep_b);
  const auto high = static_cast<unsigned>(keep_a < keep_b ? keep_b : keep_a);
  if (low > 0) close_between(0, low - 1, limit);
  close_between(low + 1, high - 1, limit);
  close_between(high + 1, ~0u, limit);
}

/// The grandchild: the file's last holder once the caller lets go. Only async-signal-safe
/// calls: it is a copy of a process that may run many threads.
[[noreturn]] void hold_until_let_go(int file, int gate, int fd_limit) noexcept {
  ::setsid();  // out of the caller's process group: a signal to the group does not reach it
  struct sigaction plain {};
  plain.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s)
    if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &plain, nullptr);  // no cleanup of ours
  close_all_but(file, gate, fd_limit);
  char byte = 0;
  while (::read(gate, &byte, 1) < 0 && errno == EINTR) {
  }
  ::_exit(0);  // closes `file`: the kernel frees it here
}

}  // namespace

void release_in_background(file_descriptor file) noexcept {
  if (!file) return;
  rlimit files{};
  const int fd_limit = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < (1u << 20)
                           ? static_cast<int>(files.rlim_cur)
                           : 1 << 20;
  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0) return;  // `file` closes here
  const pid_t child = ::fork();
  if (child == 0) {
    if (::fork() == 0) hold_until_let_go(file.get(), gate[0], fd_limit);
    ::_exit(0);
  }
  ::close(gate[0]);
  if (child > 0) {
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
  }
  // Our copy goes first, so that the grandchild's is the last; then its wait ends.
  file.reset();
  ::close(gate[1]);
}

}  // namespace gpusort::io
