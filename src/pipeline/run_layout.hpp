// How host memory is divided among runs: chunk size, whether runs stay in memory or spill,
// merge fan-in. Part of the sort plan (pipeline/plan.hpp), which picks the strategy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "gpusort/record_format.hpp"
#include "pipeline/pipeline_config.hpp"

namespace gpusort::pipeline {

/// Run knobs, one line each; make_plan derives them from the host budget.
struct run_layout {
  std::uint64_t budget_bytes = 0;       ///< host memory the sort may use
  std::uint64_t chunk_records = 0;      ///< records per sorted run
  std::uint64_t resident_bytes = 0;     ///< runs kept in memory up to this many bytes; more spill
  std::uint32_t merge_fanin = 0;        ///< runs merged at once from temporary files
  std::uint64_t read_block_bytes = 0;   ///< bytes per read request
  bool single_run = false;              ///< the whole input is one chunk: no merge

  [[nodiscard]] std::string describe(const record_format& format) const;
};

/**
 * Lays out the runs of `input_bytes` (nullopt: a stream of unknown length) within `budget`.
 * `scratch_bytes(records)` is the run sorter's scratch need for a chunk of that many records.
 */
template <typename ScratchFn>
run_layout make_run_layout(std::optional<std::uint64_t> input_bytes, const record_format& format,
                           std::uint64_t budget, ScratchFn scratch_bytes);

template <typename ScratchFn>
run_layout make_run_layout(std::optional<std::uint64_t> input_bytes, const record_format& format,
                           std::uint64_t budget, ScratchFn scratch_bytes) {
  const std::uint64_t rec = format.record_size;
  run_layout layout;
  layout.budget_bytes = budget;
  layout.read_block_bytes = default_read_block;
  auto working_set = [&](std::uint64_t records) {  // chunk + scratch
    return records * rec + scratch_bytes(records);
  };
  // Largest chunk whose working set fits `bytes`.
  auto chunk_fitting = [&](std::uint64_t bytes) {
    std::uint64_t lo = 1;
    std::uint64_t hi = std::max<std::uint64_t>(1, bytes / rec);
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo + 1) / 2;
      if (working_set(mid) <= bytes) lo = mid;
      else hi = mid - 1;
    }
    return std::max<std::uint64_t>(lo, std::max<std::uint64_t>(1, min_chunk_bytes / rec));
  };

  if (input_bytes) {
    const std::uint64_t n = *input_bytes / rec;
    if (working_set(n) <= budget) {
      layout.single_run = true;
      layout.chunk_records = std::max<std::uint64_t>(n, 1);
      layout.resident_bytes = *input_bytes;
    } else if (*input_bytes < budget && budget - *input_bytes >= 3 * min_chunk_bytes) {
      // Every run stays in memory; the rest of the budget is the working set of one chunk
      // being sorted plus the next one being read.
      const std::uint64_t room = budget - *input_bytes;
      layout.chunk_records = chunk_fitting(room * 2 / 3);
      layout.resident_bytes = *input_bytes;
    } else {
      // Runs spill: a chunk being read, one being sorted (with scratch), one being written.
      layout.chunk_records = chunk_fitting(budget / 2);
      layout.resident_bytes = 0;
    }
  } else {
    layout.chunk_records = chunk_fitting(budget / 2);
    layout.resident_bytes = budget / 2;
  }
  // Each run being merged from a file needs a window of its own; keep windows >= 1 MiB.
  const std::uint64_t window = std::max<std::uint64_t>(rec, std::uint64_t{1} << 20);
  layout.merge_fanin = static_cast<std::uint32_t>(
      std::clamp<std::uint64_t>(budget / (2 * window + 1), 2, 1024));
  return layout;
}

}  // namespace gpusort::pipeline
