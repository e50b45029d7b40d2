// --progress: how far the current stage of a sort has come, redrawn on one line of a terminal
// or printed as a plain line every few seconds elsewhere, from the trace's running totals.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/trace.hpp"

namespace gpusort {

/// What one progress line shows.
struct progress_state {
  std::string stage;  ///< the stage shown ("read", "merge", ...); empty before any has moved
  std::uint64_t bytes = 0;
  std::optional<std::uint64_t> total;  ///< the input's size, when known
  double seconds = 0;                  ///< since the stage began
};

/**
 * The stage to show: of the stages that move the data (read, H2D, sort, D2H, merge, write,
 * spill, read runs, unique, check), the one that began last, with the bytes it has moved.
 * Where stages overlap (the GPU pipeline) that is the furthest along the data's way.
 */
[[nodiscard]] progress_state current_progress(
    const std::vector<trace_recorder::track_total>& totals,
    std::optional<std::uint64_t> total_bytes, double now);

/// "merge [######..........]  37% 5.92 GiB/16 GiB 5.10 GB/s ETA 2.0 s" (bar) or
/// "merge 37% (5.92 GiB of 16.0 GiB) at 5.10 GB/s, ETA 2.0 s"; without a total, the bytes and
/// the rate only.
[[nodiscard]] std::string progress_text(const progress_state& state, bool bar);

/**
 * Reports the progress of the sort traced by `trace` on `fd` from a thread of its own until it
 * is destroyed. On a terminal the line is redrawn every `tty_interval` (at most ten times a
 * second) and erased at the end; elsewhere a plain line is printed every `plain_interval`.
 */
class progress_reporter {
 public:
  progress_reporter(const trace_recorder& trace, std::optional<std::uint64_t> total_bytes,
                    int fd, double tty_interval = 0.1, double plain_interval = 5.0);
  ~progress_reporter();
  progress_reporter(const progress_reporter&) = delete;
  progress_reporter& operator=(const progress_reporter&) = delete;

 private:
  void run();
  void emit(const std::string& text) const;

  const trace_recorder& trace_;
  std::optional<std::uint64_t> total_;
  int fd_;
  bool tty_;
  double interval_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool drawn_ = false;  // a terminal line is on screen
  std::thread thread_;
};

}  // namespace gpusort
