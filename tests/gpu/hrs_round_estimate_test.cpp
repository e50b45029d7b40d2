// estimate_hrs_rounds and the `auto` choice it feeds, on the host: samples drawn from the
// distributions of gpusort-bench-hrs (tests/gpu/device_keys.cuh), whose HRS and Onesweep times
// were measured on the H100 (tools/bench/results/2026-11-25-h100-hrs), must land on the side of
// the crossover that measured faster. No GPU needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gpu/chunk_algorithm.hpp"
#include "gpu/hrs/hrs_tuning.cuh"
#include "gpu/hrs_round_estimate.hpp"
#include "test_support.hpp"

namespace gpusort::gpu {
namespace {

/// The local threshold of the sm_90 key-only policies (512 threads x 18 keys).
constexpr std::uint64_t local_threshold = 9216;

enum class dist { uniform, and2, and3, and4, and5, equal, zipf, sorted, below_2_40 };

std::string name(dist d) {
  switch (d) {
    case dist::uniform: return "uniform";
    case dist::and2: return "and2";
    case dist::and3: return "and3";
    case dist::and4: return "and4";
    case dist::and5: return "and5";
    case dist::equal: return "equal";
    case dist::zipf: return "zipf";
    case dist::sorted: return "sorted";
    case dist::below_2_40: return "below_2_40";
  }
  return "?";
}

std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// `count` keys of `bits` bits drawn from `d`, as a strided sample of a chunk would see them.
std::vector<std::uint64_t> draw(dist d, unsigned bits, std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
  std::vector<std::uint64_t> keys(count);
  for (std::uint64_t& k : keys) {
    switch (d) {
      case dist::uniform:
      case dist::sorted:  // a strided sample of sorted uniform keys: uniform keys
        k = rng() & mask;
        break;
      case dist::and2:
      case dist::and3:
      case dist::and4:
      case dist::and5: {
        const int words = 2 + static_cast<int>(d) - static_cast<int>(dist::and2);
        k = mask;
        for (int w = 0; w < words; ++w) k &= rng();
        break;
      }
      case dist::equal: k = 0x0123456789abcdefull & mask; break;
      case dist::zipf: {
        // As device_keys.cuh: ranks with P(r) ~ 1/r over [1, 2^32], scattered over the keys.
        const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
        const auto rank = static_cast<std::uint64_t>(std::exp(u * 22.18070977791825));
        k = mix64(rank * 0x9fb21c651e98df25ull + seed) & mask;
        break;
      }
      case dist::below_2_40: k = rng() & mask & ((std::uint64_t{1} << 40) - 1); break;
    }
  }
  return keys;
}

TEST(HrsRoundEstimate, NothingToCountBelowTheLocalThreshold) {
  std::vector<std::uint64_t> none;
  EXPECT_EQ(estimate_hrs_rounds(none, 64, 1 << 28, local_threshold).scatter_rounds, 0.0);
  std::vector<std::uint64_t> keys = draw(dist::uniform, 64, 100, test::base_seed());
  const hrs_round_estimate e = estimate_hrs_rounds(keys, 64, local_threshold, local_threshold);
  EXPECT_EQ(e.histogram_rounds, 0.0);
  EXPECT_EQ(e.scatter_rounds, 0.0);
}

TEST(HrsRoundEstimate, EqualKeysAreReadOnceAndNeverScattered) {
  for (const unsigned bits : {32u, 64u}) {
    std::vector<std::uint64_t> keys = draw(dist::equal, bits, hrs_key_sample_size, 1);
    const hrs_round_estimate e = estimate_hrs_rounds(keys, bits, 1 << 28, local_threshold);
    EXPECT_DOUBLE_EQ(e.histogram_rounds, 1.0) << bits;
    EXPECT_DOUBLE_EQ(e.scatter_rounds, 0.0) << bits;
  }
}

TEST(HrsRoundEstimate, ExactWhenTheSampleIsTheWholeChunk) {
  // 2^20 uniform keys, every one sampled: round 0 splits them into 256 buckets of about 4096,
  // all under the threshold: one round.
  const std::uint64_t seed = test::base_seed() + 3;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<std::uint64_t> keys = draw(dist::uniform, 64, std::size_t{1} << 20, seed);
  const hrs_round_estimate e = estimate_hrs_rounds(keys, 64, keys.size(), local_threshold);
  EXPECT_DOUBLE_EQ(e.scatter_rounds, 1.0);
  EXPECT_DOUBLE_EQ(e.histogram_rounds, 1.0);
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end())) << "the sample is sorted in place";
}

TEST(HrsRoundEstimate, ConstantTopDigitsCostAScatterEach) {
  // HRS splits on fixed digits from the top: keys below 2^40 keep all their keys in one bucket
  // for three rounds, then need two more.
  const std::uint64_t seed = test::base_seed() + 5;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<std::uint64_t> keys = draw(dist::below_2_40, 64, hrs_key_sample_size, seed);
  const hrs_round_estimate e = estimate_hrs_rounds(keys, 64, 1 << 28, local_threshold);
  EXPECT_GE(e.scatter_rounds, 5.0);
  EXPECT_LT(e.scatter_rounds, 5.5);
}

/// A measured case: distribution, key bits, log2 of the keys, and HRS time / CUB time.
/// 64-bit keys: H200, tools/bench/results/2026-11-29-h200-hrs-zero-digits (`sweep-u64-call2.csv`
/// and `sweep-large-call7.csv`; zero digits of 16 bits from round 0). 32-bit keys: H100,
/// tools/bench/results/2026-11-27-h100-hrs-joint/ (bench-final.csv and sweep-final.csv; rows
/// marked 11-27v from 2026-11-27-h100-hrs-vectors/, 11-25 from 2026-11-25-h100-hrs-groups/ and
/// 2026-11-27-h100x2-first-round/).
struct measured_case {
  dist d;
  unsigned bits;
  int log2n;
  double hrs_over_cub;
};

/// The first round whose zero digit takes 16 bits in the sm_90 key-only policy of `bits`-bit
/// keys; no joint histogram moves it (64-bit keys count none, 32-bit keys never extend).
int extend_from_round(unsigned bits) {
  return bits == 64 ? hrs::sm90_policy<8, 0>::extend_from_round
                    : hrs::sm90_policy<4, 0>::extend_from_round;
}

/// `auto` must pick a sorter within 5% of the faster one: HRS where it measured at most 1.05
/// of CUB's time, Onesweep where HRS measured at least 0.95 of it; between the two, either.
/// Left out, where no choice from the sample is: 32-bit keys at 2^25 (uniform 0.89, sorted
/// 1.06; the sample, sorted before it is read, cannot tell them apart).
TEST(HrsRoundEstimate, AutoPicksASorterWithinFivePercentOfTheFaster) {
  const measured_case cases[] = {
      {dist::uniform, 64, 30, 0.646},  // sweep-large-call7.csv
      {dist::zipf, 64, 30, 0.856},
      {dist::and2, 64, 30, 0.751},
      {dist::and3, 64, 30, 0.922},
      {dist::and4, 64, 30, 0.839},
      {dist::and5, 64, 30, 0.800},
      {dist::uniform, 64, 29, 0.427},
      {dist::zipf, 64, 29, 0.913},
      {dist::and3, 64, 29, 0.914},
      {dist::and4, 64, 29, 0.856},
      {dist::and5, 64, 29, 0.807},
      {dist::uniform, 64, 28, 0.390},
      {dist::sorted, 64, 28, 0.414},
      {dist::zipf, 64, 28, 0.820},
      {dist::equal, 64, 28, 0.062},
      {dist::and2, 64, 28, 0.655},
      {dist::and3, 64, 28, 0.929},
      {dist::and4, 64, 28, 0.901},
      {dist::and5, 64, 28, 0.810},
      {dist::uniform, 64, 27, 0.394},
      {dist::zipf, 64, 27, 0.790},
      {dist::and2, 64, 27, 0.791},
      {dist::and3, 64, 27, 0.955},
      {dist::and4, 64, 27, 0.935},
      {dist::and5, 64, 27, 0.839},
      {dist::uniform, 64, 26, 0.405},
      {dist::sorted, 64, 26, 0.415},
      {dist::zipf, 64, 26, 0.793},
      {dist::and2, 64, 26, 0.767},
      {dist::and3, 64, 26, 0.963},
      {dist::and4, 64, 26, 0.921},
      {dist::and5, 64, 26, 0.885},
      {dist::equal, 64, 26, 0.086},
      {dist::uniform, 64, 24, 0.540},
      {dist::sorted, 64, 24, 0.549},
      {dist::zipf, 64, 24, 0.991},
      {dist::and2, 64, 24, 0.894},
      {dist::and3, 64, 24, 1.110},
      {dist::and4, 64, 24, 1.144},
      {dist::and5, 64, 24, 1.058},
      {dist::equal, 64, 24, 0.160},
      {dist::uniform, 64, 22, 0.682},
      {dist::sorted, 64, 22, 0.657},
      {dist::zipf, 64, 22, 1.534},
      {dist::and2, 64, 22, 1.079},
      {dist::and3, 64, 22, 1.419},
      {dist::and4, 64, 22, 1.432},
      {dist::and5, 64, 22, 1.325},
      {dist::equal, 64, 22, 0.475},
      {dist::uniform, 32, 28, 0.70},
      {dist::sorted, 32, 28, 0.83},
      {dist::and2, 32, 28, 1.21},
      {dist::and5, 32, 28, 1.27},
      {dist::zipf, 32, 28, 1.13},
      {dist::equal, 32, 28, 0.11},
      {dist::uniform, 32, 27, 0.72},
      {dist::sorted, 32, 27, 0.85},
      {dist::zipf, 32, 27, 1.19},
      {dist::and2, 32, 27, 1.24},
      {dist::uniform, 32, 26, 0.75},
      {dist::sorted, 32, 26, 0.90},  // the sample cannot tell it from uniform keys
      {dist::zipf, 32, 26, 1.40},
      {dist::and2, 32, 26, 1.25},
      {dist::uniform, 32, 24, 0.97},
      {dist::sorted, 32, 24, 1.10},
      {dist::zipf, 32, 24, 1.65},
      {dist::equal, 32, 24, 0.28},    // 11-27v
      {dist::uniform, 32, 22, 1.12},  // 11-27v
      // 11-25: 0.86. The 11-27v sweep measured 1.39 (0.18 ms, where 2^24 took 0.10 ms), not
      // re-measured.
      {dist::equal, 32, 22, 0.86},
      {dist::uniform, 32, 29, 0.97},  // 11-27, two-H100 machine
      {dist::uniform, 32, 30, 1.30},  // 11-27: a third round
      {dist::sorted, 32, 31, 1.53},   // 11-27
  };
  for (const measured_case& c : cases) {
    const std::uint64_t records = std::uint64_t{1} << c.log2n;
    // Several samples: the choice must not hang on one draw.
    for (int draw_index = 0; draw_index < 8; ++draw_index) {
      const std::uint64_t seed = test::base_seed() + 100 * static_cast<std::uint64_t>(c.d) +
                                 static_cast<std::uint64_t>(draw_index) + c.bits + c.log2n;
      std::vector<std::uint64_t> keys = draw(c.d, c.bits, hrs_key_sample_size, seed);
      const hrs_round_estimate e = estimate_hrs_rounds(keys, c.bits, records, local_threshold,
                                                       extend_from_round(c.bits));
      const chunk_algorithm chosen = choose_chunk_algorithm(
          c.bits / 8, 0, records, e.scatter_rounds, e.top_digit_concentration);
      if (chosen == chunk_algorithm::hrs) {
        EXPECT_LE(c.hrs_over_cub, 1.05)
            << "HRS chosen: " << name(c.d) << " u" << c.bits << " 2^" << c.log2n << ", seed "
            << seed << ": " << e.scatter_rounds << " scatter rounds, concentration "
            << e.top_digit_concentration;
      } else {
        EXPECT_GE(c.hrs_over_cub, 0.95)
            << "Onesweep chosen: " << name(c.d) << " u" << c.bits << " 2^" << c.log2n
            << ", seed " << seed << ": " << e.scatter_rounds << " scatter rounds, concentration "
            << e.top_digit_concentration;
      }
    }
  }
}

TEST(HrsRoundEstimate, ZeroDigitsOfSixteenBitsSaveRounds) {
  // From extend_from_round on, a zero digit takes the 8 bits after it too. Keys below 2^40:
  // round 0 takes the two zero bytes at the top, round 1 the third and the fourth byte (256
  // buckets), round 2 the fifth (2^16 buckets of about 4096 keys): three rounds, not five.
  const std::uint64_t seed = test::base_seed() + 11;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<std::uint64_t> below = draw(dist::below_2_40, 64, hrs_key_sample_size, seed);
  EXPECT_GE(estimate_hrs_rounds(below, 64, 1 << 28, local_threshold, 0).scatter_rounds, 3.0);
  EXPECT_LT(estimate_hrs_rounds(below, 64, 1 << 28, local_threshold, 0).scatter_rounds, 3.5);
  // From round 2 on (after a joint histogram): rounds 0 and 1 take a byte each.
  EXPECT_GE(estimate_hrs_rounds(below, 64, 1 << 28, local_threshold, 2).scatter_rounds, 4.0);
  // AND-ed words, mostly zero bits, save most; uniform keys next to nothing (their zero digits
  // hold 1/256 of a bucket).
  for (const dist d : {dist::and3, dist::and4, dist::uniform}) {
    std::vector<std::uint64_t> keys = draw(d, 64, hrs_key_sample_size, seed);
    const double bytes = estimate_hrs_rounds(keys, 64, 1 << 28, local_threshold).scatter_rounds;
    const double extended =
        estimate_hrs_rounds(keys, 64, 1 << 28, local_threshold, 0).scatter_rounds;
    std::cout << name(d) << ": " << bytes << " scatter rounds with 8-bit digits, " << extended
              << " with zero digits of 16 bits\n";
    if (d == dist::uniform) EXPECT_NEAR(extended, bytes, 0.05);
    else EXPECT_LT(extended, bytes - 0.5) << name(d);
  }
}

TEST(HrsRoundEstimate, TopDigitConcentration) {
  const std::uint64_t seed = test::base_seed() + 7;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::vector<std::uint64_t> uniform = draw(dist::uniform, 64, hrs_key_sample_size, seed);
  EXPECT_NEAR(estimate_hrs_rounds(uniform, 64, 1 << 28, local_threshold).top_digit_concentration,
              1.0, 0.1);
  std::vector<std::uint64_t> equal = draw(dist::equal, 32, hrs_key_sample_size, seed);
  EXPECT_DOUBLE_EQ(
      estimate_hrs_rounds(equal, 32, 1 << 28, local_threshold).top_digit_concentration, 256.0);
  // AND of two words: each top bit is set with probability 1/4, so two keys share the top
  // digit with probability (9/16 + 1/16)^8 = 0.0233: 5.96 times the uniform 1/256.
  std::vector<std::uint64_t> and2 = draw(dist::and2, 64, hrs_key_sample_size, seed);
  EXPECT_NEAR(estimate_hrs_rounds(and2, 64, 1 << 28, local_threshold).top_digit_concentration,
              5.96, 0.5);
}

}  // namespace
}  // namespace gpusort::gpu
