// The hybrid radix sort against CUB's Onesweep on the same GPU: bit-exact equal sorted keys for
// every distribution of the paper's evaluation and sizes 0, 1, 2^k +- 1 up to 2^30, around the
// local threshold and key-block size, with the default tuning and with small thresholds that
// force deep recursion, merged buckets and every local configuration at small sizes; for
// key+value pairs, CUB's keys and, within each run of equal keys, the same multiset of values.
// The alternate buffers and the workspace are poisoned first; the model's bounds must hold (no
// overflow). The first round split out (count, scatter through cursors, the sort from the
// second round) as the multi-GPU exchange runs it. Through the run former: every key type,
// order and record layout against the std::stable_sort oracle. GPUSORT_HRS_TEST_MAX_KEYS caps
// the sizes (sanitizer runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gpu/device_memory.cuh"
#include "gpu/hrs/hrs_dispatch.cuh"
#include "gpu/onesweep_dispatch.cuh"
#include "gpu/run_former.hpp"
#include "gpu/device_keys.cuh"
#include "gpu/gpu_test_support.hpp"
#include "test_support.hpp"

namespace gpusort::test {
namespace {

using gpu::hrs::no_value;

std::uint64_t max_keys() {
  if (const char* env = std::getenv("GPUSORT_HRS_TEST_MAX_KEYS"); env != nullptr && *env != '\0')
    return std::strtoull(env, nullptr, 0);
  return std::uint64_t{1} << 30;
}

/// GPUSORT_HRS_TEST_GROUP_BITS: the local sort's grouping bits for every sort (0: the policy's).
std::uint32_t group_bits() {
  if (const char* env = std::getenv("GPUSORT_HRS_TEST_GROUP_BITS"); env != nullptr && *env != '\0')
    return static_cast<std::uint32_t>(std::strtoul(env, nullptr, 0));
  return 0;
}

/// `t` with the grouping bits of the environment.
gpu::hrs::tuning with_env(gpu::hrs::tuning t) {
  t.group_bits = group_bits();
  return t;
}

std::vector<key_distribution> all_distributions() {
  std::vector<key_distribution> d{{key_dist::uniform, 1}};
  for (unsigned q = 2; q <= 5; ++q) d.push_back({key_dist::and_words, q});
  d.push_back({key_dist::equal, 1});
  d.push_back({key_dist::zipf, 1});
  d.push_back({key_dist::sorted, 1});
  d.push_back({key_dist::reverse, 1});
  return d;
}

/// Device buffers for one key type, grown on demand and reused across cases.
template <typename Key>
class sort_bench_buffers {
 public:
  void reserve(std::uint64_t n, std::uint64_t hrs_workspace, std::uint64_t cub_workspace) {
    const std::uint64_t bytes = std::max<std::uint64_t>(n, 1) * sizeof(Key);
    if (bytes > keys_bytes_) {
      for (auto& b : keys_) b = gpu::device_buffer();
      for (auto& b : keys_) b = gpu::device_buffer(bytes, 0);
      keys_bytes_ = bytes;
    }
    if (hrs_workspace > hrs_ws_.size()) hrs_ws_ = gpu::device_buffer(hrs_workspace, 0);
    if (cub_workspace > cub_ws_.size()) cub_ws_ = gpu::device_buffer(cub_workspace, 0);
    if (scratch_.size() == 0) scratch_ = gpu::device_buffer(2 * sizeof(unsigned long long), 0);
  }
  Key* keys(int i) const { return reinterpret_cast<Key*>(keys_[i].data()); }
  gpu::device_buffer& hrs_workspace() { return hrs_ws_; }
  gpu::device_buffer& cub_workspace() { return cub_ws_; }
  unsigned long long* scratch() const {
    return reinterpret_cast<unsigned long long*>(scratch_.data());
  }

 private:
  gpu::device_buffer keys_[4];  // HRS in/out, HRS alternate, CUB in, CUB alternate
  std::uint64_t keys_bytes_ = 0;
  gpu::device_buffer hrs_ws_;
  gpu::device_buffer cub_ws_;
  gpu::device_buffer scratch_;
};

template <typename Key>
class hrs_test : public gpu_test {
 protected:
  void SetUp() override {
    gpu_test::SetUp();
    if (IsSkipped()) return;
    stream_ = gpu::stream(0);
    shapes_ = gpu::hrs::prepare<Key, no_value>(0, {});
  }

  /// n keys of `dist` in keys(0), a copy for CUB in keys(2), and what HRS may only write
  /// before it reads (keys(1), the workspace) poisoned: a byte it fails to write shows. Returns
  /// HRS's workspace bytes.
  std::uint64_t prepare(std::uint64_t n, const key_distribution& dist, std::uint64_t seed,
                        const gpu::hrs::tuning& tuning) {
    cudaStream_t s = stream_.get();
    const std::uint64_t hrs_ws =
        gpu::hrs::workspace_bytes<Key, no_value>(n, tuning, shapes_.compute_capability);
    const std::uint64_t cub_ws =
        gpu::detail::onesweep_keys_temp_bytes<Key>(static_cast<std::uint32_t>(n));
    buffers_.reserve(n, hrs_ws, cub_ws);
    generate_keys<Key>(buffers_.keys(0), n, dist, seed, s);
    GPUSORT_CUDA_TRY(cudaMemcpyAsync(buffers_.keys(2), buffers_.keys(0), n * sizeof(Key),
                                     cudaMemcpyDeviceToDevice, s));
    GPUSORT_CUDA_TRY(cudaMemsetAsync(buffers_.keys(1), 0xA5, n * sizeof(Key), s));
    GPUSORT_CUDA_TRY(cudaMemsetAsync(buffers_.hrs_workspace().data(), 0xA5, hrs_ws, s));
    return hrs_ws;
  }

  /// Sorts n keys of `dist` with HRS and CUB; expects equal results and no overflow.
  void check(std::uint64_t n, const key_distribution& dist, gpu::hrs::tuning tuning = {}) {
    if (n > max_keys()) return;
    tuning = with_env(tuning);
    const std::uint64_t seed = base_seed() ^ (n * 0x9e3779b97f4a7c15ull) ^ (dist.and_words << 8) ^
                               static_cast<std::uint64_t>(dist.what);
    SCOPED_TRACE("u" + std::to_string(8 * sizeof(Key)) + " n=" + std::to_string(n) + " " +
                 dist.name() + " seed=" + std::to_string(seed) + " thresholds " +
                 std::to_string(tuning.local_threshold) + "/" +
                 std::to_string(tuning.merge_threshold) + " joint from " +
                 std::to_string(tuning.joint_min_keys));
    cudaStream_t s = stream_.get();
    const std::uint64_t hrs_ws = prepare(n, dist, seed, tuning);

    Key* const keys[2] = {buffers_.keys(0), buffers_.keys(1)};
    no_value* const values[2] = {nullptr, nullptr};
    gpu::hrs::sort<Key, no_value>(shapes_, tuning, keys, values, n,
                                  buffers_.hrs_workspace().data(), hrs_ws, s);
    const bool in_alternate = gpu::detail::onesweep_sort_keys<Key>(
        buffers_.cub_workspace().data(), buffers_.cub_workspace().size(), buffers_.keys(2),
        buffers_.keys(3), static_cast<std::uint32_t>(n), s);
    const Key* expected = buffers_.keys(in_alternate ? 3 : 2);
    const compare_result r =
        compare_keys<Key>(buffers_.keys(0), expected, n, buffers_.scratch(), s);
    EXPECT_EQ(r.mismatches, 0u) << "first difference at key " << r.first;
    if (n != 0) {
      const gpu::hrs::counters c =
          gpu::hrs::read_counters(buffers_.hrs_workspace().data(), s);
      EXPECT_EQ(c.overflow, 0u) << "a bound of the memory model was exceeded";
    }
  }

  /// The first round split out as a multi-GPU exchange runs it: counts, a scatter by top digit
  /// through cursors taken from another allocation's address (as a peer's buffer is reached),
  /// then the sort from the second round on; the same keys as CUB's. With several sections,
  /// as an exchange through staging does: each section scattered into a staging buffer, then
  /// its pieces copied out before the next section runs, which finds any piece of a section
  /// that is not where the section counts put it.
  void check_first_round(std::uint64_t n, const key_distribution& dist,
                         std::uint32_t sections = 1) {
    if (n > max_keys()) return;
    const std::uint64_t seed =
        base_seed() ^ (n * 0x51ed27ull) ^ static_cast<std::uint64_t>(dist.what);
    SCOPED_TRACE("first round, u" + std::to_string(8 * sizeof(Key)) + " n=" + std::to_string(n) +
                 " " + dist.name() + " sections=" + std::to_string(sections) +
                 " seed=" + std::to_string(seed));
    constexpr int radix = gpu::hrs::radix;
    cudaStream_t s = stream_.get();
    const gpu::hrs::tuning tuning = with_env({});
    const std::uint64_t hrs_ws = prepare(n, dist, seed, tuning);
    const bool in_alternate = gpu::detail::onesweep_sort_keys<Key>(
        buffers_.cub_workspace().data(), buffers_.cub_workspace().size(), buffers_.keys(2),
        buffers_.keys(3), static_cast<std::uint32_t>(n), s);
    // CUB's result moves to keys(2), so that keys(3) can be the scatter's base.
    if (in_alternate)
      GPUSORT_CUDA_TRY(cudaMemcpyAsync(buffers_.keys(2), buffers_.keys(3), n * sizeof(Key),
                                       cudaMemcpyDeviceToDevice, s));

    gpu::pinned_buffer counts_host(std::size_t{sections} * radix * sizeof(std::uint64_t), 0);
    auto* counts = reinterpret_cast<std::uint64_t*>(counts_host.data());
    gpu::hrs::count_first_digit<Key>(shapes_, tuning, buffers_.keys(0), n,
                                     buffers_.hrs_workspace().data(), hrs_ws, sections, counts, s);
    stream_.synchronize();
    std::vector<std::uint64_t> digit_counts(radix, 0);
    for (std::uint32_t j = 0; j < sections; ++j)
      for (int d = 0; d < radix; ++d) digit_counts[d] += counts[std::size_t{j} * radix + d];
    std::vector<std::uint64_t> first(radix);  // where each digit starts, in keys
    std::uint64_t at = 0;
    for (int d = 0; d < radix; ++d) {
      first[d] = at;
      at += digit_counts[d];
    }
    ASSERT_EQ(at, n);
    Key* const target = buffers_.keys(1);
    Key* const base = buffers_.keys(3);
    std::vector<std::uint64_t> cursors(radix);
    for (int d = 0; d < radix; ++d)
      cursors[d] = sections == 1 ? (reinterpret_cast<std::uintptr_t>(target) -
                                    reinterpret_cast<std::uintptr_t>(base)) / sizeof(Key) +
                                       first[d]
                                 : first[d];
    std::vector<std::uint64_t> done(radix, 0);  // keys of each digit in earlier sections
    for (std::uint32_t j = 0; j < sections; ++j) {
      gpu::hrs::scatter_first_digit<Key>(shapes_, tuning, buffers_.keys(0), base, n,
                                         cursors.data(), {j, sections},
                                         buffers_.hrs_workspace().data(), hrs_ws, s);
      if (sections == 1) break;
      for (int d = 0; d < radix; ++d) {
        const std::uint64_t c = counts[std::size_t{j} * radix + d];
        if (c != 0)
          GPUSORT_CUDA_TRY(cudaMemcpyAsync(target + first[d] + done[d],
                                           base + first[d] + done[d], c * sizeof(Key),
                                           cudaMemcpyDeviceToDevice, s));
        done[d] += c;
      }
      // Garbage where the next section will write: a copy that came too early shows.
      if (j + 1 < sections)
        GPUSORT_CUDA_TRY(cudaMemsetAsync(base, 0xa5, n * sizeof(Key), s));
    }
    Key* const keys[2] = {buffers_.keys(0), target};
    gpu::hrs::sort_from_second_round<Key>(shapes_, tuning, keys, digit_counts.data(), n,
                                          buffers_.hrs_workspace().data(), hrs_ws, s);
    const compare_result r =
        compare_keys<Key>(buffers_.keys(0), buffers_.keys(2), n, buffers_.scratch(), s);
    EXPECT_EQ(r.mismatches, 0u) << "first difference at key " << r.first;
    EXPECT_EQ(gpu::hrs::read_counters(buffers_.hrs_workspace().data(), s).overflow, 0u);
  }

  gpu::stream stream_;
  gpu::hrs::device_shapes shapes_;
  sort_bench_buffers<Key> buffers_;
};

using key_types = ::testing::Types<std::uint32_t, std::uint64_t>;
TYPED_TEST_SUITE(hrs_test, key_types);

TYPED_TEST(hrs_test, TinySizes) {
  for (const std::uint64_t n : {0ull, 1ull, 2ull, 3ull, 31ull, 32ull, 33ull, 255ull, 1000ull})
    for (const key_distribution& d : all_distributions()) this->check(n, d);
}

TYPED_TEST(hrs_test, AroundLocalThresholdAndKeyBlocks) {
  const gpu::hrs::tuning t =
      gpu::hrs::resolve<TypeParam, no_value>({}, this->shapes_.compute_capability);
  std::vector<std::uint64_t> sizes;
  for (const std::uint64_t base : {std::uint64_t{t.local_threshold}, std::uint64_t{4096},
                                   std::uint64_t{8192}, std::uint64_t{2} * t.local_threshold})
    for (const std::int64_t delta : {-1, 0, 1}) sizes.push_back(base + delta);
  for (const std::uint64_t n : sizes)
    for (const key_distribution& d : all_distributions()) this->check(n, d);
}

TYPED_TEST(hrs_test, PowersOfTwoPlusMinusOne) {
  for (int k = 10; k <= 24; k += 2)
    for (const std::int64_t delta : {-1, 0, 1})
      for (const key_distribution& d : all_distributions())
        this->check((std::uint64_t{1} << k) + delta, d);
}

TYPED_TEST(hrs_test, LargeSizes) {
  // Up to 2^30 keys (8 GiB of u64 keys, four buffers): the distributions that stress different
  // paths (every round, a skewed bucket, equal keys) rather than all of them.
  const std::vector<key_distribution> some{{key_dist::uniform, 1},
                                           {key_dist::and_words, 3},
                                           {key_dist::equal, 1},
                                           {key_dist::zipf, 1}};
  for (const int k : {26, 28, 30})
    for (const std::int64_t delta : {-1, 1})
      for (const key_distribution& d : some) this->check((std::uint64_t{1} << k) + delta, d);
}

TYPED_TEST(hrs_test, SmallThresholdsRecurseDeep) {
  // A local threshold of 576 keys and a merge threshold of 64: many rounds, many buckets and
  // blocks, merged jobs and every local configuration below 576 keys, at small sizes.
  const gpu::hrs::tuning small{576, 64};
  for (const std::uint64_t n : {577ull, 5000ull, 100003ull, 1000003ull})
    for (const key_distribution& d : all_distributions()) this->check(n, d, small);
  const gpu::hrs::tuning no_merge{576, 1};
  for (const key_distribution& d : all_distributions()) this->check(200001, d, no_merge);
  const gpu::hrs::tuning wide_merge{2048, 1024};
  for (const key_distribution& d : all_distributions()) this->check(300007, d, wide_merge);
}

/// Local configurations that start with one warp (32 threads): the block-wide steps of the
/// local sort (the OR of the keys, the scans, the barriers) then run on a single warp.
gpu::hrs::tuning one_warp_first(std::uint32_t local, std::uint32_t merge) {
  gpu::hrs::tuning t{local, merge};
  t.local_config_count = 4;
  t.local_configs[0] = {32, 9};
  t.local_configs[1] = {64, 9};
  t.local_configs[2] = {128, 9};
  t.local_configs[3] = {256, 9};
  return t;
}

TYPED_TEST(hrs_test, OneWarpLocalConfiguration) {
  // The launch shapes follow the local configurations.
  this->shapes_ = gpu::hrs::prepare<TypeParam, no_value>(0, one_warp_first(576, 64));
  for (const std::uint64_t n : {1ull, 2ull, 33ull, 288ull, 289ull, 5000ull, 100003ull})
    for (const key_distribution& d : all_distributions()) {
      this->check(n, d, one_warp_first(576, 64));
      this->check(n, d, one_warp_first(2304, 1));
    }
}

TYPED_TEST(hrs_test, EveryLocalMatchMode) {
  // The LSD passes of crowded local sorts find a warp's lanes of equal digits two ways.
  for (const gpu::hrs::match_mode m :
       {gpu::hrs::match_mode::atomic_or, gpu::hrs::match_mode::match_any}) {
    SCOPED_TRACE(gpu::hrs::to_string(m));
    gpu::hrs::tuning small{576, 64};
    small.local_match = m;
    gpu::hrs::tuning lsd_only{};  // every local sort takes the LSD passes
    lsd_only.local_match = m;
    lsd_only.rank_group_max = 1;
    for (const std::uint64_t n : {577ull, 100003ull, 1000003ull})
      for (const key_distribution& d : all_distributions()) {
        this->check(n, d, small);
        this->check(n, d, lsd_only);
      }
  }
}

TYPED_TEST(hrs_test, JointHistogramOnAndOff) {
  // Round 0 counts the top two digits together from joint_min_keys keys on (round 1's
  // histograms are its rows), one digit below: both ways at every size, with the default and
  // with small thresholds (round 1's buckets then recurse further).
  for (const std::uint32_t local : {0u, 576u}) {
    gpu::hrs::tuning joint{local, local == 0 ? 0u : 64u};
    gpu::hrs::tuning single = joint;
    joint.joint_min_keys = 1;
    single.joint_min_keys = ~std::uint64_t{0};
    for (const std::uint64_t n : {577ull, 9217ull, 100003ull, 1000003ull, 4194305ull})
      for (const key_distribution& d : all_distributions()) {
        this->check(n, d, joint);
        this->check(n, d, single);
      }
  }
}

TYPED_TEST(hrs_test, ZeroDigitsExtendedFromEveryRound) {
  // From extend_from_round on, a zero digit takes the next 8 bits too: buckets of one round
  // stand at different bits, and buckets run out of bits before the last round, in keys[0]
  // (finished) or in keys[1] (moved by a local job, or by one more pass where they are larger
  // than the local threshold: AND of 5 words leaves a bucket of zero keys of 13% (u64) to 36%
  // (u32) of the input). Every first round, with and without the joint histogram (which moves
  // the first extended round to 2), with the default and with small thresholds.
  constexpr int digits = static_cast<int>(sizeof(TypeParam));
  for (const int from : {0, 1, 2, 3, digits}) {
    for (const std::uint32_t local : {0u, 576u}) {
      gpu::hrs::tuning t{local, local == 0 ? 0u : 64u};
      t.extend_from_round = from;
      for (const std::uint64_t joint : {std::uint64_t{1}, ~std::uint64_t{0}}) {
        t.joint_min_keys = joint;
        SCOPED_TRACE("extended from round " + std::to_string(from));
        for (const std::uint64_t n : {577ull, 9217ull, 100003ull, 1000003ull, 4194305ull})
          for (const key_distribution& d : all_distributions()) this->check(n, d, t);
      }
    }
  }
}

TYPED_TEST(hrs_test, SkewReducedPerWarpAndInRegisters) {
  // A skew divisor above 1 (Hopper's policy: 2 for keys alone) sends crowded key blocks through
  // the histogram's sorting network and the scatter's per-warp ranking; 16 sends more, 1 none:
  // every way stays correct.
  for (const std::uint32_t divisor : {1u, 16u})
    for (const std::uint32_t local : {0u, 576u}) {
      gpu::hrs::tuning t{local, local == 0 ? 0u : 64u};
      t.skew_divisor = divisor;
      for (const std::uint64_t joint : {std::uint64_t{1}, ~std::uint64_t{0}}) {
        t.joint_min_keys = joint;
        for (const std::uint64_t n : {9217ull, 100003ull, 1000003ull})
          for (const key_distribution& d : all_distributions()) this->check(n, d, t);
      }
    }
}

TYPED_TEST(hrs_test, FirstRoundSplitOutAsTheMultiGpuExchangeRunsIt) {
  const gpu::hrs::tuning t =
      gpu::hrs::resolve<TypeParam, no_value>({}, this->shapes_.compute_capability);
  const std::uint64_t threshold = t.local_threshold;
  for (const std::uint64_t n : std::vector<std::uint64_t>{1, 2, 1000, threshold, threshold + 1,
                                                          100003, (std::uint64_t{1} << 22) + 1})
    for (const key_distribution& d : all_distributions()) this->check_first_round(n, d);
  // A section at a time, as an exchange through staging runs it.
  const std::uint64_t section = gpu::hrs::min_section_keys;
  for (const key_distribution& d : all_distributions()) {
    this->check_first_round(3 * section + 5, d, 3);
    this->check_first_round(8 * section + 1, d, 8);
  }
  // More sections than the keys allow are refused.
  EXPECT_THROW(this->check_first_round(1000, all_distributions().front(), 2), error);
  // Counts that do not add up to n are refused.
  std::vector<std::uint64_t> counts(gpu::hrs::radix, 0);
  counts[0] = 5;
  TypeParam* const keys[2] = {nullptr, nullptr};
  EXPECT_THROW(gpu::hrs::sort_from_second_round<TypeParam>(this->shapes_, {}, keys, counts.data(),
                                                           6, nullptr, 0, this->stream_.get()),
               error);
}

TYPED_TEST(hrs_test, WorkspaceFollowsTheModel) {
  // The bookkeeping stays a small fraction of the keys' two buffers (the paper's section 4.5).
  const std::uint64_t n = std::uint64_t{1} << 28;
  const std::uint64_t ws =
      gpu::hrs::workspace_bytes<TypeParam, no_value>(n, {}, this->shapes_.compute_capability);
  const std::uint64_t buffers = 2 * n * sizeof(TypeParam);
  EXPECT_LT(ws, buffers / 8) << ws << " bytes of workspace for " << n << " keys";
  std::cout << "workspace for 2^28 u" << 8 * sizeof(TypeParam) << " keys: " << ws << " bytes, "
            << 100.0 * static_cast<double>(ws) / static_cast<double>(buffers)
            << " % of the two key buffers\n";
}

TYPED_TEST(hrs_test, RejectsBadThresholdsAndShortWorkspace) {
  const int cc = this->shapes_.compute_capability;
  auto resolve = [&](std::uint32_t local, std::uint32_t merge) {
    return gpu::hrs::resolve<TypeParam, no_value>(gpu::hrs::tuning{local, merge}, cc);
  };
  EXPECT_THROW(resolve(1u << 20, 0), error);
  EXPECT_THROW(resolve(1024, 1000), error);
  TypeParam* const keys[2] = {nullptr, nullptr};
  no_value* const values[2] = {nullptr, nullptr};
  auto sort_short = [&] {
    gpu::hrs::sort<TypeParam, no_value>(this->shapes_, {}, keys, values, 100000, nullptr, 16,
                                        this->stream_.get());
  };
  EXPECT_THROW(sort_short(), error);
}

// --- key+value pairs ------------------------------------------------------------------------

/// Expects the pairs (hk, hv) to hold CUB's keys (ck) bit for bit and, within every run of
/// equal keys, the same multiset of values as CUB's (cv): HRS does not keep equal keys in order.
template <typename Key, typename Value>
void expect_same_pairs(const std::vector<Key>& hk, const std::vector<Value>& hv,
                       const std::vector<Key>& ck, const std::vector<Value>& cv) {
  ASSERT_EQ(hk.size(), ck.size());
  for (std::size_t i = 0; i < hk.size(); ++i)
    ASSERT_EQ(hk[i], ck[i]) << "keys differ at " << i << " of " << hk.size();
  std::vector<Value> a, b;
  for (std::size_t i = 0; i < ck.size();) {
    std::size_t j = i + 1;
    while (j < ck.size() && ck[j] == ck[i]) ++j;
    if (j - i == 1) {
      ASSERT_EQ(hv[i], cv[i]) << "value of the key at " << i;
    } else {
      a.assign(hv.begin() + i, hv.begin() + j);
      b.assign(cv.begin() + i, cv.begin() + j);
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      ASSERT_EQ(a, b) << "values of the " << j - i << " equal keys at " << i;
    }
    i = j;
  }
}

template <typename Pair>
class hrs_pairs_test : public gpu_test {
 protected:
  using Key = typename Pair::first_type;
  using Value = typename Pair::second_type;

  void SetUp() override {
    gpu_test::SetUp();
    if (IsSkipped()) return;
    stream_ = gpu::stream(0);
    shapes_ = gpu::hrs::prepare<Key, Value>(0, {});
  }

  /// Sorts n pairs (keys of `dist`, values = index) with HRS and CUB and compares on the host.
  void check(std::uint64_t n, const key_distribution& dist, gpu::hrs::tuning tuning = {}) {
    if (n > max_keys()) return;
    tuning = with_env(tuning);
    const std::uint64_t seed = base_seed() ^ (n * 0x9e3779b97f4a7c15ull) ^ (dist.and_words << 8) ^
                               static_cast<std::uint64_t>(dist.what);
    SCOPED_TRACE("u" + std::to_string(8 * sizeof(Key)) + "+u" + std::to_string(8 * sizeof(Value)) +
                 " n=" + std::to_string(n) + " " + dist.name() + " seed=" + std::to_string(seed) +
                 " thresholds " + std::to_string(tuning.local_threshold) + "/" +
                 std::to_string(tuning.merge_threshold));
    cudaStream_t s = stream_.get();
    const std::uint64_t hrs_ws =
        gpu::hrs::workspace_bytes<Key, Value>(n, tuning, shapes_.compute_capability);
    const std::uint64_t cub_ws =
        gpu::detail::onesweep_pairs_temp_bytes<Key, Value>(static_cast<std::uint32_t>(n));
    const std::uint64_t kb = std::max<std::uint64_t>(n, 1) * sizeof(Key);
    const std::uint64_t vb = std::max<std::uint64_t>(n, 1) * sizeof(Value);
    gpu::device_buffer keys[4], values[4];
    for (int i = 0; i < 4; ++i) {
      keys[i] = gpu::device_buffer(kb, 0);
      values[i] = gpu::device_buffer(vb, 0);
    }
    gpu::device_buffer hws(std::max<std::uint64_t>(hrs_ws, 1), 0);
    gpu::device_buffer cws(std::max<std::uint64_t>(cub_ws, 1), 0);
    auto k = [&](int i) { return reinterpret_cast<Key*>(keys[i].data()); };
    auto v = [&](int i) { return reinterpret_cast<Value*>(values[i].data()); };
    generate_keys<Key>(k(0), n, dist, seed, s);
    generate_indices<Value>(v(0), n, s);
    GPUSORT_CUDA_TRY(cudaMemcpyAsync(k(2), k(0), n * sizeof(Key), cudaMemcpyDeviceToDevice, s));
    GPUSORT_CUDA_TRY(cudaMemcpyAsync(v(2), v(0), n * sizeof(Value), cudaMemcpyDeviceToDevice, s));
    GPUSORT_CUDA_TRY(cudaMemsetAsync(k(1), 0xA5, kb, s));
    GPUSORT_CUDA_TRY(cudaMemsetAsync(v(1), 0xA5, vb, s));
    GPUSORT_CUDA_TRY(cudaMemsetAsync(hws.data(), 0xA5, hws.size(), s));
    Key* const hk[2] = {k(0), k(1)};
    Value* const hv[2] = {v(0), v(1)};
    gpu::hrs::sort<Key, Value>(shapes_, tuning, hk, hv, n, hws.data(), hws.size(), s);
    const bool alt = gpu::detail::onesweep_sort_pairs<Key, Value>(
        cws.data(), cws.size(), k(2), k(3), v(2), v(3), static_cast<std::uint32_t>(n), s);
    std::vector<Key> h_hk(n), h_ck(n);
    std::vector<Value> h_hv(n), h_cv(n);
    auto down = [&](void* host, const void* dev, std::uint64_t bytes) {
      GPUSORT_CUDA_TRY(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
    };
    down(h_hk.data(), k(0), n * sizeof(Key));
    down(h_hv.data(), v(0), n * sizeof(Value));
    down(h_ck.data(), k(alt ? 3 : 2), n * sizeof(Key));
    down(h_cv.data(), v(alt ? 3 : 2), n * sizeof(Value));
    stream_.synchronize();
    expect_same_pairs(h_hk, h_hv, h_ck, h_cv);
    if (n != 0) EXPECT_EQ(gpu::hrs::read_counters(hws.data(), s).overflow, 0u);
  }

  gpu::stream stream_;
  gpu::hrs::device_shapes shapes_;
};

using pair_types =
    ::testing::Types<std::pair<std::uint32_t, std::uint32_t>,
                     std::pair<std::uint64_t, std::uint64_t>,
                     std::pair<std::uint32_t, std::uint64_t>,
                     std::pair<std::uint64_t, std::uint32_t>>;
TYPED_TEST_SUITE(hrs_pairs_test, pair_types);

TYPED_TEST(hrs_pairs_test, EveryDistributionAndSize) {
  for (const std::uint64_t n : {0ull, 1ull, 2ull, 33ull, 1000ull, 9215ull, 9216ull, 9217ull,
                                65535ull, 65537ull, 1000003ull, 4194305ull})
    for (const key_distribution& d : all_distributions()) this->check(n, d);
}

TYPED_TEST(hrs_pairs_test, SmallThresholdsRecurseDeep) {
  gpu::hrs::tuning joint{576, 64};
  joint.joint_min_keys = 1;  // round 1's histograms from round 0's joint histogram
  gpu::hrs::tuning per_warp{576, 64};
  per_warp.skew_divisor = 16;  // crowded key blocks ranked per warp and digit
  for (const std::uint64_t n : {5000ull, 100003ull})
    for (const key_distribution& d : all_distributions()) {
      this->check(n, d, {576, 64});
      this->check(n, d, joint);
      this->check(n, d, per_warp);
    }
}

TYPED_TEST(hrs_pairs_test, ZeroDigitsStayEightBits) {
  // Pairs are compiled with 8-bit digits only: asking for wider zero digits is refused.
  using Key = typename TypeParam::first_type;
  using Value = typename TypeParam::second_type;
  auto resolve_from = [&](int round) {
    gpu::hrs::tuning t;
    t.extend_from_round = round;
    return gpu::hrs::resolve<Key, Value>(t, this->shapes_.compute_capability);
  };
  EXPECT_THROW(resolve_from(0), error);
  EXPECT_NO_THROW(resolve_from(gpu::hrs::max_rounds));  // never: accepted
}

TYPED_TEST(hrs_pairs_test, OneWarpLocalConfiguration) {
  using Key = typename TypeParam::first_type;
  using Value = typename TypeParam::second_type;
  this->shapes_ = gpu::hrs::prepare<Key, Value>(0, one_warp_first(576, 64));
  for (const std::uint64_t n : {33ull, 289ull, 100003ull})
    for (const key_distribution& d : all_distributions())
      this->check(n, d, one_warp_first(576, 64));
}

TYPED_TEST(hrs_pairs_test, EveryLocalMatchMode) {
  for (const gpu::hrs::match_mode m :
       {gpu::hrs::match_mode::atomic_or, gpu::hrs::match_mode::match_any}) {
    SCOPED_TRACE(gpu::hrs::to_string(m));
    gpu::hrs::tuning lsd_only{576, 64};
    lsd_only.local_match = m;
    lsd_only.rank_group_max = 1;
    for (const key_distribution& d : all_distributions()) this->check(100003, d, lsd_only);
  }
}

TYPED_TEST(hrs_pairs_test, Large) {
  for (const key_distribution& d : {key_distribution{key_dist::uniform, 1},
                                    key_distribution{key_dist::and_words, 3}})
    this->check((std::uint64_t{1} << 26) + 1, d);
}

// --- more than 2^32 keys ---------------------------------------------------------------------

class hrs_beyond_32_bit_counts_test : public gpu_test {};

/// More keys than a 32-bit count holds, where CUB's 32-bit count cannot be the oracle: the
/// result must be in order and hold the same multiset of keys. 32-bit keys: their buckets
/// still hold about 2^16 keys after two rounds, so the sort takes a third. Needs about 40 GB
/// of device memory; skipped where there is less, and where GPUSORT_HRS_TEST_MAX_KEYS caps
/// sizes.
TEST_F(hrs_beyond_32_bit_counts_test, MoreThan2To32Keys) {
  using Key = std::uint32_t;
  if (std::getenv("GPUSORT_HRS_TEST_MAX_KEYS") != nullptr)
    GTEST_SKIP() << "GPUSORT_HRS_TEST_MAX_KEYS caps the sizes";
  const std::uint64_t n = (std::uint64_t{1} << 32) + (std::uint64_t{1} << 21) + 5;
  gpu::stream stream(0);
  cudaStream_t s = stream.get();
  const gpu::hrs::device_shapes shapes = gpu::hrs::prepare<Key, no_value>(0, {});
  const std::uint64_t ws =
      gpu::hrs::workspace_bytes<Key, no_value>(n, {}, shapes.compute_capability);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  GPUSORT_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::uint64_t needed = 2 * n * sizeof(Key) + ws + (std::uint64_t{1} << 30);
  if (free_bytes < needed)
    GTEST_SKIP() << needed << " bytes of device memory needed, " << free_bytes << " free";
  gpu::device_buffer keys0(n * sizeof(Key), 0);
  gpu::device_buffer keys1(n * sizeof(Key), 0);
  gpu::device_buffer workspace(ws, 0);
  gpu::device_buffer scratch(2 * sizeof(unsigned long long), 0);
  auto* d_scratch = reinterpret_cast<unsigned long long*>(scratch.data());
  Key* const keys[2] = {reinterpret_cast<Key*>(keys0.data()),
                        reinterpret_cast<Key*>(keys1.data())};
  no_value* const values[2] = {nullptr, nullptr};
  const std::uint64_t seed = base_seed() ^ 0x2f2f2f2full;
  SCOPED_TRACE("u32 n=" + std::to_string(n) + " uniform seed=" + std::to_string(seed));
  generate_keys<Key>(keys[0], n, {key_dist::uniform, 1}, seed, s);
  const key_check before = check_keys<Key>(keys[0], n, d_scratch, s);
  gpu::hrs::sort<Key, no_value>(shapes, {}, keys, values, n, workspace.data(), ws, s);
  const key_check after = check_keys<Key>(keys[0], n, d_scratch, s);
  EXPECT_EQ(after.descents, 0u) << "keys out of order";
  EXPECT_EQ(after.multiset_hash, before.multiset_hash) << "keys lost or duplicated";
  EXPECT_EQ(gpu::hrs::read_counters(workspace.data(), s).overflow, 0u);
}

// --- through the run former (the chunk_sorter seam), every key-only type and order ----------

class hrs_run_former_test : public gpu_test {
 protected:
  /// The runs the former makes of `input` with the hybrid radix sort, on poisoned device
  /// memory, in chunks of `chunk` records.
  static std::vector<std::vector<std::byte>> hrs_runs(const std::vector<std::byte>& input,
                                                      const record_format& f, bool descending,
                                                      std::uint64_t chunk) {
    gpu::run_former_config config;
    config.format = f;
    config.descending = descending;
    config.algorithm = gpu::chunk_algorithm::hrs;
    config.max_chunk_records = chunk;
    config.poison_device_memory = true;
    collecting_sink sink(f.record_size);
    {
      gpu::run_former former(config, sink, nullptr);
      EXPECT_NE(former.describe().find("hybrid radix sort"), std::string::npos)
          << former.describe();
      former.push({input.data(), input.size()}, nullptr);
      former.finish();
    }
    return sink.runs();
  }
};

TEST_F(hrs_run_former_test, EveryKeyOnlyTypeAndOrder) {
  const std::uint64_t n = 300001;
  const std::uint64_t chunk = 100000;
  for (const key_type type : {key_type::u32, key_type::i32, key_type::f32, key_type::u64,
                              key_type::i64, key_type::f64}) {
    for (const bool descending : {false, true}) {
      const record_format f = key_only_format(type);
      const std::uint64_t seed = base_seed() + static_cast<std::uint64_t>(type) * 2 + descending;
      SCOPED_TRACE(describe(f) + (descending ? " descending" : "") + " seed " +
                   std::to_string(seed));
      const std::vector<std::byte> input = random_records(n, f, seed);
      expect_runs_match(input, f, descending, chunk, hrs_runs(input, f, descending, chunk));
    }
  }
}

TEST_F(hrs_run_former_test, AutoChoosesBySampledSkew) {
  // Three chunks at the 64-bit crossover size: uniform keys (HRS measured faster), keys ANDed
  // from three words (Onesweep faster) and all-equal keys (HRS faster). Signed and descending
  // as well, so that the sample is normalized the way the sort sees the keys.
  const std::uint64_t chunk = std::uint64_t{1} << 22;
  for (const key_type type : {key_type::u64, key_type::i64}) {
    for (const bool descending : {false, true}) {
      const record_format f = key_only_format(type);
      const std::uint64_t seed = base_seed() + 31 + static_cast<std::uint64_t>(type) + descending;
      SCOPED_TRACE(describe(f) + (descending ? " descending" : "") + " seed " +
                   std::to_string(seed));
      std::mt19937_64 rng(seed);
      std::vector<std::uint64_t> keys(3 * chunk);
      for (std::uint64_t i = 0; i < chunk; ++i) {
        keys[i] = rng();
        keys[chunk + i] = rng() & rng() & rng();
        keys[2 * chunk + i] = 0x5555aaaa5555aaaaull;
      }
      // Signed keys: the normalized order puts the sign bit first; descending complements.
      // Either way the skew of each chunk stays what it is.
      std::vector<std::byte> input(keys.size() * sizeof(std::uint64_t));
      std::memcpy(input.data(), keys.data(), input.size());
      gpu::run_former_config config;
      config.format = f;
      config.descending = descending;
      config.algorithm = gpu::chunk_algorithm::automatic;
      config.max_chunk_records = chunk;
      collecting_sink sink(f.record_size);
      std::string choices;
      {
        gpu::run_former former(config, sink, nullptr);
        former.push({input.data(), input.size()}, nullptr);
        former.finish();
        choices = former.choices();
      }
      EXPECT_NE(choices.find("2 chunk(s) with hrs, 1 with onesweep"), std::string::npos)
          << choices;
      expect_runs_match(input, f, descending, chunk, sink.runs());
    }
  }
}

/// As expect_runs_match, for a sort that does not keep equal keys in order: each run holds the
/// oracle's records in the oracle's key order, equal keys' records as the same multiset.
void expect_runs_match_unstable(const std::vector<std::byte>& input, const record_format& f,
                                bool descending, std::uint64_t chunk_records,
                                const std::vector<std::vector<std::byte>>& runs) {
  const std::uint64_t n = input.size() / f.record_size;
  const std::uint64_t expected_runs = (n + chunk_records - 1) / chunk_records;
  ASSERT_EQ(runs.size(), expected_runs);
  const std::uint32_t size = f.record_size;
  for (std::uint64_t r = 0; r < expected_runs; ++r) {
    const std::uint64_t first = r * chunk_records;
    const std::uint64_t count = std::min(chunk_records, n - first);
    const std::vector<std::byte> expected =
        oracle_sort(input.data() + first * size, count, f, descending);
    ASSERT_EQ(runs[r].size(), expected.size()) << "run " << r;
    auto record = [&](const std::vector<std::byte>& v, std::uint64_t i) {
      return std::string(reinterpret_cast<const char*>(v.data() + i * size), size);
    };
    for (std::uint64_t i = 0; i < count;) {
      const std::uint64_t key = normalized_key(expected.data() + i * size, f, descending);
      std::uint64_t j = i + 1;
      while (j < count && normalized_key(expected.data() + j * size, f, descending) == key) ++j;
      std::vector<std::string> want, got;
      for (std::uint64_t k = i; k < j; ++k) {
        want.push_back(record(expected, k));
        got.push_back(record(runs[r], k));
      }
      std::sort(want.begin(), want.end());
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, want) << "run " << r << ", records " << i << ".." << j << " of " << count
                           << " (" << describe(f) << (descending ? ", desc" : "") << ")";
      i = j;
    }
  }
}

TEST_F(hrs_run_former_test, KeyPayloadRecords) {
  const std::uint64_t n = 250007;
  const std::uint64_t chunk = 100000;
  struct shape {
    key_type type;
    std::uint32_t record_size;
    std::uint32_t key_offset;
  };
  for (const shape& sh : {shape{key_type::u64, 16, 0}, shape{key_type::f64, 16, 8},
                          shape{key_type::i32, 8, 4}, shape{key_type::u32, 12, 0},
                          shape{key_type::f32, 5, 1}, shape{key_type::i64, 12, 2}}) {
    for (const bool descending : {false, true}) {
      const record_format f = make_format(sh.type, sh.record_size, sh.key_offset);
      const std::uint64_t seed = base_seed() + sh.record_size * 31 + sh.key_offset + descending;
      SCOPED_TRACE(describe(f) + (descending ? " descending" : "") + " seed " +
                   std::to_string(seed));
      const std::vector<std::byte> input = random_records(n, f, seed);
      expect_runs_match_unstable(input, f, descending, chunk,
                                 hrs_runs(input, f, descending, chunk));
    }
  }
}

}  // namespace
}  // namespace gpusort::test
