// A thread that runs tasks one after another in the order they were pushed: writes to a stream
// output, which must arrive in order, without blocking the thread that produces them.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace gpusort::detail {

/// Runs tasks in push order on its own thread; the first failure is kept and rethrown by
/// drain(), later tasks are skipped.
class ordered_worker {
 public:
  ordered_worker() : thread_([this] { run(); }) {}
  ~ordered_worker() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  ordered_worker(const ordered_worker&) = delete;
  ordered_worker& operator=(const ordered_worker&) = delete;

  void push(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_all();
  }
  /// Waits until every task ran; rethrows the first failure.
  void drain() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return tasks_.empty() && !busy_; });
    if (error_) std::rethrow_exception(error_);
  }
  /// Drops the tasks not yet started (the one running finishes).
  void discard_pending() {
    std::lock_guard lock(mutex_);
    tasks_.clear();
  }

  /// The first failure so far, if any.
  [[nodiscard]] std::exception_ptr error() {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !tasks_.empty() || stopping_; });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
        busy_ = true;
      }
      try {
        if (!error()) task();
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        busy_ = false;
      }
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;  // last: started after the members it uses exist
};

}  // namespace gpusort::detail
