// O_DIRECT transfers of arbitrary ranges: aligned middles past the cache, ragged ends through
// it, so that callers keep moving records at any offset from or into any buffer.
#include "io/direct_io.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "gpusort/error.hpp"

namespace gpusort::io {
namespace {

constexpr std::uint64_t block = direct_io_alignment;
/// Bounce buffer per call when the memory is not laid out like the file: large enough that
/// each request still moves megabytes, small enough to allocate per call.
constexpr std::size_t bounce_bytes = std::size_t{8} << 20;


/// A range cut at block boundaries: [offset, first) and [last, end) partial, [first, last)
/// whole blocks.
struct block_cut {
  std::uint64_t first;
  std::uint64_t last;
  block_cut(std::uint64_t offset, std::uint64_t end)
      : first(std::min((offset + block - 1) / block * block, end)),
        last(std::max(end / block * block, first)) {}
};

transfer_config direct_config(const transfer_config& config) {
  transfer_config c = config;
  c.force_async = false;  // nothing to find in the cache: no hop through the worker pool
  c.block_bytes = std::max<std::size_t>(config.block_bytes / block * block, block);
  return c;
}

}  // namespace

void aligned_free::operator()(std::byte* p) const noexcept { std::free(p); }

aligned_bytes allocate_aligned(std::size_t bytes, const char* what) {
  void* p = std::aligned_alloc(block, (bytes + block - 1) / block * block);
  if (p == nullptr) throw out_of_memory(what, bytes);
  return aligned_bytes(static_cast<std::byte*>(p));
}

std::optional<file_descriptor> reopen_direct(const file_descriptor& file, int flags) {
  const std::string self = "/proc/self/fd/" + std::to_string(file.get());
  const int fd = ::open(self.c_str(), flags | O_DIRECT | O_CLOEXEC);
  if (fd < 0) {
    if (errno == EINVAL || errno == ENOENT || errno == EOPNOTSUPP) return std::nullopt;
    throw_error("open O_DIRECT " + file.path(), errno);
  }
  return file_descriptor(fd, file.path());
}

bool laid_out_like_file(std::uint64_t offset, const std::byte* data) noexcept {
  return (reinterpret_cast<std::uintptr_t>(data) - offset) % block == 0;
}

void append_range(file_pair file, std::uint64_t offset, std::span<std::byte> data,
                  std::vector<io_segment>& out) {
  if (data.empty()) return;
  if (file.direct == nullptr || !laid_out_like_file(offset, data.data())) {
    out.push_back({&file.buffered, offset, data, false});
    return;
  }
  const std::uint64_t end = offset + data.size();
  const block_cut cut(offset, end);
  if (cut.first > offset)
    out.push_back({&file.buffered, offset, data.first(cut.first - offset), false});
  if (cut.last > cut.first)
    out.push_back(
        {file.direct, cut.first, data.subspan(cut.first - offset, cut.last - cut.first), true});
  if (end > cut.last)
    out.push_back({&file.buffered, cut.last, data.subspan(cut.last - offset), false});
}

namespace {

/// Moves a range that is not laid out like the file: its whole blocks through an aligned
/// bounce buffer with O_DIRECT, the ragged ends through the page cache.
void move_through_bounce(file_pair file, std::uint64_t offset, std::span<std::byte> data,
                         bool to_file, uring& ring, const transfer_config& config) {
  const std::uint64_t end = offset + data.size();
  const block_cut cut(offset, end);
  std::vector<io_segment> ends;
  if (cut.first > offset)
    ends.push_back({&file.buffered, offset, data.first(cut.first - offset), false});
  if (end > cut.last)
    ends.push_back({&file.buffered, cut.last, data.subspan(cut.last - offset), false});
  if (to_file) ring.write_batch(ends, config);
  else ring.read_batch(ends, config);
  if (cut.last == cut.first) return;
  const aligned_bytes bounce = allocate_aligned(bounce_bytes, "O_DIRECT bounce buffer");
  std::byte* mem = data.data() + (cut.first - offset);
  const std::size_t bytes = static_cast<std::size_t>(cut.last - cut.first);
  const transfer_config c = direct_config(config);
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(bounce_bytes, bytes - done);
    const io_segment seg{file.direct, cut.first + done, {bounce.get(), n}, true};
    if (to_file) {
      std::memcpy(bounce.get(), mem + done, n);
      ring.write_batch({&seg, 1}, c);
    } else {
      ring.read_batch({&seg, 1}, c);
      std::memcpy(mem + done, bounce.get(), n);
    }
    done += n;
  }
}

/// read_range and write_range.
void move_range(file_pair file, std::uint64_t offset, std::span<std::byte> data, bool to_file,
                uring& ring, const transfer_config& config) {
  if (file.direct != nullptr && !laid_out_like_file(offset, data.data())) {
    move_through_bounce(file, offset, data, to_file, ring, config);
    return;
  }
  std::vector<io_segment> segments;
  append_range(file, offset, data, segments);
  const transfer_config c = file.direct != nullptr ? direct_config(config) : config;
  if (to_file) ring.write_batch(segments, c);
  else ring.read_batch(segments, c);
}

}  // namespace

void read_range(file_pair file, std::uint64_t offset, std::span<std::byte> dst, uring& ring,
                const transfer_config& config) {
  move_range(file, offset, dst, false, ring, config);
}

void write_range(file_pair file, std::uint64_t offset, std::span<const std::byte> src,
                 uring& ring, const transfer_config& config) {
  move_range(file, offset, {const_cast<std::byte*>(src.data()), src.size()}, true, ring, config);
}

}  // namespace gpusort::io
