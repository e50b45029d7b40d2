// The output sink, opened once in the plan's output mode.
#include "gpusort/error.hpp"
#include "pipeline/strategy.hpp"
#include "pipeline/unique_output.hpp"

namespace gpusort::pipeline {

io::output_sink& output_opener::open(std::uint64_t total_bytes) {
  if (sink_ != nullptr) {
    GPUSORT_EXPECTS(total_bytes == bytes_, "output opened for " + std::to_string(bytes_) +
                                               " bytes, written with " +
                                               std::to_string(total_bytes));
    return *sink_;
  }
  // One mapping of the whole output serves the GPU and single-run strategies and the merges
  // of spilled runs (and allows the prefault); the other merges write windows.
  const io::write_method method = plan_.mode == output_mode::direct ? io::write_method::direct
                                                                     : io::write_method::automatic;
  const bool whole = plan_.whole(total_bytes);
  sink_ = io::make_output_sink(out_, total_bytes, method, trace_, whole, format_.record_size);
  if (unique_stream_) sink_ = std::make_unique<unique_stream_sink>(std::move(sink_), format_);
  bytes_ = total_bytes;
  if (plan_.prefault && whole)
    sink_->prefault(plan_.prefault_threads, /*wait=*/false, prefault_ahead_);
  return *sink_;
}

void output_opener::limit_prefault(std::uint64_t bytes) {
  prefault_ahead_ = bytes;
  if (sink_ != nullptr && plan_.prefault && plan_.whole(bytes_))
    sink_->prefault(plan_.prefault_threads, /*wait=*/false, prefault_ahead_);
}

std::optional<std::uint64_t> output_opener::unique_stream_bytes() const {
  if (!unique_stream_) return std::nullopt;
  if (sink_ == nullptr) return 0;
  return static_cast<const unique_stream_sink&>(*sink_).kept_bytes();
}

}  // namespace gpusort::pipeline
