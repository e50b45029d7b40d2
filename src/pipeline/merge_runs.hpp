// The merge stage: sorted runs (resident or spilled) into the output sink, in windows, with as
// many passes as the fan-in requires.
#pragma once

#include <cstdint>

#include <span>

#include "cpu/multiway_merge.hpp"
#include "gpusort/options.hpp"
#include "gpusort/record_format.hpp"
#include "io/output_sink.hpp"
#include "pipeline/run_store.hpp"
#include "pipeline/run_layout.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

/**
 * Writes the merge of every run in `store` to `sink` (offsets from 0).
 * - Resident runs are merged in place. Runs spilled through the page cache are mapped
 *   (`map_spilled_runs`; false reads them in windows too, as where a filesystem refuses mmap);
 *   runs spilled with O_DIRECT are read back in windows.
 * - More spilled runs than layout.merge_fanin are first merged in groups into longer runs.
 * - Stable: equal keys keep run order, runs are in input order.
 * Returns the number of merge passes.
 * @throw gpusort::error on I/O trouble.
 */
std::uint32_t merge_runs(run_store& store, io::output_sink& sink, const record_format& format,
                         bool descending, const run_layout& layout, trace_recorder* trace,
                         bool map_spilled_runs = true);

/// Writes the merge of `runs` (sorted, in memory, numbered in input order) to `sink` from
/// offset 0, stably, in windows; in parallel where the sink takes parallel writes.
void merge_views(std::span<const cpu::run_view> runs, io::output_sink& sink,
                 const record_format& format, bool descending, trace_recorder* trace);

}  // namespace gpusort::pipeline
