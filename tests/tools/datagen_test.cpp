// Tests of gpusort-datagen: determinism (threads, output paths, windows) and distribution shape.
#include <tbb/global_control.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "common/tool_support.hpp"
#include "datagen/generator.hpp"
#include "gpusort/error.hpp"
#include "test_support.hpp"
#include "tools_test_support.hpp"

namespace gpusort::test {
namespace {

using tools::distribution;
using tools::generator_config;
using tools::parse_distribution;
using tools::record_generator;

generator_config make_config(const std::string& preset, const std::string& dist,
                             std::uint64_t count, std::uint64_t seed = 7) {
  generator_config c;
  c.format = format_preset(preset);
  c.dist = parse_distribution(dist);
  c.count = count;
  c.seed = seed;
  return c;
}

std::vector<std::byte> generate_all(const generator_config& config) {
  const record_generator gen(config);
  std::vector<std::byte> out(config.count * config.format.record_size);
  gen.generate(0, config.count, out);
  return out;
}

template <typename T>
std::vector<T> as_keys(const std::vector<std::byte>& bytes, std::uint32_t record_size = sizeof(T),
                       std::uint32_t key_offset = 0) {
  std::vector<T> keys(bytes.size() / record_size);
  for (std::size_t i = 0; i < keys.size(); ++i)
    std::memcpy(&keys[i], bytes.data() + i * record_size + key_offset, sizeof(T));
  return keys;
}

// totalOrder for doubles, written here independently of the tools: the classic bit flip.
std::uint64_t f64_order(double d) {
  const std::uint64_t b = std::bit_cast<std::uint64_t>(d);
  return (b >> 63) ? ~b : b | (std::uint64_t{1} << 63);
}

const std::uint64_t n = 65536;

TEST(DatagenDeterminism, SameBytesForAnyThreadCountAndCut) {
  const std::uint64_t seed = base_seed();
  SCOPED_TRACE("GPUSORT_TEST_SEED=" + std::to_string(seed));
  for (const auto& [fmt, dist] : std::vector<std::pair<std::string, std::string>>{
           {"u64", "uniform"}, {"u64", "and:3"}, {"kv64", "few:16"}, {"gensort", "uniform"},
           {"f32", "special"}, {"i32", "nearly:0.05"}, {"u64", "zipf:0.75"},
           {"f64", "sorted"}, {"u32", "reverse"}, {"i64", "equal"}}) {
    SCOPED_TRACE(fmt + " " + dist);
    const generator_config config = make_config(fmt, dist, 20000, seed);
    std::vector<std::byte> one;
    {
      const tbb::global_control c(tbb::global_control::max_allowed_parallelism, 1);
      one = generate_all(config);
    }
    std::vector<std::byte> many;
    {
      const tbb::global_control c(tbb::global_control::max_allowed_parallelism, 8);
      many = generate_all(config);
    }
    EXPECT_EQ(one, many);
    // Block by block, last block first: the same bytes again.
    const record_generator gen(config);
    const std::uint64_t b = gen.block_records();
    const std::uint32_t rs = config.format.record_size;
    std::vector<std::byte> pieces(one.size());
    for (std::uint64_t first = (config.count - 1) / b * b;; first -= b) {
      const std::uint64_t cnt = std::min(b, config.count - first);
      gen.generate(first, cnt, std::span(pieces).subspan(first * rs, cnt * rs));
      if (first == 0) break;
    }
    EXPECT_EQ(one, pieces);
    // Another seed, other bytes (except for a distribution that has none to vary).
    generator_config other = config;
    other.seed = seed + 1;
    if (dist != "sorted" && dist != "reverse") {
      EXPECT_NE(one, generate_all(other));
    }
  }
}

TEST(DatagenDeterminism, CommandLineOutputsAgree) {
  scratch_dir dir;
  const std::string tool = sh_quote(GPUSORT_DATAGEN);
  const std::string common = " --format kv64 --count 300000 -d zipf:0.9 --seed 11 -q";
  ASSERT_EQ(run_command(tool + common + " -j 1 -o " + dir.file("a.bin")).status, 0);
  ASSERT_EQ(
      run_command(tool + common + " -j 3 --write-method uring -o " + dir.file("b.bin")).status, 0);
  ASSERT_EQ(run_command(tool + common + " --write-method mmap -o " + dir.file("c.bin")).status, 0);
  ASSERT_EQ(run_command(tool + common + " -o - > " + dir.file("d.bin")).status, 0);
  const std::vector<std::byte> a = read_bytes(dir.file("a.bin"));
  EXPECT_EQ(a.size(), 300000u * 16);
  EXPECT_EQ(a, read_bytes(dir.file("b.bin")));
  EXPECT_EQ(a, read_bytes(dir.file("c.bin")));
  EXPECT_EQ(a, read_bytes(dir.file("d.bin")));
  // --size is the same as the matching --count.
  ASSERT_EQ(run_command(tool + " --format kv64 --size 4800000 -d zipf:0.9 --seed 11 -q -o " +
                        dir.file("e.bin")).status, 0);
  EXPECT_EQ(a, read_bytes(dir.file("e.bin")));
}

TEST(ToolThreads, HugeThreadCountsAreCapped) {
  // -j 4294967295 made TBB fail to allocate ("error: std::bad_alloc"): capped at the hardware.
  scratch_dir dir;
  const std::string a = dir.file("a.bin");
  const command_result gen =
      run_command(sh_quote(GPUSORT_DATAGEN) + " -j 4294967295 --count 1000 -q -o " + a);
  ASSERT_EQ(gen.status, 0) << gen.output;
  EXPECT_EQ(read_bytes(a).size(), 8000u);
  const command_result check =
      run_command(sh_quote(GPUSORT_VALIDATE) + " -j 4294967295 -q " + a + " " + a);
  EXPECT_NE(check.status, 2) << "the random file is out of order (1), not trouble (2): "
                             << check.output;
  EXPECT_EQ(check.output.find("bad_alloc"), std::string::npos) << check.output;
}

TEST(DatagenCommandLine, RejectsBadArguments) {
  scratch_dir dir;
  const std::string tool = sh_quote(GPUSORT_DATAGEN);
  const std::string out = " -o " + dir.file("x.bin");
  for (const std::string args :
       {"--count 10 -d and:0", "--count 10 -d zipf", "--count 10 -d nearly:0.7",
        "--count 10 -d bogus", "--count 10 --type u128", "-d uniform",
        "--size 12 --type u64", "--count 10 --format gensort --key-offset 95"}) {
    SCOPED_TRACE(args);
    const command_result r = run_command(tool + " " + args + out);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("gpusort-datagen"), std::string::npos) << r.output;
  }
  const command_result help = run_command(tool + " --help");
  EXPECT_EQ(help.status, 0);
  for (const char* word : {"--distribution", "zipf:S", "nearly:F", "few:K", "and:Q", "--finite",
                           "--record-size", "--key-offset", "--format", "gensort"})
    EXPECT_NE(help.output.find(word), std::string::npos) << word;
}

TEST(DatagenDistributions, AndReducesSetBitsByTwoToTheQ) {
  const auto uniform = as_keys<std::uint64_t>(generate_all(make_config("u64", "uniform", n)));
  const auto and3 = as_keys<std::uint64_t>(generate_all(make_config("u64", "and:3", n)));
  double bits_uniform = 0;
  double bits_and3 = 0;
  for (std::uint64_t k : uniform) bits_uniform += std::popcount(k);
  for (std::uint64_t k : and3) bits_and3 += std::popcount(k);
  // Each bit of an AND of 3 uniform words is set with probability 1/8 (uniform: 1/2), so
  // and:3 keys have 1/8 of their bits set: a quarter of the uniform keys' count.
  EXPECT_NEAR(bits_uniform / (64.0 * n), 0.5, 0.005);
  EXPECT_NEAR(bits_and3 / (64.0 * n), 1.0 / 8, 0.002);
  EXPECT_NEAR(bits_and3 / bits_uniform, 1.0 / 4, 0.005);
}

TEST(DatagenDistributions, SortedAndReverseAreOrderedForEveryType) {
  {
    const auto keys = as_keys<std::uint64_t>(generate_all(make_config("u64", "sorted", n)));
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
    EXPECT_EQ(std::set<std::uint64_t>(keys.begin(), keys.end()).size(), n);  // distinct
    EXPECT_GT(keys.back() - keys.front(), ~std::uint64_t{0} / 2);  // spread over the space
  }
  {
    const auto keys = as_keys<std::uint64_t>(generate_all(make_config("u64", "reverse", n)));
    EXPECT_TRUE(std::is_sorted(keys.rbegin(), keys.rend()));
  }
  {
    const auto keys = as_keys<std::int32_t>(generate_all(make_config("i32", "sorted", n)));
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
    EXPECT_LT(keys.front(), 0);
    EXPECT_GT(keys.back(), 0);
  }
  {
    const auto keys = as_keys<double>(generate_all(make_config("f64", "reverse", n)));
    for (std::size_t i = 1; i < keys.size(); ++i)
      ASSERT_GE(f64_order(keys[i - 1]), f64_order(keys[i])) << i;
  }
  {
    generator_config c = make_config("f32", "sorted", n);
    c.finite = true;
    const auto keys = as_keys<float>(generate_all(c));
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));  // finite: plain < is totalOrder
    for (float k : keys) ASSERT_TRUE(std::isfinite(k));
  }
  {
    generator_config c = make_config("u64", "sorted", 5000);
    set_key_type(c.format, "bytes:16");
    c.format.record_size = 40;
    c.format.key_offset = 12;
    const std::vector<std::byte> bytes = generate_all(c);
    for (std::uint64_t i = 1; i < c.count; ++i)
      ASSERT_LT(std::memcmp(bytes.data() + (i - 1) * 40 + 12, bytes.data() + i * 40 + 12, 16), 0);
  }
}

TEST(DatagenDistributions, NearlySortedIsMostlySorted) {
  const auto sorted = as_keys<std::uint64_t>(generate_all(make_config("u64", "sorted", n)));
  const auto nearly = as_keys<std::uint64_t>(generate_all(make_config("u64", "nearly:0.01", n)));
  std::uint64_t moved = 0;
  std::uint64_t descents = 0;
  for (std::size_t i = 0; i < n; ++i) moved += sorted[i] != nearly[i];
  for (std::size_t i = 1; i < n; ++i) descents += nearly[i - 1] > nearly[i];
  EXPECT_EQ(moved, 2 * 655u);  // round(0.01 * n) swaps of disjoint pairs
  EXPECT_GT(descents, 0u);
  EXPECT_LE(descents, 2 * 655u);
  // Same multiset as the sorted keys: only swaps happened.
  std::vector<std::uint64_t> resorted = nearly;
  std::sort(resorted.begin(), resorted.end());
  EXPECT_EQ(resorted, sorted);
}

TEST(DatagenDistributions, EqualAndFew) {
  const auto equal = as_keys<std::uint64_t>(generate_all(make_config("u64", "equal", n)));
  EXPECT_EQ(std::set<std::uint64_t>(equal.begin(), equal.end()).size(), 1u);
  const auto few = as_keys<std::uint32_t>(generate_all(make_config("u32", "few:16", n)));
  const std::set<std::uint32_t> distinct(few.begin(), few.end());
  EXPECT_LE(distinct.size(), 16u);
  EXPECT_GE(distinct.size(), 15u);  // 65536 draws hit every one of 16 values
}

TEST(DatagenDistributions, ZipfSkewIsVisible) {
  for (const double s : {0.75, 1.0, 1.5}) {
    SCOPED_TRACE("zipf:" + std::to_string(s));
    const auto keys = as_keys<std::uint64_t>(
        generate_all(make_config("u64", "zipf:" + std::to_string(s), 1 << 20)));
    std::unordered_map<std::uint64_t, std::uint64_t> counts;
    for (std::uint64_t k : keys) ++counts[k];
    std::vector<std::uint64_t> freq;
    for (const auto& [k, c] : counts) freq.push_back(c);
    std::sort(freq.rbegin(), freq.rend());
    // Rank 1 is 2^s times as frequent as rank 2; uniform keys would all be distinct.
    ASSERT_GE(freq.size(), 2u);
    EXPECT_GT(freq[0], 20u);
    EXPECT_NEAR(static_cast<double>(freq[0]) / static_cast<double>(freq[1]), std::pow(2.0, s),
                0.35 * std::pow(2.0, s));
    // The frequent keys are scattered over the key space, not small numbers.
    const std::uint64_t top = std::max_element(counts.begin(), counts.end(), [](auto& a, auto& b) {
                                return a.second < b.second;
                              })->first;
    EXPECT_GT(top, std::uint64_t{1} << 40);
  }
  // zipf:1 over a domain of 1000: the top rank takes 1/H(1000) ~ 13.4% of the keys.
  const auto small = as_keys<std::uint64_t>(generate_all(make_config("u64", "zipf:1:1000", n)));
  std::map<std::uint64_t, std::uint64_t> counts;
  for (std::uint64_t k : small) ++counts[k];
  EXPECT_LE(counts.size(), 1000u);
  std::uint64_t top = 0;
  for (const auto& [k, c] : counts) top = std::max(top, c);
  EXPECT_NEAR(static_cast<double>(top) / n, 1 / 7.485, 0.01);
}

TEST(DatagenDistributions, FloatUniformHasSpecialValuesUnlessFinite) {
  const auto keys = as_keys<float>(generate_all(make_config("f32", "uniform", n)));
  const auto nans = std::count_if(keys.begin(), keys.end(), [](float f) { return std::isnan(f); });
  EXPECT_NEAR(static_cast<double>(nans) / n, 1.0 / 256, 0.002);  // raw bits: 2^24 NaNs of 2^32
  generator_config c = make_config("f32", "and:2", n);
  c.finite = true;
  for (float f : as_keys<float>(generate_all(c))) ASSERT_TRUE(std::isfinite(f));
  c = make_config("f64", "uniform", n);
  c.finite = true;
  for (double f : as_keys<double>(generate_all(c))) ASSERT_TRUE(std::isfinite(f));

  const auto special = as_keys<std::uint64_t>(generate_all(make_config("f64", "special", 4096)));
  const std::set<std::uint64_t> seen(special.begin(), special.end());
  for (std::uint64_t bits : {0x8000000000000000ull, 0ull, 0x7ff0000000000000ull,
                             0xfff0000000000000ull, 0x7ff8000000000000ull, 0xfff8000000000000ull})
    EXPECT_TRUE(seen.count(bits)) << std::hex << bits;
}

TEST(DatagenPayload, IndexesAndGensortLayout) {
  // kv64: the value is the record's index.
  const std::vector<std::byte> kv = generate_all(make_config("kv64", "few:4", 10000));
  const auto values = as_keys<std::uint64_t>(kv, 16, 8);
  for (std::uint64_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], i);
  // A u32 key with a 4-byte value: the low 4 bytes of the index.
  generator_config c = make_config("u32", "uniform", 70000);
  c.format.record_size = 8;
  const auto small = as_keys<std::uint32_t>(generate_all(c), 8, 4);
  for (std::uint64_t i = 0; i < small.size(); ++i)
    ASSERT_EQ(small[i], static_cast<std::uint32_t>(i));
  // A key at offset 8 leaves the index before it; filler bytes past both vary.
  c = make_config("u64", "uniform", 100);
  c.format.record_size = 32;
  c.format.key_offset = 8;
  const std::vector<std::byte> wide = generate_all(c);
  const tools::index_field field = tools::locate_index(c.format);
  EXPECT_EQ(field.offset, 0u);
  for (std::uint64_t i = 0; i < 100; ++i)
    ASSERT_EQ(tools::read_index(wide.data() + i * 32, field), i);
  // gensort: fixed bytes and the record number in hex.
  const std::vector<std::byte> gs = generate_all(make_config("gensort", "uniform", 1000));
  const record_format g = format_preset("gensort");
  const tools::index_field gf = tools::locate_index(g);
  EXPECT_EQ(gf.how, tools::index_field::encoding::gensort_hex);
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const std::byte* r = gs.data() + i * 100;
    ASSERT_EQ(tools::read_index(r, gf), i);
    EXPECT_EQ(static_cast<unsigned>(r[10]), 0x00u);
    EXPECT_EQ(static_cast<unsigned>(r[11]), 0x11u);
    EXPECT_EQ(static_cast<unsigned>(r[44]), 0x88u);
    EXPECT_EQ(static_cast<unsigned>(r[99]), 0xffu);
  }
  const std::string hex(reinterpret_cast<const char*>(gs.data()) + 100 * 255 + 12, 32);
  EXPECT_EQ(hex, "000000000000000000000000000000FF");
}

TEST(DatagenParse, Distributions) {
  EXPECT_EQ(tools::distribution_name(parse_distribution("and:3")), "and:3");
  EXPECT_EQ(tools::distribution_name(parse_distribution("zipf:0.75")), "zipf:0.75");
  EXPECT_EQ(tools::distribution_name(parse_distribution("zipf:1.5:1000")), "zipf:1.5:1000");
  EXPECT_EQ(tools::distribution_name(parse_distribution("nearly:0.01")), "nearly:0.01");
  EXPECT_EQ(tools::distribution_name(parse_distribution("few:16")), "few:16");
  for (const char* bad : {"", "uniform:1", "and", "and:0", "and:65", "zipf:-1", "zipf:x",
                          "nearly:0.6", "few:0", "few:-3", "sorted:2", "gauss"})
    EXPECT_THROW((void)parse_distribution(bad), gpusort::error) << bad;
}

}  // namespace
}  // namespace gpusort::test
