// Strategy gpu_partition's key ranges on the CPU: the classifier against a plain search, and
// counts, ranges and range starts against the records sorted by the reference sort.
#include "pipeline/key_partition.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpusort/error.hpp"
#include "test_support.hpp"

namespace gpusort::pipeline {
namespace {

/// The bucket of `key` by its definition: 2j, or 2j + 1 where key is s_j, for j the splitters
/// below it.
std::size_t plain_bucket(const std::vector<std::uint64_t>& s, std::uint64_t key) {
  const auto j = static_cast<std::size_t>(std::lower_bound(s.begin(), s.end(), key) - s.begin());
  return 2 * j + (j < s.size() && s[j] == key ? 1 : 0);
}

TEST(BucketClassifier, AgreesWithAPlainSearchByTableAndByTree) {
  for (const unsigned bits : {32u, 64u}) {
    for (const bool crowded : {false, true}) {
      for (const std::size_t m : {0, 1, 2, 3, 7, 8, 9, 300, 1023, 1024, 1025}) {
        const std::uint64_t seed = test::base_seed() + m * 4 + bits + crowded;
        SCOPED_TRACE("bits " + std::to_string(bits) + (crowded ? " crowded" : " spread") +
                     " splitters " + std::to_string(m) + " seed " + std::to_string(seed));
        std::mt19937_64 rng(seed);
        const std::uint64_t mask = bits == 32 ? 0xffffffffull : ~std::uint64_t{0};
        const unsigned shift = bits - 16;
        // Spread keys; crowded: also AND-ed small ones and many of one top-bits slot.
        const auto draw = [&](std::size_t i) -> std::uint64_t {
          if (!crowded || i % 3 == 0) return rng() & mask;
          if (i % 3 == 1) return rng() & rng() & rng() & 0xffff;
          return ((std::uint64_t{5} << shift) + (rng() % 100000)) & mask;
        };
        std::vector<std::uint64_t> s;
        while (s.size() < m) {
          for (std::size_t i = 0; i < m; ++i) s.push_back(draw(i));
          if (m > 4) {
            s[0] = 0;
            s[1] = mask;
          }
          std::sort(s.begin(), s.end());
          s.erase(std::unique(s.begin(), s.end()), s.end());
        }
        s.resize(m);
        const bucket_classifier classes(s, bits);
        ASSERT_EQ(classes.buckets(), 2 * m + 1);
        ASSERT_EQ(std::vector<std::uint64_t>(classes.splitters().begin(),
                                             classes.splitters().end()),
                  s);
        if (m >= 300) {
          EXPECT_EQ(classes.by_table(), !crowded);
        }
        std::vector<std::uint64_t> probes = {0, 1, 2, mask, mask - 1};
        for (const std::uint64_t k : s) {
          probes.push_back(k);
          probes.push_back((k + 1) & mask);
          probes.push_back((k - 1) & mask);
        }
        for (std::size_t i = 0; i < 30000; ++i) probes.push_back(draw(i));
        for (const std::uint64_t k : probes) ASSERT_EQ(classes.bucket(k), plain_bucket(s, k)) << k;
        // A batch classifies as its keys one by one.
        for (std::size_t at = 0; at + bucket_classifier::batch <= probes.size();
             at += bucket_classifier::batch) {
          std::uint64_t keys[bucket_classifier::batch];
          std::size_t out[bucket_classifier::batch];
          std::copy_n(probes.begin() + static_cast<std::ptrdiff_t>(at), bucket_classifier::batch,
                      keys);
          classes.buckets_of(keys, out);
          for (std::size_t u = 0; u < bucket_classifier::batch; ++u)
            ASSERT_EQ(out[u], plain_bucket(s, keys[u])) << keys[u];
        }
      }
    }
  }
  EXPECT_THROW(bucket_classifier({5, 5}, 64), gpusort::error);
  EXPECT_THROW(bucket_classifier({6, 5}, 64), gpusort::error);
  EXPECT_THROW(bucket_classifier({std::uint64_t{1} << 40}, 32), gpusort::error);
}

TEST(ChooseSplitters, EvenRanksWithoutRepeats) {
  std::vector<std::uint64_t> sample;
  for (std::uint64_t i = 0; i < 1000; ++i) sample.push_back(999 - i);
  EXPECT_EQ(choose_splitters(sample, 4), (std::vector<std::uint64_t>{125, 375, 625, 875}));
  // A key half the sample holds is one splitter (its bucket of equal keys); the other half
  // keeps its share of them.
  std::vector<std::uint64_t> heavy(1000, 7);
  for (std::uint64_t i = 0; i < 500; ++i) heavy[i] = 1000 + i;
  EXPECT_EQ(choose_splitters(heavy, 4), (std::vector<std::uint64_t>{7, 1125, 1375}));
  EXPECT_EQ(choose_splitters(std::vector<std::uint64_t>(50, 3), 8),
            (std::vector<std::uint64_t>{3}));
  EXPECT_TRUE(choose_splitters({}, 8).empty());
  EXPECT_EQ(choose_splitters({9, 1}, 8), (std::vector<std::uint64_t>{1, 9}));
}

TEST(PartitionSample, OneRecordInEachStrideAndSplittersByRanges) {
  for (const std::uint64_t records : {1ull, 5ull, 32768ull, 100003ull, 1ull << 31}) {
    for (const std::uint64_t count : {1ull, 7ull, 32768ull}) {
      std::uint64_t last = 0;
      for (std::uint64_t k = 0; k < count; ++k) {
        const std::uint64_t at = sample_position(k, count, records);
        ASSERT_LT(at, records);
        if (records >= count) {
          // Within its own stride, so no record is sampled twice.
          ASSERT_GE(at, records * k / count);
          ASSERT_LT(at, records * (k + 1) / count + (k + 1 == count ? 0 : 1));
          if (k > 0) {
            ASSERT_GT(at, last);
          }
        }
        last = at;
      }
    }
  }
  EXPECT_EQ(partition_splitters(1000, 1000), 511u);
  EXPECT_EQ(partition_splitters(std::uint64_t{1} << 31, 84871477), 511u);  // 26 ranges
  EXPECT_EQ(partition_splitters(100 * 1000, 1000), 1600u);
  EXPECT_EQ(partition_splitters(std::uint64_t{1} << 40, 1000), 16383u);
  EXPECT_EQ(partition_splitters(5, 0), 511u);
}

enum class keys { uniform, few, equal, and3, sorted };

std::string name(keys k) {
  switch (k) {
    case keys::uniform: return "uniform";
    case keys::few: return "three keys";
    case keys::equal: return "all equal";
    case keys::and3: return "AND of 3";
    case keys::sorted: return "sorted";
  }
  return "?";
}

/// Records of `f` whose keys are drawn as `k` (random payloads).
std::vector<std::byte> make_records(keys k, std::uint64_t count, const record_format& f,
                                    std::uint64_t seed) {
  std::vector<std::byte> data = test::random_records(count, f, seed);
  std::mt19937_64 rng(seed + 1);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t key = 0;
    switch (k) {
      case keys::uniform: key = rng(); break;
      case keys::few: key = 0x4000000000000000ull * (rng() % 3) + 17; break;
      case keys::equal: key = 0x5a5a5a5a5a5a5a5aull; break;
      case keys::and3: key = rng() & rng() & rng(); break;
      case keys::sorted: key = i * 0x9e3779b9ull; break;
    }
    std::byte* at = data.data() + i * f.record_size + f.key_offset;
    if (f.key_size == 4) {
      const auto narrow = static_cast<std::uint32_t>(key >> 32 ^ key);
      std::memcpy(at, &narrow, 4);
    } else {
      std::memcpy(at, &key, 8);
    }
  }
  return data;
}

TEST(KeyRanges, CountedRangesCutTheSortedRecordsWhereTheirStartsSay) {
  struct format_case {
    const char* type;
    std::uint32_t record_size;
    std::uint32_t key_offset;
  };
  const format_case formats[] = {{"u64", 8, 0}, {"f64", 16, 8}, {"i32", 12, 4}, {"u32", 4, 0}};
  tbb::task_arena arena(4);
  for (const format_case& fc : formats) {
    const record_format f = test::make_format(fc.type, fc.record_size, fc.key_offset);
    for (const keys k : {keys::uniform, keys::few, keys::equal, keys::and3, keys::sorted}) {
      for (const bool descending : {false, true}) {
        const std::uint64_t count = 300007;
        const std::uint64_t seed = test::base_seed() ^ (fc.record_size * 31 + (descending ? 7 : 0) +
                                                        static_cast<std::uint64_t>(k));
        SCOPED_TRACE(std::string(fc.type) + " " + name(k) + (descending ? " desc" : " asc") +
                     " seed " + std::to_string(seed));
        const std::vector<std::byte> data = make_records(k, count, f, seed);
        const key_reader reader(f, descending);
        std::vector<std::uint64_t> sample;
        std::mt19937_64 rng(seed);
        for (int i = 0; i < 2048; ++i)
          sample.push_back(reader(data.data() + rng() % count * f.record_size));
        const bucket_classifier classes(choose_splitters(sample, 64), reader.key_bits());
        const std::vector<std::uint64_t> counts = count_buckets(data, reader, classes, arena);
        std::uint64_t sum = 0;
        for (const std::uint64_t c : counts) sum += c;
        ASSERT_EQ(sum, count);

        const std::uint64_t max_records = 40000;
        const auto ranges = group_ranges(classes, counts, max_records);
        ASSERT_TRUE(ranges.has_value());
        const std::vector<std::byte> sorted = test::reference_sort(data, f, descending);
        std::uint64_t next = 0;
        for (std::size_t r = 0; r < ranges->size(); ++r) {
          const key_range& range = (*ranges)[r];
          ASSERT_EQ(range.first_record, next) << "range " << r;
          ASSERT_GT(range.records, 0u) << "range " << r;
          if (!range.one_key) {
            EXPECT_LE(range.records, max_records) << "range " << r;
          }
          next += range.records;
          // The range begins in the sorted records where its start says, and its count ends it.
          if (r > 0) {
            EXPECT_EQ(records_before(sorted.data(), count, reader, range.start), range.first_record)
                << "range " << r;
          }
          const std::uint64_t first_key =
              reader(sorted.data() + range.first_record * f.record_size);
          const std::uint64_t last_key =
              reader(sorted.data() + (range.first_record + range.records - 1) * f.record_size);
          if (range.one_key) {
            EXPECT_EQ(first_key, last_key) << "range " << r;
          }
        }
        EXPECT_EQ(next, count);
        // Ranges of one key are the only ones over the bound, and all-equal keys are one.
        if (k == keys::equal) {
          ASSERT_EQ(ranges->size(), 1u);
          EXPECT_TRUE(ranges->front().one_key);
        }
        if (k == keys::uniform) {
          EXPECT_LE(ranges->size(), 2 * (count / max_records + 1));
        }
      }
    }
  }
}

TEST(KeyRanges, ABucketBetweenSplittersOverAChunkIsRefused) {
  const bucket_classifier classes({10, 20}, 64);
  // Buckets: below 10, 10, between, 20, above.
  EXPECT_FALSE(group_ranges(classes, std::vector<std::uint64_t>{1, 1, 101, 1, 1}, 100));
  // The same count in the bucket of key 20 is a range of its own, in order among the others.
  const auto ranges = group_ranges(classes, std::vector<std::uint64_t>{30, 0, 50, 101, 60}, 100);
  ASSERT_TRUE(ranges);
  ASSERT_EQ(ranges->size(), 3u);
  EXPECT_EQ((*ranges)[0].records, 80u);
  EXPECT_FALSE((*ranges)[0].one_key);
  EXPECT_EQ((*ranges)[1].records, 101u);
  EXPECT_TRUE((*ranges)[1].one_key);
  EXPECT_EQ((*ranges)[1].start.key, 20u);
  EXPECT_FALSE((*ranges)[1].start.after);
  EXPECT_EQ((*ranges)[2].records, 60u);
  EXPECT_EQ((*ranges)[2].first_record, 181u);
  EXPECT_TRUE((*ranges)[2].start.after);
  EXPECT_EQ((*ranges)[2].start.key, 20u);
  EXPECT_THROW(static_cast<void>(group_ranges(classes, std::vector<std::uint64_t>{1, 2}, 100)),
               gpusort::error);
}

}  // namespace
}  // namespace gpusort::pipeline
