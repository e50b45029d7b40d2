// sort_records against std::stable_sort on normalized keys, for every layout and key type.
#include "cpu/radix_sort.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>
#include <string>
#include <system_error>
#include <vector>

#include "cpu/sort_items.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"
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

std::uint32_t numeric_key_size(key_type t) { return detail::has_32bit_word(t) ? 4 : 8; }

/// Writes each record's input index into the bytes outside its key (little-endian, as many
/// bytes as there are), so that any reordering of equal keys shows in the output.
void stamp_index(std::vector<std::byte>& records, const record_format& f) {
  const std::uint64_t n = records.size() / f.record_size;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t v = i;
    for (std::uint32_t b = 0; b < f.record_size; ++b) {
      if (b >= f.key_offset && b < f.key_offset + f.key_size) continue;
      records[i * f.record_size + b] = static_cast<std::byte>(v & 0xff);
      v >>= 8;
    }
  }
}

/// order = record indices, stably sorted by normalized key (std::stable_sort on (key, index)
/// pairs held together: much faster than sorting indices that point into the records).
template <typename Word>
void sort_by_normalized_key(const std::byte* keys, std::uint64_t n, const record_format& f,
                            bool descending, std::vector<std::uint64_t>& order) {
  const auto codec = detail::make_key_codec<Word>(f.type, descending);
  std::vector<std::pair<Word, std::uint64_t>> pairs(n);
  for (std::uint64_t i = 0; i < n; ++i)
    pairs[i] = {codec.normalize(detail::load_word<Word>(keys + i * f.record_size)), i};
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (std::uint64_t i = 0; i < n; ++i) order[i] = pairs[i].second;
}

/// Reference: std::stable_sort of record indices by normalized key (memcmp for bytes keys).
std::vector<std::byte> reference_sort(const std::vector<std::byte>& in, const record_format& f,
                                      bool descending) {
  const std::uint64_t n = in.size() / f.record_size;
  std::vector<std::uint64_t> order(n);
  std::iota(order.begin(), order.end(), std::uint64_t{0});
  const std::byte* keys = in.data() + f.key_offset;
  const std::uint32_t r = f.record_size;
  if (f.type == key_type::bytes) {
    std::stable_sort(order.begin(), order.end(), [&](std::uint64_t a, std::uint64_t b) {
      const int c = std::memcmp(keys + a * r, keys + b * r, f.key_size);
      return descending ? c > 0 : c < 0;
    });
  } else if (detail::has_32bit_word(f.type)) {
    sort_by_normalized_key<std::uint32_t>(keys, n, f, descending, order);
  } else {
    sort_by_normalized_key<std::uint64_t>(keys, n, f, descending, order);
  }
  std::vector<std::byte> out(in.size());
  for (std::uint64_t i = 0; i < n; ++i)
    std::memcpy(out.data() + i * r, in.data() + order[i] * r, r);
  return out;
}

/// Runs sort_records on a copy of `in` and returns the sorted bytes.
std::vector<std::byte> radix_sorted(const std::vector<std::byte>& in, const record_format& f,
                                    bool descending) {
  const std::uint64_t n = in.size() / f.record_size;
  std::vector<std::byte> data = in;
  std::vector<std::byte> scratch(sort_scratch_bytes(n, f));
  EXPECT_GE(scratch.size(), in.size());
  const std::byte* out = sort_records(data.data(), scratch.data(), n, f, descending);
  EXPECT_TRUE(out == data.data() || out == scratch.data());
  return std::vector<std::byte>(out, out + in.size());
}

/// Sorts and compares with the reference; reports the first differing record.
void expect_sorts_like_reference(const std::vector<std::byte>& in, const record_format& f,
                                 bool descending) {
  SCOPED_TRACE(describe(f) + (descending ? ", descending" : ", ascending") + ", " +
               std::to_string(in.size() / f.record_size) + " records");
  const std::vector<std::byte> got = radix_sorted(in, f, descending);
  const std::vector<std::byte> want = reference_sort(in, f, descending);
  ASSERT_EQ(got.size(), want.size());
  if (got != want) {
    std::uint64_t i = 0;
    while (std::memcmp(got.data() + i * f.record_size, want.data() + i * f.record_size,
                       f.record_size) == 0)
      ++i;
    FAIL() << "first wrong record at index " << i;
  }
}

std::vector<std::uint64_t> interesting_sizes() {
  std::vector<std::uint64_t> sizes = {0, 1, 2, 3, 5, 7, 13, 23, 24, 25, 31, 33, 63, 100, 255, 256,
                                      257, 999, 4095, 4097, 30001};
  for (unsigned k = 1; k <= 20; ++k) {
    sizes.push_back((std::uint64_t{1} << k) - 1);
    sizes.push_back((std::uint64_t{1} << k) + 1);
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// --- Key-only records of every numeric type ---------------------------------------------------

template <key_type Type>
struct numeric_type {
  static constexpr key_type type = Type;
};
using numeric_types =
    ::testing::Types<numeric_type<key_type::u32>, numeric_type<key_type::i32>,
                     numeric_type<key_type::f32>, numeric_type<key_type::u64>,
                     numeric_type<key_type::i64>, numeric_type<key_type::f64>>;

template <typename T>
class radix_sort_keys : public ::testing::Test {
 protected:
  static record_format format() {
    const std::uint32_t size = numeric_key_size(T::type);
    return make_format(T::type, size, size, 0);
  }
};
TYPED_TEST_SUITE(radix_sort_keys, numeric_types);

TYPED_TEST(radix_sort_keys, random_keys_of_many_sizes) {
  const record_format f = TestFixture::format();
  for (const std::uint64_t n : interesting_sizes()) {
    for (bool descending : {false, true}) {
      const std::uint64_t seed = test::base_seed() + n * 2 + descending;
      SCOPED_TRACE("seed " + std::to_string(seed));
      expect_sorts_like_reference(test::random_records(n, f, seed), f, descending);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TYPED_TEST(radix_sort_keys, many_seeds_small_sizes) {
  const record_format f = TestFixture::format();
  std::mt19937_64 sizes(test::base_seed());
  for (int round = 0; round < 60; ++round) {
    const std::uint64_t n = sizes() % 3000;
    const std::uint64_t seed = test::base_seed() + 1000 + round;
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_sorts_like_reference(test::random_records(n, f, seed), f, round % 2 == 1);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TYPED_TEST(radix_sort_keys, presorted_reversed_and_equal) {
  const record_format f = TestFixture::format();
  for (const std::uint64_t n : {std::uint64_t{1000}, std::uint64_t{300001}}) {
    const std::uint64_t seed = test::base_seed() + 7 + n;
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::vector<std::byte> random = test::random_records(n, f, seed);
    const std::vector<std::byte> sorted = reference_sort(random, f, false);
    std::vector<std::byte> reversed(sorted.size());
    for (std::uint64_t i = 0; i < n; ++i)
      std::memcpy(reversed.data() + i * f.record_size,
                  sorted.data() + (n - 1 - i) * f.record_size, f.record_size);
    std::vector<std::byte> equal(sorted.size());
    for (std::uint64_t i = 0; i < n; ++i)
      std::memcpy(equal.data() + i * f.record_size, random.data(), f.record_size);
    for (bool descending : {false, true}) {
      expect_sorts_like_reference(sorted, f, descending);
      expect_sorts_like_reference(reversed, f, descending);
      expect_sorts_like_reference(equal, f, descending);
    }
  }
}

TYPED_TEST(radix_sort_keys, skewed_high_digits) {
  // Most keys share their high bytes: the first MSD pass must pick a lower digit, and one
  // bucket holds most records and recurses with an MSD pass of its own (one block at the
  // smaller size, parallel blocks at the larger).
  const record_format f = TestFixture::format();
  for (const std::uint64_t n : {std::uint64_t{300007}, (std::uint64_t{1} << 21) + 77}) {
    const std::uint64_t seed = test::base_seed() + 99 + n;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::vector<std::byte> in(n * f.record_size);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t v = (rng() % 10 == 0) ? rng() : (rng() & 0xffffff);
      std::memcpy(in.data() + i * f.record_size, &v, f.record_size);
    }
    expect_sorts_like_reference(in, f, false);
    expect_sorts_like_reference(in, f, true);
  }
}

TYPED_TEST(radix_sort_keys, clustered_keys_with_wide_outliers) {
  // Nine keys in ten agree on every bit the in-cache passes look at and differ only in their
  // low bits, one in ten is random: the finishing insertion pass gives up on the large group
  // and sorts it by the bits below. Sizes: one range in cache, and one spread over memory.
  const record_format f = TestFixture::format();
  const unsigned bits = 8 * f.record_size;
  const std::uint64_t top_bit = std::uint64_t{1} << (bits - 1);
  for (const std::uint64_t n : {std::uint64_t{50001}, (std::uint64_t{1} << 20) + 3}) {
    const std::uint64_t seed = test::base_seed() + 57 + n;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::vector<std::byte> in(n * f.record_size);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint64_t v = (rng() % 10 == 0) ? rng() : (top_bit | (rng() & 0xfffff));
      std::memcpy(in.data() + i * f.record_size, &v, f.record_size);
    }
    expect_sorts_like_reference(in, f, false);
    expect_sorts_like_reference(in, f, true);
  }
}

// --- Records with payloads ------------------------------------------------------------------

struct layout_case {
  key_type type;
  std::uint32_t key_size;
  std::uint32_t record_size;
  std::uint32_t key_offset;
};

class radix_sort_layouts : public ::testing::TestWithParam<layout_case> {};

TEST_P(radix_sort_layouts, stable_for_many_sizes) {
  const layout_case c = GetParam();
  const record_format f = make_format(c.type, c.key_size, c.record_size, c.key_offset);
  std::vector<std::uint64_t> sizes = {0, 1, 2, 3, 31, 257, 4097, 65537, 300007};
  if (c.record_size <= 16) sizes.push_back(std::uint64_t{1} << 21 | 1);
  for (const std::uint64_t n : sizes) {
    for (bool descending : {false, true}) {
      const std::uint64_t seed = test::base_seed() + 31 * n + descending;
      SCOPED_TRACE("seed " + std::to_string(seed));
      std::vector<std::byte> in = test::random_records(n, f, seed);
      stamp_index(in, f);
      expect_sorts_like_reference(in, f, descending);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST_P(radix_sort_layouts, few_distinct_keys) {
  // Long runs of equal keys: stability is visible in every run.
  const layout_case c = GetParam();
  const record_format f = make_format(c.type, c.key_size, c.record_size, c.key_offset);
  const std::uint64_t n = 200003;
  const std::uint64_t seed = test::base_seed() + 5;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::byte> in = test::random_records(n, f, seed);
  for (std::uint64_t i = 0; i < n; ++i) {
    std::byte* key = in.data() + i * f.record_size + f.key_offset;
    const auto v = static_cast<std::byte>(rng() % 3);
    std::memset(key, 0, f.key_size);
    key[f.type == key_type::bytes ? f.key_size - 1 : 0] = v;
  }
  stamp_index(in, f);
  expect_sorts_like_reference(in, f, false);
  expect_sorts_like_reference(in, f, true);
}

INSTANTIATE_TEST_SUITE_P(
    all, radix_sort_layouts,
    ::testing::Values(
        layout_case{key_type::u64, 8, 16, 0},   // key+value
        layout_case{key_type::u64, 8, 16, 8},   // value+key
        layout_case{key_type::i32, 4, 16, 4},
        layout_case{key_type::f64, 8, 12, 4},   // 12-byte records
        layout_case{key_type::u32, 4, 12, 8},
        layout_case{key_type::f32, 4, 8, 4},    // 8-byte records, 32-bit key
        layout_case{key_type::i64, 8, 9, 1},    // odd size: through items
        layout_case{key_type::u32, 4, 100, 37}, // wide records
        layout_case{key_type::f64, 8, 100, 50},
        layout_case{key_type::bytes, 4, 4, 0},
        layout_case{key_type::bytes, 8, 16, 8},
        layout_case{key_type::bytes, 3, 12, 2},
        layout_case{key_type::bytes, 10, 100, 0},  // gensort
        layout_case{key_type::bytes, 20, 32, 6}),
    [](const ::testing::TestParamInfo<layout_case>& param) {
      const layout_case& c = param.param;
      std::string s = key_type_name(make_format(c.type, c.key_size, c.record_size, c.key_offset));
      std::replace(s.begin(), s.end(), ':', '_');
      return s + "_r" + std::to_string(c.record_size) + "_o" + std::to_string(c.key_offset);
    });

/// A copy of records in pages the process may only read: a sort that writes its source faults.
class read_only_records {
 public:
  explicit read_only_records(const std::vector<std::byte>& records)
      : bytes_(std::max<std::size_t>(records.size(), 1)) {
    void* p = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap");
    base_ = static_cast<std::byte*>(p);
    if (!records.empty()) std::memcpy(base_, records.data(), records.size());
    if (::mprotect(base_, bytes_, PROT_READ) != 0) {
      const int err = errno;
      ::munmap(base_, bytes_);
      throw std::system_error(err, std::generic_category(), "mprotect");
    }
  }
  read_only_records(const read_only_records&) = delete;
  read_only_records& operator=(const read_only_records&) = delete;
  ~read_only_records() { ::munmap(base_, bytes_); }
  [[nodiscard]] const std::byte* data() const { return base_; }

 private:
  std::size_t bytes_;
  std::byte* base_ = nullptr;
};

TEST_P(radix_sort_layouts, sorts_into_a_separate_output) {
  // sort_records_into uses the input and the output as the sort's two buffers; the result
  // must land in the output whatever the number of passes each bucket took.
  const layout_case c = GetParam();
  const record_format f = make_format(c.type, c.key_size, c.record_size, c.key_offset);
  std::vector<std::uint64_t> sizes = {0, 1, 2, 25, 4097, 300007};
  if (c.record_size <= 16) sizes.push_back(std::uint64_t{1} << 21 | 1);
  for (const std::uint64_t n : sizes) {
    for (bool descending : {false, true}) {
      const std::uint64_t seed = test::base_seed() + 57 * n + descending;
      SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(n) + " records");
      std::vector<std::byte> in = test::random_records(n, f, seed);
      stamp_index(in, f);
      std::vector<std::byte> data = in;
      std::vector<std::byte> out(in.size());
      std::vector<std::byte> scratch(sort_into_scratch_bytes(n, f));
      sort_records_into(data.data(), scratch.empty() ? nullptr : scratch.data(), out.data(), n,
                        f, descending);
      const std::vector<std::byte> want = reference_sort(in, f, descending);
      ASSERT_TRUE(out == want);
      // sort_records_from must give the same without writing its source.
      const read_only_records src(in);
      std::fill(out.begin(), out.end(), std::byte{0});
      sort_records_from(src.data(), scratch.empty() ? nullptr : scratch.data(), out.data(), n, f,
                        descending);
      ASSERT_TRUE(out == want) << "sort_records_from";
      // And sort_records_through, through a scratch buffer of its own size.
      std::vector<std::byte> through_scratch(sort_scratch_bytes(n, f));
      std::fill(out.begin(), out.end(), std::byte{0});
      sort_records_through(src.data(), through_scratch.data(), out.data(), n, f, descending);
      ASSERT_TRUE(out == want) << "sort_records_through";
    }
  }
}

/// Key + index records of u64 keys, key(rng) giving each key, stamped with their index.
template <typename KeyFn>
std::vector<std::byte> keyed_records(const record_format& f, std::uint64_t n, KeyFn&& key) {
  std::vector<std::byte> in(n * f.record_size);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t v = key();
    std::memcpy(in.data() + i * f.record_size, &v, 8);
  }
  stamp_index(in, f);
  return in;
}

/// sort_records_into, and from a read-only copy of `in` sort_records_from and
/// sort_records_through, must each give `want` in their output.
void expect_every_sort_into_an_output(const std::vector<std::byte>& in, const record_format& f,
                                      const std::vector<std::byte>& want) {
  const std::uint64_t n = in.size() / f.record_size;
  std::vector<std::byte> data = in;
  std::vector<std::byte> out(in.size());
  sort_records_into(data.data(), nullptr, out.data(), n, f, false);
  EXPECT_TRUE(out == want) << "sort_records_into";
  // From a read-only source, buckets too large for the cache need buffers of their own.
  const read_only_records src(in);
  std::fill(out.begin(), out.end(), std::byte{0});
  sort_records_from(src.data(), nullptr, out.data(), n, f, false);
  EXPECT_TRUE(out == want) << "sort_records_from";
  // Through scratch, a bucket too large for the cache goes through a buffer of the sort's
  // pool, or beyond what the pool lends, is sorted where it must end.
  std::vector<std::byte> scratch(sort_scratch_bytes(n, f));
  std::fill(out.begin(), out.end(), std::byte{0});
  sort_records_through(src.data(), scratch.data(), out.data(), n, f, false);
  EXPECT_TRUE(out == want) << "sort_records_through";
}

TEST(radix_sort_into, equal_and_skewed_keys_land_in_the_output) {
  // All-equal keys end without a single scatter; skewed keys (one in ten random, the rest
  // below `small`) recurse through a second pass over memory. The last shape, 128 MiB, leaves
  // a bucket of about 115 MiB after the first pass, more than the sort's pool lends a bucket.
  // All must still come out in `out`.
  const record_format f = make_format(key_type::u64, 8, 16, 0);
  struct shape {
    std::uint64_t n;
    std::uint64_t small;  // 0: every key equal
  };
  for (const shape sh : {shape{(std::uint64_t{1} << 21) + 5, 0},
                         shape{(std::uint64_t{1} << 21) + 5, 0x10000},
                         shape{(std::uint64_t{1} << 23) + 3, 0x1000000}}) {
    const std::uint64_t seed = test::base_seed() + 91 + sh.small;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(sh.n) +
                 " records, small keys below " + std::to_string(sh.small));
    std::mt19937_64 rng(seed);
    const std::vector<std::byte> in = keyed_records(f, sh.n, [&]() -> std::uint64_t {
      if (sh.small == 0) return 42;
      return (rng() % 10 == 0) ? rng() : rng() % sh.small;
    });
    expect_every_sort_into_an_output(in, f, reference_sort(in, f, false));
  }
}

TEST(radix_sort_into, clustered_keys_stay_stable) {
  // Key + index records: the large group of clustered keys (see clustered_keys_with_wide_outliers)
  // holds many equal keys too, whose order must survive the fallback to sorting groups.
  const record_format f = make_format(key_type::u64, 8, 16, 0);
  for (const std::uint64_t n : {std::uint64_t{40009}, (std::uint64_t{1} << 20) + 9}) {
    const std::uint64_t seed = test::base_seed() + 73 + n;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const std::vector<std::byte> in = keyed_records(f, n, [&]() -> std::uint64_t {
      return (rng() % 8 == 0) ? rng() : ((std::uint64_t{7} << 60) | (rng() & 0xfff));
    });
    expect_every_sort_into_an_output(in, f, reference_sort(in, f, false));
  }
}

TEST(radix_sort_bytes, gensort_prefix_ties) {
  // gensort-like 100-byte records with 10-byte keys whose first 8 bytes tie often: the items
  // sort by the prefix and resolve_prefix_ties must order the last two bytes, stably.
  const record_format f = make_format(key_type::bytes, 10, 100, 0);
  for (const std::uint64_t n : {std::uint64_t{5000}, std::uint64_t{250001}}) {
    const std::uint64_t seed = test::base_seed() + 11 + n;
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::vector<std::byte> in = test::random_records(n, f, seed);
    for (std::uint64_t i = 0; i < n; ++i) {
      std::byte* key = in.data() + i * f.record_size;
      const std::uint64_t prefix = rng() % 64;  // 64 distinct prefixes: long tied runs
      std::memcpy(key, &prefix, 8);
      key[8] = static_cast<std::byte>(rng() % 4);
      key[9] = static_cast<std::byte>(rng() % 4);
    }
    stamp_index(in, f);
    expect_sorts_like_reference(in, f, false);
    expect_sorts_like_reference(in, f, true);
  }
}

TEST(radix_sort_bytes, long_keys_all_equal_and_deep_ties) {
  // bytes:20 keys that tie beyond the first 8 and 16 bytes, and all-equal keys: linear time
  // (a quadratic tie breaker would not finish) and stable.
  const record_format f = make_format(key_type::bytes, 20, 24, 0);
  const std::uint64_t n = 400009;
  const std::uint64_t seed = test::base_seed() + 21;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::byte> deep(n * f.record_size, std::byte{0x5a});
  std::vector<std::byte> equal(n * f.record_size, std::byte{0x77});
  for (std::uint64_t i = 0; i < n; ++i) {
    std::byte* key = deep.data() + i * f.record_size;
    key[3] = static_cast<std::byte>(rng() % 2);
    key[12] = static_cast<std::byte>(rng() % 3);
    key[19] = static_cast<std::byte>(rng() % 5);
  }
  stamp_index(deep, f);
  stamp_index(equal, f);
  for (bool descending : {false, true}) {
    expect_sorts_like_reference(deep, f, descending);
    expect_sorts_like_reference(equal, f, descending);
  }
}

TEST(radix_sort_arena, same_result_on_one_and_many_threads) {
  const record_format f = make_format(key_type::i64, 8, 16, 8);
  const std::uint64_t n = (std::uint64_t{1} << 22) + 3;
  const std::uint64_t seed = test::base_seed() + 77;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<std::byte> in = test::random_records(n, f, seed);
  stamp_index(in, f);
  const std::vector<std::byte> want = reference_sort(in, f, false);
  for (int threads : {1, 3, 8}) {
    tbb::task_arena arena(threads);
    std::vector<std::byte> got;
    arena.execute([&] { got = radix_sorted(in, f, false); });
    EXPECT_TRUE(got == want) << threads << " threads";
  }
}

TEST(radix_sort_errors, rejects_bad_formats_and_overlap) {
  std::vector<std::byte> data(64), scratch(64);
  record_format bad = make_format(key_type::u64, 8, 16, 0);
  bad.key_offset = 12;  // key outside the record
  EXPECT_THROW(sort_records(data.data(), scratch.data(), 4, bad, false), gpusort::error);
  const record_format ok = make_format(key_type::u64, 8, 8, 0);
  EXPECT_THROW(sort_records(data.data(), data.data() + 8, 4, ok, false), gpusort::error);
  EXPECT_THROW(sort_records_into(data.data(), nullptr, data.data() + 8, 4, ok, false),
               gpusort::error);
  std::vector<std::byte> out(64);
  EXPECT_THROW(sort_records_through(data.data(), out.data() + 8, out.data(), 4, ok, false),
               gpusort::error);
  EXPECT_THROW(sort_records_through(data.data(), nullptr, out.data(), 4, ok, false),
               gpusort::error);
}

TEST(radix_sort_scratch, sizes_cover_each_layout) {
  EXPECT_EQ(sort_scratch_bytes(1000, make_format(key_type::u64, 8, 8, 0)), 8000u);
  EXPECT_EQ(sort_scratch_bytes(1000, make_format(key_type::u32, 4, 12, 0)), 12000u);
  EXPECT_GE(sort_scratch_bytes(1000, make_format(key_type::bytes, 10, 100, 0)),
            1000u * 100 + 2 * 1000 * sizeof(sort_item));
}

TEST(radix_sort_scratch, sorting_into_an_output_needs_none_for_whole_records) {
  EXPECT_EQ(sort_into_scratch_bytes(1000, make_format(key_type::u64, 8, 8, 0)), 0u);
  EXPECT_EQ(sort_into_scratch_bytes(1000, make_format(key_type::f32, 4, 16, 4)), 0u);
  const record_format wide = make_format(key_type::bytes, 10, 100, 0);
  EXPECT_EQ(sort_into_scratch_bytes(1000, wide), sort_scratch_bytes(1000, wide));
}

}  // namespace
}  // namespace gpusort::cpu
