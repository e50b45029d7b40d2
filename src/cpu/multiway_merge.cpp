// Parallel multiway merge: cuts the output into parts by multi-sequence selection and merges each
// part on its own TBB task (copy, two-way merge or loser tree, by how many runs it touches; the
// vector merge of cpu/merge_vector.hpp for 64-bit keys alone or with an 8-byte payload, and for
// 32-bit keys alone).
#include "cpu/multiway_merge.hpp"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

#include "core/parallel_copy.hpp"
#include "cpu/merge_keys.hpp"
#include "cpu/merge_loser_tree.hpp"
#include "cpu/merge_select.hpp"
#include "cpu/merge_vector.hpp"
#include "gpusort/error.hpp"

namespace gpusort::cpu {
namespace {

using detail::bytes_keys;
using detail::record_stride;
using detail::run_slice;
using detail::with_keys;
using detail::word_keys;

/// Checks the runs and the format; returns the total record count.
std::uint64_t check_runs(std::span<const run_view> runs, const record_format& format) {
  format.validate();
  GPUSORT_EXPECTS(runs.size() < (std::size_t{1} << 30),
                  "multiway merge: too many runs (" + std::to_string(runs.size()) + ")");
  std::uint64_t total = 0;
  for (std::size_t j = 0; j < runs.size(); ++j) {
    GPUSORT_EXPECTS(runs[j].count == 0 || runs[j].data != nullptr,
                    "multiway merge: run " + std::to_string(j) + " has " +
                        std::to_string(runs[j].count) + " records but no data");
    total += runs[j].count;
  }
  return total;
}

/// Calls f(keys, stride) with the key policy and record stride of `format`. Fixed-size strides
/// only for the layouts that dominate (key-only u32/u64 and 16-byte records with a 64-bit key),
/// where moving a record as a constant-size copy is worth an instantiation.
template <typename F>
void with_layout(const record_format& format, bool descending, F&& f) {
  const std::uint32_t size = format.record_size;
  if (format.type == key_type::bytes) {
    f(bytes_keys(format, descending), record_stride<0>{size});
  } else if (gpusort::detail::has_32bit_word(format.type)) {
    const word_keys<std::uint32_t> keys(format, descending);
    if (size == 4) f(keys, record_stride<4>{});
    else f(keys, record_stride<0>{size});
  } else {
    const word_keys<std::uint64_t> keys(format, descending);
    if (size == 8) f(keys, record_stride<8>{});
    else if (size == 16) f(keys, record_stride<16>{});
    else f(keys, record_stride<0>{size});
  }
}

/// The vector merge's layout for `format` under `policy`, where it applies.
std::optional<detail::vector_layout> vector_layout_for(const record_format& format,
                                                       const merge_policy& policy) noexcept {
  if (!policy.vector || !detail::vector_merge_supported()) return std::nullopt;
  if (format.type == key_type::bytes) return std::nullopt;
  if (gpusort::detail::has_32bit_word(format.type)) {
    if (format.record_size == 4) return detail::vector_layout::key32;
    return std::nullopt;
  }
  if (format.record_size == 8) return detail::vector_layout::key;
  if (format.record_size != 16) return std::nullopt;
  if (format.key_offset == 0) return detail::vector_layout::key_value;
  if (format.key_offset == 8) return detail::vector_layout::value_key;
  return std::nullopt;
}

/// A task's scratch memory for the vector merge: kept across the parts the task merges, 64-byte
/// aligned, grown on demand.
class vector_scratch {
 public:
  std::byte* get(std::size_t bytes) {
    if (bytes > size_) {
      const std::size_t rounded = (bytes + 63) / 64 * 64;
      memory_.reset(static_cast<std::byte*>(std::aligned_alloc(64, rounded)));
      if (!memory_) throw std::bad_alloc();
      size_ = rounded;
    }
    return memory_.get();
  }

 private:
  struct free_memory {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte, free_memory> memory_;
  std::size_t size_ = 0;
};

/// Whether the vector merge may take these slices: 16-byte records are padded with the all-ones
/// normalized key, which no record of theirs may hold (a run's largest key is its last).
/// Records of one word may: the padding word equals any of them that it equals.
template <typename Keys>
bool vector_merge_allowed(const Keys& keys, detail::vector_layout layout,
                          std::span<const run_slice> slices) {
  if (layout != detail::vector_layout::key_value && layout != detail::vector_layout::value_key)
    return true;
  const std::uint32_t size = 16;
  return std::none_of(slices.begin(), slices.end(), [&](const run_slice& s) {
    return keys.load(s.end - size) == ~std::uint64_t{0};
  });
}

/// Records merged by the loser tree past a tie before the vector merge takes over again.
constexpr std::uint64_t tie_stretch_records = std::uint64_t{1} << 14;

/// Merges one part (`count` records of `slices`) into `out` with the vector merge. Where
/// records with a payload and equal keys meet, `merge_stable` (the loser tree) merges the
/// next tie_stretch_records from there, cut by the same stable selection as the parts, and the
/// vector merge goes on after them; where ties come sooner than that, it merges the rest.
template <typename Keys, typename StableMerge>
void merge_part_with_vectors(const Keys& keys, std::uint32_t record_size,
                             detail::vector_layout layout, std::span<const run_slice> slices,
                             std::uint64_t count, std::byte* out, vector_scratch& scratch,
                             const StableMerge& merge_stable) {
  const detail::vector_key_masks masks{keys.codec.sign_mask, keys.codec.float_mask,
                                       keys.codec.order_mask};
  std::vector<run_view> views;
  for (const run_slice& s : slices)
    views.push_back({s.begin, static_cast<std::uint64_t>(s.end - s.begin) / record_size});
  std::vector<std::uint64_t> from(views.size(), 0);  // the runs' cuts at rank `done`
  std::vector<std::uint64_t> to(views.size(), 0);
  auto slices_between = [&](std::span<const std::uint64_t> lo, std::span<const std::uint64_t> hi) {
    std::vector<run_slice> s;
    for (std::size_t j = 0; j < views.size(); ++j)
      if (hi[j] > lo[j])
        s.push_back({views[j].data + lo[j] * record_size, views[j].data + hi[j] * record_size});
    return s;
  };
  std::uint64_t done = 0;
  while (done < count) {
    std::vector<detail::vector_input> inputs;
    for (std::size_t j = 0; j < views.size(); ++j)
      if (views[j].count > from[j])
        inputs.push_back({views[j].data + from[j] * record_size, views[j].count - from[j]});
    if (inputs.size() < 2) {
      for (std::size_t j = 0; j < views.size(); ++j) to[j] = views[j].count;
      merge_stable(slices_between(from, to), out + done * record_size);
      return;
    }
    const std::uint64_t final = detail::vector_merge(
        inputs.data(), inputs.size(), out + done * record_size, count - done, layout, masks,
        scratch.get(detail::vector_merge_scratch_bytes(inputs.size(), layout)));
    done += final;
    if (done == count) return;
    const std::uint64_t stretch =
        final < tie_stretch_records ? count - done : std::min(count - done, tie_stretch_records);
    detail::select_cuts_into(keys, std::span<const run_view>(views), record_size, done, from);
    detail::select_cuts_into(keys, std::span<const run_view>(views), record_size,
                             done + stretch, to);
    merge_stable(slices_between(from, to), out + done * record_size);
    done += stretch;
    from = to;
  }
}

template <typename Keys, std::uint32_t RecordSize>
void merge_parts(const Keys& keys, record_stride<RecordSize> stride,
                 std::span<const run_view> runs, std::uint64_t rank_begin,
                 std::uint64_t rank_end, std::byte* dst, std::uint64_t parts,
                 std::optional<detail::vector_layout> vector) {
  const std::size_t k = runs.size();
  const std::uint64_t n = rank_end - rank_begin;
  const std::uint32_t record_size = stride.size();

  // Part p covers ranks [ranks[p], ranks[p+1]), all parts within one record of equal size.
  std::vector<std::uint64_t> ranks(parts + 1);
  for (std::uint64_t p = 0; p <= parts; ++p)
    ranks[p] = rank_begin + (n / parts) * p + (n % parts) * p / parts;

  std::vector<std::uint64_t> cuts((parts + 1) * k);
  tbb::parallel_for(std::uint64_t{0}, parts + 1, [&](std::uint64_t p) {
    detail::select_cuts_into(keys, runs, record_size, ranks[p],
                             std::span<std::uint64_t>(cuts.data() + p * k, k));
  });

  // All output from one run (already sorted input, or all other runs empty): a plain copy.
  std::size_t sources = 0;
  std::size_t source = 0;
  for (std::size_t j = 0; j < k; ++j) {
    if (cuts[parts * k + j] > cuts[j]) {
      ++sources;
      source = j;
    }
  }
  if (sources == 1) {
    gpusort::detail::parallel_copy(dst, runs[source].data + cuts[source] * record_size,
                                   n * record_size);
    return;
  }

  // The non-empty slices of part p, in run order.
  auto part_slices = [&](std::uint64_t p) {
    std::vector<run_slice> slices;
    slices.reserve(k);
    for (std::size_t j = 0; j < k; ++j) {
      const std::uint64_t lo = cuts[p * k + j];
      const std::uint64_t hi = cuts[(p + 1) * k + j];
      if (hi > lo)
        slices.push_back({runs[j].data + lo * record_size, runs[j].data + hi * record_size});
    }
    return slices;
  };
  auto part_dst = [&](std::uint64_t p) { return dst + (ranks[p] - rank_begin) * record_size; };
  auto merge_part = [&](const std::vector<run_slice>& slices, std::byte* out) {
    if (slices.size() == 1) {
      std::memcpy(out, slices[0].begin, static_cast<std::size_t>(slices[0].end - slices[0].begin));
    } else if (slices.size() == 2) {
      detail::merge_two(keys, stride, slices[0], slices[1], out);
    } else if (slices.size() > 2) {
      detail::merge_loser_tree(keys, stride, std::span<const run_slice>(slices), out);
    }
  };
  // The vector merge's layouts: u64 records of 8 or 16 bytes, u32 records of 4.
  constexpr bool vector_stride =
      (std::is_same_v<Keys, word_keys<std::uint64_t>> && (RecordSize == 8 || RecordSize == 16)) ||
      (std::is_same_v<Keys, word_keys<std::uint32_t>> && RecordSize == 4);
  if constexpr (vector_stride) {
    if (vector) {
      tbb::enumerable_thread_specific<vector_scratch> scratch;
      tbb::parallel_for(std::uint64_t{0}, parts, [&](std::uint64_t p) {
        const std::vector<run_slice> slices = part_slices(p);
        if (slices.size() >= 2 && slices.size() <= detail::vector_merge_max_runs &&
            vector_merge_allowed(keys, *vector, slices)) {
          merge_part_with_vectors(keys, record_size, *vector, slices, ranks[p + 1] - ranks[p],
                                  part_dst(p), scratch.local(), merge_part);
          return;
        }
        merge_part(slices, part_dst(p));
      });
      return;
    }
  }
  // One task per two neighbouring parts: two merges stepped in turn run faster than one after
  // the other. Parts are about equal in size, so tasks are too.
  const std::uint64_t pairs = (parts + 1) / 2;
  tbb::parallel_for(
      tbb::blocked_range<std::uint64_t>(0, pairs, 1),
      [&](const tbb::blocked_range<std::uint64_t>& r) {
        for (std::uint64_t pair = r.begin(); pair != r.end(); ++pair) {
          const std::uint64_t p = 2 * pair;
          const std::vector<run_slice> first = part_slices(p);
          if (p + 1 == parts) {
            merge_part(first, part_dst(p));
            continue;
          }
          const std::vector<run_slice> second = part_slices(p + 1);
          if (first.size() > 2 && second.size() > 2) {
            detail::loser_tree<Keys, RecordSize> a(keys, stride, first, part_dst(p));
            detail::loser_tree<Keys, RecordSize> b(keys, stride, second, part_dst(p + 1));
            detail::run_interleaved(a, b);
          } else if (first.size() == 2 && second.size() == 2) {
            detail::two_way_merge<Keys, RecordSize> a(keys, stride, first[0], first[1],
                                                      part_dst(p));
            detail::two_way_merge<Keys, RecordSize> b(keys, stride, second[0], second[1],
                                                      part_dst(p + 1));
            detail::run_interleaved(a, b);
          } else {
            merge_part(first, part_dst(p));
            merge_part(second, part_dst(p + 1));
          }
        }
      },
      tbb::simple_partitioner{});
}

}  // namespace

std::vector<std::uint64_t> select_cuts(std::span<const run_view> runs, std::uint64_t rank,
                                       const record_format& format, bool descending) {
  const std::uint64_t total = check_runs(runs, format);
  GPUSORT_EXPECTS(rank <= total, "select_cuts: rank " + std::to_string(rank) +
                                     " is beyond the " + std::to_string(total) + " records");
  std::vector<std::uint64_t> cuts(runs.size());
  with_keys(format, descending, [&](const auto& keys) {
    detail::select_cuts_into(keys, runs, format.record_size, rank, std::span<std::uint64_t>(cuts));
  });
  return cuts;
}

std::uint64_t merge_part_count(std::uint64_t count, std::size_t runs) {
  // A selection costs about runs * log^2(total) random reads; keep it well below the part's
  // merge work.
  const std::uint64_t min_part = std::max<std::uint64_t>(std::uint64_t{1} << 16,
                                                         std::uint64_t{1024} * runs);
  // The arena's size ignores a tbb::global_control cap (--parallel); the cap ignores the arena.
  const auto threads = static_cast<std::uint64_t>(std::min<std::size_t>(
      static_cast<std::size_t>(tbb::this_task_arena::max_concurrency()),
      tbb::global_control::active_value(tbb::global_control::max_allowed_parallelism)));
  // Sixteen parts a thread rather than four: parts merge at different speeds (threads share
  // cores and the memory bus), and with four the last wave left threads idle. H200 host, 16
  // threads, 64 runs, medians of 5 paired rounds: 8-byte records 16.6 -> 18.1 GB/s, 16-byte
  // 15.0 -> 17.4, 100-byte 26.3 -> 30.3; 16 runs of 8 bytes 24.4 -> 26.2. 64 a thread gained
  // less: its cuts cost more (tools/bench/results/2026-11-29-h200-merge-parts).
  return std::clamp<std::uint64_t>(count / min_part, 1, 16 * threads);
}

void merge_ranks(std::span<const run_view> runs, std::uint64_t rank_begin,
                 std::uint64_t rank_end, std::byte* dst, const record_format& format,
                 bool descending, const merge_policy& policy) {
  const std::uint64_t count = rank_end >= rank_begin ? rank_end - rank_begin : 0;
  merge_ranks_in_parts(runs, rank_begin, rank_end, dst, format, descending,
                       merge_part_count(count, runs.size()), policy);
}

bool merges_with_vectors(const record_format& format, const merge_policy& policy) noexcept {
  return vector_layout_for(format, policy).has_value();
}

void merge_ranks_in_parts(std::span<const run_view> runs, std::uint64_t rank_begin,
                          std::uint64_t rank_end, std::byte* dst, const record_format& format,
                          bool descending, std::uint64_t parts, const merge_policy& policy) {
  const std::uint64_t total = check_runs(runs, format);
  GPUSORT_EXPECTS(rank_begin <= rank_end && rank_end <= total,
                  "merge_ranks: ranks [" + std::to_string(rank_begin) + ", " +
                      std::to_string(rank_end) + ") are not within the " +
                      std::to_string(total) + " records");
  GPUSORT_EXPECTS(parts >= 1, "merge_ranks: needs at least one part");
  const std::uint64_t n = rank_end - rank_begin;
  if (n == 0) return;
  GPUSORT_EXPECTS(dst != nullptr, "merge_ranks: no output buffer");
  // Empty parts are harmless, but there is no point in more parts than records; the cap also
  // keeps (n % parts) * p from overflowing.
  parts = std::min({parts, n, std::uint64_t{1} << 24});
  const std::optional<detail::vector_layout> vector = vector_layout_for(format, policy);
  with_layout(format, descending, [&](const auto& keys, auto stride) {
    merge_parts(keys, stride, runs, rank_begin, rank_end, dst, parts, vector);
  });
}

}  // namespace gpusort::cpu
