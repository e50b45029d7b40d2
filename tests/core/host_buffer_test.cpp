// Host buffers: sizes, huge-page alignment, prefault, moves.
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

}  // namespace
}  // namespace gpusort
