// Outputs with a header (an .npy file's): every sink writes the records after it, commit()
// writes it (a stream's sink, ahead of the records), --unique rewrites it in the same length.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <thread>

#include "gpusort/error.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "npy_support.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

const std::string descr12 = "[('k', '<u8'), ('p', '<u4')]";

struct sink_kind {
  write_method method;
  bool persistent_mapping;
};

class HeaderedSinks : public ::testing::TestWithParam<sink_kind> {};

TEST_P(HeaderedSinks, WriteTheRecordsAfterTheHeader) {
  test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed() + 4;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::size_t total = (std::size_t{3} << 20) + 12 * 7;
  std::vector<std::byte> records(total);
  for (auto& b : records) b = static_cast<std::byte>(rng());
  // An 80-byte header (16-byte aligned, as old NumPy wrote): the records start off any page.
  const std::vector<std::byte> header =
      test::npy_header(test::npy_dict(descr12, "(262151,)"), 1, 16);
  const std::vector<std::byte> unique_header =
      test::npy_header(test::npy_dict(descr12, "(100000,)"), 1, 16);
  ASSERT_EQ(header.size(), unique_header.size());
  const std::string target = dir.file("out.npy");
  {
    output_file out(target);
    out.set_header(header);
    EXPECT_EQ(out.data_offset(), header.size());
    auto sink = make_output_sink(out, total, GetParam().method, nullptr,
                                 GetParam().persistent_mapping);
    sink->prefault(2);
    const std::size_t half = total / 2;
    const std::size_t piece = 100003;
    std::vector<std::size_t> offsets;
    for (std::size_t off = 0; off < half; off += piece) offsets.push_back(off);
    std::shuffle(offsets.begin(), offsets.end(), rng);
    for (const std::size_t off : offsets) {
      const std::size_t len = std::min(piece, half - off);
      std::span<std::byte> w = sink->acquire(off, len);
      std::memcpy(w.data(), records.data() + off, len);
      sink->commit(off, w);
    }
    sink->write(half, std::span(records).subspan(half));
    if (!sink->mapping().empty()) {
      EXPECT_EQ(sink->mapping().size(), total);
      EXPECT_TRUE(std::equal(records.begin(), records.end(), sink->mapping().begin()));
    }
    sink->finish();
    sink.reset();
    // --unique: the shape rewritten in the same length, the records cut after 1.2 MB.
    EXPECT_THROW(out.set_header(std::vector<std::byte>(header.size() + 1, std::byte{' '})), error);
    out.set_header(unique_header);
    out.shrink(total, 1200000);
    out.commit(false, 1200000);
  }
  std::vector<std::byte> expect = unique_header;
  expect.insert(expect.end(), records.begin(), records.begin() + 1200000);
  EXPECT_EQ(test::read_file(target), expect);
}

INSTANTIATE_TEST_SUITE_P(Methods, HeaderedSinks,
                         ::testing::Values(sink_kind{write_method::mmap, false},
                                           sink_kind{write_method::mmap, true},
                                           sink_kind{write_method::uring, false}));

/// Runs `body` with stdout replaced by `fd`.
void with_stdout(int fd, const std::function<void()>& body) {
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(fd, STDOUT_FILENO);
  try {
    body();
  } catch (...) {
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
    throw;
  }
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
}

TEST(OutputHeader, AStreamGetsItsHeaderAheadOfTheRecords) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const auto records = test::random_bytes(8 * 100000, 5);
  const std::vector<std::byte> header = test::npy_header(test::npy_dict("'<u8'", "(100000,)"));
  std::vector<std::byte> got;
  std::thread reader([&] {
    std::vector<std::byte> buf(1 << 16);
    for (ssize_t n; (n = ::read(fds[0], buf.data(), buf.size())) > 0;)
      got.insert(got.end(), buf.begin(), buf.begin() + n);
  });
  with_stdout(fds[1], [&] {
    ::close(fds[1]);
    output_file out("-");
    out.set_header(header);
    auto sink = make_output_sink(out, records.size(), write_method::automatic);
    sink->write(0, records);
    sink->finish();
    sink.reset();
    EXPECT_THROW(out.set_header(test::npy_header(test::npy_dict("'<u8'", "(1,)"))), error)
        << "a header that went out cannot change";
    out.set_header(header);  // the same one may be given again
    out.commit(false, records.size());
  });
  reader.join();
  std::vector<std::byte> expect = header;
  expect.insert(expect.end(), records.begin(), records.end());
  EXPECT_EQ(got, expect);
}

TEST(OutputHeader, StdoutRedirectedToAFileGetsTheHeaderAtItsPosition) {
  test::scratch_dir dir;
  const auto records = test::random_bytes(8 * 5000, 6);
  const std::vector<std::byte> header = test::npy_header(test::npy_dict("'<u8'", "(5000,)"));
  const int fd = ::open(dir.file("so.bin").c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "ABC", 3), 3);
  with_stdout(fd, [&] {
    output_file out("-");
    ASSERT_EQ(out.how(), output_file::kind::positioned);
    out.set_header(header);
    EXPECT_EQ(out.data_offset(), 3 + header.size());
    auto sink = make_output_sink(out, records.size(), write_method::automatic);
    sink->write(0, records);
    sink->finish();
    sink.reset();
    out.commit(false, records.size());
    EXPECT_EQ(::lseek(STDOUT_FILENO, 0, SEEK_CUR),
              static_cast<off_t>(3 + header.size() + records.size()));
  });
  ::close(fd);
  std::vector<std::byte> expect{std::byte{'A'}, std::byte{'B'}, std::byte{'C'}};
  expect.insert(expect.end(), header.begin(), header.end());
  expect.insert(expect.end(), records.begin(), records.end());
  EXPECT_EQ(test::read_file(dir.file("so.bin")), expect);
}

}  // namespace
}  // namespace gpusort::io
