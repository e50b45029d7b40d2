// GPU run formation on the host side: the reader loop that feeds the run former, and the
// collector that moves sorted runs out of staging into the run store on other threads so the
// former's thread never waits on a host copy (gpu_output_writer when the input is one chunk).
#include "pipeline/gpu_run_formation.hpp"

#include <tbb/task_group.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <vector>

#include "core/host_buffer.hpp"
#include "core/ordered_worker.hpp"
#include "core/parallel_copy.hpp"
#include "core/trace.hpp"
#include "cpu/sort_items.hpp"
#include "gpusort/error.hpp"
#include "gpu/run_former.hpp"
#include "io/buffer_pool.hpp"
#include "io/parallel_reader.hpp"
#include "io/uring.hpp"
#include "pipeline/gpu_output_writer.hpp"
#include "pipeline/pipeline_config.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/run_pinner.hpp"
#include "pipeline/staging_pool.hpp"

namespace gpusort::pipeline {
namespace {

/// Where sorted runs go when they are not the output: resident or spilled runs, or, for
/// items, an item buffer that is turned into records by a gather when the run is complete.
/// (gpu_output_writer takes the one-chunk case.) Runs whose memory a run_pinner page-locked
/// come back from the GPU straight into it; the others through staging and a host copy.
class run_collector final : public gpu::run_sink {
 public:
  enum class mode : std::uint8_t { runs, items };

  run_collector(mode m, const record_format& format, bool descending, std::uint64_t chunk_records,
                std::shared_future<std::shared_ptr<staging_pool>> staging, run_store& store,
                run_pinner* pinner, tbb::task_arena& arena, trace_recorder* trace)
      : mode_(m), format_(format), descending_(descending), chunk_records_(chunk_records),
        staging_(std::move(staging)), store_(store), pinner_(pinner), arena_(arena),
        trace_(trace), resident_room_(store.resident_room()) {}

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

  std::span<std::byte> piece_buffer(std::uint64_t run, std::uint64_t offset,
                                    std::size_t len) override {
    // A failed spill (a full disk) stops the ordered worker: fail the former now instead of
    // letting it form runs that can no longer be stored.
    if (const std::exception_ptr failed = worker_.error()) std::rethrow_exception(failed);
    if (!may_collect(run)) return {};  // runs spill slower than they form: the former waits
    const std::optional<std::byte*> pinned = pinned_memory(run);
    if (!pinned) return {};  // its memory is still being page-locked: the former asks again
    if (*pinned != nullptr) return {*pinned + offset, len};
    GPUSORT_EXPECTS(len <= staging().buffer_bytes(), "run former piece larger than staging");
    std::byte* p = staging().try_acquire();
    if (p == nullptr) return {};
    return {p, len};
  }

  void piece_done(std::uint64_t run, std::uint64_t offset, std::span<std::byte> piece) override {
    if (*pinned_memory(run) != nullptr) return;  // it landed in the run itself
    // Pieces land in disjoint bytes of their run's buffer: copying several at once keeps every
    // thread busy and faults the fresh run memory in on all of them (one piece at a time
    // copied 9.5 GB/s on the H200 machine).
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
  }

  void run_done(std::uint64_t run, std::uint64_t records) override {
    worker_.push([this, run, records] { finish_run(run, records); });
  }

  /// Waits for every queued copy and stored run; rethrows the first failure.
  void drain() {
    arena_.execute([&] { writes_.wait(); });
    worker_.drain();
  }
  [[nodiscard]] std::uint64_t records() const noexcept { return records_; }

 private:
  /// Where pieces of `run` land when its memory is page-locked: that memory; nullptr when the
  /// run is staged instead; nullopt while the pinner is still preparing it.
  std::optional<std::byte*> pinned_memory(std::uint64_t run) {
    std::lock_guard lock(runs_mutex_);
    auto it = runs_.find(run);
    if (it == runs_.end()) {
      if (pinner_ == nullptr) return nullptr;
      run_pinner::run_memory m;
      switch (pinner_->try_take(run, m)) {
        case run_pinner::state::pending: return std::nullopt;
        case run_pinner::state::unplanned: return nullptr;
        case run_pinner::state::ready: break;
      }
      if (m.memory.size() == 0) return nullptr;  // not even allocated: run_buffer() will
      it = runs_.emplace(run, collected_run{std::move(m.memory), 0, std::move(m.pin)}).first;
      ++held_;
    }
    return it->second.pin != nullptr ? it->second.memory.data() : nullptr;
  }

  /// Where run `run` is collected (allocated on its first piece); counts one more copy in
  /// flight into it.
  std::byte* run_buffer(std::uint64_t run) {
    std::lock_guard lock(runs_mutex_);
    auto it = runs_.find(run);
    if (it == runs_.end()) {
      it = runs_.emplace(run, collected_run{host_buffer(static_cast<std::size_t>(run_bytes())), 0, {}})
               .first;
      ++held_;
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

  /// Whether pieces of `run` may land now: while the runs held outside the store (collected,
  /// or being stored), this one included, fit what the store still keeps in memory, or are
  /// at most gpu_runs_held. The GPU forms runs faster than a disk takes them, and the memory
  /// of the waiting ones is beyond the resident runs (with -S 4G and 710 MB runs, a 16 GiB
  /// sort under a 6 GiB cgroup limit was killed for memory on the H200 machine).
  bool may_collect(std::uint64_t run) {
    std::lock_guard lock(runs_mutex_);
    return runs_.count(run) != 0 || held_ < gpu_runs_held ||
           (held_ + 1) * run_bytes() <= resident_room_;
  }

  /// Bytes of one collected run.
  [[nodiscard]] std::uint64_t run_bytes() const noexcept {
    return chunk_records_ * (mode_ == mode::items ? sizeof(cpu::sort_item) : format_.record_size);
  }

  /// The run's memory once every piece is in it (empty for a run without records).
  run_pinner::run_memory take_run(std::uint64_t run, bool& held) {
    std::unique_lock lock(runs_mutex_);
    copied_.wait(lock, [&] {
      const auto it = runs_.find(run);
      return it == runs_.end() || it->second.copies_in_flight == 0;
    });
    const auto it = runs_.find(run);
    held = it != runs_.end();
    if (!held) return {};
    run_pinner::run_memory taken{std::move(it->second.memory), std::move(it->second.pin)};
    runs_.erase(it);
    return taken;
  }

  void finish_run(std::uint64_t run, std::uint64_t records) {
    records_ += records;
    bool held = false;
    run_pinner::run_memory taken = take_run(run, held);
    // The run stops counting once it is stored (or dropped by an error).
    struct release_guard {
      run_collector* collector;
      bool held;
      ~release_guard() {
        if (!held) return;
        std::lock_guard lock(collector->runs_mutex_);
        --collector->held_;
        collector->resident_room_ = collector->store_.resident_room();
      }
    } release{this, held};
    if (records == 0) return;
    io::uring ring(32);
    if (mode_ == mode::runs) {
      store_.add(std::move(taken.memory), records, ring, std::move(taken.pin));
      return;
    }
    host_buffer sorted = std::move(taken.memory);
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
  run_pinner* pinner_;
  tbb::task_arena& arena_;
  trace_recorder* trace_;
  struct collected_run {
    host_buffer memory;
    std::uint64_t copies_in_flight = 0;
    std::shared_ptr<void> pin;  // page-locked: pieces land in `memory` without a copy
  };
  std::mutex runs_mutex_;
  std::condition_variable copied_;
  std::map<std::uint64_t, collected_run> runs_;  // runs and items modes
  std::uint64_t held_ = 0;  // runs in runs_ or being stored
  std::uint64_t resident_room_;  // the store's resident_room() when a run was last stored
  std::uint64_t records_ = 0;
  std::mutex chunks_mutex_;
  std::map<std::uint64_t, host_buffer> chunks_;
  tbb::task_group writes_;  // concurrent piece copies into runs
  detail::ordered_worker worker_;  // last: joined before the members its tasks use go away
};

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
  former_config.algorithm = chunk_algorithm_for(options, direct);
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

  // The sink and the pinner are created before the former and outlive it: its thread calls
  // them (both are set once the former knows its chunk).
  const std::optional<std::uint64_t> size = input.known_size();
  std::optional<run_pinner> pinner;
  std::unique_ptr<gpu_output_writer> writer;  // one chunk: straight into the output
  std::unique_ptr<run_collector> collector;   // else: runs
  auto make_sink = [&](std::uint64_t chunk_records) -> gpu::run_sink* {
    if (direct && size && *size / format.record_size <= chunk_records) {
      writer = std::make_unique<gpu_output_writer>(staging_out, open_sink, *size, arena);
      return writer.get();
    }
    collector = std::make_unique<run_collector>(
        direct ? run_collector::mode::runs : run_collector::mode::items, format,
        options.descending, chunk_records, staging_out, store, pinner ? &*pinner : nullptr,
        arena, trace);
    return collector.get();
  };
  auto drain_sink = [&] {
    if (writer) writer->drain();
    if (collector) collector->drain();
  };
  // The former needs its sink at construction, but which sink depends on the chunk size the
  // former derives: a forwarding sink breaks the cycle.
  struct forwarding_sink final : gpu::run_sink {
    gpu::run_sink* target = nullptr;
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
  // Runs page-locked ahead of the former, on threads of their own. Registering scaled to
  // 42 GB/s on four threads on the H100 machine (14 GB/s on one); started once the device is
  // set up, since registering and the setup's allocations took turns there (the setup took
  // 0.9 s instead of 0.06 s beside it). A device chunk other than the plan's (the device may
  // hold the whole input now) gets no pinner: its runs are staged.
  if (direct && size && chunk == config.pin_chunk_records && *size / format.record_size > chunk) {
    const std::uint64_t records = *size / format.record_size;
    std::vector<std::size_t> run_bytes;
    for (std::uint64_t first = 0; first < records; first += chunk)
      run_bytes.push_back(
          static_cast<std::size_t>(std::min(chunk, records - first) * format.record_size));
    pinner.emplace(std::move(run_bytes), config.device, run_pin_threads, trace);
  }
  forward.target = make_sink(chunk);
  result.wrote_output = writer != nullptr;

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
      drain_sink();
    } catch (...) {
    }
    throw;
  }
  drain_sink();
  result.records = writer ? writer->records() : collector->records();
  result.sorter = former.choices();
  if (result.sorter.empty()) result.sorter = gpu::to_string(former_config.algorithm);
  {
    trace_recorder::scope timer(trace, "GPU teardown");
    former_holder.reset();
    staging_in_ptr.reset();
    collector.reset();
    writer.reset();
    staging_out = {};
  }
  return result;
}

}  // namespace gpusort::pipeline
