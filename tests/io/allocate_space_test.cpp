// allocate_space: an allocation that fails for lack of space is retried while the free space
// grows (another process freeing a replaced file), and given up once it stops growing. The
// filesystem is simulated: its free bytes grow as the test says, the allocation succeeds once
// they reach what it needs.
#include "io/allocate_space.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdint>

#include "test_support.hpp"

namespace gpusort::io {
namespace {

using namespace std::chrono_literals;

struct fake_filesystem {
  std::uint64_t free = 0;
  std::uint64_t need = 0;
  std::uint64_t grow_by = 0;   // per look at the free space
  std::uint64_t grow_until = 0;
  int allocations = 0;

  space_watch watch() {
    space_watch w;
    w.allocate = [this] {
      ++allocations;
      return free >= need ? 0 : ENOSPC;
    };
    w.free_bytes = [this] {
      if (free < grow_until) free += grow_by;
      return free;
    };
    w.poll = 1ms;
    w.patience = 50ms;
    return w;
  }
};

TEST(AllocateSpace, SucceedsAtOnceWhereThereIsRoom) {
  fake_filesystem fs{.free = 100, .need = 100};
  EXPECT_EQ(allocate_space(fs.watch()), 0);
  EXPECT_EQ(fs.allocations, 1);
}

TEST(AllocateSpace, WaitsWhileSpaceIsBeingFreed) {
  // 32 GiB still being freed, 1 GiB returned per look: the allocation succeeds at the 32nd.
  const std::uint64_t gib = std::uint64_t{1} << 30;
  fake_filesystem fs{.free = 10 * gib, .need = 42 * gib, .grow_by = gib, .grow_until = 64 * gib};
  EXPECT_EQ(allocate_space(fs.watch()), 0);
  // The first, then one per GiB that came back after the first look (which saw 11 GiB).
  EXPECT_EQ(fs.allocations, 32);
}

TEST(AllocateSpace, GivesUpOnceTheFreeSpaceStopsGrowing) {
  // Freeing ends 1 byte short: ENOSPC after the patience, not forever.
  fake_filesystem fs{.free = 10, .need = 100, .grow_by = 10, .grow_until = 90};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(allocate_space(fs.watch()), ENOSPC);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 50ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(fs.allocations, 1 + 7);  // first look 20, then 30 ... 90, then no growth
}

TEST(AllocateSpace, OtherErrorsAreNotWaitedFor) {
  space_watch w;
  int calls = 0;
  w.allocate = [&] {
    ++calls;
    return EOPNOTSUPP;
  };
  w.free_bytes = [] { return std::uint64_t{0}; };
  EXPECT_EQ(allocate_space(w), EOPNOTSUPP);
  EXPECT_EQ(calls, 1);
}

TEST(AllocateSpace, AllocatesARealFile) {
  test::scratch_dir dir;
  const int fd = ::open(dir.file("f").c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(allocate_file(fd, 1 << 20), 0);
  struct stat st {};
  ASSERT_EQ(::fstat(fd, &st), 0);
  EXPECT_EQ(st.st_size, 1 << 20);
  ::close(fd);
}

}  // namespace
}  // namespace gpusort::io
