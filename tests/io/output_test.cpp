// Atomic output files and the output sinks (mapped file, io_uring into files and pipes).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <thread>

#include "gpusort/error.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

std::size_t entries(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                                std::filesystem::directory_iterator()));
}

TEST(OutputFile, TargetIsUntouchedUntilCommit) {
  test::scratch_dir dir;
  const std::string target = dir.file("out.bin");
  test::write_file(target, std::vector<std::byte>(10, std::byte{1}));
  {
    output_file out(target);
    const std::vector<std::byte> data(4096, std::byte{7});
    ASSERT_EQ(::write(out.fd().get(), data.data(), data.size()), 4096);
    EXPECT_EQ(test::read_file(target).size(), 10u) << "old output still in place";
    out.commit(/*fsync=*/true, data.size());
  }
  EXPECT_EQ(test::read_file(target), std::vector<std::byte>(4096, std::byte{7}));
  EXPECT_EQ(entries(dir.path()), 1u) << "no temporary file left";
}

TEST(OutputFile, AbandonedOutputLeavesNothing) {
  test::scratch_dir dir;
  {
    output_file out(dir.file("never.bin"));
    ASSERT_EQ(::write(out.fd().get(), "abc", 3), 3);
  }
  EXPECT_EQ(entries(dir.path()), 0u);
}

TEST(OutputFile, UnwritableDirectoryFailsUpFront) {
  if (::geteuid() == 0) {
    // root writes anywhere; a directory that does not exist fails the same way.
    EXPECT_THROW(output_file(std::string("/nonexistent-dir-gpusort/x.bin")), error);
    return;
  }
  test::scratch_dir dir;
  ::chmod(dir.path().c_str(), 0500);
  EXPECT_THROW(output_file(dir.file("x.bin")), error);
  ::chmod(dir.path().c_str(), 0700);
}

struct sink_kind {
  write_method method;
  bool persistent_mapping;
};

class Sinks : public ::testing::TestWithParam<sink_kind> {};

TEST_P(Sinks, WindowsInAnyOrderAndDirectWrites) {
  test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::size_t total = (std::size_t{5} << 20) + 123;
  std::vector<std::byte> expect(total);
  for (auto& b : expect) b = static_cast<std::byte>(rng());
  const std::string target = dir.file("sink.bin");
  {
    output_file out(target);
    auto sink = make_output_sink(out, total, GetParam().method, nullptr,
                                 GetParam().persistent_mapping);
    sink->prefault(3);  // background faulting races with the writes below; no-op unless persistent
    // First half in shuffled windows of odd sizes, second half by write().
    const std::size_t half = total / 2;
    const std::size_t piece = 300001;
    std::vector<std::size_t> offsets;
    for (std::size_t off = 0; off < half; off += piece) offsets.push_back(off);
    std::shuffle(offsets.begin(), offsets.end(), rng);
    for (std::size_t off : offsets) {
      const std::size_t len = std::min(piece, half - off);
      std::span<std::byte> w = sink->acquire(off, len);
      std::memcpy(w.data(), expect.data() + off, len);
      sink->commit(off, w);
    }
    sink->write(half, std::span(expect).subspan(half));
    sink->finish();
    out.commit(false, total);
  }
  EXPECT_EQ(test::read_file(target), expect);
}

INSTANTIATE_TEST_SUITE_P(Methods, Sinks,
                         ::testing::Values(sink_kind{write_method::mmap, false},
                                           sink_kind{write_method::mmap, true},
                                           sink_kind{write_method::uring, false}));

TEST(Sinks, UringSinkStreamsIntoAPipeInOrder) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  std::vector<std::byte> expect((std::size_t{3} << 20) + 5);
  std::mt19937_64 rng(3);
  for (auto& b : expect) b = static_cast<std::byte>(rng());
  std::vector<std::byte> got;
  std::thread reader([&] {
    std::vector<std::byte> buf(1 << 16);
    for (;;) {
      const ssize_t n = ::read(fds[0], buf.data(), buf.size());
      if (n <= 0) break;
      got.insert(got.end(), buf.begin(), buf.begin() + n);
    }
  });
  {
    // Stand in for stdout: a stream output over the pipe's write end.
    const int saved = ::dup(STDOUT_FILENO);
    ::dup2(fds[1], STDOUT_FILENO);
    ::close(fds[1]);
    {
      output_file out("-");
      auto sink = make_output_sink(out, expect.size(), write_method::automatic);
      EXPECT_STREQ(sink->name(), "uring");
      const std::size_t piece = sink->max_window() / 3 + 1;
      for (std::size_t off = 0; off < expect.size(); off += piece) {
        const std::size_t len = std::min(piece, expect.size() - off);
        std::span<std::byte> w = sink->acquire(off, len);
        std::memcpy(w.data(), expect.data() + off, len);
        sink->commit(off, w);
      }
      sink->finish();
    }
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
  }
  reader.join();
  EXPECT_EQ(got, expect);
}

}  // namespace
}  // namespace gpusort::io
