// sample_key_spread on real files, and the CPU crossover it moves.
#include "pipeline/key_sample.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "io/input_source.hpp"
#include "pipeline/plan.hpp"
#include "test_support.hpp"

namespace gpusort::pipeline {
namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

enum class keys { uniform, equal, and2, and3, sorted, reverse };

/// `count` records of `record_size` bytes whose key (at `key_offset`, `Word` wide) is drawn as
/// `k`; the rest of each record is random.
template <typename Word>
std::vector<std::byte> make_records(keys k, std::uint64_t count, std::uint32_t record_size,
                                    std::uint32_t key_offset, std::uint64_t seed) {
  std::vector<std::byte> data = test::random_bytes(count * record_size, seed);
  std::mt19937_64 rng(seed);
  for (std::uint64_t i = 0; i < count; ++i) {
    Word key = 0;
    switch (k) {
      case keys::uniform: key = static_cast<Word>(rng()); break;
      case keys::equal: key = static_cast<Word>(0x5a5a5a5a5a5a5a5aull); break;
      case keys::and2: key = static_cast<Word>(rng() & rng()); break;
      case keys::and3: key = static_cast<Word>(rng() & rng() & rng()); break;
      case keys::sorted:
        key = static_cast<Word>((~Word{0} / count) * static_cast<Word>(i));
        break;
      case keys::reverse:
        key = static_cast<Word>((~Word{0} / count) * static_cast<Word>(count - 1 - i));
        break;
    }
    std::memcpy(data.data() + i * record_size + key_offset, &key, sizeof key);
  }
  return data;
}

struct sampled_case {
  const char* type;
  keys k;
  key_spread expected;
};

TEST(KeySample, ClassifiesTheKeysOfAFileInThePageCache) {
  const test::scratch_dir dir;
  const sampled_case cases[] = {
      {"u64", keys::uniform, key_spread::even},
      {"u64", keys::sorted, key_spread::patterned},
      {"u64", keys::reverse, key_spread::patterned},
      {"u64", keys::and2, key_spread::patterned},
      {"u64", keys::equal, key_spread::few_distinct},
      {"u64", keys::and3, key_spread::skewed},
      {"u32", keys::uniform, key_spread::even},
      {"u32", keys::reverse, key_spread::patterned},
      {"u32", keys::equal, key_spread::few_distinct},
      {"u32", keys::and3, key_spread::skewed},
      {"i64", keys::uniform, key_spread::even},
      {"f64", keys::equal, key_spread::few_distinct},
  };
  // The classes depend on how the keys spread, not on how many there are: 2^20 records do.
  constexpr std::uint64_t count = std::uint64_t{1} << 20;
  int index = 0;
  for (const sampled_case& c : cases) {
    const std::uint64_t seed = test::base_seed() + static_cast<std::uint64_t>(index++);
    SCOPED_TRACE(std::string(c.type) + " case " + std::to_string(index) + ", seed " +
                 std::to_string(seed));
    const bool wide = std::string(c.type).ends_with("64");
    // Records of 16 bytes with the key at offset 4: the sample reads the key, not the record.
    const record_format format = test::make_format(c.type, 16, 4);
    const std::string path = dir.file("in-" + std::to_string(index) + ".bin");
    test::write_file(path, wide ? make_records<std::uint64_t>(c.k, count, 16, 4, seed)
                                : make_records<std::uint32_t>(c.k, count, 16, 4, seed));
    const io::input_source input({path}, format.record_size);
    EXPECT_EQ(sample_key_spread(input, format, /*descending=*/false), c.expected);
  }
}

TEST(KeySample, SeveralInputsAreSampledAsOne) {
  const test::scratch_dir dir;
  const record_format format = test::make_format("u64", 8, 0);
  const std::uint64_t seed = test::base_seed() + 40;
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Equal keys in the first file, uniform in the second: the sample spans both.
  test::write_file(dir.file("a.bin"),
                   make_records<std::uint64_t>(keys::equal, std::uint64_t{1} << 20, 8, 0, seed));
  test::write_file(dir.file("b.bin"), make_records<std::uint64_t>(
                                          keys::uniform, std::uint64_t{1} << 20, 8, 0, seed + 1));
  const io::input_source both({dir.file("a.bin"), dir.file("b.bin")}, 8);
  EXPECT_NE(sample_key_spread(both, format, false), key_spread::few_distinct);
  EXPECT_NE(sample_key_spread(both, format, false), key_spread::unknown);
  // An empty input among them holds no sample.
  test::write_file(dir.file("empty.bin"), {});
  const io::input_source with_empty({dir.file("empty.bin"), dir.file("a.bin")}, 8);
  EXPECT_EQ(sample_key_spread(with_empty, format, false), key_spread::few_distinct);
}

TEST(KeySample, UnknownWhereNothingCanBeSampledCheaply) {
  const test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed() + 50;
  SCOPED_TRACE("seed " + std::to_string(seed));
  // Fewer records than the sample.
  const record_format u64 = test::make_format("u64", 8, 0);
  test::write_file(dir.file("small.bin"),
                   make_records<std::uint64_t>(keys::uniform, input_key_sample_size - 1, 8, 0,
                                               seed));
  EXPECT_EQ(sample_key_spread(io::input_source({dir.file("small.bin")}, 8), u64, false),
            key_spread::unknown);
  // Keys that are not numbers.
  const record_format gensort = test::make_format("bytes:10", 100, 0);
  test::write_file(dir.file("gensort.bin"),
                   test::random_bytes(100 * (std::uint64_t{1} << 15), seed));
  EXPECT_EQ(sample_key_spread(io::input_source({dir.file("gensort.bin")}, 100), gensort, false),
            key_spread::unknown);
}

TEST(CpuCrossover, TheKeysAndTheRecordsMoveIt) {
  // 16 CPUs, as on the H100 machine the limits were measured on.
  const cpu_crossover base = cpu_crossover_for(16, key_spread::patterned);
  EXPECT_EQ(base.bytes, 896 * MiB);
  EXPECT_EQ(base.records, 160 * MiB);
  EXPECT_EQ(cpu_crossover_for(16, key_spread::unknown).bytes, base.bytes);
  EXPECT_EQ(cpu_crossover_for(16, key_spread::even).bytes, GiB);
  EXPECT_EQ(cpu_crossover_for(16, key_spread::even).records, base.records);
  EXPECT_EQ(cpu_crossover_for(16, key_spread::few_distinct).bytes, 4 * base.bytes);
  EXPECT_EQ(cpu_crossover_for(16, key_spread::few_distinct).records, 4 * base.records);
  EXPECT_EQ(cpu_crossover_for(16, key_spread::skewed).bytes, base.bytes / 2);
  EXPECT_EQ(cpu_crossover_for(16, key_spread::skewed).records, base.records);
  EXPECT_EQ(cpu_crossover_for(2, key_spread::patterned).bytes, 112 * MiB) << "fewer CPUs: lower";

  sort_options u64;
  u64.format = test::make_format("u64", 8, 0);
  sort_options u32;
  u32.format = test::make_format("u32", 4, 0);
  // (options, bytes, spread) -> the CPU? The cases the H100 measured, CPU s against the GPU's
  // (tools/bench/results/2026-11-28-h100-auto/; the GPU's include 0.21-0.40 s of CUDA start).
  const struct {
    const sort_options* options;
    std::uint64_t bytes;
    key_spread spread;
    bool cpu;
  } table[] = {
      {&u64, GiB, key_spread::even, true},            // uniform, Zipf 0.29-0.33; 0.33-0.35
      {&u64, GiB, key_spread::patterned, false},      // sorted, reverse, AND 2 0.39-0.46
      {&u64, GiB, key_spread::unknown, false},        // no sample: as patterned
      {&u64, GiB / 4, key_spread::even, true},        // 0.10-0.12 against 0.29-0.31
      {&u64, GiB / 4, key_spread::patterned, true},
      {&u32, GiB, key_spread::even, false},           // 0.49-0.62 against 0.35-0.42
      {&u32, GiB / 4, key_spread::even, true},        // 0.14-0.18 against 0.28-0.31
      {&u32, 640 * MiB, key_spread::even, true},      // H200: 0.28-0.29 against 0.31
      {&u32, 640 * MiB, key_spread::patterned, true},  // sorted 0.29-0.31 against 0.32-0.34
      {&u32, GiB, key_spread::unknown, false},        // the records decide without a sample
      {&u64, GiB, key_spread::few_distinct, true},    // 0.18 against 0.33-0.38
      {&u32, GiB, key_spread::few_distinct, true},    // 0.20-0.21 against 0.34-0.37
      {&u64, 4 * GiB, key_spread::few_distinct, false},  // 0.66 against 0.67 (a tie)
      {&u32, 4 * GiB, key_spread::few_distinct, false},  // 0.73 against 0.66
      {&u64, GiB, key_spread::skewed, false},         // AND of 3: 0.55-0.63 against 0.33-0.39
      {&u64, GiB / 4, key_spread::skewed, true},      // 0.18 against 0.30 (AND of 5: 0.30, a tie)
      {&u32, GiB / 4, key_spread::skewed, true},      // 0.17-0.24 against 0.28-0.29
      {&u32, GiB, key_spread::skewed, false},         // 0.51-0.63 against 0.32-0.45
  };
  for (const auto& row : table) {
    const std::string why = cpu_crossover_reason(*row.options, row.bytes, 16, row.spread);
    EXPECT_EQ(!why.empty(), row.cpu) << row.bytes << " bytes of " << row.options->format.record_size
                                     << "-byte records, spread " << static_cast<int>(row.spread);
  }
  EXPECT_NE(cpu_crossover_reason(u64, 2 * GiB, 16, key_spread::few_distinct)
                .find("few distinct values"),
            std::string::npos);
  // Only inputs between the widest and the narrowest crossover are worth sampling.
  EXPECT_FALSE(crossover_depends_on_keys(u64, 100 * MiB, 16));
  EXPECT_TRUE(crossover_depends_on_keys(u64, GiB, 16));
  EXPECT_TRUE(crossover_depends_on_keys(u64, 3 * GiB, 16));
  EXPECT_FALSE(crossover_depends_on_keys(u64, 4 * GiB, 16));
  EXPECT_FALSE(crossover_depends_on_keys(u64, std::nullopt, 16)) << "a stream";
  sort_options on_gpu = u64;
  on_gpu.algo = algorithm::onesweep;
  EXPECT_FALSE(crossover_depends_on_keys(on_gpu, GiB, 16)) << "the GPU was asked for";
  sort_options merging = u64;
  merging.merge_only = true;
  EXPECT_FALSE(crossover_depends_on_keys(merging, GiB, 16)) << "--merge sorts nothing";
}

}  // namespace
}  // namespace gpusort::pipeline
