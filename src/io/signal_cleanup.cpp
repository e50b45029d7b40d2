// Async-signal-safe registries of temporary paths and input mappings, and the handlers that use
// them before the signal's default action.
#include "io/signal_cleanup.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace gpusort::io {
namespace {

constexpr std::size_t max_paths = 64;
constexpr std::size_t max_path_len = 4096;

struct path_slot {
  std::atomic<bool> used{false};
  char path[max_path_len];
};

struct mapping_slot {
  std::atomic<bool> used{false};
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  char path[max_path_len];
};

// Process-wide by necessity (see the header).
std::array<path_slot, max_paths> g_paths;
std::array<mapping_slot, 8> g_mappings;
std::mutex g_register_mutex;
std::once_flag g_installed;
std::atomic<bool> g_sigpipe_ignored_at_start{false};
std::atomic<pid_t> g_forward_to{0};

/// Signals whose default action ends the process: the named temporaries must go first.
constexpr int terminating_signals[] = {SIGHUP,  SIGINT,    SIGQUIT, SIGTERM, SIGUSR1,
                                       SIGUSR2, SIGALRM,   SIGVTALRM, SIGPROF, SIGXCPU,
                                       SIGIO,   SIGPWR,    SIGSTKFLT};
/// Crashes: cleaned up too, then the default action (a core dump where enabled).
constexpr int crash_signals[] = {SIGSEGV, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};

void unlink_registered() noexcept {
  for (path_slot& s : g_paths) {
    if (s.used.load(std::memory_order_acquire)) ::unlink(s.path);
  }
}

void write_stderr(const char* text) noexcept {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

[[noreturn]] void die_by(int sig) noexcept {
  // Re-raise with the default action so the exit status tells the signal.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
  ::_exit(128 + sig);  // a signal whose default action is to continue or be ignored
}

void on_signal(int sig) {
  unlink_registered();
  die_by(sig);
}

void on_sigbus(int sig, siginfo_t* info, void*) {
  unlink_registered();
  const auto addr = reinterpret_cast<std::uintptr_t>(info != nullptr ? info->si_addr : nullptr);
  for (mapping_slot& m : g_mappings) {
    if (m.used.load(std::memory_order_acquire) && addr >= m.begin && addr < m.end) {
      write_stderr("gpusort: error: read ");
      write_stderr(m.path);
      write_stderr(": the input file shrank while it was being sorted (SIGBUS)\n");
      ::_exit(2);
    }
  }
  die_by(sig);
}

/// True when `sig` was set to be ignored by whoever started us (nohup, a shell's trap '').
bool ignored_at_start(int sig) {
  struct sigaction old {};
  return ::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN;
}

void set_handler(int sig, void (*handler)(int)) {
  if (ignored_at_start(sig)) return;
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  ::sigaction(sig, &sa, nullptr);
}

void forward(int sig) {
  const pid_t child = g_forward_to.load();
  if (child > 0) ::kill(child, sig);
}

}  // namespace

void forward_terminating_signals(pid_t child) {
  g_forward_to.store(child);
  for (int sig : terminating_signals) set_handler(sig, forward);
}

sigset_t terminating_signal_set() noexcept {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : terminating_signals) sigaddset(&set, sig);
  return set;
}

void install_signal_cleanup() {
  std::call_once(g_installed, [] {
    for (int sig : terminating_signals) set_handler(sig, on_signal);
    for (int sig : crash_signals) set_handler(sig, on_signal);
    struct sigaction bus {};
    bus.sa_sigaction = on_sigbus;
    bus.sa_flags = SA_SIGINFO;
    sigemptyset(&bus.sa_mask);
    ::sigaction(SIGBUS, &bus, nullptr);
    // A file-size limit (ulimit -f) must fail the write with EFBIG, reported, not kill us
    // silently halfway; a closed stdout pipe likewise fails with EPIPE.
    g_sigpipe_ignored_at_start.store(ignored_at_start(SIGPIPE));
    set_handler(SIGXFSZ, SIG_IGN);
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    ::sigaction(SIGPIPE, &ign, nullptr);
  });
}

void end_quietly_on_broken_pipe() {
  if (g_sigpipe_ignored_at_start.load()) return;
  unlink_registered();
  die_by(SIGPIPE);
}

int register_temp_path(const std::string& path) noexcept {
  if (path.size() + 1 > max_path_len) return -1;
  std::lock_guard lock(g_register_mutex);
  for (std::size_t i = 0; i < g_paths.size(); ++i) {
    if (!g_paths[i].used.load(std::memory_order_relaxed)) {
      std::memcpy(g_paths[i].path, path.c_str(), path.size() + 1);
      g_paths[i].used.store(true, std::memory_order_release);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void unregister_temp_path(int slot) noexcept {
  if (slot < 0) return;
  g_paths[static_cast<std::size_t>(slot)].used.store(false, std::memory_order_release);
}

int register_input_mapping(const void* begin, std::size_t length,
                           const std::string& path) noexcept {
  std::lock_guard lock(g_register_mutex);
  for (std::size_t i = 0; i < g_mappings.size(); ++i) {
    mapping_slot& m = g_mappings[i];
    if (!m.used.load(std::memory_order_relaxed)) {
      m.begin = reinterpret_cast<std::uintptr_t>(begin);
      m.end = m.begin + length;
      const std::size_t n = std::min(path.size(), max_path_len - 1);
      std::memcpy(m.path, path.data(), n);
      m.path[n] = '\0';
      m.used.store(true, std::memory_order_release);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void unregister_input_mapping(int slot) noexcept {
  if (slot < 0) return;
  g_mappings[static_cast<std::size_t>(slot)].used.store(false, std::memory_order_release);
}

}  // namespace gpusort::io
