// The multi-GPU sort (gpu/multi_gpu_sort) against std::sort of the same keys: device lists
// {0}, {0,0}, {0,0,0} (one GPU plays every slot, exchange included) and, with two GPUs, {0,1}
// and {1,0}; uniform, AND-ed, all-equal, Zipf, sorted and few-distinct keys; sizes 0, 1, small
// odd ones, up to 2^26; uneven slices, empty ones included. Every destination must hold at
// most the plan's bound. Scattered straight into the destinations (fused) and through a
// scatter buffer. In place (the command's exchange sort): every numeric key type in both
// orders, copied in and out in pieces. GPUSORT_TEST_SEED replays a failure.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/device_keys.cuh"
#include "gpu/device_memory.cuh"
#include "gpu/hrs/hrs_dispatch.cuh"
#include "gpu/gpu_test_support.hpp"
#include "gpu/multi_gpu_sort.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"
#include "gpusort/record_format.hpp"
#include "test_support.hpp"

namespace gpusort::test {
namespace {

/// Keys of a few distinct values that share all but their lowest bits: the planner must
/// refine down to single keys and split them by records.
template <typename Word>
__global__ void few_distinct_kernel(Word* keys, std::uint64_t n, unsigned distinct) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  const Word base = sizeof(Word) == 4 ? Word(0x89abcde0u) : Word(0x0123456789abcde0ull);
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    keys[i] = base + static_cast<Word>(keys[i] % distinct);
}

enum class dist : std::uint8_t { uniform, and3, equal, zipf, sorted, few };

std::string name_of(dist d) {
  switch (d) {
    case dist::uniform: return "uniform";
    case dist::and3: return "and3";
    case dist::equal: return "equal";
    case dist::zipf: return "zipf";
    case dist::sorted: return "sorted";
    case dist::few: return "few";
  }
  return "?";
}

const std::vector<dist> all_dists = {dist::uniform, dist::and3,   dist::equal,
                                     dist::zipf,    dist::sorted, dist::few};

template <typename Word>
void fill(Word* d_keys, std::uint64_t n, dist d, std::uint64_t seed, cudaStream_t s) {
  switch (d) {
    case dist::uniform: generate_keys<Word>(d_keys, n, {key_dist::uniform, 1}, seed, s); break;
    case dist::and3: generate_keys<Word>(d_keys, n, {key_dist::and_words, 3}, seed, s); break;
    case dist::equal: generate_keys<Word>(d_keys, n, {key_dist::equal, 1}, seed, s); break;
    case dist::zipf: generate_keys<Word>(d_keys, n, {key_dist::zipf, 1}, seed, s); break;
    case dist::sorted: generate_keys<Word>(d_keys, n, {key_dist::sorted, 1}, seed, s); break;
    case dist::few:
      generate_keys<Word>(d_keys, n, {key_dist::uniform, 1}, seed, s);
      if (n != 0) {
        few_distinct_kernel<Word><<<256, 256, 0, s>>>(d_keys, n, 3);
        GPUSORT_CUDA_CHECK_LAUNCH();
      }
      break;
  }
}

std::vector<std::uint64_t> even_split(std::uint64_t n, std::size_t g) {
  std::vector<std::uint64_t> sizes(g, n / g);
  for (std::size_t i = 0; i < n % g; ++i) ++sizes[i];
  return sizes;
}

/// The device lists of the suite: one GPU in one, two and three slots, and both orders of two
/// GPUs where there are two.
std::vector<std::vector<int>> device_lists() {
  std::vector<std::vector<int>> lists = {{0}, {0, 0}, {0, 0, 0}};
  if (gpu::device_count() >= 2) {
    lists.push_back({0, 1});
    lists.push_back({1, 0});
  }
  return lists;
}

struct options {
  unsigned digit_bits = 8;
  std::optional<std::uint64_t> padding;
  bool fuse = true;  ///< multi_gpu_sort_config::fuse_exchange
  gpu::chunk_algorithm local = gpu::chunk_algorithm::onesweep;  ///< ::local_algorithm
  /// Whether the exchange must be (or must not be) HRS's first round; unset: either.
  std::optional<bool> first_round;
  std::uint32_t sections = gpu::multi_gpu_sort_config{}.exchange_sections;
  bool overlap = true;  ///< ::exchange_overlap
  /// The sections the staged exchange must have crossed in (0: none staged); unset: any.
  std::optional<std::uint32_t> staged_sections;
};

/// Sorts slices of `sizes` keys (on `devices`) with a fresh sorter, or with `reuse`, and
/// compares with std::sort of the same keys.
template <typename Word>
void check_sort(const std::vector<int>& devices, const std::vector<std::uint64_t>& sizes, dist d,
                std::uint64_t seed, const options& o = {}, gpu::multi_gpu_sorter* reuse = nullptr) {
  std::string sizes_text;
  for (const std::uint64_t s : sizes) sizes_text += std::to_string(s) + " ";
  SCOPED_TRACE("devices " + device_list_text(devices) + ", slices " + sizes_text + name_of(d) +
               ", u" + std::to_string(sizeof(Word) * 8) + ", digit_bits " +
               std::to_string(o.digit_bits) + ", local " + gpu::to_string(o.local) + ", seed " +
               std::to_string(seed));
  gpu::multi_gpu_sort_config config;
  config.key = sizeof(Word) == 4 ? gpu::multi_gpu_key::u32 : gpu::multi_gpu_key::u64;
  config.digit_bits = o.digit_bits;
  config.padding = o.padding;
  config.fuse_exchange = o.fuse;
  config.local_algorithm = o.local;
  config.exchange_sections = o.sections;
  config.exchange_overlap = o.overlap;
  std::optional<gpu::multi_gpu_sorter> own;
  if (reuse == nullptr) own.emplace(devices, config);
  gpu::multi_gpu_sorter& sorter = reuse != nullptr ? *reuse : *own;

  std::vector<gpu::device_buffer> inputs;
  std::vector<gpu::multi_gpu_slice> slices;
  std::vector<Word> expected;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    inputs.emplace_back(sizes[i] * sizeof(Word), devices[i]);
    gpu::device_guard guard(devices[i]);
    auto* d_keys = reinterpret_cast<Word*>(inputs.back().data());
    fill<Word>(d_keys, sizes[i], d, seed + i, nullptr);
    std::vector<Word> host(sizes[i]);
    if (sizes[i] != 0)
      GPUSORT_CUDA_TRY(cudaMemcpy(host.data(), d_keys, sizes[i] * sizeof(Word),
                                  cudaMemcpyDeviceToHost));
    expected.insert(expected.end(), host.begin(), host.end());
    slices.push_back({d_keys, sizes[i]});
  }
  std::sort(expected.begin(), expected.end());

  const std::vector<gpu::multi_gpu_memory> memory = sorter.memory(sizes);
  ASSERT_EQ(memory.size(), devices.size());
  // One GPU in every slot reaches its own memory: fused unless asked not to.
  if (reuse == nullptr && std::all_of(devices.begin(), devices.end(),
                                      [&](int id) { return id == devices[0]; }))
    EXPECT_EQ(sorter.fused(), o.fuse);
  for (std::size_t i = 0; i < devices.size(); ++i)
    if (!sorter.fused()) EXPECT_GE(memory[i].scatter, sizes[i] * sizeof(Word));

  const gpu::multi_gpu_result result = sorter.sort(slices);
  ASSERT_EQ(result.ranges.size(), devices.size());
  EXPECT_EQ(result.plan.total_records, expected.size());
  if (o.first_round) EXPECT_EQ(result.first_round_exchange, *o.first_round);
  if (o.staged_sections) EXPECT_EQ(result.staged_sections, *o.staged_sections);
  std::vector<Word> got;
  got.reserve(expected.size());
  for (std::size_t d2 = 0; d2 < result.ranges.size(); ++d2) {
    const gpu::multi_gpu_range& r = result.ranges[d2];
    EXPECT_EQ(r.device, devices[d2]);
    EXPECT_EQ(r.records, result.plan.destination_records[d2]);
    EXPECT_LE(r.records, result.plan.bound()) << "destination " << d2;
    EXPECT_LE(r.records * sizeof(Word), memory[d2].receive) << "destination " << d2;
    std::vector<Word> host(r.records);
    if (r.records != 0) {
      gpu::device_guard guard(r.device);
      GPUSORT_CUDA_TRY(cudaMemcpy(host.data(), r.d_keys, r.records * sizeof(Word),
                                  cudaMemcpyDeviceToHost));
    }
    got.insert(got.end(), host.begin(), host.end());
  }
  ASSERT_EQ(got.size(), expected.size());
  const auto mismatch = std::mismatch(got.begin(), got.end(), expected.begin());
  EXPECT_TRUE(mismatch.first == got.end())
      << "first difference at key " << (mismatch.first - got.begin()) << " of " << got.size();
}

template <typename Word>
class multi_gpu_sort_test : public gpu_test {};

using words = ::testing::Types<std::uint32_t, std::uint64_t>;
TYPED_TEST_SUITE(multi_gpu_sort_test, words);

TYPED_TEST(multi_gpu_sort_test, EveryDistributionOnEveryDeviceList) {
  // Scattered straight into the destinations, and laid out first, then copied.
  const std::uint64_t seed = base_seed();
  for (const bool fuse : {true, false})
    for (const std::vector<int>& devices : device_lists())
      for (const dist d : all_dists)
        check_sort<TypeParam>(devices, even_split(100'003, devices.size()), d, seed,
                              {8, std::nullopt, fuse});
}

TYPED_TEST(multi_gpu_sort_test, SmallAndOddSizes) {
  const std::uint64_t seed = base_seed() + 1;
  for (const std::vector<int>& devices : device_lists())
    for (const std::uint64_t n : {0ull, 1ull, 2ull, 3ull, 5ull, 31ull, 257ull, 2049ull, 4097ull,
                                  65'537ull})
      for (const dist d : {dist::uniform, dist::equal, dist::few})
        check_sort<TypeParam>(devices, even_split(n, devices.size()), d, seed + n);
}

TYPED_TEST(multi_gpu_sort_test, UnevenSlices) {
  const std::uint64_t seed = base_seed() + 2;
  const std::vector<std::vector<std::uint64_t>> splits = {
      {0, 50'000, 123}, {70'001, 0, 0}, {0, 0, 70'001}, {1, 0, 99'999}, {0, 0, 0}};
  for (const std::vector<std::uint64_t>& sizes : splits)
    for (const dist d : all_dists) check_sort<TypeParam>({0, 0, 0}, sizes, d, seed);
  if (gpu::device_count() >= 2) {
    for (const dist d : all_dists) {
      check_sort<TypeParam>({0, 1}, {0, 80'000}, d, seed);
      check_sort<TypeParam>({1, 0}, {80'000, 3}, d, seed);
    }
  }
}

TYPED_TEST(multi_gpu_sort_test, NarrowDigitsAndNoPadding) {
  // 2-bit digits take many passes; no padding forces every spanning bucket to be refined,
  // down to splitting single keys.
  const std::uint64_t seed = base_seed() + 3;
  for (const unsigned bits : {2u, 5u, 16u})
    for (const std::optional<std::uint64_t> padding : {std::optional<std::uint64_t>{0},
                                                       std::optional<std::uint64_t>{}})
      for (const dist d : all_dists)
        check_sort<TypeParam>({0, 0, 0}, {40'000, 33'333, 7}, d, seed, {bits, padding});
}

TYPED_TEST(multi_gpu_sort_test, ManySlotsOnOneDevice) {
  const std::uint64_t seed = base_seed() + 4;
  for (const dist d : all_dists)
    check_sort<TypeParam>(std::vector<int>(7, 0), even_split(200'001, 7), d, seed);
}

TYPED_TEST(multi_gpu_sort_test, SorterReusedWithGrowingAndShrinkingSlices) {
  gpu::multi_gpu_sort_config config;
  config.key = sizeof(TypeParam) == 4 ? gpu::multi_gpu_key::u32 : gpu::multi_gpu_key::u64;
  gpu::multi_gpu_sorter sorter({0, 0}, config);
  const std::uint64_t seed = base_seed() + 5;
  for (const std::uint64_t n : {1'000ull, 300'000ull, 17ull, 0ull, 300'001ull})
    check_sort<TypeParam>({0, 0}, even_split(n, 2), dist::zipf, seed + n, {}, &sorter);
}

TYPED_TEST(multi_gpu_sort_test, Large) {
  // Up to 2^26 keys: the sizes at which the scatter's segments and the sort's portions are many.
  const std::uint64_t seed = base_seed() + 6;
  const std::uint64_t n = (std::uint64_t{1} << 26) + 3;
  check_sort<TypeParam>({0, 0}, even_split(n, 2), dist::uniform, seed);
  check_sort<TypeParam>({0, 0, 0}, {n / 2, 0, n / 2}, dist::zipf, seed);
  if (gpu::device_count() >= 2) {
    check_sort<TypeParam>({0, 1}, even_split(n, 2), dist::uniform, seed);
    check_sort<TypeParam>({1, 0}, even_split(n, 2), dist::and3, seed);
  }
}

/// In place: keys of `type` (as stored, ascending or descending) copied into the sorter's own
/// slices, sorted there, copied back, against std::sort of the same words by their
/// normalized key: the bytes must match exactly.
template <typename Word>
void check_in_place(const std::vector<int>& devices, const std::vector<std::uint64_t>& sizes,
                    dist d, key_type type, bool descending, std::uint64_t seed,
                    bool fuse = true,
                    gpu::chunk_algorithm local = gpu::chunk_algorithm::onesweep,
                    bool* first_round = nullptr) {
  std::string sizes_text;
  for (const std::uint64_t s : sizes) sizes_text += std::to_string(s) + " ";
  SCOPED_TRACE("in place, devices " + device_list_text(devices) + ", slices " + sizes_text +
               name_of(d) + ", type " + std::to_string(static_cast<int>(type)) +
               (descending ? " desc" : " asc") + (fuse ? "" : ", not fused") + ", local " +
               gpu::to_string(local) + ", seed " + std::to_string(seed));
  gpu::multi_gpu_sort_config config;
  config.key = sizeof(Word) == 4 ? gpu::multi_gpu_key::u32 : gpu::multi_gpu_key::u64;
  config.in_place = true;
  config.fuse_exchange = fuse;
  config.local_algorithm = local;
  config.type = type;
  config.descending = descending;
  gpu::multi_gpu_sorter sorter(devices, config);
  sorter.reserve(sizes);
  const std::vector<gpu::multi_gpu_memory> memory = sorter.memory(sizes);
  std::uint64_t n = 0;
  for (const std::uint64_t s : sizes) n += s;
  std::vector<Word> expected;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    EXPECT_EQ(memory[i].alternate, 0u);
    // The slice's buffer: the scatter buffer when fused, else the receive buffer.
    if (sorter.fused()) {
      EXPECT_GE(memory[i].scatter, sizes[i] * sizeof(Word));
      EXPECT_GE(memory[i].scatter, memory[i].receive);
    } else {
      EXPECT_EQ(memory[i].scatter, memory[i].receive);
      EXPECT_GE(memory[i].receive, sizes[i] * sizeof(Word));
    }
    gpu::device_buffer scratch(std::max<std::uint64_t>(1, sizes[i]) * sizeof(Word), devices[i]);
    std::vector<Word> host(sizes[i]);
    {
      gpu::device_guard guard(devices[i]);
      fill<Word>(reinterpret_cast<Word*>(scratch.data()), sizes[i], d, seed + i, nullptr);
      if (sizes[i] != 0)
        GPUSORT_CUDA_TRY(cudaMemcpy(host.data(), scratch.data(), sizes[i] * sizeof(Word),
                                    cudaMemcpyDeviceToHost));
    }
    // In two pieces, the second at an odd offset of keys.
    const std::uint64_t half = sizes[i] / 2 + (sizes[i] % 2);
    const auto* bytes = reinterpret_cast<const std::byte*>(host.data());
    sorter.copy_in(i, 0, {bytes, half * sizeof(Word)});
    sorter.copy_in(i, half * sizeof(Word),
                   {bytes + half * sizeof(Word), (sizes[i] - half) * sizeof(Word)});
    expected.insert(expected.end(), host.begin(), host.end());
  }
  // What the planner asks of equal slices is what reserve() took.
  if (sizes[0] == (n + devices.size() - 1) / devices.size())
    EXPECT_GE(gpu::exchange_slot_bytes(n, sizeof(Word), devices.size(), devices[0], local),
              memory[0].total());
  const auto codec = gpusort::detail::make_key_codec<Word>(type, descending);
  std::stable_sort(expected.begin(), expected.end(), [&](Word a, Word b) {
    return codec.normalize(a) < codec.normalize(b);
  });

  const gpu::multi_gpu_result result = sorter.sort_in_place(sizes);
  ASSERT_EQ(result.ranges.size(), devices.size());
  if (first_round != nullptr) *first_round = result.first_round_exchange;
  std::vector<Word> got(n);
  std::uint64_t at = 0;
  for (std::size_t d2 = 0; d2 < result.ranges.size(); ++d2) {
    const gpu::multi_gpu_range& r = result.ranges[d2];
    EXPECT_EQ(r.slot, d2);
    EXPECT_LE(r.records, result.plan.bound()) << "destination " << d2;
    auto* out = reinterpret_cast<std::byte*>(got.data() + at);
    // Out in three pieces.
    const std::uint64_t third = r.records / 3;
    sorter.copy_out(r, 0, {out, third * sizeof(Word)});
    sorter.copy_out(r, third * sizeof(Word),
                    {out + third * sizeof(Word), (r.records - third) * sizeof(Word)});
    at += r.records;
  }
  ASSERT_EQ(at, n);
  const auto mismatch = std::mismatch(got.begin(), got.end(), expected.begin());
  EXPECT_TRUE(mismatch.first == got.end())
      << "first difference at key " << (mismatch.first - got.begin()) << " of " << got.size();
  // Past the slice or the range: refused.
  const std::uint64_t slice_bytes = sorter.fused() ? memory[0].scatter : memory[0].receive;
  EXPECT_THROW(sorter.copy_in(0, slice_bytes, {reinterpret_cast<std::byte*>(got.data()), 1}),
               gpusort::error);
  if (!result.ranges.empty())
    EXPECT_THROW(sorter.copy_out(result.ranges[0], result.ranges[0].records * sizeof(Word),
                                 {reinterpret_cast<std::byte*>(got.data()), 1}),
                 gpusort::error);
}

TYPED_TEST(multi_gpu_sort_test, InPlaceEveryKeyTypeAndOrder) {
  const std::uint64_t seed = base_seed() + 7;
  const bool narrow = sizeof(TypeParam) == 4;
  const std::vector<key_type> types =
      narrow ? std::vector<key_type>{key_type::u32, key_type::i32, key_type::f32}
             : std::vector<key_type>{key_type::u64, key_type::i64, key_type::f64};
  for (const std::vector<int>& devices : device_lists())
    for (const key_type type : types)
      for (const bool descending : {false, true})
        for (const dist d : {dist::uniform, dist::equal, dist::zipf, dist::few})
          for (const bool fuse : {true, false})
            check_in_place<TypeParam>(devices, even_split(150'001, devices.size()), d, type,
                                      descending, seed, fuse);
}

TYPED_TEST(multi_gpu_sort_test, InPlaceSmallUnevenAndLarge) {
  const std::uint64_t seed = base_seed() + 8;
  const key_type type = sizeof(TypeParam) == 4 ? key_type::u32 : key_type::u64;
  for (const std::vector<std::uint64_t>& sizes :
       std::vector<std::vector<std::uint64_t>>{{0, 0}, {1, 0}, {0, 3}, {5, 2}, {70'001, 0}})
    check_in_place<TypeParam>({0, 0}, sizes, dist::uniform, type, false, seed);
  const std::uint64_t n = (std::uint64_t{1} << 25) + 5;
  check_in_place<TypeParam>({0, 0}, even_split(n, 2), dist::and3, type, false, seed);
  if (gpu::device_count() >= 2) {
    check_in_place<TypeParam>({0, 1}, even_split(n, 2), dist::uniform, type, true, seed);
    check_in_place<TypeParam>({0, 1}, even_split(n, 2), dist::uniform, type, true, seed, false);
    check_in_place<TypeParam>({1, 0}, {n, 0}, dist::zipf, type, false, seed);
  }
}

TYPED_TEST(multi_gpu_sort_test, RangesSortedByTheHybridRadixSort) {
  // Each destination's range by HRS instead of Onesweep: past HRS's local-sort threshold (so
  // that its scatter rounds run), on every device list, and in place with the key transforms.
  const std::uint64_t seed = base_seed() + 9;
  const gpu::chunk_algorithm hrs = gpu::chunk_algorithm::hrs;
  for (const std::vector<int>& devices : device_lists())
    for (const dist d : all_dists)
      check_sort<TypeParam>(devices, even_split(300'007, devices.size()), d, seed,
                            {8, std::nullopt, true, hrs});
  const std::uint64_t n = (std::uint64_t{1} << 24) + 3;
  const std::vector<int> pair =
      gpu::device_count() >= 2 ? std::vector<int>{0, 1} : std::vector<int>{0, 0};
  check_sort<TypeParam>(pair, even_split(n, 2), dist::uniform, seed, {8, std::nullopt, true, hrs});
  check_sort<TypeParam>(pair, even_split(n, 2), dist::and3, seed, {8, std::nullopt, false, hrs});
  const key_type type = sizeof(TypeParam) == 4 ? key_type::f32 : key_type::i64;
  check_in_place<TypeParam>(pair, even_split(n, 2), dist::zipf, type, true, seed, true, hrs);
}

TYPED_TEST(multi_gpu_sort_test, ExchangeIsTheHybridRadixSortsFirstRound) {
  // Evenly spread keys put every destination boundary on a digit edge (within the padding)
  // after the first histogram: the sources scatter by top digit into the destinations, which
  // sort from HRS's second round on. One key everywhere needs a finer plan: the general path.
  const std::uint64_t seed = base_seed() + 10;
  const gpu::chunk_algorithm hrs = gpu::chunk_algorithm::hrs;
  const std::uint64_t n = (std::uint64_t{1} << 22) + 3;
  std::vector<std::vector<int>> pairs = {{0, 0}};
  if (gpu::device_count() >= 2) pairs.push_back({0, 1});
  for (const std::vector<int>& pair : pairs) {
    for (const std::vector<std::uint64_t>& sizes : std::vector<std::vector<std::uint64_t>>{
             even_split(n, 2), {n, 0}, {0, n}, {n / 4, n - n / 4}, {7, n - 7}})
      check_sort<TypeParam>(pair, sizes, dist::uniform, seed, {8, std::nullopt, true, hrs, true});
    // (Each slice of dist::equal has a key of its own: from one slice, one key in all.)
    check_sort<TypeParam>(pair, {n, 0}, dist::equal, seed, {8, std::nullopt, true, hrs, false});
    // Not fused, or another digit width: never.
    check_sort<TypeParam>(pair, even_split(n, 2), dist::uniform, seed,
                          {8, std::nullopt, false, hrs, false});
    check_sort<TypeParam>(pair, even_split(n, 2), dist::uniform, seed,
                          {6, std::nullopt, true, hrs, false});
    for (const dist d : {dist::equal, dist::zipf, dist::and3, dist::sorted, dist::few})
      check_sort<TypeParam>(pair, even_split(n, 2), d, seed, {8, std::nullopt, true, hrs});
    // In place, with the key transforms around it.
    const key_type type = sizeof(TypeParam) == 4 ? key_type::i32 : key_type::i64;
    for (const bool descending : {false, true}) {
      bool first_round = false;
      check_in_place<TypeParam>(pair, even_split(n, 2), dist::uniform, type, descending, seed,
                                true, hrs, &first_round);
      EXPECT_TRUE(first_round);
    }
  }
  if (gpu::device_count() >= 2)
    check_sort<TypeParam>({1, 0}, even_split(n, 2), dist::uniform, seed,
                          {8, std::nullopt, true, hrs, true});
  check_sort<TypeParam>({0, 0, 0}, even_split(n, 3), dist::uniform, seed,
                        {8, std::nullopt, true, hrs});
  check_sort<TypeParam>({0, 0, 0}, {n / 2, 0, n - n / 2}, dist::uniform, seed,
                        {8, std::nullopt, true, hrs});
}

TYPED_TEST(multi_gpu_sort_test, FirstRoundKeysForAnotherGpuCrossAFewSectionsAtATime) {
  // Slices of three sections and more: the keys for the other GPU are scattered into the
  // source's alternate buffer a section at a time, and copied over while the next is; each
  // destination sorts its first digits while the rest cross (first_round_layout).
  const std::uint64_t seed = base_seed() + 11;
  const gpu::chunk_algorithm hrs = gpu::chunk_algorithm::hrs;
  const std::uint64_t section = gpu::hrs::min_section_keys;
  const std::uint64_t n = 2 * (3 * section + 5);
  options staged{8, std::nullopt, true, hrs, true};
  if (gpu::device_count() >= 2) {
    staged.staged_sections = 3;
    check_sort<TypeParam>({0, 1}, even_split(n, 2), dist::uniform, seed, staged);
    // Uneven: each source its own number of sections (the larger one's counted).
    staged.staged_sections = 5;
    check_sort<TypeParam>({1, 0}, {n / 6, n - n / 6}, dist::uniform, seed, staged);
    // One group per destination.
    staged.overlap = false;
    staged.staged_sections = 3;
    check_sort<TypeParam>({0, 1}, even_split(n, 2), dist::uniform, seed, staged);
    staged.overlap = true;
    // Fewer sections asked for; none; a slice too small for two.
    staged.sections = 2;
    staged.staged_sections = 2;
    check_sort<TypeParam>({0, 1}, even_split(n, 2), dist::uniform, seed, staged);
    staged.sections = 0;
    staged.staged_sections = 0;
    check_sort<TypeParam>({0, 1}, even_split(n, 2), dist::uniform, seed, staged);
    staged.sections = 8;
    check_sort<TypeParam>({0, 1}, even_split(2 * section + 2, 2), dist::uniform, seed, staged);
    // Skewed keys whose first histogram still cuts at digit edges.
    staged.staged_sections.reset();
    for (const dist d : {dist::zipf, dist::sorted})
      check_sort<TypeParam>({0, 1}, even_split(n, 2), d, seed, {8, std::nullopt, true, hrs});
  }
  // Slots of one GPU store into each other's memory: nothing to stage.
  staged.staged_sections = 0;
  check_sort<TypeParam>({0, 0}, even_split(n, 2), dist::uniform, seed, staged);
}

TEST(multi_gpu_sort_config_test, ExchangeTakesKeyOnlyNumericRecords) {
  EXPECT_TRUE(gpu::exchange_supports(format_preset("u64")));
  EXPECT_TRUE(gpu::exchange_supports(format_preset("f32")));
  EXPECT_FALSE(gpu::exchange_supports(format_preset("kv64")));
  EXPECT_FALSE(gpu::exchange_supports(format_preset("gensort")));
  record_format bytes4 = format_preset("u32");
  set_key_type(bytes4, "bytes:4");
  EXPECT_FALSE(gpu::exchange_supports(bytes4));
}

TEST(multi_gpu_sort_config_test, RejectsAnEmptyListAndBadDigits) {
  // Checked before any device is touched: runs without a GPU.
  EXPECT_THROW(gpu::multi_gpu_sorter({}, {}), gpusort::error);
  EXPECT_THROW(gpu::multi_gpu_sorter(std::vector<int>(gpu::multi_gpu_max_slots + 1, 0), {}),
               gpusort::error);
  gpu::multi_gpu_sort_config config;
  config.digit_bits = 0;
  EXPECT_THROW(gpu::multi_gpu_sorter({0}, config), gpusort::error);
}

class multi_gpu_sort_errors : public gpu_test {};

TEST_F(multi_gpu_sort_errors, WrongSliceCountAndMissingDevice) {
  gpu::multi_gpu_sorter sorter({0, 0}, {});
  const std::vector<gpu::multi_gpu_slice> one(1);
  EXPECT_THROW(static_cast<void>(sorter.sort(one)), gpusort::error);
  // The in-place calls need an in-place sorter, and an in-place sorter sorts only in place.
  const std::vector<std::uint64_t> sizes{1, 1};
  EXPECT_THROW(static_cast<void>(sorter.sort_in_place(sizes)), gpusort::error);
  gpu::multi_gpu_sort_config in_place;
  in_place.in_place = true;
  gpu::multi_gpu_sorter own({0, 0}, in_place);
  const std::vector<gpu::multi_gpu_slice> two(2);
  EXPECT_THROW(static_cast<void>(own.sort(two)), gpusort::error);
  // Slices larger than reserved would need buffers that lose what was copied in.
  own.reserve(sizes);
  const std::vector<std::uint64_t> larger{100'000, 100'000};
  EXPECT_THROW(static_cast<void>(own.sort_in_place(larger)), gpusort::error);
  try {
    gpu::multi_gpu_sorter bad({0, gpu::device_count()}, {});
    ADD_FAILURE() << "a device that is not there was accepted";
  } catch (const gpusort::error& e) {
    EXPECT_NE(std::string(e.what()).find("GPU " + std::to_string(gpu::device_count())),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gpusort::test
