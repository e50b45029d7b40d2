// Reads a pipe into memory on several threads. One read() at a time copies a pipe into memory
// at 4.0-4.4 GB/s on the H100 machine, fed by a producer that splices the page cache into it;
// a pipe has one order, so its reads cannot simply be split between threads. Moving the pipe's
// buffers with splice(2) costs no copy, though: one thread moves them, segment by segment, into
// helper pipes ("lanes") and records where each segment belongs, and each lane's thread copies
// its segments to their places. Eight lanes took the same stream at 25 GB/s there
// (tools/bench/results/2026-11-27-h100-stdin/).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "io/file_descriptor.hpp"

namespace gpusort::io {

/**
 * Fills memory from a pipe through `lanes` helper pipes, each drained by a thread of its own.
 * - The caller's thread moves the pipe's buffers into the lanes, a segment of `segment_bytes`
 *   per lane in turn, and tells a lane where its bytes go after every splice, so that a lane
 *   never holds bytes its thread does not know about: a full lane therefore always drains,
 *   whatever the producer's write sizes.
 * - read() returns only once every lane has copied what it was given: the memory is the
 *   caller's again, also when read() throws.
 * - A source that refuses splice(2) is read with read(2) from then on.
 * Move-less; one read() at a time.
 */
class pipe_fanout {
 public:
  /// Bytes one lane takes before the next lane's turn: 256 KiB segments took the H100 machine's
  /// stream at 18.8 GB/s with eight lanes, 1 MiB segments at 25 GB/s.
  static constexpr std::size_t default_segment_bytes = std::size_t{1} << 20;
  /// Reads shorter than this go to the pipe directly: a few segments would keep few lanes busy.
  static constexpr std::size_t min_read_bytes = std::size_t{8} << 20;

  /// Lanes for this machine: half its hardware threads (the producer and the sort need the
  /// rest), at least two, at most eight (25 GB/s at eight on the H100 machine's 16 cores).
  [[nodiscard]] static std::size_t default_lanes() noexcept;

  /// `source`: a pipe, not owned, by its descriptor number; `name` for messages.
  /// @throw gpusort::error when a lane cannot be made.
  pipe_fanout(int source, std::string name, std::size_t lanes = default_lanes(),
              std::size_t segment_bytes = default_segment_bytes);
  pipe_fanout(const pipe_fanout&) = delete;
  pipe_fanout& operator=(const pipe_fanout&) = delete;
  ~pipe_fanout();

  /**
   * Reads from the source until dst is full or the source ends; returns the bytes read.
   * @throw gpusort::error naming the source when reading it fails.
   */
  std::size_t read(std::span<std::byte> dst);

 private:
  struct lane {
    file_descriptor out;  // read end, drained by `thread`
    file_descriptor in;   // write end, filled by splice
    std::deque<std::span<std::byte>> todo;  // where the bytes in the pipe go, in order
    std::condition_variable wake;
    std::thread thread;
  };

  /// Tells lane `l` that its next `where.size()` bytes go to `where`.
  void hand_over(lane& l, std::span<std::byte> where);
  /// Ends and joins the lanes' threads.
  void stop_lanes() noexcept;
  /// Waits until every lane has copied all it was handed.
  void wait_for_lanes();
  /// A lane's thread: copies its segments to their places until the fanout is destroyed.
  void drain(lane& l);
  /// Moves up to `bytes` from the source into `l`; 0 at the source's end, -1 where the source
  /// refuses splice. @throw gpusort::error on other failures.
  long move_into(lane& l, std::size_t bytes);
  /// read(2) until dst is full or the source ends.
  std::size_t read_directly(std::span<std::byte> dst);

  int source_;
  std::string name_;
  std::size_t segment_bytes_;
  bool splice_works_ = true;
  std::mutex mutex_;
  std::condition_variable idle_;  // pending_ reached 0
  std::size_t pending_ = 0;       // bytes handed over and not yet copied
  bool stopping_ = false;
  std::exception_ptr lane_error_;
  std::vector<std::unique_ptr<lane>> lanes_;
};

}  // namespace gpusort::io
