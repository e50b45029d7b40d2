// early_exit: the parent waits on a pipe that the child writes one byte into, or closes by
// ending.
#include "cli/early_exit.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "io/signal_cleanup.hpp"

namespace gpusort::cli {
namespace {

/// Ends the waiting parent as `child` ended.
[[noreturn]] void end_as(pid_t child) {
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) ::_exit(2);
  }
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    // The same signal with its default action, so that the exit status tells it.
    const int sig = WTERMSIG(status);
    ::signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(sig);
  }
  ::_exit(2);
}

}  // namespace

early_exit::early_exit(bool enabled) {
  if (!enabled) return;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;
  const pid_t parent = ::getpid();
  // A signal that reached the parent before it could pass it on would end the parent alone,
  // and whoever waits for it could find the child still cleaning up: such signals wait.
  const sigset_t terminating = io::terminating_signal_set();
  sigset_t before;
  ::sigprocmask(SIG_BLOCK, &terminating, &before);
  const pid_t child = ::fork();
  if (child < 0) {  // no process to spare: sort here, and wait for everything
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (child == 0) {
    ::sigprocmask(SIG_SETMASK, &before, nullptr);
    ::close(fds[0]);
    // A parent killed by SIGKILL must not leave the sort going on: SIGTERM cleans up.
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != parent) ::_exit(2);
    notify_ = fds[1];
    return;
  }
  ::close(fds[1]);
  io::forward_terminating_signals(child);
  ::sigprocmask(SIG_SETMASK, &before, nullptr);
  char byte = 0;
  for (;;) {
    const ssize_t n = ::read(fds[0], &byte, 1);
    if (n == 1) ::_exit(0);
    if (n == 0 || errno != EINTR) end_as(child);
  }
}

early_exit::~early_exit() {
  if (notify_ >= 0) ::close(notify_);
}

void early_exit::committed() noexcept {
  if (notify_ < 0) return;
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    ::close(null);
  }
  // The parent's end must not take this process along.
  ::prctl(PR_SET_PDEATHSIG, 0);
  const char byte = 1;
  while (::write(notify_, &byte, 1) < 0 && errno == EINTR) {
  }
  ::close(notify_);
  notify_ = -1;
}

}  // namespace gpusort::cli
