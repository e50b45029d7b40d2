// Async-signal-safe registry of temporary paths, unlinked by the handler before re-raising.
#include "io/signal_cleanup.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>

namespace gpusort::io {
namespace {

constexpr std::size_t max_paths = 64;
constexpr std::size_t max_path_len = 4096;

struct slot {
  std::atomic<bool> used{false};
  char path[max_path_len];
};

// Process-wide by necessity (see the header).
std::array<slot, max_paths> g_slots;
std::mutex g_register_mutex;
std::once_flag g_installed;

void on_signal(int sig) {
  for (slot& s : g_slots) {
    if (s.used.load(std::memory_order_acquire)) ::unlink(s.path);
  }
  // Re-raise with the default action so the exit status tells the signal.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

}  // namespace

void install_signal_cleanup() {
  std::call_once(g_installed, [] {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    // A closed stdout pipe must not kill us silently halfway: writes then fail with EPIPE,
    // which is reported like any other write error.
    struct sigaction ign {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    ::sigaction(SIGPIPE, &ign, nullptr);
  });
}

int register_temp_path(const std::string& path) noexcept {
  if (path.size() + 1 > max_path_len) return -1;
  std::lock_guard lock(g_register_mutex);
  for (std::size_t i = 0; i < max_paths; ++i) {
    if (!g_slots[i].used.load(std::memory_order_relaxed)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].used.store(true, std::memory_order_release);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void unregister_temp_path(int index) noexcept {
  if (index < 0) return;
  g_slots[static_cast<std::size_t>(index)].used.store(false, std::memory_order_release);
}

}  // namespace gpusort::io
