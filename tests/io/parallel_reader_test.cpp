// parallel_reader: pieces come back complete and in order whatever order the threads finish
// in, errors reach the consumer, and stopping early returns every buffer.
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gpusort/error.hpp"
#include "io/buffer_pool.hpp"
#include "io/input_source.hpp"
#include "io/parallel_reader.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

/// A fixed set of heap buffers behind the pool the GPU path uses for its staging.
class test_buffers final : public buffer_pool {
 public:
  test_buffers(std::size_t count, std::size_t bytes)
      : storage_(count, std::vector<std::byte>(bytes)) {
    for (auto& b : storage_) add(b.data());
  }

 private:
  std::vector<std::vector<std::byte>> storage_;
};

using test::random_bytes;

TEST(ParallelReader, ReturnsEveryPieceInOrder) {
  const std::uint64_t seed = test::base_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  test::scratch_dir dir;
  const auto a = random_bytes(3 * 65536 + 40, seed);
  const auto b = random_bytes(65536 * 5 + 8, seed + 1);
  test::write_file(dir.file("a"), a);
  test::write_file(dir.file("b"), b);
  std::vector<std::byte> all = a;
  all.insert(all.end(), b.begin(), b.end());
  const input_source in({dir.file("a"), dir.file("b")}, 8);
  transfer_config config;
  config.block_bytes = 4096;
  config.queue_depth = 4;
  for (const std::size_t piece_bytes : {std::size_t{520}, std::size_t{4096}, std::size_t{65536 + 8},
                                        all.size(), all.size() + 8}) {
    for (const unsigned threads : {1u, 3u, 8u}) {
      SCOPED_TRACE("piece " + std::to_string(piece_bytes) + ", threads " + std::to_string(threads));
      test_buffers buffers(4, piece_bytes);
      std::vector<std::byte> got;
      {
        parallel_reader reader(in, piece_bytes, threads, buffers, config);
        for (;;) {
          const parallel_reader::piece p = reader.next();
          if (p.bytes == 0) break;
          ASSERT_LE(p.bytes, piece_bytes);
          got.insert(got.end(), p.data, p.data + p.bytes);
          buffers.release(p.data);
        }
      }
      EXPECT_EQ(got, all);
      EXPECT_EQ(buffers.free_count(), 4u);
    }
  }
}

// Each GPU reads its own share of the input: ranges across the boundary of two files, empty
// ones and the whole input come back as those bytes exactly.
TEST(ParallelReader, ReadsARangeOfTheInput) {
  const std::uint64_t seed = test::base_seed() + 5;
  SCOPED_TRACE("seed " + std::to_string(seed));
  test::scratch_dir dir;
  const auto a = random_bytes(65536 + 24, seed);
  const auto b = random_bytes(3 * 4096 + 16, seed + 1);
  test::write_file(dir.file("a"), a);
  test::write_file(dir.file("b"), b);
  std::vector<std::byte> all = a;
  all.insert(all.end(), b.begin(), b.end());
  const input_source in({dir.file("a"), dir.file("b")}, 8);
  const std::uint64_t ranges[][2] = {{0, all.size()}, {8, 65536 + 8}, {65536, all.size()},
                                     {all.size() / 2, all.size() / 2}, {4096, 4104}};
  for (const auto& [begin, end] : ranges) {
    SCOPED_TRACE("bytes " + std::to_string(begin) + " to " + std::to_string(end));
    test_buffers buffers(3, 4096);
    std::vector<std::byte> got;
    {
      parallel_reader reader(in, begin, end, 4096, 3, buffers, {});
      for (;;) {
        const parallel_reader::piece p = reader.next();
        if (p.bytes == 0) break;
        got.insert(got.end(), p.data, p.data + p.bytes);
        buffers.release(p.data);
      }
    }
    EXPECT_EQ(got, std::vector<std::byte>(all.begin() + static_cast<std::ptrdiff_t>(begin),
                                          all.begin() + static_cast<std::ptrdiff_t>(end)));
    EXPECT_EQ(buffers.free_count(), 3u);
  }
  test_buffers buffers(1, 4096);
  EXPECT_THROW(parallel_reader(in, 0, all.size() + 8, 4096, 1, buffers, {}), error);
}

TEST(ParallelReader, StoppingEarlyReturnsTheBuffers) {
  test::scratch_dir dir;
  test::write_file(dir.file("a"), random_bytes(1 << 20, 3));
  const input_source in({dir.file("a")}, 8);
  test_buffers buffers(3, 4096);
  {
    parallel_reader reader(in, 4096, 4, buffers, {});
    const parallel_reader::piece p = reader.next();
    ASSERT_EQ(p.bytes, 4096u);
    buffers.release(p.data);
  }  // 255 pieces never taken
  EXPECT_EQ(buffers.free_count(), 3u);
  // The reader closed the pool as it ended; reopened, the same buffers serve again.
  EXPECT_EQ(buffers.acquire(), nullptr);
  buffers.reopen();
  std::byte* again = buffers.acquire();
  EXPECT_NE(again, nullptr);
  buffers.release(again);
}

TEST(ParallelReader, ReportsAFileThatShrank) {
  test::scratch_dir dir;
  test::write_file(dir.file("a"), random_bytes(1 << 16, 4));
  const input_source in({dir.file("a")}, 8);
  ASSERT_EQ(::truncate(dir.file("a").c_str(), 1 << 12), 0);
  test_buffers buffers(2, 8192);
  parallel_reader reader(in, 8192, 2, buffers, {});
  try {
    for (;;) {
      const parallel_reader::piece p = reader.next();
      if (p.bytes == 0) break;
      buffers.release(p.data);
    }
    FAIL() << "a shrunken file was read without an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("end of file"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpusort::io
