#include "pipeline/key_sample.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <span>
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
/// Sampled rounds up to which the keys count as few distinct values (all equal: 0), from which
/// as patterned (a little skewed), and from which as skewed. Measured on 2^26-2^28 keys
/// (tools/bench/results/2026-11-25-h100-hrs-groups): uniform 2.0-2.12, sorted 2.0, Zipf 2.08,
/// AND of 2 words 2.68, of 3 3.45 (u32) and 3.86 (u64), all equal 0.
constexpr double few_distinct_rounds = 1.0;
constexpr double patterned_rounds = 2.4;
constexpr double skewed_rounds = 2.8;
/// Sampled records one task reads: 16 tasks for the sample.
constexpr std::uint64_t sample_grain = 512;

}  // namespace

std::optional<std::vector<std::uint64_t>> read_cached_keys(
    const io::input_source& input, const record_format& format, bool descending,
    std::size_t count, const std::function<std::uint64_t(std::uint64_t)>& record_at) {
  const auto narrow = detail::make_key_codec<std::uint32_t>(format.type, descending);
  const auto wide = detail::make_key_codec<std::uint64_t>(format.type, descending);
  // Each key is read from the page cache alone, spread over the threads: 2.5-3 ms for 8192
  // keys on 16 threads (H200 host, --stats), where a mapping's page fault per sampled key took
  // 6-8 ms (15-20 one after another).
  std::vector<std::uint64_t> keys(count);
  std::atomic<bool> absent{false};  // a sampled key is not in the page cache
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, sample_grain),
                    [&](const tbb::blocked_range<std::size_t>& r) {
    for (std::size_t k = r.begin(); k != r.end() && !absent.load(); ++k) {
      const std::uint64_t offset = record_at(k) * format.record_size + format.key_offset;
      // A 4-byte key lands in the low half (the records are little-endian, as is the host).
      std::uint64_t bits = 0;
      const auto bytes = std::as_writable_bytes(std::span(&bits, 1)).first(format.key_size);
      if (!input.read_if_cached(offset, bytes)) {
        absent.store(true);
        return;
      }
      keys[k] = format.key_size == sizeof(std::uint32_t)
                    ? narrow.normalize(static_cast<std::uint32_t>(bits))
                    : wide.normalize(bits);
    }
  });
  if (absent.load()) return std::nullopt;
  return keys;
}

key_spread sample_key_spread(const io::input_source& input, const record_format& format,
                             bool descending) {
  const bool numeric = format.type != key_type::bytes &&
                       (format.key_size == sizeof(std::uint32_t) ||
                        format.key_size == sizeof(std::uint64_t));
  if (!input.known_size() || !numeric) return key_spread::unknown;
  const std::uint64_t records = *input.known_size() / format.record_size;
  if (records < input_key_sample_size) return key_spread::unknown;
  const std::uint64_t step = records / input_key_sample_size;
  // Sampled record j is record step / 2 + j * step of the concatenation, each on a page of its
  // own.
  std::optional<std::vector<std::uint64_t>> read =
      read_cached_keys(input, format, descending, input_key_sample_size,
                       [step](std::uint64_t k) { return step / 2 + k * step; });
  if (!read) return key_spread::unknown;
  std::vector<std::uint64_t>& sample = *read;
  // In order (or in reverse order) before the estimate sorts the sample.
  const bool monotone = std::is_sorted(sample.begin(), sample.end()) ||
                        std::is_sorted(sample.begin(), sample.end(), std::greater<>{});
  const gpu::hrs_round_estimate estimate = gpu::estimate_hrs_rounds(
      sample, format.key_size * 8, spread_reference_records, spread_local_threshold);
  if (estimate.scatter_rounds <= few_distinct_rounds) return key_spread::few_distinct;
  if (estimate.scatter_rounds >= skewed_rounds) return key_spread::skewed;
  return monotone || estimate.scatter_rounds >= patterned_rounds ? key_spread::patterned
                                                                 : key_spread::even;
}

}  // namespace gpusort::pipeline
