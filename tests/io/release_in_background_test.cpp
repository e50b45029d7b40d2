// release_in_background: the file's last reference goes in another process, the file is
// freed, and no child is left behind.
#include "io/release_in_background.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "io/input_source.hpp"
#include "io/output_file.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

TEST(ReleaseInBackground, TheLastReferenceGoesElsewhereAndTheFileIsFreed) {
  test::scratch_dir dir;
  const std::string path = dir.file("replaced.bin");
  test::write_file(path, std::vector<std::byte>(std::size_t{1} << 20, std::byte{3}));
  test::freed_watch watch(path);
  file_descriptor held = file_descriptor::open(path, O_RDONLY | O_CLOEXEC);
  const int number = held.get();
  ASSERT_EQ(::unlink(path.c_str()), 0);
  EXPECT_FALSE(watch.freed_within(0)) << "still open here";
  release_in_background(std::move(held));
  EXPECT_EQ(::fcntl(number, F_GETFD), -1) << "our descriptor is closed";
  EXPECT_TRUE(watch.freed_within(10000)) << "nobody holds the file any more";
  test::expect_no_child_left();
}

TEST(ReleaseInBackground, AnEmptyDescriptorIsNothingToDo) {
  release_in_background(file_descriptor{});
  test::expect_no_child_left();
}

TEST(ReleaseInBackground, ALargeReplacedOutputIsFreedAfterTheRename) {
  // What output_file::commit hands over: the old target of at least 64 MiB.
  test::scratch_dir dir;
  const std::string target = dir.file("out.bin");
  test::write_file(target, std::vector<std::byte>(std::size_t{64} << 20, std::byte{1}));
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  test::freed_watch watch(target);
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
  test::expect_no_child_left();
}

TEST(InputSource, CloseLetsGoOfEveryFile) {
  // sort_file closes its inputs before the commit: an input that the output replaces is then
  // held by nobody but release_in_background's process.
  test::scratch_dir dir;
  test::write_file(dir.file("a"), std::vector<std::byte>(64, std::byte{1}));
  test::write_file(dir.file("b"), std::vector<std::byte>(32, std::byte{2}));
  input_source input({dir.file("a"), dir.file("b")}, 8);
  const int a = input.descriptor(0).get();
  ASSERT_TRUE(input.descriptor(1));
  input.close();
  EXPECT_FALSE(input.descriptor(0));
  EXPECT_FALSE(input.descriptor(1));
  EXPECT_EQ(::fcntl(a, F_GETFD), -1) << "closed, not only forgotten";
  EXPECT_EQ(input.known_size(), std::optional<std::uint64_t>(96)) << "what it was stays known";
}

}  // namespace
}  // namespace gpusort::io
