// GPU run formation on the host side: staging pools, the reader loop that feeds the run
// former, and the collector that moves sorted pieces out of staging on its own thread so the
// former's thread never waits on a host copy.
#include "pipeline/gpu_run_formation.hpp"

#include <tbb/task_group.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/host_buffer.hpp"
#include "core/parallel_copy.hpp"
#include "core/trace.hpp"
#include "cpu/sort_items.hpp"
#include "gpusort/error.hpp"
#include "gpu/run_former.hpp"
#include "io/buffer_pool.hpp"
#include "io/parallel_reader.hpp"
#include "io/uring.hpp"

namespace gpusort::pipeline {
namespace {

/// Page-locked buffers handed out by one thread and returned by another.
class staging_pool final : public io::buffer_pool {
 public:
  staging_pool(std::size_t count, std::size_t bytes, int device) : bytes_(bytes) {
    for (std::size_t i = 0; i < count; ++i) {
      buffers_.emplace_back(bytes, device);
      add(buffers_.back().data());
    }
  }
  [[nodiscard]] std::size_t buffer_bytes() const noexcept { return bytes_; }

 private:
  std::size_t bytes_;
  std::vector<gpu::pinned_buffer> buffers_;
};

/// Runs tasks one after another on its own thread; the first failure is kept and rethrown
/// by drain(), later tasks are skipped.
class ordered_worker {
 public:
  ordered_worker() : thread_([this] { run(); }) {}
  ~ordered_worker() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void push(std::function<void()> task) {
    {
      std::lock_guard lock(mutex_);
      tasks_.push_back(std::move(task));
    }
    cv_.notify_all();
  }
  /// Waits until every task ran; rethrows the first failure.
  void drain() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return tasks_.empty() && !busy_; });
    if (error_) std::rethrow_exception(error_);
  }
  [[nodiscard]] std::exception_ptr error() {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !tasks_.empty() || stopping_; });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
        busy_ = true;
      }
      try {
        if (!error()) task();
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        busy_ = false;
      }
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool busy_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

/// Where sorted pieces go: the output (one chunk), resident/spilled runs, or, for items,
/// an item buffer that is turned into records by a gather when the run is complete.
class run_collector final : public gpu::run_sink {
 public:
  enum class mode : std::uint8_t { direct_output, runs, items };

  run_collector(mode m, const record_format& format, bool descending, std::uint64_t chunk_records,
                std::shared_future<std::shared_ptr<staging_pool>> staging, run_store& store,
                const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                std::uint64_t output_bytes, tbb::task_arena& arena, trace_recorder* trace)
      : mode_(m), format_(format), descending_(descending), chunk_records_(chunk_records),
        staging_(std::move(staging)), store_(store), open_sink_(open_sink), output_bytes_(output_bytes),
        arena_(arena), trace_(trace) {}

  ~run_collector() noexcept override {
    try {
      arena_.execute([&] { writes_.wait(); });  // errors were reported by drain() already
    } catch (...) {
    }
  }
  run_collector(const run_collector&) = delete;
  run_collector& operator=(const run_collector&) = delete;

  /// Items mode: the records of chunk `run`, kept until its items come back.
  void keep_chunk(std::uint64_t run, host_buffer records) {
    std::lock_guard lock(chunks_mutex_);
    chunks_[run] = std::move(records);
  }

  std::span<std::byte> piece_buffer(std::uint64_t, std::uint64_t, std::size_t len) override {
    GPUSORT_EXPECTS(len <= staging().buffer_bytes(), "run former piece larger than staging");
    // A failed write (a full disk, a closed pipe) stops the ordered worker, whose queued pieces
    // then never give their buffers back: fail the former now instead of letting it poll for
    // a buffer forever.
    if (const std::exception_ptr failed = worker_.error()) std::rethrow_exception(failed);
    std::byte* p = staging().try_acquire();
    if (p == nullptr) return {};
    return {p, len};
  }

  void piece_done(std::uint64_t run, std::uint64_t offset, std::span<std::byte> piece) override {
    if (mode_ == mode::direct_output) {
      if (sink_ == nullptr) sink_ = &open_sink_(output_bytes_);
      if (sink_->parallel_writes()) {
        // Pieces of a mapped file are independent: writing several at once keeps every thread
        // busy (one 64 MiB piece at a time measured 2.2 GB/s on the H200 machine, the whole
        // file at once 8.9 GB/s).
        arena_.execute([&] {
          writes_.run([this, offset, piece] {
            try {
              sink_->write(offset, piece);
            } catch (...) {
              staging().release(piece.data());
              throw;
            }
            staging().release(piece.data());
          });
        });
        return;
      }
    }
    if (mode_ != mode::direct_output) {
      // Pieces land in disjoint bytes of their run's buffer: copying several at once keeps
      // every thread busy and faults the fresh run memory in on all of them (one piece at a
      // time copied 9.5 GB/s on the H200 machine).
      std::byte* dst = run_buffer(run) + offset;
      arena_.execute([&] {
        writes_.run([this, run, dst, piece] {
          // Whatever happens, the staging buffer goes back and the run stops waiting for it.
          struct piece_guard {
            run_collector* collector;
            std::uint64_t run;
            std::byte* staging;
            ~piece_guard() {
              collector->staging().release(staging);
              collector->piece_copied(run);
            }
          } guard{this, run, piece.data()};
          trace_recorder::scope timer(trace_, "copy-out", piece.size());
          detail::parallel_copy(dst, piece.data(), piece.size());
        });
      });
      return;
    }
    // A stream: written in order, one piece after another.
    worker_.push([this, offset, piece] {
      struct release_guard {
        staging_pool& pool;
        std::byte* buffer;
        ~release_guard() { pool.release(buffer); }
      } guard{staging(), piece.data()};
      arena_.execute([&] {
        if (sink_ == nullptr) sink_ = &open_sink_(output_bytes_);
        sink_->write(offset, piece);  // the sink records the "write" track
      });
    });
  }

  void run_done(std::uint64_t run, std::uint64_t records) override {
    worker_.push([this, run, records] { finish_run(run, records); });
  }

  /// Waits for every queued copy and write; rethrows the first failure.
  void drain() {
    arena_.execute([&] { writes_.wait(); });
    worker_.drain();
  }
  [[nodiscard]] std::uint64_t records() const noexcept { return records_; }

 private:
  /// Where run `run` is collected (allocated on its first piece); counts one more copy in
  /// flight into it.
  std::byte* run_buffer(std::uint64_t run) {
    std::lock_guard lock(runs_mutex_);
    auto it = runs_.find(run);
    if (it == runs_.end()) {
      const std::uint64_t bytes =
          chunk_records_ * (mode_ == mode::items ? sizeof(cpu::sort_item) : format_.record_size);
      it = runs_.emplace(run, collected_run{host_buffer(static_cast<std::size_t>(bytes)), 0}).first;
    }
    ++it->second.copies_in_flight;
    return it->second.memory.data();
  }

  void piece_copied(std::uint64_t run) {
    {
      std::lock_guard lock(runs_mutex_);
      --runs_.at(run).copies_in_flight;
    }
    copied_.notify_all();
  }

  /// The run's memory once every piece is in it (empty for a run without records).
  host_buffer take_run(std::uint64_t run) {
    std::unique_lock lock(runs_mutex_);
    copied_.wait(lock, [&] {
      const auto it = runs_.find(run);
      return it == runs_.end() || it->second.copies_in_flight == 0;
    });
    const auto it = runs_.find(run);
    if (it == runs_.end()) return {};
    host_buffer memory = std::move(it->second.memory);
    runs_.erase(it);
    return memory;
  }

  void finish_run(std::uint64_t run, std::uint64_t records) {
    records_ += records;
    if (mode_ == mode::direct_output) {
      if (sink_ == nullptr && output_bytes_ == 0) sink_ = &open_sink_(0);
      return;
    }
    host_buffer sorted = take_run(run);
    if (records == 0) return;
    io::uring ring(32);
    if (mode_ == mode::runs) {
      store_.add(std::move(sorted), records, ring);
      return;
    }
    // Items: settle ties beyond the 8-byte prefix, then gather the records of the chunk.
    host_buffer chunk;
    {
      std::lock_guard lock(chunks_mutex_);
      chunk = std::move(chunks_.at(run));
      chunks_.erase(run);
    }
    auto* items = reinterpret_cast<cpu::sort_item*>(sorted.data());
    host_buffer out(static_cast<std::size_t>(records * format_.record_size));
    {
      trace_recorder::scope timer(trace_, "gather", records * format_.record_size);
      arena_.execute([&] {
        cpu::resolve_prefix_ties(chunk.data(), items, records, format_, descending_, 0);
        cpu::gather_records(chunk.data(), items, records, format_.record_size, 0, out.data());
      });
    }
    sorted = host_buffer{};
    store_.add(std::move(out), records, ring);
  }

  mode mode_;
  record_format format_;
  bool descending_;
  std::uint64_t chunk_records_;
  /// Pinned while the input is still being read: the first piece waits for it.
  staging_pool& staging() { return *staging_.get(); }

  std::shared_future<std::shared_ptr<staging_pool>> staging_;
  run_store& store_;
  const std::function<io::output_sink&(std::uint64_t)>& open_sink_;
  std::uint64_t output_bytes_;
  tbb::task_arena& arena_;
  trace_recorder* trace_;
  io::output_sink* sink_ = nullptr;
  struct collected_run {
    host_buffer memory;
    std::uint64_t copies_in_flight = 0;
  };
  std::mutex runs_mutex_;
  std::condition_variable copied_;
  std::map<std::uint64_t, collected_run> runs_;  // runs and items modes
  std::uint64_t records_ = 0;
  std::mutex chunks_mutex_;
  std::map<std::uint64_t, host_buffer> chunks_;
  tbb::task_group writes_;  // concurrent piece copies: into a mapped output or into runs
  ordered_worker worker_;  // last: joined before the members its tasks use go away
};

// The former keeps at most 8 D2H pieces outstanding; fewer buffers would throttle it.
constexpr std::size_t staging_buffers = 8;
// Pieces of 64 MiB measured 84% of one-way PCIe for 16 chunks, 16 MiB 81.5% (H200); 32 MiB
// halves the staging to pin (1 GiB -> 512 MiB). Together with starting the output prefault
// before CUDA initialises, the 8 GiB sort's median wall time fell from 1.49 s to 1.38 s.
constexpr std::size_t max_staging_bytes = std::size_t{32} << 20;
constexpr std::size_t min_staging_bytes = std::size_t{1} << 20;

// Four readers, each with 16 requests of 1 MiB in the kernel's worker pool, read 8 GiB from
// the page cache at 40-45 GB/s on the H200 machine (one reader: 9-10 GB/s; eight: no faster;
// sixteen completing inline: 26-28 GB/s).
constexpr unsigned reader_threads = 4;
constexpr unsigned reader_queue_depth = 16;

/// Staging buffer size: large pieces for large inputs, small ones where pinning 1 GiB of
/// staging would cost more than the whole sort.
std::size_t staging_size(std::optional<std::uint64_t> input_bytes) {
  if (!input_bytes) return max_staging_bytes;
  const std::uint64_t per_buffer = *input_bytes / staging_buffers;
  return static_cast<std::size_t>(
      std::clamp<std::uint64_t>(per_buffer, min_staging_bytes, max_staging_bytes));
}

}  // namespace

gpu_run_result form_runs_on_gpu(io::input_source& input, const sort_options& options,
                                const gpu_stage_config& config, run_store& store,
                                const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                                tbb::task_arena& arena, trace_recorder* trace) {
  const record_format& format = options.format;
  const bool direct = gpu::supports_format(format);
  const record_format sorted_format = direct ? format : cpu::sort_item_format();
  const std::uint32_t unit = sorted_format.record_size;  // bytes per record the GPU sees
  const std::size_t staging_bytes = staging_size(input.known_size());

  gpu::run_former_config former_config;
  former_config.device = config.device;
  former_config.format = sorted_format;
  former_config.descending = direct && options.descending;  // items carry the order already
  former_config.memory_budget = options.gpu_memory_bytes;
  former_config.max_chunk_records = config.max_chunk_records;
  if (const std::optional<std::uint64_t> size = input.known_size()) {
    // Slots sized for the whole device would cost seconds of allocation for a small input.
    const std::uint64_t records = std::max<std::uint64_t>(1, *size / format.record_size);
    if (former_config.max_chunk_records == 0 || records < former_config.max_chunk_records)
      former_config.max_chunk_records = records;
  }
  former_config.piece_bytes = staging_bytes / unit * unit;
  if (const std::optional<std::uint64_t> size = input.known_size())
    former_config.expected_records = *size / format.record_size;

  // Pinning costs ~85 ms per GiB: pin the output staging while the input streams in, and the
  // input staging while the former sets up the device.
  auto pin = [&] {
    trace_recorder::scope timer(trace, "pin", staging_buffers * staging_bytes);
    return std::make_shared<staging_pool>(staging_buffers, staging_bytes, config.device);
  };
  std::future<std::shared_ptr<staging_pool>> pinning_in = std::async(std::launch::async, pin);
  std::shared_future<std::shared_ptr<staging_pool>> staging_out =
      std::async(std::launch::async, pin).share();

  // The collector is created before the former and outlives it: the former's thread calls it.
  std::unique_ptr<run_collector> collector;
  auto make_collector = [&](std::uint64_t chunk_records) {
    const std::optional<std::uint64_t> size = input.known_size();
    run_collector::mode m = run_collector::mode::runs;
    if (!direct) m = run_collector::mode::items;
    else if (size && *size / format.record_size <= chunk_records) m = run_collector::mode::direct_output;
    collector = std::make_unique<run_collector>(m, format, options.descending, chunk_records,
                                                staging_out, store, open_sink,
                                                size.value_or(0), arena, trace);
    return m;
  };
  // The former needs its sink at construction, but the collector's mode depends on the chunk
  // size the former derives: a forwarding sink breaks the cycle.
  struct forwarding_sink final : gpu::run_sink {
    run_collector* target = nullptr;
    std::span<std::byte> piece_buffer(std::uint64_t r, std::uint64_t o, std::size_t l) override {
      return target->piece_buffer(r, o, l);
    }
    void piece_done(std::uint64_t r, std::uint64_t o, std::span<std::byte> p) override {
      target->piece_done(r, o, p);
    }
    void run_done(std::uint64_t r, std::uint64_t n) override { target->run_done(r, n); }
  } forward;

  gpu_run_result result;
  // Declared before the former: its on_consumed callbacks release into this pool until the
  // former is gone.
  std::shared_ptr<staging_pool> staging_in_ptr;
  std::optional<trace_recorder::scope> setup_timer(std::in_place, trace, "GPU setup");
  std::optional<gpu::run_former> former_holder(std::in_place, former_config, forward, trace);
  gpu::run_former& former = *former_holder;
  staging_in_ptr = pinning_in.get();
  setup_timer.reset();
  staging_pool& staging_in = *staging_in_ptr;
  result.device_name = former.device().name;
  const std::uint64_t chunk = former.chunk_records();
  const run_collector::mode m = make_collector(chunk);
  forward.target = collector.get();
  result.wrote_output = m == run_collector::mode::direct_output;

  io::uring ring(64);
  // Page-cache reads copy ~1.3 GB/s per io_uring worker: keep every piece's blocks in flight
  // at once (1 MiB x 64) rather than a few large ones.
  io::transfer_config read_config;
  read_config.block_bytes = std::size_t{1} << 20;
  read_config.queue_depth = 64;
  auto read_into = [&](std::span<std::byte> dst) {
    trace_recorder::scope timer(trace, "read");
    const std::size_t n = input.read(dst, ring, read_config);
    timer.add_bytes(n);
    return n;
  };

  try {
    if (direct && input.known_size()) {
      // Records go from the file straight into page-locked staging and on to the device,
      // several pieces read at once.
      const std::size_t piece = staging_bytes / format.record_size * format.record_size;
      io::transfer_config parallel_config = read_config;
      parallel_config.queue_depth = reader_queue_depth;
      io::parallel_reader reader(input, piece, reader_threads, staging_in, parallel_config, trace);
      for (;;) {
        const io::parallel_reader::piece got = reader.next();
        if (got.bytes == 0) break;
        std::byte* p = got.data;
        former.push({p, got.bytes}, [&staging_in, p] { staging_in.release(p); });
      }
    } else if (direct) {
      // A stream: one piece at a time, in order.
      const std::size_t piece = staging_bytes / format.record_size * format.record_size;
      for (;;) {
        std::byte* p = staging_in.acquire();
        const std::size_t n = read_into({p, piece});
        if (n == 0) {
          staging_in.release(p);
          break;
        }
        former.push({p, n}, [&staging_in, p] { staging_in.release(p); });
        if (n < piece) break;
      }
    } else {
      // Whole chunks are read into host memory (the gather needs them), their items
      // extracted into staging and pushed.
      const std::size_t per_piece = staging_bytes / sizeof(cpu::sort_item);
      for (std::uint64_t run = 0;; ++run) {
        host_buffer records(static_cast<std::size_t>(chunk * format.record_size));
        const std::size_t bytes = read_into(records.span());
        const std::uint64_t count = bytes / format.record_size;
        if (count == 0) break;
        // Hand the chunk to the collector before its items can come back sorted; the
        // mapping stays where it is, so `base` remains valid.
        const std::byte* base = records.data();
        collector->keep_chunk(run, std::move(records));
        for (std::uint64_t first = 0; first < count; first += per_piece) {
          const std::uint64_t n = std::min<std::uint64_t>(per_piece, count - first);
          std::byte* p = staging_in.acquire();
          {
            trace_recorder::scope timer(trace, "extract", n * format.record_size);
            arena.execute([&] {
              cpu::extract_items(base + first * format.record_size, n, format,
                                 options.descending, first,
                                 reinterpret_cast<cpu::sort_item*>(p));
            });
          }
          former.push({p, static_cast<std::size_t>(n * sizeof(cpu::sort_item))},
                      [&staging_in, p] { staging_in.release(p); });
        }
        if (count < chunk) break;
      }
    }
    former.finish();
  } catch (...) {
    // Let queued copies finish (or fail) before the buffers they use go away.
    try {
      collector->drain();
    } catch (...) {
    }
    throw;
  }
  collector->drain();
  result.records = collector->records();
  {
    trace_recorder::scope timer(trace, "GPU teardown");
    former_holder.reset();
    staging_in_ptr.reset();
    collector.reset();
    staging_out = {};
  }
  return result;
}

}  // namespace gpusort::pipeline
