// Records when each pipeline stage was busy: feeds --stats (busy time, bytes, rates, overlap)
// and --trace (Chrome trace-event JSON, one track per stage or stream, viewable in Perfetto).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpusort/stats.hpp"

namespace gpusort {

/**
 * Thread-safe log of busy intervals, each on a named track ("read", "H2D", "sort", ...).
 * Times are seconds since construction. Cheap enough to record every block of I/O.
 */
class trace_recorder {
 public:
  trace_recorder();

  [[nodiscard]] double now() const;
  /// Adds a finished interval on `track`; `bytes` counts toward the stage's rate.
  void record(std::string_view track, double begin, double end, std::uint64_t bytes = 0,
              std::string_view label = {});

  /// Busy time (union of intervals), bytes and first/last time per track, in first-use order.
  [[nodiscard]] std::vector<stage_stats> summarize() const;

  /// Bytes so far of one track, and when its first interval began (--progress polls these).
  struct track_total {
    std::string name;
    std::uint64_t bytes = 0;
    double first_start = 0;
  };
  /// The running totals of every track, in first-use order; cheap: no pass over the events.
  [[nodiscard]] std::vector<track_total> totals() const;
  /// Seconds in which at least two of `tracks` were busy at once.
  [[nodiscard]] double overlap_seconds(const std::vector<std::string>& tracks) const;
  /// The Chrome trace-event JSON ("X" events, one thread row per track), for Perfetto.
  [[nodiscard]] std::string chrome_trace() const;
  /// Writes chrome_trace() to `path` (tools; sort_file writes it through its side output).
  void write_chrome_trace(const std::string& path) const;

  /// Times a block of code on one track.
  class scope {
   public:
    scope(trace_recorder* recorder, std::string_view track, std::uint64_t bytes = 0,
          std::string_view label = {})
        : recorder_(recorder), track_(track), label_(label), bytes_(bytes),
          begin_(recorder ? recorder->now() : 0) {}
    ~scope() {
      if (recorder_ != nullptr) recorder_->record(track_, begin_, recorder_->now(), bytes_, label_);
    }
    scope(const scope&) = delete;
    scope& operator=(const scope&) = delete;
    void add_bytes(std::uint64_t bytes) { bytes_ += bytes; }

   private:
    trace_recorder* recorder_;
    std::string track_;
    std::string label_;
    std::uint64_t bytes_;
    double begin_;
  };

 private:
  struct event {
    std::uint32_t track;
    double begin;
    double end;
    std::uint64_t bytes;
    std::string label;
  };
  std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  std::vector<std::string> tracks_;
  std::vector<track_total> totals_;  // parallel to tracks_
  std::vector<event> events_;
};

}  // namespace gpusort
