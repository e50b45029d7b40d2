// GPU run formation: chunks stream in over PCIe, are sorted by a chunk_sorter (CUB Onesweep or
// the hybrid radix sort) and stream back as sorted runs, with three device slots and in-place
// replacement (Stehle & Jacobsen 2017, §5).
//
// Synchronization, in one place (R_i: slot holding run i; D_i: slot chunk i is copied into;
// F_i: the slot sort i leaves free; D_i = R_{i-2}, and sort i uses F_{i-1} as its aux slot):
//   h2d stream:     chunk pieces in order. A piece writing slot bytes [a, b) of D_i (i >= 2)
//                   first waits on the D2H piece of run i-2 that covers byte b-1; the D2H stream
//                   is in order, so that one event implies every earlier byte has left too.
//                   After a chunk's last piece: h2d_done[i].
//   compute stream: sort i waits on h2d_done[i] (chunk i is on the device) and on the last D2H
//                   piece of run i-2 (d2h_done[i-2]). The latter frees D_i beyond chunk i's own
//                   bytes (a short last chunk) and, by D2H stream order, F_{i-1} when it is
//                   R_{i-3}. It then writes D_i and F_{i-1} only. After it: sort_done[i].
//   d2h stream:     run i's pieces wait once on sort_done[i]; each records its own event.
// Every wait is enqueued only after the event it names was recorded (the host checks, and
// stalls the enqueue otherwise), and an event is recycled only once the host has seen it
// complete, or once its waits are enqueued (cudaStreamWaitEvent captures the event's state at
// the call). All waits point at strictly earlier work, so the streams cannot deadlock.
// The host side is one worker thread: it enqueues everything, polls events, and runs the
// callbacks (on_consumed, piece_buffer, piece_done, run_done) in order.
#include "gpu/run_former.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "core/parse_size.hpp"
#include "core/trace.hpp"
#include "gpu/chunk_sorter.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.cuh"
#include "gpu/dispatch.cuh"
#include "gpusort/detail/key_codec.hpp"

namespace gpusort::gpu {
namespace {

/// How often the worker polls events while device work is outstanding.
constexpr auto poll_interval = std::chrono::microseconds(100);
}  // namespace

chunk_plan plan_chunks(const run_former_config& config, const device_info& info) {
  const std::unique_ptr<chunk_sorter> sorter =
      make_chunk_sorter(config.algorithm, config.format, config.descending);
  return plan_chunks(config, info, *sorter);
}

bool may_hold_chunk(const run_former_config& config, std::uint64_t total_bytes,
                    std::uint64_t records) noexcept {
  const std::uint64_t budget =
      config.memory_budget != 0 ? std::min(config.memory_budget, total_bytes) : total_bytes;
  return records <= budget / 3 / record_shape(config.format).record_size;
}

chunk_plan plan_chunks(const run_former_config& config, const device_info& info,
                       const chunk_sorter& sorter) {
  const record_shape shape(config.format);
  device_guard guard(config.device);  // the workspace queries read the current device
  chunk_plan plan;
  if (config.memory_budget != 0) {
    plan.budget_bytes = config.memory_budget;
  } else {
    // Leave room for the context's own growth, other processes and fragmentation.
    const std::uint64_t margin =
        std::max<std::uint64_t>(std::uint64_t{512} << 20, info.total_bytes / 32);
    plan.budget_bytes = info.free_bytes > margin ? info.free_bytes - margin : 0;
  }
  const std::uint64_t budget = plan.budget_bytes;
  std::uint64_t cap = sorter.max_records();
  if (config.max_chunk_records != 0) cap = std::min(cap, config.max_chunk_records);
  const std::uint64_t per_record =
      std::max<std::uint64_t>(sorter.slot_bytes(1 << 20) >> 20, 1);  // 3 slots cost 3x this
  std::uint64_t n = std::min(cap, budget / (3 * per_record));
  // The workspace grows with n: shrink until slots and workspace fit together.
  for (int iteration = 0; n > 0; ++iteration) {
    const std::uint64_t workspace = sorter.workspace_bytes(n);
    if (3 * sorter.slot_bytes(n) + workspace <= budget) break;
    const std::uint64_t left =
        budget > workspace + 3 * slot_alignment ? budget - workspace - 3 * slot_alignment : 0;
    const std::uint64_t fit = left / (3 * per_record);
    n = iteration < 8 ? std::min(n - 1, fit) : n - 1 - n / 64;
  }
  plan.chunk_records = n;
  if (n == 0) return plan;
  plan.slot_bytes = sorter.slot_bytes(n);
  plan.workspace_bytes = sorter.workspace_bytes(n);
  const std::size_t piece_bytes =
      config.piece_bytes != 0 ? config.piece_bytes : run_former_default_piece_bytes;
  plan.piece_records = std::max<std::uint64_t>(1, piece_bytes / shape.record_size);
  return plan;
}

struct run_former::impl {
  // --- configuration and plan (immutable after construction) ---
  run_former_config config_;
  run_sink& sink_;
  trace_recorder* trace_;
  device_info info_;
  std::uint32_t record_size_ = 0;
  std::unique_ptr<chunk_sorter> sorter_;
  std::uint32_t key_sample_size_ = 0;  ///< keys sampled per chunk for the sorter (0: none)
  std::uint64_t budget_ = 0;
  std::uint64_t chunk_records_ = 0;
  std::uint64_t piece_records_ = 0;
  std::uint64_t slot_bytes_ = 0;
  std::size_t workspace_bytes_ = 0;  ///< the sorter's

  // --- device resources ---
  device_buffer slots_[3];
  device_buffer workspace_;
  stream h2d_;
  stream compute_;
  stream d2h_;
  std::vector<event> free_events_;
  event clock_ref_;        ///< trace: GPU time zero ...
  double clock_ref_s_ = 0;  ///< ... at this trace_recorder time

  // --- shared between the caller's threads and the worker (guarded by mutex_) ---
  struct push_request {
    std::span<const std::byte> data;
    std::function<void()> on_consumed;
    bool ends_run = false;  ///< end_run(): the chunk being filled closes here
  };
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<push_request> incoming_;
  bool input_done_ = false;
  bool abort_ = false;
  std::exception_ptr error_;
  std::thread worker_;

  // --- worker-only state ---
  struct push_state {
    push_request request;
    std::uint64_t enqueued_bytes = 0;
    std::uint64_t pieces_in_flight = 0;
  };
  struct h2d_piece {
    std::uint64_t push_id;
    std::uint64_t chunk;
    std::uint64_t bytes;
    event begin;  // trace only
    event end;
  };
  struct fill_state {
    bool open = false;
    std::uint64_t chunk = 0;
    int slot = -1;
    std::uint64_t records = 0;
    std::vector<std::uint64_t> key_sample;  ///< normalized keys, for the sorter's choice
  };
  struct filled_chunk {
    std::uint64_t index;
    int slot;
    std::uint64_t records;
    event h2d_done;
    std::vector<std::uint64_t> key_sample;
  };
  struct d2h_piece {
    std::uint64_t first_record;
    std::uint64_t records;
    std::span<std::byte> host;
    event begin;  // trace only
    event end;
  };
  struct run_state {
    std::uint64_t index = 0;
    int slot = -1;
    std::uint64_t records = 0;
    std::uint64_t enqueued = 0;   ///< records whose D2H is enqueued
    std::uint64_t completed = 0;  ///< records whose D2H completed (host has seen it)
    bool waits_on_sort = false;   ///< the D2H stream already waits on sort_done
    std::deque<d2h_piece> in_flight;
    event sort_begin, prepared, sorted;  // trace only
    event sort_done;
  };

  std::deque<push_state> pushes_;   ///< accepted, on_consumed not yet run
  std::uint64_t push_base_ = 0;     ///< id of pushes_.front()
  std::size_t push_cursor_ = 0;     ///< index in pushes_ of the first push not fully enqueued
  std::deque<h2d_piece> h2d_in_flight_;
  fill_state fill_;
  std::uint64_t next_chunk_ = 0;
  std::map<std::uint64_t, int> fill_slot_for_;  ///< chunk -> slot, known once sort chunk-2 is
  std::deque<filled_chunk> to_sort_;
  int aux_slot_ = 2;
  std::deque<run_state> runs_;  ///< runs not completely delivered, in order
  std::size_t d2h_pieces_in_flight_ = 0;

  impl(const run_former_config& config, run_sink& sink, trace_recorder* trace);
  ~impl();

  void plan();
  [[nodiscard]] std::string describe() const;

  event acquire_event();
  void release_event(event&& e);
  [[nodiscard]] double trace_time(const event& e) const;

  void worker_main();
  void run_loop();
  void fail(std::exception_ptr error) noexcept;
  void quiesce() noexcept;

  bool take_incoming();
  bool enqueue_h2d();
  void sample_keys(const std::byte* records, std::uint64_t first, std::uint64_t count);
  void close_fill();
  bool enqueue_sorts();
  void enqueue_sort(filled_chunk& chunk);
  bool enqueue_d2h();
  bool poll();
  run_state* find_run(std::uint64_t index);
  [[nodiscard]] bool all_done() const;
  [[nodiscard]] bool device_work_pending() const;
};

// --- construction and planning ---------------------------------------------------------------

run_former::impl::impl(const run_former_config& config, run_sink& sink, trace_recorder* trace)
    : config_(config), sink_(sink), trace_(trace) {
  GPUSORT_EXPECTS(supports_format(config.format),
                  "GPU run former: unsupported record format: " + gpusort::describe(config.format));
  const int devices = device_count();
  GPUSORT_EXPECTS(config.device >= 0 && config.device < devices,
                  "GPU run former: no CUDA device " + std::to_string(config.device) + " (" +
                      std::to_string(devices) + " present)");
  const int dev = config.device;
  // The caller's thread: the workspace queries and the allocations need the device current.
  device_guard guard(dev);
  info_ = query_device(dev);
  record_size_ = config.format.record_size;
  sorter_ = make_chunk_sorter(config.algorithm, config.format, config.descending);
  key_sample_size_ = sorter_->key_sample_size();

  plan();
  // Chunks 0 and 1 go into slots 0 and 1; slot 2 is the first sort's alternate buffer. Later
  // chunks go where run chunk-2 lies (set as each sort is enqueued).
  fill_slot_for_[0] = 0;
  fill_slot_for_[1] = 1;
  aux_slot_ = 2;

  // One chunk needs no second data slot: allocating it would only cost setup time.
  const bool one_chunk = config.expected_records != 0 && config.expected_records <= chunk_records_;
  for (int i = 0; i < 3; ++i)
    if (i != 1 || !one_chunk) slots_[i] = device_buffer(slot_bytes_, dev);
  workspace_ = device_buffer(std::max<std::size_t>(workspace_bytes_, 1), dev);
  h2d_ = stream(dev);
  compute_ = stream(dev);
  d2h_ = stream(dev);
  if (config.poison_device_memory) {
    // Synchronous: the H2D stream must not race with it.
    for (device_buffer& slot : slots_)
      if (slot.size() != 0)
        GPUSORT_CUDA_TRY(cudaMemsetAsync(slot.data(), 0xA5, slot.size(), compute_.get()));
    GPUSORT_CUDA_TRY(cudaMemsetAsync(workspace_.data(), 0xA5, workspace_.size(), compute_.get()));
    compute_.synchronize();
  }
  if (trace_ != nullptr) {
    clock_ref_ = event(dev, true);
    clock_ref_.record(compute_.get());
    clock_ref_.synchronize();
    clock_ref_s_ = trace_->now();
  }
  worker_ = std::thread([this] { worker_main(); });
}

run_former::impl::~impl() {
  if (worker_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      abort_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  // The worker quiesced the streams before it returned; the RAII members free the rest.
}

void run_former::impl::plan() {
  const chunk_plan p = plan_chunks(config_, info_, *sorter_);
  budget_ = p.budget_bytes;
  if (p.chunk_records == 0)
    throw out_of_memory("GPU run former: a GPU memory budget of " + format_bytes(budget_) +
                            " on device " + std::to_string(config_.device) +
                            " holds no chunk of " + gpusort::describe(config_.format),
                        budget_);
  chunk_records_ = p.chunk_records;
  slot_bytes_ = p.slot_bytes;
  workspace_bytes_ = p.workspace_bytes;
  piece_records_ = p.piece_records;
}

std::string run_former::impl::describe() const {
  std::ostringstream os;
  os << "GPU " << info_.id << " (" << info_.name << "): budget " << format_bytes(budget_)
     << " of " << format_bytes(info_.free_bytes) << " free, using "
     << format_bytes(3 * slot_bytes_ + workspace_bytes_) << "; 3 slots x "
     << format_bytes(slot_bytes_) << " = " << chunk_records_ << " records per chunk of "
     << gpusort::describe(config_.format) << (config_.descending ? ", descending" : "")
     << "; " << sorter_->describe() << " (workspace " << format_bytes(workspace_bytes_)
     << "); pieces " << format_bytes(piece_records_ * record_size_) << "; kernels "
     << detail::kernel_policies_description();
  return os.str();
}

// --- events and trace clock ------------------------------------------------------------------

event run_former::impl::acquire_event() {
  if (!free_events_.empty()) {
    event e = std::move(free_events_.back());
    free_events_.pop_back();
    return e;
  }
  // Timing is only paid for when a trace wants the intervals.
  return event(config_.device, trace_ != nullptr);
}

void run_former::impl::release_event(event&& e) {
  if (e) free_events_.push_back(std::move(e));
}

double run_former::impl::trace_time(const event& e) const {
  return clock_ref_s_ + elapsed_ms(clock_ref_, e) / 1000.0;
}

// --- worker thread ---------------------------------------------------------------------------

void run_former::impl::worker_main() {
  try {
    GPUSORT_CUDA_TRY(cudaSetDevice(config_.device));
    run_loop();
  } catch (...) {
    fail(std::current_exception());
  }
}

void run_former::impl::quiesce() noexcept {
  // After a sticky error these return at once with the error; either way no copy still
  // touches caller or sink memory afterwards (or the context is gone).
  static_cast<void>(cudaStreamSynchronize(h2d_.get()));
  static_cast<void>(cudaStreamSynchronize(compute_.get()));
  static_cast<void>(cudaStreamSynchronize(d2h_.get()));
}

void run_former::impl::fail(std::exception_ptr error) noexcept {
  std::deque<push_request> orphans;
  {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
    orphans.swap(incoming_);
  }
  quiesce();
  // The device no longer reads any pushed memory: hand it back so that waiting callers wake.
  auto release = [](std::function<void()>& callback) {
    if (!callback) return;
    try {
      callback();
    } catch (...) {  // the first error is the one reported
    }
  };
  for (push_state& p : pushes_) release(p.request.on_consumed);
  for (push_request& r : orphans) release(r.on_consumed);
  pushes_.clear();
}

void run_former::impl::run_loop() {
  for (;;) {
    bool progress = take_incoming();
    {
      std::lock_guard lock(mutex_);
      if (abort_) {
        quiesce();
        return;
      }
    }
    progress |= poll();
    progress |= enqueue_d2h();
    progress |= enqueue_sorts();
    progress |= enqueue_h2d();
    if (all_done()) return;
    if (progress) continue;
    std::unique_lock lock(mutex_);
    if (!incoming_.empty() || abort_) continue;
    if (device_work_pending())
      wake_.wait_for(lock, poll_interval);
    else
      wake_.wait(lock, [this] { return !incoming_.empty() || abort_ || input_done_; });
  }
}

bool run_former::impl::take_incoming() {
  bool input_done = false;
  bool took = false;
  {
    std::lock_guard lock(mutex_);
    took = !incoming_.empty();
    while (!incoming_.empty()) {
      pushes_.push_back(push_state{std::move(incoming_.front())});
      incoming_.pop_front();
    }
    input_done = input_done_;
  }
  // At the end of input the partly filled chunk is complete once every push is enqueued.
  if (input_done && push_cursor_ == pushes_.size() && fill_.open) {
    close_fill();
    took = true;
  }
  return took;
}

bool run_former::impl::all_done() const {
  bool input_done = false;
  {
    std::lock_guard lock(mutex_);
    input_done = input_done_ && incoming_.empty();
  }
  return input_done && pushes_.empty() && !fill_.open && to_sort_.empty() && runs_.empty() &&
         h2d_in_flight_.empty();
}

bool run_former::impl::device_work_pending() const {
  // Anything queued on the device, or host work that waits for device progress.
  return !h2d_in_flight_.empty() || !runs_.empty() || !to_sort_.empty() || !pushes_.empty();
}

run_former::impl::run_state* run_former::impl::find_run(std::uint64_t index) {
  // Runs leave runs_ in order once delivered: an index before the front is complete.
  if (runs_.empty() || index < runs_.front().index) return nullptr;
  const std::uint64_t at = index - runs_.front().index;
  return at < runs_.size() ? &runs_[at] : nullptr;
}

// --- H2D: pushes into the chunk being filled -------------------------------------------------

bool run_former::impl::enqueue_h2d() {
  bool progress = false;
  while (push_cursor_ < pushes_.size()) {
    push_state& p = pushes_[push_cursor_];
    const std::uint64_t push_bytes = p.request.data.size();
    if (p.enqueued_bytes == push_bytes) {  // empty push, or done
      // end_run(): every push before it is enqueued, so the chunk being filled is complete.
      if (p.request.ends_run && fill_.open) close_fill();
      ++push_cursor_;
      progress = true;
      continue;
    }
    if (!fill_.open) {
      // Chunk j goes into the slot run j-2 occupies, known once sort j-2 was enqueued.
      const auto slot = fill_slot_for_.find(next_chunk_);
      if (slot == fill_slot_for_.end()) break;
      GPUSORT_EXPECTS(slots_[slot->second].size() != 0,
                      "GPU run former: more records pushed than "
                      "run_former_config::expected_records");
      fill_ = fill_state{true, next_chunk_, slot->second, 0, {}};
      fill_slot_for_.erase(slot);
      ++next_chunk_;
    }
    const std::uint64_t first = fill_.records;
    const std::uint64_t piece_end = (first / piece_records_ + 1) * piece_records_;
    const std::uint64_t count = std::min({(push_bytes - p.enqueued_bytes) / record_size_,
                                          chunk_records_ - first, piece_end - first});
    const std::uint64_t bytes = count * record_size_;

    // In-place replacement: these slot bytes still hold run chunk-2 until its D2H moved them.
    // D2H pieces share the grid of piece_records_, so one D2H piece covers this H2D piece.
    if (fill_.chunk >= 2) {
      if (run_state* prev = find_run(fill_.chunk - 2)) {
        const std::uint64_t need = std::min(first + count, prev->records);
        if (prev->enqueued < need) break;  // its D2H piece is not enqueued yet: nothing to wait on
        if (prev->completed < need) {
          const auto covering = std::find_if(
              prev->in_flight.begin(), prev->in_flight.end(),
              [&](const d2h_piece& d) { return d.first_record + d.records >= need; });
          GPUSORT_EXPECTS(covering != prev->in_flight.end(),
                          "GPU run former: internal error: no D2H piece covers a refill");
          GPUSORT_CUDA_TRY(cudaStreamWaitEvent(h2d_.get(), covering->end.get(), 0));
        }
      }
    }

    sample_keys(p.request.data.data() + p.enqueued_bytes, first, count);
    h2d_piece piece{push_base_ + push_cursor_, fill_.chunk, bytes, event{}, acquire_event()};
    if (trace_ != nullptr) {
      piece.begin = acquire_event();
      piece.begin.record(h2d_.get());
    }
    std::byte* dst = slots_[fill_.slot].data() + first * record_size_;
    GPUSORT_CUDA_TRY(cudaMemcpyAsync(dst, p.request.data.data() + p.enqueued_bytes, bytes,
                                     cudaMemcpyHostToDevice, h2d_.get()));
    piece.end.record(h2d_.get());
    h2d_in_flight_.push_back(std::move(piece));
    p.enqueued_bytes += bytes;
    ++p.pieces_in_flight;
    fill_.records += count;
    if (fill_.records == chunk_records_) close_fill();
    progress = true;
  }
  return progress;
}

void run_former::impl::sample_keys(const std::byte* records, std::uint64_t first,
                                   std::uint64_t count) {
  if (key_sample_size_ == 0) return;
  // Record step/2 + j*step of the chunk for j = 0, 1, ...: evenly over a full chunk, and over
  // the records that arrived of a short last one.
  const std::uint64_t step = std::max<std::uint64_t>(1, chunk_records_ / key_sample_size_);
  const std::uint64_t offset = step / 2;
  std::uint64_t at = first <= offset ? offset : offset + (first - offset + step - 1) / step * step;
  const std::uint32_t key_offset = config_.format.key_offset;
  const auto read = [&](auto word) {
    using Word = decltype(word);
    const auto codec = gpusort::detail::make_key_codec<Word>(config_.format.type,
                                                             config_.descending);
    for (; at < first + count; at += step) {
      Word bits;
      std::memcpy(&bits, records + (at - first) * record_size_ + key_offset, sizeof bits);
      fill_.key_sample.push_back(codec.normalize(bits));
    }
  };
  if (config_.format.key_size == sizeof(std::uint32_t)) read(std::uint32_t{});
  else read(std::uint64_t{});
}

void run_former::impl::close_fill() {
  filled_chunk chunk{fill_.chunk, fill_.slot, fill_.records, acquire_event(),
                     std::move(fill_.key_sample)};
  chunk.h2d_done.record(h2d_.get());
  to_sort_.push_back(std::move(chunk));
  fill_ = fill_state{};
}

// --- sorts -----------------------------------------------------------------------------------

bool run_former::impl::enqueue_sorts() {
  bool progress = false;
  while (!to_sort_.empty()) {
    filled_chunk& chunk = to_sort_.front();
    if (chunk.index >= 2) {
      const run_state* prev = find_run(chunk.index - 2);
      // The wait on d2h_done[i-2] needs that event recorded: all of run i-2 enqueued.
      if (prev != nullptr && prev->enqueued < prev->records) break;
    }
    enqueue_sort(chunk);
    release_event(std::move(chunk.h2d_done));  // its wait is enqueued
    to_sort_.pop_front();
    progress = true;
  }
  return progress;
}

void run_former::impl::enqueue_sort(filled_chunk& chunk) {
  cudaStream_t s = compute_.get();
  GPUSORT_CUDA_TRY(cudaStreamWaitEvent(s, chunk.h2d_done.get(), 0));
  if (chunk.index >= 2) {
    if (const run_state* prev = find_run(chunk.index - 2)) {
      // Fully enqueued and not complete: its last piece is in flight.
      GPUSORT_CUDA_TRY(cudaStreamWaitEvent(s, prev->in_flight.back().end.get(), 0));
    }
  }
  const int data = chunk.slot;
  const int aux = aux_slot_;
  if (config_.poison_device_memory) {
    GPUSORT_CUDA_TRY(cudaMemsetAsync(slots_[aux].data(), 0xA5, slot_bytes_, s));
    GPUSORT_CUDA_TRY(cudaMemsetAsync(workspace_.data(), 0xA5, workspace_.size(), s));
  }
  run_state run;
  run.index = chunk.index;
  run.records = chunk.records;
  sort_phase_events phases;
  if (trace_ != nullptr) {
    run.sort_begin = acquire_event();
    run.prepared = acquire_event();
    run.sorted = acquire_event();
    run.sort_begin.record(s);
    phases = {run.prepared.get(), run.sorted.get()};
  }
  const chunk_buffers buffers{slots_[data].data(), slots_[aux].data(), workspace_.data(),
                              workspace_.size()};
  const chunk_slot result = sorter_->sort(buffers, chunk.records, s, phases, chunk.key_sample);
  const int run_slot = result == chunk_slot::data ? data : aux;
  run.sort_done = acquire_event();
  run.sort_done.record(s);
  run.slot = run_slot;
  // The slot of the two that does not hold the run is the next sort's aux slot.
  aux_slot_ = run_slot == data ? aux : data;
  fill_slot_for_[chunk.index + 2] = run_slot;
  runs_.push_back(std::move(run));
}

// --- D2H: sorted runs into the sink's buffers ------------------------------------------------

bool run_former::impl::enqueue_d2h() {
  bool progress = false;
  for (run_state& run : runs_) {
    while (run.enqueued < run.records && d2h_pieces_in_flight_ < run_former_d2h_window) {
      if (!run.waits_on_sort) {
        GPUSORT_CUDA_TRY(cudaStreamWaitEvent(d2h_.get(), run.sort_done.get(), 0));
        run.waits_on_sort = true;
      }
      // Pieces on the grid of piece_records_, which the refilling H2D pieces share.
      const std::uint64_t first = run.enqueued;
      const std::uint64_t count = std::min(piece_records_ - first % piece_records_,
                                           run.records - first);
      const std::uint64_t offset = first * record_size_;
      const std::size_t len = count * record_size_;
      const std::span<std::byte> host =
          sink_.piece_buffer(config_.first_run_id + run.index, offset, len);
      if (host.empty()) return progress;  // no host buffer free now: poll, then ask again
      GPUSORT_EXPECTS(host.size() == len && host.data() != nullptr,
                      "GPU run former: run_sink::piece_buffer returned " +
                          std::to_string(host.size()) + " bytes for a piece of " +
                          std::to_string(len));
      d2h_piece piece{first, count, host, event{}, acquire_event()};
      if (trace_ != nullptr) {
        piece.begin = acquire_event();
        piece.begin.record(d2h_.get());
      }
      GPUSORT_CUDA_TRY(cudaMemcpyAsync(host.data(), slots_[run.slot].data() + offset, len,
                                       cudaMemcpyDeviceToHost, d2h_.get()));
      piece.end.record(d2h_.get());
      run.in_flight.push_back(std::move(piece));
      run.enqueued += count;
      ++d2h_pieces_in_flight_;
      progress = true;
    }
    if (run.enqueued < run.records) break;  // later runs' pieces go after this run's
  }
  return progress;
}

// --- completions -----------------------------------------------------------------------------

bool run_former::impl::poll() {
  bool progress = false;
  while (!h2d_in_flight_.empty() && h2d_in_flight_.front().end.query()) {
    h2d_piece& piece = h2d_in_flight_.front();
    if (trace_ != nullptr)
      trace_->record("H2D", trace_time(piece.begin), trace_time(piece.end), piece.bytes,
                     "chunk " + std::to_string(piece.chunk));
    --pushes_[piece.push_id - push_base_].pieces_in_flight;
    release_event(std::move(piece.begin));
    release_event(std::move(piece.end));
    h2d_in_flight_.pop_front();
    progress = true;
  }
  // Pushes finish in order: the front one is consumed once fully enqueued and landed.
  while (!pushes_.empty() && push_cursor_ > 0 && pushes_.front().pieces_in_flight == 0 &&
         pushes_.front().enqueued_bytes == pushes_.front().request.data.size()) {
    std::function<void()> callback = std::move(pushes_.front().request.on_consumed);
    pushes_.pop_front();
    ++push_base_;
    --push_cursor_;
    if (callback) callback();
    progress = true;
  }
  while (!runs_.empty()) {
    run_state& run = runs_.front();
    while (!run.in_flight.empty() && run.in_flight.front().end.query()) {
      d2h_piece& piece = run.in_flight.front();
      if (trace_ != nullptr)
        trace_->record("D2H", trace_time(piece.begin), trace_time(piece.end), piece.host.size(),
                       "run " + std::to_string(run.index));
      const d2h_piece done = {piece.first_record, piece.records, piece.host, event{}, event{}};
      release_event(std::move(piece.begin));
      release_event(std::move(piece.end));
      run.in_flight.pop_front();
      --d2h_pieces_in_flight_;
      run.completed += done.records;
      progress = true;
      sink_.piece_done(config_.first_run_id + run.index, done.first_record * record_size_,
                      done.host);
    }
    if (run.completed < run.records) break;
    if (trace_ != nullptr) {
      const std::uint64_t bytes = run.records * record_size_;
      const std::string label = "chunk " + std::to_string(run.index);
      trace_->record("GPU split", trace_time(run.sort_begin), trace_time(run.prepared), bytes,
                     label);
      trace_->record("sort", trace_time(run.prepared), trace_time(run.sorted), bytes, label);
      trace_->record("GPU join", trace_time(run.sorted), trace_time(run.sort_done), bytes,
                     label);
    }
    const std::uint64_t index = run.index;
    const std::uint64_t records = run.records;
    release_event(std::move(run.sort_begin));
    release_event(std::move(run.prepared));
    release_event(std::move(run.sorted));
    release_event(std::move(run.sort_done));
    runs_.pop_front();
    progress = true;
    sink_.run_done(config_.first_run_id + index, records);
  }
  return progress;
}

// --- public interface ------------------------------------------------------------------------

run_former::run_former(const run_former_config& config, run_sink& sink, trace_recorder* trace)
    : impl_(std::make_unique<impl>(config, sink, trace)) {}

run_former::~run_former() = default;

std::uint64_t run_former::chunk_records() const noexcept { return impl_->chunk_records_; }

const device_info& run_former::device() const noexcept { return impl_->info_; }

std::string run_former::describe() const { return impl_->describe(); }

std::string run_former::choices() const { return impl_->sorter_->choices(); }

void run_former::push(std::span<const std::byte> records, std::function<void()> on_consumed) {
  impl& m = *impl_;
  {
    std::lock_guard lock(m.mutex_);
    if (m.error_) std::rethrow_exception(m.error_);
    GPUSORT_EXPECTS(!m.input_done_, "GPU run former: push() after finish()");
    GPUSORT_EXPECTS(records.size() % m.record_size_ == 0,
                    "GPU run former: push() of " + std::to_string(records.size()) +
                        " bytes, not a whole number of " + std::to_string(m.record_size_) +
                        "-byte records");
    m.incoming_.push_back(impl::push_request{records, std::move(on_consumed)});
  }
  m.wake_.notify_all();
}

void run_former::end_run() {
  impl& m = *impl_;
  {
    std::lock_guard lock(m.mutex_);
    if (m.error_) std::rethrow_exception(m.error_);
    GPUSORT_EXPECTS(!m.input_done_, "GPU run former: end_run() after finish()");
    m.incoming_.push_back(impl::push_request{{}, {}, true});
  }
  m.wake_.notify_all();
}

void run_former::check() const {
  std::lock_guard lock(impl_->mutex_);
  if (impl_->error_) std::rethrow_exception(impl_->error_);
}

void run_former::finish() {
  impl& m = *impl_;
  {
    std::lock_guard lock(m.mutex_);
    m.input_done_ = true;
  }
  m.wake_.notify_all();
  if (m.worker_.joinable()) m.worker_.join();
  std::lock_guard lock(m.mutex_);
  if (m.error_) std::rethrow_exception(m.error_);
}

}  // namespace gpusort::gpu
