// Tests for the multi-GPU partition planner: plans made from host histograms of real keys, the
// move simulated on the host, the result compared with a stable sort of the whole input.
#include "core/partition_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gpusort/error.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

/// A record in the simulation: its normalized key and where it was in the whole input, so that
/// the order of equal keys (stability) shows in comparisons.
struct tagged_key {
  std::uint64_t key = 0;
  std::uint64_t input_index = 0;
  friend bool operator==(const tagged_key&, const tagged_key&) = default;
};

using source_keys = std::vector<std::vector<std::uint64_t>>;

std::uint64_t prefix_of(std::uint64_t key, unsigned bits, unsigned key_bits) {
  return bits == 0 ? 0 : key >> (key_bits - bits);
}

bool in_bucket(std::uint64_t key, const key_bucket& bucket, unsigned key_bits) {
  return prefix_of(key, bucket.bits, key_bits) == bucket.prefix;
}

/// The histograms the GPUs would compute, counted on the host.
histogram_fn host_histograms(const source_keys& sources, unsigned key_bits) {
  return [&sources, key_bits](std::span<const key_bucket> buckets, unsigned digit_bits) {
    std::vector<std::vector<std::uint64_t>> out;
    for (const std::vector<std::uint64_t>& keys : sources) {
      std::vector<std::uint64_t> h(buckets.size() << digit_bits, 0);
      for (const std::uint64_t key : keys) {
        const unsigned bits = buckets.front().bits;
        const std::uint64_t prefix = prefix_of(key, bits, key_bits);
        const auto it = std::lower_bound(
            buckets.begin(), buckets.end(), prefix,
            [](const key_bucket& b, std::uint64_t p) { return b.prefix < p; });
        if (it == buckets.end() || it->prefix != prefix) continue;
        const unsigned shift = key_bits - bits - digit_bits;
        const std::uint64_t digit = (key >> shift) & ((std::uint64_t{1} << digit_bits) - 1);
        ++h[(static_cast<std::size_t>(it - buckets.begin()) << digit_bits) + digit];
      }
      out.push_back(std::move(h));
    }
    return out;
  };
}

/// Input order: source 0's keys, then source 1's, ... (each GPU holds one slice of the input).
std::vector<tagged_key> tag_input(const source_keys& sources) {
  std::vector<tagged_key> all;
  for (const std::vector<std::uint64_t>& keys : sources)
    for (const std::uint64_t key : keys) all.push_back({key, all.size()});
  return all;
}

void stable_sort_by_key(std::vector<tagged_key>& v) {
  std::stable_sort(v.begin(), v.end(),
                   [](const tagged_key& a, const tagged_key& b) { return a.key < b.key; });
}

/// Moves the records as the plan says and checks everything the header promises.
void check_plan(const partition_plan& plan, const partition_config& config,
                const source_keys& sources) {
  const std::uint32_t g = config.destinations;
  const std::uint32_t s_count = config.sources;
  std::uint64_t n = 0;
  for (const std::vector<std::uint64_t>& keys : sources) n += keys.size();
  ASSERT_EQ(plan.total_records, n);
  ASSERT_EQ(plan.begins.size(), g);
  ASSERT_EQ(plan.destination_records.size(), g);
  const unsigned max_passes = (config.key_bits + config.digit_bits - 1) / config.digit_bits;
  EXPECT_GE(plan.passes, 1u);
  EXPECT_LE(plan.passes, max_passes);

  // Sizes: the bound holds, and they add up.
  EXPECT_EQ(plan.bound(), (n + g - 1) / g + 2 * config.padding);
  std::uint64_t received = 0;
  for (std::uint32_t d = 0; d < g; ++d) {
    EXPECT_LE(plan.destination_records[d], plan.bound()) << "destination " << d;
    std::uint64_t from_sources = 0;
    for (std::uint32_t s = 0; s < s_count; ++s) {
      EXPECT_EQ(plan.receive_offset(s, d), from_sources) << "source " << s << " dest " << d;
      from_sources += plan.count(s, d);
    }
    EXPECT_EQ(from_sources, plan.destination_records[d]) << "destination " << d;
    received += from_sources;
  }
  EXPECT_EQ(received, n);

  // The move by offsets: each source laid out by key (a refinement of the leaf-bucket layout
  // the plan assumes, equal keys in input order), ranges copied to destinations in source order.
  std::vector<std::vector<tagged_key>> by_range(g);
  std::uint64_t first_index = 0;
  for (std::uint32_t s = 0; s < s_count; ++s) {
    std::vector<tagged_key> local;
    for (const std::uint64_t key : sources[s]) local.push_back({key, first_index + local.size()});
    first_index += local.size();
    stable_sort_by_key(local);
    std::uint64_t sent = 0;
    for (std::uint32_t d = 0; d < g; ++d) {
      EXPECT_EQ(plan.send_offset(s, d), sent) << "source " << s << " dest " << d;
      const auto from = local.begin() + static_cast<std::ptrdiff_t>(plan.send_offset(s, d));
      by_range[d].insert(by_range[d].end(), from,
                         from + static_cast<std::ptrdiff_t>(plan.count(s, d)));
      sent += plan.count(s, d);
    }
    EXPECT_EQ(sent, sources[s].size()) << "source " << s;
  }

  // The move by splitters, record by record in input order: the last destination whose begin
  // the record is at or after. It must agree with the offsets.
  std::vector<std::vector<tagged_key>> by_splitter(g);
  first_index = 0;
  for (std::uint32_t s = 0; s < s_count; ++s) {
    std::vector<std::uint64_t> rank_in_begin_bucket(g, 0);
    for (const std::uint64_t key : sources[s]) {
      std::uint32_t dest = 0;
      for (std::uint32_t d = 1; d < g; ++d) {
        const destination_begin& b = plan.begins[d];
        const std::uint64_t prefix = prefix_of(key, b.bucket.bits, config.key_bits);
        bool after = prefix > b.bucket.prefix;
        if (in_bucket(key, b.bucket, config.key_bits))
          after = rank_in_begin_bucket[d]++ >= b.before[s];
        if (after) dest = d;
      }
      by_splitter[dest].push_back({key, first_index++});
    }
  }

  std::vector<tagged_key> concatenated;
  for (std::uint32_t d = 0; d < g; ++d) {
    stable_sort_by_key(by_range[d]);
    stable_sort_by_key(by_splitter[d]);
    EXPECT_EQ(by_range[d], by_splitter[d]) << "destination " << d;
    concatenated.insert(concatenated.end(), by_range[d].begin(), by_range[d].end());
  }
  std::vector<tagged_key> expected = tag_input(sources);
  stable_sort_by_key(expected);
  EXPECT_TRUE(concatenated == expected) << "the destinations, each sorted stably, are not the "
                                           "stable sort of the input";
}

enum class distribution { uniform, all_equal, zipf, anded, one_heavy_prefix };

const char* name_of(distribution d) {
  switch (d) {
    case distribution::uniform: return "uniform";
    case distribution::all_equal: return "all-equal";
    case distribution::zipf: return "zipf";
    case distribution::anded: return "anded";
    case distribution::one_heavy_prefix: return "one-heavy-prefix";
  }
  return "?";
}

/// Keys of `key_bits` bits spread over `source_count` sources of random sizes summing to n.
source_keys make_keys(distribution dist, std::uint64_t n, std::uint32_t source_count,
                      unsigned key_bits, std::mt19937_64& rng) {
  const std::uint64_t mask = key_bits == 64 ? ~std::uint64_t{0}
                                            : (std::uint64_t{1} << key_bits) - 1;
  // Zipf over a few distinct keys: the heaviest holds about a fifth of the records.
  constexpr std::size_t zipf_values = 1000;
  constexpr double zipf_exponent = 1.2;
  std::vector<std::uint64_t> values(zipf_values);
  std::vector<double> weights(zipf_values);
  for (std::size_t i = 0; i < zipf_values; ++i) {
    values[i] = rng() & mask;
    weights[i] = 1.0 / std::pow(static_cast<double>(i + 1), zipf_exponent);
  }
  std::discrete_distribution<std::size_t> zipf(weights.begin(), weights.end());
  const std::uint64_t equal_key = rng() & mask;
  const std::uint64_t heavy_top = rng() & mask;
  // One heavy prefix: most keys share the top 20 bits and differ below (several passes).
  constexpr unsigned heavy_prefix_bits = 20;
  const unsigned heavy_shift = key_bits > heavy_prefix_bits ? key_bits - heavy_prefix_bits : 0;

  std::vector<std::uint64_t> all(n);
  for (std::uint64_t& key : all) {
    switch (dist) {
      case distribution::uniform: key = rng() & mask; break;
      case distribution::all_equal: key = equal_key; break;
      case distribution::zipf: key = values[zipf(rng)]; break;
      case distribution::anded: key = rng() & rng() & rng() & mask; break;
      case distribution::one_heavy_prefix:
        key = rng() % 10 != 0
                  ? ((heavy_top >> heavy_shift) << heavy_shift) |
                        (rng() & ((std::uint64_t{1} << heavy_shift) - 1))
                  : rng() & mask;
        break;
    }
  }
  // Random cut points: sources of unequal sizes, some possibly empty.
  std::vector<std::uint64_t> cuts{0, n};
  for (std::uint32_t s = 1; s < source_count; ++s) cuts.push_back(n == 0 ? 0 : rng() % (n + 1));
  std::sort(cuts.begin(), cuts.end());
  source_keys sources(source_count);
  for (std::uint32_t s = 0; s < source_count; ++s)
    sources[s].assign(all.begin() + static_cast<std::ptrdiff_t>(cuts[s]),
                      all.begin() + static_cast<std::ptrdiff_t>(cuts[s + 1]));
  return sources;
}

template <typename Key>
class partition_plan_typed_test : public ::testing::Test {
 protected:
  static constexpr unsigned key_width = sizeof(Key) * 8;
};
using key_widths = ::testing::Types<std::uint32_t, std::uint64_t>;
TYPED_TEST_SUITE(partition_plan_typed_test, key_widths);

TYPED_TEST(partition_plan_typed_test, property_destinations_concatenate_to_the_stable_sort) {
  constexpr unsigned key_bits = TestFixture::key_width;
  const std::uint64_t seed = test::base_seed() + key_bits;
  SCOPED_TRACE("seed " + std::to_string(seed) + " (GPUSORT_TEST_SEED to replay)");
  std::mt19937_64 rng(seed);
  constexpr std::uint64_t random_size_max = 20000;
  for (const distribution dist : {distribution::uniform, distribution::all_equal,
                                  distribution::zipf, distribution::anded,
                                  distribution::one_heavy_prefix})
    for (const std::uint32_t g : {1u, 2u, 3u, 8u})
      for (const std::uint32_t source_count : {1u, 4u})
        for (const std::uint64_t n :
             {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{g},
              std::uint64_t{1000}, 1 + rng() % random_size_max}) {
          partition_config config;
          config.key_bits = key_bits;
          config.digit_bits = 8;
          config.sources = source_count;
          config.destinations = g;
          config.padding = default_padding(n, g);
          const source_keys sources = make_keys(dist, n, source_count, key_bits, rng);
          SCOPED_TRACE(std::string(name_of(dist)) + ", n " + std::to_string(n) + ", g " +
                       std::to_string(g) + ", sources " + std::to_string(source_count));
          const partition_plan plan = plan_partition(config, host_histograms(sources, key_bits));
          check_plan(plan, config, sources);
          if (::testing::Test::HasFailure()) return;
        }
}

TYPED_TEST(partition_plan_typed_test, digit_widths_and_paddings) {
  constexpr unsigned key_bits = TestFixture::key_width;
  const std::uint64_t seed = test::base_seed() + 100 + key_bits;
  SCOPED_TRACE("seed " + std::to_string(seed) + " (GPUSORT_TEST_SEED to replay)");
  std::mt19937_64 rng(seed);
  constexpr std::uint64_t n = 5000;
  for (const unsigned digit_bits : {min_digit_bits, 5u, 11u, max_digit_bits})
    for (const std::uint64_t padding : {std::uint64_t{0}, std::uint64_t{50}, n})
      for (const distribution dist : {distribution::zipf, distribution::one_heavy_prefix}) {
        partition_config config;
        config.key_bits = key_bits;
        config.digit_bits = digit_bits;
        config.sources = 3;
        config.destinations = 5;
        config.padding = padding;
        const source_keys sources = make_keys(dist, n, config.sources, key_bits, rng);
        SCOPED_TRACE(std::string(name_of(dist)) + ", digit bits " + std::to_string(digit_bits) +
                     ", padding " + std::to_string(padding));
        check_plan(plan_partition(config, host_histograms(sources, key_bits)), config, sources);
        if (::testing::Test::HasFailure()) return;
      }
}

TYPED_TEST(partition_plan_typed_test, all_equal_keys_split_exactly_after_every_pass) {
  constexpr unsigned key_bits = TestFixture::key_width;
  partition_config config;
  config.key_bits = key_bits;
  config.digit_bits = 8;
  config.sources = 2;
  config.destinations = 3;
  config.padding = 1;
  const source_keys sources{std::vector<std::uint64_t>(500, 42),
                            std::vector<std::uint64_t>(501, 42)};
  const partition_plan plan = plan_partition(config, host_histograms(sources, key_bits));
  // One key: only refining every digit shows that no bit is left to split on.
  EXPECT_EQ(plan.passes, key_bits / config.digit_bits);
  EXPECT_EQ(plan.destination_records, (std::vector<std::uint64_t>{333, 334, 334}));
  // Destination 1 begins 333 records into the key: all from source 0.
  EXPECT_EQ(plan.begins[1].before, (std::vector<std::uint64_t>{333, 0}));
  // Destination 2 begins at 667: source 0's 500, then 167 of source 1's.
  EXPECT_EQ(plan.begins[2].before, (std::vector<std::uint64_t>{500, 167}));
  check_plan(plan, config, sources);
}

/// Two sources of 8-bit keys with 4-bit digits, small enough to follow by hand.
source_keys hand_example() {
  return {{0x10, 0x10, 0x10, 0x20}, {0x21, 0x21, 0x30, 0x30}};
}

partition_config hand_config(std::uint64_t padding) {
  partition_config config;
  config.key_bits = 8;
  config.digit_bits = 4;
  config.sources = 2;
  config.destinations = 2;
  config.padding = padding;
  return config;
}

TEST(partition_plan, padding_keeps_a_slightly_overflowing_bucket_whole) {
  // Top digits: 0x1 (3 records), 0x2 (3), 0x3 (2); the ideal boundary, 4, is one record into
  // bucket 0x2: within a padding of 1, it moves to the bucket's start, and one pass suffices.
  const source_keys sources = hand_example();
  const partition_config config = hand_config(1);
  const partition_plan plan = plan_partition(config, host_histograms(sources, 8));
  EXPECT_EQ(plan.passes, 1u);
  EXPECT_EQ(plan.destination_records, (std::vector<std::uint64_t>{3, 5}));
  EXPECT_EQ(plan.counts, (std::vector<std::uint64_t>{3, 1, 0, 4}));
  EXPECT_EQ(plan.send_offsets, (std::vector<std::uint64_t>{0, 3, 0, 0}));
  EXPECT_EQ(plan.receive_offsets, (std::vector<std::uint64_t>{0, 0, 3, 1}));
  EXPECT_EQ(plan.begins[1].bucket, (key_bucket{0x2, 4}));
  EXPECT_EQ(plan.begins[1].before, (std::vector<std::uint64_t>{0, 0}));
  EXPECT_EQ(plan.bound(), 6u);
  check_plan(plan, config, sources);
}

TEST(partition_plan, without_padding_a_spanning_bucket_is_refined) {
  // Without padding, bucket 0x2 spans both destinations; its low digits put 0x20 (source 0)
  // and 0x21 (source 1) in buckets of their own, and the boundary falls between them.
  const source_keys sources = hand_example();
  const partition_config config = hand_config(0);
  const partition_plan plan = plan_partition(config, host_histograms(sources, 8));
  EXPECT_EQ(plan.passes, 2u);
  EXPECT_EQ(plan.destination_records, (std::vector<std::uint64_t>{4, 4}));
  EXPECT_EQ(plan.begins[1].bucket, (key_bucket{0x21, 8}));
  check_plan(plan, config, sources);
}

TEST(partition_plan, one_destination_takes_everything_in_one_pass) {
  const source_keys sources{{5, 1, 9}, {}, {7}};
  partition_config config;
  config.key_bits = 64;
  config.sources = 3;
  config.destinations = 1;
  const partition_plan plan = plan_partition(config, host_histograms(sources, 64));
  EXPECT_EQ(plan.passes, 1u);
  EXPECT_EQ(plan.counts, (std::vector<std::uint64_t>{3, 0, 1}));
  check_plan(plan, config, sources);
}

TEST(partition_plan, empty_input_gives_empty_destinations) {
  const source_keys sources{{}, {}};
  partition_config config;
  config.sources = 2;
  config.destinations = 3;
  const partition_plan plan = plan_partition(config, host_histograms(sources, 64));
  EXPECT_EQ(plan.passes, 1u);
  EXPECT_EQ(plan.destination_records, (std::vector<std::uint64_t>{0, 0, 0}));
  EXPECT_EQ(plan.bound(), 0u);
}

TEST(partition_plan, default_padding_is_half_a_percent_of_a_share) {
  EXPECT_EQ(default_padding(0, 4), 0u);
  EXPECT_EQ(default_padding(800, 4), 1u);
  EXPECT_EQ(default_padding(std::uint64_t{1} << 31, 2), (std::uint64_t{1} << 30) / 200);
  EXPECT_THROW(static_cast<void>(default_padding(1, 0)), error);
}

TEST(partition_plan, invalid_configs_are_refused) {
  partition_config config;
  config.key_bits = 0;
  EXPECT_THROW(partition_planner{config}, error);
  config.key_bits = 65;
  EXPECT_THROW(partition_planner{config}, error);
  config = {};
  config.digit_bits = max_digit_bits + 1;
  EXPECT_THROW(partition_planner{config}, error);
  config = {};
  config.sources = 0;
  EXPECT_THROW(partition_planner{config}, error);
  config = {};
  config.destinations = 0;
  EXPECT_THROW(partition_planner{config}, error);
}

TEST(partition_plan, histograms_that_do_not_fit_are_refused) {
  partition_config config;
  config.key_bits = 8;
  config.digit_bits = 4;
  config.sources = 2;
  config.destinations = 2;
  partition_planner planner(config);
  EXPECT_THROW(static_cast<void>(planner.plan()), error);  // before any pass
  EXPECT_EQ(planner.pending(), (std::vector<key_bucket>{key_bucket{}}));
  EXPECT_EQ(planner.next_histogram_size(), 16u);
  // One source's histogram missing, then one of the wrong size.
  const std::vector<std::vector<std::uint64_t>> one{std::vector<std::uint64_t>(16, 0)};
  EXPECT_THROW(planner.add_histograms(one), error);
  const std::vector<std::vector<std::uint64_t>> short_one{std::vector<std::uint64_t>(16, 0),
                                                          std::vector<std::uint64_t>(15, 0)};
  EXPECT_THROW(planner.add_histograms(short_one), error);
  // Every key in bucket 3: the boundary spans it, and it is refined.
  std::vector<std::vector<std::uint64_t>> first(2, std::vector<std::uint64_t>(16, 0));
  first[0][3] = 10;
  first[1][3] = 10;
  planner.add_histograms(first);
  ASSERT_FALSE(planner.done());
  EXPECT_EQ(planner.pending(), (std::vector<key_bucket>{key_bucket{3, 4}}));
  // A refinement that counts other keys than the first pass did.
  std::vector<std::vector<std::uint64_t>> wrong(2, std::vector<std::uint64_t>(16, 0));
  wrong[0][0] = 9;
  wrong[1][0] = 10;
  EXPECT_THROW(planner.add_histograms(wrong), error);
}

}  // namespace
}  // namespace gpusort
