// The input of a sort: one or more files or stdin ("-"), read as one concatenated byte stream.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/file_descriptor.hpp"
#include "io/npy_header.hpp"
#include "io/pipe_fanout.hpp"
#include "io/uring.hpp"

namespace gpusort::io {

/// A read-only, shared mapping of an input file; unmapped when destroyed. Move-only.
/// While it exists, a SIGBUS inside it (the file shrank) is reported as an error naming
/// `path` where the CLI's signal handlers are installed (io::install_signal_cleanup).
class input_mapping {
 public:
  input_mapping(void* base, std::size_t length, std::size_t offset,
                const std::string& path) noexcept;
  input_mapping(input_mapping&& other) noexcept;
  input_mapping& operator=(input_mapping&& other) noexcept;
  input_mapping(const input_mapping&) = delete;
  input_mapping& operator=(const input_mapping&) = delete;
  ~input_mapping();

  /// The input's bytes (from where it begins, e.g. stdin's position).
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept {
    return {static_cast<const std::byte*>(base_) + offset_, length_ - offset_};
  }

 private:
  void* base_ = nullptr;
  std::size_t length_ = 0;
  std::size_t offset_ = 0;
  int sigbus_slot_ = -1;
};

/**
 * Opens every input up front, so that a missing or unreadable file fails before any work.
 * - Regular files are read at offsets with several requests in flight; streams (pipes, ttys,
 *   stdin) sequentially until they end, a pipe's large reads through a pipe_fanout.
 * - NumPy .npy inputs (recognised by their magic string, on streams too) are read after their
 *   header: every offset, size and mapping below counts their records only. All inputs are
 *   .npy files of one dtype, or none is; npy() describes them.
 * @throw gpusort::error naming the file and the cause.
 */
class input_source {
 public:
  /**
   * `record_size`: every raw input must hold whole records (checked here, up front, for
   * regular files). An .npy input must hold exactly what its header's shape says (a stream
   * is checked when it ends) and be one gpusort sorts (io::check_sortable).
   * A stream's first bytes are read here, to see whether it is an .npy file: this waits for
   * the writer of a pipe.
   */
  input_source(const std::vector<std::string>& paths, std::uint32_t record_size);

  /// Total bytes when every input is a regular file; nullopt when any is a stream.
  [[nodiscard]] std::optional<std::uint64_t> known_size() const noexcept { return known_size_; }
  /// Bytes read so far.
  [[nodiscard]] std::uint64_t position() const noexcept { return position_; }
  /// Names for messages: "a.bin", or "a.bin, b.bin".
  [[nodiscard]] std::string describe() const;

  /// The first input's .npy header when the inputs are .npy files (all share its dtype);
  /// nullptr when they are raw records.
  [[nodiscard]] const npy_header* npy() const noexcept { return npy_ ? &*npy_ : nullptr; }
  /// The records all .npy inputs hold together, as their headers say (0 for raw inputs).
  [[nodiscard]] std::uint64_t npy_records() const noexcept { return npy_records_; }
  /// Bytes per record: `record_size`, or an .npy dtype's element size.
  [[nodiscard]] std::uint32_t record_size() const noexcept { return record_size_; }

  /**
   * Reads the next bytes of the concatenation into dst; fills dst completely unless the input
   * ends first. Returns the bytes read (0 at the end). A stream that ends inside a record is
   * an error naming it.
   */
  std::size_t read(std::span<std::byte> dst, uring& ring, const transfer_config& config = {});

  /**
   * Reads dst.size() bytes at `offset` of the concatenation, independently of read()'s
   * position; only when known_size() is set, and offset + dst.size() must not pass it.
   * Several threads may call it at once, each with its own ring.
   */
  void read_at(std::uint64_t offset, std::span<std::byte> dst, uring& ring,
               const transfer_config& config = {}) const;
  /**
   * Reads dst.size() bytes at `offset` of the concatenation only where the page cache holds
   * them (preadv2 with RWF_NOWAIT): false, dst undefined, where any of them is not there (or
   * the filesystem cannot tell), so that a sample never waits for the disk. Only when
   * known_size() is set, and offset + dst.size() must not pass it. Safe from several threads.
   */
  [[nodiscard]] bool read_if_cached(std::uint64_t offset, std::span<std::byte> dst) const;

  /**
   * Maps the whole input read-only, with its page tables filled in, when it is one regular,
   * non-empty file that read() has not started on: a sort then reads the page cache in place
   * instead of copying it into fresh memory. nullopt otherwise. Does not move position().
   * A file truncated by another process while it is mapped raises SIGBUS on access (see
   * input_mapping).
   * @throw gpusort::error naming the file when mmap fails.
   */
  [[nodiscard]] std::optional<input_mapping> map_whole() const;

  /// From now on, read() and read_at() move the aligned middle of every regular input's ranges
  /// with O_DIRECT, past the page cache (inputs whose filesystem refuses it stay buffered).
  /// Call before any reading starts. @throw gpusort::error when reopening a file fails
  void read_past_cache();

  /// The inputs one by one (--merge takes each as a run of its own).
  [[nodiscard]] std::size_t input_count() const noexcept { return inputs_.size(); }
  [[nodiscard]] const file_descriptor& descriptor(std::size_t i) const { return inputs_[i].fd; }
  /**
   * Maps input `i` read-only from where it begins, when it is a regular, non-empty file;
   * nullopt otherwise (read a stream through descriptor(i)). `populate`: fill the page tables
   * now (MAP_POPULATE) rather than on first access, which an input far larger than memory
   * should not ask for.
   * @throw gpusort::error naming the file when mmap fails.
   */
  [[nodiscard]] std::optional<input_mapping> map_input(std::size_t i, bool populate) const;
  /**
   * Reads the next bytes of input `i`, a stream (not a regular file), as read() does: the
   * bytes the constructor looked at come first, an .npy header never, and no more records
   * than it announces. Fills dst unless the stream ends; returns 0 at its end, where a raw
   * stream that ends inside a record, or an .npy stream short of its shape or longer, is an
   * error naming it. For callers that take the inputs one by one (--check, --merge).
   */
  std::size_t read_stream(std::size_t i, std::span<std::byte> dst);

  /// Reads a pipe with at most `lanes` helper threads (pipe_fanout; default
  /// pipe_fanout::default_lanes()); fewer than two read it directly. Call before reading.
  void limit_pipe_lanes(std::size_t lanes) noexcept {
    pipe_lanes_ = std::min(pipe_lanes_, lanes);
  }

  /// Closes every input file once the sort has read all it needs: an input that the output
  /// replaces (`gpusort f f`) is then not held open past the rename, and release_in_background
  /// frees it instead of our exit. Standard input stays open. Nothing may be read afterwards.
  void close() noexcept;

 private:
  struct input {
    file_descriptor fd;
    bool regular = false;
    std::uint64_t size = 0;  // regular files only
    // Where the records begin: stdin redirected from a file may not be at 0, and an .npy
    // file's follow its header.
    std::uint64_t start = 0;
    std::uint64_t consumed = 0;  // regular files: the offset reached; streams: record bytes
    bool npy = false;
    std::uint64_t npy_bytes = 0;  // .npy: the record bytes its header announces
    std::string npy_shape;        // .npy: its shape, for messages
    // Streams: the first bytes, read to look for an .npy header, that turned out to be
    // records; whether the stream ended (while looking, or later), and was checked then.
    std::vector<std::byte> peeked;
    bool ended = false;
    bool end_checked = false;
    std::optional<file_descriptor> direct;  // read_past_cache(): the same file, O_DIRECT
    bool pipe = false;                      // a stream that is a pipe (or FIFO)
    std::unique_ptr<pipe_fanout> fanout;    // a pipe's, from its first large read on
  };
  /// Calls part(input, file offset, its part of dst) for each input that [offset, offset +
  /// dst.size()) of the concatenation reaches, in order, until one returns false (then false).
  /// `what` names the caller in the error for a range past the end.
  template <typename Part>
  bool each_part(std::uint64_t offset, std::span<std::byte> dst, const char* what,
                 Part&& part) const;
  /// Reads a range of one regular input, past the cache where read_past_cache() asked.
  static void read_file_range(const input& in, std::uint64_t offset, std::span<std::byte> dst,
                              uring& ring, const transfer_config& config);
  /// Reads an .npy header at the start of regular input `in` when there is one.
  void read_file_header(input& in);
  /// The fanout that reads `bytes` of stream `in`, made on first use; nullptr where a read of
  /// the stream itself serves (not a pipe, or a short read).
  pipe_fanout* fanout_for(input& in, std::size_t bytes);
  /// Looks at the first bytes of stream `in`: an .npy header is read, other bytes kept.
  void read_stream_header(input& in);
  /// Takes `header` as the description of `in` (checks it and that it matches the others).
  void adopt_npy(input& in, npy_header header);
  /// read_stream with `raw` reading from the stream until a span is full or it ends.
  template <typename Raw>
  std::size_t stream_bytes(input& in, std::span<std::byte> dst, Raw&& raw);

  std::vector<input> inputs_;
  std::size_t current_ = 0;
  std::uint32_t record_size_;
  std::optional<std::uint64_t> known_size_;
  std::uint64_t position_ = 0;
  std::optional<npy_header> npy_;
  std::string npy_name_;  // the input npy_ describes
  std::uint64_t npy_records_ = 0;
  std::size_t pipe_lanes_ = pipe_fanout::default_lanes();
};

}  // namespace gpusort::io
