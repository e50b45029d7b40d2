// Pass two of strategy gpu_ranges: sorted runs become the output without a host merge. The
// runs are cut by exact rank into key ranges of one GPU chunk each; each range's pieces travel
// to the GPU in run order, are sorted there again, stably, and are written at the range's
// final offset in the output while the next range is copied in.
#pragma once

#include <tbb/task_arena.h>

#include <cstdint>
#include <functional>

#include "gpusort/options.hpp"
#include "io/output_sink.hpp"
#include "pipeline/run_store.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

/**
 * Writes the sorted order of every run in `store` to the sink that
 * `open_sink(total bytes)` returns, sorting key ranges on GPU `device`.
 * - Requires resident runs in input order and a format the GPU sorts directly
 *   (gpu::supports_format); the runs stay untouched.
 * - Stable: a range holds, for equal keys, the records of lower runs first (cpu::select_cuts),
 *   concatenated in run order and sorted stably.
 * - Host-side copies run in `arena`.
 * Returns the number of key ranges.
 * @throw gpusort::cuda_error, gpusort::error
 */
std::uint64_t sort_ranges_on_gpu(run_store& store, const sort_options& options, int device,
                                 const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                                 tbb::task_arena& arena, trace_recorder* trace);

}  // namespace gpusort::pipeline
