// One io_uring instance and the bulk transfers gpusort does with it: exact reads and writes of
// large byte ranges with several requests in flight, and sequential reads/writes of streams.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "io/file_descriptor.hpp"

namespace gpusort::io {

/// How a bulk transfer is cut into requests.
struct transfer_config {
  std::size_t block_bytes = std::size_t{8} << 20;  ///< bytes per request
  unsigned queue_depth = 16;                        ///< requests in flight
  /// Page-cache hits complete inline in the submitting thread, which serializes them; forcing
  /// requests to io_uring's worker pool (IOSQE_ASYNC) lets the kernel copy in parallel.
  bool force_async = true;
};

/// One piece of a batch: `data` at `offset` of `file`. `direct`: the file is open with
/// O_DIRECT (the request is never forced to the worker pool: there is no cache to hit).
struct io_segment {
  const file_descriptor* file = nullptr;
  std::uint64_t offset = 0;
  std::span<std::byte> data;
  bool direct = false;
};

/**
 * An io_uring ring owned by one thread.
 * - Not copyable or movable: the kernel holds pointers into it.
 * - Every transfer is synchronous for the caller: it returns once all bytes have moved.
 * @throw gpusort::error naming the operation, the file and the cause.
 */
class uring {
 public:
  explicit uring(unsigned entries = 64);
  ~uring();
  uring(const uring&) = delete;
  uring& operator=(const uring&) = delete;
  uring(uring&&) = delete;
  uring& operator=(uring&&) = delete;

  /// Reads exactly dst.size() bytes at `offset`; a file that ends early is an error.
  void read_exact(const file_descriptor& file, std::uint64_t offset, std::span<std::byte> dst,
                  const transfer_config& config = {});

  /// Reads a stream (pipe, tty, or a file at its current position) until dst is full or the
  /// stream ends; returns the number of bytes read.
  std::size_t read_stream(const file_descriptor& file, std::span<std::byte> dst);

  /// Writes all of src at `offset`.
  void write_exact(const file_descriptor& file, std::uint64_t offset,
                   std::span<const std::byte> src, const transfer_config& config = {});

  /// Writes all of src at the stream's current position (pipes, stdout).
  void write_stream(const file_descriptor& file, std::span<const std::byte> src);

  /// Reads every segment exactly, with up to config.queue_depth requests in flight across all
  /// of them (many short ranges of several files read at disk speed, not one after another).
  void read_batch(std::span<const io_segment> segments, const transfer_config& config = {});
  /// Writes every segment exactly, likewise.
  void write_batch(std::span<const io_segment> segments, const transfer_config& config = {});

 private:
  enum class op : std::uint8_t { read, write };
  /// Moves [ptr, ptr+len) to or from the file. offset < 0: the stream position, one request
  /// at a time. Returns bytes moved, which is short of len only when a read hits end of file
  /// and `allow_eof`.
  std::size_t transfer(op kind, const file_descriptor& file, std::int64_t offset,
                       std::byte* ptr, std::size_t len, const transfer_config& config,
                       bool allow_eof);
  /// The engine of every transfer: the segments' bytes in blocks of config.block_bytes,
  /// config.queue_depth in flight across segments (one at a time for a `stream`, whose one
  /// segment's offset is then ignored).
  std::size_t run(op kind, std::span<const io_segment> segments, const transfer_config& config,
                  bool allow_eof, bool stream);

  io_uring ring_{};
  unsigned entries_;
};

}  // namespace gpusort::io
