// gpusort::check_file (--check): the inputs read in order, each block checked in parallel
// against the record in front of it, until the first record out of order.
#include <tbb/task_arena.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "core/host_buffer.hpp"
#include "cpu/key_order.hpp"
#include "gpusort/sort.hpp"
#include "io/input_source.hpp"
#include "pipeline/input_format.hpp"
#include "pipeline/plan.hpp"

namespace gpusort {
namespace {

constexpr std::size_t stream_block_bytes = std::size_t{64} << 20;
constexpr std::uint64_t mapped_window_bytes = std::uint64_t{1} << 30;

/// Walks the records of the inputs in blocks, remembering the last record of each block.
class order_checker {
 public:
  order_checker(const sort_options& options, check_result& result)
      : options_(options), result_(result), last_(options.format.record_size) {}

  /// Checks `count` records at `records` of input `name`; false once a disorder is found.
  bool check(const std::byte* records, std::uint64_t count, const std::string& name) {
    if (count == 0) return true;
    const record_format& format = options_.format;
    const std::uint64_t rec = format.record_size;
    const std::byte* previous = have_last_ ? last_.data() : nullptr;
    const std::optional<std::uint64_t> bad = cpu::first_disorder(
        records, count, previous, format, options_.descending, options_.unique);
    if (bad) {
      result_.disorder = result_.records + *bad;
      result_.records += *bad + 1;
      result_.input = name;
      result_.key = cpu::key_text(records + *bad * rec, format);
      result_.previous_key =
          cpu::key_text(*bad > 0 ? records + (*bad - 1) * rec : previous, format);
      return false;
    }
    result_.records += count;
    std::memcpy(last_.data(), records + (count - 1) * rec, rec);
    have_last_ = true;
    return true;
  }

 private:
  const sort_options& options_;
  check_result& result_;
  host_buffer last_;
  bool have_last_ = false;
};

/// Reads stream input `i` block by block into check(); false once a disorder is found.
bool check_stream(io::input_source& input, std::size_t i, std::uint32_t record_size,
                  order_checker& checker) {
  host_buffer block(std::max<std::size_t>(stream_block_bytes / record_size, 1) * record_size);
  for (;;) {
    // Whole blocks until the stream ends, which read_stream checks ends on a record.
    const std::size_t got = input.read_stream(i, block.span());
    if (!checker.check(block.data(), got / record_size, input.descriptor(i).path())) return false;
    if (got < block.size()) return true;
  }
}

}  // namespace

check_result check_file(const std::vector<std::string>& inputs, const sort_options& requested) {
  requested.format.validate();
  io::input_source input(inputs, requested.format.record_size);
  // .npy inputs: the records after the header, in the format it describes.
  const sort_options options = pipeline::with_input_format(requested, input);
  const std::uint32_t rec = options.format.record_size;
  check_result result;
  order_checker checker(options, result);
  tbb::task_arena arena(
      static_cast<int>(pipeline::thread_count(options, pipeline::available_cpus())));
  arena.execute([&] {
    for (std::size_t i = 0; i < input.input_count(); ++i) {
      const io::file_descriptor& fd = input.descriptor(i);
      if (!fd.is_regular()) {
        if (!check_stream(input, i, rec, checker)) return;
        continue;
      }
      // Mapped without populating: a check stops at the first disorder, and reads a file
      // larger than memory once.
      const std::optional<io::input_mapping> m = input.map_input(i, false);
      if (!m) continue;
      // In windows, so that the threads read one region of a file larger than memory at a
      // time, front to back, instead of faulting pages in all over it.
      const std::span<const std::byte> bytes = m->bytes();
      const std::uint64_t window = std::max<std::uint64_t>(1, mapped_window_bytes / rec);
      const std::uint64_t count = bytes.size() / rec;
      for (std::uint64_t first = 0; first < count; first += window)
        if (!checker.check(bytes.data() + first * rec, std::min(window, count - first),
                           fd.path()))
          return;
    }
  });
  return result;
}

}  // namespace gpusort
