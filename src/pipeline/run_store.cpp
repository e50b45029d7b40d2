// Run storage: resident runs up to the budget, the rest written to anonymous temp files.
#include "pipeline/run_store.hpp"

#include "core/trace.hpp"
#include "io/temp_file.hpp"

namespace gpusort::pipeline {

run_store::run_store(std::uint32_t record_size, std::uint64_t resident_limit,
                     std::string temp_dir, trace_recorder* trace)
    : record_size_(record_size),
      resident_limit_(resident_limit),
      temp_dir_(io::temp_directory(temp_dir)),
      trace_(trace) {}

void run_store::add(host_buffer buffer, std::uint64_t records, io::uring& ring) {
  const std::uint64_t bytes = records * record_size_;
  sorted_run run;
  run.records = records;
  total_records_ += records;
  if (resident_bytes_ + bytes <= resident_limit_) {
    resident_bytes_ += bytes;
    run.memory = std::move(buffer);
  } else {
    trace_recorder::scope timer(trace_, "spill", bytes);
    spilled_ = true;
    run.file = io::make_anonymous_file(temp_dir_);
    ring.write_exact(run.file, 0, {buffer.data(), static_cast<std::size_t>(bytes)});
  }
  runs_.push_back(std::move(run));
}

void run_store::add_file(io::file_descriptor file, std::uint64_t records) {
  sorted_run run;
  run.records = records;
  run.file = std::move(file);
  total_records_ += records;
  spilled_ = true;
  runs_.push_back(std::move(run));
}

}  // namespace gpusort::pipeline
