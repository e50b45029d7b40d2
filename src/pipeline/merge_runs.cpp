// Merging runs into the output. Resident runs: windows of the output merged in parallel with
// cpu::merge_ranks straight into the sink's memory. Spilled runs: each run is read in windows
// of W records; the next W output records always lie within the next W records of every run,
// so merging those windows yields exactly the next W records of the whole merge.
#include "pipeline/merge_runs.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/host_buffer.hpp"
#include "core/trace.hpp"
#include "cpu/multiway_merge.hpp"
#include "gpusort/error.hpp"
#include "io/temp_file.hpp"
#include "io/uring.hpp"

namespace gpusort::pipeline {
namespace {

/// Writes the merged output ranks [rank_begin, rank_end) of `views` to the sink at
/// `out_offset`, in windows the sink accepts; file sinks take windows in parallel.
void merge_into_sink(std::span<const cpu::run_view> views, std::uint64_t rank_begin,
                     std::uint64_t rank_end, std::uint64_t out_offset, io::output_sink& sink,
                     bool parallel_windows, const record_format& format, bool descending,
                     trace_recorder* trace) {
  const std::uint64_t rec = format.record_size;
  const std::uint64_t window = std::max<std::uint64_t>(1, sink.max_window() / rec);
  const std::uint64_t count = rank_end - rank_begin;
  const std::uint64_t windows = (count + window - 1) / window;
  auto one_window = [&](std::uint64_t w) {
    const std::uint64_t r0 = rank_begin + w * window;
    const std::uint64_t r1 = std::min(rank_end, r0 + window);
    const std::uint64_t offset = out_offset + (r0 - rank_begin) * rec;
    const std::size_t bytes = static_cast<std::size_t>((r1 - r0) * rec);
    std::span<std::byte> dst = sink.acquire(offset, bytes);
    {
      trace_recorder::scope timer(trace, "merge", bytes);
      cpu::merge_ranks(views, r0, r1, dst.data(), format, descending);
    }
    sink.commit(offset, dst);
  };
  if (parallel_windows) {
    tbb::parallel_for(std::uint64_t{0}, windows, one_window);
  } else {
    for (std::uint64_t w = 0; w < windows; ++w) one_window(w);
  }
}

/// An output_sink over a range of a temporary file from `base`: one run of an intermediate
/// pass.
class run_file_sink final : public io::output_sink {
 public:
  /// `record_size`: the staging window holds at least one record, however large.
  run_file_sink(const io::file_descriptor& file, std::uint64_t base, std::uint32_t record_size,
                trace_recorder* trace)
      : file_(file), base_(base), trace_(trace),
        staging_(std::max<std::size_t>(window_bytes, record_size)) {}
  [[nodiscard]] std::size_t max_window() const override { return staging_.size(); }
  std::span<std::byte> acquire(std::uint64_t, std::size_t len) override {
    GPUSORT_EXPECTS(len <= staging_.size(), "merge window larger than the staging buffer");
    return {staging_.data(), len};
  }
  void commit(std::uint64_t offset, std::span<std::byte> window) override {
    trace_recorder::scope timer(trace_, "spill", window.size());
    ring_.write_exact(file_, base_ + offset, window);
  }
  void write(std::uint64_t offset, std::span<const std::byte> data) override {
    ring_.write_exact(file_, base_ + offset, data);
  }
  void finish() override {}
  [[nodiscard]] const char* name() const override { return "run file"; }
  [[nodiscard]] bool parallel_writes() const override { return false; }

 private:
  static constexpr std::size_t window_bytes = std::size_t{16} << 20;
  const io::file_descriptor& file_;
  std::uint64_t base_;
  trace_recorder* trace_;
  host_buffer staging_;
  io::uring ring_{32};
};

/// Reads one spilled run in windows; a resident run is viewed directly.
class run_cursor {
 public:
  run_cursor(sorted_run& run, std::uint64_t window, std::uint32_t record_size)
      : run_(run), window_(window), rec_(record_size) {
    if (!run_.resident()) buffer_ = host_buffer(static_cast<std::size_t>(2 * window_ * rec_));
  }

  /// Makes the next min(window, remaining) records available and returns them.
  cpu::run_view view(io::uring& ring, trace_recorder* trace) {
    const std::uint64_t remaining = run_.records - consumed_;
    const std::uint64_t want = std::min(window_, remaining);
    if (run_.resident()) return {run_.memory.data() + consumed_ * rec_, want};
    if (loaded_ < want) {
      if (start_ + want > 2 * window_) {  // compact: keep the unread records at the front
        std::memmove(buffer_.data(), buffer_.data() + start_ * rec_, loaded_ * rec_);
        start_ = 0;
      }
      const std::uint64_t file_pos = consumed_ + loaded_;
      const std::uint64_t n = want - loaded_;
      trace_recorder::scope timer(trace, "read runs", n * rec_);
      ring.read_exact(*run_.file, run_.file_offset + file_pos * rec_,
                      {buffer_.data() + (start_ + loaded_) * rec_,
                       static_cast<std::size_t>(n * rec_)});
      loaded_ = want;
    }
    return {buffer_.data() + start_ * rec_, want};
  }

  void advance(std::uint64_t records) {
    consumed_ += records;
    if (!run_.resident()) {
      start_ += records;
      loaded_ -= records;
    }
  }

 private:
  sorted_run& run_;
  std::uint64_t window_;
  std::uint32_t rec_;
  host_buffer buffer_;
  std::uint64_t consumed_ = 0;  // records of the run already merged
  std::uint64_t start_ = 0;     // buffer index of the first unmerged record
  std::uint64_t loaded_ = 0;    // unmerged records present in the buffer
};

/// Merges `runs` (any mix of resident and spilled) into `sink` window by window.
void merge_windowed(std::span<sorted_run> runs, io::output_sink& sink, bool parallel_windows,
                    const record_format& format, bool descending, std::uint64_t budget,
                    trace_recorder* trace) {
  const std::uint32_t rec = format.record_size;
  std::uint64_t total = 0;
  for (const sorted_run& r : runs) total += r.records;
  // Two windows' worth of buffer per spilled run, plus the output window.
  std::uint64_t spilled = 0;
  for (const sorted_run& r : runs) spilled += r.resident() ? 0 : 1;
  const std::uint64_t window =
      std::max<std::uint64_t>(1, budget / (rec * (2 * spilled + 2)));
  std::vector<run_cursor> cursors;
  cursors.reserve(runs.size());
  for (sorted_run& r : runs) cursors.emplace_back(r, window, rec);
  io::uring ring(64);
  std::vector<cpu::run_view> views(runs.size());
  std::uint64_t produced = 0;
  while (produced < total) {
    for (std::size_t j = 0; j < runs.size(); ++j) views[j] = cursors[j].view(ring, trace);
    const std::uint64_t take = std::min(window, total - produced);
    std::vector<std::uint64_t> cuts;
    {
      trace_recorder::scope timer(trace, "merge");
      cuts = cpu::select_cuts(views, take, format, descending);
    }
    merge_into_sink(views, 0, take, produced * rec, sink, parallel_windows, format, descending,
                    trace);
    for (std::size_t j = 0; j < runs.size(); ++j) cursors[j].advance(cuts[j]);
    produced += take;
  }
}

}  // namespace

void merge_views(std::span<const cpu::run_view> runs, io::output_sink& sink,
                 const record_format& format, bool descending, trace_recorder* trace) {
  std::uint64_t total = 0;
  for (const cpu::run_view& r : runs) total += r.count;
  merge_into_sink(runs, 0, total, 0, sink, sink.parallel_writes(), format, descending, trace);
}

std::uint32_t merge_runs(run_store& store, io::output_sink& sink, const record_format& format,
                         bool descending, const run_layout& layout, trace_recorder* trace) {
  std::vector<sorted_run>& runs = store.runs();
  const bool parallel_windows = sink.parallel_writes();
  const bool all_resident =
      std::all_of(runs.begin(), runs.end(), [](const sorted_run& r) { return r.resident(); });
  if (all_resident) {
    std::vector<cpu::run_view> views;
    for (const sorted_run& r : runs) views.push_back({r.memory.data(), r.records});
    merge_views(views, sink, format, descending, trace);
    return 1;
  }
  std::uint32_t passes = 0;
  // Intermediate passes: merge consecutive groups (keeps stability) until one pass suffices.
  // Each pass writes its runs one after another into one new file, so that the descriptors
  // held stay few however many runs there are.
  while (runs.size() > layout.merge_fanin) {
    std::vector<sorted_run> next;
    std::shared_ptr<const io::file_descriptor> pass_file;
    std::uint64_t pass_end = 0;
    for (std::size_t first = 0; first < runs.size(); first += layout.merge_fanin) {
      const std::size_t last = std::min(runs.size(), first + layout.merge_fanin);
      if (last - first == 1) {
        next.push_back(std::move(runs[first]));
        continue;
      }
      if (pass_file == nullptr)
        pass_file = std::make_shared<const io::file_descriptor>(
            io::make_anonymous_file(store.temp_dir()));
      sorted_run merged;
      merged.file = pass_file;
      merged.file_offset = pass_end;
      for (std::size_t j = first; j < last; ++j) merged.records += runs[j].records;
      {
        run_file_sink file_sink(*pass_file, pass_end, format.record_size, trace);
        merge_windowed({runs.data() + first, last - first}, file_sink, false, format,
                       descending, layout.budget_bytes, trace);
      }
      // Free the inputs of this group now: the disk space and memory are needed.
      for (std::size_t j = first; j < last; ++j) runs[j].release(format.record_size);
      pass_end += merged.records * format.record_size;
      next.push_back(std::move(merged));
    }
    runs = std::move(next);
    ++passes;
  }
  merge_windowed(runs, sink, parallel_windows, format, descending, layout.budget_bytes, trace);
  return passes + 1;
}

}  // namespace gpusort::pipeline
