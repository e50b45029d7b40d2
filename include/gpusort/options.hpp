// Everything that steers one sort, independent of how the caller spelled it (CLI or library).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpusort/record_format.hpp"

namespace gpusort {

/// Which run sorter forms the sorted runs.
enum class algorithm : std::uint8_t {
  /// The GPU when a device is used, else the CPU radix sort. On the GPU, each chunk of records
  /// that are their own key goes to the hybrid radix sort or CUB Onesweep, whichever measured
  /// faster for its size; records with a payload go to Onesweep, which keeps equal keys in
  /// input order.
  automatic,
  onesweep,  ///< CUB DeviceRadixSort (Onesweep) on the GPU
  /// The hybrid radix sort on the GPU (records the GPU sorts directly; others go to Onesweep as
  /// (key, index) items). Equal keys of records with a payload come out in no particular order.
  hrs,
  cpu,  ///< parallel radix sort on the host
};

/// Where runs of several GPU chunks become one sorted output.
enum class merge_location : std::uint8_t {
  automatic,  ///< the GPU where it can (gpu below), else the host
  host,       ///< the TBB multiway merge on the host
  /// The GPU: the runs are cut by exact rank into key ranges of one chunk each, and each range
  /// is sorted again on the GPU straight into its place in the output. Needs records the GPU
  /// sorts directly (a 4- or 8-byte numeric key, at most 8 bytes of payload) and runs that stay
  /// in host memory.
  gpu,
};

/// Which GPUs may be used. A file of more than one chunk is shared among all of them, which
/// form its runs at once, taking the chunks from one queue; one chunk, or a stream, is sorted
/// by the first.
struct device_selection {
  enum class mode : std::uint8_t {
    automatic,  ///< every visible GPU; the CPU when there is none
    none,       ///< no GPU: the CPU sorts
    list,       ///< the GPUs in `ids`, in that order; an error when one is missing
    all,        ///< every visible GPU; an error when there is none
  } how = mode::automatic;
  std::vector<int> ids;  ///< device ids when `how == list`: distinct, not negative
};

/// Whether bulk reads and writes bypass the page cache (O_DIRECT).
enum class direct_io : std::uint8_t {
  /// Where the data is larger than the memory left to the page cache beside the sort's own
  /// (the usable memory less the budget in use): buffered I/O would only evict it again, and
  /// queue dirty pages that the kernel throttles to disk speed and a cgroup counts against us.
  automatic,
  always,  ///< for the input, the output and spilled runs, wherever the filesystem allows
  never,   ///< always through the page cache
};

/// How `--stats` reports per-stage figures.
enum class stats_format : std::uint8_t { none, text, json };

/// The smallest host budget a sort runs with: below it, merges would move a few records per
/// step and run for hours. A smaller sort_options::buffer_bytes is raised to it.
inline constexpr std::uint64_t min_buffer_bytes = std::uint64_t{4} << 20;

/// How NumPy .npy inputs (recognised by their header) are read: their dtype decides the
/// record format, and sorted outputs are .npy files with the input's header.
struct npy_options {
  /// --key NAME: the field of a structured dtype that holds the key (the record is the row).
  std::string key_field;
  /// Which parts of sort_options::format the caller chose (-t, --record-size, --key-offset,
  /// --format): each must agree with an .npy input's header; the others come from the header.
  bool type_set = false;
  bool record_size_set = false;
  bool key_offset_set = false;
};

struct sort_options {
  /// The records of raw inputs. An .npy input's header decides its own (see `npy`).
  record_format format{};
  npy_options npy{};
  bool descending = false;  ///< -r: largest key first
  bool stable = false;      ///< -s: equal keys keep their input order (always true today)
  /// -u: keep only the first record (in input order) of each run of equal keys; with
  /// check_file, equal neighbours are disorder.
  bool unique = false;
  /// -m: every input is already sorted; they are merged, not sorted. An input that is not
  /// sorted fails the sort before any output is written.
  bool merge_only = false;

  /// Host memory budget in bytes; 0 means the default (half of the usable memory: the RAM, or
  /// a cgroup's memory limit where smaller). Raised to min_buffer_bytes and capped at the
  /// usable memory.
  std::uint64_t buffer_bytes = 0;
  /// Where spilled runs go; empty means $TMPDIR, else /tmp.
  std::string temp_dir;
  /// Threads for CPU work; 0 means all hardware threads. Capped at the CPUs this process may
  /// run on: more threads only compete for them.
  unsigned threads = 0;

  device_selection devices{};
  algorithm algo = algorithm::automatic;
  /// Device memory budget in bytes; 0 means most of the free device memory.
  std::uint64_t gpu_memory_bytes = 0;
  merge_location merge = merge_location::automatic;

  /// Request fsync of the output before the rename.
  bool fsync = false;
  /// --direct-io: O_DIRECT for the input, the output and spilled runs.
  direct_io direct = direct_io::automatic;

  stats_format stats = stats_format::none;
  /// When non-empty, a Chrome trace-event JSON file of every stage is written there.
  std::string trace_path;
  /// One-line notices (backend chosen, plan) on stderr.
  bool verbose = false;
  /// How far the current stage has come, on stderr: a line redrawn in place on a terminal,
  /// a plain line every few seconds elsewhere.
  bool progress = false;
};

}  // namespace gpusort
