// pipe_fanout: a pipe read through helper pipes on several threads gives exactly the bytes, in
// order, that reading it directly would, whatever the producer's write sizes; and input_source
// reads large pieces of a FIFO through it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <thread>

#include "io/input_source.hpp"
#include "io/pipe_fanout.hpp"
#include "io/uring.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

/// A pipe whose write end a thread fills with `bytes` in writes of random sizes (some of a few
/// bytes, which leave the pipe's buffers part-full), then closes.
class producer {
 public:
  producer(std::vector<std::byte> bytes, std::uint64_t seed, bool nonblocking_reader = false) {
    std::array<int, 2> fds{};
    if (::pipe2(fds.data(), O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
    read_end_ = file_descriptor(fds[0], "test pipe");
    if (nonblocking_reader) ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    thread_ = std::thread([fd = fds[1], bytes = std::move(bytes), seed] {
      std::mt19937_64 rng(seed);
      std::size_t done = 0;
      while (done < bytes.size()) {
        // Mostly large writes, a fifth tiny ones, some a bit over a page.
        const int kind = static_cast<int>(rng() % 5);
        std::size_t want = kind == 0   ? 1 + rng() % 64
                           : kind == 1 ? 4096 + rng() % 4096
                                       : 1 + rng() % (std::size_t{3} << 20);
        want = std::min(want, bytes.size() - done);
        const ssize_t n = ::write(fd, bytes.data() + done, want);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
      }
      ::close(fd);
    });
  }
  ~producer() {
    if (thread_.joinable()) thread_.join();
  }
  [[nodiscard]] int fd() const { return read_end_.get(); }

 private:
  file_descriptor read_end_;
  std::thread thread_;
};

TEST(PipeFanout, ReadsExactlyThePipesBytesInOrderForAnyLanesSegmentsAndWriteSizes) {
  for (int round = 0; round < 12; ++round) {
    const std::uint64_t seed = test::base_seed() + 500 + static_cast<std::uint64_t>(round);
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const std::size_t lanes = 1 + rng() % 5;
    const std::size_t segment = std::array<std::size_t, 3>{4096, 100000, 1 << 20}[rng() % 3];
    const std::size_t total = rng() % (std::size_t{24} << 20);
    SCOPED_TRACE(std::to_string(lanes) + " lanes, segments of " + std::to_string(segment) +
                 ", " + std::to_string(total) + " bytes");
    const std::vector<std::byte> data = test::random_bytes(total, seed);
    producer p(data, seed + 1);
    pipe_fanout fanout(p.fd(), "test pipe", lanes, segment);
    std::vector<std::byte> got(total + 1000);
    std::size_t have = 0;
    for (;;) {  // reads of random sizes, each filled unless the pipe ends
      const std::size_t want = std::min(got.size() - have, 1 + rng() % (std::size_t{9} << 20));
      const std::size_t n = fanout.read(std::span(got).subspan(have, want));
      have += n;
      if (n < want) break;
      ASSERT_EQ(n, want);
    }
    EXPECT_EQ(have, total);
    got.resize(have);
    EXPECT_TRUE(got == data);
    EXPECT_EQ(fanout.read(std::span(got).first(std::min<std::size_t>(got.size(), 10))), 0u)
        << "the ended pipe stays ended";
  }
}

TEST(PipeFanout, DirectReadsInBetweenGoOnWhereTheLanesStopped) {
  const std::vector<std::byte> data = test::random_bytes(std::size_t{5} << 20, test::base_seed());
  producer p(data, 7);
  pipe_fanout fanout(p.fd(), "test pipe", 3, 65536);
  std::vector<std::byte> got(data.size());
  std::size_t have = fanout.read(std::span(got).first(std::size_t{2} << 20));
  while (have < (std::size_t{3} << 20)) {
    const ssize_t n = ::read(p.fd(), got.data() + have, (std::size_t{3} << 20) - have);
    ASSERT_GT(n, 0);
    have += static_cast<std::size_t>(n);
  }
  have += fanout.read(std::span(got).subspan(have));
  EXPECT_EQ(have, data.size());
  EXPECT_TRUE(got == data);
}

TEST(PipeFanout, ANonBlockingPipeIsWaitedForNotFailed) {
  const std::vector<std::byte> data = test::random_bytes(std::size_t{6} << 20, test::base_seed());
  producer p(data, 11, /*nonblocking_reader=*/true);
  pipe_fanout fanout(p.fd(), "test pipe", 4, 1 << 20);
  std::vector<std::byte> got(data.size() + 1);
  EXPECT_EQ(fanout.read(got), data.size());
  got.resize(data.size());
  EXPECT_TRUE(got == data);
}

TEST(PipeFanout, AnEmptyPipeGivesNothing) {
  producer p({}, 1);
  pipe_fanout fanout(p.fd(), "test pipe", 2);
  std::vector<std::byte> got(1 << 20);
  EXPECT_EQ(fanout.read(got), 0u);
}

TEST(PipeFanout, InputSourceReadsLargePiecesOfAFifoThroughIt) {
  test::scratch_dir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Larger than pipe_fanout::min_read_bytes, and a record count that ends inside a segment.
  const std::size_t bytes = pipe_fanout::min_read_bytes * 2 + 16 * 12345;
  const std::vector<std::byte> data = test::random_bytes(bytes, test::base_seed() + 3);
  for (const bool by_index : {false, true}) {
    SCOPED_TRACE(by_index ? "read_stream" : "read");
    std::thread writer([&] {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return;
      std::size_t done = 0;
      while (done < bytes) {
        const std::size_t want = std::min<std::size_t>(bytes - done, 777777);
        const ssize_t n = ::write(fd, data.data() + done, want);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
      }
      ::close(fd);
    });
    input_source in({fifo}, 16);
    uring ring;
    std::vector<std::byte> got(bytes + 16);
    const std::span<std::byte> first = std::span(got).first(pipe_fanout::min_read_bytes + 16);
    std::size_t n = by_index ? in.read_stream(0, first) : in.read(first, ring);
    const std::span<std::byte> rest = std::span(got).subspan(n);
    n += by_index ? in.read_stream(0, rest) : in.read(rest, ring);
    writer.join();
    EXPECT_EQ(n, bytes);
    got.resize(n);
    EXPECT_TRUE(got == data);
  }
}

}  // namespace
}  // namespace gpusort::io
