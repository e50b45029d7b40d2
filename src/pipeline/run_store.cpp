// Run storage: resident runs up to the budget, the rest written to anonymous temp files.
#include "pipeline/run_store.hpp"

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>

#include "core/trace.hpp"
#include "io/temp_file.hpp"
#include "pipeline/pipeline_config.hpp"

namespace gpusort::pipeline {
namespace {


}  // namespace

void sorted_run::release(std::uint32_t record_size) noexcept {
  // The file may hold other runs still to be merged: free this run's blocks only.
  if (file != nullptr && records > 0) file->release(file_offset, records * record_size);
  pin.reset();  // unlocked before the memory goes
  *this = sorted_run{};
}

void spill_file::release(std::uint64_t offset, std::uint64_t bytes) const noexcept {
  ::fallocate(fd.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
              static_cast<off_t>(bytes));
}

run_store::run_store(std::uint32_t record_size, std::uint64_t resident_limit,
                     std::string temp_dir, bool direct, trace_recorder* trace)
    : record_size_(record_size),
      resident_limit_(resident_limit),
      temp_dir_(io::temp_directory(temp_dir)),
      direct_(direct),
      trace_(trace) {}

std::shared_ptr<const spill_file> run_store::new_spill_file() const {
  auto file = std::make_shared<spill_file>();
  file->fd = io::make_anonymous_file(temp_dir_);
  if (direct_) file->direct = io::reopen_direct(file->fd, O_RDWR);
  return file;
}

std::uint64_t run_store::run_start(const spill_file& file, std::uint64_t end) noexcept {
  if (!file.direct) return end;
  constexpr std::uint64_t block = io::direct_io_alignment;
  return (end + block - 1) / block * block;
}

void run_store::add(host_buffer buffer, std::uint64_t records, io::uring& ring,
                    std::shared_ptr<void> pin) {
  const std::uint64_t bytes = records * record_size_;
  sorted_run run;
  run.records = records;
  total_records_ += records;
  if (resident_bytes_ + bytes <= resident_limit_) {
    resident_bytes_ += bytes;
    run.memory = std::move(buffer);
    run.pin = std::move(pin);
  } else {
    trace_recorder::scope timer(trace_, "spill", bytes);
    spilled_ = true;
    if (spill_file_ == nullptr) spill_file_ = new_spill_file();
    spill_end_ = run_start(*spill_file_, spill_end_);
    io::write_range(spill_file_->pair(), spill_end_,
                    {buffer.data(), static_cast<std::size_t>(bytes)}, ring, {});
    run.file = spill_file_;
    run.file_offset = spill_end_;
    spill_end_ += bytes;
    pin.reset();  // unlocked before `buffer` goes
  }
  runs_.push_back(std::move(run));
}

std::future<void> run_store::release_in_background() {
  std::vector<sorted_run> runs = std::move(runs_);
  runs_.clear();
  // Closing the spill file waits for its pages still under writeback: seconds under a memory
  // limit (5.1 s unaccounted after a 16 GiB CPU sort in a 6 GiB cgroup on the H200 machine).
  std::shared_ptr<const spill_file> spill = std::move(spill_file_);
  spill_end_ = 0;
  resident_bytes_ = 0;
  total_records_ = 0;
  return std::async(std::launch::async, [runs = std::move(runs), spill = std::move(spill),
                                         record_size = record_size_, trace = trace_]() mutable {
    std::uint64_t bytes = 0;
    for (const sorted_run& run : runs) bytes += run.resident() ? run.memory.size() : 0;
    trace_recorder::scope timer(trace, "release runs", bytes);
    std::atomic<std::size_t> next{0};
    auto release_some = [&] {
      for (std::size_t i = next++; i < runs.size(); i = next++) runs[i].release(record_size);
    };
    std::vector<std::thread> pool;
    try {
      for (std::size_t t = 1; t < std::min(run_release_threads, runs.size()); ++t)
        pool.emplace_back(release_some);
    } catch (const std::system_error&) {  // no more threads: fewer share the work
    }
    release_some();
    for (std::thread& th : pool) th.join();
    runs.clear();
    spill.reset();  // the last reference: the file closes inside the timed scope
  });
}

}  // namespace gpusort::pipeline
