// Tests of the AVX-512 vector merge (cpu/merge_vector.hpp), directly and through merge_ranks:
// the merged keys against std::sort of all keys, the records as a multiset, for every layout,
// 64-bit key type and order, fan-ins from 2 to 256, run lengths around the sixteen-record step,
// keys equal to the padding; (key, payload) records with repeated keys refused, and merge_ranks
// byte-identical with the loser tree's stable merge, also past sparse ties; 32-bit keys alone
// against the loser tree likewise. Skipped on CPUs without AVX-512.
#include "cpu/merge_vector.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cpu/multiway_merge.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "test_support.hpp"

namespace gpusort::cpu {
namespace {

using detail::vector_layout;

struct record16 {
  std::uint64_t words[2];
  friend bool operator<(const record16& a, const record16& b) {
    return a.words[0] != b.words[0] ? a.words[0] < b.words[0] : a.words[1] < b.words[1];
  }
  friend bool operator==(const record16& a, const record16& b) {
    return a.words[0] == b.words[0] && a.words[1] == b.words[1];
  }
};

/// How the keys of a case are drawn, as normalized words.
enum class keys : std::uint8_t {
  uniform,   ///< all 64 bits random
  few,       ///< four distinct keys: long runs of equal keys across inputs
  extremes,  ///< 0, 1, the largest and the one below: the padding key among them (key layout)
  one_repeat,  ///< uniform, and one key of the first input again in the last
};

struct vector_case {
  vector_layout layout;
  const char* type;
  bool descending;
  keys draw;
};

std::string case_name(const testing::TestParamInfo<vector_case>& info) {
  const vector_case& c = info.param;
  const char* layout = c.layout == vector_layout::key         ? "key"
                       : c.layout == vector_layout::key_value ? "key_value"
                                                              : "value_key";
  const char* draw = c.draw == keys::uniform    ? "uniform"
                     : c.draw == keys::few      ? "few"
                     : c.draw == keys::extremes ? "extremes"
                                                : "one_repeat";
  return std::string(layout) + "_" + c.type + (c.descending ? "_desc_" : "_asc_") + draw;
}

class vector_merge_test : public testing::TestWithParam<vector_case> {
 protected:
  void SetUp() override {
    if (!detail::vector_merge_supported()) GTEST_SKIP() << "this CPU has no AVX-512";
  }
};

/// The sorted inputs of one case: records back to back, and their normalized keys.
struct inputs {
  record_format format;
  gpusort::detail::key_codec<std::uint64_t> codec;
  std::vector<std::uint64_t> words;  ///< the records, as 64-bit words
  std::vector<std::uint64_t> first;  ///< first word of each input
  std::vector<std::uint64_t> count;  ///< records of each input

  [[nodiscard]] std::uint32_t words_per_record() const { return format.record_size / 8; }
  [[nodiscard]] std::uint64_t key_of(const std::uint64_t* record) const {
    return codec.normalize(record[format.key_offset / 8]);
  }
  [[nodiscard]] std::uint64_t total() const {
    std::uint64_t t = 0;
    for (std::uint64_t c : count) t += c;
    return t;
  }
};

std::uint64_t draw_key(keys draw, bool padding_allowed, std::mt19937_64& rng) {
  std::uint64_t k = 0;
  switch (draw) {
    case keys::uniform:
    case keys::one_repeat: k = rng(); break;
    case keys::few: k = (rng() % 4) * 0x4000000000000000ull; break;
    case keys::extremes: {
      constexpr std::array<std::uint64_t, 4> values{0, 1, ~std::uint64_t{0} - 1,
                                                    ~std::uint64_t{0}};
      k = values[rng() % 4];
      break;
    }
  }
  // 16-byte records may not hold the padding key (vector_merge's contract).
  if (!padding_allowed && k == ~std::uint64_t{0}) k -= 1;
  return k;
}

inputs make_inputs(const vector_case& c, const std::vector<std::uint64_t>& counts,
                   std::mt19937_64& rng) {
  inputs in;
  const std::uint32_t size = c.layout == vector_layout::key ? 8 : 16;
  const std::uint32_t offset = c.layout == vector_layout::value_key ? 8 : 0;
  in.format = test::make_format(c.type, size, offset);
  in.codec = gpusort::detail::make_key_codec<std::uint64_t>(in.format.type, c.descending);
  const std::uint32_t w = in.words_per_record();
  std::uint64_t repeated = 0;
  for (std::size_t j = 0; j < counts.size(); ++j) {
    const std::uint64_t n = counts[j];
    in.first.push_back(in.words.size());
    in.count.push_back(n);
    std::vector<std::uint64_t> keys(n);
    for (auto& k : keys) k = draw_key(c.draw, c.layout == vector_layout::key, rng);
    if (c.draw == keys::one_repeat) {
      if (j == 0) repeated = keys[rng() % n];
      if (j + 1 == counts.size()) keys[rng() % n] = repeated;
    }
    std::sort(keys.begin(), keys.end());
    for (std::uint64_t i = 0; i < n; ++i) {
      std::uint64_t record[2] = {rng(), rng()};
      record[offset / 8] = in.codec.denormalize(keys[i]);
      in.words.insert(in.words.end(), record, record + w);
    }
  }
  return in;
}

/// Runs vector_merge on `in` and checks the output: keys in order, records the input's multiset.
void merge_and_check(const inputs& in, const vector_case& c) {
  std::vector<detail::vector_input> views;
  for (std::size_t j = 0; j < in.count.size(); ++j)
    views.push_back({reinterpret_cast<const std::byte*>(in.words.data() + in.first[j]),
                     in.count[j]});
  const std::uint64_t total = in.total();
  const std::uint32_t w = in.words_per_record();
  // A guard word after the output: the merge writes exactly `total` records.
  std::vector<std::uint64_t> out(total * w + 1, 0x5a5a5a5a5a5a5a5aull);
  const std::size_t scratch_bytes = detail::vector_merge_scratch_bytes(views.size(), c.layout);
  struct free_memory {
    void operator()(std::byte* p) const { std::free(p); }
  };
  std::unique_ptr<std::byte, free_memory> scratch(
      static_cast<std::byte*>(std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64)));
  const gpusort::detail::key_codec<std::uint64_t>& codec = in.codec;
  const std::uint64_t final = detail::vector_merge(
      views.data(), views.size(), reinterpret_cast<std::byte*>(out.data()), total, c.layout,
      {codec.sign_mask, codec.float_mask, codec.order_mask}, scratch.get());
  const bool merged = final == total;
  EXPECT_EQ(out.back(), 0x5a5a5a5a5a5a5a5aull) << "wrote past the output";

  std::vector<std::uint64_t> want_keys;
  for (std::uint64_t i = 0; i < total; ++i) want_keys.push_back(in.key_of(in.words.data() + i * w));
  std::sort(want_keys.begin(), want_keys.end());
  const bool repeats = std::adjacent_find(want_keys.begin(), want_keys.end()) != want_keys.end();
  if (c.layout != vector_layout::key && repeats) {
    // Equal keys with payloads: the stable order is the caller's to make from the first of
    // them on; the records before it are final.
    EXPECT_FALSE(merged) << "(key, payload) records with equal keys were merged";
    ASSERT_LT(final, total);
    for (std::uint64_t i = 0; i < final; ++i) {
      ASSERT_EQ(in.key_of(out.data() + i * w), want_keys[i]) << "final record " << i;
      // No final record shares its key with the next record of the merge.
      ASSERT_NE(want_keys[i], want_keys[i + 1]) << "final record " << i << " is tied";
    }
    return;
  }
  ASSERT_TRUE(merged);
  std::vector<std::uint64_t> got_keys;
  for (std::uint64_t i = 0; i < total; ++i) got_keys.push_back(in.key_of(out.data() + i * w));
  ASSERT_EQ(got_keys, want_keys) << "keys out of order or changed";
  if (w == 2) {
    std::vector<record16> want(total);
    std::vector<record16> got(total);
    std::memcpy(want.data(), in.words.data(), total * 16);
    std::memcpy(got.data(), out.data(), total * 16);
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_TRUE(want == got) << "the records are not the input's";
  } else {
    std::vector<std::uint64_t> want(in.words.begin(), in.words.begin() + total);
    out.pop_back();
    std::sort(want.begin(), want.end());
    std::sort(out.begin(), out.end());
    EXPECT_EQ(out, want) << "the records are not the input's";
  }
}

TEST_P(vector_merge_test, merges_every_fan_in_and_run_length) {
  const vector_case& c = GetParam();
  const std::uint64_t seed = test::base_seed() ^ (std::hash<std::string>{}(case_name({c, 0})));
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (std::size_t runs : {2, 3, 5, 16, 17, 64}) {
    SCOPED_TRACE(std::to_string(runs) + " runs");
    std::vector<std::uint64_t> counts(runs);
    // Lengths around the steps (16 and 32 records) and the vertex buffers (512 records with
    // payloads, 2048 keys alone), and some long ones.
    constexpr std::array<std::uint64_t, 18> lengths{1,   7,   8,   9,    15,   16,   17,   31,  32,
                                                    33,  511, 512, 513,  2047, 2048, 2049, 3000,
                                                    9000};
    for (auto& n : counts) n = lengths[rng() % lengths.size()];
    merge_and_check(make_inputs(c, counts, rng), c);
  }
}

TEST_P(vector_merge_test, merges_the_largest_fan_in) {
  const vector_case& c = GetParam();
  const std::uint64_t seed = test::base_seed() + 7;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> counts(detail::vector_merge_max_runs);
  for (auto& n : counts) n = 1 + rng() % 300;
  merge_and_check(make_inputs(c, counts, rng), c);
}

std::vector<vector_case> all_cases() {
  std::vector<vector_case> cases;
  for (vector_layout layout : {vector_layout::key, vector_layout::key_value,
                               vector_layout::value_key})
    for (const char* type : {"u64", "i64", "f64"})
      for (bool descending : {false, true})
        for (keys draw : {keys::uniform, keys::few, keys::extremes, keys::one_repeat})
          cases.push_back({layout, type, descending, draw});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(layouts, vector_merge_test, testing::ValuesIn(all_cases()), case_name);

// --- Through merge_ranks: which merges take the vector merge, and that they write what the
// loser tree writes.

TEST(vector_merge_policy, takes_keys_alone_or_with_a_payload_of_their_width) {
  if (!detail::vector_merge_supported()) GTEST_SKIP() << "this CPU has no AVX-512";
  merge_policy off;
  off.vector = false;
  EXPECT_TRUE(merges_with_vectors(test::make_format("u64", 8, 0), {}));
  EXPECT_TRUE(merges_with_vectors(test::make_format("f64", 16, 0), {}));
  EXPECT_TRUE(merges_with_vectors(test::make_format("i64", 16, 8), {}));
  EXPECT_TRUE(merges_with_vectors(test::make_format("u32", 4, 0), {}));
  EXPECT_TRUE(merges_with_vectors(test::make_format("f32", 4, 0), {}));
  EXPECT_FALSE(merges_with_vectors(test::make_format("u32", 8, 0), {}));
  EXPECT_FALSE(merges_with_vectors(test::make_format("i32", 8, 4), {}));
  EXPECT_FALSE(merges_with_vectors(test::make_format("u64", 8, 0), off));
  EXPECT_FALSE(merges_with_vectors(test::make_format("u32", 4, 0), off));
  EXPECT_FALSE(merges_with_vectors(test::make_format("u32", 12, 0), {}));
  EXPECT_FALSE(merges_with_vectors(test::make_format("u32", 8, 2), {}));
  EXPECT_FALSE(merges_with_vectors(test::make_format("u64", 16, 4), {}));
  EXPECT_FALSE(merges_with_vectors(test::make_format("u64", 24, 0), {}));
  EXPECT_FALSE(merges_with_vectors(test::make_format("bytes:8", 8, 0), {}));
}

/// merge_ranks_in_parts of `count` 16-byte records in `parts` parts writes the same bytes with
/// the vector merge as without it.
void expect_merged_as_by_the_loser_tree(std::span<const run_view> views, std::size_t count,
                                        const record_format& format, std::uint64_t parts) {
  std::vector<record16> vector_out(count);
  std::vector<record16> tree_out(count);
  merge_policy off;
  off.vector = false;
  merge_ranks_in_parts(views, 0, count, reinterpret_cast<std::byte*>(vector_out.data()), format,
                       false, parts);
  merge_ranks_in_parts(views, 0, count, reinterpret_cast<std::byte*>(tree_out.data()), format,
                       false, parts, off);
  EXPECT_TRUE(vector_out == tree_out) << parts << " parts";
}

/// merge_ranks_in_parts on 16-byte records, with the vector merge and without: byte-identical
/// outputs (the stable merge), for distinct keys, repeated keys and the padding key.
TEST(vector_merge_policy, pairs_merge_exactly_as_the_loser_tree_merges) {
  const record_format format = test::make_format("u64", 16, 0);
  for (std::uint64_t distinct : {std::uint64_t{0}, std::uint64_t{50}, std::uint64_t{1} << 40}) {
    for (bool padding_key : {false, true}) {
      const std::uint64_t seed = test::base_seed() + distinct + (padding_key ? 1 : 0);
      SCOPED_TRACE("seed " + std::to_string(seed) + ", keys below " + std::to_string(distinct) +
                   (padding_key ? ", with the padding key" : ""));
      std::mt19937_64 rng(seed);
      std::vector<record16> records;
      std::vector<run_view> views;
      for (int j = 0; j < 9; ++j) {
        const std::size_t first = records.size();
        const std::uint64_t n = 20000 + rng() % 5000;
        for (std::uint64_t i = 0; i < n; ++i)
          records.push_back({{distinct == 0 ? rng() : rng() % distinct, rng()}});
        if (padding_key) records.push_back({{~std::uint64_t{0}, rng()}});
        std::stable_sort(records.begin() + static_cast<std::ptrdiff_t>(first), records.end(),
                         [](const record16& a, const record16& b) {
                           return a.words[0] < b.words[0];
                         });
        views.push_back({reinterpret_cast<const std::byte*>(records.data() + first),
                         records.size() - first});
      }
      // The views point into `records`, which is not resized any more.
      std::size_t at = 0;
      for (run_view& v : views) {
        v.data = reinterpret_cast<const std::byte*>(records.data() + at);
        at += v.count;
      }
      for (std::uint64_t parts : {1, 7})
        expect_merged_as_by_the_loser_tree(views, records.size(), format, parts);
    }
  }
}

/// A few keys repeated across runs, far apart: the vector merge hands each tie to the loser
/// tree and takes over again after it. The output is the loser tree's, byte for byte.
TEST(vector_merge_policy, sparse_ties_are_merged_stably_and_the_network_goes_on) {
  const record_format format = test::make_format("u64", 16, 8);
  for (std::uint64_t seed_offset : {0, 1, 2}) {
    const std::uint64_t seed = test::base_seed() + 1000 + seed_offset;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::vector<std::vector<std::uint64_t>> keys(9);
    for (auto& run : keys) {
      run.resize(40000);
      for (auto& k : run) k = rng() >> 1;  // never the padding key
    }
    for (int t = 0; t < 6; ++t) {  // each a key of one run planted in another
      const std::size_t from = rng() % keys.size();
      const std::size_t to = (from + 1 + rng() % (keys.size() - 1)) % keys.size();
      keys[to][rng() % keys[to].size()] = keys[from][rng() % keys[from].size()];
    }
    std::vector<record16> records;
    std::vector<run_view> views;
    for (auto& run : keys) {
      std::sort(run.begin(), run.end());
      for (const std::uint64_t k : run) records.push_back({{rng(), k}});
    }
    for (std::size_t j = 0, at = 0; j < keys.size(); at += keys[j].size(), ++j)
      views.push_back({reinterpret_cast<const std::byte*>(records.data() + at), keys[j].size()});
    for (std::uint64_t parts : {1, 3})
      expect_merged_as_by_the_loser_tree(views, records.size(), format, parts);
  }
}

// --- 32-bit keys alone: one word per record, the key in its upper half.

struct narrow_case {
  const char* type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
  bool descending;
  bool distinct;  ///< keys drawn without repeats
};

std::string narrow_name(const testing::TestParamInfo<narrow_case>& info) {
  const narrow_case& c = info.param;
  return std::string(c.type) + "_r" + std::to_string(c.record_size) + "_o" +
         std::to_string(c.key_offset) + (c.descending ? "_desc" : "_asc") +
         (c.distinct ? "_distinct" : "_ties");
}

class vector_merge_narrow : public testing::TestWithParam<narrow_case> {
 protected:
  void SetUp() override {
    if (!detail::vector_merge_supported()) GTEST_SKIP() << "this CPU has no AVX-512";
  }
};

/// Sorted runs of `format` back to back, in `data`, and their views.
struct narrow_runs {
  std::vector<std::byte> data;
  std::vector<run_view> views;
};

narrow_runs make_narrow_runs(const narrow_case& c, const record_format& format,
                             std::size_t runs, std::mt19937_64& rng) {
  constexpr std::array<std::uint64_t, 12> lengths{1, 7, 8, 9, 15, 16, 17, 31, 511, 512, 513,
                                                  3000};
  narrow_runs out;
  std::vector<std::uint64_t> counts(runs);
  for (auto& n : counts) n = lengths[rng() % lengths.size()];
  // Distinct keys: an odd stride through all 2^32 words.
  std::uint32_t next_key = static_cast<std::uint32_t>(rng());
  const std::uint32_t step = static_cast<std::uint32_t>(rng()) | 1u;
  for (const std::uint64_t n : counts) {
    std::vector<std::byte> records = test::random_records(n, format, rng());
    if (c.distinct) {
      for (std::uint64_t i = 0; i < n; ++i) {
        std::memcpy(records.data() + i * format.record_size + format.key_offset, &next_key, 4);
        next_key += step;
      }
    }
    const std::vector<std::byte> sorted = test::reference_sort(records, format, c.descending);
    out.data.insert(out.data.end(), sorted.begin(), sorted.end());
  }
  std::size_t at = 0;
  for (const std::uint64_t n : counts) {
    out.views.push_back({out.data.data() + at, n});
    at += n * format.record_size;
  }
  return out;
}

TEST_P(vector_merge_narrow, merges_exactly_as_the_loser_tree_merges) {
  const narrow_case& c = GetParam();
  const std::uint64_t seed = test::base_seed() ^ std::hash<std::string>{}(narrow_name({c, 0}));
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const record_format format = test::make_format(c.type, c.record_size, c.key_offset);
  ASSERT_TRUE(merges_with_vectors(format, {}));
  merge_policy off;
  off.vector = false;
  for (std::size_t runs : {std::size_t{2}, std::size_t{3}, std::size_t{17}, std::size_t{64},
                           detail::vector_merge_max_runs}) {
    SCOPED_TRACE(std::to_string(runs) + " runs");
    const narrow_runs in = make_narrow_runs(c, format, runs, rng);
    const std::uint64_t total = in.data.size() / format.record_size;
    for (std::uint64_t parts : {1, 5}) {
      std::vector<std::byte> vector_out(in.data.size() + 8, std::byte{0x5a});
      std::vector<std::byte> tree_out(in.data.size());
      merge_ranks_in_parts(in.views, 0, total, vector_out.data(), format, c.descending, parts);
      merge_ranks_in_parts(in.views, 0, total, tree_out.data(), format, c.descending, parts, off);
      for (std::size_t i = in.data.size(); i < vector_out.size(); ++i)
        ASSERT_EQ(vector_out[i], std::byte{0x5a}) << "wrote past the output";
      vector_out.resize(in.data.size());
      ASSERT_TRUE(vector_out == tree_out) << parts << " parts";
    }
  }
}

std::vector<narrow_case> narrow_cases() {
  std::vector<narrow_case> cases;
  for (const char* type : {"u32", "i32", "f32"})
    for (bool descending : {false, true})
      for (bool distinct : {false, true}) cases.push_back({type, 4, 0, descending, distinct});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(layouts, vector_merge_narrow, testing::ValuesIn(narrow_cases()),
                         narrow_name);

}  // namespace
}  // namespace gpusort::cpu
