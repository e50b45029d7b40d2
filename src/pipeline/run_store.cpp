// Run storage: resident runs up to the budget, the rest written to anonymous temp files.
#include "pipeline/run_store.hpp"

#include <fcntl.h>

#include "core/trace.hpp"
#include "io/temp_file.hpp"

namespace gpusort::pipeline {

void sorted_run::release(std::uint32_t record_size) noexcept {
  if (file != nullptr && records > 0) {
    // The file may hold other runs still to be merged: free this run's blocks only. Where the
    // filesystem cannot punch holes the space comes back when the file closes.
    ::fallocate(file->get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                static_cast<off_t>(file_offset), static_cast<off_t>(records * record_size));
  }
  *this = sorted_run{};
}

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
    if (spill_file_ == nullptr)
      spill_file_ = std::make_shared<const io::file_descriptor>(io::make_anonymous_file(temp_dir_));
    ring.write_exact(*spill_file_, spill_end_, {buffer.data(), static_cast<std::size_t>(bytes)});
    run.file = spill_file_;
    run.file_offset = spill_end_;
    spill_end_ += bytes;
  }
  runs_.push_back(std::move(run));
}

void run_store::add_file(io::file_descriptor file, std::uint64_t records) {
  sorted_run run;
  run.records = records;
  run.file = std::make_shared<const io::file_descriptor>(std::move(file));
  total_records_ += records;
  spilled_ = true;
  runs_.push_back(std::move(run));
}

}  // namespace gpusort::pipeline
