// Merging runs into the output. Resident runs: windows of the output merged in parallel with
// cpu::merge_ranks straight into the sink's memory. Spilled runs: each run is taken in windows
// of W records (mapped, or read); the next W output records always lie within the next W
// records of every run, so merging those windows yields exactly the next W records of the
// whole merge.
#include "pipeline/merge_runs.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <utility>
#include <vector>

#include "core/host_buffer.hpp"
#include "core/parallel_copy.hpp"
#include "core/ordered_worker.hpp"
#include "core/trace.hpp"
#include "cpu/multiway_merge.hpp"
#include "gpusort/error.hpp"
#include "io/direct_io.hpp"
#include "io/file_view.hpp"
#include "io/uring.hpp"
#include "pipeline/pipeline_config.hpp"

namespace gpusort::pipeline {
namespace {

/// Called with each run's count of records merged so far, one call at a time, whenever the
/// output merged without a gap from its start has grown by a step (merge_memory_release_step,
/// or a sixteenth of the output where that is less), and once at the end.
using merged_front_fn = std::function<void(std::span<const std::uint64_t> merged)>;

/// Follows which windows of a merge are done, and reports the front of those done without a
/// gap (merged_front_fn). Windows are taken in order, so the front trails the newest by about
/// as many windows as there are threads.
class merged_front {
 public:
  /// `cuts[w]`: each run's records before window w (windows + 1 entries).
  merged_front(const std::vector<std::vector<std::uint64_t>>& cuts, std::uint64_t step_windows,
               const merged_front_fn* report)
      : cuts_(cuts), step_(std::max<std::uint64_t>(1, step_windows)), report_(report),
        done_(report != nullptr ? cuts.size() - 1 : 0) {}

  void done(std::uint64_t w) {
    if (report_ == nullptr) return;
    done_[w].store(true, std::memory_order_release);
    // Whoever holds the lock advances past this window too, or a later window's end, or
    // finish().
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (lock.owns_lock()) advance(step_);
  }

  /// Reports the end once every window is done, where no done() did: a call that found the
  /// lock taken leaves its window to the holder, which may have looked at it just before.
  void finish() {
    if (report_ == nullptr) return;
    std::lock_guard lock(mutex_);
    advance(1);
  }

 private:
  /// Under the lock: moves the front past the windows done, and reports it once it has grown
  /// by `step` windows since the last report, or has reached the end.
  void advance(std::uint64_t step) {
    while (front_ < done_.size() && done_[front_].load(std::memory_order_acquire)) ++front_;
    if (front_ >= reported_ + step || (front_ == done_.size() && front_ > reported_)) {
      reported_ = front_;
      (*report_)(cuts_[front_]);
    }
  }

  const std::vector<std::vector<std::uint64_t>>& cuts_;
  std::uint64_t step_;
  const merged_front_fn* report_;
  std::vector<std::atomic<bool>> done_;
  std::mutex mutex_;
  std::uint64_t front_ = 0;     // windows [0, front_) are done
  std::uint64_t reported_ = 0;  // the front last reported
};

/// Writes the merged output ranks [rank_begin, rank_end) of `views` to the sink at
/// `out_offset`, in windows the sink accepts; file sinks take windows in parallel. With
/// `on_merged`, in order (each thread takes the next window), so that the merged records form
/// a growing front that it hears of.
void merge_into_sink(std::span<const cpu::run_view> views, std::uint64_t rank_begin,
                     std::uint64_t rank_end, std::uint64_t out_offset, io::output_sink& sink,
                     bool parallel_windows, const record_format& format, bool descending,
                     trace_recorder* trace, const merged_front_fn* on_merged = nullptr) {
  const std::uint64_t rec = format.record_size;
  const std::uint64_t window = std::max<std::uint64_t>(1, sink.max_window() / rec);
  const std::uint64_t count = rank_end - rank_begin;
  const std::uint64_t windows = (count + window - 1) / window;
  // Every window's cuts first: a window then reads only its own records of each run (its
  // selections search nothing outside them), so that what lies below the front may be given
  // back while later windows merge.
  std::vector<std::vector<std::uint64_t>> cuts(windows + 1);
  {
    trace_recorder::scope timer(trace, "merge");
    tbb::parallel_for(std::uint64_t{0}, windows + 1, [&](std::uint64_t w) {
      cuts[w] = cpu::select_cuts(views, std::min(rank_end, rank_begin + w * window), format,
                                 descending);
    });
  }
  // At least a sixteenth of the output a step, so that smaller merges give back memory too.
  const std::uint64_t step = std::min(merge_memory_release_step, count * rec / 16);
  merged_front front(cuts, step / (window * rec), on_merged);
  auto one_window = [&](std::uint64_t w) {
    std::vector<cpu::run_view> part(views.size());
    std::uint64_t n = 0;
    for (std::size_t j = 0; j < views.size(); ++j) {
      part[j] = {views[j].data + cuts[w][j] * rec, cuts[w + 1][j] - cuts[w][j]};
      n += part[j].count;
    }
    const std::uint64_t offset = out_offset + w * window * rec;
    const std::size_t bytes = static_cast<std::size_t>(n * rec);
    std::span<std::byte> dst = sink.acquire(offset, bytes);
    {
      trace_recorder::scope timer(trace, "merge", bytes);
      // Isolated: a thread waiting for its parts must not take up another thread's loop over
      // windows, which would hold this window, and the front, back until that loop ends.
      tbb::this_task_arena::isolate(
          [&] { cpu::merge_ranks(part, 0, n, dst.data(), format, descending); });
    }
    sink.commit(offset, dst);
    front.done(w);
  };
  if (!parallel_windows) {
    for (std::uint64_t w = 0; w < windows; ++w) one_window(w);
    return;
  }
  if (on_merged == nullptr) {
    // Any order: an output faulted in whole ahead of the merge has pages written back from
    // its start once it passes the kernel's write-back threshold, and a merge in order runs
    // into them (see output_plan::prefault_ahead_beside_runs).
    tbb::parallel_for(std::uint64_t{0}, windows, one_window);
    return;
  }
  std::atomic<std::uint64_t> next{0};
  std::atomic<bool> failed{false};
  const int workers = static_cast<int>(std::min<std::uint64_t>(
      windows, static_cast<std::uint64_t>(tbb::this_task_arena::max_concurrency())));
  tbb::parallel_for(
      tbb::blocked_range<int>(0, workers, 1),
      [&](const tbb::blocked_range<int>&) {
        for (std::uint64_t w = next.fetch_add(1); w < windows && !failed.load();
             w = next.fetch_add(1)) {
          try {
            one_window(w);
          } catch (...) {
            failed.store(true);
            throw;
          }
        }
      },
      tbb::simple_partitioner{});
  front.finish();
}

/// An output_sink over a range of a temporary file from `base`: one run of an intermediate
/// pass. Its window is laid out like the file, so that O_DIRECT writes go from it directly.
class run_file_sink final : public io::output_sink {
 public:
  /// `record_size`: the staging window holds at least one record, however large.
  run_file_sink(const spill_file& file, std::uint64_t base, std::uint32_t record_size,
                trace_recorder* trace)
      : file_(file), base_(base), trace_(trace),
        window_(std::max<std::size_t>(merge_window_bytes, record_size)),
        staging_(window_ + io::direct_io_alignment) {}
  [[nodiscard]] std::size_t max_window() const override { return window_; }
  std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) override {
    GPUSORT_EXPECTS(len <= window_, "merge window larger than the staging buffer");
    return {staging_.data() + (base_ + offset) % io::direct_io_alignment, len};
  }
  void commit(std::uint64_t offset, std::span<std::byte> window) override {
    trace_recorder::scope timer(trace_, "spill", window.size());
    io::write_range(file_.pair(), base_ + offset, window, ring_, {});
  }
  void write(std::uint64_t offset, std::span<const std::byte> data) override {
    io::write_range(file_.pair(), base_ + offset, data, ring_, {});
  }
  void finish() override {}
  [[nodiscard]] const char* name() const override { return "run file"; }
  [[nodiscard]] bool parallel_writes() const override { return false; }

 private:
  const spill_file& file_;
  std::uint64_t base_;
  trace_recorder* trace_;
  std::size_t window_;
  host_buffer staging_;
  io::uring ring_{32};
};

/// Appends the requests that read bytes [from, from + dst.size()) of spilled `run` into dst.
void append_run_range(const sorted_run& run, std::uint64_t from, std::span<std::byte> dst,
                      std::vector<io::io_segment>& batch) {
  std::uint64_t piece_start = 0;
  for (const spill_range& piece : run.pieces) {
    const std::uint64_t lo = std::max(from, piece_start);
    const std::uint64_t hi = std::min(from + dst.size(), piece_start + piece.bytes);
    if (lo < hi)
      io::append_range(piece.file->pair(), piece.offset + (lo - piece_start),
                       dst.subspan(static_cast<std::size_t>(lo - from),
                                   static_cast<std::size_t>(hi - lo)),
                       batch);
    piece_start += piece.bytes;
  }
}

/**
 * Presents one run to the merge in windows of W records.
 * - A resident run is viewed directly.
 * - A run spilled through the page cache is mapped, and viewed like memory: its pages are
 *   mapped straight out of the cache (copying them out on one thread ran at 3.3-4.5 GB/s on
 *   the H100 machine and held the merge back), with the next window's read-ahead asked for.
 * - A run spilled with O_DIRECT (or one that cannot be mapped) is read into a buffer of three
 *   windows: the window being merged, what is read ahead while it is (at least what the next
 *   window needs, at most what fits), and room so that the unread records move back to the
 *   front only while no read is in flight. The records sit in the buffer laid out like the
 *   file, so that O_DIRECT reads land in place. Reads are planned here and done in batches
 *   across all runs (plan_read_aheads).
 */
class run_cursor {
 public:
  /// `mapped`: the run's mapping (map_spilled), if it has one.
  run_cursor(sorted_run& run, std::uint64_t window, std::uint32_t record_size,
             std::optional<io::file_view> mapped)
      : run_(run), window_(window), rec_(record_size), mapped_(std::move(mapped)) {
    if (run_.resident() || mapped_) return;
    buffer_ = host_buffer(static_cast<std::size_t>(3 * window_ * rec_ + io::direct_io_alignment));
    pos_ = layout_position() % io::direct_io_alignment;
  }

  /// True when the run's windows are read into a buffer of the merge's budget.
  [[nodiscard]] bool reads() const noexcept { return !run_.resident() && !mapped_; }

  /// Plans the reads that make the next min(W, remaining) records available (view()).
  void plan_view(std::vector<io::io_segment>& batch) {
    if (!reads()) return;
    if (pos_ > window_ * rec_ + io::direct_io_alignment) {  // room behind this window
      const std::uint64_t to = layout_position() % io::direct_io_alignment;
      // Up to two windows, every window merged: on all cores.
      detail::parallel_move_down(buffer_.data() + to, buffer_.data() + pos_, loaded_ * rec_);
      pos_ = to;
    }
    const std::uint64_t want = std::min(window_, run_.records - consumed_);
    if (loaded_ < want) plan_load(want - loaded_, batch);
  }

  /// The next min(W, remaining) records, once plan_view's reads are done.
  cpu::run_view view() {
    const std::uint64_t want = std::min(window_, run_.records - consumed_);
    if (run_.resident()) return {run_.memory.data() + consumed_ * rec_, want};
    if (mapped_) return {mapped_->data() + consumed_ * rec_, want};
    return {buffer_.data() + pos_, want};
  }

  /// Records loaded and not merged once `consumed` of the current view are (the largest value
  /// for a run not read in windows: it never needs a read).
  [[nodiscard]] std::uint64_t left_after(std::uint64_t consumed) const {
    return reads() ? loaded_ - consumed : std::numeric_limits<std::uint64_t>::max();
  }

  /// Records the next view() lacks once `consumed` of the current ones are merged.
  [[nodiscard]] std::uint64_t shortfall(std::uint64_t consumed) const {
    if (!reads()) return 0;
    const std::uint64_t next_want = std::min(window_, run_.records - consumed_ - consumed);
    const std::uint64_t left = loaded_ - consumed;
    return next_want > left ? next_want - left : 0;
  }

  /// Records that may be read behind those loaded now: room in the buffer, and unread in the
  /// run. At least shortfall(): the front holds at most a window and a block before plan_view
  /// moves it back, and a view at most a window.
  [[nodiscard]] std::uint64_t readable() const {
    if (!reads()) return 0;
    const std::uint64_t room = (buffer_.size() - pos_) / rec_ - loaded_;
    return std::min(room, run_.records - consumed_ - loaded_);
  }

  /// While the current window is merged: plans reading the run's next `n` records (between
  /// shortfall(consumed) and readable()) behind those loaded now; for a mapped run, notes the
  /// range that the next view will want, asked for by read_ahead().
  void plan_read_ahead(std::uint64_t consumed, std::uint64_t n,
                       std::vector<io::io_segment>& batch) {
    if (mapped_) {
      const std::uint64_t next_want = std::min(window_, run_.records - consumed_ - consumed);
      ahead_ = {(consumed_ + consumed) * rec_, next_want * rec_};
      return;
    }
    if (!reads() || n == 0) return;
    GPUSORT_EXPECTS(n >= shortfall(consumed) && n <= readable(),
                    "merge read-ahead outside the run's buffer");
    plan_load(n, batch);
  }

  /// Asks the kernel to read a mapped run's next window ahead (a lookup per page when cached).
  void read_ahead() const {
    if (mapped_) mapped_->will_need(ahead_.first, ahead_.second);
  }

  /// The planned reads are done.
  void loaded() {
    loaded_ += planned_;
    planned_ = 0;
  }

  void advance(std::uint64_t records) {
    consumed_ += records;
    if (reads()) {
      pos_ += records * rec_;
      loaded_ -= records;
    }
  }

  /// The disk blocks of the records merged so far, to be given back, every
  /// merge_release_step bytes (none yet: empty): a filesystem mounted with discard frees
  /// blocks synchronously, which for 16 GiB of runs took 5 s after the merge on the H100
  /// machine when the file closed. Every piece starts on a block, and every piece but the last
  /// holds whole blocks: a block boundary of the run is one of its file.
  [[nodiscard]] std::vector<spill_range> take_merged() {
    std::vector<spill_range> out;
    if (run_.resident()) return out;
    const std::uint64_t bytes = run_.records * rec_;
    const std::uint64_t merged = consumed_ * rec_;
    const std::uint64_t end =
        merged == bytes ? bytes : merged / io::direct_io_alignment * io::direct_io_alignment;
    if (end <= released_ || (end - released_ < merge_release_step && merged < bytes)) return out;
    std::uint64_t piece_start = 0;
    for (const spill_range& piece : run_.pieces) {
      const std::uint64_t lo = std::max(released_, piece_start);
      const std::uint64_t hi = std::min(end, piece_start + piece.bytes);
      if (lo < hi) out.push_back({piece.file, piece.offset + (lo - piece_start), hi - lo});
      piece_start += piece.bytes;
    }
    released_ = end;
    return out;
  }

 private:
  /// Where the first unmerged record would sit in the file if the run were one piece: the
  /// buffer keeps records at this offset modulo the block, so that a one-piece run's O_DIRECT
  /// reads land in place.
  [[nodiscard]] std::uint64_t layout_position() const {
    return run_.pieces.front().offset + consumed_ * rec_;
  }

  /// Plans reading the run's next `n` records behind those loaded.
  void plan_load(std::uint64_t n, std::vector<io::io_segment>& batch) {
    append_run_range(run_, (consumed_ + loaded_) * rec_,
                     {buffer_.data() + pos_ + loaded_ * rec_, static_cast<std::size_t>(n * rec_)},
                     batch);
    planned_ = n;
  }

  sorted_run& run_;
  std::uint64_t window_;
  std::uint32_t rec_;
  std::optional<io::file_view> mapped_;
  std::pair<std::uint64_t, std::uint64_t> ahead_{0, 0};  // mapped: bytes to read ahead
  host_buffer buffer_;
  std::uint64_t consumed_ = 0;  // records of the run already merged
  std::uint64_t pos_ = 0;       // buffer byte of the first unmerged record
  std::uint64_t loaded_ = 0;    // unmerged records present in the buffer
  std::uint64_t planned_ = 0;   // records being read behind them
  std::uint64_t released_ = 0;  // bytes from the run's start whose blocks were given back
};

/// Gives merged runs' disk blocks back off the merge's path (release_ranges, one thread per
/// file): punching holes in 16 GiB of buffered runs took 2.6-3.5 s on the H100 machine, which
/// in the read-ahead's path held the merge back by as much.
///
/// What is still queued when the merge ends is dropped: the final merge's spill files go
/// whole to release_in_background, whose exit frees them (waiting for the queue held the end
/// of a 16 GiB sort with -S 4G back by 4.5-7 s on the two-H100 machine, whose disk discards
/// what it frees), and an intermediate pass releases its runs itself. Punching is a system
/// call that cannot be stopped. It drops pages that are still dirty at once (1 GiB of a fresh
/// temporary file in 0.04 s on the 2-core VM), but waits for those the kernel has begun to
/// write back, and frees the disk blocks of those written: a task of 256 MiB took 0.3-0.9 s on
/// the H200 machine, so the final merge hands the one still running to the store
/// (run_store::hold_until_released) instead of waiting for it.
class block_releaser {
 public:
  explicit block_releaser(trace_recorder* trace) : trace_(trace) {}
  ~block_releaser() { stop(); }
  block_releaser(const block_releaser&) = delete;
  block_releaser& operator=(const block_releaser&) = delete;
  /// Drops the tasks not started; the destructor waits for the one running.
  void stop() { worker_.discard_pending(); }

  void release(std::vector<spill_range> blocks) {
    // In tasks of a bounded size, so that the one running when the merge ends is short: a
    // round's blocks in one task (several GB) still held the end back by 2.5-4.9 s.
    std::vector<spill_range> task;
    std::uint64_t task_bytes = 0;
    for (const spill_range& b : blocks) {
      for (std::uint64_t at = 0; at < b.bytes;) {
        const std::uint64_t n = std::min(b.bytes - at, release_task_bytes - task_bytes);
        task.push_back({b.file, b.offset + at, n});
        task_bytes += n;
        at += n;
        if (task_bytes == release_task_bytes) {
          push(std::move(task), task_bytes);
          task = {};
          task_bytes = 0;
        }
      }
    }
    if (task_bytes != 0) push(std::move(task), task_bytes);
  }

 private:
  /// At about 1 GB/s of discards (the H100 machines' disks), a quarter of a second.
  static constexpr std::uint64_t release_task_bytes = std::uint64_t{256} << 20;

  void push(std::vector<spill_range> blocks, std::uint64_t bytes) {
    worker_.push([this, blocks = std::move(blocks), bytes] {
      trace_recorder::scope timer(trace_, "release runs", bytes);
      release_ranges(blocks);
    });
  }

  trace_recorder* trace_;
  detail::ordered_worker worker_;  // last: joined (every release done) before trace_ goes
};

/// Reads a batch planned by the cursors and tells them it is done.
void read_planned(std::vector<io::io_segment>& batch, std::span<run_cursor> cursors,
                  io::uring& ring, trace_recorder* trace) {
  if (!batch.empty()) {
    std::uint64_t bytes = 0;
    for (const io::io_segment& seg : batch) bytes += seg.data.size();
    trace_recorder::scope timer(trace, "read runs", bytes);
    // O_DIRECT requests wait for the disk: many in flight, none forced to the worker pool.
    ring.read_batch(batch, io::transfer_config{std::size_t{8} << 20, 32, false});
    batch.clear();
  }
  for (run_cursor& c : cursors) c.loaded();
}

/// Plans the reads behind the window being merged, `consumed[j]` records of run j: each run
/// read in windows gets what its next view lacks, and the runs with the fewest records left
/// get about one window more in all, in reads of at least a window / merge_min_read_divisor
/// (see there).
void plan_read_aheads(std::span<run_cursor> cursors, std::span<const std::uint64_t> consumed,
                      std::uint64_t window, std::vector<io::io_segment>& batch) {
  std::vector<std::size_t> order(cursors.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return cursors[a].left_after(consumed[a]) < cursors[b].left_after(consumed[b]);
  });
  std::uint64_t extra = window;
  const std::uint64_t least = std::max<std::uint64_t>(1, window / merge_min_read_divisor);
  for (const std::size_t j : order) {
    run_cursor& c = cursors[j];
    const std::uint64_t need = c.shortfall(consumed[j]);
    const std::uint64_t most = std::min(c.readable(), need + extra);
    const std::uint64_t n = most >= least && most > need ? most : need;
    extra -= n - need;
    c.plan_read_ahead(consumed[j], n, batch);
  }
}

/// Merges `runs` (any mix of resident and spilled) into `sink` window by window; the spilled
/// runs' next windows are read while the current ones merge.
void merge_windowed(std::span<sorted_run> runs, io::output_sink& sink, bool parallel_windows,
                    const record_format& format, bool descending, std::uint64_t budget,
                    bool map, block_releaser& releaser, trace_recorder* trace) {
  const std::uint32_t rec = format.record_size;
  std::uint64_t total = 0;
  for (const sorted_run& r : runs) total += r.records;
  // Three windows' worth of buffer per run read in windows, plus the output window.
  std::vector<std::optional<io::file_view>> mappings;
  std::uint64_t read = 0;
  std::uint64_t spilled = 0;
  for (const sorted_run& r : runs) {
    mappings.push_back(map ? map_spilled(r) : std::nullopt);
    read += r.resident() || mappings.back() ? 0 : 1;
    spilled += r.resident() ? 0 : 1;
  }
  const std::uint64_t window = std::max<std::uint64_t>(1, budget / (rec * (3 * read + 2)));
  std::vector<run_cursor> cursors;
  cursors.reserve(runs.size());
  for (std::size_t j = 0; j < runs.size(); ++j)
    cursors.emplace_back(runs[j], window, rec, std::move(mappings[j]));
  io::uring ring(64);
  io::uring ahead_ring(64);  // the read-ahead's, used by one task at a time
  std::vector<io::io_segment> batch;
  std::vector<io::io_segment> ahead_batch;
  std::vector<cpu::run_view> views(runs.size());
  std::uint64_t produced = 0;
  while (produced < total) {
    for (run_cursor& c : cursors) c.plan_view(batch);
    read_planned(batch, cursors, ring, trace);
    for (std::size_t j = 0; j < runs.size(); ++j) views[j] = cursors[j].view();
    const std::uint64_t take = std::min(window, total - produced);
    std::vector<std::uint64_t> cuts;
    {
      trace_recorder::scope timer(trace, "merge");
      cuts = cpu::select_cuts(views, take, format, descending);
    }
    std::future<void> ahead;
    if (spilled > 0 && produced + take < total) {
      plan_read_aheads(cursors, cuts, window, ahead_batch);
      ahead = std::async(std::launch::async, [&] {
        read_planned(ahead_batch, cursors, ahead_ring, trace);
        std::vector<spill_range> merged;  // before this round
        for (run_cursor& c : cursors) {
          c.read_ahead();
          for (spill_range& r : c.take_merged()) merged.push_back(std::move(r));
        }
        releaser.release(std::move(merged));
      });
    }
    try {
      merge_into_sink(views, 0, take, produced * rec, sink, parallel_windows, format,
                      descending, trace);
    } catch (...) {
      if (ahead.valid()) ahead.wait();  // it writes into the cursors' buffers
      throw;
    }
    if (ahead.valid()) ahead.get();
    for (std::size_t j = 0; j < runs.size(); ++j) cursors[j].advance(cuts[j]);
    produced += take;
    sink.written_through(produced * rec);  // a prefault held back moves on
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
                         bool descending, const run_layout& layout, trace_recorder* trace,
                         bool map_spilled_runs) {
  std::vector<sorted_run>& runs = store.runs();
  // Groups of fewer than two runs would never shrink the list of runs.
  GPUSORT_EXPECTS(layout.merge_fanin >= 2, "merge_runs: a merge fan-in below 2");
  const bool parallel_windows = sink.parallel_writes();
  const bool all_resident =
      std::all_of(runs.begin(), runs.end(), [](const sorted_run& r) { return r.resident(); });
  if (all_resident) {
    std::vector<cpu::run_view> views;
    for (const sorted_run& r : runs) views.push_back({r.memory.data(), r.records});
    // The merged records' memory goes back as the merge moves on: 24 GiB of runs beside a
    // 24 GiB output kept the kernel's dirty-page limit (a share of the memory not held by
    // processes) below the output on the H100 machine, which held the merge to disk speed.
    // Page-locked runs stay whole: their pages are held until the lock goes.
    std::vector<std::uint64_t> released(runs.size(), 0);
    const merged_front_fn give_back = [&](std::span<const std::uint64_t> merged) {
      std::uint64_t front = 0;
      for (const std::uint64_t m : merged) front += m;
      sink.written_through(front * format.record_size);  // a prefault held back moves on
      trace_recorder::scope timer(trace, "release runs");
      for (std::size_t j = 0; j < runs.size(); ++j) {
        constexpr std::uint64_t grain = host_buffer::discard_grain;
        const std::uint64_t end = merged[j] * format.record_size / grain * grain;
        if (runs[j].pin || end <= released[j]) continue;
        runs[j].memory.discard(released[j], end - released[j]);
        timer.add_bytes(end - released[j]);
        released[j] = end;
      }
    };
    // Not into an output written in windows that the merge's threads map and fault in each
    // (the CPU strategies'): in order, 8 GiB of runs merged that way 1.18x slower on 16 cores
    // (H100 machine); and nothing faults such an output in ahead of the merge.
    const bool in_windows = parallel_windows && sink.mapping().empty();
    merge_into_sink(views, 0, store.total_records(), 0, sink, parallel_windows, format,
                    descending, trace, in_windows ? nullptr : &give_back);
    return 1;
  }
  // The spilled runs' read windows share what the resident runs leave of the budget: both are
  // in memory during the merge (with the whole budget for windows, GPU runs at 16 GiB with
  // -S 4G took 6 GiB and were killed under a 6 GiB cgroup limit on the H200 machine).
  std::uint64_t resident = 0;
  for (const sorted_run& r : runs) resident += r.resident() ? r.records * format.record_size : 0;
  const std::uint64_t window_budget =
      std::max(layout.budget_bytes > resident ? layout.budget_bytes - resident : 0,
               min_buffer_bytes);
  std::uint32_t passes = 0;
  // Intermediate passes: merge consecutive groups (keeps stability) until one pass suffices.
  // Each pass writes its runs one after another into one new file, so that the descriptors
  // held stay few however many runs there are.
  while (runs.size() > layout.merge_fanin) {
    std::vector<sorted_run> next;
    std::shared_ptr<const spill_file> pass_file;
    std::uint64_t pass_end = 0;
    for (std::size_t first = 0; first < runs.size(); first += layout.merge_fanin) {
      const std::size_t last = std::min(runs.size(), first + layout.merge_fanin);
      if (last - first == 1) {
        next.push_back(std::move(runs[first]));
        continue;
      }
      if (pass_file == nullptr) pass_file = store.new_spill_file();
      pass_end = run_store::run_start(pass_end);
      sorted_run merged;
      for (std::size_t j = first; j < last; ++j) merged.records += runs[j].records;
      merged.pieces.push_back({pass_file, pass_end, merged.records * format.record_size});
      {
        run_file_sink file_sink(*pass_file, pass_end, format.record_size, trace);
        block_releaser releaser(trace);
        merge_windowed({runs.data() + first, last - first}, file_sink, false, format,
                       descending, window_budget, map_spilled_runs, releaser, trace);
      }
      // Free the inputs of this group now: the disk space and memory are needed.
      for (std::size_t j = first; j < last; ++j) runs[j].release();
      pass_end += merged.records * format.record_size;
      next.push_back(std::move(merged));
    }
    runs = std::move(next);
    ++passes;
  }
  auto releaser = std::make_shared<block_releaser>(trace);
  merge_windowed(runs, sink, parallel_windows, format, descending, window_budget,
                 map_spilled_runs, *releaser, trace);
  releaser->stop();
  store.hold_until_released(std::move(releaser));
  return passes + 1;
}

}  // namespace gpusort::pipeline
