// release_in_background: the file's last reference goes in another process, the file is
// freed, and no child is left behind.
#include "io/release_in_background.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "io/output_file.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

/// An inotify watch for the moment the file at `path` is freed: IN_DELETE_SELF comes when its
/// last name is gone and its last reference with it.
class freed_watch {
 public:
  explicit freed_watch(const std::string& path)
      : fd_(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    EXPECT_GE(fd_, 0);
    EXPECT_GE(::inotify_add_watch(fd_, path.c_str(), IN_DELETE_SELF), 0) << path;
  }
  ~freed_watch() { ::close(fd_); }
  freed_watch(const freed_watch&) = delete;
  freed_watch& operator=(const freed_watch&) = delete;

  /// Whether the file was freed within `ms` milliseconds.
  bool freed_within(int ms) {
    pollfd p{fd_, POLLIN, 0};
    while (::poll(&p, 1, ms) > 0) {
      alignas(inotify_event) char buffer[4096];
      const ssize_t n = ::read(fd_, buffer, sizeof buffer);
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
        if ((e->mask & IN_DELETE_SELF) != 0) return true;
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
    return false;
  }

 private:
  int fd_;
};

void expect_no_child_left() {
  int status = 0;
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1) << "a child of ours is left to reap";
  EXPECT_EQ(errno, ECHILD);
}

TEST(ReleaseInBackground, TheLastReferenceGoesElsewhereAndTheFileIsFreed) {
  test::scratch_dir dir;
  const std::string path = dir.file("replaced.bin");
  test::write_file(path, std::vector<std::byte>(std::size_t{1} << 20, std::byte{3}));
  freed_watch watch(path);
  file_descriptor held = file_descriptor::open(path, O_RDONLY | O_CLOEXEC);
  const int number = held.get();
  ASSERT_EQ(::unlink(path.c_str()), 0);
  EXPECT_FALSE(watch.freed_within(0)) << "still open here";
  release_in_background(std::move(held));
  EXPECT_EQ(::fcntl(number, F_GETFD), -1) << "our descriptor is closed";
  EXPECT_TRUE(watch.freed_within(10000)) << "nobody holds the file any more";
  expect_no_child_left();
}

TEST(ReleaseInBackground, AnEmptyDescriptorIsNothingToDo) {
  release_in_background(file_descriptor{});
  expect_no_child_left();
}

TEST(ReleaseInBackground, ALargeReplacedOutputIsFreedAfterTheRename) {
  // What output_file::commit hands over: the old target of at least 64 MiB.
  test::scratch_dir dir;
  const std::string target = dir.file("out.bin");
  test::write_file(target, std::vector<std::byte>(std::size_t{64} << 20, std::byte{1}));
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  freed_watch watch(target);
  {
    output_file out(target);
    const std::vector<std::byte> data(4096, std::byte{7});
    ASSERT_EQ(::write(out.fd().get(), data.data(), data.size()), 4096);
    out.commit(false, data.size());
  }
  EXPECT_EQ(test::read_file(target), std::vector<std::byte>(4096, std::byte{7}));
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u) << "the replacement keeps the old file's mode";
  EXPECT_TRUE(watch.freed_within(10000)) << "the old output was freed";
  expect_no_child_left();
}

}  // namespace
}  // namespace gpusort::io
