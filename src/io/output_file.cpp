// Atomic replacement of the output file: write to a temporary, rename at the end.
#include "io/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <random>

#include "gpusort/error.hpp"
#include "io/signal_cleanup.hpp"

namespace gpusort::io {
namespace {

std::string parent_directory(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string unique_suffix() {
  std::random_device rd;
  const auto value = (std::uint64_t{rd()} << 32) ^ rd() ^ static_cast<std::uint64_t>(::getpid());
  static constexpr char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  std::string s;
  for (std::uint64_t v = value; s.size() < 10; v /= 36) s += digits[v % 36];
  return s;
}

}  // namespace

output_file::output_file(std::string target) : target_(std::move(target)) {
  if (target_ == "-") {
    stream_ = true;
    fd_ = file_descriptor::borrow(STDOUT_FILENO, "standard output");
    // Standard output may still be a regular file (`> out.bin`): treat it as a stream anyway,
    // since we do not own its name.
    return;
  }
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw_error("cannot write " + target_ + ": it is a directory");
  const std::string dir = parent_directory(target_);
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
  if (fd >= 0) {
    fd_ = file_descriptor(fd, target_);
    return;
  }
  const int tmpfile_errno = errno;
  if (tmpfile_errno != EOPNOTSUPP && tmpfile_errno != EISDIR && tmpfile_errno != EINVAL)
    throw_error("cannot create output in " + dir + " for " + target_, tmpfile_errno);
  // The filesystem has no O_TMPFILE: a hidden named file beside the target.
  for (int attempt = 0; attempt < 100; ++attempt) {
    temp_path_ = dir + "/." + base_name(target_) + ".gpusort-" + unique_suffix();
    fd = ::open(temp_path_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0666);
    if (fd >= 0) break;
    if (errno != EEXIST) throw_error("cannot create " + temp_path_, errno);
  }
  if (fd < 0) throw_error("cannot create a temporary file in " + dir, EEXIST);
  cleanup_slot_ = register_temp_path(temp_path_);
  fd_ = file_descriptor(fd, target_);
}

output_file::~output_file() {
  fd_.reset();
  if (!committed_ && !temp_path_.empty()) ::unlink(temp_path_.c_str());
  unregister_temp_path(cleanup_slot_);
}

void output_file::commit(bool fsync) {
  if (stream_) {
    committed_ = true;
    return;
  }
  if (fsync && ::fsync(fd_.get()) != 0) throw_error("fsync " + target_, errno);
  if (temp_path_.empty()) {
    // Give the unnamed file a name beside the target, then move it over the target.
    const std::string dir = parent_directory(target_);
    const std::string proc = "/proc/self/fd/" + std::to_string(fd_.get());
    for (int attempt = 0; attempt < 100; ++attempt) {
      temp_path_ = dir + "/." + base_name(target_) + ".gpusort-" + unique_suffix();
      if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, temp_path_.c_str(), AT_SYMLINK_FOLLOW) == 0)
        break;
      if (errno != EEXIST) {
        const int err = errno;
        temp_path_.clear();
        throw_error("cannot link the finished output into " + dir, err);
      }
    }
    cleanup_slot_ = register_temp_path(temp_path_);
  }
  if (::rename(temp_path_.c_str(), target_.c_str()) != 0)
    throw_error("cannot rename " + temp_path_ + " to " + target_, errno);
  committed_ = true;
  if (fsync) {
    // Make the rename itself durable.
    file_descriptor dir = file_descriptor::open(parent_directory(target_), O_RDONLY | O_DIRECTORY);
    if (::fsync(dir.get()) != 0) throw_error("fsync " + parent_directory(target_), errno);
  }
  fd_.close();
}

}  // namespace gpusort::io
