// Error types thrown by gpusort and the precondition macro used across the library.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gpusort {

/// Any failure that should stop a sort: bad input, bad options, I/O or device trouble.
/// `what()` is one line: "<operation>: <path or object>: <cause>".
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A CUDA runtime call failed; the message holds the call, file:line and the CUDA error string.
class cuda_error : public error {
 public:
  using error::error;
};

/// An allocation (host, pinned or device) of `bytes` failed.
class out_of_memory : public error {
 public:
  out_of_memory(const std::string& what, std::uint64_t bytes)
      : error(what), bytes_(bytes) {}
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  std::uint64_t bytes_;
};

/// Throws gpusort::error built from `what` and, when errnum != 0, strerror(errnum).
[[noreturn]] void throw_error(const std::string& what, int errnum = 0);

}  // namespace gpusort

/// Checks a precondition; the message is only built when the check fails.
#define GPUSORT_EXPECTS(cond, message)                            \
  do {                                                            \
    if (!(cond)) [[unlikely]] ::gpusort::throw_error((message)); \
  } while (0)
