// file_view: pieces of several files read back through one mapping, byte for byte.
#include "io/file_view.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace gpusort::io {
namespace {

/// Writes `data` at `offset` of `file`.
void put(const file_descriptor& file, std::uint64_t offset, const std::vector<std::byte>& data) {
  ASSERT_EQ(::pwrite(file.get(), data.data(), data.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(data.size()));
}

TEST(FileView, PiecesOfSeveralFilesReadAsOneRange) {
  const std::uint64_t seed = test::base_seed() + 31;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  test::scratch_dir dir;
  const std::size_t page = page_bytes();
  std::vector<file_descriptor> files;
  for (const char* name : {"a", "b", "c"})
    files.push_back(file_descriptor::open(dir.file(name), O_CREAT | O_RDWR, 0600));
  std::vector<std::uint64_t> ends(files.size(), 0);  // pieces never overlap
  for (int round = 0; round < 20; ++round) {
    // Up to five pieces of whole pages, the last of any length, at random pages of the files.
    const std::size_t count = 1 + rng() % 5;
    std::vector<file_piece> pieces;
    std::vector<std::byte> expected;
    for (std::size_t i = 0; i < count; ++i) {
      const bool last = i + 1 == count;
      const std::uint64_t bytes = last ? rng() % (3 * page) : page * (rng() % 4);
      const std::size_t which = rng() % files.size();
      const file_descriptor& f = files[which];
      const std::uint64_t offset = ends[which] + page * (rng() % 4);
      ends[which] = offset + (bytes + page - 1) / page * page;
      const std::vector<std::byte> data = test::random_bytes(bytes, rng());
      put(f, offset, data);
      pieces.push_back({&f, offset, bytes});
      expected.insert(expected.end(), data.begin(), data.end());
    }
    ASSERT_TRUE(file_view::fits(pieces));
    const file_view view(pieces);
    ASSERT_EQ(view.size(), expected.size());
    view.will_need(0, view.size());
    EXPECT_TRUE(expected.empty() || std::memcmp(view.data(), expected.data(), expected.size()) == 0)
        << "round " << round;
  }
}

TEST(FileView, RefusesPiecesOffPageBoundaries) {
  test::scratch_dir dir;
  const file_descriptor f = file_descriptor::open(dir.file("f"), O_CREAT | O_RDWR, 0600);
  const std::size_t page = page_bytes();
  const std::vector<file_piece> misplaced{{&f, 100, page}};
  EXPECT_FALSE(file_view::fits(misplaced));
  const std::vector<file_piece> ragged_middle{{&f, 0, page + 1}, {&f, 4 * page, page}};
  EXPECT_FALSE(file_view::fits(ragged_middle));
  const std::vector<file_piece> ragged_last{{&f, 0, page}, {&f, 4 * page, 5}};
  EXPECT_TRUE(file_view::fits(ragged_last));
}

TEST(FileView, MovesAndMapsNothingForNoBytes) {
  test::scratch_dir dir;
  const file_descriptor f = file_descriptor::open(dir.file("f"), O_CREAT | O_RDWR, 0600);
  const std::vector<std::byte> data = test::random_bytes(page_bytes() + 7, test::base_seed());
  put(f, 0, data);
  const std::vector<file_piece> none{{&f, 0, 0}};
  const file_view empty(none);
  EXPECT_EQ(empty.size(), 0u);
  empty.will_need(0, 100);  // harmless
  const std::vector<file_piece> one{{&f, 0, data.size()}};
  file_view a(one);
  file_view b(std::move(a));
  ASSERT_EQ(b.size(), data.size());
  EXPECT_EQ(std::memcmp(b.data(), data.data(), data.size()), 0);
  a = std::move(b);
  EXPECT_EQ(std::memcmp(a.data(), data.data(), data.size()), 0);
  EXPECT_EQ(b.size(), 0u);  // NOLINT(bugprone-use-after-move): a view moved from is empty
  EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
}  // namespace gpusort::io
