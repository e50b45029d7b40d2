#include "pipeline/run_pinner.hpp"

#include "core/trace.hpp"
#include "gpu/run_former.hpp"
#include "gpu/topology.hpp"

namespace gpusort::pipeline {

run_pinner::run_pinner(std::vector<std::size_t> run_bytes, std::uint64_t first_run, int device,
                       unsigned threads, trace_recorder* trace)
    : run_bytes_(std::move(run_bytes)), first_run_(first_run), device_(device),
      numa_node_(gpu::device_numa_node(device)), trace_(trace),
      prepared_(run_bytes_.size()), ready_(run_bytes_.size(), 0) {
  for (unsigned t = 0; t < threads && t < run_bytes_.size(); ++t)
    threads_.emplace_back([this] { prepare(); });
}

run_pinner::~run_pinner() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
  // Unlocked before unmapped (run_memory declares pin after memory, so the default order
  // would unmap first).
  for (run_memory& m : prepared_) m.pin.reset();
}

void run_pinner::prepare() {
  for (;;) {
    std::size_t run = 0;
    {
      std::lock_guard lock(mutex_);
      if (stopping_ || next_ == run_bytes_.size()) return;
      run = next_++;
    }
    run_memory m;
    {
      trace_recorder::scope timer(trace_, "pin runs", run_bytes_[run]);
      // Out of memory or out of lockable memory: the run is staged instead, as without a
      // pinner, and the sort goes on.
      try {
        m.memory = host_buffer(run_bytes_[run], /*prefault=*/true, numa_node_);
        m.pin = gpu::register_host_memory(m.memory.span(), device_);
      } catch (const std::exception&) {
        m.pin.reset();
      }
    }
    std::lock_guard lock(mutex_);
    prepared_[run] = std::move(m);
    ready_[run] = 1;
  }
}

run_pinner::state run_pinner::try_take(std::uint64_t id, run_memory& out) {
  std::lock_guard lock(mutex_);
  if (id < first_run_) return state::unplanned;
  const std::uint64_t run = id - first_run_;
  if (run >= ready_.size() || ready_[run] == 2) return state::unplanned;
  if (ready_[run] == 0) return state::pending;
  out = std::move(prepared_[run]);
  ready_[run] = 2;
  return state::ready;
}

}  // namespace gpusort::pipeline
