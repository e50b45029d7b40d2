// ordered_worker: tasks run in push order on one thread; a failure skips the rest and is
// rethrown by drain(); discard_pending() drops what has not started.
#include "core/ordered_worker.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gpusort::detail {
namespace {

TEST(OrderedWorker, RunsTasksInPushOrder) {
  std::vector<int> seen;
  ordered_worker worker;
  for (int i = 0; i < 100; ++i) worker.push([&seen, i] { seen.push_back(i); });
  worker.drain();
  ASSERT_EQ(seen.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i);
}

TEST(OrderedWorker, AFailureSkipsTheRestAndIsRethrown) {
  std::atomic<int> ran{0};
  ordered_worker worker;
  worker.push([&] { ++ran; });
  worker.push([] { throw std::runtime_error("boom"); });
  worker.push([&] { ++ran; });
  EXPECT_THROW(worker.drain(), std::runtime_error);
  EXPECT_EQ(ran.load(), 1);
}

TEST(OrderedWorker, DiscardPendingDropsWhatHasNotStarted) {
  std::promise<void> started;
  std::promise<void> release;
  std::shared_future<void> go = release.get_future().share();
  std::atomic<int> ran{0};
  {
    ordered_worker worker;
    worker.push([&] {
      started.set_value();
      go.wait();  // busy until the queue behind it is dropped
      ++ran;
    });
    for (int i = 0; i < 10; ++i) worker.push([&] { ++ran; });
    started.get_future().wait();
    worker.discard_pending();
    release.set_value();
  }  // joins: the running task finishes, the ten never start
  EXPECT_EQ(ran.load(), 1);
}

}  // namespace
}  // namespace gpusort::detail
