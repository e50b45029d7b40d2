// Per-stage measurements of one sort, for --stats and for programs that call the library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpusort {

/// One pipeline stage ("read", "sort", "merge", "write", ...). `busy_seconds` is the union of the
/// intervals in which the stage was working; `bytes` what it moved.
struct stage_stats {
  std::string name;
  double busy_seconds = 0;
  std::uint64_t bytes = 0;
  double first_start = 0;  ///< seconds since the sort began
  double last_end = 0;
};

struct sort_stats {
  std::uint64_t records = 0;         ///< records read
  std::uint64_t output_records = 0;  ///< records written: fewer than `records` with --unique
  std::uint64_t input_bytes = 0;
  std::uint64_t runs = 0;         ///< sorted runs formed (1: no merge)
  std::uint64_t merge_passes = 0; ///< 0 when a single run was written directly
  bool spilled = false;           ///< runs went through temporary files
  std::string backend;            ///< "cpu", the GPU's name, or "2 x NAME" for several
  std::string strategy;           ///< the plan's strategy: "gpu-one-chunk", "cpu-runs", ...
  /// The GPU sort algorithm ("onesweep", "hrs"), or what --algorithm auto chose for the
  /// chunks ("auto sorted 3 chunk(s) with hrs, 1 with onesweep ..."); empty on the CPU.
  std::string gpu_sorter;
  double wall_seconds = 0;
  std::vector<stage_stats> stages;

  /// Human-readable table, one stage a line.
  [[nodiscard]] std::string to_text() const;
  /// One JSON object.
  [[nodiscard]] std::string to_json() const;
};

}  // namespace gpusort
