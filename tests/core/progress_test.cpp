// --progress: which stage is shown, how its line reads, and the reporter's plain lines when
// stderr is not a terminal.
#include "core/progress.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "test_support.hpp"

namespace gpusort {
namespace {

constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

TEST(Progress, ShowsTheDataStageThatBeganLast) {
  const std::vector<trace_recorder::track_total> totals = {
      {"read", 16 * GiB, 0.0},
      {"prefault", 16 * GiB, 0.5},  // setup: never shown
      {"merge", 4 * GiB, 2.0},
      {"write", 0, 3.0},  // has not moved a byte yet
  };
  const progress_state s = current_progress(totals, 16 * GiB, 4.0);
  EXPECT_EQ(s.stage, "merge");
  EXPECT_EQ(s.bytes, 4 * GiB);
  EXPECT_DOUBLE_EQ(s.seconds, 2.0);
  EXPECT_TRUE(current_progress({{"prefault", GiB, 0.0}}, GiB, 1.0).stage.empty());
}

TEST(Progress, TextWithAndWithoutABar) {
  progress_state s{"merge", 4 * GiB, 16 * GiB, 2.0};
  EXPECT_EQ(progress_text(s, false), "merge 25% (4 GiB of 16 GiB) at 2.15 GB/s, ETA 6.0 s");
  EXPECT_EQ(progress_text(s, true),
            "merge [####............]  25% 4 GiB/16 GiB 2.15 GB/s ETA 6.0 s");
  s.total.reset();
  EXPECT_EQ(progress_text(s, false), "merge 4 GiB at 2.15 GB/s");
  // A second merge pass starts over instead of passing 100%.
  progress_state pass2{"merge", 20 * GiB, 16 * GiB, 10.0};
  EXPECT_NE(progress_text(pass2, false).find("merge 25% (4 GiB of 16 GiB)"), std::string::npos)
      << progress_text(pass2, false);
  EXPECT_EQ(progress_text({}, false), "starting");
}

TEST(Progress, PlainLinesWhenNotATerminal) {
  test::scratch_dir dir;
  const std::string path = dir.file("stderr.txt");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  trace_recorder trace;
  {
    progress_reporter reporter(trace, GiB, fd, 0.1, 0.02);
    trace.record("read", 0, trace.now(), GiB / 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ::close(fd);
  const auto bytes = test::read_file(path);
  const std::string text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  EXPECT_NE(text.find("gpusort: progress: read 50% (512 MiB of 1 GiB) at "), std::string::npos)
      << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "no terminal control in a log";
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace gpusort
