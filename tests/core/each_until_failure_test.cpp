// detail::each_until_failure: every task runs; the first failure stops the others and is the
// one rethrown; a single task runs on the calling thread.
#include "core/each_until_failure.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace gpusort {
namespace {

TEST(EachUntilFailure, RunsEveryTaskOnAThreadOfItsOwn) {
  std::vector<std::thread::id> ran(4);
  detail::each_until_failure(ran.size(), [&](std::size_t i, const std::atomic<bool>& stop) {
    EXPECT_FALSE(stop.load());
    ran[i] = std::this_thread::get_id();
  });
  for (std::size_t i = 0; i < ran.size(); ++i) {
    EXPECT_NE(ran[i], std::thread::id{}) << "task " << i;
    EXPECT_NE(ran[i], std::this_thread::get_id()) << "task " << i;
  }
}

TEST(EachUntilFailure, ASingleTaskRunsOnTheCallingThread) {
  std::thread::id ran;
  detail::each_until_failure(1, [&](std::size_t i, const std::atomic<bool>& stop) {
    EXPECT_EQ(i, 0u);
    EXPECT_FALSE(stop.load());
    ran = std::this_thread::get_id();
  });
  EXPECT_EQ(ran, std::this_thread::get_id());
  EXPECT_THROW(detail::each_until_failure(
                   1, [](std::size_t, const std::atomic<bool>&) { throw std::runtime_error("x"); }),
               std::runtime_error);
}

TEST(EachUntilFailure, TheFirstFailureStopsTheOthersAndIsRethrown) {
  std::atomic<int> stopped{0};
  try {
    detail::each_until_failure(3, [&](std::size_t i, const std::atomic<bool>& stop) {
      if (i == 0) throw std::runtime_error("task 0 failed");
      // The others wait for the stop, as a GPU's share checks it between pieces.
      while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++stopped;
      throw std::logic_error("stopped");
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task 0 failed");
  }
  EXPECT_EQ(stopped.load(), 2);
}

}  // namespace
}  // namespace gpusort
