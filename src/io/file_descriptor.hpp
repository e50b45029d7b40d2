// Owning, move-only file descriptor that remembers the path it was opened from (for errors).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace gpusort::io {

class file_descriptor {
 public:
  file_descriptor() = default;
  file_descriptor(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  file_descriptor(const file_descriptor&) = delete;
  file_descriptor& operator=(const file_descriptor&) = delete;
  file_descriptor(file_descriptor&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)),
        owned_(other.owned_),
        path_(std::move(other.path_)) {}
  file_descriptor& operator=(file_descriptor&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
      owned_ = other.owned_;
      path_ = std::move(other.path_);
    }
    return *this;
  }
  ~file_descriptor() { reset(); }

  /// Opens `path` with open(2) flags; "-" is not special here. Throws gpusort::error.
  static file_descriptor open(const std::string& path, int flags, unsigned mode = 0666);
  /// Wraps a descriptor this object does not own (stdin, stdout): it is never closed.
  static file_descriptor borrow(int fd, std::string name);

  [[nodiscard]] int get() const noexcept { return fd_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] explicit operator bool() const noexcept { return fd_ >= 0; }

  /// Size of a regular file; throws if fstat fails.
  [[nodiscard]] std::uint64_t size() const;
  /// True for a regular file (seekable, with a known size); false for pipes, sockets, ttys.
  [[nodiscard]] bool is_regular() const;
  /// True for a pipe or FIFO; false for anything else, and where fstat fails.
  [[nodiscard]] bool is_pipe() const noexcept;

  /// Grows a pipe's buffer to the largest the system allows (fs.pipe-max-size, 1 MiB by
  /// default, against 64 KiB): a fast peer then moves 16 times more per call and per wake-up.
  /// Best effort: other descriptors, and a size we may not set, stay as they are.
  void grow_pipe_buffer() const noexcept;

  /// Closes now, reporting an error (close can report delayed write errors).
  void close();
  void reset() noexcept;

 private:
  int fd_ = -1;
  bool owned_ = true;
  std::string path_;
};

}  // namespace gpusort::io
