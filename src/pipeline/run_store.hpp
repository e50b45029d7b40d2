// Sorted runs waiting for the merge: in host memory while they fit the budget, else in
// anonymous temporary files.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/host_buffer.hpp"
#include "io/direct_io.hpp"
#include "io/file_descriptor.hpp"
#include "io/uring.hpp"

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

/// One sorted run. Exactly one of `memory` and `file` holds its records.
struct sorted_run {
  std::uint64_t records = 0;
  host_buffer memory;  ///< resident: records at memory.data()
  /// Resident and page-locked for a GPU (gpu::register_host_memory): copies to the device read
  /// `memory` directly. Declared after it, so that it is unlocked before it is unmapped.
  std::shared_ptr<void> pin;
  /// Spilled: records from `file_offset` of a temporary file that several runs share, so that
  /// the open descriptors do not grow with the number of runs (RLIMIT_NOFILE).
  std::shared_ptr<const spill_file> file;
  std::uint64_t file_offset = 0;
  [[nodiscard]] bool resident() const noexcept { return file == nullptr; }
  /// Gives a spilled run's disk space back (best effort) and empties the run.
  void release(std::uint32_t record_size) noexcept;
};

/**
 * Keeps runs in input order. add() keeps a run resident while the resident total stays within
 * `resident_limit` bytes and appends it to the store's one temporary file in `temp_dir`
 * otherwise; with `direct`, spilled runs are written and read back with O_DIRECT, each
 * starting on a block boundary of the file.
 * @throw gpusort::error on temporary-file trouble (ENOSPC names the directory).
 */
class run_store {
 public:
  run_store(std::uint32_t record_size, std::uint64_t resident_limit, std::string temp_dir,
            bool direct, trace_recorder* trace);

  /// Takes a sorted run held in `buffer` (records at its start), with its page lock `pin`
  /// when it is page-locked (dropped when the run spills).
  void add(host_buffer buffer, std::uint64_t records, io::uring& ring,
           std::shared_ptr<void> pin = {});
  /// A new, empty temporary file in temp_dir() for runs (a merge pass's output), opened for
  /// O_DIRECT as the store's own.
  [[nodiscard]] std::shared_ptr<const spill_file> new_spill_file() const;
  /// Where the next run written to the end (`end`) of a spill file starts: on a block
  /// boundary when the file is written with O_DIRECT, so that its whole blocks go directly.
  [[nodiscard]] static std::uint64_t run_start(const spill_file& file, std::uint64_t end) noexcept;

  /// Empties the store and gives its runs' memory and temporary file back on threads of their
  /// own (page locks first), timed as "release runs": the caller goes on closing the output
  /// meanwhile, and waits for the result before it reports the sort done.
  [[nodiscard]] std::future<void> release_in_background();

  [[nodiscard]] std::vector<sorted_run>& runs() noexcept { return runs_; }
  [[nodiscard]] std::uint64_t total_records() const noexcept { return total_records_; }
  [[nodiscard]] bool any_spilled() const noexcept { return spilled_; }
  /// Bytes of runs that add() would still keep in memory.
  [[nodiscard]] std::uint64_t resident_room() const noexcept {
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
  std::shared_ptr<const spill_file> spill_file_;  // created with the first spill
  std::uint64_t spill_end_ = 0;
  std::vector<sorted_run> runs_;
};

}  // namespace gpusort::pipeline
