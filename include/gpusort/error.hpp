// Error types thrown by gpusort and the precondition macro used across the library.
#pragma once

#include <cerrno>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <system_error>

namespace gpusort {

/**
 * Any failure that should stop a sort: bad input, bad options, I/O or device trouble.
 * - `what()` is one line: "<operation>: <path or object>: <cause>".
 * - `code()` keeps the errno of a failed system call (generic category), so that callers can
 *   tell ENOSPC from EIO from EFBIG; it is 0 for failures that have no errno (bad options).
 */
class error : public std::system_error {
 public:
  explicit error(const std::string& what, int errnum = 0)
      : std::system_error(errnum, std::generic_category()), message_(what) {}
  [[nodiscard]] const char* what() const noexcept override { return message_.what(); }

 private:
  // std::runtime_error copies without throwing (a shared string), as an exception must.
  std::runtime_error message_;
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
      : error(what, ENOMEM), bytes_(bytes) {}
  [[nodiscard]] std::uint64_t bytes() const noexcept { return bytes_; }

 private:
  std::uint64_t bytes_;
};

/// Throws gpusort::error built from `what` and, when errnum != 0, strerror(errnum); the error's
/// code() is errnum.
[[noreturn]] void throw_error(const std::string& what, int errnum = 0);

}  // namespace gpusort

/// Checks a precondition; the message is only built when the check fails.
#define GPUSORT_EXPECTS(cond, message)                            \
  do {                                                            \
    if (!(cond)) [[unlikely]] ::gpusort::throw_error((message)); \
  } while (0)
