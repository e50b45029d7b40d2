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

struct free_deleter {
  void operator()(std::byte* p) const noexcept { std::free(p); }
};

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

/// Runs `move(file_offset, aligned memory)` over the whole blocks [first, last), where `mem`
/// holds their bytes: in place when `mem` is aligned, else through a bounce buffer, `copy_in`
/// telling which way the bytes go through it.
template <typename Move>
void whole_blocks(std::uint64_t first, std::uint64_t last, std::byte* mem, bool to_file,
                  const Move& move) {
  const std::size_t bytes = static_cast<std::size_t>(last - first);
  if (reinterpret_cast<std::uintptr_t>(mem) % block == 0) {
    move(first, std::span<std::byte>(mem, bytes));
    return;
  }
  void* p = std::aligned_alloc(block, bounce_bytes);
  if (p == nullptr) throw out_of_memory("O_DIRECT bounce buffer", bounce_bytes);
  const std::unique_ptr<std::byte, free_deleter> bounce(static_cast<std::byte*>(p));
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(bounce_bytes, bytes - done);
    if (to_file) std::memcpy(bounce.get(), mem + done, n);
    move(first + done, std::span<std::byte>(bounce.get(), n));
    if (!to_file) std::memcpy(mem + done, bounce.get(), n);
    done += n;
  }
}

}  // namespace

std::optional<file_descriptor> reopen_direct(const file_descriptor& file, int flags) {
  const std::string self = "/proc/self/fd/" + std::to_string(file.get());
  const int fd = ::open(self.c_str(), flags | O_DIRECT | O_CLOEXEC);
  if (fd < 0) {
    if (errno == EINVAL || errno == ENOENT || errno == EOPNOTSUPP) return std::nullopt;
    throw_error("open O_DIRECT " + file.path(), errno);
  }
  return file_descriptor(fd, file.path());
}

void read_range(file_pair file, std::uint64_t offset, std::span<std::byte> dst, uring& ring,
                const transfer_config& config) {
  if (file.direct == nullptr) {
    ring.read_exact(file.buffered, offset, dst, config);
    return;
  }
  const std::uint64_t end = offset + dst.size();
  const block_cut cut(offset, end);
  if (cut.first > offset) ring.read_exact(file.buffered, offset, dst.first(cut.first - offset), config);
  if (cut.last > cut.first) {
    const transfer_config c = direct_config(config);
    whole_blocks(cut.first, cut.last, dst.data() + (cut.first - offset), false,
                 [&](std::uint64_t at, std::span<std::byte> mem) {
                   ring.read_exact(*file.direct, at, mem, c);
                 });
  }
  if (end > cut.last) ring.read_exact(file.buffered, cut.last, dst.subspan(cut.last - offset), config);
}

void write_range(file_pair file, std::uint64_t offset, std::span<const std::byte> src,
                 uring& ring, const transfer_config& config) {
  if (file.direct == nullptr) {
    ring.write_exact(file.buffered, offset, src, config);
    return;
  }
  const std::uint64_t end = offset + src.size();
  const block_cut cut(offset, end);
  if (cut.first > offset) ring.write_exact(file.buffered, offset, src.first(cut.first - offset), config);
  if (cut.last > cut.first) {
    const transfer_config c = direct_config(config);
    whole_blocks(cut.first, cut.last, const_cast<std::byte*>(src.data()) + (cut.first - offset),
                 true, [&](std::uint64_t at, std::span<std::byte> mem) {
                   ring.write_exact(*file.direct, at, mem, c);
                 });
  }
  if (end > cut.last) ring.write_exact(file.buffered, cut.last, src.subspan(cut.last - offset), config);
}

}  // namespace gpusort::io
