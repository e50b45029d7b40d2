// Run formation on the host: read chunks, sort each with the CPU radix sort, store the runs.
#pragma once

#include <cstdint>

#include "gpusort/record_format.hpp"
#include "io/input_source.hpp"
#include "io/output_sink.hpp"
#include "pipeline/run_store.hpp"
#include "pipeline/run_layout.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

/**
 * Sorts `input` in chunks of layout.chunk_records into `store`, the last run kept in memory.
 * - One input file, where `in_place` (its pages may stay in the page cache): each chunk is
 *   sorted straight out of the file's mapping into its run (cpu::sort_records_from), with no
 *   read into fresh memory first, while a thread of its own stores (spills) the run before.
 *   Releasing the mapping after the last run is timed as "unmap input".
 * - Anything else: a reader thread fills the next chunk while the current one sorts and is
 *   stored.
 * @throw gpusort::error from reading, sorting or spilling.
 */
void form_runs_on_cpu(io::input_source& input, const run_layout& layout,
                      const record_format& format, bool descending, bool in_place,
                      run_store& store, trace_recorder* trace);

/**
 * Sorts an input of known size that is one run (layout.single_run) straight into the output.
 * One input file is mapped read-only and sorted from its page cache into the output file's
 * mapping (io::input_source::map_whole, cpu::sort_records_from); other inputs are read into
 * host memory, and the radix sort uses that memory and the output mapping as its two buffers.
 * Either way the last pass writes the sorted records in place: no pass that copies the sorted
 * run into the output, and no scratch buffer (fresh memory costs a page fault and zeroing per
 * page) unless `write_once` asks for one.
 * - `sink` is the output sink for `total_bytes` (= input.known_size()); nothing is read and
 *   false is returned unless it maps the whole output (output_sink::mapping()), and the
 *   caller sorts the general way. Its pages are faulted in first with `threads` threads.
 * - `write_once` (output_plan::write_once): the sort goes through a scratch buffer of the
 *   input's size instead (cpu::sort_records_through) and writes each output page once, which
 *   is not faulted in first.
 * - Returns true once every record is sorted into the sink (the caller still calls finish).
 * @throw gpusort::error from reading or sorting, or when the input's size changed.
 */
bool sort_single_run_into(io::input_source& input, const run_layout& layout,
                          const record_format& format, bool descending, io::output_sink& sink,
                          std::uint64_t total_bytes, unsigned threads, bool write_once,
                          trace_recorder* trace);

}  // namespace gpusort::pipeline
