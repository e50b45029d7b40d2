// Pieces of files mapped read-only, one after another, into one range of addresses: a run
// spilled in stripes across several files reads like memory, straight out of the page cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/unique_mapping.hpp"
#include "io/file_descriptor.hpp"

namespace gpusort::io {

/// `bytes` at `offset` of `file`.
struct file_piece {
  const file_descriptor* file = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

/**
 * A read-only shared mapping of `pieces` laid end to end. Move-only; unmapped when it goes.
 * Reading a page that is not cached waits for the disk: callers ask for read-ahead (will_need)
 * before they touch a range.
 */
class file_view {
 public:
  /// True when `pieces` can be mapped end to end: every piece starts on a page of its file, and
  /// every piece but the last holds whole pages.
  [[nodiscard]] static bool fits(std::span<const file_piece> pieces) noexcept;

  /// Maps `pieces` (fits() must hold). @throw gpusort::error naming the file that failed
  explicit file_view(std::span<const file_piece> pieces);
  /// A view moved from is empty.
  file_view(file_view&& other) noexcept = default;
  file_view& operator=(file_view&& other) noexcept = default;

  [[nodiscard]] const std::byte* data() const noexcept { return mapping_.data(); }
  [[nodiscard]] std::uint64_t size() const noexcept {
    return mapping_.data() != nullptr ? size_ : 0;
  }
  /// Starts reading [offset, offset + bytes) into the page cache in the background (best
  /// effort: a page already cached costs a lookup).
  void will_need(std::uint64_t offset, std::uint64_t bytes) const noexcept;

 private:
  unique_mapping mapping_;  // whole pages of address space, the pieces mapped over them
  std::uint64_t size_ = 0;
};

/// The system's page size.
[[nodiscard]] std::size_t page_bytes() noexcept;

}  // namespace gpusort::io
