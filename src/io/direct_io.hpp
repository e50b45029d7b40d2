// Reads and writes of a file range past the page cache (O_DIRECT), at any offset, from or
// into any memory: the aligned middle of the range goes to the disk directly, its ragged ends
// (less than a block each) through the page cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "io/file_descriptor.hpp"
#include "io/uring.hpp"

namespace gpusort::io {

/// Bytes every O_DIRECT transfer is aligned to (address, length and file offset): the largest
/// logical block size in use.
inline constexpr std::size_t direct_io_alignment = 4096;

/// Memory aligned for O_DIRECT transfers, freed when it goes.
struct aligned_free {
  void operator()(std::byte* p) const noexcept;
};
using aligned_bytes = std::unique_ptr<std::byte, aligned_free>;

/// `bytes` (rounded up to the alignment) aligned for O_DIRECT.
/// @throw gpusort::out_of_memory naming `what`
[[nodiscard]] aligned_bytes allocate_aligned(std::size_t bytes, const char* what);

/// A second descriptor of `file` opened with O_DIRECT and `flags` (O_RDONLY, O_WRONLY or
/// O_RDWR), or nullopt where its filesystem refuses O_DIRECT (tmpfs): I/O then stays buffered.
/// Works for unnamed (O_TMPFILE, unlinked) files too.
/// @throw gpusort::error for any other failure to open it
[[nodiscard]] std::optional<file_descriptor> reopen_direct(const file_descriptor& file, int flags);

/// A file opened twice: `buffered` always, `direct` when O_DIRECT is to be used and allowed.
struct file_pair {
  const file_descriptor& buffered;
  const file_descriptor* direct = nullptr;
};

/**
 * Appends to `out` the requests that move `data` to or from `offset` of `file` in one batch
 * (uring::read_batch, write_batch): the whole aligned blocks with O_DIRECT when `data` is laid
 * out like the file (address and offset agree modulo the alignment), the ragged ends and
 * anything not so laid out through the page cache.
 */
void append_range(file_pair file, std::uint64_t offset, std::span<std::byte> data,
                  std::vector<io_segment>& out);

/// True when `data` at `offset` is laid out like the file: O_DIRECT can move its whole blocks
/// in place.
[[nodiscard]] bool laid_out_like_file(std::uint64_t offset, const std::byte* data) noexcept;

/**
 * Reads dst.size() bytes at `offset`: the whole aligned blocks inside the range with O_DIRECT
 * (straight into dst where dst is laid out like the file, their addresses and offsets agreeing
 * modulo the alignment; else through an aligned bounce buffer), the rest buffered. Without
 * file.direct, all of it buffered.
 * @throw gpusort::error naming the file; a file that ends early is an error.
 */
void read_range(file_pair file, std::uint64_t offset, std::span<std::byte> dst, uring& ring,
                const transfer_config& config);

/// Writes src at `offset` the same way. Partial blocks are written buffered: ranges written by
/// different calls may share a block, never a byte.
/// @throw gpusort::error naming the file
void write_range(file_pair file, std::uint64_t offset, std::span<const std::byte> src,
                 uring& ring, const transfer_config& config);

}  // namespace gpusort::io
