// The run layout in words, for --verbose.
#include "pipeline/run_layout.hpp"

#include "core/parse_size.hpp"

namespace gpusort::pipeline {

std::string run_layout::describe(const record_format& format) const {
  std::string s = "budget " + format_bytes(budget_bytes) + ", ";
  if (single_run) return s + "one run, no merge";
  s += "runs of " + format_bytes(chunk_records * format.record_size);
  s += resident_bytes > 0 ? ", kept in memory up to " + format_bytes(resident_bytes)
                          : ", spilled to temporary files";
  s += ", merge fan-in " + std::to_string(merge_fanin);
  return s;
}

}  // namespace gpusort::pipeline
