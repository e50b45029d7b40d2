// gpusort-hrs-job-mix: a CPU model of the hybrid radix sort's bucket recursion, for choosing
// local-sort thresholds without GPU time. It sorts the keys (std::sort), splits them by 8-bit
// digits from the top as the counting passes do, sends sub-buckets at or below the local
// threshold to local sorts (tiny neighbours merged by the plan kernel's rule: by floor(G /
// merge threshold), G the tiny keys before them), and classifies each local job the way
// local_sort_kernel does: its configuration (the first that holds it), the bits its keys differ
// in, whether grouping by the top differing bits leaves a group above the rank limit (then the
// LSD passes, one per 8-bit window of differing bits) and, where not, the comparisons ranking
// takes (the sum of the groups' squares). The jobs it counts match the GPU's profile (2^28
// u64 keys AND-ed of 3 words: 60,940 and 66,034 jobs in configurations 1 and 2 on the H100,
// 61,194 and 66,300 here). A model, not a benchmark: it times nothing.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct options {
  unsigned and_words = 1;  // each key the AND of this many random words (1: uniform)
  unsigned log2n = 24;
  std::uint32_t local_threshold = 9216;
  std::uint32_t merge_threshold = 1152;
  std::uint32_t rank_group_max = 128;
  unsigned group_bits = 12;
  std::uint64_t seed = 42;
};

// Hopper's local configurations (hrs_tuning.cuh): threads and keys per thread.
struct config {
  unsigned threads;
  unsigned keys_per_thread;
};
constexpr config configs[] = {{64, 9},  {128, 9}, {192, 9}, {256, 9},  {320, 9},
                              {384, 9}, {448, 9}, {512, 9}, {384, 18}, {512, 18}};
constexpr int config_count = static_cast<int>(sizeof(configs) / sizeof(configs[0]));
constexpr unsigned radix = 256;

struct config_stats {
  std::uint64_t jobs = 0, keys = 0, crowded = 0, lsd_passes = 0, comparisons = 0;
  std::uint64_t ranked_keys = 0;
};

class model {
 public:
  model(const options& o, std::vector<std::uint64_t> keys) : o_(o), keys_(std::move(keys)) {}

  void run() { split(0, keys_.size(), 0); }
  const config_stats& stats(int c) const { return stats_[c]; }

 private:
  // The local sort's grouping bits: as many as its counters and match words hold.
  unsigned group_bits(int c) const {
    const unsigned counters = 2 * (configs[c].threads / 32) * radix - 1;
    return std::min(o_.group_bits, 31u - static_cast<unsigned>(std::countl_zero(counters)));
  }

  void local_job(std::size_t lo, std::size_t hi) {
    const std::size_t n = hi - lo;
    int c = 0;
    while (c + 1 < config_count && configs[c].threads * configs[c].keys_per_thread < n) ++c;
    config_stats& s = stats_[c];
    ++s.jobs;
    s.keys += n;
    std::uint64_t differ = 0;
    for (std::size_t i = lo; i < hi; ++i) differ |= keys_[i] ^ keys_[lo];
    if (differ == 0) return;
    const unsigned span = 64 - static_cast<unsigned>(std::countl_zero(differ));
    const unsigned bits = group_bits(c);
    const unsigned shift = span >= bits ? span - bits : 0;
    std::vector<std::uint32_t> groups(std::size_t{1} << bits);
    for (std::size_t i = lo; i < hi; ++i) ++groups[(keys_[i] >> shift) & (groups.size() - 1)];
    if (*std::max_element(groups.begin(), groups.end()) > o_.rank_group_max) {
      ++s.crowded;
      // One pass per 8-bit window from the lowest differing bit up, as the kernel's loop.
      for (std::uint64_t d = differ; d != 0;
           d &= ~(std::uint64_t{radix - 1} << std::countr_zero(d)))
        ++s.lsd_passes;
    } else {
      for (const std::uint32_t g : groups) s.comparisons += std::uint64_t{g} * g;
      s.ranked_keys += n;
    }
  }

  // Splits the bucket keys_[lo, hi) by digit `digit` (0: the top byte).
  void split(std::size_t lo, std::size_t hi, unsigned digit) {
    if (digit == 0 && hi - lo <= o_.local_threshold) return local_job(lo, hi);
    const unsigned shift = 56 - 8 * digit;
    std::size_t start[radix + 1];
    std::size_t at = lo;
    for (unsigned d = 0; d < radix; ++d) {
      start[d] = at;
      while (at < hi && ((keys_[at] >> shift) & (radix - 1)) == d) ++at;
    }
    start[radix] = hi;
    std::uint64_t tiny_before = 0;
    bool merging = false;
    std::uint64_t merge_group = 0;
    std::size_t merge_lo = 0, merge_hi = 0;
    auto close_merge = [&] {
      if (merging) local_job(merge_lo, merge_hi);
      merging = false;
    };
    for (unsigned d = 0; d < radix; ++d) {
      const std::size_t count = start[d + 1] - start[d];
      if (count == 0) continue;
      if (count < o_.merge_threshold) {
        if (!merging || tiny_before / o_.merge_threshold != merge_group) {
          close_merge();
          merging = true;
          merge_group = tiny_before / o_.merge_threshold;
          merge_lo = start[d];
        }
        merge_hi = start[d + 1];
        tiny_before += count;
      } else {
        close_merge();
        if (count <= o_.local_threshold || digit == 7) local_job(start[d], start[d + 1]);
        else split(start[d], start[d + 1], digit + 1);
      }
    }
    close_merge();
  }

  options o_;
  std::vector<std::uint64_t> keys_;
  config_stats stats_[config_count];
};

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

[[noreturn]] void usage(int status) {
  std::fputs(
      "usage: gpusort-hrs-job-mix [--and-words Q] [--log2n L] [--local-threshold N]\n"
      "                           [--merge-threshold N] [--rank-group-max N] [--group-bits B]\n"
      "                           [--seed S]\n"
      "Models the hybrid radix sort's local jobs for 2^L u64 keys, each the AND of Q random\n"
      "words (1: uniform), and prints per local configuration: jobs, keys, the share whose\n"
      "grouping pass crowds (LSD passes follow) and the comparisons per ranked key.\n",
      status == 0 ? stdout : stderr);
  std::exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") usage(0);
    if (i + 1 >= argc) usage(2);
    const std::uint64_t v = std::strtoull(argv[++i], nullptr, 0);
    if (arg == "--and-words") o.and_words = static_cast<unsigned>(v);
    else if (arg == "--log2n") o.log2n = static_cast<unsigned>(v);
    else if (arg == "--local-threshold") o.local_threshold = static_cast<std::uint32_t>(v);
    else if (arg == "--merge-threshold") o.merge_threshold = static_cast<std::uint32_t>(v);
    else if (arg == "--rank-group-max") o.rank_group_max = static_cast<std::uint32_t>(v);
    else if (arg == "--group-bits") o.group_bits = static_cast<unsigned>(v);
    else if (arg == "--seed") o.seed = v;
    else usage(2);
  }
  if (o.and_words == 0 || o.log2n > 32 || o.merge_threshold == 0 || o.group_bits < 8 ||
      o.group_bits > 12)
    usage(2);
  std::vector<std::uint64_t> keys(std::size_t{1} << o.log2n);
  std::uint64_t state = o.seed;
  for (std::uint64_t& k : keys) {
    k = ~std::uint64_t{0};
    for (unsigned w = 0; w < o.and_words; ++w) k &= splitmix(state);
  }
  std::sort(keys.begin(), keys.end());
  model m(o, std::move(keys));
  m.run();
  std::printf("2^%u u64 keys AND-ed of %u word(s), thresholds %u/%u, rank groups <= %u of %u "
              "bits\n\n| config | jobs | keys | crowded | LSD passes per crowded job | "
              "comparisons per ranked key |\n|---|---|---|---|---|---|\n",
              o.log2n, o.and_words, o.local_threshold, o.merge_threshold, o.rank_group_max,
              o.group_bits);
  for (int c = 0; c < config_count; ++c) {
    const config_stats& s = m.stats(c);
    if (s.jobs == 0) continue;
    std::printf("| %ux%u | %llu | %llu | %.1f%% | %.1f | %.1f |\n", configs[c].threads,
                configs[c].keys_per_thread, static_cast<unsigned long long>(s.jobs),
                static_cast<unsigned long long>(s.keys), 100.0 * s.crowded / s.jobs,
                s.crowded ? static_cast<double>(s.lsd_passes) / s.crowded : 0.0,
                s.ranked_keys ? static_cast<double>(s.comparisons) / s.ranked_keys : 0.0);
  }
  return 0;
}
