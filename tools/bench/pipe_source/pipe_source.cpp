// gpusort-bench-pipe-source FILE [REPEAT]: writes FILE to standard output REPEAT times (default
// once) by splicing its page-cache pages into the pipe, so that a benchmark of a reader of
// stdin measures the reader. `cat` copies every byte into the pipe and made a producer of
// 1.6-2.1 GB/s on the H100 machine; splicing moves page references and fed 25 GB/s there.
// Standard output must be a pipe; on anything else the bytes are copied with write(2).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gpusort/error.hpp"
#include "io/file_descriptor.hpp"

namespace {

constexpr std::size_t move_bytes = std::size_t{1} << 20;

/// Copies `fd` from `offset` to standard output with read and write (stdout is no pipe).
void copy_rest(int fd, const std::string& path, loff_t offset) {
  std::vector<char> buffer(move_bytes);
  for (;;) {
    const ssize_t got = ::pread(fd, buffer.data(), buffer.size(), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) gpusort::throw_error("read " + path, errno);
    if (got == 0) return;
    offset += got;
    for (ssize_t done = 0; done < got;) {
      const ssize_t put = ::write(STDOUT_FILENO, buffer.data() + done,
                                  static_cast<std::size_t>(got - done));
      if (put < 0 && errno == EINTR) continue;
      if (put < 0) gpusort::throw_error("write standard output", errno);
      done += put;
    }
  }
}

void send(const std::string& path) {
  const gpusort::io::file_descriptor file =
      gpusort::io::file_descriptor::open(path, O_RDONLY);
  loff_t offset = 0;
  for (;;) {
    const ssize_t moved = ::splice(file.get(), &offset, STDOUT_FILENO, nullptr, move_bytes,
                                   SPLICE_F_MOVE | SPLICE_F_MORE);
    if (moved < 0 && errno == EINTR) continue;
    if (moved < 0 && errno == EINVAL) return copy_rest(file.get(), path, offset);
    if (moved < 0) gpusort::throw_error("splice " + path + " into standard output", errno);
    if (moved == 0) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: gpusort-bench-pipe-source FILE [REPEAT] | reader\n");
    return argc == 2 ? 0 : 2;
  }
  const long repeat = argc == 3 ? std::strtol(argv[2], nullptr, 10) : 1;
  try {
    gpusort::io::file_descriptor::borrow(STDOUT_FILENO, "stdout").grow_pipe_buffer();
    for (long i = 0; i < repeat; ++i) send(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpusort-bench-pipe-source: %s\n", e.what());
    return 1;
  }
  return 0;
}
