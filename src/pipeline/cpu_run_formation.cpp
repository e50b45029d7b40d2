// Reader thread -> CPU radix sort -> run store, with one chunk read ahead.
#include "pipeline/cpu_run_formation.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "core/host_buffer.hpp"
#include "core/trace.hpp"
#include "cpu/radix_sort.hpp"
#include "gpusort/error.hpp"
#include "io/uring.hpp"
#include "pipeline/bounded_queue.hpp"
#include "pipeline/pipeline_config.hpp"

namespace gpusort::pipeline {
namespace {

struct filled_chunk {
  host_buffer buffer;
  std::uint64_t records = 0;
};

/// The buffer of a run that spilled, kept for the next run of its size: sorting or reading into
/// pages already mapped saves the fault and the zeroing of each page of fresh memory. One at a
/// time: a run takes a fresh buffer only when none has come back, so the buffers in use stay
/// within the layout's three runs at once (a spare may wait where a freed run's memory was
/// gone before).
class spare_buffer {
 public:
  /// Keeps `buffer` (add()'s return: empty where the store kept the run) in place of the last.
  void put(host_buffer buffer) {
    if (buffer.size() == 0) return;
    std::lock_guard lock(mutex_);
    spare_ = std::move(buffer);
  }
  /// A buffer of exactly `bytes`: the spare where it has that size, else fresh (a spare of
  /// another size goes first).
  host_buffer take(std::size_t bytes) {
    host_buffer b = take_if(bytes);
    if (b.size() != bytes) b = host_buffer(bytes);
    return b;
  }
  /// The spare where it has exactly `bytes`, else nothing (a spare of another size goes).
  host_buffer take_if(std::size_t bytes) {
    host_buffer b;
    {
      std::lock_guard lock(mutex_);
      b = std::move(spare_);
    }
    if (b.size() != bytes) b = host_buffer();
    return b;
  }

 private:
  std::mutex mutex_;
  host_buffer spare_;
};

/// Reads up to `records` records into `dst`; returns the records read.
std::uint64_t read_records(io::input_source& input, std::byte* dst, std::uint64_t records,
                           std::uint32_t rec, io::uring& ring, const run_layout& layout,
                           trace_recorder* trace) {
  trace_recorder::scope timer(trace, "read");
  io::transfer_config config;
  config.block_bytes = layout.read_block_bytes;
  const std::size_t got = input.read({dst, static_cast<std::size_t>(records * rec)}, ring, config);
  timer.add_bytes(got);
  return got / rec;
}

/// Reads one chunk into `buffer`; returns the records read.
std::uint64_t read_chunk(io::input_source& input, host_buffer& buffer, std::uint64_t records,
                         std::uint32_t rec, io::uring& ring, const run_layout& layout,
                         trace_recorder* trace) {
  return read_records(input, buffer.data(), records, rec, ring, layout, trace);
}

/// Reads the next chunk of at most `records` records into `spare`'s buffer where it has a
/// chunk's size; else an input of known size reads into a fresh one, and a stream into one that
/// grows with it.
filled_chunk read_next_chunk(io::input_source& input, std::uint64_t records, std::uint32_t rec,
                             io::uring& ring, const run_layout& layout, trace_recorder* trace,
                             spare_buffer& spare) {
  const auto chunk_bytes = static_cast<std::size_t>(records * rec);
  // The last chunk, which may stay in memory as a run, gives back what a spare's pages hold
  // past its records.
  auto read_into = [&](host_buffer buffer) {
    filled_chunk c{std::move(buffer), 0};
    c.records = read_chunk(input, c.buffer, records, rec, ring, layout, trace);
    if (c.records < records) c.buffer.discard(c.records * rec, chunk_bytes - c.records * rec);
    return c;
  };
  if (input.known_size()) return read_into(spare.take(chunk_bytes));
  // A stream that filled a chunk before is likely to fill the next one: a spilled run's buffer
  // spares the fresh pages' faults and the copies of a buffer that grows (on the 2-core VM,
  // first-touch zeroing took a third of the profile of 3 GiB sorted from a pipe).
  if (host_buffer reused = spare.take_if(chunk_bytes); reused.size() != 0)
    return read_into(std::move(reused));
  std::uint64_t capacity =
      std::min(records, std::max<std::uint64_t>(1, first_stream_buffer_bytes / rec));
  filled_chunk c{host_buffer(static_cast<std::size_t>(capacity * rec)), 0};
  for (;;) {
    c.records += read_records(input, c.buffer.data() + c.records * rec, capacity - c.records, rec,
                              ring, layout, trace);
    if (c.records < capacity || capacity == records) return c;
    capacity = std::min(records, capacity * 2);
    host_buffer bigger(static_cast<std::size_t>(capacity * rec));
    std::memcpy(bigger.data(), c.buffer.data(), static_cast<std::size_t>(c.records * rec));
    c.buffer = std::move(bigger);
  }
}

/// One regular input file of known size, mapped without filling its page tables (the sort's
/// first pass faults them in as it reads); nullopt for anything else, and for a file that
/// cannot be mapped, which is read instead.
std::optional<io::input_mapping> map_single_file(const io::input_source& input) {
  if (!input.known_size() || input.input_count() != 1) return std::nullopt;
  std::optional<io::input_mapping> mapped;
  try {
    mapped = input.map_input(0, /*populate=*/false);
  } catch (const error&) {
    return std::nullopt;
  }
  if (mapped && mapped->bytes().size() != *input.known_size()) return std::nullopt;
  return mapped;
}

/// Sorts each chunk of `bytes` out of the mapping into a run of its own, while a thread of its
/// own stores the run before. Reading each chunk into fresh memory first took 0.7x as long as
/// its sort and overlapped it only partly (16 GiB with -S 4G on 32 cores: read 1.9 s and sort
/// 2.7 s busy in 3.6 s of run formation).
void form_runs_from_mapping(std::span<const std::byte> bytes, const run_layout& layout,
                            const record_format& format, bool descending, run_store& store,
                            trace_recorder* trace) {
  const std::uint32_t rec = format.record_size;
  const std::uint64_t total = bytes.size() / rec;
  const std::uint64_t chunk = layout.chunk_records;
  struct sorted_run {
    std::uint64_t id = 0;
    host_buffer buffer;
    std::uint64_t records = 0;
    bool last = false;
  };
  // At most three runs at once: one stored, one waiting, one sorted.
  bounded_queue<sorted_run> sorted(1);
  spare_buffer spare;
  std::exception_ptr store_error;
  std::thread storer([&] {
    try {
      io::uring ring(64);
      // The last run stays in memory: the merge that follows has the budget the others leave.
      while (std::optional<sorted_run> r = sorted.pop())
        spare.put(store.add(r->id, std::move(r->buffer), r->records, ring, {}, r->last));
    } catch (...) {
      store_error = std::current_exception();
      sorted.fail(store_error);
    }
  });
  try {
    const std::uint64_t scratch_bytes =
        cpu::sort_into_scratch_bytes(std::min(chunk, total), format);
    host_buffer scratch;
    if (scratch_bytes != 0) scratch = host_buffer(static_cast<std::size_t>(scratch_bytes));
    for (std::uint64_t first = 0, id = 0; first < total; first += chunk, ++id) {
      const std::uint64_t n = std::min(chunk, total - first);
      host_buffer run = spare.take(static_cast<std::size_t>(n * rec));
      {
        trace_recorder::scope timer(trace, "sort", n * rec);
        cpu::sort_records_from(bytes.data() + first * rec,
                               scratch_bytes != 0 ? scratch.data() : nullptr, run.data(), n,
                               format, descending);
      }
      if (!sorted.push({id, std::move(run), n, first + n == total})) break;  // storer failed
    }
    sorted.close();
  } catch (...) {
    sorted.fail(std::current_exception());
    storer.join();
    throw;
  }
  storer.join();
  if (store_error) std::rethrow_exception(store_error);
}

}  // namespace

bool sort_single_run_into(io::input_source& input, const run_layout& layout,
                          const record_format& format, bool descending, io::output_sink& sink,
                          std::uint64_t total_bytes, unsigned threads, bool write_once,
                          trace_recorder* trace) {
  const std::span<std::byte> out = sink.mapping();
  if (total_bytes == 0 || out.size() != total_bytes) return false;
  // Fault the output in on every core before the input is read: doing it on one core while
  // the other read was slower (4.2-5.5 s against 4.2-4.5 s end to end for 2 GiB, 2 cores).
  // Not where each page is to be written once: faulting it in is a write.
  if (!write_once) sink.prefault(threads, /*wait=*/true);
  const std::uint32_t rec = format.record_size;
  const std::uint64_t records = total_bytes / rec;
  host_buffer scratch(static_cast<std::size_t>(
      write_once ? cpu::sort_scratch_bytes(records, format)
                 : cpu::sort_into_scratch_bytes(records, format)));
  // Sorts `src` into the output: through the scratch buffer where each page is written once,
  // else with the output as the sort's second buffer and `writable` (src, or null where src is
  // the input's read-only mapping) as its first.
  auto sort = [&](const std::byte* src, std::byte* writable) {
    trace_recorder::scope timer(trace, "sort", total_bytes);
    if (write_once)
      cpu::sort_records_through(src, scratch.data(), out.data(), records, format, descending);
    else if (writable != nullptr)
      cpu::sort_records_into(writable, scratch.data(), out.data(), records, format, descending);
    else
      cpu::sort_records_from(src, scratch.data(), out.data(), records, format, descending);
  };
  // One input file is sorted straight out of its page cache: reading it would copy it into
  // fresh memory, and faulting that in costs more than the copy.
  std::optional<io::input_mapping> mapped;
  {
    trace_recorder::scope timer(trace, "map", total_bytes);
    mapped = input.map_whole();
  }
  if (mapped && mapped->bytes().size() == total_bytes) {
    sort(mapped->bytes().data(), nullptr);
    return true;
  }
  io::uring ring(64);
  host_buffer data(static_cast<std::size_t>(total_bytes));
  const std::uint64_t got = read_chunk(input, data, records, rec, ring, layout, trace);
  GPUSORT_EXPECTS(got == records, input.describe() + ": the input changed size while it was "
                                  "read (" + std::to_string(got * rec) + " bytes instead of " +
                                  std::to_string(total_bytes) + ")");
  sort(data.data(), data.data());
  return true;
}

void form_runs_on_cpu(io::input_source& input, const run_layout& layout,
                      const record_format& format, bool descending, bool in_place,
                      run_store& store, trace_recorder* trace) {
  if (in_place && !layout.single_run) {
    std::optional<io::input_mapping> mapped;
    {
      trace_recorder::scope timer(trace, "map");
      mapped = map_single_file(input);
    }
    if (mapped) {
      form_runs_from_mapping(mapped->bytes(), layout, format, descending, store, trace);
      trace_recorder::scope timer(trace, "unmap input");
      mapped.reset();
      return;
    }
  }
  const std::uint32_t rec = format.record_size;
  const std::uint64_t chunk = layout.chunk_records;
  io::uring ring(64);
  host_buffer scratch;  // sized for the largest chunk so far
  std::uint64_t formed = 0;  // records sorted into runs so far
  std::uint64_t run = 0;     // the next run's id
  spare_buffer spare;  // a spilled run's buffer, back to the reader

  auto sort_and_store = [&](filled_chunk c) {
    const std::uint64_t scratch_bytes = cpu::sort_scratch_bytes(c.records, format);
    if (scratch.size() < scratch_bytes) {
      scratch = host_buffer();  // the old one goes first: the budget holds only one
      scratch = host_buffer(static_cast<std::size_t>(scratch_bytes));
    }
    std::byte* sorted = nullptr;
    {
      trace_recorder::scope timer(trace, "sort", c.records * rec);
      sorted = cpu::sort_records(c.buffer.data(), scratch.data(), c.records, format, descending);
    }
    if (sorted == scratch.data()) std::swap(c.buffer, scratch);
    formed += c.records;
    // The last run of a known input stays in memory: the read-ahead buffer is free by now,
    // and the merge that follows has the budget that the scratch leaves.
    const bool last = input.known_size() && formed * rec == *input.known_size();
    spare.put(store.add(run++, std::move(c.buffer), c.records, ring, {}, last));
  };

  if (layout.single_run) {
    filled_chunk c = read_next_chunk(input, chunk, rec, ring, layout, trace, spare);
    if (c.records > 0) sort_and_store(std::move(c));
    return;
  }

  bounded_queue<filled_chunk> filled(1);
  std::thread reader([&] {
    try {
      io::uring reader_ring(64);
      for (;;) {
        filled_chunk c = read_next_chunk(input, chunk, rec, reader_ring, layout, trace, spare);
        if (c.records == 0) break;
        const bool last = c.records < chunk;
        if (!filled.push(std::move(c))) return;
        if (last) break;
      }
      filled.close();
    } catch (...) {
      filled.fail(std::current_exception());
    }
  });
  try {
    while (std::optional<filled_chunk> c = filled.pop()) sort_and_store(std::move(*c));
  } catch (...) {
    filled.fail(std::current_exception());
    reader.join();
    throw;
  }
  reader.join();
}

}  // namespace gpusort::pipeline
