// Bulk transfers over io_uring: requests of block_bytes, queue_depth in flight, short
// transfers resumed, -EAGAIN/-EINTR resubmitted, anything else reported with the path.
#include "io/uring.hpp"

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "gpusort/error.hpp"

namespace gpusort::io {
namespace {

struct request {
  const file_descriptor* file = nullptr;
  std::byte* ptr = nullptr;
  std::int64_t offset = 0;  // -1: the stream position
  std::size_t len = 0;
  bool async = false;
  bool busy = false;
};

}  // namespace

uring::uring(unsigned entries) : entries_(entries) {
  const int ret = io_uring_queue_init(entries, &ring_, 0);
  if (ret < 0) throw_error("io_uring_queue_init(" + std::to_string(entries) + ")", -ret);
}

uring::~uring() { io_uring_queue_exit(&ring_); }

void uring::read_exact(const file_descriptor& file, std::uint64_t offset,
                       std::span<std::byte> dst, const transfer_config& config) {
  const std::size_t got = transfer(op::read, file, static_cast<std::int64_t>(offset), dst.data(),
                                   dst.size(), config, /*allow_eof=*/false);
  (void)got;
}

std::size_t uring::read_stream(const file_descriptor& file, std::span<std::byte> dst) {
  transfer_config sequential;
  sequential.queue_depth = 1;
  sequential.force_async = false;
  return transfer(op::read, file, -1, dst.data(), dst.size(), sequential, /*allow_eof=*/true);
}

void uring::write_exact(const file_descriptor& file, std::uint64_t offset,
                        std::span<const std::byte> src, const transfer_config& config) {
  transfer(op::write, file, static_cast<std::int64_t>(offset),
           const_cast<std::byte*>(src.data()), src.size(), config, false);
}

void uring::write_stream(const file_descriptor& file, std::span<const std::byte> src) {
  transfer_config sequential;
  sequential.queue_depth = 1;
  sequential.force_async = false;
  transfer(op::write, file, -1, const_cast<std::byte*>(src.data()), src.size(), sequential,
           false);
}

std::size_t uring::transfer(op kind, const file_descriptor& file, std::int64_t offset,
                            std::byte* ptr, std::size_t len, const transfer_config& config,
                            bool allow_eof) {
  const bool stream = offset < 0;
  const io_segment one{&file, stream ? 0 : static_cast<std::uint64_t>(offset), {ptr, len}, false};
  return run(kind, {&one, 1}, config, allow_eof, stream);
}

void uring::read_batch(std::span<const io_segment> segments, const transfer_config& config) {
  run(op::read, segments, config, false, false);
}

void uring::write_batch(std::span<const io_segment> segments, const transfer_config& config) {
  run(op::write, segments, config, false, false);
}

std::size_t uring::run(op kind, std::span<const io_segment> segments,
                       const transfer_config& config, bool allow_eof, bool stream) {
  const char* what = kind == op::read ? "read" : "write";
  const std::size_t block = std::max<std::size_t>(config.block_bytes, 4096);
  const unsigned depth =
      stream ? 1u : std::clamp<unsigned>(config.queue_depth, 1u, entries_);
  std::vector<request> slots(depth);
  std::size_t len = 0;
  for (const io_segment& seg : segments) len += seg.data.size();

  std::size_t segment = 0;   // the segment the next request starts in ...
  std::size_t next = 0;      // ... at this byte of it
  std::size_t moved = 0;     // bytes completed
  unsigned in_flight = 0;
  bool at_eof = false;
  const std::string& first_path = segments.empty() ? std::string() : segments[0].file->path();

  auto prepare = [&](unsigned slot) {
    request& r = slots[slot];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr)
      throw_error(std::string("io_uring_get_sqe: ") + what + " " + r.file->path());
    const std::uint64_t off = r.offset < 0 ? static_cast<std::uint64_t>(-1)
                                           : static_cast<std::uint64_t>(r.offset);
    // A single request is capped below 2 GiB by the kernel anyway; keep it at unsigned range.
    const unsigned n = static_cast<unsigned>(std::min<std::size_t>(r.len, 1u << 30));
    if (kind == op::read) io_uring_prep_read(sqe, r.file->get(), r.ptr, n, off);
    else io_uring_prep_write(sqe, r.file->get(), r.ptr, n, off);
    if (r.async) io_uring_sqe_set_flags(sqe, IOSQE_ASYNC);
    io_uring_sqe_set_data64(sqe, slot);
    r.busy = true;
    ++in_flight;
  };

  // On error: let the requests still in flight finish before their buffers go away.
  auto abandon = [&] {
    io_uring_submit(&ring_);
    while (in_flight > 0) {
      io_uring_cqe* rest = nullptr;
      if (io_uring_wait_cqe(&ring_, &rest) < 0) break;
      io_uring_cqe_seen(&ring_, rest);
      --in_flight;
    }
  };

  auto submit = [&] {
    for (;;) {
      const int ret = io_uring_submit(&ring_);
      if (ret >= 0) return;
      if (ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
        throw_error(std::string("io_uring_submit: ") + what + " " + first_path, -ret);
    }
  };

  while (moved < len && !at_eof) {
    // Fill every idle slot with the next block.
    for (unsigned s = 0; s < depth && segment < segments.size(); ++s) {
      if (slots[s].busy) continue;
      const io_segment& seg = segments[segment];
      const std::size_t n = std::min(block, seg.data.size() - next);
      slots[s] = request{seg.file, seg.data.data() + next,
                         stream ? -1 : static_cast<std::int64_t>(seg.offset + next), n,
                         config.force_async && !stream && !seg.direct, false};
      next += n;
      if (next == seg.data.size()) {
        ++segment;
        next = 0;
      }
      if (n > 0) prepare(s);
    }
    while (segment < segments.size() && segments[segment].data.empty()) ++segment;
    if (in_flight == 0) continue;
    submit();

    io_uring_cqe* cqe = nullptr;
    int ret = io_uring_wait_cqe(&ring_, &cqe);
    if (ret == -EINTR) continue;
    if (ret < 0) throw_error(std::string("io_uring_wait_cqe: ") + what + " " + first_path, -ret);
    // Drain everything that is ready.
    unsigned head = 0;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      const unsigned slot = static_cast<unsigned>(io_uring_cqe_get_data64(cqe));
      request& r = slots[slot];
      const int res = cqe->res;
      --in_flight;
      r.busy = false;
      if (res == -EAGAIN || res == -EINTR) {
        prepare(slot);  // resubmit unchanged
        continue;
      }
      if (res < 0) {
        io_uring_cq_advance(&ring_, seen);
        abandon();
        throw_error(std::string(what) + " " + r.file->path(), -res);
      }
      if (res == 0) {
        if (kind == op::write) {
          // A write that moves nothing would be retried forever: the file takes no more.
          io_uring_cq_advance(&ring_, seen);
          abandon();
          throw_error(std::string("write ") + r.file->path() + ": no bytes written", ENOSPC);
        }
        if (!allow_eof) {
          io_uring_cq_advance(&ring_, seen);
          abandon();
          throw_error(std::string("read ") + r.file->path() +
                      ": unexpected end of file (did it shrink while being read?)");
        }
        at_eof = true;
        continue;
      }
      const auto done = static_cast<std::size_t>(res);
      moved += done;
      if (done < r.len) {  // short transfer: resume where it stopped
        r.ptr += done;
        if (r.offset >= 0) r.offset += static_cast<std::int64_t>(done);
        r.len -= done;
        prepare(slot);
      }
    }
    io_uring_cq_advance(&ring_, seen);
    if (at_eof) {
      // Only a stream (depth 1) ends this way, so nothing is left in flight.
      break;
    }
  }
  // Every request in flight still owes bytes, so none is left once all bytes have moved; a
  // stream that ended had only the one request that reported the end.
  return moved;
}

}  // namespace gpusort::io
