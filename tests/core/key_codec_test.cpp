// Key normalization: round trips and order against an independent totalOrder oracle.
#include "gpusort/detail/key_codec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "test_support.hpp"

namespace gpusort {
namespace {

template <typename T, key_type Type, typename Word>
struct key_kind {
  using value = T;
  using word = Word;
  static constexpr key_type type = Type;
};

using numeric_kinds =
    ::testing::Types<key_kind<std::uint32_t, key_type::u32, std::uint32_t>,
                     key_kind<std::int32_t, key_type::i32, std::uint32_t>,
                     key_kind<float, key_type::f32, std::uint32_t>,
                     key_kind<std::uint64_t, key_type::u64, std::uint64_t>,
                     key_kind<std::int64_t, key_type::i64, std::uint64_t>,
                     key_kind<double, key_type::f64, std::uint64_t>>;

/// IEEE 754 totalOrder "x < y", written from the definition rather than from bit tricks:
/// -NaN < -inf < negative numbers < -0 < +0 < positive numbers < +inf < +NaN; NaNs of one sign
/// order by payload (greater payload further from zero).
template <typename T>
bool total_order_less(T x, T y) {
  if constexpr (std::is_floating_point_v<T>) {
    auto klass = [](T v) { return std::isnan(v) ? (std::signbit(v) ? 0 : 2) : 1; };
    if (klass(x) != klass(y)) return klass(x) < klass(y);
    if (klass(x) == 1) {
      if (x < y) return true;
      if (y < x) return false;
      return std::signbit(x) && !std::signbit(y);  // -0 < +0; equal otherwise
    }
    using bits_t = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    const bits_t magnitude_mask = std::numeric_limits<bits_t>::max() >> 1;
    const bits_t mx = std::bit_cast<bits_t>(x) & magnitude_mask;
    const bits_t my = std::bit_cast<bits_t>(y) & magnitude_mask;
    return std::signbit(x) ? mx > my : mx < my;
  } else {
    return x < y;
  }
}

template <typename T>
std::vector<T> edge_values() {
  using lim = std::numeric_limits<T>;
  std::vector<T> v = {T(0), T(1), lim::min(), lim::max(), lim::lowest(), T(lim::max() - 1),
                      T(lim::lowest() + 1)};
  if constexpr (std::is_signed_v<T>) v.insert(v.end(), {T(-1), T(-2)});
  if constexpr (std::is_floating_point_v<T>) {
    using bits_t = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    constexpr bits_t sign = bits_t{1} << (sizeof(T) * 8 - 1);
    v.insert(v.end(), {-T(0), lim::infinity(), -lim::infinity(), lim::quiet_NaN(),
                       -lim::quiet_NaN(), lim::signaling_NaN(), -lim::signaling_NaN(),
                       lim::denorm_min(), -lim::denorm_min(), lim::epsilon(), T(-1.5), T(2.5)});
    // NaNs with the largest and smallest payloads, both signs.
    const bits_t exp_all = std::bit_cast<bits_t>(lim::infinity());
    for (bits_t payload : {bits_t{1}, (sign - 1) & ~exp_all}) {
      v.push_back(std::bit_cast<T>(exp_all | payload));
      v.push_back(std::bit_cast<T>(sign | exp_all | payload));
    }
  }
  return v;
}

template <typename T>
std::vector<T> test_values(std::uint64_t seed) {
  std::vector<T> v = edge_values<T>();
  std::mt19937_64 rng(seed);
  using word_t = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  for (int i = 0; i < 2000; ++i) v.push_back(std::bit_cast<T>(static_cast<word_t>(rng())));
  return v;
}

template <typename Kind>
class key_codec_test : public ::testing::Test {};
TYPED_TEST_SUITE(key_codec_test, numeric_kinds);

TYPED_TEST(key_codec_test, round_trips) {
  using T = typename TypeParam::value;
  using W = typename TypeParam::word;
  const std::uint64_t seed = test::base_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  for (bool descending : {false, true}) {
    const auto codec = detail::make_key_codec<W>(TypeParam::type, descending);
    for (T v : test_values<T>(seed)) {
      const W bits = std::bit_cast<W>(v);
      EXPECT_EQ(codec.denormalize(codec.normalize(bits)), bits) << "descending " << descending;
    }
  }
}

TYPED_TEST(key_codec_test, orders_like_total_order) {
  using T = typename TypeParam::value;
  using W = typename TypeParam::word;
  const std::uint64_t seed = test::base_seed() + 1;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<T> values = test_values<T>(seed);
  const auto up = detail::make_key_codec<W>(TypeParam::type, false);
  const auto down = detail::make_key_codec<W>(TypeParam::type, true);
  const std::size_t edges = edge_values<T>().size();
  // Every edge value against every value; random values against a neighbour.
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::size_t j_end = i < edges ? values.size() : std::min(values.size(), i + 2);
    for (std::size_t j = i < edges ? 0 : i; j < j_end; ++j) {
      const T x = values[i];
      const T y = values[j];
      const W bx = std::bit_cast<W>(x);
      const W by = std::bit_cast<W>(y);
      const bool less = total_order_less(x, y);
      EXPECT_EQ(up.normalize(bx) < up.normalize(by), less) << x << " vs " << y;
      EXPECT_EQ(down.normalize(bx) < down.normalize(by), total_order_less(y, x))
          << x << " vs " << y << " descending";
      EXPECT_EQ(up.normalize(bx) == up.normalize(by), bx == by);
    }
  }
}

TYPED_TEST(key_codec_test, sorted_edges_have_increasing_keys) {
  using T = typename TypeParam::value;
  using W = typename TypeParam::word;
  std::vector<T> v = edge_values<T>();
  std::sort(v.begin(), v.end(), [](T a, T b) { return total_order_less(a, b); });
  // Drop bitwise duplicates (min() == 0 for none here, but lowest()+1 may equal others).
  v.erase(std::unique(v.begin(), v.end(),
                      [](T a, T b) { return std::bit_cast<W>(a) == std::bit_cast<W>(b); }),
          v.end());
  const auto up = detail::make_key_codec<W>(TypeParam::type, false);
  for (std::size_t i = 1; i < v.size(); ++i)
    EXPECT_LT(up.normalize(std::bit_cast<W>(v[i - 1])), up.normalize(std::bit_cast<W>(v[i])))
        << v[i - 1] << " before " << v[i];
}

TEST(key_codec, float_landmarks) {
  const auto f = detail::make_key_codec<std::uint32_t>(key_type::f32, false);
  auto n = [&](float x) { return f.normalize(std::bit_cast<std::uint32_t>(x)); };
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_LT(n(-nan), n(-inf));
  EXPECT_LT(n(-inf), n(-1.0f));
  EXPECT_LT(n(-1.0f), n(-0.0f));
  EXPECT_LT(n(-0.0f), n(0.0f));
  EXPECT_LT(n(0.0f), n(1.0f));
  EXPECT_LT(n(1.0f), n(inf));
  EXPECT_LT(n(inf), n(nan));
  const auto d = detail::make_key_codec<std::uint64_t>(key_type::f64, true);
  auto m = [&](double x) { return d.normalize(std::bit_cast<std::uint64_t>(x)); };
  EXPECT_GT(m(-0.0), m(0.0));
  EXPECT_GT(m(-std::numeric_limits<double>::infinity()), m(-1e300));
}

TEST(key_codec, word_width) {
  EXPECT_TRUE(detail::has_32bit_word(key_type::u32));
  EXPECT_TRUE(detail::has_32bit_word(key_type::i32));
  EXPECT_TRUE(detail::has_32bit_word(key_type::f32));
  EXPECT_FALSE(detail::has_32bit_word(key_type::u64));
  EXPECT_FALSE(detail::has_32bit_word(key_type::i64));
  EXPECT_FALSE(detail::has_32bit_word(key_type::f64));
  EXPECT_FALSE(detail::has_32bit_word(key_type::bytes));
}

}  // namespace
}  // namespace gpusort
