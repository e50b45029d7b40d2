// The output sink, opened once in the plan's output mode.
#include "gpusort/error.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

io::output_sink& output_opener::open(std::uint64_t total_bytes) {
  if (sink_ != nullptr) {
    GPUSORT_EXPECTS(total_bytes == bytes_, "output opened for " + std::to_string(bytes_) +
                                               " bytes, written with " +
                                               std::to_string(total_bytes));
    return *sink_;
  }
  // One mapping of the whole output serves the GPU and single-run strategies (and allows the
  // prefault); the merges write windows.
  sink_ = io::make_output_sink(out_, total_bytes, io::write_method::automatic, trace_,
                               plan_.mode == output_mode::mapped_whole, record_size_);
  bytes_ = total_bytes;
  if (plan_.prefault) sink_->prefault(plan_.prefault_threads);
  return *sink_;
}

}  // namespace gpusort::pipeline
