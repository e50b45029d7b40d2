// Opening, sizing and closing files with errors that name the path and the cause.
#include "io/file_descriptor.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "gpusort/error.hpp"

namespace gpusort::io {

file_descriptor file_descriptor::open(const std::string& path, int flags, unsigned mode) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_error("cannot open " + path, errno);
  return file_descriptor(fd, path);
}

file_descriptor file_descriptor::borrow(int fd, std::string name) {
  file_descriptor f(fd, std::move(name));
  f.owned_ = false;
  return f;
}

std::uint64_t file_descriptor::size() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw_error("cannot stat " + path_, errno);
  return static_cast<std::uint64_t>(st.st_size);
}

bool file_descriptor::is_regular() const {
  struct stat st {};
  if (::fstat(fd_, &st) != 0) throw_error("cannot stat " + path_, errno);
  return S_ISREG(st.st_mode);
}

void file_descriptor::close() {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  if (owned_ && ::close(fd) != 0 && errno != EINTR) throw_error("cannot close " + path_, errno);
}

void file_descriptor::reset() noexcept {
  if (fd_ >= 0 && owned_) ::close(fd_);
  fd_ = -1;
}

bool file_descriptor::is_pipe() const noexcept {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && S_ISFIFO(st.st_mode);
}

void file_descriptor::grow_pipe_buffer() const noexcept {
  if (!is_pipe()) return;
  try {
    std::ifstream limit("/proc/sys/fs/pipe-max-size");
    long bytes = 0;
    if (!(limit >> bytes) || bytes <= 0) return;
    static_cast<void>(
        ::fcntl(fd_, F_SETPIPE_SZ, static_cast<int>(std::min<long>(bytes, 1L << 30))));
  } catch (...) {  // an optimisation only
  }
}

}  // namespace gpusort::io
