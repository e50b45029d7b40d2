// (key, index) items: extraction, gather and prefix-tie resolution, each checked on its own.
#include "cpu/sort_items.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "gpusort/detail/key_codec.hpp"
#include "test_support.hpp"

namespace gpusort::cpu {
namespace {

record_format make_format(key_type type, std::uint32_t key_size, std::uint32_t record_size,
                          std::uint32_t key_offset) {
  record_format f;
  f.type = type;
  f.key_size = key_size;
  f.record_size = record_size;
  f.key_offset = key_offset;
  f.validate();
  return f;
}

/// The item key of a bytes key, built byte by byte: first min(N, 8) bytes, big-endian, zero
/// padded, complemented for descending order.
std::uint64_t expected_bytes_key(const std::byte* key, std::uint32_t n, bool descending) {
  std::uint64_t v = 0;
  for (std::uint32_t j = 0; j < 8; ++j) {
    v <<= 8;
    if (j < n) v |= std::to_integer<std::uint64_t>(key[j]);
  }
  return descending ? ~v : v;
}

TEST(sort_items, item_format_is_u64_key_value) {
  const record_format f = sort_item_format();
  EXPECT_EQ(f.type, key_type::u64);
  EXPECT_EQ(f.key_size, 8u);
  EXPECT_EQ(f.record_size, 16u);
  EXPECT_EQ(f.key_offset, 0u);
}

TEST(sort_items, whole_key_only_up_to_eight_bytes) {
  EXPECT_TRUE(items_hold_whole_key(make_format(key_type::u64, 8, 8, 0)));
  EXPECT_TRUE(items_hold_whole_key(make_format(key_type::f32, 4, 100, 3)));
  EXPECT_TRUE(items_hold_whole_key(make_format(key_type::bytes, 8, 8, 0)));
  EXPECT_TRUE(items_hold_whole_key(make_format(key_type::bytes, 1, 8, 0)));
  EXPECT_FALSE(items_hold_whole_key(make_format(key_type::bytes, 9, 9, 0)));
  EXPECT_FALSE(items_hold_whole_key(make_format(key_type::bytes, 10, 100, 0)));
}

TEST(sort_items, extract_numeric_keys) {
  const std::uint64_t n = 100003;
  const std::uint64_t first = 1000000007;
  for (const key_type t : {key_type::u32, key_type::i32, key_type::f32, key_type::u64,
                           key_type::i64, key_type::f64}) {
    const std::uint32_t ks = detail::has_32bit_word(t) ? 4 : 8;
    const record_format f = make_format(t, ks, 40, 13);
    const std::uint64_t seed = test::base_seed() + static_cast<unsigned>(t);
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + describe(f));
    const std::vector<std::byte> recs = test::random_records(n, f, seed);
    for (bool descending : {false, true}) {
      std::vector<sort_item> items(n);
      extract_items(recs.data(), n, f, descending, first, items.data());
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::byte* key = recs.data() + i * f.record_size + f.key_offset;
        const std::uint64_t want =
            ks == 4 ? detail::make_key_codec<std::uint32_t>(t, descending)
                          .normalize(detail::load_word<std::uint32_t>(key))
                    : detail::make_key_codec<std::uint64_t>(t, descending)
                          .normalize(detail::load_word<std::uint64_t>(key));
        ASSERT_EQ(items[i].key, want) << "record " << i;
        ASSERT_EQ(items[i].index, first + i);
      }
    }
  }
}

TEST(sort_items, extract_bytes_keys_big_endian_prefix) {
  const std::uint64_t n = 50001;
  for (const std::uint32_t ks : {1u, 3u, 8u, 10u, 33u}) {
    const record_format f = make_format(key_type::bytes, ks, 40, 5);
    const std::uint64_t seed = test::base_seed() + ks;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + describe(f));
    const std::vector<std::byte> recs = test::random_records(n, f, seed);
    for (bool descending : {false, true}) {
      std::vector<sort_item> items(n);
      extract_items(recs.data(), n, f, descending, 0, items.data());
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::byte* key = recs.data() + i * f.record_size + f.key_offset;
        ASSERT_EQ(items[i].key, expected_bytes_key(key, ks, descending)) << "record " << i;
        ASSERT_EQ(items[i].index, i);
      }
    }
  }
}

TEST(sort_items, gather_follows_the_items) {
  for (const std::uint32_t r : {1u, 8u, 13u, 100u, 300u}) {
    const std::uint64_t n = 70001;
    const std::uint64_t first = 12345;
    const std::uint64_t seed = test::base_seed() + r;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", record size " + std::to_string(r));
    std::mt19937_64 rng(seed);
    std::vector<std::byte> recs(n * r);
    for (auto& b : recs) b = static_cast<std::byte>(rng());
    std::vector<sort_item> items(n);
    for (std::uint64_t i = 0; i < n; ++i) items[i] = {0, first + i};
    std::shuffle(items.begin(), items.end(), rng);
    std::vector<std::byte> out(n * r);
    gather_records(recs.data(), items.data(), n, r, first, out.data());
    for (std::uint64_t i = 0; i < n; ++i)
      ASSERT_EQ(std::memcmp(out.data() + i * r, recs.data() + (items[i].index - first) * r, r),
                0)
          << "item " << i;
  }
}

/// Extracts items, sorts them stably by prefix, resolves ties; checks the order against
/// std::stable_sort by the full key and that item keys still hold the prefixes.
void check_resolve(const std::vector<std::byte>& recs, const record_format& f, bool descending,
                   std::uint64_t first) {
  const std::uint64_t n = recs.size() / f.record_size;
  std::vector<sort_item> items(n);
  extract_items(recs.data(), n, f, descending, first, items.data());
  std::stable_sort(items.begin(), items.end(),
                   [](const sort_item& a, const sort_item& b) { return a.key < b.key; });
  resolve_prefix_ties(recs.data(), items.data(), n, f, descending, first);

  std::vector<std::uint64_t> want(n);
  std::iota(want.begin(), want.end(), first);
  const std::byte* keys = recs.data() + f.key_offset;
  std::stable_sort(want.begin(), want.end(), [&](std::uint64_t a, std::uint64_t b) {
    const int c = std::memcmp(keys + (a - first) * f.record_size,
                              keys + (b - first) * f.record_size, f.key_size);
    return descending ? c > 0 : c < 0;
  });
  for (std::uint64_t i = 0; i < n; ++i) {
    ASSERT_EQ(items[i].index, want[i]) << "position " << i;
    const std::byte* key = keys + (items[i].index - first) * f.record_size;
    ASSERT_EQ(items[i].key, expected_bytes_key(key, f.key_size, descending)) << "position " << i;
  }
}

TEST(sort_items, resolve_prefix_ties_rare_and_frequent) {
  const record_format f = make_format(key_type::bytes, 10, 100, 0);
  for (const std::uint64_t distinct : {std::uint64_t{0}, std::uint64_t{3}, std::uint64_t{1000}}) {
    const std::uint64_t n = 120007;
    const std::uint64_t seed = test::base_seed() + distinct;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", prefixes " + std::to_string(distinct));
    std::mt19937_64 rng(seed);
    std::vector<std::byte> recs = test::random_records(n, f, seed);
    if (distinct != 0) {
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t prefix = rng() % distinct;
        std::memcpy(recs.data() + i * f.record_size, &prefix, 8);
        recs[i * f.record_size + 9] = static_cast<std::byte>(rng() % 3);
      }
    }
    check_resolve(recs, f, false, 0);
    check_resolve(recs, f, true, 99);
  }
}

TEST(sort_items, resolve_prefix_ties_deep_and_all_equal) {
  // Keys of 30 bytes that tie on 8, 16 and 24 bytes; then keys that are all equal.
  const record_format f = make_format(key_type::bytes, 30, 30, 0);
  const std::uint64_t n = 90001;
  const std::uint64_t seed = test::base_seed() + 3;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::byte> recs(n * f.record_size, std::byte{1});
  for (std::uint64_t i = 0; i < n; ++i) {
    std::byte* key = recs.data() + i * f.record_size;
    key[7] = static_cast<std::byte>(rng() % 2);
    key[15] = static_cast<std::byte>(rng() % 2);
    key[29] = static_cast<std::byte>(rng() % 7);
  }
  check_resolve(recs, f, false, 0);
  check_resolve(recs, f, true, 5);
  std::vector<std::byte> equal(n * f.record_size, std::byte{9});
  check_resolve(equal, f, false, 0);
  check_resolve(equal, f, true, 0);
}

TEST(sort_items, resolve_is_a_no_op_for_whole_keys) {
  const record_format f = make_format(key_type::bytes, 8, 8, 0);
  std::vector<sort_item> items = {{5, 1}, {5, 0}, {3, 2}};
  const std::vector<sort_item> before = items;
  std::vector<std::byte> recs(24);
  resolve_prefix_ties(recs.data(), items.data(), 3, f, false, 0);
  for (std::size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(items[i].key, before[i].key);
    EXPECT_EQ(items[i].index, before[i].index);
  }
}

}  // namespace
}  // namespace gpusort::cpu
