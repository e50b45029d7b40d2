// Sorted runs waiting for the merge: in host memory while they fit the budget, else in
// anonymous temporary files.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/host_buffer.hpp"
#include "io/direct_io.hpp"
#include "io/file_descriptor.hpp"
#include "io/file_view.hpp"
#include "io/uring.hpp"
#include "pipeline/pipeline_config.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

/// An anonymous temporary file of spilled runs, opened a second time with O_DIRECT when the
/// runs are to bypass the page cache (and its filesystem allows it).
struct spill_file {
  io::file_descriptor fd;
  std::optional<io::file_descriptor> direct;
  [[nodiscard]] io::file_pair pair() const noexcept { return {fd, direct ? &*direct : nullptr}; }
  /// Gives the disk blocks of [offset, offset + bytes) back (best effort: where the filesystem
  /// cannot punch holes, the space comes back when the file closes).
  void release(std::uint64_t offset, std::uint64_t bytes) const noexcept;
};

/// `bytes` at `offset` of a spill file: a piece of a spilled run (files are shared by many
/// runs, so that the open descriptors do not grow with the number of runs: RLIMIT_NOFILE), or
/// merged records whose disk blocks may go back.
struct spill_range {
  std::shared_ptr<const spill_file> file;
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

/// Gives `ranges` back (best effort), one thread per file (one file frees one range at a time:
/// its inode lock). A filesystem mounted with `discard` discards written-back blocks
/// synchronously: on the H100 machine 16 GiB of spilled runs went back at 0.7-1.0 GB/s from one
/// thread and 0.8-1.4 GB/s from eight, the device taking the discards mostly one by one.
void release_ranges(std::span<const spill_range> ranges) noexcept;

/// One sorted run. Exactly one of `memory` and `pieces` holds its records.
struct sorted_run {
  /// Its place among the runs (run_store::add): equal keys of different runs are merged in
  /// this order, which is the input's.
  std::uint64_t id = 0;
  std::uint64_t records = 0;
  host_buffer memory;  ///< resident: records at memory.data()
  /// Resident and page-locked for a GPU (gpu::register_host_memory): copies to the device read
  /// `memory` directly. Declared after it, so that it is unlocked before it is unmapped.
  std::shared_ptr<void> pin;
  /// Spilled: the records in order, in stripes across the store's files (written in parallel:
  /// one thread copies into the page cache at about 3 GB/s).
  std::vector<spill_range> pieces;
  [[nodiscard]] bool resident() const noexcept { return pieces.empty(); }
  /// Spilled past the page cache (O_DIRECT): read back in windows, never mapped.
  [[nodiscard]] bool direct() const noexcept {
    return !pieces.empty() && pieces.front().file->direct.has_value();
  }
  /// Gives a spilled run's disk space back (best effort) and empties the run.
  void release() noexcept;
};

/// A read-only mapping of `run` when it spilled through the page cache, else nothing: resident
/// and O_DIRECT runs, pieces off page boundaries, and files that refuse to be mapped (ENODEV).
[[nodiscard]] std::optional<io::file_view> map_spilled(const sorted_run& run);

/// How runs spilled through the page cache are cut into stripes (tests cut them small).
struct spill_striping {
  std::size_t files = spill_stripes;                   ///< stripes per run, each a file
  std::uint64_t min_stripe_bytes = pipeline::min_stripe_bytes;  ///< no stripe smaller
};

/**
 * Keeps runs in input order, the order of their ids, whatever order they arrive in: formers on
 * several GPUs add theirs at once, from threads of their own. add() keeps a run resident while
 * the resident total stays within
 * `resident_limit` bytes and spills it otherwise: with `direct`, to the store's one temporary
 * file in `temp_dir`, written and read back with O_DIRECT; else in stripes across
 * `striping.files` files, written in parallel through the page cache. Every run (and stripe)
 * starts on a block boundary, so that O_DIRECT moves whole blocks and a mapping whole pages.
 * @throw gpusort::error on temporary-file trouble (ENOSPC names the directory).
 */
class run_store {
 public:
  run_store(std::uint32_t record_size, std::uint64_t resident_limit, std::string temp_dir,
            bool direct, trace_recorder* trace, spill_striping striping = {});

  /// Takes sorted run `id` held in `buffer` (records at its start), with its page lock `pin`
  /// when it is page-locked (dropped when the run spills). `keep_resident`: in memory even past
  /// the resident limit, where the caller's budget holds it anyway (the last run of a formation
  /// whose other buffers are free now: spilling it would only write it and read it back).
  /// Ids must differ; several threads may add at once, each with its own `ring` (a spill is
  /// written outside the store's lock).
  /// Returns `buffer` when the run spilled (unlocked, its pages still mapped: a caller that
  /// forms more runs of its size can fill it again instead of faulting in fresh memory), and
  /// an empty buffer when the store keeps it.
  host_buffer add(std::uint64_t id, host_buffer buffer, std::uint64_t records, io::uring& ring,
                  std::shared_ptr<void> pin = {}, bool keep_resident = false);
  /// A new, empty temporary file in temp_dir() for runs (a merge pass's output), opened for
  /// O_DIRECT as the store's own.
  [[nodiscard]] std::shared_ptr<const spill_file> new_spill_file() const;
  /// Where the next run written to the end (`end`) of a spill file starts: on a block and page
  /// boundary, so that O_DIRECT moves its whole blocks and a mapping of it starts on a page.
  [[nodiscard]] static std::uint64_t run_start(std::uint64_t end) noexcept;

  /// Empties the store and gives its runs' memory and temporary file back on threads of their
  /// own (page locks first), timed as "release runs": the caller goes on closing the output
  /// meanwhile, and waits for the result before it reports the sort done.
  [[nodiscard]] std::future<void> release_in_background();
  /// Keeps `work` (what still frees the runs' blocks, say) until release_in_background lets
  /// go of it first, off the caller's path.
  void hold_until_released(std::shared_ptr<void> work);

  [[nodiscard]] std::vector<sorted_run>& runs() noexcept { return runs_; }
  [[nodiscard]] const std::vector<sorted_run>& runs() const noexcept { return runs_; }
  [[nodiscard]] std::uint64_t total_records() const noexcept { return total_records_; }
  [[nodiscard]] bool any_spilled() const noexcept { return spilled_; }
  /// Bytes of runs that add() would still keep in memory.
  [[nodiscard]] std::uint64_t resident_room() const {
    std::lock_guard lock(mutex_);
    return resident_limit_ > resident_bytes_ ? resident_limit_ - resident_bytes_ : 0;
  }
  [[nodiscard]] const std::string& temp_dir() const noexcept { return temp_dir_; }
  [[nodiscard]] std::uint32_t record_size() const noexcept { return record_size_; }

 private:
  std::uint32_t record_size_;
  std::uint64_t resident_limit_;
  std::uint64_t resident_bytes_ = 0;
  std::uint64_t total_records_ = 0;
  bool spilled_ = false;
  std::string temp_dir_;
  bool direct_;
  trace_recorder* trace_;
  spill_striping striping_;
  /// A file that runs are appended to, and where its data ends.
  struct spill_target {
    std::shared_ptr<const spill_file> file;
    std::uint64_t end = 0;
  };
  /// Where `bytes` of a run go at the end of the spill files: one stripe per file (creating
  /// the files a first time), each on a block boundary. Called under mutex_.
  std::vector<spill_range> place_spill(std::uint64_t bytes);
  /// Frees the spill files once the runs are gone: those held by nobody else are handed whole
  /// to io::release_in_background.
  static void let_go_of_spill_files(std::vector<spill_range> ranges,
                                    std::vector<spill_target> targets) noexcept;
  /// Writes `data` to the stripes place_spill chose, in parallel.
  void write_spill(const std::byte* data, const std::vector<spill_range>& pieces, io::uring& ring);

  mutable std::mutex mutex_;  // guards the counts above, and the three below
  std::vector<spill_target> spill_files_;  // created with the first spill
  std::vector<sorted_run> runs_;           // in order of id
  std::vector<std::shared_ptr<void>> held_;  // hold_until_released()
};

}  // namespace gpusort::pipeline
