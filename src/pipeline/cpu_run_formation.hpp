// Run formation on the host: read chunks, sort each with the CPU radix sort, store the runs.
#pragma once

#include "gpusort/record_format.hpp"
#include "io/input_source.hpp"
#include "pipeline/run_store.hpp"
#include "pipeline/sort_plan.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

/**
 * Reads `input` in chunks of plan.chunk_records and sorts each into `store`. A reader thread
 * fills the next chunk while the current one sorts.
 * @throw gpusort::error from reading, sorting or spilling.
 */
void form_runs_on_cpu(io::input_source& input, const sort_plan& plan, const record_format& format,
                      bool descending, run_store& store, trace_recorder* trace);

}  // namespace gpusort::pipeline
