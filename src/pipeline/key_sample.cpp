#include "pipeline/key_sample.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <vector>

#include "gpu/hrs_round_estimate.hpp"
#include "gpusort/detail/key_codec.hpp"

namespace gpusort::pipeline {
namespace {

/// Buckets of at most this many keys end the replayed refinement: the hybrid radix sort's local
/// threshold for keys alone (gpu/hrs/hrs_tuning.cuh), with which the classes were measured.
constexpr std::uint64_t spread_local_threshold = 9216;
/// The rounds are replayed as if the sample stood for this many records, whatever the input
/// holds: the classes then depend on how the keys spread, not on the input's size, and the
/// inputs whose backend they decide hold 2^26 to 2^30 records.
constexpr std::uint64_t spread_reference_records = std::uint64_t{1} << 27;
/// Sampled rounds up to which the keys count as few distinct values (all equal: 0), and from
/// which as skewed. Measured on 2^26-2^28 keys (tools/bench/results/2026-11-25-h100-hrs-groups):
/// uniform 2.0-2.12, sorted 2.0, Zipf 2.08, AND of 2 words 2.68, of 3 3.45 (u32) and 3.86
/// (u64), all equal 0.
constexpr double few_distinct_rounds = 1.0;
constexpr double skewed_rounds = 2.8;

/// Whether the page holding `address` is in memory.
bool resident(const std::byte* address, std::uintptr_t page_bytes) {
  const std::uintptr_t page = reinterpret_cast<std::uintptr_t>(address) & ~(page_bytes - 1);
  unsigned char in_core = 0;
  return ::mincore(reinterpret_cast<void*>(page), page_bytes, &in_core) == 0 && (in_core & 1u);
}

}  // namespace

key_spread sample_key_spread(const io::input_source& input, const record_format& format,
                             bool descending) {
  const bool numeric = format.type != key_type::bytes &&
                       (format.key_size == sizeof(std::uint32_t) ||
                        format.key_size == sizeof(std::uint64_t));
  if (!input.known_size() || !numeric) return key_spread::unknown;
  const std::uint64_t record_size = format.record_size;
  const std::uint64_t records = *input.known_size() / record_size;
  if (records < input_key_sample_size) return key_spread::unknown;
  const std::uintptr_t page_bytes = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t step = records / input_key_sample_size;

  const auto narrow = detail::make_key_codec<std::uint32_t>(format.type, descending);
  const auto wide = detail::make_key_codec<std::uint64_t>(format.type, descending);
  std::vector<std::uint64_t> sample;
  sample.reserve(input_key_sample_size);
  std::uint64_t next = step / 2;  // the record to sample next, in the concatenation
  std::uint64_t first = 0;        // the first record of input i
  for (std::size_t i = 0; i < input.input_count() && sample.size() < input_key_sample_size; ++i) {
    // Every input is a regular file (the size is known): no mapping means an empty one.
    std::optional<io::input_mapping> mapping = input.map_input(i, /*populate=*/false);
    if (!mapping) continue;
    const std::span<const std::byte> bytes = mapping->bytes();
    const std::uint64_t count = bytes.size() / record_size;
    for (; next < first + count && sample.size() < input_key_sample_size; next += step) {
      const std::byte* key = bytes.data() + (next - first) * record_size + format.key_offset;
      if (!resident(key, page_bytes)) return key_spread::unknown;
      if (format.key_size == sizeof(std::uint32_t)) {
        std::uint32_t bits;
        std::memcpy(&bits, key, sizeof bits);
        sample.push_back(narrow.normalize(bits));
      } else {
        std::uint64_t bits;
        std::memcpy(&bits, key, sizeof bits);
        sample.push_back(wide.normalize(bits));
      }
    }
    first += count;
  }
  const gpu::hrs_round_estimate estimate = gpu::estimate_hrs_rounds(
      sample, format.key_size * 8, spread_reference_records, spread_local_threshold);
  if (estimate.scatter_rounds <= few_distinct_rounds) return key_spread::few_distinct;
  return estimate.scatter_rounds >= skewed_rounds ? key_spread::skewed : key_spread::even;
}

}  // namespace gpusort::pipeline
