// Tests of gpusort-validate: the key orders, and that the command line accepts a correct sort
// and reports each kind of damage (order, changed, dropped, duplicated records) with exit 1.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "datagen/generator.hpp"
#include "test_support.hpp"
#include "tools_test_support.hpp"
#include "validate/validator.hpp"

namespace gpusort::test {
namespace {

using tools::compare_keys;

template <typename T>
int cmp(T a, T b, const char* type) {
  record_format f;
  set_key_type(f, type);
  std::byte x[sizeof(T)];
  std::byte y[sizeof(T)];
  std::memcpy(x, &a, sizeof(T));
  std::memcpy(y, &b, sizeof(T));
  return compare_keys(x, y, f);
}

double f64_bits(std::uint64_t b) { return std::bit_cast<double>(b); }
float f32_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

TEST(ValidateOrder, FloatsFollowTotalOrder) {
  // -NaN < -inf < -max < -1 < -denormal < -0.0 < +0.0 < +denormal < 1 < +max < +inf < +NaN
  const std::vector<double> ascending = {
      f64_bits(0xffffffffffffffffull), f64_bits(0xfff8000000000000ull),
      f64_bits(0xfff0000000000001ull), -std::numeric_limits<double>::infinity(),
      -std::numeric_limits<double>::max(), -1.0, -std::numeric_limits<double>::denorm_min(),
      -0.0, 0.0, std::numeric_limits<double>::denorm_min(), 1.0,
      std::numeric_limits<double>::max(), std::numeric_limits<double>::infinity(),
      f64_bits(0x7ff0000000000001ull), f64_bits(0x7ff8000000000000ull),
      f64_bits(0x7fffffffffffffffull)};
  for (std::size_t i = 0; i < ascending.size(); ++i) {
    for (std::size_t j = 0; j < ascending.size(); ++j) {
      const int expected = i < j ? -1 : (i > j ? 1 : 0);
      ASSERT_EQ(cmp(ascending[i], ascending[j], "f64"), expected) << i << " vs " << j;
    }
  }
  EXPECT_LT(cmp(f32_bits(0xffc00000), -std::numeric_limits<float>::infinity(), "f32"), 0);
  EXPECT_LT(cmp(-0.0f, 0.0f, "f32"), 0);
  EXPECT_GT(cmp(f32_bits(0x7fc00000), std::numeric_limits<float>::infinity(), "f32"), 0);
  EXPECT_GT(cmp(f32_bits(0x00000001), 0.0f, "f32"), 0);
}

TEST(ValidateOrder, IntegersAndBytes) {
  EXPECT_LT(cmp<std::int32_t>(-5, 3, "i32"), 0);
  EXPECT_GT(cmp<std::uint32_t>(0xfffffffbu, 3u, "u32"), 0);  // same bits, unsigned
  EXPECT_LT(cmp<std::int64_t>(std::numeric_limits<std::int64_t>::min(), -1, "i64"), 0);
  EXPECT_GT(cmp<std::uint64_t>(1ull << 63, 1, "u64"), 0);
  EXPECT_EQ(cmp<std::uint64_t>(42, 42, "u64"), 0);
  record_format b;
  set_key_type(b, "bytes:3");
  const std::byte x[3] = {std::byte{1}, std::byte{0xff}, std::byte{0}};
  const std::byte y[3] = {std::byte{2}, std::byte{0}, std::byte{0}};
  EXPECT_LT(compare_keys(x, y, b), 0);  // lexicographic, first byte decides
  EXPECT_GT(compare_keys(y, x, b), 0);
}

TEST(ValidateHash, OrderIndependentAndSensitive) {
  const std::vector<std::byte> bytes = random_records(1000, format_preset("kv64"), base_seed());
  tools::multiset_hash forward;
  tools::multiset_hash backward;
  for (std::size_t i = 0; i < 1000; ++i) tools::add_record(forward, bytes.data() + i * 16, 16);
  for (std::size_t i = 1000; i-- > 0;) tools::add_record(backward, bytes.data() + i * 16, 16);
  EXPECT_EQ(forward, backward);
  std::vector<std::byte> changed = bytes;
  changed[16 * 500 + 9] ^= std::byte{0x40};  // one bit of one value
  tools::multiset_hash other;
  for (std::size_t i = 0; i < 1000; ++i) tools::add_record(other, changed.data() + i * 16, 16);
  EXPECT_NE(other.h1, forward.h1);
  EXPECT_NE(other.h2, forward.h2);
}

// --- the command line --------------------------------------------------------------------

/// Input records from the generator, the reference sort of them, and a validator to run.
class validate_cli : public ::testing::Test {
 protected:
  void make(const std::string& format_args, const record_format& format, const std::string& dist,
            std::uint64_t count, bool descending = false) {
    format_args_ = format_args;
    format_ = format;
    tools::generator_config c;
    c.format = format;
    c.dist = tools::parse_distribution(dist);
    c.count = count;
    c.seed = base_seed();
    const tools::record_generator gen(c);
    input_.resize(count * format.record_size);
    gen.generate(0, count, input_);
    write_bytes(in(), input_);
    // The reference: a stable sort by a comparison written here, not the validator's.
    sorted_ = split_records(input_, format.record_size);
    const std::uint32_t ko = format.key_offset;
    auto key_less = [&](const std::string& a, const std::string& b) {
      return descending ? less(b.data() + ko, a.data() + ko) : less(a.data() + ko, b.data() + ko);
    };
    std::stable_sort(sorted_.begin(), sorted_.end(), key_less);
  }

  bool less(const char* a, const char* b) const {
    switch (format_.type) {
      case key_type::u64: {
        std::uint64_t x, y;
        std::memcpy(&x, a, 8);
        std::memcpy(&y, b, 8);
        return x < y;
      }
      case key_type::f64: {
        std::uint64_t x, y;
        std::memcpy(&x, a, 8);
        std::memcpy(&y, b, 8);
        auto order = [](std::uint64_t v) { return (v >> 63) ? ~v : v | (1ull << 63); };
        return order(x) < order(y);
      }
      case key_type::bytes:
        return std::memcmp(a, b, format_.key_size) < 0;
      default:
        ADD_FAILURE() << "no reference order for this type";
        return false;
    }
  }

  command_result check(const std::vector<std::string>& records, const std::string& extra = "") {
    write_bytes(out(), join_records(records));
    return run_command(sh_quote(GPUSORT_VALIDATE) + " " + format_args_ + " " + extra + " " +
                       in() + " " + out());
  }

  static void expect_failure(const command_result& r, const std::string& words) {
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << "expected '" << words << "' in:\n"
                                                       << r.output;
  }

  /// The damage every format must catch.
  void expect_all_damage_caught() {
    const std::uint64_t n = sorted_.size();
    EXPECT_EQ(check(sorted_).status, 0) << check(sorted_).output;

    std::vector<std::string> swapped = sorted_;
    std::uint64_t i = n / 3;
    auto key_at = [&](std::size_t j) { return swapped[j].data() + format_.key_offset; };
    while (i + 1 < n && !less(key_at(i + 1), key_at(i)) && !less(key_at(i), key_at(i + 1)))
      ++i;  // find a pair with different keys
    std::swap(swapped[i], swapped[i + 1]);
    expect_failure(check(swapped), "order: ");
    expect_failure(check(swapped), "record " + std::to_string(i) + " has key");
    expect_failure(check(swapped), "record " + std::to_string(i + 1) + " has key");

    std::vector<std::string> changed = sorted_;
    // A byte outside the key (or the last key's lowest byte): the order still holds.
    const std::uint32_t at = format_.record_size > format_.key_size
                                 ? (format_.key_offset == 0 ? format_.record_size - 1 : 0)
                                 : 0;
    changed[n / 2][at] = static_cast<char>(changed[n / 2][at] ^ 0x01);
    const command_result c = check(changed);
    if (format_.record_size > format_.key_size) {
      expect_failure(c, "content: ");
      expect_failure(c, "different records");
      EXPECT_EQ(c.output.find("order:"), std::string::npos) << c.output;
    } else {
      EXPECT_EQ(c.status, 1) << c.output;  // a changed key byte: content (and maybe order)
      EXPECT_NE(c.output.find("different records"), std::string::npos) << c.output;
    }

    std::vector<std::string> dropped = sorted_;
    dropped.erase(dropped.begin() + static_cast<std::ptrdiff_t>(n / 4));
    const command_result d = check(dropped);
    expect_failure(d, "record count differs");
    expect_failure(d, "1 missing");

    std::vector<std::string> duplicated = sorted_;
    duplicated[n / 5 + 1] = duplicated[n / 5];  // still sorted, same count
    const command_result dup = check(duplicated);
    expect_failure(dup, "different records");

    std::vector<std::string> extra = sorted_;
    extra.insert(extra.begin() + static_cast<std::ptrdiff_t>(n / 2), extra[n / 2]);
    expect_failure(check(extra), "1 extra");

    // A truncated last record.
    std::vector<std::byte> cut = join_records(sorted_);
    cut.resize(cut.size() - 3);
    write_bytes(out(), cut);
    const command_result t = run_command(sh_quote(GPUSORT_VALIDATE) + " " + format_args_ + " " +
                                         in() + " " + out());
    expect_failure(t, "not a whole number");
  }

  std::string in() const { return dir_.file("in.bin"); }
  std::string out() const { return dir_.file("out.bin"); }

  scratch_dir dir_;
  std::string format_args_;
  record_format format_;
  std::vector<std::byte> input_;
  std::vector<std::string> sorted_;
};

TEST_F(validate_cli, U64) {
  SCOPED_TRACE("GPUSORT_TEST_SEED=" + std::to_string(base_seed()));
  make("", format_preset("u64"), "uniform", 10000);
  expect_all_damage_caught();
  // Descending order is checked with -r, and ascending output fails it.
  std::vector<std::string> desc(sorted_.rbegin(), sorted_.rend());
  EXPECT_EQ(check(desc, "-r").status, 0);
  expect_failure(check(sorted_, "-r"), "not in descending order");
  // With one file, the order alone.
  write_bytes(out(), join_records(sorted_));
  EXPECT_EQ(run_command(sh_quote(GPUSORT_VALIDATE) + " " + out()).status, 0);
}

TEST_F(validate_cli, F64WithNaNsInfinitiesAndSignedZeros) {
  SCOPED_TRACE("GPUSORT_TEST_SEED=" + std::to_string(base_seed()));
  make("--type f64", format_preset("f64"), "special", 10000);
  // The reference puts negative NaNs first and positive NaNs last.
  std::uint64_t first = 0;
  std::uint64_t last = 0;
  std::memcpy(&first, sorted_.front().data(), 8);
  std::memcpy(&last, sorted_.back().data(), 8);
  EXPECT_TRUE(std::isnan(std::bit_cast<double>(first)) && (first >> 63));
  EXPECT_TRUE(std::isnan(std::bit_cast<double>(last)) && !(last >> 63));
  expect_all_damage_caught();

  // -0.0 must come before +0.0: swap the boundary between them.
  std::vector<std::string> zeros = sorted_;
  const std::string neg_zero("\0\0\0\0\0\0\0\x80", 8);
  const std::string pos_zero(8, '\0');
  const auto it = std::find(zeros.begin(), zeros.end(), pos_zero);
  ASSERT_NE(it, zeros.end());
  ASSERT_EQ(*(it - 1), neg_zero);
  std::iter_swap(it - 1, it);
  expect_failure(check(zeros), "record " + std::to_string(it - 1 - zeros.begin()) + " has key 0 ");
  // A NaN moved to the middle breaks the order.
  std::vector<std::string> nan_mid = sorted_;
  std::swap(nan_mid.back(), nan_mid[nan_mid.size() / 2]);
  expect_failure(check(nan_mid), "+nan");
}

TEST_F(validate_cli, Gensort) {
  SCOPED_TRACE("GPUSORT_TEST_SEED=" + std::to_string(base_seed()));
  make("--format gensort", format_preset("gensort"), "uniform", 1000);
  expect_all_damage_caught();
  EXPECT_EQ(check(sorted_, "--stable").status, 0) << check(sorted_, "--stable").output;
}

TEST_F(validate_cli, StabilityNeedsIncreasingIndexes) {
  SCOPED_TRACE("GPUSORT_TEST_SEED=" + std::to_string(base_seed()));
  make("--format kv64", format_preset("kv64"), "few:5", 5000);
  EXPECT_EQ(check(sorted_, "--stable").status, 0);
  // Swap two records with equal keys: still ordered, same records, but not stable.
  std::vector<std::string> unstable = sorted_;
  std::swap(unstable[100], unstable[101]);
  ASSERT_EQ(unstable[100].substr(0, 8), unstable[101].substr(0, 8));
  EXPECT_EQ(check(unstable).status, 0);
  const command_result r = check(unstable, "--stable");
  expect_failure(r, "stability: ");
  expect_failure(r, "records 100 and 101");
  // Descending and stable: equal keys still in input order.
  make("--format kv64", format_preset("kv64"), "few:5", 5000, /*descending=*/true);
  EXPECT_EQ(check(sorted_, "-r --stable").status, 0);
  // Key-only records carry no index: --stable cannot be checked (trouble, not failure).
  make("", format_preset("u64"), "few:5", 100);
  EXPECT_EQ(check(sorted_, "--stable").status, 2);
}

TEST_F(validate_cli, TroubleExitsWithTwo) {
  make("", format_preset("u64"), "uniform", 100);
  write_bytes(out(), join_records(sorted_));
  const std::string tool = sh_quote(GPUSORT_VALIDATE) + " ";
  EXPECT_EQ(run_command(tool + in() + " " + dir_.file("missing.bin")).status, 2);
  EXPECT_EQ(run_command(tool + dir_.file("missing.bin") + " " + out()).status, 2);
  std::vector<std::byte> partial = input_;
  partial.resize(partial.size() - 1);
  write_bytes(dir_.file("partial.bin"), partial);
  EXPECT_EQ(run_command(tool + dir_.file("partial.bin") + " " + out()).status, 2);
  EXPECT_EQ(run_command(tool + "--bogus " + in() + " " + out()).status, 2);
  EXPECT_EQ(run_command(tool + in()).status, 1);  // the unsorted input alone: not ordered
  EXPECT_EQ(run_command(tool + "--help").status, 0);
}

}  // namespace
}  // namespace gpusort::test
