// Run storage: resident runs up to the budget, the rest written to anonymous temp files.
#include "pipeline/run_store.hpp"

#include <fcntl.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <system_error>
#include <thread>

#include "core/trace.hpp"
#include "gpusort/error.hpp"
#include "io/file_view.hpp"
#include "io/release_in_background.hpp"
#include "io/temp_file.hpp"
#include "pipeline/pipeline_config.hpp"

namespace gpusort::pipeline {
void sorted_run::release() noexcept {
  // The files hold other runs still to be merged: free this run's blocks only.
  for (const spill_range& piece : pieces) piece.file->release(piece.offset, piece.bytes);
  pin.reset();  // unlocked before the memory goes
  *this = sorted_run{};
}

std::optional<io::file_view> map_spilled(const sorted_run& run) {
  if (run.resident() || run.direct()) return std::nullopt;
  std::vector<io::file_piece> pieces;
  for (const spill_range& p : run.pieces) pieces.push_back({&p.file->fd, p.offset, p.bytes});
  if (!io::file_view::fits(pieces)) return std::nullopt;
  try {
    return io::file_view(pieces);
  } catch (const error&) {  // e.g. ENODEV: a filesystem without mmap
    return std::nullopt;
  }
}

void release_ranges(std::span<const spill_range> ranges) noexcept {
  std::vector<const spill_file*> files;
  for (const spill_range& r : ranges)
    if (r.bytes > 0 && std::find(files.begin(), files.end(), r.file.get()) == files.end())
      files.push_back(r.file.get());
  auto release_file = [ranges](const spill_file* file) {
    for (const spill_range& r : ranges)
      if (r.file.get() == file && r.bytes > 0) file->release(r.offset, r.bytes);
  };
  std::vector<std::thread> pool;
  std::size_t started = 1;  // files[0] is this thread's
  try {
    for (; started < files.size(); ++started) pool.emplace_back(release_file, files[started]);
  } catch (const std::system_error&) {  // no more threads: this one takes the rest
  }
  for (std::size_t i = 0; i < files.size(); ++i)
    if (i == 0 || i >= started) release_file(files[i]);
  for (std::thread& t : pool) t.join();
}

void spill_file::release(std::uint64_t offset, std::uint64_t bytes) const noexcept {
  ::fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
              static_cast<off_t>(bytes));
}

run_store::run_store(std::uint32_t record_size, std::uint64_t resident_limit,
                     std::string temp_dir, bool direct, trace_recorder* trace,
                     spill_striping striping)
    : record_size_(record_size),
      resident_limit_(resident_limit),
      temp_dir_(io::temp_directory(temp_dir)),
      direct_(direct),
      trace_(trace),
      striping_(striping) {
  GPUSORT_EXPECTS(striping_.files >= 1, "run_store: no spill files");
}

std::shared_ptr<const spill_file> run_store::new_spill_file() const {
  auto file = std::make_shared<spill_file>();
  file->fd = io::make_anonymous_file(temp_dir_);
  if (direct_) file->direct = io::reopen_direct(file->fd, O_RDWR);
  return file;
}

std::uint64_t run_store::run_start(std::uint64_t end) noexcept {
  const std::uint64_t block = std::max<std::uint64_t>(io::direct_io_alignment, io::page_bytes());
  return (end + block - 1) / block * block;
}

std::vector<spill_range> run_store::place_spill(std::uint64_t bytes) {
  // O_DIRECT requests already keep the disk busy from one file; through the page cache, each
  // file takes one writer at a time (the inode lock), so parallel stripes need files of their own.
  const std::size_t files = direct_ ? 1 : striping_.files;
  const std::uint64_t block = run_start(1);
  const std::uint64_t stripes =
      std::clamp<std::uint64_t>(bytes / std::max<std::uint64_t>(striping_.min_stripe_bytes, 1),
                                1, files);
  const std::uint64_t stripe = (bytes / stripes + block - 1) / block * block;
  std::vector<spill_range> pieces;
  for (std::uint64_t at = 0, i = 0; at < bytes; at += stripe, ++i) {
    if (i == spill_files_.size()) spill_files_.push_back({new_spill_file(), 0});  // first use
    spill_target& target = spill_files_[i];
    target.end = run_start(target.end);
    pieces.push_back({target.file, target.end, std::min(stripe, bytes - at)});
    target.end += pieces.back().bytes;
  }
  return pieces;
}

void run_store::write_spill(const std::byte* data, const std::vector<spill_range>& pieces,
                            io::uring& ring) {
  std::vector<std::uint64_t> starts;  // of each stripe within the run
  for (std::uint64_t at = 0; const spill_range& piece : pieces) {
    starts.push_back(at);
    at += piece.bytes;
  }
  auto write_piece = [&](std::size_t i, io::uring& r) {
    const spill_range& piece = pieces[i];
    // Inline, not in io_uring's worker pool: that serializes buffered writes to one file too.
    io::transfer_config config;
    config.force_async = false;
    io::write_range(piece.file->pair(), piece.offset,
                    {data + starts[i], static_cast<std::size_t>(piece.bytes)}, r, config);
  };
  if (pieces.size() == 1) {
    write_piece(0, ring);
  } else {
    tbb::parallel_for(std::size_t{0}, pieces.size(), [&](std::size_t i) {
      io::uring own(8);
      write_piece(i, own);
    });
  }
}

host_buffer run_store::add(std::uint64_t id, host_buffer buffer, std::uint64_t records,
                           io::uring& ring, std::shared_ptr<void> pin, bool keep_resident) {
  const std::uint64_t bytes = records * record_size_;
  sorted_run run;
  run.id = id;
  run.records = records;
  {
    std::lock_guard lock(mutex_);
    total_records_ += records;
    if (keep_resident || resident_bytes_ + bytes <= resident_limit_) {
      resident_bytes_ += bytes;
      run.memory = std::move(buffer);
      run.pin = std::move(pin);
    } else {
      spilled_ = true;
      run.pieces = place_spill(bytes);
    }
  }
  if (!run.resident()) {
    trace_recorder::scope timer(trace_, "spill", bytes);
    write_spill(buffer.data(), run.pieces, ring);
    pin.reset();  // unlocked before `buffer` goes back
  }
  std::lock_guard lock(mutex_);
  const auto at = std::upper_bound(runs_.begin(), runs_.end(), id,
                                   [](std::uint64_t i, const sorted_run& r) { return i < r.id; });
  GPUSORT_EXPECTS(at == runs_.begin() || std::prev(at)->id != id,
                  "run_store: run " + std::to_string(id) + " added twice");
  runs_.insert(at, std::move(run));
  return buffer;  // moved from (empty) where the run stayed resident
}

void run_store::hold_until_released(std::shared_ptr<void> work) {
  std::lock_guard lock(mutex_);
  held_.push_back(std::move(work));
}

std::future<void> run_store::release_in_background() {
  std::lock_guard lock(mutex_);
  std::vector<sorted_run> runs = std::move(runs_);
  runs_.clear();
  std::vector<std::shared_ptr<void>> held = std::move(held_);
  held_.clear();
  // Closing the spill file waits for its pages still under writeback: seconds under a memory
  // limit (5.1 s unaccounted after a 16 GiB CPU sort in a 6 GiB cgroup on the H200 machine).
  std::vector<spill_target> spill = std::move(spill_files_);
  spill_files_.clear();
  resident_bytes_ = 0;
  total_records_ = 0;
  // The spilled runs' blocks first, in parallel by file; then the runs' memory.
  std::vector<spill_range> ranges;
  for (sorted_run& run : runs) {
    std::move(run.pieces.begin(), run.pieces.end(), std::back_inserter(ranges));
    run.pieces.clear();
  }
  return std::async(std::launch::async, [runs = std::move(runs), spill = std::move(spill),
                                         ranges = std::move(ranges), held = std::move(held),
                                         trace = trace_]() mutable {
    std::uint64_t bytes = 0;
    // Not what a merge has given back already (merge_runs discards consumed records).
    for (const sorted_run& run : runs) bytes += run.memory.size() - run.memory.discarded_bytes();
    trace_recorder::scope timer(trace, "release runs", bytes);
    held.clear();  // first: what it holds of the spill files goes before they are let go of
    let_go_of_spill_files(std::move(ranges), std::move(spill));
    std::atomic<std::size_t> next{0};
    auto release_some = [&] {
      for (std::size_t i = next++; i < runs.size(); i = next++) runs[i].release();
    };
    std::vector<std::thread> pool;
    try {
      for (std::size_t t = 1; t < std::min(run_release_threads, runs.size()); ++t)
        pool.emplace_back(release_some);
    } catch (const std::system_error&) {  // no more threads: fewer share the work
    }
    release_some();
    for (std::thread& th : pool) th.join();
    runs.clear();
  });
}

void run_store::let_go_of_spill_files(std::vector<spill_range> ranges,
                                      std::vector<spill_target> targets) noexcept {
  // Punching the rest of their blocks and closing them freed the files here, synchronously: on
  // a filesystem that discards as it frees, at 1-5 GB/s, seconds after a spilled sort (4.3-11.1
  // s of 16 GiB on the H100 machine). Now the files go whole to another process, whose exit
  // frees them. A file someone else still holds is freed when that holder lets go of it.
  std::vector<std::shared_ptr<const spill_file>> files;
  auto take = [&files](const std::shared_ptr<const spill_file>& file) {
    if (file && std::find(files.begin(), files.end(), file) == files.end())
      files.push_back(file);
  };
  try {
    for (const spill_range& r : ranges) take(r.file);
    for (const spill_target& t : targets) take(t.file);
  } catch (...) {  // no memory for the list: the files close here
    return;
  }
  ranges.clear();
  targets.clear();
  std::vector<io::file_descriptor> handed;
  try {
    for (std::shared_ptr<const spill_file>& file : files) {
      if (file.use_count() != 1) continue;
      // Ours alone: made here (new_spill_file), not const, and nobody can read it any more.
      auto& own = const_cast<spill_file&>(*file);
      handed.push_back(std::move(own.fd));
      if (own.direct) handed.push_back(std::move(*own.direct));
    }
  } catch (...) {  // no memory for the list: the rest close here
  }
  files.clear();
  io::release_in_background(std::move(handed));
}

}  // namespace gpusort::pipeline
