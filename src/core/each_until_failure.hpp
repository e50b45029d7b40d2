// Work split among GPUs, one host thread each, where one GPU's failure makes the rest pointless:
// the first to fail stops the others, and its error, not theirs, reaches the caller.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <future>
#include <mutex>
#include <vector>

namespace gpusort::detail {

/// Runs task(i, stop) for every i in [0, n), each on a thread of its own, and waits for all.
/// The first task to throw sets `stop`, which the others check at their next step (they may
/// throw to end early); that first exception is rethrown. A single task runs on the calling
/// thread, its exception passing straight through.
template <class Task>
void each_until_failure(std::size_t n, Task task) {
  std::atomic<bool> stop{false};
  if (n == 1) {
    task(std::size_t{0}, static_cast<const std::atomic<bool>&>(stop));
    return;
  }
  std::mutex failure_mutex;
  std::exception_ptr failure;
  std::vector<std::future<void>> running;
  running.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    running.push_back(std::async(std::launch::async, [&, i] {
      try {
        task(i, static_cast<const std::atomic<bool>&>(stop));
      } catch (...) {
        std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        stop = true;
      }
    }));
  for (std::future<void>& r : running) r.get();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace gpusort::detail
