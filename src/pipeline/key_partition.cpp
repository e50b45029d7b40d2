#include "pipeline/key_partition.hpp"

#include <tbb/blocked_range.h>
#include <tbb/combinable.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <limits>

#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"

namespace gpusort::pipeline {
namespace {

/// Records one counting task reads: large enough that merging its counts costs nothing.
constexpr std::uint64_t count_grain = std::uint64_t{1} << 20;

template <typename Word>
void count_block(const std::byte* records, std::uint64_t count, const record_format& format,
                 bool descending, const bucket_classifier& classes, std::uint64_t* counts) {
  constexpr std::size_t batch = bucket_classifier::batch;
  const auto codec = detail::make_key_codec<Word>(format.type, descending);
  const std::byte* key = records + format.key_offset;
  std::uint64_t keys[batch];
  std::size_t buckets[batch];
  std::uint64_t i = 0;
  for (; i + batch <= count; i += batch) {
    for (std::size_t u = 0; u < batch; ++u, key += format.record_size)
      keys[u] = codec.normalize(detail::load_word<Word>(key));
    classes.buckets_of(keys, buckets);
    for (std::size_t u = 0; u < batch; ++u) ++counts[buckets[u]];
  }
  for (; i < count; ++i, key += format.record_size)
    ++counts[classes.bucket(codec.normalize(detail::load_word<Word>(key)))];
}

}  // namespace

key_reader::key_reader(const record_format& format, bool descending)
    : format_(format),
      descending_(descending),
      key_bits_(format.key_size == sizeof(std::uint32_t) ? 32 : 64) {
  GPUSORT_EXPECTS(format.type != key_type::bytes && (format.key_size == sizeof(std::uint32_t) ||
                                                     format.key_size == sizeof(std::uint64_t)),
                  "key_reader: " + describe(format) + " has no 4- or 8-byte numeric key");
}

std::uint64_t key_reader::operator()(const std::byte* record) const noexcept {
  const std::byte* key = record + format_.key_offset;
  if (key_bits_ == 32) {
    return detail::make_key_codec<std::uint32_t>(format_.type, descending_)
        .normalize(detail::load_word<std::uint32_t>(key));
  }
  return detail::make_key_codec<std::uint64_t>(format_.type, descending_)
      .normalize(detail::load_word<std::uint64_t>(key));
}

bucket_classifier::bucket_classifier(std::vector<std::uint64_t> splitters, unsigned key_bits)
    : splitters_(std::move(splitters)), shift_(key_bits - table_bits) {
  GPUSORT_EXPECTS(key_bits == 32 || key_bits == 64, "bucket_classifier: keys of 32 or 64 bits");
  GPUSORT_EXPECTS(std::adjacent_find(splitters_.begin(), splitters_.end(),
                                     std::greater_equal<>{}) == splitters_.end(),
                  "bucket_classifier: splitters not ascending");
  GPUSORT_EXPECTS(splitters_.size() < std::numeric_limits<std::uint32_t>::max(),
                  "bucket_classifier: too many splitters");
  const std::size_t m = splitters_.size();
  GPUSORT_EXPECTS(m == 0 || (splitters_.back() >> shift_) < (std::uint64_t{1} << table_bits),
                  "bucket_classifier: a splitter wider than the keys");
  const std::uint32_t slots = std::uint32_t{1} << table_bits;
  first_.resize(std::size_t{slots} + 1);
  std::uint32_t j = 0;
  for (std::uint32_t b = 0; b <= slots; ++b) {
    while (j < m && (splitters_[j] >> shift_) < b) ++j;
    first_[b] = j;
    if (b > 0 && first_[b] - first_[b - 1] > table_slot_max) by_table_ = false;
  }
  if (!by_table_) {
    while ((std::size_t{1} << levels_) < m + 1) ++levels_;
    const std::size_t nodes = std::size_t{1} << levels_;  // node 0 unused
    tree_.assign(nodes, 0);
    // In-order over the tree: its nodes take the splitters in ascending order.
    std::size_t next = 0;
    const auto fill = [&](auto& self, std::size_t node) -> void {
      if (node >= nodes) return;
      self(self, 2 * node);
      tree_[node] = splitters_[std::min(next++, m - 1)];
      self(self, 2 * node + 1);
    };
    fill(fill, 1);
  }
  splitters_.push_back(m == 0 ? 0 : splitters_.back());
}

std::size_t partition_splitters(std::uint64_t records, std::uint64_t chunk_records) {
  const std::uint64_t ranges = (records + std::max<std::uint64_t>(chunk_records, 1) - 1) /
                               std::max<std::uint64_t>(chunk_records, 1);
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(16 * ranges, 511, 16383));
}

std::uint64_t sample_position(std::uint64_t k, std::uint64_t count,
                              std::uint64_t records) noexcept {
  std::uint64_t h = (k + 1) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 31;
  const std::uint64_t stride =
      std::max<std::uint64_t>(1, records / std::max<std::uint64_t>(count, 1));
  return std::min(records - 1, records * k / count + h % stride);
}

std::vector<std::uint64_t> choose_splitters(std::vector<std::uint64_t> sample,
                                            std::size_t max_splitters) {
  std::sort(sample.begin(), sample.end());
  std::vector<std::uint64_t> splitters;
  if (sample.empty() || max_splitters == 0) return splitters;
  const std::size_t n = std::min(max_splitters, sample.size());
  splitters.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Ranks (i + 1/2) / n of the sample: its least and greatest keys are splitters only where
    // they repeat enough to reach those ranks.
    const std::uint64_t key = sample[(2 * i + 1) * sample.size() / (2 * n)];
    if (splitters.empty() || splitters.back() != key) splitters.push_back(key);
  }
  return splitters;
}

std::vector<std::uint64_t> count_buckets(std::span<const std::byte> records,
                                         const key_reader& keys,
                                         const bucket_classifier& classes,
                                         tbb::task_arena& arena) {
  const record_format& format = keys.format();
  const std::uint64_t count = records.size() / format.record_size;
  tbb::combinable<std::vector<std::uint64_t>> partial(
      [&] { return std::vector<std::uint64_t>(classes.buckets(), 0); });
  arena.execute([&] {
    tbb::parallel_for(
        tbb::blocked_range<std::uint64_t>(0, count, count_grain),
        [&](const tbb::blocked_range<std::uint64_t>& r) {
          const std::byte* first = records.data() + r.begin() * format.record_size;
          std::uint64_t* counts = partial.local().data();
          if (keys.key_bits() == 32)
            count_block<std::uint32_t>(first, r.size(), format, keys.descending(), classes,
                                       counts);
          else
            count_block<std::uint64_t>(first, r.size(), format, keys.descending(), classes,
                                       counts);
        });
  });
  std::vector<std::uint64_t> total(classes.buckets(), 0);
  partial.combine_each([&](const std::vector<std::uint64_t>& c) {
    for (std::size_t b = 0; b < c.size(); ++b) total[b] += c[b];
  });
  return total;
}

std::optional<std::vector<key_range>> group_ranges(const bucket_classifier& classes,
                                                   std::span<const std::uint64_t> counts,
                                                   std::uint64_t max_records) {
  GPUSORT_EXPECTS(counts.size() == classes.buckets(), "group_ranges: counts of other buckets");
  GPUSORT_EXPECTS(max_records > 0, "group_ranges: ranges of no records");
  const std::span<const std::uint64_t> s = classes.splitters();
  // Where bucket b begins in a sorted run: above s_{j-1} for 2j, at s_j for 2j + 1.
  const auto start_of = [&](std::size_t b) {
    return b % 2 == 1 ? range_start{s[b / 2], false} : range_start{s[b / 2 - 1], true};
  };
  std::vector<key_range> ranges;
  std::uint64_t placed = 0;
  std::size_t filled_buckets = 0;  // buckets with records in the open range
  for (std::size_t b = 0; b < counts.size(); ++b) {
    const std::uint64_t n = counts[b];
    if (n == 0) continue;
    const bool equal_bucket = b % 2 == 1;
    if (n > max_records && !equal_bucket) return std::nullopt;
    if (ranges.empty() || ranges.back().records + n > max_records) {
      key_range next;
      next.first_record = placed;
      if (!ranges.empty()) next.start = start_of(b);
      ranges.push_back(next);
      filled_buckets = 0;
    }
    key_range& range = ranges.back();
    range.records += n;
    placed += n;
    range.one_key = ++filled_buckets == 1 && equal_bucket;
  }
  return ranges;
}

std::uint64_t records_before(const std::byte* records, std::uint64_t count,
                             const key_reader& keys, const range_start& start) {
  const std::uint32_t size = keys.format().record_size;
  std::uint64_t lo = 0;
  std::uint64_t hi = count;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (start.before(keys(records + mid * size))) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace gpusort::pipeline
