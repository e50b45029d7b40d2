// parallel_copy and parallel_move_down against memcpy and memmove, on both sides of the grain
// and of distances shorter and longer than it.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/parallel_copy.hpp"
#include "test_support.hpp"

namespace gpusort::detail {
namespace {

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t x = rng();
    std::memcpy(v.data() + i, &x, std::min<std::size_t>(8, n - i));
  }
  return v;
}

TEST(ParallelCopy, CopiesLikeMemcpy) {
  const std::uint64_t seed = test::base_seed() + 31;
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, parallel_copy_grain,
                                  3 * parallel_copy_grain + 12345}) {
    const std::vector<std::byte> src = random_bytes(bytes, seed + bytes);
    std::vector<std::byte> dst(bytes);
    parallel_copy(dst.data(), src.data(), bytes);
    EXPECT_EQ(dst, src) << bytes << " bytes";
  }
}

TEST(ParallelMoveDown, MovesLikeMemmoveWhateverTheOverlap) {
  const std::uint64_t seed = test::base_seed() + 37;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::size_t g = parallel_copy_grain;
  struct shape {
    std::size_t distance;
    std::size_t bytes;
  };
  // Overlapping by most of the range, by a little, not at all; distances below, at and above
  // a grain (the one-thread and the piecewise paths).
  for (const shape s : {shape{7, 5 * g + 3}, shape{g - 1, 3 * g}, shape{g, 3 * g + 5},
                        shape{g + 4097, 5 * g + 11}, shape{2 * g + 1, 2 * g + 1},
                        shape{5 * g, 2 * g}, shape{0, g + 1}}) {
    const std::vector<std::byte> original = random_bytes(s.distance + s.bytes, seed + s.distance);
    std::vector<std::byte> expected = original;
    std::memmove(expected.data(), expected.data() + s.distance, s.bytes);
    std::vector<std::byte> moved = original;
    parallel_move_down(moved.data(), moved.data() + s.distance, s.bytes);
    EXPECT_TRUE(moved == expected) << s.bytes << " bytes down by " << s.distance;
  }
}

}  // namespace
}  // namespace gpusort::detail
