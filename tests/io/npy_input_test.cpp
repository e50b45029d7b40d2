// .npy inputs through the I/O layer: files and streams read after their header, checked
// against their shape and against each other.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "gpusort/error.hpp"
#include "io/input_source.hpp"
#include "io/uring.hpp"
#include "npy_support.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

const std::string descr12 = "[('k', '<u8'), ('p', '<u4')]";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(NpyInput, RecordsFollowTheHeaderOfEveryInput) {
  test::scratch_dir dir;
  const auto a = test::random_bytes(12 * 1000, test::base_seed());
  const auto b = test::random_bytes(12 * 333, test::base_seed() + 1);
  // Different versions and alignments, one dtype.
  test::write_file(dir.file("a.npy"), test::npy_file(test::npy_dict(descr12, "(1000,)"), a, 1, 64));
  test::write_file(dir.file("b.npy"), test::npy_file(test::npy_dict(descr12, "(333,)"), b, 2, 16));
  input_source in({dir.file("a.npy"), dir.file("b.npy")}, 8);
  ASSERT_NE(in.npy(), nullptr);
  EXPECT_EQ(in.npy()->dtype, "[('k', '<u8'), ('p', '<u4')]");
  EXPECT_EQ(in.npy_records(), 1333u);
  EXPECT_EQ(in.record_size(), 12u);
  ASSERT_TRUE(in.known_size());
  EXPECT_EQ(*in.known_size(), 1333u * 12);
  std::vector<std::byte> expect = a;
  expect.insert(expect.end(), b.begin(), b.end());
  uring ring;
  std::vector<std::byte> got(expect.size() + 100);
  EXPECT_EQ(in.read(std::span(got).first(5000), ring), 5000u);
  EXPECT_EQ(in.read(std::span(got).subspan(5000), ring), expect.size() - 5000);
  got.resize(expect.size());
  EXPECT_EQ(got, expect);
  std::vector<std::byte> middle(600);
  in.read_at(11700, middle, ring);  // across the two files
  EXPECT_TRUE(std::equal(middle.begin(), middle.end(), expect.begin() + 11700));
  const std::optional<input_mapping> m = in.map_input(1, false);
  ASSERT_TRUE(m);
  EXPECT_TRUE(std::equal(m->bytes().begin(), m->bytes().end(), b.begin(), b.end()));
  const std::optional<input_mapping> whole = input_source({dir.file("a.npy")}, 8).map_whole();
  ASSERT_TRUE(whole);
  EXPECT_TRUE(std::equal(whole->bytes().begin(), whole->bytes().end(), a.begin(), a.end()));
}

TEST(NpyInput, FilesThatDisagreeWithTheirShapeOrEachOtherAreRefused) {
  test::scratch_dir dir;
  const auto data = test::random_bytes(8 * 100, 3);
  std::vector<std::byte> file = test::npy_array("'<u8'", 8, data);
  test::write_file(dir.file("short.npy"), {file.begin(), file.end() - 3});
  file.push_back(std::byte{1});
  test::write_file(dir.file("long.npy"), file);
  test::write_file(dir.file("u8.npy"), test::npy_array("'<u8'", 8, data));
  test::write_file(dir.file("i8.npy"), test::npy_array("'<i8'", 8, data));
  test::write_file(dir.file("raw.bin"), data);
  test::write_file(dir.file("2d.npy"), test::npy_file(test::npy_dict("'<u8'", "(10, 10)"), data));
  test::write_file(dir.file("bad.npy"), test::npy_file("{'descr': '<u8'}", data));
  auto open = [&](std::vector<std::string> names) {
    for (std::string& n : names) n = dir.file(n);
    return error_of([&] { input_source in(names, 8); });
  };
  std::string e = open({"short.npy"});
  EXPECT_TRUE(has(e, "short.npy: truncated: 797 bytes follow its header, not the 800 bytes its "
                     ".npy shape (100,) of 8-byte records takes")) << e;
  e = open({"long.npy"});
  EXPECT_TRUE(has(e, "long.npy: 801 bytes follow its header, not the 800")) << e;
  e = open({"u8.npy", "i8.npy"});
  EXPECT_TRUE(has(e, "i8.npy: its dtype '<i8' is not the dtype of " + dir.file("u8.npy") +
                     ", '<u8'")) << e;
  e = open({"u8.npy", "raw.bin"});
  EXPECT_TRUE(has(e, "raw.bin: not an .npy file, while " + dir.file("u8.npy") + " is")) << e;
  e = open({"raw.bin", "u8.npy"});
  EXPECT_TRUE(has(e, "raw.bin: not an .npy file")) << e;
  e = open({"2d.npy"});
  EXPECT_TRUE(has(e, "2d.npy: the array has 2 dimensions")) << e;
  e = open({"bad.npy"});
  EXPECT_TRUE(has(e, "bad.npy: not a valid .npy header: no 'fortran_order' key")) << e;
}

/// Opens `fifo` for writing on a thread of its own and writes `bytes` (until the reader goes).
std::thread fifo_writer(const std::string& fifo, std::vector<std::byte> bytes) {
  return std::thread([fifo, bytes = std::move(bytes)] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::close(fd);
  });
}

TEST(NpyInput, StreamsAreReadAfterTheirHeaderAndCheckedAgainstTheShape) {
  test::scratch_dir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto data = test::random_bytes(12 * 5000, test::base_seed() + 2);
  const std::vector<std::byte> file =
      test::npy_file(test::npy_dict(descr12, "(5000,)"), data);
  uring ring;
  {  // exactly the announced records, through read() and through read_stream()
    for (const bool by_index : {false, true}) {
      std::thread w = fifo_writer(fifo, file);
      input_source in({fifo}, 8);
      ASSERT_NE(in.npy(), nullptr);
      EXPECT_FALSE(in.known_size());
      EXPECT_EQ(in.npy_records(), 5000u);
      std::vector<std::byte> got(data.size() + 7);
      const std::size_t n = by_index ? in.read_stream(0, got) : in.read(got, ring);
      EXPECT_EQ(n, data.size());
      got.resize(n);
      EXPECT_EQ(got, data);
      w.join();
    }
  }
  {  // a stream that ends early, or goes on past its shape
    std::thread w = fifo_writer(fifo, {file.begin(), file.end() - 12});
    input_source in({fifo}, 8);
    std::vector<std::byte> got(data.size());
    const std::string e = error_of([&] { static_cast<void>(in.read(got, ring)); });
    EXPECT_TRUE(has(e, "the stream ended after 59988 of the 60000 bytes its .npy shape")) << e;
    w.join();
  }
  {
    std::vector<std::byte> longer = file;
    longer.push_back(std::byte{0});
    std::thread w = fifo_writer(fifo, longer);
    input_source in({fifo}, 8);
    std::vector<std::byte> got(data.size() + 100);
    const std::string e = error_of([&] { static_cast<void>(in.read(got, ring)); });
    EXPECT_TRUE(has(e, "more bytes than the 60000 bytes its .npy shape (5000,)")) << e;
    w.join();
  }
  {  // a raw stream: the bytes looked at for a header come back first, in order
    for (const std::size_t bytes : {std::size_t{4}, std::size_t{8000}}) {
      const auto raw = test::random_bytes(bytes, 9);
      std::thread w = fifo_writer(fifo, raw);
      input_source in({fifo}, 4);
      EXPECT_EQ(in.npy(), nullptr);
      std::vector<std::byte> got(bytes + 4);
      std::size_t n = in.read(std::span(got).first(3), ring);  // less than was looked at
      n += in.read(std::span(got).subspan(3), ring);
      got.resize(n);
      EXPECT_EQ(got, raw);
      w.join();
    }
    std::thread w = fifo_writer(fifo, test::random_bytes(10, 9));
    input_source in({fifo}, 4);
    std::vector<std::byte> got(16);
    const std::string e = error_of([&] { static_cast<void>(in.read(got, ring)); });
    EXPECT_TRUE(has(e, "not a multiple of the record size")) << e;
    w.join();
  }
}

}  // namespace
}  // namespace gpusort::io
