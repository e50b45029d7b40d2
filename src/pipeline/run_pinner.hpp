// Page-locked memory for the runs of an input of known size, prepared ahead of the run former
// on a few threads: sorted runs then come back from the GPU straight into their memory, and go
// back to the GPU from it for the range sort, with no copy through staging buffers (two host
// copies of the whole input fewer for strategy gpu_ranges).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/host_buffer.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::pipeline {

class run_pinner {
 public:
  /// A run's memory; `pin` is empty where page-locking failed (the run is then staged).
  struct run_memory {
    host_buffer memory;
    std::shared_ptr<void> pin;
  };
  enum class state : std::uint8_t {
    ready,      ///< taken: its memory is in `out`
    pending,    ///< still being prepared
    unplanned,  ///< beyond the runs planned, or already taken: the caller allocates its own
  };

  /// Starts preparing the `run_bytes[i]` bytes of run first_run + i, in run order, on
  /// `threads` threads (a former whose run ids start at first_run).
  run_pinner(std::vector<std::size_t> run_bytes, std::uint64_t first_run, int device,
             unsigned threads, trace_recorder* trace);
  /// Stops after the runs being prepared; memory not taken is released.
  ~run_pinner();
  run_pinner(const run_pinner&) = delete;
  run_pinner& operator=(const run_pinner&) = delete;

  /// Never blocks: the run former's thread asks while it has pieces to deliver.
  state try_take(std::uint64_t run, run_memory& out);

 private:
  void prepare();

  std::vector<std::size_t> run_bytes_;
  std::uint64_t first_run_;
  int device_;
  int numa_node_;  // the GPU's: runs are page-locked where it copies from them fastest
  trace_recorder* trace_;
  std::mutex mutex_;
  std::vector<run_memory> prepared_;
  std::vector<std::uint8_t> ready_;  // 0 pending, 1 ready, 2 taken
  std::size_t next_ = 0;             // the next run a thread prepares
  bool stopping_ = false;
  std::vector<std::thread> threads_;  // last: joined before the members they use go away
};

}  // namespace gpusort::pipeline
