// Strategy gpu_exchange (issue 12 item 2, after RMG sort): an input of key-only records that
// the selected GPUs hold together, though not one of them alone. Each GPU reads an equal share
// of the file into its own memory; gpu::multi_gpu_sorter partitions the keys by their top bits
// across the GPUs, writing each into the GPU that sorts it, and sorts each GPU's key range
// there; each range then goes from its GPU straight to its final offset in the output. No
// runs, no merge.
#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "core/each_until_failure.hpp"
#include "core/trace.hpp"
#include "gpu/multi_gpu_sort.hpp"
#include "gpusort/error.hpp"
#include "io/parallel_reader.hpp"
#include "pipeline/gpu_output_writer.hpp"
#include "pipeline/gpu_selection.hpp"
#include "pipeline/key_sample.hpp"
#include "pipeline/pipeline_config.hpp"
#include "pipeline/staging_pool.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {
namespace {

void check_stop(const std::atomic<bool>& stop) {
  if (stop.load(std::memory_order_relaxed))
    throw error("exchange sort stopped: another GPU failed");
}

/// Reads one share of the input through `staging` into its slot's slice.
void load_share(const io::input_source& input, const gpu_share& share, std::size_t slot,
                gpu::multi_gpu_sorter& sorter, staging_pool& staging,
                const std::atomic<bool>& stop, trace_recorder* trace) {
  io::transfer_config config;
  config.block_bytes = std::size_t{1} << 20;
  config.queue_depth = reader_queue_depth;
  const std::uint32_t record_size = sorter.key_bytes();
  const std::size_t piece = staging.buffer_bytes() / record_size * record_size;
  io::parallel_reader reader(input, share.begin, share.end, piece, reader_threads, staging,
                             config, trace);
  std::uint64_t at = 0;
  for (;;) {
    const io::parallel_reader::piece got = reader.next();
    if (got.bytes == 0) break;
    // Released however the copy ends: the reader's destructor waits for its buffers.
    const std::unique_ptr<std::byte, std::function<void(std::byte*)>> held(
        got.data, [&staging](std::byte* p) { staging.release(p); });
    check_stop(stop);
    trace_recorder::scope timer(trace, "H2D", got.bytes);
    sorter.copy_in(slot, at, {got.data, got.bytes});
    at += got.bytes;
  }
  GPUSORT_EXPECTS(at == share.end - share.begin,
                  "exchange sort: read " + std::to_string(at) + " of " +
                      std::to_string(share.end - share.begin) + " bytes of GPU " +
                      std::to_string(share.device) + "'s share");
}

/// Copies one sorted key range from its GPU into the output at byte `out_at`, through
/// `writer`, whose staging the pieces travel in.
void store_range(const gpu::multi_gpu_range& range, std::uint64_t out_at,
                 gpu::multi_gpu_sorter& sorter, staging_pool& staging, gpu_output_writer& writer,
                 const std::atomic<bool>& stop, trace_recorder* trace) {
  const std::uint64_t bytes = range.records * sorter.key_bytes();
  const std::size_t piece = staging.buffer_bytes() / sorter.key_bytes() * sorter.key_bytes();
  try {
    for (std::uint64_t at = 0; at < bytes; at += piece) {
      check_stop(stop);
      const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(piece, bytes - at));
      std::byte* p = staging.acquire();
      GPUSORT_EXPECTS(p != nullptr, "exchange sort: the output staging was closed");
      try {
        trace_recorder::scope timer(trace, "D2H", len);
        sorter.copy_out(range, at, {p, len});
      } catch (...) {
        staging.release(p);
        throw;
      }
      writer.piece_done(0, out_at + at, {p, len});  // gives p back once written
    }
  } catch (...) {
    try {
      writer.drain();  // the writes in flight use the staging buffers
    } catch (...) {
    }
    throw;
  }
  writer.run_done(0, range.records);
  writer.drain();
}

}  // namespace

strategy_result sort_by_exchange(const sort_context& ctx) {
  const sort_plan& plan = ctx.plan;
  const record_format& format = ctx.options.format;
  GPUSORT_EXPECTS(gpu::exchange_supports(format) && ctx.input.known_size().has_value(),
                  "exchange sort: needs a file of key-only records of a numeric key");
  const std::uint64_t total_bytes = *ctx.input.known_size();
  const std::vector<gpu_share> shares =
      share_input(total_bytes, format.record_size, plan.sort_devices);
  const std::size_t g = shares.size();
  std::vector<int> devices(g);
  std::vector<std::uint64_t> slice_records(g);
  for (std::size_t i = 0; i < g; ++i) {
    devices[i] = shares[i].device;
    slice_records[i] = (shares[i].end - shares[i].begin) / format.record_size;
  }

  // Pinning (~85 ms per GiB) overlaps the device setup. The same buffers carry each GPU's
  // share in and its range out.
  const std::size_t staging_bytes = staging_size(total_bytes / g);
  std::vector<std::future<std::shared_ptr<staging_pool>>> pinning(g);
  for (std::size_t i = 0; i < g; ++i)
    pinning[i] = std::async(std::launch::async, [&, i] {
      trace_recorder::scope timer(ctx.trace, "pin", staging_buffers * staging_bytes);
      return std::make_shared<staging_pool>(staging_buffers, staging_bytes, devices[i]);
    });
  gpu::multi_gpu_sort_config config;
  config.key = format.record_size == 4 ? gpu::multi_gpu_key::u32 : gpu::multi_gpu_key::u64;
  config.in_place = true;
  config.type = format.type;
  config.descending = ctx.options.descending;
  // Keys the planner did not sample are sampled now, 8192 of them where the file lies in the
  // page cache; keys not in it leave Onesweep.
  config.local_algorithm = plan.exchange_local;
  if (config.local_algorithm == gpu::chunk_algorithm::automatic) {
    trace_recorder::scope timer(ctx.trace, "sample keys");
    const gpu::chunk_algorithm sampled =
        exchange_local_sort(ctx.options, sample_key_spread(ctx.input, format, config.descending));
    config.local_algorithm =
        sampled == gpu::chunk_algorithm::automatic ? gpu::chunk_algorithm::onesweep : sampled;
  }
  std::optional<gpu::multi_gpu_sorter> sorter;
  {
    trace_recorder::scope timer(ctx.trace, "GPU setup");
    sorter.emplace(devices, config);
    sorter->reserve(slice_records);
  }
  std::vector<std::shared_ptr<staging_pool>> staging(g);
  for (std::size_t i = 0; i < g; ++i) staging[i] = pinning[i].get();

  detail::each_until_failure(g, [&](std::size_t i, const std::atomic<bool>& stop) {
    trace_recorder::scope timer(ctx.trace, "load", shares[i].end - shares[i].begin);
    load_share(ctx.input, shares[i], i, *sorter, *staging[i], stop, ctx.trace);
  });
  // Every buffer is back: the readers are gone, their pieces released.
  for (const std::shared_ptr<staging_pool>& pool : staging) pool->reopen();
  gpu::multi_gpu_result sorted;
  {
    trace_recorder::scope timer(ctx.trace, "exchange sort", total_bytes);
    sorted = sorter->sort_in_place(slice_records);
  }

  // Each range lands after the ranges of lower keys. A mapped output takes every GPU's pieces
  // at once; a stream takes them in order, one GPU after another.
  io::output_sink& sink = ctx.output.open(total_bytes);
  const std::function<io::output_sink&(std::uint64_t)> open_sink =
      [&sink](std::uint64_t) -> io::output_sink& { return sink; };
  std::vector<std::uint64_t> out_at(g + 1, 0);
  for (std::size_t d = 0; d < g; ++d)
    out_at[d + 1] = out_at[d] + sorted.ranges[d].records * format.record_size;
  GPUSORT_EXPECTS(out_at[g] == total_bytes,
                  "exchange sort: the GPUs' ranges hold " + std::to_string(out_at[g]) + " of " +
                      std::to_string(total_bytes) + " bytes");
  auto store = [&](std::size_t d, const std::atomic<bool>& stop) {
    trace_recorder::scope timer(ctx.trace, "store", out_at[d + 1] - out_at[d]);
    std::promise<std::shared_ptr<staging_pool>> ready;
    ready.set_value(staging[d]);
    gpu_output_writer writer(ready.get_future().share(), open_sink, total_bytes, ctx.arena);
    store_range(sorted.ranges[d], out_at[d], *sorter, *staging[d], writer, stop, ctx.trace);
  };
  if (sink.parallel_writes()) {
    detail::each_until_failure(g, store);
  } else {
    const std::atomic<bool> never{false};
    for (std::size_t d = 0; d < g; ++d) store(d, never);
  }
  sink.finish();

  strategy_result result;
  result.ran = strategy::gpu_exchange;
  result.records = total_bytes / format.record_size;
  result.runs = result.records > 0 ? 1 : 0;
  result.gpu_sorter = gpu::to_string(config.local_algorithm);
  return result;
}

}  // namespace gpusort::pipeline
