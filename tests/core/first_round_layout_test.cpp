// Tests for the layout of a multi-GPU exchange that is HRS's first round: random digit counts,
// every destination's buffer and every staging buffer checked key range by key range.
#include "core/first_round_layout.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpusort/error.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

constexpr std::size_t digits = 256;

/// Destinations of about equal size, each boundary moved to the next digit edge.
std::vector<std::uint64_t> records_on_digit_edges(const std::vector<first_round_source>& sources) {
  const std::size_t g = sources.size();
  std::vector<std::uint64_t> totals(digits, 0);
  std::uint64_t n = 0;
  for (const first_round_source& s : sources)
    for (std::size_t k = 0; k < digits; ++k) {
      totals[k] += s.digit_counts[k];
      n += s.digit_counts[k];
    }
  std::vector<std::uint64_t> records(g, 0);
  std::uint64_t at = 0;
  std::size_t d = 0;
  for (std::size_t k = 0; k < digits; ++k) {
    while (d + 1 < g && at >= n / g * (d + 1)) ++d;
    records[d] += totals[k];
    at += totals[k];
  }
  return records;
}

/// Ranges [first, first + count) must be disjoint and cover [0, size) exactly.
void expect_tiling(std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges, std::uint64_t size,
                   const std::string& what) {
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t at = 0;
  for (const auto& [first, count] : ranges) {
    EXPECT_EQ(first, at) << what;
    at = first + count;
  }
  EXPECT_EQ(at, size) << what;
}

/// Every invariant the multi-GPU sort relies on.
void check(const std::vector<first_round_source>& sources,
           const std::vector<std::uint64_t>& records, bool overlap,
           const first_round_layout& l) {
  const std::size_t g = sources.size();
  // Each destination's buffer: its digits in order, sources in order within a digit, tiled.
  for (std::size_t d = 0; d < g; ++d) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges, early;
    for (std::size_t k = 0; k < digits; ++k) {
      if (l.owner[k] != d) continue;
      std::uint64_t at = l.digit_at[k];
      std::uint64_t total = 0;
      for (std::size_t s = 0; s < g; ++s) {
        const std::uint64_t c = sources[s].digit_counts[k];
        total += c;
        if (c == 0) continue;
        EXPECT_EQ(l.to[s][k], at) << "source " << s << " digit " << k;
        ranges.emplace_back(l.to[s][k], c);
        if (!l.late[k]) early.emplace_back(l.to[s][k], c);
        at += c;
      }
      EXPECT_EQ(l.owned[d][k], total) << "digit " << k;
    }
    expect_tiling(ranges, records[d], "destination " + std::to_string(d));
    // The early group is a prefix of the buffer; the late group follows it.
    expect_tiling(early, l.early_records[d], "early digits of " + std::to_string(d));
  }
  bool any_staged = false;
  for (std::size_t s = 0; s < g; ++s) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> staged;
    std::uint64_t staged_keys = 0;
    for (std::size_t k = 0; k < digits; ++k) {
      const std::uint64_t c = sources[s].digit_counts[k];
      const bool other_gpu = sources[l.owner[k]].device != sources[s].device;
      EXPECT_EQ(l.crosses[s][k], l.staged[s] && other_gpu && c != 0) << s << " " << k;
      if (!l.crosses[s][k]) continue;
      staged.emplace_back(l.stage[s][k], c);
      staged_keys += c;
      EXPECT_LE(l.stage[s][k] + c, sources[s].staging_capacity);
      // Late keys stay out of what the source's own early sort writes while they are copied.
      if (l.late[k]) {
        EXPECT_GE(l.stage[s][k], l.early_records[s]) << s << " " << k;
      }
    }
    std::sort(staged.begin(), staged.end());
    for (std::size_t i = 1; i < staged.size(); ++i)
      EXPECT_LE(staged[i - 1].first + staged[i - 1].second, staged[i].first) << "source " << s;
    if (l.staged[s]) {
      EXPECT_GT(staged_keys, 0u);
    }
    any_staged = any_staged || l.staged[s];
  }
  EXPECT_EQ(l.split, overlap && any_staged);
  if (!l.split) {
    EXPECT_EQ(l.early_records, records);
    EXPECT_TRUE(std::none_of(l.late.begin(), l.late.end(), [](bool b) { return b; }));
  }
}

std::vector<first_round_source> random_sources(std::vector<int> devices, std::mt19937_64& rng,
                                               std::uint64_t max_count) {
  std::vector<first_round_source> sources(devices.size());
  std::uniform_int_distribution<std::uint64_t> count(0, max_count);
  for (std::size_t s = 0; s < devices.size(); ++s) {
    sources[s].device = devices[s];
    sources[s].digit_counts.resize(digits);
    for (std::uint64_t& c : sources[s].digit_counts) c = count(rng);
  }
  return sources;
}

TEST(first_round_layout_test, TwoGpusStageAndSortInTwoGroups) {
  const std::uint64_t seed = test::base_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<first_round_source> sources = random_sources({0, 1}, rng, 1000);
  const std::vector<std::uint64_t> records = records_on_digit_edges(sources);
  for (first_round_source& s : sources) s.staging_capacity = records[0] + records[1];
  const first_round_layout l = make_first_round_layout(sources, records, true);
  check(sources, records, true, l);
  EXPECT_TRUE(l.staged[0] && l.staged[1]);
  EXPECT_TRUE(l.split);
  // Half of each destination's keys are early, and at most one digit (two sources' 1000
  // keys at most) more.
  for (std::size_t d = 0; d < 2; ++d) {
    EXPECT_GE(2 * l.early_records[d], records[d]) << d;
    EXPECT_LE(l.early_records[d], records[d] / 2 + 2000) << d;
  }
  // Without overlap: staged, one group.
  const first_round_layout one = make_first_round_layout(sources, records, false);
  check(sources, records, false, one);
  EXPECT_TRUE(one.staged[0] && one.staged[1]);
}

TEST(first_round_layout_test, SourcesStageOnlyWhatFitsAndOnlyForAnotherGpu) {
  const std::uint64_t seed = test::base_seed() + 1;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<first_round_source> sources = random_sources({0, 1}, rng, 1000);
  const std::vector<std::uint64_t> records = records_on_digit_edges(sources);
  // No staging buffer, or one too small: stored straight into the peer.
  sources[0].staging_capacity = 0;
  sources[1].staging_capacity = 10;
  first_round_layout l = make_first_round_layout(sources, records, true);
  check(sources, records, true, l);
  EXPECT_FALSE(l.staged[0] || l.staged[1] || l.split);
  // Slots of one GPU: nothing crosses a link.
  sources = random_sources({3, 3, 3}, rng, 1000);
  const std::vector<std::uint64_t> three = records_on_digit_edges(sources);
  for (first_round_source& s : sources) s.staging_capacity = 1u << 20;
  l = make_first_round_layout(sources, three, true);
  check(sources, three, true, l);
  EXPECT_FALSE(l.split);
  // Three slots on two GPUs, skewed counts, some digits empty.
  for (int round = 0; round < 50; ++round) {
    sources = random_sources({0, 1, 0}, rng, round % 2 == 0 ? 3 : 100000);
    const std::vector<std::uint64_t> r = records_on_digit_edges(sources);
    for (first_round_source& s : sources) s.staging_capacity = (r[0] + r[1] + r[2]) / 3 + 50;
    for (const bool overlap : {false, true}) check(sources, r, overlap,
                                                   make_first_round_layout(sources, r, overlap));
  }
}

TEST(first_round_layout_test, ADestinationMayReceiveNothing) {
  std::vector<first_round_source> sources(2);
  for (std::size_t s = 0; s < 2; ++s) {
    sources[s].device = static_cast<int>(s);
    sources[s].digit_counts.assign(digits, 0);
    sources[s].staging_capacity = 100;
  }
  sources[0].digit_counts[7] = 40;
  sources[1].digit_counts[7] = 2;
  const std::vector<std::uint64_t> records{42, 0};
  const first_round_layout l = make_first_round_layout(sources, records, true);
  check(sources, records, true, l);
  EXPECT_EQ(l.owner[7], 0u);
  EXPECT_FALSE(l.staged[0]);  // its keys stay on its GPU
  EXPECT_TRUE(l.staged[1]);
  EXPECT_EQ(l.early_records[0], 42u);  // one digit: early, however large
}

TEST(first_round_layout_test, RefusesAPlanOffDigitEdges) {
  std::vector<first_round_source> sources(2);
  for (std::size_t s = 0; s < 2; ++s) {
    sources[s].device = static_cast<int>(s);
    sources[s].digit_counts.assign(digits, 0);
    sources[s].digit_counts[0] = 10;
    sources[s].digit_counts[1] = 10;
  }
  // Digit 0 holds 20 keys: a boundary after 15 cuts it.
  EXPECT_THROW((void)make_first_round_layout(sources, std::vector<std::uint64_t>{15, 25}, true),
               error);
  // Counts that do not add up to the destinations' records.
  EXPECT_THROW((void)make_first_round_layout(sources, std::vector<std::uint64_t>{20, 30}, true),
               error);
  sources[1].digit_counts.resize(8);
  EXPECT_THROW((void)make_first_round_layout(sources, std::vector<std::uint64_t>{20, 20}, true),
               error);
}

}  // namespace
}  // namespace gpusort
