// Host buffers: sizes, huge-page alignment, prefault, a preferred NUMA node, moves.
#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "core/host_buffer.hpp"

namespace gpusort {
namespace {

constexpr std::size_t huge_page = std::size_t{2} << 20;

TEST(HostBuffer, EmptyHasNoMemory) {
  const host_buffer empty(0);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

TEST(HostBuffer, LargeBuffersStartOnAHugePageAndAreWritableToTheEnd) {
  // Sizes around and above one huge page, some not a whole number of pages: the mapping is
  // trimmed to an aligned start, and every byte up to size() must still be usable.
  for (const std::size_t bytes : {huge_page, huge_page + 1, 3 * huge_page - 4096 + 17,
                                  5 * huge_page}) {
    SCOPED_TRACE(bytes);
    host_buffer buffer(bytes);
    ASSERT_NE(buffer.data(), nullptr);
    EXPECT_EQ(buffer.size(), bytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % huge_page, 0u);
    std::memset(buffer.data(), 0x5a, bytes);
    EXPECT_EQ(buffer.data()[0], std::byte{0x5a});
    EXPECT_EQ(buffer.data()[bytes - 1], std::byte{0x5a});
  }
}

/// The memory policy of the mapping at `p` (MPOL_DEFAULT, MPOL_PREFERRED, ...) and, with
/// `node`, the node of the page at `p`.
int policy_at(const std::byte* p, int* node = nullptr) {
  int mode = -1;
  unsigned long mask[16] = {};
  if (::syscall(SYS_get_mempolicy, &mode, mask, sizeof(mask) * 8, p, MPOL_F_ADDR) != 0) return -1;
  if (node != nullptr &&
      ::syscall(SYS_get_mempolicy, node, nullptr, 0, p, MPOL_F_NODE | MPOL_F_ADDR) != 0)
    *node = -1;
  return mode;
}

TEST(HostBuffer, PrefersTheNumaNodeAskedFor) {
  // Node 0 exists on every Linux host: the pages are asked for there, and land there.
  const host_buffer on_zero(4 * huge_page, /*prefault=*/true, 0);
  int node = -1;
  const int mode = policy_at(on_zero.data(), &node);
  if (mode == -1) GTEST_SKIP() << "get_mempolicy is not available here";
  EXPECT_EQ(mode, MPOL_PREFERRED);
  EXPECT_EQ(node, 0);
  // No node, or one beyond any host: the default policy, and the memory is there all the same.
  const host_buffer plain(huge_page, true);
  EXPECT_EQ(policy_at(plain.data()), MPOL_DEFAULT);
  const host_buffer nowhere(huge_page, true, 4000);
  EXPECT_EQ(policy_at(nowhere.data()), MPOL_DEFAULT);
  std::memset(nowhere.data(), 1, nowhere.size());
}

TEST(HostBuffer, SmallBuffersArePageAligned) {
  host_buffer buffer(1000);
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % 4096, 0u);
  std::memset(buffer.data(), 1, 1000);
}

TEST(HostBuffer, PrefaultedBufferReadsZeroAndMovesOwnership) {
  host_buffer a(3 * huge_page + 123, /*prefault=*/true);
  EXPECT_EQ(a.data()[3 * huge_page + 122], std::byte{0});
  std::byte* const data = a.data();
  host_buffer b(std::move(a));
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
  host_buffer c;
  c = std::move(b);
  EXPECT_EQ(c.data(), data);
  EXPECT_EQ(c.size(), 3 * huge_page + 123);
}

TEST(HostBuffer, DiscardGivesBackTheWholeHugePagesInsideTheRangeOnly) {
  static_assert(host_buffer::discard_grain == huge_page);
  host_buffer buffer(4 * huge_page + 100, /*prefault=*/true);
  std::memset(buffer.data(), 0x5a, buffer.size());
  // From mid-page 0 to mid-page 3: pages 1 and 2 go; the partly covered ones stay.
  buffer.discard(huge_page / 2, 3 * huge_page);
  EXPECT_EQ(buffer.discarded_bytes(), 2 * huge_page);
  EXPECT_EQ(buffer.data()[huge_page - 1], std::byte{0x5a});
  EXPECT_EQ(buffer.data()[huge_page], std::byte{0});
  EXPECT_EQ(buffer.data()[3 * huge_page - 1], std::byte{0});
  EXPECT_EQ(buffer.data()[3 * huge_page], std::byte{0x5a});
  // Past the end: only what the buffer holds, and its partial last page stays.
  buffer.discard(3 * huge_page, 10 * huge_page);
  EXPECT_EQ(buffer.discarded_bytes(), 3 * huge_page);
  EXPECT_EQ(buffer.data()[3 * huge_page], std::byte{0});
  EXPECT_EQ(buffer.data()[4 * huge_page + 99], std::byte{0x5a});
  // Nothing inside: nothing goes.
  buffer.discard(4 * huge_page + 1, huge_page);
  EXPECT_EQ(buffer.data()[4 * huge_page + 1], std::byte{0x5a});
  EXPECT_EQ(buffer.discarded_bytes(), 3 * huge_page);
  // A moved buffer keeps the count: what is left to free is size() less it.
  host_buffer moved = std::move(buffer);
  EXPECT_EQ(moved.discarded_bytes(), 3 * huge_page);
  EXPECT_EQ(buffer.discarded_bytes(), 0u);
  host_buffer small(1000);
  std::memset(small.data(), 1, 1000);
  small.discard(0, 1000);
  EXPECT_EQ(small.data()[0], std::byte{1});
  EXPECT_EQ(small.discarded_bytes(), 0u);
}

}  // namespace
}  // namespace gpusort
