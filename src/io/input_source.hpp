// The input of a sort: one or more files or stdin ("-"), read as one concatenated byte stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/file_descriptor.hpp"
#include "io/uring.hpp"

namespace gpusort::io {

/**
 * Opens every input up front, so that a missing or unreadable file fails before any work.
 * - Regular files are read at offsets with several requests in flight; streams (pipes, ttys,
 *   stdin) sequentially until they end.
 * @throw gpusort::error naming the file and the cause.
 */
class input_source {
 public:
  /// `record_size`: every regular input must hold whole records (checked here, up front).
  input_source(const std::vector<std::string>& paths, std::uint32_t record_size);

  /// Total bytes when every input is a regular file; nullopt when any is a stream.
  [[nodiscard]] std::optional<std::uint64_t> known_size() const noexcept { return known_size_; }
  /// Bytes read so far.
  [[nodiscard]] std::uint64_t position() const noexcept { return position_; }
  /// Names for messages: "a.bin", or "a.bin, b.bin".
  [[nodiscard]] std::string describe() const;

  /**
   * Reads the next bytes of the concatenation into dst; fills dst completely unless the input
   * ends first. Returns the bytes read (0 at the end). A stream that ends inside a record is
   * an error naming it.
   */
  std::size_t read(std::span<std::byte> dst, uring& ring, const transfer_config& config = {});

 private:
  struct input {
    file_descriptor fd;
    bool regular = false;
    std::uint64_t size = 0;  // regular files only
    std::uint64_t consumed = 0;
  };
  std::vector<input> inputs_;
  std::size_t current_ = 0;
  std::uint32_t record_size_;
  std::optional<std::uint64_t> known_size_;
  std::uint64_t position_ = 0;
};

}  // namespace gpusort::io
