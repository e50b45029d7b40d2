// Neighbour order of records (--check, --merge's input check) and the first of each run of
// equal keys (--unique), for every key type and layout, against scans by the test's own
// reference comparison; inputs span several parallel blocks.
#include "cpu/key_order.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace gpusort::cpu {
namespace {

struct layout_case {
  const char* type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
};

std::string case_name(const ::testing::TestParamInfo<layout_case>& info) {
  std::string s = std::string(info.param.type) + "_" + std::to_string(info.param.record_size) +
                  "_at_" + std::to_string(info.param.key_offset);
  for (char& c : s)
    if (c == ':') c = '_';
  return s;
}

/// Spans several of key_order.cpp's parallel blocks (2^16 records), and ends inside one.
constexpr std::uint64_t records = 3 * (std::uint64_t{1} << 16) + 1234;

class KeyOrder : public ::testing::TestWithParam<layout_case> {
 protected:
  [[nodiscard]] record_format format() const {
    return test::make_format(GetParam().type, GetParam().record_size, GetParam().key_offset);
  }
  /// -1, 0, 1 as the records at i and j order in the given direction.
  [[nodiscard]] static int order(const std::vector<std::byte>& data, std::uint64_t i,
                                 std::uint64_t j, const record_format& f, bool descending) {
    const int c = test::reference_compare(data.data() + i * f.record_size,
                                          data.data() + j * f.record_size, f);
    return descending ? -c : c;
  }
  /// The reference: the first record that orders before (strict: not after) its predecessor.
  [[nodiscard]] static std::optional<std::uint64_t> scan(const std::vector<std::byte>& data,
                                                         const record_format& f,
                                                         bool descending, bool strict) {
    const std::uint64_t n = data.size() / f.record_size;
    for (std::uint64_t i = 1; i < n; ++i) {
      const int c = order(data, i - 1, i, f, descending);
      if (c > 0 || (strict && c == 0)) return i;
    }
    return std::nullopt;
  }
};

TEST_P(KeyOrder, FirstDisorderMatchesAScan) {
  const record_format f = format();
  for (const bool descending : {false, true}) {
    const std::uint64_t seed = test::base_seed() + f.record_size * 7 + descending;
    SCOPED_TRACE("seed " + std::to_string(seed) + (descending ? " descending" : ""));
    std::vector<std::byte> data =
        test::reference_sort(test::random_records(records, f, seed), f, descending);
    for (const bool strict : {false, true})
      EXPECT_EQ(first_disorder(data.data(), records, nullptr, f, descending, strict),
                scan(data, f, descending, strict))
          << (strict ? "strict" : "");
    // Break the order at a few places, latest first, so that each new break is the first.
    std::mt19937_64 rng(seed);
    std::uint64_t at = records - 1;
    for (int round = 0; round < 6 && at > 1; ++round) {
      at = 1 + rng() % at;
      std::swap_ranges(data.begin() + static_cast<std::ptrdiff_t>((at - 1) * f.record_size),
                       data.begin() + static_cast<std::ptrdiff_t>(at * f.record_size),
                       data.begin() + static_cast<std::ptrdiff_t>((records - 1) * f.record_size));
      for (const bool strict : {false, true})
        EXPECT_EQ(first_disorder(data.data(), records, nullptr, f, descending, strict),
                  scan(data, f, descending, strict))
            << "round " << round << (strict ? " strict" : "");
    }
  }
}

TEST_P(KeyOrder, PreviousRecordIsComparedWithTheFirst) {
  const record_format f = format();
  const std::vector<std::byte> data =
      test::reference_sort(test::random_records(1000, f, test::base_seed()), f, false);
  const std::byte* last = data.data() + 999 * f.record_size;
  // The largest record in front of the sorted block: the first record is out of order unless
  // it equals it.
  const std::optional<std::uint64_t> got =
      first_disorder(data.data(), 1000, last, f, false, false);
  if (test::reference_compare(data.data(), last, f) < 0) {
    EXPECT_EQ(got, 0u);
  }
  EXPECT_EQ(first_disorder(data.data(), 1000, data.data(), f, false, true), 0u);
  EXPECT_EQ(first_disorder(data.data(), 1000, data.data(), f, false, false),
            scan(data, f, false, false));
  EXPECT_EQ(first_disorder(data.data(), 0, last, f, false, true), std::nullopt);
}

TEST_P(KeyOrder, UniqueKeepsTheFirstOfEachRunOfEqualKeys) {
  const record_format f = format();
  const std::uint64_t seed = test::base_seed() + 31 * f.record_size;
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Few distinct keys: long runs of equal keys, some across block boundaries. The payload
  // tells which record of a run was kept.
  std::vector<std::byte> data = test::random_records(records, f, seed);
  for (std::uint64_t i = 0; i < records; ++i)
    std::memcpy(data.data() + i * f.record_size + f.key_offset,
                data.data() + (i % 97) * f.record_size + f.key_offset, f.key_size);
  const std::vector<std::byte> sorted = test::reference_sort(data, f, false);
  std::vector<std::byte> expected;
  for (std::uint64_t i = 0; i < records; ++i)
    if (i == 0 || order(sorted, i - 1, i, f, false) != 0)
      expected.insert(expected.end(),
                      sorted.begin() + static_cast<std::ptrdiff_t>(i * f.record_size),
                      sorted.begin() + static_cast<std::ptrdiff_t>((i + 1) * f.record_size));
  const std::uint64_t expected_count = expected.size() / f.record_size;

  std::vector<std::byte> out(sorted.size());
  ASSERT_EQ(unique_records(sorted.data(), records, nullptr, out.data(), f), expected_count);
  out.resize(expected.size());
  EXPECT_EQ(out, expected) << "parallel";

  std::vector<std::byte> in_place = sorted;
  ASSERT_EQ(unique_records(in_place.data(), records, nullptr, in_place.data(), f),
            expected_count);
  in_place.resize(expected.size());
  EXPECT_EQ(in_place, expected) << "in place";

  // A previous record equal to the first drops it too.
  std::vector<std::byte> rest(sorted.size());
  EXPECT_EQ(unique_records(sorted.data(), records, sorted.data(), rest.data(), f),
            expected_count - 1);
  EXPECT_EQ(unique_records(sorted.data(), 0, nullptr, rest.data(), f), 0u);
}

INSTANTIATE_TEST_SUITE_P(Layouts, KeyOrder,
                         ::testing::Values(layout_case{"u32", 4, 0}, layout_case{"u64", 8, 0},
                                           layout_case{"i32", 16, 4}, layout_case{"i64", 16, 8},
                                           layout_case{"f32", 12, 0}, layout_case{"f64", 8, 0},
                                           layout_case{"bytes:10", 100, 0},
                                           layout_case{"bytes:3", 7, 2}),
                         case_name);

TEST(KeyText, NumbersAndBytes) {
  auto text = [](const char* type, const auto& value, std::uint32_t size) {
    std::vector<std::byte> rec(size);
    std::memcpy(rec.data(), &value, sizeof value < size ? sizeof value : size);
    return key_text(rec.data(), test::make_format(type, size, 0));
  };
  EXPECT_EQ(text("u64", std::uint64_t{18446744073709551615u}, 8), "18446744073709551615");
  EXPECT_EQ(text("i32", std::int32_t{-5}, 4), "-5");
  EXPECT_EQ(text("f64", -0.5, 8), "-0.5");
  EXPECT_EQ(text("f32", 0.1f, 4), "0.1");
  const unsigned char bytes[3] = {0x00, 0xff, 0x3a};
  EXPECT_EQ(text("bytes:3", bytes, 3), "0x00ff3a");
  std::vector<std::byte> long_key(40, std::byte{0xab});
  const std::string t = key_text(long_key.data(), test::make_format("bytes:40", 40, 0));
  std::string expected = "0x";
  for (int i = 0; i < 32; ++i) expected += "ab";
  EXPECT_EQ(t, expected + "...");
}

}  // namespace
}  // namespace gpusort::cpu
