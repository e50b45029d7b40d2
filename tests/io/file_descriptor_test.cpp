// file_descriptor: pipes grow to the system's largest buffer; other files are left alone.
#include "io/file_descriptor.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>

#include "test_support.hpp"

namespace gpusort::io {
namespace {

TEST(FileDescriptor, PipesGrowToTheLargestBufferAllowed) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const file_descriptor reader(fds[0], "pipe reader");
  const file_descriptor writer(fds[1], "pipe writer");
  const int before = ::fcntl(reader.get(), F_GETPIPE_SZ);
  reader.grow_pipe_buffer();
  const int after = ::fcntl(reader.get(), F_GETPIPE_SZ);
  long limit = 0;
  std::ifstream("/proc/sys/fs/pipe-max-size") >> limit;
  if (limit <= before) GTEST_SKIP() << "fs.pipe-max-size " << limit << " allows no more";
  EXPECT_EQ(after, limit);
  // Growing again, or the other end, is harmless.
  writer.grow_pipe_buffer();
  EXPECT_EQ(::fcntl(writer.get(), F_GETPIPE_SZ), after);
}

TEST(FileDescriptor, GrowingARegularFileDoesNothing) {
  test::scratch_dir dir;
  const file_descriptor f = file_descriptor::open(dir.file("f"), O_CREAT | O_RDWR, 0600);
  f.grow_pipe_buffer();
  EXPECT_EQ(::fcntl(f.get(), F_GETPIPE_SZ), -1);
  file_descriptor{}.grow_pipe_buffer();  // an empty descriptor too
}

}  // namespace
}  // namespace gpusort::io
