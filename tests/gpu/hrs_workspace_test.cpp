// The hybrid radix sort's workspace model (gpu/hrs/hrs_workspace.cuh) and the first round of
// zero-extended digits (gpu/hrs/hrs_tuning.cuh), on the host: the layout's regions are aligned
// and disjoint, histograms take 512 bins a bucket and a key block once a round's zero digits
// take 16 bits, and a joint histogram holds the extension off until round 2. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "gpu/hrs/hrs_tuning.cuh"
#include "gpu/hrs/hrs_workspace.cuh"

namespace gpusort::gpu::hrs {
namespace {

/// The sm_90 key-only policy's shape: 8192 keys a key block, local sorts up to 9216 keys.
layout_params key_only(std::uint32_t key_bytes, int extend_from_round) {
  layout_params p;
  p.key_bytes = key_bytes;
  p.keys_per_block = 512 * 16;
  p.local_threshold = 9216;
  p.merge_threshold = 256;
  p.config_count = 2;
  p.config_capacity[0] = 4608;
  p.config_capacity[1] = 9216;
  p.extend_from_round = extend_from_round;
  return p;
}

/// (offset, bytes) of every region of `l`, in the order they were laid out.
std::vector<std::pair<std::uint64_t, std::uint64_t>> regions(const workspace_layout& l,
                                                             const layout_params& p) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> r;
  r.emplace_back(l.counters_offset, sizeof(counters));
  for (int parity = 0; parity < 2; ++parity) {
    r.emplace_back(l.buckets_offset[parity], l.bucket_capacity * sizeof(bucket));
    r.emplace_back(l.bucket_hist_offset[parity],
                   l.bucket_capacity * l.bins * sizeof(std::uint64_t));
    r.emplace_back(l.blocks_offset[parity], l.block_capacity * sizeof(key_block));
  }
  r.emplace_back(l.block_hist_offset, l.block_capacity * l.bins * sizeof(std::uint32_t));
  for (int c = 0; c < p.config_count; ++c)
    r.emplace_back(l.jobs_offset[c], l.job_capacity[c] * sizeof(local_job));
  return r;
}

TEST(HrsWorkspace, RegionsAreAlignedAndDisjoint) {
  for (const std::uint32_t key_bytes : {4u, 8u})
    for (const int extend : {0, 2, max_rounds})
      for (const std::uint64_t n : {std::uint64_t{1}, std::uint64_t{9217},
                                    std::uint64_t{1} << 28, (std::uint64_t{1} << 32) + 7}) {
        SCOPED_TRACE(std::to_string(key_bytes) + "-byte keys, extended from round " +
                     std::to_string(extend) + ", n " + std::to_string(n));
        const layout_params p = key_only(key_bytes, extend);
        const workspace_layout l = make_layout(n, p);
        auto r = regions(l, p);
        std::sort(r.begin(), r.end());
        for (std::size_t i = 0; i < r.size(); ++i) {
          EXPECT_EQ(r[i].first % 256, 0u) << "region " << i;
          const std::uint64_t end = r[i].first + r[i].second;
          if (i + 1 < r.size()) EXPECT_LE(end, r[i + 1].first) << "region " << i;
          else EXPECT_LE(end, l.total_bytes);
        }
      }
}

TEST(HrsWorkspace, ZeroDigitsOfSixteenBitsTakeTwiceTheHistogramBins) {
  const std::uint64_t n = std::uint64_t{1} << 28;
  const workspace_layout bytes = make_layout(n, key_only(8, max_rounds));
  const workspace_layout wide = make_layout(n, key_only(8, 0));
  EXPECT_EQ(bytes.bins, static_cast<std::uint32_t>(radix));
  EXPECT_EQ(wide.bins, static_cast<std::uint32_t>(extended_bins));
  // The lists keep their capacities; the histograms double.
  EXPECT_EQ(wide.bucket_capacity, bytes.bucket_capacity);
  EXPECT_EQ(wide.block_capacity, bytes.block_capacity);
  const std::uint64_t extra = (bytes.bucket_capacity * 2 * sizeof(std::uint64_t) +
                               bytes.block_capacity * sizeof(std::uint32_t)) *
                              radix;
  EXPECT_GE(wide.total_bytes, bytes.total_bytes + extra);
  EXPECT_LE(wide.total_bytes, bytes.total_bytes + extra + 8 * 256);
  // A first extended round at or past the key's digits is none: 8-bit histograms.
  EXPECT_EQ(make_layout(n, key_only(4, 4)).bins, static_cast<std::uint32_t>(radix));
  EXPECT_EQ(make_layout(n, key_only(4, 3)).bins, static_cast<std::uint32_t>(extended_bins));
}

TEST(HrsWorkspace, JobsBoundCountsARunOfExhaustedCodesPerBucket) {
  // 3n/m + 3D buckets + 2, capped at n + 1.
  const std::uint64_t n = std::uint64_t{1} << 28;
  const layout_params p = key_only(8, 0);
  const workspace_layout l = make_layout(n, p);
  EXPECT_EQ(l.job_capacity[0], 3 * (n / p.merge_threshold) + 3 * 8 * l.bucket_capacity + 2);
  EXPECT_EQ(l.job_capacity[1], n / (std::uint64_t{p.config_capacity[0]} + 1) + 1);
  EXPECT_EQ(make_layout(1000, p).job_capacity[0], 3 * (1000 / 256) + 3 * 8 * 1 + 2u);
  layout_params unmerged = p;  // every sub-bucket a job: the cap
  unmerged.merge_threshold = 1;
  EXPECT_EQ(make_layout(1000, unmerged).job_capacity[0], 1001u);
}

TEST(HrsWorkspace, AJointHistogramHoldsTheExtensionOffUntilRoundTwo) {
  tuning t;
  t.joint_min_keys = std::uint64_t{1} << 25;
  t.extend_from_round = 0;
  EXPECT_EQ(first_extended_round((std::uint64_t{1} << 25) - 1, t), 0);
  EXPECT_EQ(first_extended_round(std::uint64_t{1} << 25, t), 2);
  t.extend_from_round = 1;
  EXPECT_EQ(first_extended_round(std::uint64_t{1} << 28, t), 2);
  t.extend_from_round = 3;
  EXPECT_EQ(first_extended_round(std::uint64_t{1} << 28, t), 3);
  t.extend_from_round = max_rounds;  // never
  EXPECT_EQ(first_extended_round(std::uint64_t{1} << 28, t), max_rounds);
  t.joint_min_keys = ~std::uint64_t{0};  // no joint histogram: the tuning's round
  t.extend_from_round = 0;
  EXPECT_EQ(first_extended_round(std::uint64_t{1} << 40, t), 0);
}

TEST(HrsWorkspace, TheSm90PoliciesExtendSixtyFourBitKeysAloneFromRoundZero) {
  EXPECT_EQ((sm90_policy<8, 0>::extend_from_round), 0);
  EXPECT_EQ((sm90_policy<8, 0>::joint_min_keys), ~std::uint64_t{0});
  EXPECT_EQ((sm90_policy<4, 0>::extend_from_round), 4);
  EXPECT_EQ((sm90_policy<8, 8>::extend_from_round), 8);
  EXPECT_EQ((sm90_policy<4, 4>::joint_min_keys), std::uint64_t{1} << 25);
}

}  // namespace
}  // namespace gpusort::gpu::hrs
