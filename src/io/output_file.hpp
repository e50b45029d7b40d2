// The output of a sort: a hidden temporary file that replaces a regular target atomically at the
// end, or the target itself where replacing it would damage it (stdout, devices, FIFOs).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "io/file_descriptor.hpp"

namespace gpusort::io {

class uring;

/**
 * Opens the place the output is written to, after checking that the caller may write it.
 * - A regular file (or a name that does not exist yet) is written into a temporary file beside
 *   it, which commit() renames over it: the target is untouched until then, and keeps its mode,
 *   owner and group. The temporary is an unnamed O_TMPFILE (it cannot outlive the process, not
 *   even on SIGKILL); where the filesystem lacks O_TMPFILE or /proc is not mounted, a named
 *   hidden file (mode 0600 until the end) that the signal handlers remove.
 * - A regular file with several hard links, or whose owner or group the caller cannot give a
 *   new file, is also written into a temporary first, and then copied into the target by
 *   commit(): a rename would split the links or change who may read the file.
 * - A symbolic link is followed: the file it points to is replaced, the link stays.
 * - "-" (stdout), FIFOs, character and block devices and sockets are written in place, in
 *   order: they cannot be renamed over. Standard output redirected to a regular file is
 *   written at offsets from where its position stood.
 * @throw gpusort::error when the target is a directory, is not writable by the caller, or its
 *   directory is not writable.
 */
class output_file {
 public:
  /// How the bytes reach the target.
  enum class kind : std::uint8_t {
    replace,     ///< temporary renamed over the target by commit()
    copy_back,   ///< temporary copied into the target by commit() (hard-linked target)
    positioned,  ///< the target itself, written at base_offset() + offset (stdout to a file)
    stream,      ///< the target itself, written in order at its position (pipe, device)
  };
  /// How the temporary file is made: `automatic` prefers O_TMPFILE, `named` always makes a
  /// named hidden file (what happens where O_TMPFILE or /proc is missing; tests force it).
  enum class temp_naming : std::uint8_t { automatic, named };

  explicit output_file(std::string target, temp_naming naming = temp_naming::automatic);
  ~output_file();
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;
  output_file(output_file&&) = delete;
  output_file& operator=(output_file&&) = delete;

  [[nodiscard]] const file_descriptor& fd() const noexcept { return fd_; }
  [[nodiscard]] kind how() const noexcept { return kind_; }
  /// True when bytes must arrive in order at the file position (pipes, devices, O_APPEND).
  [[nodiscard]] bool is_stream() const noexcept { return kind_ == kind::stream; }
  /// True when the output is a temporary file of ours from offset 0: it may be preallocated
  /// and mapped.
  [[nodiscard]] bool is_private_file() const noexcept {
    return kind_ == kind::replace || kind_ == kind::copy_back;
  }
  /// Where byte 0 of the output goes in fd() (non-zero only for positioned outputs).
  [[nodiscard]] std::uint64_t base_offset() const noexcept { return base_offset_; }
  /// Where the records go in fd(): after the base offset and the header. Every sink writes
  /// record byte `offset` at data_offset() + offset.
  [[nodiscard]] std::uint64_t data_offset() const noexcept {
    return base_offset_ + header_.size();
  }

  /**
   * Puts `header` (an .npy header) before the records. The first call, before any sink is
   * made, fixes its length; later calls (--unique learns the final shape at the end) must keep
   * it. A stream output gets the header from its sink, ahead of the first record
   * (write_stream_header); every other output from commit(), so that it says what was kept.
   * @throw gpusort::error when the length changes, or a stream's header, already written,
   *   would.
   */
  void set_header(std::vector<std::byte> header);
  [[nodiscard]] std::span<const std::byte> header() const noexcept { return header_; }
  /// Stream outputs: writes the header where the stream stands, once. The sink that writes
  /// the stream calls it before the first record; commit() does, where no sink did.
  void write_stream_header(uring& ring);
  /// The name given by the caller, for messages.
  [[nodiscard]] const std::string& target() const noexcept { return target_; }

  /**
   * Makes the written bytes the target: writes the header (set_header), checks that it and all
   * `bytes` of records reached the file, fsyncs when asked, then renames (or copies) the
   * temporary into place. A positioned output is left
   * positioned after the bytes written, as any writer would leave it.
   * @throw gpusort::error (with the errno) when any step fails; the target is then untouched
   *   for replaced outputs.
   */
  void commit(bool fsync, std::uint64_t bytes);

  /**
   * Keeps only the first `kept` of the `written` record bytes of a private temporary file
   * (--unique compacted them there), after the header. Outputs written in place cannot shrink.
   * @throw gpusort::error naming the output when the truncation fails.
   */
  void shrink(std::uint64_t written, std::uint64_t kept);

 private:
  /// The file commit() is about to replace, held open so that its freeing can be handed to
  /// release_in_background; empty where nothing is replaced or it is small.
  [[nodiscard]] file_descriptor hold_replaced_file() const;
  void open_temporary(temp_naming naming);
  void make_named_temporary();
  void apply_final_mode();
  void link_and_rename();
  void copy_into_target(std::uint64_t bytes);

  std::string target_;     // as given
  std::string resolved_;   // symbolic links followed: the file that is replaced
  std::string temp_path_;  // a named temporary, while it exists
  kind kind_ = kind::replace;
  std::uint64_t base_offset_ = 0;
  std::uint64_t start_size_ = 0;  // stream outputs that are regular files (O_APPEND)
  bool regular_stream_ = false;
  // What the finished file should carry: the replaced file's mode and owner, or a new file's.
  bool existed_ = false;
  mode_t final_mode_ = 0;
  uid_t owner_uid_ = 0;
  gid_t owner_gid_ = 0;
  int cleanup_slot_ = -1;
  bool committed_ = false;
  std::vector<std::byte> header_;
  std::atomic<bool> header_written_{false};  // streams: by the sink's writer thread
  file_descriptor target_fd_;  // copy_back: the hard-linked target, opened for writing
  file_descriptor fd_;
};

}  // namespace gpusort::io
