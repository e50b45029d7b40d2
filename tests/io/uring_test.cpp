// io_uring bulk transfers and the concatenated input source, on real files and pipes.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "gpusort/error.hpp"
#include "io/file_descriptor.hpp"
#include "io/input_source.hpp"
#include "io/uring.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

using test::random_bytes;

TEST(Uring, WriteThenReadExactWithManySmallRequests) {
  test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{1} << 20,
                           (std::size_t{3} << 20) + 17}) {
    const auto data = random_bytes(size, seed + size);
    const std::string path = dir.file(std::string("f").append(std::to_string(size)));
    file_descriptor f = file_descriptor::open(path, O_RDWR | O_CREAT | O_TRUNC);
    uring ring(8);
    transfer_config config;
    config.block_bytes = 4096 * 3;  // many requests, several in flight
    config.queue_depth = 5;
    ring.write_exact(f, 0, data, config);
    EXPECT_EQ(f.size(), size);
    std::vector<std::byte> back(size);
    ring.read_exact(f, 0, back, config);
    EXPECT_EQ(back, data) << "size " << size;
    // Reading at an offset.
    if (size > 100) {
      std::vector<std::byte> part(50);
      ring.read_exact(f, 37, part, config);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + 37));
    }
  }
}

TEST(Uring, ReadPastEndOfFileIsAnError) {
  test::scratch_dir dir;
  const std::string path = dir.file("short");
  test::write_file(path, random_bytes(100, 1));
  file_descriptor f = file_descriptor::open(path, O_RDONLY);
  uring ring;
  std::vector<std::byte> buf(200);
  try {
    ring.read_exact(f, 0, buf);
    FAIL() << "expected an error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected end of file"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
}

TEST(Uring, StreamsFromAndToAPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const auto data = random_bytes((std::size_t{1} << 20) + 3, 7);
  std::thread writer([&] {
    file_descriptor w(fds[1], "pipe writer");
    uring ring;
    // Write in pieces so the reader sees short reads.
    for (std::size_t off = 0; off < data.size(); off += 70000)
      ring.write_stream(
          w, std::span(data).subspan(off, std::min<std::size_t>(70000, data.size() - off)));
  });
  file_descriptor r(fds[0], "pipe reader");
  uring ring;
  std::vector<std::byte> got(data.size() + 100);
  const std::size_t n = ring.read_stream(r, got);
  writer.join();
  ASSERT_EQ(n, data.size());
  got.resize(n);
  EXPECT_EQ(got, data);
}

TEST(InputSource, ConcatenatesFilesAndChecksRecordSize) {
  test::scratch_dir dir;
  const auto a = random_bytes(800, 1);
  const auto b = random_bytes(16, 2);
  test::write_file(dir.file("a"), a);
  test::write_file(dir.file("b"), b);
  input_source in({dir.file("a"), dir.file("b")}, 8);
  ASSERT_TRUE(in.known_size());
  EXPECT_EQ(*in.known_size(), 816u);
  uring ring;
  std::vector<std::byte> got(1000);
  EXPECT_EQ(in.read(std::span(got).first(500), ring), 500u);
  EXPECT_EQ(in.read(std::span(got).subspan(500), ring), 316u);
  EXPECT_EQ(in.read(std::span(got).subspan(816), ring), 0u);
  got.resize(816);
  std::vector<std::byte> expect = a;
  expect.insert(expect.end(), b.begin(), b.end());
  EXPECT_EQ(got, expect);

  test::write_file(dir.file("odd"), random_bytes(801, 3));
  try {
    input_source bad({dir.file("a"), dir.file("odd")}, 8);
    FAIL();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple of the record size"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("odd"), std::string::npos);
  }
  EXPECT_THROW(input_source({dir.file("missing")}, 8), error);
}

TEST(InputSource, MapsOneWholeRegularFile) {
  test::scratch_dir dir;
  const auto a = random_bytes(4096 * 2 + 24, 8);
  test::write_file(dir.file("a"), a);
  test::write_file(dir.file("empty"), {});
  {
    const input_source in({dir.file("a")}, 8);
    std::optional<input_mapping> m = in.map_whole();
    ASSERT_TRUE(m);
    const std::span<const std::byte> bytes = m->bytes();
    EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), a.begin(), a.end()));
    // Moving hands the mapping over: it stays readable after the source is gone.
    input_mapping moved = std::move(*m);
    m.reset();
    EXPECT_TRUE(std::equal(moved.bytes().begin(), moved.bytes().end(), a.begin(), a.end()));
  }
  // Only one regular, non-empty file that read() has not started on is mapped.
  EXPECT_FALSE(input_source({dir.file("a"), dir.file("a")}, 8).map_whole());
  EXPECT_FALSE(input_source({dir.file("empty")}, 8).map_whole());
  input_source started({dir.file("a")}, 8);
  uring ring;
  std::vector<std::byte> head(8);
  ASSERT_EQ(started.read(head, ring), 8u);
  EXPECT_FALSE(started.map_whole());
}

/// Each part written to a file of its own in `dir`; their paths.
std::vector<std::string> write_parts(const test::scratch_dir& dir,
                                     const std::vector<std::vector<std::byte>>& parts) {
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    paths.push_back(dir.file("part" + std::to_string(i)));
    test::write_file(paths.back(), parts[i]);
  }
  return paths;
}

std::vector<std::byte> concatenated(const std::vector<std::vector<std::byte>>& parts) {
  std::vector<std::byte> all;
  for (const std::vector<std::byte>& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

TEST(InputSource, ReadsAtOffsetsAcrossFilesFromSeveralThreads) {
  test::scratch_dir dir;
  std::vector<std::vector<std::byte>> parts = {random_bytes(4096 * 3 + 8, 4), random_bytes(0, 5),
                                               random_bytes(808, 6), random_bytes(65536, 7)};
  const std::vector<std::string> paths = write_parts(dir, parts);
  const std::vector<std::byte> all = concatenated(parts);
  const input_source in(paths, 8);
  ASSERT_EQ(*in.known_size(), all.size());
  // Pieces of odd lengths that straddle file boundaries, read by four threads at once.
  const std::size_t piece = 1000;
  std::vector<std::byte> got(all.size());
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      uring ring;
      transfer_config small;
      small.block_bytes = 4096;
      for (std::size_t at = t * piece; at < all.size(); at += 4 * piece) {
        const std::size_t n = std::min(piece, all.size() - at);
        in.read_at(at, std::span(got).subspan(at, n), ring, small);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(got, all);
  uring ring;
  std::vector<std::byte> one(8);
  EXPECT_THROW(in.read_at(all.size() - 4, one, ring), error);
}

TEST(InputSource, ReadsFromThePageCacheOnlyWhereItHoldsTheBytes) {
  test::scratch_dir dir;
  std::vector<std::vector<std::byte>> parts = {random_bytes(4096 * 3 + 8, 8), random_bytes(0, 9),
                                               random_bytes(808, 10)};
  const std::vector<std::string> paths = write_parts(dir, parts);
  const std::vector<std::byte> all = concatenated(parts);
  const input_source in(paths, 8);
  // Just written, so cached: pieces inside a file and across the empty one.
  for (const std::size_t at : {std::size_t{0}, std::size_t{4096 * 3}, all.size() - 8}) {
    std::vector<std::byte> got(8);
    ASSERT_TRUE(in.read_if_cached(at, got)) << at;
    EXPECT_TRUE(std::equal(got.begin(), got.end(), all.begin() + static_cast<std::ptrdiff_t>(at)));
  }
  std::vector<std::byte> one(8);
  EXPECT_THROW((void)in.read_if_cached(all.size() - 4, one), error);
  // Dropped from the page cache: not read, where the filesystem lets it go (tmpfs keeps it).
  // The kernel may start reading the page back on the attempt (RWF_NOWAIT starts read-ahead
  // without waiting for it), and a fast disk can finish before it looks again: a busy machine
  // (the clean-clone CI run of 2026-11-29) saw that once. So a few attempts, each after
  // dropping the page again: one must find it missing, and whatever is read must be the
  // file's bytes.
  const file_descriptor fd = file_descriptor::open(paths[0], O_RDONLY);
  ASSERT_EQ(::fdatasync(fd.get()), 0);
  auto dropped = [&] {
    EXPECT_EQ(::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED), 0);
    void* map = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd.get(), 0);
    if (map == MAP_FAILED) {
      ADD_FAILURE() << "mmap: " << std::strerror(errno);
      return false;
    }
    unsigned char resident = 1;
    EXPECT_EQ(::mincore(map, 4096, &resident), 0);
    ::munmap(map, 4096);
    return (resident & 1u) == 0;
  };
  bool missed = false;
  bool droppable = true;  // tmpfs keeps its pages
  for (int attempt = 0; attempt < 5 && !missed; ++attempt) {
    if (!dropped()) {
      droppable = false;
      break;
    }
    if (!in.read_if_cached(16, one)) {
      missed = true;
    } else {
      EXPECT_TRUE(std::equal(one.begin(), one.end(), all.begin() + 16));
    }
  }
  if (droppable) {
    EXPECT_TRUE(missed) << "bytes dropped from the page cache were read five times";
  }
}

}  // namespace
}  // namespace gpusort::io
