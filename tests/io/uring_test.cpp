// io_uring bulk transfers and the concatenated input source, on real files and pipes.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

#include "gpusort/error.hpp"
#include "io/input_source.hpp"
#include "io/uring.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

TEST(Uring, WriteThenReadExactWithManySmallRequests) {
  test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{1} << 20,
                           (std::size_t{3} << 20) + 17}) {
    const auto data = random_bytes(size, seed + size);
    const std::string path = dir.file("f" + std::to_string(size));
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
      ring.write_stream(w, std::span(data).subspan(off, std::min<std::size_t>(70000, data.size() - off)));
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

}  // namespace
}  // namespace gpusort::io
