// Strategy merge_inputs (--merge): every input is already a sorted run. Each is mapped (a
// stream is first copied to a temporary file), checked in order before any output exists, and
// the runs are merged straight from the page cache into the output.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <vector>

#include "core/host_buffer.hpp"
#include "core/parse_size.hpp"
#include "core/trace.hpp"
#include "cpu/key_order.hpp"
#include "gpusort/error.hpp"
#include "io/temp_file.hpp"
#include "pipeline/merge_runs.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {
namespace {

constexpr std::size_t spool_block_bytes = std::size_t{8} << 20;

/// Copies stream input `i` (its records: no .npy header) to an anonymous file in `dir`, which
/// is returned with its size.
std::pair<io::file_descriptor, std::uint64_t> spool_stream(io::input_source& input, std::size_t i,
                                                           const std::string& dir,
                                                           trace_recorder* trace) {
  const std::string& name = input.descriptor(i).path();
  io::file_descriptor file = io::make_anonymous_file(io::temp_directory(dir));
  host_buffer block(spool_block_bytes);
  std::uint64_t size = 0;
  trace_recorder::scope timer(trace, "read");
  for (;;) {
    // Full blocks until the stream ends (read_stream checks that it ends on a record).
    const std::size_t got = input.read_stream(i, block.span());
    for (std::size_t done = 0; done < got;) {
      const ssize_t put = ::pwrite(file.get(), block.data() + done, got - done,
                                   static_cast<off_t>(size + done));
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) throw_error("write a temporary copy of " + name + " in " + dir,
                                put < 0 ? errno : ENOSPC);
      done += static_cast<std::size_t>(put);
    }
    size += got;
    if (got < block.size()) break;
  }
  timer.add_bytes(size);
  return {std::move(file), size};
}

}  // namespace

strategy_result merge_sorted_inputs(const sort_context& ctx) {
  const record_format& format = ctx.options.format;
  const std::uint32_t rec = format.record_size;
  io::input_source& input = ctx.input;
  // Populating the page tables up front pays while the inputs stay in the page cache; past the
  // host budget they would only be read from disk twice.
  const bool populate = input.known_size() && *input.known_size() <= ctx.plan.budget_bytes;

  std::vector<io::input_mapping> mappings;
  std::vector<io::file_descriptor> spooled;
  std::vector<cpu::run_view> runs;
  std::vector<std::string> names;
  {
    trace_recorder::scope timer(ctx.trace, "map inputs");
    for (std::size_t i = 0; i < input.input_count(); ++i) {
      std::optional<io::input_mapping> m = input.map_input(i, populate);
      if (!m && !input.descriptor(i).is_regular()) {
        auto [file, size] = spool_stream(input, i, ctx.options.temp_dir, ctx.trace);
        if (size == 0) continue;
        void* p = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_SHARED,
                         file.get(), 0);
        if (p == MAP_FAILED)
          throw_error("mmap a temporary copy of " + input.descriptor(i).path(), errno);
        m.emplace(p, static_cast<std::size_t>(size), 0, input.descriptor(i).path());
        spooled.push_back(std::move(file));
      }
      if (!m) continue;  // empty
      const std::span<const std::byte> bytes = m->bytes();
      runs.push_back({bytes.data(), bytes.size() / rec});
      names.push_back(input.descriptor(i).path());
      mappings.push_back(std::move(*m));
    }
  }
  {
    // Before the output is opened: an unsorted input leaves no output behind, not even in a
    // pipe.
    trace_recorder::scope timer(ctx.trace, "check");
    for (std::size_t j = 0; j < runs.size(); ++j) {
      timer.add_bytes(runs[j].count * rec);
      const std::optional<std::uint64_t> bad = cpu::first_disorder(
          runs[j].data, runs[j].count, nullptr, format, ctx.options.descending, false);
      if (bad)
        throw_error(names[j] + ": not sorted: record " + std::to_string(*bad) + " (key " +
                    cpu::key_text(runs[j].data + *bad * rec, format) + ") orders before " +
                    "the one in front of it (key " +
                    cpu::key_text(runs[j].data + (*bad - 1) * rec, format) +
                    "); --merge takes sorted inputs only");
    }
  }
  strategy_result result;
  result.ran = strategy::merge_inputs;
  for (const cpu::run_view& r : runs) result.records += r.count;
  result.runs = runs.size();
  io::output_sink& sink = ctx.output.open(result.records * rec);
  if (!runs.empty()) {
    merge_views(runs, sink, format, ctx.options.descending, ctx.trace);
    result.merge_passes = 1;
  }
  sink.finish();
  return result;
}

}  // namespace gpusort::pipeline
