// chunk_queue: the GPUs' agreement to take a file's chunks, and the chunks they take, with
// threads standing in for the GPUs (no GPU needed).
#include "pipeline/chunk_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "gpusort/error.hpp"

namespace gpusort::pipeline {
namespace {

TEST(ChunkQueue, ChunksCoverTheFileInOrderWithAShorterLast) {
  const chunk_queue q(10, 4, 8, 2);
  ASSERT_EQ(q.chunks(), 3u);
  EXPECT_EQ(q.first_byte(0), 0u);
  EXPECT_EQ(q.last_byte(0), 32u);
  EXPECT_EQ(q.first_byte(2), 64u);
  EXPECT_EQ(q.last_byte(2), 80u);
  EXPECT_EQ(q.chunk_bytes(), (std::vector<std::size_t>{32, 32, 16}));
  EXPECT_EQ(chunk_queue(8, 4, 8, 2).chunks(), 2u);
  EXPECT_EQ(chunk_queue(0, 4, 8, 2).chunks(), 0u);
  EXPECT_THROW(chunk_queue(8, 0, 8, 2), error);
}

/// Each of `chunks.size()` threads agrees with the chunk it holds; what each was told, and
/// whether the agreement's action had run when it was told.
struct agreement {
  std::vector<int> agreed;
  std::vector<int> saw_action;
  int actions = 0;
};

agreement agree_on(const std::vector<std::uint64_t>& chunks) {
  chunk_queue q(100, 10, 8, chunks.size());
  std::atomic<bool> stop{false};
  std::atomic<int> actions{0};
  agreement a;
  a.agreed.resize(chunks.size());
  a.saw_action.resize(chunks.size());
  std::vector<std::thread> gpus;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    gpus.emplace_back([&, i] {
      a.agreed[i] = q.agree(chunks[i], stop, [&] { ++actions; });
      a.saw_action[i] = actions.load();
    });
  }
  for (std::thread& t : gpus) t.join();
  a.actions = actions.load();
  return a;
}

TEST(ChunkQueue, AgreedOnlyWhereEveryGpuHoldsTheChunkWithTheActionRunOnceBeforeAnyGoesOn) {
  const agreement all = agree_on({10, 10, 10});
  EXPECT_EQ(all.agreed, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(all.saw_action, (std::vector<int>{1, 1, 1}));
  EXPECT_EQ(all.actions, 1);
  // One GPU holds less: each forms its own share, and nothing is prepared.
  const agreement one_less = agree_on({10, 7, 10});
  EXPECT_EQ(one_less.agreed, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(one_less.actions, 0);
  EXPECT_EQ(agree_on({10}).agreed, std::vector<int>{1});
}

TEST(ChunkQueue, AGpuWaitingForAnotherThatFailedStops) {
  chunk_queue q(100, 10, 8, 2);
  std::atomic<bool> stop{false};
  std::thread failing([&] { stop = true; });  // the other GPU fails before it arrives
  EXPECT_THROW(static_cast<void>(q.agree(10, stop)), error);
  failing.join();
}

TEST(ChunkQueue, EveryChunkIsTakenOnceInOrderByWhicheverGpuAsks) {
  chunk_queue q(1000, 7, 8, 4);
  std::vector<std::vector<std::uint64_t>> taken(4);
  std::vector<std::thread> gpus;
  for (std::size_t i = 0; i < taken.size(); ++i) {
    gpus.emplace_back([&, i] {
      while (const std::optional<std::uint64_t> c = q.take()) taken[i].push_back(*c);
    });
  }
  for (std::thread& t : gpus) t.join();
  std::vector<std::uint64_t> all;
  for (const std::vector<std::uint64_t>& t : taken) {
    EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));  // each GPU's in file order
    all.insert(all.end(), t.begin(), t.end());
  }
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), q.chunks());
  for (std::uint64_t c = 0; c < all.size(); ++c) EXPECT_EQ(all[c], c);
  EXPECT_FALSE(q.take().has_value());
}

TEST(ChunkQueue, EachTakerRemembersWhichChunkItTookKth) {
  chunk_queue q(1000, 7, 8, 3);
  std::vector<chunk_queue::taker> takers;
  for (int i = 0; i < 3; ++i) takers.emplace_back(q);
  std::vector<std::vector<std::uint64_t>> got(takers.size());
  std::vector<std::thread> gpus;
  for (std::size_t i = 0; i < takers.size(); ++i) {
    gpus.emplace_back([&, i] {
      while (const std::optional<std::uint64_t> c = takers[i].take()) got[i].push_back(*c);
    });
  }
  for (std::thread& t : gpus) t.join();
  std::size_t all = 0;
  for (std::size_t i = 0; i < takers.size(); ++i) {
    for (std::uint64_t k = 0; k < got[i].size(); ++k) EXPECT_EQ(takers[i].taken(k), got[i][k]);
    all += got[i].size();
  }
  EXPECT_EQ(all, q.chunks());
}

}  // namespace
}  // namespace gpusort::pipeline
