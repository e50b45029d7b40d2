// Atomic output files and the output sinks (mapped file, io_uring into files and pipes).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "core/trace.hpp"
#include "gpusort/error.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "io/uring.hpp"
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
                                           sink_kind{write_method::uring, false},
                                           sink_kind{write_method::direct, false}));

/// Bytes the sink's prefault faulted in so far (its "prefault" track).
std::uint64_t prefaulted_bytes(const trace_recorder& trace) {
  for (const trace_recorder::track_total& t : trace.totals())
    if (t.name == "prefault") return t.bytes;
  return 0;
}

/// The prefault's step (64 MiB), and a mapped output of four of them whose trace counts what
/// the prefault faulted in.
constexpr std::uint64_t prefault_step = std::uint64_t{64} << 20;
struct four_step_output {
  test::scratch_dir dir;
  trace_recorder trace;
  output_file out{dir.file("out.bin")};
  std::unique_ptr<output_sink> sink =
      make_output_sink(out, 4 * prefault_step, write_method::automatic, &trace, true);
  [[nodiscard]] std::uint64_t prefaulted() const { return prefaulted_bytes(trace); }
};

TEST(Sinks, PrefaultStaysItsDistanceAheadOfTheWrites) {
  // The prefault may run one step ahead of the writes.
  constexpr std::uint64_t step = prefault_step;
  four_step_output o;
  o.sink->prefault(2, /*wait=*/true, step);
  EXPECT_EQ(o.prefaulted(), step) << "only the first step, before any write";
  o.sink->written_through(step + 1);  // into the second step: the third may fault in
  o.sink->prefault(2, /*wait=*/true, step);
  EXPECT_EQ(o.prefaulted(), 3 * step);
  // In the background, the prefault waits for the writes, and moves on when they do.
  o.sink->prefault(1, /*wait=*/false, step);
  o.sink->written_through(3 * step + 1);
  for (int i = 0; i < 2000 && o.prefaulted() < 4 * step; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(o.prefaulted(), 4 * step);
  // A distance set anew takes effect at once, also a shorter one: nothing more to fault here.
  o.sink->prefault(1, /*wait=*/true, 0);
  EXPECT_EQ(o.prefaulted(), 4 * step);
  o.sink->finish();
}

TEST(Sinks, PrefaultSkipsWhatTheWritesHavePassed) {
  // Writes that went ahead of the prefault faulted their pages in themselves: it resumes at
  // the first step they have not passed.
  constexpr std::uint64_t step = prefault_step;
  four_step_output o;
  o.sink->written_through(2 * step);
  o.sink->prefault(2, /*wait=*/true, step);
  EXPECT_EQ(o.prefaulted(), step) << "the third step alone";
  o.sink->written_through(3 * step + 1);
  o.sink->prefault(2, /*wait=*/true, step);
  EXPECT_EQ(o.prefaulted(), 2 * step) << "and the fourth, which the writes are in";
  o.sink->finish();
}

// O_DIRECT output from several threads: pieces of odd sizes at odd offsets, from memory laid
// out like the file (the edges of each piece are partial blocks gathered across pieces) and
// from memory that is not (copied through staging windows), in shuffled order.
TEST(Sinks, DirectSinkTakesOddPiecesFromManyThreadsInAnyOrder) {
  test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const std::size_t total : {std::size_t{1}, std::size_t{4095}, std::size_t{4096},
                                  (std::size_t{3} << 20) + 4097, (std::size_t{9} << 20) + 100}) {
    SCOPED_TRACE("total " + std::to_string(total));
    std::vector<std::byte> expect(total);
    for (auto& b : expect) b = static_cast<std::byte>(rng());
    std::vector<std::pair<std::size_t, std::size_t>> pieces;  // offset, length
    for (std::size_t off = 0; off < total;) {
      const std::size_t len = std::min<std::size_t>(total - off, 1 + rng() % 700000);
      pieces.emplace_back(off, len);
      off += len;
    }
    std::shuffle(pieces.begin(), pieces.end(), rng);
    const std::string target = dir.file("direct.bin");
    {
      output_file out(target);
      auto sink = make_output_sink(out, total, write_method::direct);
      if (std::string(sink->name()) != "direct") GTEST_SKIP() << "no O_DIRECT in " << dir.path();
      EXPECT_TRUE(sink->parallel_writes());
      std::atomic<std::size_t> next{0};
      auto worker = [&] {
        for (std::size_t i = next++; i < pieces.size(); i = next++) {
          const auto [off, len] = pieces[i];
          if (i % 3 == 0) {  // a window of the sink's own
            for (std::size_t done = 0; done < len;) {
              const std::size_t n = std::min(sink->max_window(), len - done);
              std::span<std::byte> w = sink->acquire(off + done, n);
              std::memcpy(w.data(), expect.data() + off + done, n);
              sink->commit(off + done, w);
              done += n;
            }
          } else {  // the caller's memory: laid out like the file (i % 3 == 1) or shifted
            std::vector<std::byte> mem(len + 2 * 4096);
            const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(mem.data());
            std::size_t shift = (off - base) % 4096;
            if (i % 3 == 2) shift = (shift + 8) % 4096;
            std::memcpy(mem.data() + shift, expect.data() + off, len);
            sink->write(off, {mem.data() + shift, len});
          }
        }
      };
      std::vector<std::thread> threads;
      for (int t = 0; t < 4; ++t) threads.emplace_back(worker);
      for (std::thread& t : threads) t.join();
      sink->finish();
      out.commit(false, total);
    }
    EXPECT_EQ(test::read_file(target), expect);
  }
}

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

/// A write that fails (stdout on /dev/full) is reported by the next acquire or by finish(),
/// however many windows were queued behind it, and the sink goes away cleanly.
TEST(Sinks, UringSinkReportsAFailedWriteToLaterCalls) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  const int full = ::open("/dev/full", O_WRONLY);
  ASSERT_GE(full, 0);
  const int saved = ::dup(STDOUT_FILENO);
  ::dup2(full, STDOUT_FILENO);
  ::close(full);
  std::string what;
  {
    output_file out("-");
    auto sink = make_output_sink(out, std::uint64_t{256} << 20, write_method::uring);
    try {
      const std::size_t window = sink->max_window();
      for (std::uint64_t off = 0; off < (std::uint64_t{256} << 20); off += window) {
        std::span<std::byte> w = sink->acquire(off, window);
        std::memset(w.data(), 1, w.size());
        sink->commit(off, w);
      }
      sink->finish();
    } catch (const error& e) {
      what = e.what();
    }
  }
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  EXPECT_NE(what.find("No space left on device"), std::string::npos) << what;
}

/// The hidden temporaries beside a target, by name.
std::vector<std::filesystem::path> temporaries(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> found;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string().find(".gpusort-") != std::string::npos)
      found.push_back(e.path());
  return found;
}

TEST(OutputFile, NamedTemporaryIsPrivateUntilCommitAndGetsTheTargetsMode) {
  test::scratch_dir dir;
  const std::string target = dir.file("out.bin");
  test::write_file(target, std::vector<std::byte>(10, std::byte{1}));
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  {
    output_file out(target, output_file::temp_naming::named);
    EXPECT_EQ(out.how(), output_file::kind::replace);
    const auto temps = temporaries(dir.path());
    ASSERT_EQ(temps.size(), 1u);
    struct stat st {};
    ASSERT_EQ(::stat(temps[0].c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << "readable by others while the sort runs";
    ASSERT_EQ(::write(out.fd().get(), "12345678", 8), 8);
    out.commit(false, 8);
  }
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  EXPECT_EQ(test::read_file(target).size(), 8u);
  EXPECT_TRUE(temporaries(dir.path()).empty());
}

TEST(OutputFile, NewFileGetsTheUmaskedDefaultMode) {
  test::scratch_dir dir;
  const mode_t old = ::umask(027);
  for (const auto naming : {output_file::temp_naming::automatic, output_file::temp_naming::named}) {
    const std::string target = dir.file("new.bin");
    std::filesystem::remove(target);
    {
      output_file out(target, naming);
      out.commit(false, 0);
    }
    struct stat st {};
    ASSERT_EQ(::stat(target.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
  }
  ::umask(old);
}

TEST(OutputFile, KindFollowsWhatTheTargetIs) {
  test::scratch_dir dir;
  test::write_file(dir.file("plain"), std::vector<std::byte>(8));
  EXPECT_EQ(output_file(dir.file("plain")).how(), output_file::kind::replace);
  EXPECT_EQ(output_file(dir.file("absent")).how(), output_file::kind::replace);
  std::filesystem::create_hard_link(dir.file("plain"), dir.file("second"));
  EXPECT_EQ(output_file(dir.file("plain")).how(), output_file::kind::copy_back);
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  // A reader first, so that opening the FIFO for writing does not wait for one.
  const int reader = ::open(dir.file("fifo").c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(output_file(dir.file("fifo")).how(), output_file::kind::stream);
  ::close(reader);
}

TEST(OutputFile, SymbolicLinksAreFollowedAndKept) {
  test::scratch_dir dir;
  std::filesystem::create_directory(dir.path() / "sub");
  test::write_file(dir.file("sub/real"), std::vector<std::byte>(8));
  std::filesystem::create_symlink("sub/real", dir.file("hop1"));
  std::filesystem::create_symlink(dir.file("hop1"), dir.file("hop2"));
  {
    output_file out(dir.file("hop2"));
    ASSERT_EQ(::write(out.fd().get(), "abc", 3), 3);
    out.commit(false, 3);
  }
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("hop1")));
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("hop2")));
  EXPECT_EQ(test::read_file(dir.file("sub/real")).size(), 3u);
  std::filesystem::create_symlink("loop", dir.file("loop"));
  try {
    output_file out(dir.file("loop"));
    FAIL() << "a symbolic link loop was accepted";
  } catch (const error& e) {
    EXPECT_EQ(e.code().value(), ELOOP);
  }
}

TEST(OutputFile, CommitRefusesAnOutputThatIsShortOfItsBytes) {
  test::scratch_dir dir;
  const std::string target = dir.file("out.bin");
  test::write_file(target, std::vector<std::byte>(4, std::byte{9}));
  try {
    output_file out(target);
    ASSERT_EQ(::write(out.fd().get(), "1234", 4), 4);
    out.commit(false, 8);
    FAIL() << "a short output was committed";
  } catch (const error& e) {
    EXPECT_EQ(e.code().value(), EIO);
  }
  EXPECT_EQ(test::read_file(target), std::vector<std::byte>(4, std::byte{9}));
}

TEST(OutputFile, HardLinkedTargetIsRewrittenInPlace) {
  test::scratch_dir dir;
  test::write_file(dir.file("a"), std::vector<std::byte>(100, std::byte{1}));
  std::filesystem::create_hard_link(dir.file("a"), dir.file("b"));
  {
    output_file out(dir.file("a"));
    const std::vector<std::byte> data(40, std::byte{2});
    ASSERT_EQ(::write(out.fd().get(), data.data(), data.size()), 40);
    EXPECT_EQ(test::read_file(dir.file("b")).size(), 100u) << "untouched until commit";
    out.commit(true, 40);
  }
  EXPECT_EQ(test::read_file(dir.file("b")), std::vector<std::byte>(40, std::byte{2}));
  EXPECT_EQ(std::filesystem::hard_link_count(dir.file("a")), 2u);
}

TEST(Errors, KeepTheirErrno) {
  try {
    throw_error("write x", ENOSPC);
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code(), std::errc::no_space_on_device);
    EXPECT_STREQ(e.what(), "write x: No space left on device");
  }
  try {
    throw_error("bad option");
  } catch (const error& e) {
    EXPECT_EQ(e.code().value(), 0);
    EXPECT_STREQ(e.what(), "bad option");
  }
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  const file_descriptor full = file_descriptor::open("/dev/full", O_WRONLY);
  std::vector<std::byte> data(1 << 16);
  uring ring(8);
  try {
    ring.write_stream(full, data);
    FAIL() << "a write to /dev/full succeeded";
  } catch (const error& e) {
    EXPECT_EQ(e.code().value(), ENOSPC) << e.what();
  }
}

}  // namespace
}  // namespace gpusort::io
