// Run formation on GPUs: the reader streams records through page-locked staging buffers to
// the run former; sorted runs come back through staging buffers into the run store, or
// straight into the output when the whole input is one chunk. Several GPUs form runs at once,
// each with readers, staging and a former of its own, taking a file's chunks from one queue.
#pragma once

#include <tbb/task_arena.h>

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpusort/options.hpp"
#include "gpusort/record_format.hpp"
#include "io/input_source.hpp"
#include "io/output_sink.hpp"
#include "pipeline/gpu_selection.hpp"
#include "pipeline/run_store.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

struct gpu_run_result {
  std::string device_name;
  /// The GPU sort algorithm ("onesweep", "hrs"), or what `auto` chose for the chunks.
  std::string sorter;
  std::uint64_t records = 0;
  bool wrote_output = false;  ///< one chunk: the output was written directly, no runs stored
  /// What the GPU stage still holds where it wrote the output (the former's device memory and
  /// streams, the page-locked staging): to be let go once the output is committed, where
  /// freeing it (11-15 ms on the H100 machine) no longer delays the result.
  std::vector<std::shared_ptr<void>> release_after_commit;
  /// Where runs were kept: the same being freed on threads of their own, beside the host merge
  /// that follows (13 ms at 4 GiB on the H200 machine). Wait for them before the devices or
  /// the memory budget are used again; the futures wait as they go.
  std::vector<std::future<void>> teardowns;
};

/// What the GPU stage needs beyond the sort options.
struct gpu_stage_config {
  /// The GPUs that form runs. Several form the runs of an input of known size at once: records
  /// they sort directly in chunks of max_chunk_records that each takes from one queue where
  /// every one holds that chunk; else (or items) each its equal share. A stream goes to the
  /// first alone.
  std::vector<int> devices{0};
  std::uint64_t max_chunk_records = 0;  ///< 0: as large as the device budget allows
  /// When set, and the input's size is known and exceeds one chunk of this many records: the
  /// runs' memory is page-locked ahead of the former (run_pinner), the runs come back into it
  /// without a staging copy and stay page-locked in the store. Used when the runs go back to
  /// the GPU (strategy gpu_ranges); dropped if the former's chunk turns out different.
  std::uint64_t pin_chunk_records = 0;
};

/**
 * Forms sorted runs of `input` on the GPUs of `config`.
 * - When one GPU takes the input, its size is known and it fits one chunk, the sorted records
 *   are written to the sink that `open_sink(total_bytes)` returns, as they arrive, and no run
 *   is stored.
 * - A stream's output is opened (`open_sink` with its size) as soon as the stream ends, before
 *   its last chunk is sorted, so that the output can fault in meanwhile; its runs still go to
 *   `store`.
 * - Otherwise each run goes to `store` (resident or spilled by its limit). Several GPUs form
 *   runs at once, each on threads of its own: chunks of a file they take from one queue (run c
 *   is chunk c) where each holds config.max_chunk_records, else each its share (run ids of
 *   share i from i * share_run_id_stride); the first failure stops the others and is
 *   rethrown.
 * - Formats the former cannot sort directly (payloads over 8 bytes, bytes:N keys) are sorted
 *   as (key, index) items and gathered on the host.
 * - Host-side parallel work runs in `arena`.
 * @throw gpusort::cuda_error, gpusort::error
 */
gpu_run_result form_runs_on_gpu(io::input_source& input, const sort_options& options,
                                const gpu_stage_config& config, run_store& store,
                                const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                                tbb::task_arena& arena, trace_recorder* trace);

}  // namespace gpusort::pipeline
