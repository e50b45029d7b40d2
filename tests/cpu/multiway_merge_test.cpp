// Tests of the parallel multiway merge: output against a stable-sort oracle for every key type and
// layout, stability, sub-ranges, and the invariants of multi-sequence selection.
#include "cpu/multiway_merge.hpp"

#include <gtest/gtest.h>
#include <tbb/global_control.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"
#include "test_support.hpp"

namespace gpusort::cpu {
namespace {

/// The oracle's key order: three-way comparison of two records' keys.
class key_order {
 public:
  key_order(const record_format& format, bool descending)
      : format_(format),
        descending_(descending),
        codec32_(gpusort::detail::make_key_codec<std::uint32_t>(format.type, descending)),
        codec64_(gpusort::detail::make_key_codec<std::uint64_t>(format.type, descending)) {}

  [[nodiscard]] int compare(const std::byte* a, const std::byte* b) const {
    const std::byte* ka = a + format_.key_offset;
    const std::byte* kb = b + format_.key_offset;
    if (format_.type == key_type::bytes) {
      const int c = std::memcmp(ka, kb, format_.key_size);
      const int sign = (c > 0) - (c < 0);
      return descending_ ? -sign : sign;
    }
    if (format_.key_size == 4) {
      const std::uint32_t x = codec32_.normalize(gpusort::detail::load_word<std::uint32_t>(ka));
      const std::uint32_t y = codec32_.normalize(gpusort::detail::load_word<std::uint32_t>(kb));
      return (x > y) - (x < y);
    }
    const std::uint64_t x = codec64_.normalize(gpusort::detail::load_word<std::uint64_t>(ka));
    const std::uint64_t y = codec64_.normalize(gpusort::detail::load_word<std::uint64_t>(kb));
    return (x > y) - (x < y);
  }

 private:
  record_format format_;
  bool descending_;
  gpusort::detail::key_codec<std::uint32_t> codec32_;
  gpusort::detail::key_codec<std::uint64_t> codec64_;
};

/// Sorted runs stored back to back in one buffer.
struct run_set {
  record_format format;
  std::vector<std::byte> data;
  std::vector<std::uint64_t> first;  ///< index of each run's first record in `data`
  std::vector<std::uint64_t> count;

  [[nodiscard]] std::vector<run_view> views() const {
    std::vector<run_view> v(count.size());
    for (std::size_t j = 0; j < v.size(); ++j)
      v[j] = {count[j] == 0 ? nullptr : data.data() + first[j] * format.record_size, count[j]};
    return v;
  }
  [[nodiscard]] std::uint64_t total() const {
    return std::accumulate(count.begin(), count.end(), std::uint64_t{0});
  }
  [[nodiscard]] const std::byte* record(std::uint64_t i) const {
    return data.data() + i * format.record_size;
  }
};

/// Stable-sorts `n` records starting at `records` by key, in place.
void stable_sort_records(std::byte* records, std::uint64_t n, const record_format& format,
                         bool descending) {
  const key_order order(format, descending);
  const std::uint32_t size = format.record_size;
  std::vector<std::uint64_t> index(n);
  std::iota(index.begin(), index.end(), std::uint64_t{0});
  std::stable_sort(index.begin(), index.end(), [&](std::uint64_t a, std::uint64_t b) {
    return order.compare(records + a * size, records + b * size) < 0;
  });
  std::vector<std::byte> sorted(n * size);
  for (std::uint64_t i = 0; i < n; ++i)
    std::memcpy(sorted.data() + i * size, records + index[i] * size, size);
  if (n != 0) std::memcpy(records, sorted.data(), sorted.size());
}

/// Splits `records` into `runs` runs of random sizes (about a quarter of them empty) and sorts
/// each run.
run_set make_runs(std::vector<std::byte> records, const record_format& format, bool descending,
                  std::size_t runs, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::uint64_t total = records.size() / format.record_size;
  std::vector<std::uint64_t> bounds = {0};
  for (std::size_t j = 1; j < runs; ++j) bounds.push_back(rng() % (total + 1));
  bounds.push_back(total);
  std::sort(bounds.begin(), bounds.end());
  for (std::size_t j = 1; j < runs; ++j)
    if (rng() % 4 == 0) bounds[j] = bounds[j - 1];  // an empty run
  run_set set{format, std::move(records), {}, {}};
  for (std::size_t j = 0; j < runs; ++j) {
    set.first.push_back(bounds[j]);
    set.count.push_back(bounds[j + 1] - bounds[j]);
    stable_sort_records(set.data.data() + bounds[j] * format.record_size, set.count.back(),
                        format, descending);
  }
  return set;
}

/// The stable merge of the runs: the runs back to back, stable-sorted.
std::vector<std::byte> reference_merge(const run_set& set, bool descending) {
  std::vector<std::byte> out = set.data;
  stable_sort_records(out.data(), set.total(), set.format, descending);
  return out;
}

::testing::AssertionResult same_records(const std::vector<std::byte>& expected,
                                        const std::byte* actual, std::uint64_t first,
                                        std::uint64_t count, std::uint32_t record_size) {
  for (std::uint64_t i = 0; i < count; ++i) {
    if (std::memcmp(expected.data() + (first + i) * record_size, actual + i * record_size,
                    record_size) != 0)
      return ::testing::AssertionFailure()
             << "record at rank " << (first + i) << " differs (of ranks [" << first << ", "
             << first + count << "))";
  }
  return ::testing::AssertionSuccess();
}

/// The cuts of the stable merge order at every rank in `ranks` (ascending), by brute force:
/// the runs' records ordered by (key, run, index).
std::vector<std::vector<std::uint64_t>> reference_cuts(const run_set& set, bool descending,
                                                       const std::vector<std::uint64_t>& ranks) {
  const key_order order(set.format, descending);
  std::vector<std::pair<std::uint32_t, std::uint64_t>> all;  // (run, record)
  for (std::size_t j = 0; j < set.count.size(); ++j)
    for (std::uint64_t i = 0; i < set.count[j]; ++i)
      all.emplace_back(static_cast<std::uint32_t>(j), set.first[j] + i);
  std::stable_sort(all.begin(), all.end(), [&](const auto& a, const auto& b) {
    return order.compare(set.record(a.second), set.record(b.second)) < 0;
  });
  std::vector<std::vector<std::uint64_t>> result;
  std::vector<std::uint64_t> cuts(set.count.size(), 0);
  std::uint64_t taken = 0;
  for (const std::uint64_t r : ranks) {
    while (taken < r) ++cuts[all[taken++].first];
    result.push_back(cuts);
  }
  return result;
}

struct layout_case {
  const char* name;
  const char* type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
};

record_format make_format(const layout_case& c) {
  record_format format;
  set_key_type(format, c.type);
  format.record_size = c.record_size;
  format.key_offset = c.key_offset;
  format.validate();
  return format;
}

// Every key type key-only (the u32/u64 fast paths and the generic path for the rest), 16-byte
// records with a 64-bit key at either offset (the 16-byte fast path), odd layouts (generic path)
// and bytes:N keys shorter than, equal to and longer than the 8-byte prefix.
const layout_case layouts[] = {
    {"u32", "u32", 4, 0},          {"u64", "u64", 8, 0},
    {"i32", "i32", 4, 0},          {"i64", "i64", 8, 0},
    {"f32", "f32", 4, 0},          {"f64", "f64", 8, 0},
    {"kv_u64_at0", "u64", 16, 0},  {"kv_i64_at8", "i64", 16, 8},
    {"kv_f64_at0", "f64", 16, 0},  {"u32_in16_at4", "u32", 16, 4},
    {"f32_in12_at8", "f32", 12, 8}, {"i64_in100_at37", "i64", 100, 37},
    {"gensort", "bytes:10", 100, 0}, {"bytes3_in12_at5", "bytes:3", 12, 5},
    {"bytes8", "bytes:8", 8, 0},    {"bytes20_in24_at2", "bytes:20", 24, 2},
};

class merge_layout : public ::testing::TestWithParam<layout_case> {};

TEST_P(merge_layout, matches_stable_sort_for_many_run_counts) {
  const record_format format = make_format(GetParam());
  std::mt19937_64 rng(test::base_seed());
  for (const bool descending : {false, true}) {
    for (const std::size_t runs : {1, 2, 3, 4, 5, 8, 16, 33, 64, 1000}) {
      const std::uint64_t seed = rng();
      SCOPED_TRACE("seed " + std::to_string(seed) + ", runs " + std::to_string(runs) +
                   (descending ? ", descending" : ", ascending"));
      const std::uint64_t total = seed % 6000;
      const run_set set =
          make_runs(test::random_records(total, format, seed), format, descending, runs, seed);
      const std::vector<std::byte> expected = reference_merge(set, descending);
      const std::vector<run_view> views = set.views();

      std::vector<std::byte> out(set.data.size());
      merge_ranks(views, 0, total, out.data(), format, descending);
      ASSERT_TRUE(same_records(expected, out.data(), 0, total, format.record_size));

      for (const std::uint64_t parts : {1, 2, 7, 40}) {
        SCOPED_TRACE("parts " + std::to_string(parts));
        std::fill(out.begin(), out.end(), std::byte{0});
        merge_ranks_in_parts(views, 0, total, out.data(), format, descending, parts);
        ASSERT_TRUE(same_records(expected, out.data(), 0, total, format.record_size));
      }
    }
  }
}

TEST_P(merge_layout, sub_ranges_match_the_slice_of_the_full_merge) {
  const record_format format = make_format(GetParam());
  std::mt19937_64 rng(test::base_seed() + 1);
  for (const bool descending : {false, true}) {
    const std::uint64_t seed = rng();
    SCOPED_TRACE("seed " + std::to_string(seed) + (descending ? ", descending" : ", ascending"));
    const std::uint64_t total = 3000 + seed % 3000;
    const std::size_t runs = 1 + seed % 24;
    const run_set set =
        make_runs(test::random_records(total, format, seed), format, descending, runs, seed);
    const std::vector<std::byte> expected = reference_merge(set, descending);
    const std::vector<run_view> views = set.views();
    for (int trial = 0; trial < 20; ++trial) {
      std::uint64_t b = rng() % (total + 1);
      std::uint64_t e = rng() % (total + 1);
      if (b > e) std::swap(b, e);
      const std::uint64_t parts = 1 + rng() % 9;
      SCOPED_TRACE("ranks [" + std::to_string(b) + ", " + std::to_string(e) + "), parts " +
                   std::to_string(parts));
      std::vector<std::byte> out((e - b) * format.record_size + 1);
      merge_ranks_in_parts(views, b, e, out.data(), format, descending, parts);
      ASSERT_TRUE(same_records(expected, out.data(), b, e - b, format.record_size));
      merge_ranks(views, b, e, out.data(), format, descending);
      ASSERT_TRUE(same_records(expected, out.data(), b, e - b, format.record_size));
    }
  }
}

TEST_P(merge_layout, select_cuts_match_the_stable_merge_order) {
  const record_format format = make_format(GetParam());
  std::mt19937_64 rng(test::base_seed() + 2);
  for (const bool descending : {false, true}) {
    const std::uint64_t seed = rng();
    SCOPED_TRACE("seed " + std::to_string(seed) + (descending ? ", descending" : ", ascending"));
    const std::uint64_t total = 2000 + seed % 3000;
    const std::size_t runs = 1 + seed % 40;
    const run_set set =
        make_runs(test::random_records(total, format, seed), format, descending, runs, seed);
    const std::vector<run_view> views = set.views();
    std::vector<std::uint64_t> ranks = {0, total};
    for (int i = 0; i < 1000; ++i) ranks.push_back(rng() % (total + 1));
    std::sort(ranks.begin(), ranks.end());
    const auto expected = reference_cuts(set, descending, ranks);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const std::vector<std::uint64_t> cuts = select_cuts(views, ranks[i], format, descending);
      ASSERT_EQ(cuts, expected[i]) << "rank " << ranks[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(layouts, merge_layout, ::testing::ValuesIn(layouts),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(multiway_merge, bytes_keys_with_equal_prefixes_order_by_the_rest) {
  // random_records repeats whole keys; here the first 8 bytes collide often and the bytes after
  // them decide, so the comparison past the 8-byte prefix is exercised in both directions.
  std::mt19937_64 rng(test::base_seed() + 6);
  const layout_case cases[] = {{"gensort", "bytes:10", 100, 0}, {"bytes12", "bytes:12", 16, 3}};
  for (const layout_case& c : cases) {
    const record_format format = make_format(c);
    for (const bool descending : {false, true}) {
      const std::uint64_t seed = rng();
      SCOPED_TRACE(std::string(c.name) + ", seed " + std::to_string(seed) +
                   (descending ? ", descending" : ", ascending"));
      const std::uint64_t total = 4000;
      std::vector<std::byte> records = test::random_records(total, format, seed);
      for (std::uint64_t i = 0; i < total; ++i) {
        std::byte* key = records.data() + i * format.record_size + format.key_offset;
        for (std::uint32_t b = 0; b < format.key_size; ++b)
          key[b] = static_cast<std::byte>(b < 8 ? rng() % 2 * 255 * (rng() % 8 == 0) : rng() % 3);
      }
      const run_set set = make_runs(std::move(records), format, descending, 7, seed);
      const std::vector<std::byte> expected = reference_merge(set, descending);
      std::vector<std::byte> out(set.data.size());
      merge_ranks_in_parts(set.views(), 0, total, out.data(), format, descending, 5);
      ASSERT_TRUE(same_records(expected, out.data(), 0, total, format.record_size));
      std::vector<std::uint64_t> ranks;
      for (int i = 0; i < 200; ++i) ranks.push_back(rng() % (total + 1));
      std::sort(ranks.begin(), ranks.end());
      const auto cuts = reference_cuts(set, descending, ranks);
      for (std::size_t i = 0; i < ranks.size(); ++i)
        ASSERT_EQ(select_cuts(set.views(), ranks[i], format, descending), cuts[i])
            << "rank " << ranks[i];
    }
  }
}

/// 16-byte records: a key from a tiny range at `key_offset`, the record's input index in the
/// other 8 bytes. Runs are consecutive pieces of the input, each stable-sorted.
run_set indexed_runs(const record_format& format, bool descending, std::uint64_t total,
                     std::size_t runs, std::uint64_t key_range, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> records(total * format.record_size);
  const std::uint32_t index_offset = format.key_offset == 0 ? 8 : 0;
  for (std::uint64_t i = 0; i < total; ++i) {
    std::byte* r = records.data() + i * format.record_size;
    const std::uint64_t key = rng() % key_range;
    std::memcpy(r + format.key_offset, &key, format.key_size);
    std::memcpy(r + index_offset, &i, 8);
  }
  return make_runs(std::move(records), format, descending, runs, seed);
}

// The loser tree's exhausted runs carry the largest key too: records whose (normalized) key is
// the largest must still come out before them, stably, and before the records of higher runs.
TEST(multiway_merge, extreme_keys_merge_stably) {
  for (const char* type : {"u64", "i64", "u32"}) {
    for (const bool descending : {false, true}) {
      const record_format format = make_format({"kv", type, 16, 0});
      const std::uint64_t seed = test::base_seed() + 11;
      SCOPED_TRACE(std::string(type) + (descending ? ", descending" : ", ascending") +
                   ", seed " + std::to_string(seed));
      std::mt19937_64 rng(seed);
      // Keys at both ends of the type's range and next to them, the record's index beside.
      const std::uint64_t top = format.key_size == 8 ? ~std::uint64_t{0} : 0xffffffffu;
      const std::uint64_t sign = format.key_size == 8 ? std::uint64_t{1} << 63 : 1u << 31;
      const std::uint64_t picks[] = {0, 1, top - 1, top, sign - 1, sign};
      const std::uint64_t total = 20000;
      std::vector<std::byte> records(total * 16);
      for (std::uint64_t i = 0; i < total; ++i) {
        const std::uint64_t key = picks[rng() % std::size(picks)];
        std::memcpy(records.data() + i * 16, &key, format.key_size);
        std::memcpy(records.data() + i * 16 + 8, &i, 8);
      }
      for (const std::size_t runs : {3, 5, 64}) {
        SCOPED_TRACE("runs " + std::to_string(runs));
        const run_set set = make_runs(records, format, descending, runs, seed);
        const std::vector<std::byte> expected = reference_merge(set, descending);
        std::vector<std::byte> out(set.data.size());
        for (const std::uint64_t parts : {1, 3, 16}) {
          SCOPED_TRACE("parts " + std::to_string(parts));
          merge_ranks_in_parts(set.views(), 0, total, out.data(), format, descending, parts);
          ASSERT_TRUE(same_records(expected, out.data(), 0, total, 16));
        }
      }
    }
  }
}

TEST(multiway_merge, equal_keys_come_out_in_run_order_then_input_order) {
  std::mt19937_64 rng(test::base_seed() + 3);
  // The 16-byte fast path (u64 key), the generic path (u32 key in 16 bytes), both key offsets.
  const layout_case cases[] = {{"u64_at0", "u64", 16, 0},
                               {"u64_at8", "u64", 16, 8},
                               {"u32_at0", "u32", 16, 0},
                               {"u32_at12", "u32", 16, 12}};
  for (const layout_case& c : cases) {
    const record_format format = make_format(c);
    const std::uint32_t index_offset = format.key_offset == 0 ? 8 : 0;
    for (const bool descending : {false, true}) {
      for (const std::size_t runs : {2, 3, 9, 64}) {
        for (const std::uint64_t key_range : {1, 3, 50}) {
          const std::uint64_t seed = rng();
          SCOPED_TRACE(std::string(c.name) + ", seed " + std::to_string(seed) + ", runs " +
                       std::to_string(runs) + ", keys " + std::to_string(key_range) +
                       (descending ? ", descending" : ", ascending"));
          const std::uint64_t total = 1 + seed % 20000;
          const run_set set = indexed_runs(format, descending, total, runs, key_range, seed);
          std::vector<std::byte> out(set.data.size());
          merge_ranks_in_parts(set.views(), 0, total, out.data(), format, descending,
                               1 + seed % 16);
          const key_order order(format, descending);
          for (std::uint64_t i = 1; i < total; ++i) {
            const std::byte* prev = out.data() + (i - 1) * 16;
            const std::byte* cur = out.data() + i * 16;
            const int c3 = order.compare(prev, cur);
            ASSERT_LE(c3, 0) << "keys out of order at " << i;
            if (c3 == 0) {
              std::uint64_t a = 0;
              std::uint64_t b = 0;
              std::memcpy(&a, prev + index_offset, 8);
              std::memcpy(&b, cur + index_offset, 8);
              ASSERT_LT(a, b) << "equal keys out of input order at " << i;
            }
          }
          // A permutation of the input: every index exactly once.
          std::vector<bool> seen(total, false);
          for (std::uint64_t i = 0; i < total; ++i) {
            std::uint64_t index = 0;
            std::memcpy(&index, out.data() + i * 16 + index_offset, 8);
            ASSERT_LT(index, total);
            ASSERT_FALSE(seen[index]);
            seen[index] = true;
          }
        }
      }
    }
  }
}

TEST(multiway_merge, all_equal_keys_split_evenly_and_in_run_order) {
  const record_format format = format_preset("u64");
  for (const std::size_t runs : {1, 2, 5, 64, 300}) {
    SCOPED_TRACE("runs " + std::to_string(runs));
    // Run j holds 1000 + 37 * j copies of the key 42.
    std::vector<std::uint64_t> keys;
    run_set set{format, {}, {}, {}};
    for (std::size_t j = 0; j < runs; ++j) {
      set.first.push_back(keys.size());
      set.count.push_back(1000 + 37 * j);
      keys.insert(keys.end(), set.count.back(), 42);
    }
    set.data.resize(keys.size() * 8);
    std::memcpy(set.data.data(), keys.data(), set.data.size());
    const std::vector<run_view> views = set.views();
    const std::uint64_t total = set.total();

    for (std::uint64_t rank = 0; rank <= total; rank += 1 + total / 97) {
      const std::vector<std::uint64_t> cuts = select_cuts(views, rank, format, false);
      std::uint64_t left = rank;  // lower runs fill first
      for (std::size_t j = 0; j < runs; ++j) {
        const std::uint64_t want = std::min(left, set.count[j]);
        ASSERT_EQ(cuts[j], want) << "rank " << rank << ", run " << j;
        left -= want;
      }
    }
    // Parts of equal size: every part's cuts sum to its boundary rank.
    const std::uint64_t parts = 16;
    for (std::uint64_t p = 0; p <= parts; ++p) {
      const std::uint64_t rank = total * p / parts;
      const std::vector<std::uint64_t> cuts = select_cuts(views, rank, format, true);
      ASSERT_EQ(std::accumulate(cuts.begin(), cuts.end(), std::uint64_t{0}), rank);
    }
  }
}

TEST(multiway_merge, all_equal_keys_merge_in_input_order) {
  const record_format format = make_format({"kv", "u64", 16, 0});
  const run_set set = indexed_runs(format, false, 100000, 12, 1, test::base_seed() + 4);
  std::vector<std::byte> out(set.data.size());
  for (const std::uint64_t parts : {1, 3, 64}) {
    merge_ranks_in_parts(set.views(), 0, set.total(), out.data(), format, false, parts);
    for (std::uint64_t i = 0; i < set.total(); ++i) {
      std::uint64_t index = 0;
      std::memcpy(&index, out.data() + i * 16 + 8, 8);
      ASSERT_EQ(index, i) << "parts " << parts;
    }
  }
}

TEST(multiway_merge, large_merge_uses_parallel_parts_and_matches_reference) {
  // Big enough for merge_part_count to choose several parts on any machine.
  const tbb::global_control threads(tbb::global_control::max_allowed_parallelism, 4);
  for (const char* type : {"u32", "u64"}) {
    record_format format;
    set_key_type(format, type);
    const std::uint64_t seed = test::base_seed() + 5;
    SCOPED_TRACE(std::string(type) + ", seed " + std::to_string(seed));
    const std::uint64_t total = std::uint64_t{1} << 19;
    ASSERT_GT(merge_part_count(total, 16), 1u);
    const run_set set = make_runs(test::random_records(total, format, seed), format, false, 16,
                                  seed);
    const std::vector<std::byte> expected = reference_merge(set, false);
    std::vector<std::byte> out(set.data.size());
    merge_ranks(set.views(), 0, total, out.data(), format, false);
    ASSERT_TRUE(same_records(expected, out.data(), 0, total, format.record_size));
  }
}

TEST(multiway_merge, already_sorted_runs_are_copied) {
  // Run j holds keys [1000 j, 1000 (j + 1)): every part comes from one run.
  const record_format format = format_preset("u64");
  std::vector<std::uint64_t> keys(8000);
  std::iota(keys.begin(), keys.end(), std::uint64_t{0});
  std::vector<run_view> views;
  for (int j = 0; j < 8; ++j)
    views.push_back({reinterpret_cast<const std::byte*>(keys.data() + 1000 * j), 1000});
  std::vector<std::uint64_t> out(8000);
  for (const std::uint64_t parts : {1, 5, 8, 13}) {
    std::fill(out.begin(), out.end(), 0);
    merge_ranks_in_parts(views, 0, 8000, reinterpret_cast<std::byte*>(out.data()), format, false,
                         parts);
    ASSERT_EQ(out, keys) << "parts " << parts;
  }
  // Reversed run order: still one source per part; the first run comes last.
  std::reverse(views.begin(), views.end());
  merge_ranks(views, 1500, 6500, reinterpret_cast<std::byte*>(out.data()), format, false);
  ASSERT_TRUE(std::equal(out.begin(), out.begin() + 5000, keys.begin() + 1500));
}

TEST(multiway_merge, empty_runs_and_empty_ranges) {
  const record_format format = format_preset("u64");
  const std::vector<run_view> none;
  EXPECT_TRUE(select_cuts(none, 0, format, false).empty());
  merge_ranks(none, 0, 0, nullptr, format, false);

  const std::vector<run_view> empties(5);
  EXPECT_EQ(select_cuts(empties, 0, format, false), std::vector<std::uint64_t>(5, 0));
  merge_ranks(empties, 0, 0, nullptr, format, false);

  // One non-empty run between empty ones.
  const std::uint64_t keys[] = {1, 2, 2, 3};
  std::vector<run_view> runs(5);
  runs[2] = {reinterpret_cast<const std::byte*>(keys), 4};
  std::uint64_t out[4] = {};
  merge_ranks(runs, 0, 4, reinterpret_cast<std::byte*>(out), format, false);
  EXPECT_TRUE(std::equal(std::begin(out), std::end(out), std::begin(keys)));
  EXPECT_EQ(select_cuts(runs, 3, format, false), (std::vector<std::uint64_t>{0, 0, 3, 0, 0}));
}

TEST(multiway_merge, rejects_bad_arguments) {
  const record_format format = format_preset("u64");
  const std::uint64_t keys[] = {1, 2, 3};
  const std::vector<run_view> runs = {{reinterpret_cast<const std::byte*>(keys), 3}};
  std::uint64_t out[3] = {};
  auto* dst = reinterpret_cast<std::byte*>(out);
  EXPECT_THROW((void)select_cuts(runs, 4, format, false), gpusort::error);
  EXPECT_THROW(merge_ranks(runs, 2, 1, dst, format, false), gpusort::error);
  EXPECT_THROW(merge_ranks(runs, 0, 4, dst, format, false), gpusort::error);
  EXPECT_THROW(merge_ranks_in_parts(runs, 0, 3, dst, format, false, 0), gpusort::error);
  const std::vector<run_view> no_data = {{nullptr, 3}};
  EXPECT_THROW(merge_ranks(no_data, 0, 3, dst, format, false), gpusort::error);
  record_format bad = format;
  bad.key_offset = 4;  // key past the end of an 8-byte record
  EXPECT_THROW(merge_ranks(runs, 0, 3, dst, bad, false), gpusort::error);
}

}  // namespace
}  // namespace gpusort::cpu
