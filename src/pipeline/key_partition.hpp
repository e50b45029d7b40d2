// Strategy gpu_partition's first step: the key space cut into key ranges of at most one GPU
// chunk each, and every range's exact place in the output, before any record moves. Splitters
// drawn from a sample of the keys bound the buckets; one pass over the input counts every bucket
// exactly; consecutive buckets make the ranges. A key that alone fills more than a chunk gets a
// range of its own, which needs no sort.
#pragma once

#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "gpusort/record_format.hpp"

namespace gpusort::pipeline {

/// Keys read from records as unsigned numbers in the order of the sort (detail::key_codec):
/// 4- and 8-byte numeric keys, ascending or descending.
class key_reader {
 public:
  key_reader(const record_format& format, bool descending);
  [[nodiscard]] std::uint64_t operator()(const std::byte* record) const noexcept;
  /// 32 or 64.
  [[nodiscard]] unsigned key_bits() const noexcept { return key_bits_; }
  [[nodiscard]] const record_format& format() const noexcept { return format_; }
  [[nodiscard]] bool descending() const noexcept { return descending_; }

 private:
  record_format format_;
  bool descending_;
  unsigned key_bits_;
};

/// Which bucket a key falls in, for splitters s_0 < s_1 < ... < s_{m-1}: bucket 2j holds the
/// keys strictly between s_{j-1} and s_j (below s_0 for j = 0, above s_{m-1} for j = m), bucket
/// 2j + 1 the keys equal to s_j. Two searches, chosen by how the splitters lie:
/// - a table over the keys' top 16 bits, where no slot holds more than a few splitters (keys
///   spread over the key space): one lookup a key where its slot holds none;
/// - else (keys crowded at some values, as AND-ed words are) the splitters as a complete
///   binary tree laid out level by level, searched without branches for several keys at once
///   (as IPS4o classifies), which costs the same for any keys.
/// Counting 2^31 u64 keys on the H200 machine's 16 cores: the table 0.9 s on uniform keys and
/// 7.3 s on AND-ed ones (searching its crowded slots); the tree 1.7-2.2 s on either
/// (tools/bench/results/2026-11-29-h200-partition).
class bucket_classifier {
 public:
  /// Keys classified together by buckets_of.
  static constexpr std::size_t batch = 8;
  /// The most splitters in one slot for which the table is used.
  static constexpr std::uint32_t table_slot_max = 8;

  /// `splitters` ascending, without repeats; `key_bits`: 32 or 64.
  bucket_classifier(std::vector<std::uint64_t> splitters, unsigned key_bits);
  [[nodiscard]] std::size_t buckets() const noexcept { return 2 * splitters_.size() - 1; }
  /// True where the table searches, false where the tree does.
  [[nodiscard]] bool by_table() const noexcept { return by_table_; }
  [[nodiscard]] std::size_t bucket(std::uint64_t key) const noexcept {
    std::uint64_t keys[batch] = {key};
    std::size_t out[batch];
    buckets_of(keys, out);
    return out[0];
  }
  /// out[u] = bucket(keys[u]) for a batch.
  void buckets_of(const std::uint64_t (&keys)[batch], std::size_t (&out)[batch]) const noexcept {
    const std::uint64_t* s = splitters_.data();
    const std::size_t m = splitters_.size() - 1;  // without the extra entry
    std::size_t at[batch];
    if (by_table_) {
      // Splitters before the slot's first are below the key, those after its last above.
      for (std::size_t u = 0; u < batch; ++u) {
        const std::uint64_t slot = keys[u] >> shift_;
        std::uint32_t j = first_[slot];
        const std::uint32_t end = first_[slot + 1];
        while (j < end && s[j] < keys[u]) ++j;
        at[u] = j;
      }
    } else {
      // Down the tree: right where the key is above the node. The leaf reached counts the
      // (padded) splitters below the key.
      const std::uint64_t* tree = tree_.data();
      for (std::size_t u = 0; u < batch; ++u) at[u] = 1;
      for (unsigned level = 0; level < levels_; ++level)
        for (std::size_t u = 0; u < batch; ++u)
          at[u] = 2 * at[u] + static_cast<std::size_t>(keys[u] > tree[at[u]]);
      for (std::size_t u = 0; u < batch; ++u)
        at[u] = std::min(at[u] - (std::size_t{1} << levels_), m);
    }
    // Entry m of s (a copy of the last splitter, or 0) keeps the load in bounds.
    for (std::size_t u = 0; u < batch; ++u)
      out[u] = 2 * at[u] + static_cast<std::size_t>((at[u] < m) & (s[at[u]] == keys[u]));
  }
  [[nodiscard]] std::span<const std::uint64_t> splitters() const noexcept {
    return std::span<const std::uint64_t>(splitters_).first(splitters_.size() - 1);
  }

 private:
  static constexpr unsigned table_bits = 16;
  std::vector<std::uint64_t> splitters_;  // then one more entry (see buckets_of)
  unsigned shift_;
  /// first_[b]: the first splitter whose top bits are b or more; b = 2^16 is past the last.
  std::vector<std::uint32_t> first_;
  bool by_table_ = true;
  unsigned levels_ = 0;
  /// Node i's children are 2i and 2i + 1 (node 1 the root); the splitters past the last
  /// repeat it, to fill the tree.
  std::vector<std::uint64_t> tree_;
};

/// Splitters for `records` cut into key ranges of at most `chunk_records`: sixteen per range
/// expected, so that a range of one chunk gathers many buckets and comes out nearly full; at
/// least 511, at most 16383 (one less than a power of two fills the classifier's tree; the
/// sample grows with them).
[[nodiscard]] std::size_t partition_splitters(std::uint64_t records, std::uint64_t chunk_records);
/// Keys sampled per splitter.
inline constexpr std::size_t partition_sample_per_splitter = 32;
/// The record that sampled key `k` of `count` comes from, of `records`: one in each of `count`
/// equal strides, at a place within it hashed from k, so that no stride pattern of the input
/// lines up with the sample.
[[nodiscard]] std::uint64_t sample_position(std::uint64_t k, std::uint64_t count,
                                            std::uint64_t records) noexcept;

/// Splitters from a sample of keys: at most `max_splitters` at even ranks of the sorted sample,
/// repeats dropped (a key the sample holds many times becomes one splitter, and so a bucket of
/// its own).
[[nodiscard]] std::vector<std::uint64_t> choose_splitters(std::vector<std::uint64_t> sample,
                                                         std::size_t max_splitters);

/// Records per bucket of `classes` among `records` (whole records of `keys.format()`), counted
/// in parallel in `arena`.
[[nodiscard]] std::vector<std::uint64_t> count_buckets(std::span<const std::byte> records,
                                                       const key_reader& keys,
                                                       const bucket_classifier& classes,
                                                       tbb::task_arena& arena);

/// Where a key range begins in sorted records: at the first whose key is above `key` (`after`),
/// or is `key` or above.
struct range_start {
  std::uint64_t key = 0;
  bool after = false;
  [[nodiscard]] bool before(std::uint64_t k) const noexcept { return after ? k <= key : k < key; }
};

/// One key range: its records' place in the output, and where it begins in a sorted run.
struct key_range {
  std::uint64_t first_record = 0;
  std::uint64_t records = 0;
  range_start start;     ///< not used for the first range, which begins every run
  bool one_key = false;  ///< every record holds one key: in its final order once partitioned
};

/// Groups consecutive buckets (counts of `classes`' buckets) into key ranges of at most
/// `max_records` each, every range holding records. nullopt where a bucket between two
/// splitters alone holds more than `max_records` (the sample missed a dense key range); a
/// bucket of one key that does becomes a range of its own, marked one_key.
[[nodiscard]] std::optional<std::vector<key_range>> group_ranges(
    const bucket_classifier& classes, std::span<const std::uint64_t> counts,
    std::uint64_t max_records);

/// The number of the sorted `count` records at `records` that come before range `start`.
[[nodiscard]] std::uint64_t records_before(const std::byte* records, std::uint64_t count,
                                           const key_reader& keys, const range_start& start);

}  // namespace gpusort::pipeline
