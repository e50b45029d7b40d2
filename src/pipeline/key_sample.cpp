#include "pipeline/key_sample.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
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
/// Sampled records one task reads: 16 tasks for the sample.
constexpr std::uint64_t sample_grain = 512;

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
  // Sampled record j is record step / 2 + j * step of the concatenation. Each lies on a page
  // of its own, whose first touch is a page fault (about 2 us): the 8192 of them, one after
  // another, took 15-20 ms, 5% of a 1 GiB sort; spread over the threads they take about one.
  std::vector<std::uint64_t> sample(input_key_sample_size);
  std::atomic<bool> absent{false};  // a sampled page is not in the page cache
  std::uint64_t first = 0;          // the first record of input i
  // How many samples lie before record r of the concatenation.
  const auto samples_before = [&](std::uint64_t r) -> std::uint64_t {
    if (r <= step / 2) return 0;
    return std::min<std::uint64_t>(sample.size(), (r - step / 2 + step - 1) / step);
  };
  std::uint64_t j = 0;  // the first sample input i holds
  for (std::size_t i = 0; i < input.input_count() && j < sample.size(); ++i) {
    // Every input is a regular file (the size is known): no mapping means an empty one.
    std::optional<io::input_mapping> mapping = input.map_input(i, /*populate=*/false);
    if (!mapping) continue;
    const std::span<const std::byte> bytes = mapping->bytes();
    const std::uint64_t count = bytes.size() / record_size;
    const std::uint64_t end = samples_before(first + count);
    tbb::parallel_for(tbb::blocked_range<std::uint64_t>(j, end, sample_grain),
                      [&](const tbb::blocked_range<std::uint64_t>& r) {
      for (std::uint64_t k = r.begin(); k != r.end() && !absent.load(); ++k) {
        const std::byte* key =
            bytes.data() + (step / 2 + k * step - first) * record_size + format.key_offset;
        if (!resident(key, page_bytes)) {
          absent.store(true);
          return;
        }
        if (format.key_size == sizeof(std::uint32_t)) {
          std::uint32_t bits;
          std::memcpy(&bits, key, sizeof bits);
          sample[k] = narrow.normalize(bits);
        } else {
          std::uint64_t bits;
          std::memcpy(&bits, key, sizeof bits);
          sample[k] = wide.normalize(bits);
        }
      }
    });
    if (absent.load()) return key_spread::unknown;
    j = end;
    first += count;
  }
  sample.resize(j);
  const gpu::hrs_round_estimate estimate = gpu::estimate_hrs_rounds(
      sample, format.key_size * 8, spread_reference_records, spread_local_threshold);
  if (estimate.scatter_rounds <= few_distinct_rounds) return key_spread::few_distinct;
  return estimate.scatter_rounds >= skewed_rounds ? key_spread::skewed : key_spread::even;
}

}  // namespace gpusort::pipeline
