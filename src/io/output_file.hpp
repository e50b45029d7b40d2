// The output of a sort: stdout, or a hidden temporary file beside the target that replaces it
// atomically (rename(2)) once everything is written.
#pragma once

#include <cstdint>
#include <string>

#include "io/file_descriptor.hpp"

namespace gpusort::io {

/**
 * Opens the place the output is written to.
 * - "-" is stdout: written in order, nothing to rename.
 * - Otherwise an unnamed O_TMPFILE in the target's directory (it cannot outlive the process,
 *   not even on SIGKILL); where the filesystem lacks O_TMPFILE, a named hidden file that the
 *   signal handlers remove. The target is untouched until commit().
 * @throw gpusort::error when the directory is not writable.
 */
class output_file {
 public:
  explicit output_file(std::string target);
  ~output_file();
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;
  output_file(output_file&&) = delete;
  output_file& operator=(output_file&&) = delete;

  [[nodiscard]] const file_descriptor& fd() const noexcept { return fd_; }
  [[nodiscard]] bool is_stream() const noexcept { return stream_; }
  [[nodiscard]] const std::string& target() const noexcept { return target_; }

  /// Makes the written file the target: fsync (when asked), link and rename into place.
  void commit(bool fsync);

 private:
  std::string target_;
  std::string temp_path_;  // named fallback only
  int cleanup_slot_ = -1;
  bool stream_ = false;
  bool committed_ = false;
  file_descriptor fd_;
};

}  // namespace gpusort::io
