// Pass two of strategy gpu_ranges: sorted runs become the output without a host merge. The
// runs are cut by exact rank into key ranges of one GPU chunk each; each range's pieces travel
// to a GPU in run order, are sorted there again, stably, and are written at the range's final
// offset in the output while the next range is copied in. Several GPUs take the ranges from
// one queue.
#pragma once

#include <tbb/task_arena.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gpusort/options.hpp"
#include "io/output_sink.hpp"
#include "pipeline/run_store.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

/**
 * Writes the sorted order of every run in `store` to the sink that
 * `open_sink(total bytes)` returns, sorting key ranges on the GPUs of `devices`: the first
 * alone where its chunk holds every record or the sink takes writes only in order (a
 * stream); else the GPUs sort at once, each taking the next range from one queue as it is
 * done with its last (a faster GPU takes more), every range one chunk of the smallest any of
 * them holds. The first GPU to fail stops the others; its error is rethrown.
 * - Requires runs in input order and a format the GPU sorts directly (gpu::supports_format);
 *   the runs stay untouched. A run spilled through the page cache is read through a mapping
 *   (map_spilled), each range's pieces asked for one range ahead (read-ahead where they left
 *   the cache); one spilled with O_DIRECT is refused.
 * - Stable: a range holds, for equal keys, the records of lower runs first (cpu::select_cuts),
 *   concatenated in run order and sorted stably.
 * - Host-side copies run in `arena`.
 * Returns the number of key ranges, and what the GPUs are done with (their formers' device
 * memory and streams, the page-locked staging) for the caller to let go of after the commit,
 * as strategy gpu_one_chunk does.
 * @throw gpusort::cuda_error, gpusort::error
 */
struct range_sort_result {
  std::uint64_t ranges = 0;
  std::shared_ptr<void> leftovers;
};
range_sort_result sort_ranges_on_gpu(run_store& store, const sort_options& options,
                                 const std::vector<int>& devices,
                                 const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                                 tbb::task_arena& arena, trace_recorder* trace);

}  // namespace gpusort::pipeline
