// Read-only mappings of file pieces laid end to end: address space reserved first, each piece
// then mapped over its part of it.
#include "io/file_view.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "gpusort/error.hpp"

namespace gpusort::io {

std::size_t page_bytes() noexcept {
  static const std::size_t bytes = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return bytes;
}

bool file_view::fits(std::span<const file_piece> pieces) noexcept {
  const std::size_t page = page_bytes();
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].file == nullptr || pieces[i].offset % page != 0) return false;
    if (i + 1 < pieces.size() && pieces[i].bytes % page != 0) return false;
  }
  return true;
}

file_view::file_view(std::span<const file_piece> pieces) {
  GPUSORT_EXPECTS(fits(pieces), "file_view: pieces not aligned to pages");
  const std::size_t page = page_bytes();
  for (const file_piece& p : pieces) size_ += p.bytes;
  if (size_ == 0) return;
  const auto reserved = static_cast<std::size_t>((size_ + page - 1) / page * page);
  void* base = ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                      -1, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    throw_error("mmap: reserve " + std::to_string(reserved) + " bytes", err);
  }
  mapping_ = unique_mapping(base, reserved);  // unmapped whole, pieces too, if one fails below
  std::uint64_t at = 0;
  for (const file_piece& p : pieces) {
    if (p.bytes == 0) continue;
    if (::mmap(mapping_.data() + at, static_cast<std::size_t>(p.bytes), PROT_READ,
               MAP_SHARED | MAP_FIXED, p.file->get(), static_cast<off_t>(p.offset)) == MAP_FAILED) {
      const int err = errno;
      throw_error("mmap " + p.file->path(), err);
    }
    at += p.bytes;
  }
  // Merges read each run front to back: the kernel may read ahead far and drop pages behind.
  ::madvise(mapping_.data(), reserved, MADV_SEQUENTIAL);
}

void file_view::will_need(std::uint64_t offset, std::uint64_t bytes) const noexcept {
  if (offset >= size()) return;
  const std::uint64_t page = page_bytes();
  const std::uint64_t first = offset / page * page;
  const std::uint64_t end = std::min<std::uint64_t>(offset + bytes, mapping_.length());
  if (end > first)
    ::madvise(mapping_.data() + first, static_cast<std::size_t>(end - first), MADV_WILLNEED);
}

}  // namespace gpusort::io
