// GPU run formation on the host side: the reader loop that feeds each GPU's run former, and
// the sink its sorted runs go to (run_collector into the run store; gpu_output_writer when the
// input is one chunk). Several GPUs form runs of their shares at once, one thread each.
#include "pipeline/gpu_run_formation.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "core/each_until_failure.hpp"
#include "core/host_buffer.hpp"
#include "core/trace.hpp"
#include "cpu/sort_items.hpp"
#include "gpusort/error.hpp"
#include "gpu/run_former.hpp"
#include "io/buffer_pool.hpp"
#include "io/parallel_reader.hpp"
#include "io/uring.hpp"
#include "pipeline/chunk_queue.hpp"
#include "pipeline/gpu_output_writer.hpp"
#include "pipeline/pipeline_config.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/run_collector.hpp"
#include "pipeline/run_pinner.hpp"
#include "pipeline/staging_pool.hpp"

namespace gpusort::pipeline {
namespace {

/// Ends a share once another GPU's failed (detail::each_until_failure).
void check_stop(const std::atomic<bool>& stop) {
  if (stop.load(std::memory_order_relaxed))
    throw error("run formation stopped: another GPU's share failed");
}

/// A file's chunks that several GPUs take (chunk_queue), and the page-locked memory of their
/// runs, prepared once the GPUs agree to take them.
struct shared_chunks {
  shared_chunks(std::uint64_t records, std::uint64_t chunk_records, std::uint32_t record_size,
                std::size_t gpus, bool pin)
      : queue(records, chunk_records, record_size, gpus), pin_runs(pin) {}
  chunk_queue queue;
  bool pin_runs;                     ///< page-lock the runs ahead of the formers
  std::optional<run_pinner> pinner;  ///< one for all GPUs, set by the last to agree
};

/// Forms the runs of one share on its GPU; `whole`: the share is the whole input, which may
/// then go straight into the output as one chunk. With `shared`, the GPU takes the file's
/// chunks from its queue instead where every GPU agrees (chunk_queue::agree).
gpu_run_result form_share(io::input_source& input, const sort_options& options,
                          const gpu_stage_config& config, const gpu_share& share, bool whole,
                          run_store& store,
                          const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                          tbb::task_arena& arena, trace_recorder* trace,
                          const std::atomic<bool>& stop, shared_chunks* shared) {
  const record_format& format = options.format;
  const bool direct = gpu::supports_format(format);
  const record_format sorted_format = direct ? format : cpu::sort_item_format();
  const std::uint32_t unit = sorted_format.record_size;  // bytes per record the GPU sees
  // A file's share is read where it lies; a stream (one share) in order.
  const bool known = input.known_size().has_value();
  const std::uint64_t share_bytes = known ? share.end - share.begin : 0;
  const std::uint64_t share_records = share_bytes / format.record_size;
  const std::size_t staging_bytes =
      staging_size(known ? std::optional<std::uint64_t>(share_bytes) : std::nullopt);

  gpu::run_former_config former_config;
  former_config.device = share.device;
  former_config.first_run_id = share.first_run;
  former_config.format = sorted_format;
  former_config.descending = direct && options.descending;  // items carry the order already
  former_config.algorithm = chunk_algorithm_for(options, direct);
  former_config.memory_budget = options.gpu_memory_bytes;
  former_config.max_chunk_records = config.max_chunk_records;
  if (known) {
    // Slots sized for the whole device would cost seconds of allocation for a small input.
    const std::uint64_t records = std::max<std::uint64_t>(1, share_records);
    if (former_config.max_chunk_records == 0 || records < former_config.max_chunk_records)
      former_config.max_chunk_records = records;
    // From a queue a GPU may take more than its share: no one-chunk former.
    former_config.expected_records = shared != nullptr ? 0 : share_records;
  }
  former_config.piece_bytes = staging_bytes / unit * unit;

  // Pinning costs ~85 ms per GiB: pin the output staging while the input streams in, and the
  // input staging while the former sets up the device.
  auto pin = [&] {
    trace_recorder::scope timer(trace, "pin", staging_buffers * staging_bytes);
    return std::make_shared<staging_pool>(staging_buffers, staging_bytes, share.device);
  };
  std::future<std::shared_ptr<staging_pool>> pinning_in = std::async(std::launch::async, pin);
  std::shared_future<std::shared_ptr<staging_pool>> staging_out =
      std::async(std::launch::async, pin).share();

  // The sink and the pinner are created before the former and outlive it: its thread calls
  // them (both are set once the former knows its chunk).
  std::optional<run_pinner> pinner;
  // What becomes of complete runs: stored as they are, or (items) gathered into records.
  // Both outlive the collector, whose worker thread calls them.
  record_storer records_as_they_are(store);
  item_gatherer gatherer(store, format, options.descending, arena, trace);
  run_storer& storer = direct ? static_cast<run_storer&>(records_as_they_are) : gatherer;
  bool queued = false;                        // chunks taken from the queue, set once agreed
  std::unique_ptr<gpu_output_writer> writer;  // one chunk: straight into the output
  std::unique_ptr<run_collector> collector;   // else: runs
  auto make_sink = [&](std::uint64_t chunk_records) -> gpu::run_sink* {
    if (whole && direct && known && share_records <= chunk_records) {
      writer = std::make_unique<gpu_output_writer>(staging_out, open_sink, share_bytes, arena);
      return writer.get();
    }
    std::optional<run_pinner>& pins_of = queued ? shared->pinner : pinner;
    run_pinner* pins = pins_of ? &*pins_of : nullptr;
    collector = std::make_unique<run_collector>(unit, chunk_records, staging_out, store, pins,
                                                storer, arena, trace);
    return collector.get();
  };
  auto drain_sink = [&] {
    if (writer) writer->drain();
    if (collector) collector->drain();
  };
  // The former needs its sink at construction, but which sink depends on the chunk size the
  // former derives: a forwarding sink breaks the cycle. Taking chunks from a queue, the
  // former's k-th run (id first + k) is the k-th chunk taken, whose run id is its index.
  struct forwarding_sink final : gpu::run_sink {
    gpu::run_sink* target = nullptr;
    const chunk_queue::taker* taker = nullptr;
    std::uint64_t first = 0;
    [[nodiscard]] std::uint64_t id(std::uint64_t r) const {
      return taker != nullptr ? taker->taken(r - first) : r;
    }
    std::span<std::byte> piece_buffer(std::uint64_t r, std::uint64_t o, std::size_t l) override {
      return target->piece_buffer(id(r), o, l);
    }
    void piece_done(std::uint64_t r, std::uint64_t o, std::span<std::byte> p) override {
      target->piece_done(id(r), o, p);
    }
    void run_done(std::uint64_t r, std::uint64_t n) override { target->run_done(id(r), n); }
  } forward;
  std::optional<chunk_queue::taker> taker;  // outlives the former, as `forward`

  gpu_run_result result;
  // Declared before the former: its on_consumed callbacks release into this pool until the
  // former is gone.
  std::shared_ptr<staging_pool> staging_in_ptr;
  std::optional<trace_recorder::scope> setup_timer(std::in_place, trace, "GPU setup");
  auto former_holder = std::make_unique<gpu::run_former>(former_config, forward, trace);
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
  // hold the whole input now) gets no pinner: its runs are staged. A share of several GPUs'
  // gets one even when it is one run: that run is not the output.
  queued = shared != nullptr && shared->queue.agree(chunk, stop, [&] {
    if (shared->pin_runs) {
      shared->pinner.emplace(shared->queue.chunk_bytes(), 0, share.device, run_pin_threads,
                             trace);
    }
  });
  if (queued) {
    forward.taker = &taker.emplace(shared->queue);
    forward.first = share.first_run;
  }
  const bool planned_chunk =
      config.pin_chunk_records != 0 && chunk == std::min(config.pin_chunk_records, share_records);
  if (!queued && direct && known && planned_chunk && (!whole || share_records > chunk)) {
    std::vector<std::size_t> run_bytes;
    for (std::uint64_t first = 0; first < share_records; first += chunk)
      run_bytes.push_back(
          static_cast<std::size_t>(std::min(chunk, share_records - first) * format.record_size));
    pinner.emplace(std::move(run_bytes), share.first_run, share.device, run_pin_threads, trace);
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
    if (direct && known) {
      // Records go from the file straight into page-locked staging and on to the device,
      // several pieces read at once.
      const std::size_t piece = staging_bytes / format.record_size * format.record_size;
      io::transfer_config parallel_config = read_config;
      parallel_config.queue_depth = reader_queue_depth;
      const auto feed = [&](std::uint64_t begin, std::uint64_t end) {
        {
          io::parallel_reader reader(input, begin, end, piece, reader_threads, staging_in,
                                     parallel_config, trace);
          for (;;) {
            const io::parallel_reader::piece got = reader.next();
            if (got.bytes == 0) break;
            std::byte* p = got.data;
            if (stop.load(std::memory_order_relaxed)) {
              staging_in.release(p);
              check_stop(stop);
            }
            former.push({p, got.bytes}, [&staging_in, p] { staging_in.release(p); });
          }
        }
        // A reader closes the pool as it ends, to wake its threads: the next chunk's reader
        // needs it open.
        if (queued) staging_in.reopen();
      };
      if (!queued) feed(share.begin, share.end);
      // Every chunk but the file's last is whole, and the last is taken last, so the former
      // cuts its runs at the chunks' edges.
      while (queued) {
        check_stop(stop);
        const std::optional<std::uint64_t> c = taker->take();
        if (!c) break;
        feed(shared->queue.first_byte(*c), shared->queue.last_byte(*c));
      }
    } else if (direct) {
      // A stream: one piece at a time, in order (a pipe's through io::pipe_fanout).
      const std::size_t piece = staging_bytes / format.record_size * format.record_size;
      std::uint64_t streamed = 0;
      for (;;) {
        std::byte* p = staging_in.acquire();
        const std::size_t n = read_into({p, piece});
        streamed += n;
        if (n == 0) {
          staging_in.release(p);
          break;
        }
        former.push({p, n}, [&staging_in, p] { staging_in.release(p); });
        if (n < piece) break;
      }
      // The output's size is known now: opened here, it faults in (where the plan says so)
      // while the GPU sorts the last chunk, instead of after.
      if (whole && streamed > 0) open_sink(streamed);
    } else {
      // Whole chunks are read into host memory (the gather needs them), their items
      // extracted into staging and pushed.
      const std::size_t per_piece = staging_bytes / sizeof(cpu::sort_item);
      for (std::uint64_t run = share.first_run;; ++run) {
        check_stop(stop);
        // A share of a file is read where it lies, a stream in order.
        const std::uint64_t at = share.begin + (run - share.first_run) * chunk * format.record_size;
        const std::uint64_t want =
            known ? std::min(chunk * format.record_size, share.end - std::min(at, share.end))
                 : chunk * format.record_size;
        if (want == 0) break;
        host_buffer records(static_cast<std::size_t>(want));
        std::size_t bytes = 0;
        if (known) {
          trace_recorder::scope timer(trace, "read", want);
          input.read_at(at, records.span(), ring, read_config);
          bytes = static_cast<std::size_t>(want);
        } else {
          bytes = read_into(records.span());
        }
        const std::uint64_t count = bytes / format.record_size;
        if (count == 0) break;
        // Hand the chunk to the collector before its items can come back sorted; the
        // mapping stays where it is, so `base` remains valid.
        const std::byte* base = records.data();
        gatherer.keep_chunk(run, std::move(records));
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
  // The former's device memory and streams and the page-locked staging outlive the sink: the
  // former has delivered every run (finish), and its callbacks release into the staging. The
  // former goes first, then the staging (members end in reverse order).
  struct leftovers {
    std::shared_future<std::shared_ptr<staging_pool>> staging_out;
    std::shared_ptr<staging_pool> staging_in;
    std::unique_ptr<gpu::run_former> former;
  };
  {
    trace_recorder::scope timer(trace, "GPU teardown");
    writer.reset();
    collector.reset();
  }
  auto held = std::make_shared<leftovers>(
      leftovers{std::move(staging_out), std::move(staging_in_ptr), std::move(former_holder)});
  // One chunk: the output is written, the rest goes after the commit. Runs: while the merge
  // that follows starts.
  if (result.wrote_output) {
    result.release_after_commit.push_back(std::move(held));
  } else {
    result.teardowns.push_back(
        std::async(std::launch::async, [held = std::move(held), trace]() mutable {
          trace_recorder::scope timer(trace, "GPU teardown");
          held.reset();  // here, not where the future's state goes
        }));
  }
  return result;
}

}  // namespace

gpu_run_result form_runs_on_gpu(io::input_source& input, const sort_options& options,
                                const gpu_stage_config& config, run_store& store,
                                const std::function<io::output_sink&(std::uint64_t)>& open_sink,
                                tbb::task_arena& arena, trace_recorder* trace) {
  const std::vector<gpu_share> shares =
      share_input(input.known_size(), options.format.record_size, config.devices);
  // One thread per GPU drives its share, or takes chunks from the queue; the store orders the
  // runs by id.
  const bool whole = shares.size() == 1;
  std::optional<shared_chunks> shared;
  const std::uint32_t record_size = options.format.record_size;
  if (!whole && input.known_size() && gpu::supports_format(options.format) &&
      config.max_chunk_records != 0) {
    shared.emplace(*input.known_size() / record_size, config.max_chunk_records, record_size,
                   shares.size(), config.pin_chunk_records == config.max_chunk_records);
  }
  std::vector<gpu_run_result> done(shares.size());
  detail::each_until_failure(shares.size(), [&](std::size_t i, const std::atomic<bool>& stop) {
    done[i] = form_share(input, options, config, shares[i], whole, store, open_sink, arena,
                         trace, stop, shared ? &*shared : nullptr);
  });
  if (whole) return std::move(done.front());
  gpu_run_result result;
  result.device_name = done.front().device_name;
  std::set<std::string> sorters;
  for (gpu_run_result& r : done) {
    result.records += r.records;
    sorters.insert(r.sorter);
    for (std::shared_ptr<void>& held : r.release_after_commit)
      result.release_after_commit.push_back(std::move(held));
    for (std::future<void>& t : r.teardowns) result.teardowns.push_back(std::move(t));
  }
  for (const std::string& chosen : sorters) {
    if (!result.sorter.empty()) result.sorter += "; ";
    result.sorter += chosen;
  }
  return result;
}

}  // namespace gpusort::pipeline
