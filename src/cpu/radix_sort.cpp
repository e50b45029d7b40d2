// Parallel, stable radix sort of records on TBB: one wide MSD pass over memory, LSD in cache.
//
// Shape of the sort (digits are bit fields of the normalized key, which is computed on every
// read and never stored):
//  1. One read pass (per block, in parallel) finds which bits vary, from the OR and the AND of
//     all keys, and counts the highest digit.
//  2. A range larger than the cache is scattered by a digit of 8 to 12 bits, as wide as it
//     takes for the buckets to fit in the L2, from memory to memory through write-combining
//     buffers (whole cache lines, streaming stores). Buckets still too large repeat this.
//  3. Each bucket is sorted on its own, in parallel over buckets, in cache: one read counts
//     several 8-bit digits below the highest bit that varies (about log2(n) + 4 bits in all),
//     LSD passes scatter by them between two per-thread buffers on one huge page, and one
//     insertion pass from there into wherever the result must end finishes the range (few
//     records share that prefix with a neighbour). When skewed keys leave large groups with
//     an equal prefix, the insertion pass gives up early and each such group is sorted the
//     same way by the bits below.
// Every pass is a stable counting sort and insertion sort is stable, so the whole sort is
// stable. Records are moved whole; only 4-, 8-, 12- and 16-byte records take this path (others
// are sorted as sort_items).
//
// Why this shape: random 64-bit keys need 8 LSD passes, but a sort only needs as many digits
// as it takes to tell the keys apart (about log2(n) bits), and only the first pass touches
// DRAM. Measured with tools/bench/cpu_sort on 2 cores of a Sapphire Rapids VM: an 8-bit pass
// over memory, a second one for buckets above 512 KiB, then 6 LSD passes per bucket in cache
// took 6.2 s for 2^28 random u64 keys and 1.6-1.8 s for 2^26; one 12-bit pass over memory and
// MSD recursion in cache 3.4-3.6 s and 0.75-0.88 s. In-cache LSD over only the bits needed
// then replaced the MSD recursion (see cache_sort). 10-bit in-cache digits were no faster than
// 8-bit ones; 11-bit digits (two passes instead of three) and a vectorized quicksort (Highway's
// vqsort, AVX-512, tried as a yardstick) sorted the same 2^16-key buckets no faster.
#include "cpu/radix_sort.hpp"

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/host_buffer.hpp"
#include "core/parallel_copy.hpp"
#include "cpu/sort_items.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"

namespace gpusort::cpu {
namespace {

/// Sizes that pick between the strategies, in records or bytes, measured with
/// tools/bench/cpu_sort on 2 cores of a Sapphire Rapids VM (48 KiB L1d, 2 MiB L2 per core).
struct radix_tuning {
  /// Ranges of at most this many records are sorted by insertion sort.
  static constexpr std::uint64_t insertion_max = 24;
  /// Ranges of at most this many bytes are sorted in cache (they and the two cache buffers of
  /// their thread stay in the L2).
  static constexpr std::uint64_t cache_max_bytes = std::uint64_t{1} << 20;
  /// Passes over memory aim for buckets of this many bytes on average: half of cache_max_bytes,
  /// so that buckets a little above the average still count as in cache.
  static constexpr std::uint64_t bucket_target_bytes = cache_max_bytes / 2;
  /// In-cache passes use digits of this many bits: 256 counters and 256 open write positions
  /// stay in the L1.
  static constexpr unsigned cache_digit_bits = 8;
  /// In-cache LSD passes cover about log2(n) + this many bits, so that the insertion pass that
  /// finishes the range finds about one record in 2^spare with an equal prefix (16 for 4).
  static constexpr unsigned finish_spare_bits = 4;
  /// At most this many in-cache LSD passes (32 bits): ranges in cache hold at most 2^18
  /// records, so more are never wanted.
  static constexpr unsigned cache_max_passes = 4;
  /// The finishing insertion pass may move records this many times per record (plus a
  /// constant) before it gives up on keys that the LSD passes did not spread (skewed data)
  /// and sorts the groups of equal prefix on their own.
  static constexpr std::uint64_t finish_moves_per_record = 1;
  /// Passes over memory use a digit of this many bits or more, wider (up to the maximum)
  /// when that is what it takes for the buckets to fit cache_max_bytes: one pass over DRAM
  /// then leaves every bucket in cache. 12 bits is 4096 write-combining buffers of 128 bytes,
  /// 512 KiB, which still sit in the L2.
  static constexpr unsigned memory_min_bits = 8;
  static constexpr unsigned memory_max_bits = 12;
  /// Ranges of at least this many records are counted and scattered by several threads.
  static constexpr std::uint64_t parallel_min = std::uint64_t{1} << 20;
  /// Smallest block one thread counts and scatters in a parallel MSD pass.
  static constexpr std::uint64_t block_min = std::uint64_t{1} << 16;
  /// Counting passes prefetch this many bytes ahead of the record they read. They are the
  /// first to read their range: the input, or a bucket that the pass over memory wrote with
  /// streaming stores, so from DRAM, and the hardware prefetchers left those reads waiting on
  /// memory. One thread sorting 2^27 random u64 keys on the 2-core VM: 1.73-1.83 s without,
  /// 1.29-1.34 s with 2048 bytes (4096 and 8192 no better; the same prefetch in the scatter
  /// loops gained nothing). On the H200 machine's cores, whose prefetchers keep up, it is
  /// within noise (tools/bench/results/2026-11-29-h200-count-prefetch/).
  static constexpr std::uint64_t count_prefetch_bytes = 2048;
  /// MSD passes over at least this many bytes go through write-combining buffers, and write
  /// whole windows with streaming stores: their destination is not in cache, and a streaming
  /// store skips reading each line before overwriting it (about 15% faster on 2^26 keys than
  /// ordinary stores).
  static constexpr std::uint64_t buffered_min_bytes = std::uint64_t{1} << 20;
  static constexpr std::uint64_t stream_min_bytes = std::uint64_t{1} << 20;
  /// Bytes per write-combining buffer (per bucket): two cache lines (one line was slower).
  static constexpr std::uint64_t wc_bytes = 128;
  /// Buckets larger than the cache that need a buffer of their own take one from the sort's
  /// pool up to this size (4 MiB each for 16 GiB of evenly spread keys); a larger one, which
  /// only skewed keys leave, would hold that much memory until the sort ends, so it is
  /// sorted where it lies (when it may) or in a buffer freed after it.
  static constexpr std::uint64_t pooled_max_bytes = std::uint64_t{64} << 20;
};

/// Where a sorted range must end up: in the first buffer, the second, or either.
enum class place : std::uint8_t { first, second, any };

/// 64-byte aligned heap block for the write-combining buffers (too large for the stack of a
/// TBB worker).
struct aligned_free {
  void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
using aligned_bytes = std::unique_ptr<std::byte[], aligned_free>;

aligned_bytes make_aligned_bytes(std::size_t bytes) {
  return aligned_bytes(static_cast<std::byte*>(::operator new[](bytes, std::align_val_t{64})));
}

void copy_records(std::byte* dst, const std::byte* src, std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{8} << 20)) detail::parallel_copy(dst, src, bytes);
  else if (bytes != 0) std::memcpy(dst, src, bytes);
}

/// Copies W bytes (a multiple of 16) from a 16-byte aligned buffer to a 16-byte aligned
/// destination with non-temporal stores, so the output does not evict the input from cache.
template <std::size_t W>
inline void stream_line(std::byte* dst, const std::byte* src) {
#if defined(__SSE2__)
  static_assert(W % 16 == 0);
  for (std::size_t i = 0; i < W; i += 16) {
    const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), v);
  }
#else
  std::memcpy(dst, src, W);
#endif
}

inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

/// Smallest b with 2^b >= x (x >= 1).
unsigned ceil_log2(std::uint64_t x) {
  return x <= 1 ? 0 : static_cast<unsigned>(std::bit_width(x - 1));
}

/**
 * The sorter for records of R bytes whose key normalizes to a Word (u32 or u64). The key
 * offset and the key's type (signed, float, descending) are runtime values: normalization is
 * a branch-free XOR, so one instantiation serves every key type of a width. `Float` keys need
 * a sign-dependent mask; integer keys only one XOR with a constant, which takes 4 of about 12
 * instructions per record out of every counting and scattering loop (in cache, 57 against
 * 45 Mkeys/s on one thread).
 *
 * Ranges are described by `hi`: the keys of a range agree on every bit at and above bit `hi`,
 * so only bits [0, hi) are left to sort by.
 */
template <std::size_t R, typename Word, bool Float>
class radix_engine {
 public:
  static constexpr unsigned key_bits = 8 * sizeof(Word);

  radix_engine(detail::key_codec<Word> codec, std::uint32_t key_offset)
      : codec_(codec), key_offset_(key_offset) {
    GPUSORT_EXPECTS((codec.float_mask != 0) == Float, "radix_engine: codec of the wrong kind");
  }

  /// Sorts n records held in `data`; returns true when they end in `data`, false in `scratch`.
  bool sort(std::byte* data, std::byte* scratch, std::uint64_t n) const {
    return sort_range(data, scratch, n, key_bits, place::any);
  }

  /// Sorts n records held in `data` into `out` (n records); `data` is overwritten.
  void sort_into(std::byte* data, std::byte* out, std::uint64_t n) const {
    sort_range(data, out, n, key_bits, place::second);
  }

  /// Sorts n records from `src`, which is never written, into `out` (n records).
  void sort_from(const std::byte* src, std::byte* out, std::uint64_t n) const {
    if (n * R <= radix_tuning::cache_max_bytes) {
      std::memcpy(out, src, n * R);
      cache_sort(out, nullptr, n, key_bits, place::first);
      return;
    }
    msd_step(src, nullptr, out, n, key_bits, place::second);
  }

  /// Sorts n records from `src`, which is never written, into `out` through `scratch` (n
  /// records): the passes before the last go to scratch and the sort's own buffers, so that
  /// each record of `out` is written once.
  void sort_through(const std::byte* src, std::byte* scratch, std::byte* out,
                    std::uint64_t n) const {
    if (n * R <= radix_tuning::cache_max_bytes) {
      std::memcpy(scratch, src, n * R);
      cache_sort(scratch, out, n, key_bits, place::second);
      return;
    }
    msd_step(src, out, scratch, n, key_bits, place::first);
  }

 private:
  /// Reads normalized keys. Hot loops take a local copy: stores through std::byte pointers may
  /// alias any member, so the compiler would reload the masks after every record moved.
  struct key_reader {
    detail::key_codec<Word> codec;
    std::uint64_t offset;
    Word operator()(const std::byte* rec) const {
      const Word bits = detail::load_word<Word>(rec + offset);
      if constexpr (Float) return codec.normalize(bits);
      else return bits ^ codec.sign_mask ^ codec.order_mask;
    }
  };
  [[nodiscard]] key_reader reader() const { return key_reader{codec_, key_offset_}; }

  /// A digit: `bits` bits of the key starting at bit `shift`.
  struct digit_field {
    unsigned shift;
    unsigned bits;
    [[nodiscard]] unsigned operator()(Word k) const {
      return static_cast<unsigned>(k >> shift) & ((1u << bits) - 1);
    }
    [[nodiscard]] unsigned radix() const { return 1u << bits; }
  };

  /// Copies the range to where `want` asks; returns true when it ends in `a`.
  static bool settle(std::byte* a, std::byte* b, std::uint64_t n, bool in_a, place want) {
    if (want == place::first && !in_a) {
      copy_records(a, b, n * R);
      return true;
    }
    if (want == place::second && in_a) {
      copy_records(b, a, n * R);
      return false;
    }
    return in_a;
  }

  /// Sorts n records in `a` by bits [0, hi) (the higher bits are equal for all of them).
  bool sort_range(std::byte* a, std::byte* b, std::uint64_t n, unsigned hi, place want) const {
    if (n * R <= radix_tuning::cache_max_bytes) return cache_sort(a, b, n, hi, want);
    return msd_step(a, a, b, n, hi, want);
  }

  /**
   * Insertion sort in place, stable. Stops once it has moved records more than `budget` times;
   * returns how many records it placed (n when it finished): a record only ever moves past
   * larger ones, so the placed ones are a permutation of the first records.
   */
  std::uint64_t insertion_sort(std::byte* a, std::uint64_t n,
                               std::uint64_t budget = ~std::uint64_t{0}) const {
    const key_reader key = reader();
    std::uint64_t moves = 0;
    alignas(16) std::byte tmp[R];
    for (std::uint64_t i = 1; i < n; ++i) {
      const Word k = key(a + i * R);
      std::uint64_t j = i;
      if (!(k < key(a + (j - 1) * R))) continue;
      std::memcpy(tmp, a + i * R, R);
      do {
        std::memcpy(a + j * R, a + (j - 1) * R, R);
        --j;
      } while (j > 0 && k < key(a + (j - 1) * R));
      std::memcpy(a + j * R, tmp, R);
      moves += i - j;
      if (moves > budget) return i + 1;
    }
    return n;
  }

  /// Insertion sort from `src` into `into` (src is only read), stable; `budget` as above.
  std::uint64_t insertion_sort_into(const std::byte* src, std::uint64_t n, std::byte* into,
                                    std::uint64_t budget = ~std::uint64_t{0}) const {
    const key_reader key = reader();
    std::uint64_t moves = 0;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::byte* rec = src + i * R;
      const Word k = key(rec);
      std::uint64_t j = i;
      while (j > 0 && k < key(into + (j - 1) * R)) {
        std::memcpy(into + j * R, into + (j - 1) * R, R);
        --j;
      }
      std::memcpy(into + j * R, rec, R);
      moves += i - j;
      if (moves > budget) return i + 1;
    }
    return n;
  }

  /// Records between two prefetches of a counting pass: one a cache line or more often, and a
  /// power of two, so that the loop tests it with a mask (12-byte records: every 4).
  static constexpr std::uint64_t count_prefetch_step = std::bit_floor(R >= 64 ? 1 : 64 / R);

  /// Counts each digit dg[i] of n records into hist[i] (zeroed here), in one read that also
  /// takes the OR and the AND of the keys.
  template <std::size_t Digits, std::size_t Bins>
  void count_digits(const std::byte* src, std::uint64_t n,
                    const std::array<digit_field, Digits>& dg,
                    std::array<std::uint32_t, Bins>* hist, Word& any_set, Word& all_set) const {
    const key_reader key = reader();
    for (std::size_t i = 0; i < Digits; ++i) std::fill_n(hist[i].begin(), dg[i].radix(), 0u);
    Word any = 0;
    Word all = ~Word(0);
    // An integer: near the range's end the address lies past it, where no pointer may point
    // (a prefetch never faults).
    const std::uintptr_t ahead =
        reinterpret_cast<std::uintptr_t>(src) + radix_tuning::count_prefetch_bytes;
    for (std::uint64_t r = 0; r < n; ++r) {
      if (r % count_prefetch_step == 0)
        __builtin_prefetch(reinterpret_cast<const void*>(ahead + r * R));
      const Word k = key(src + r * R);
      any |= k;
      all &= k;
      for (std::size_t i = 0; i < Digits; ++i) ++hist[i][dg[i](k)];
    }
    any_set = any;
    all_set = all;
  }

  /// One stable counting pass by `dg`, src -> dst, records written straight to their place:
  /// right when both buffers are in cache. `start` holds each bucket's first index.
  template <unsigned MaxBits, typename Index>
  void scatter_direct(const std::byte* src, std::uint64_t n, digit_field dg, std::byte* dst,
                      const Index* start) const {
    const key_reader key = reader();
    std::byte* pos[std::size_t{1} << MaxBits];
    for (unsigned k = 0; k < dg.radix(); ++k) pos[k] = dst + std::uint64_t{start[k]} * R;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::byte* rec = src + i * R;
      const unsigned g = dg(key(rec));
      std::memcpy(pos[g], rec, R);
      pos[g] += R;
    }
  }

  /// Records per write-combining buffer: a power of two, and a whole number of cache lines
  /// (12-byte records: 16 records, three lines).
  static constexpr std::uint64_t wc_records =
      R == 12 ? 16 : radix_tuning::wc_bytes / R;
  static constexpr std::uint64_t wc_line_bytes = wc_records * R;

  /**
   * One stable counting pass by `dg`, src -> dst, through per-bucket buffers that are written
   * out a whole window at a time: hundreds of open write streams would otherwise thrash the
   * TLB and the L1, and a whole window can be written with streaming stores (no read for
   * ownership) when `stream` is set. Windows are aligned to dst addresses, so the first and
   * last window of each bucket may be partial: those are written with ordinary stores and only
   * cover this block's own records (neighbouring blocks write the rest of those lines).
   */
  void scatter_buffered(const std::byte* src, std::uint64_t n, digit_field dg, std::byte* dst,
                        const std::uint64_t* start, bool stream) const {
    constexpr std::uint64_t E = wc_records;
    constexpr std::uint64_t W = wc_line_bytes;
    static_assert((E & (E - 1)) == 0 && W % 64 == 0);
    // Shift s such that windows start at record indices p with (p + s) % E == 0 and those
    // records sit on 64-byte boundaries; without one, buffer anyway but store normally.
    const auto base = reinterpret_cast<std::uintptr_t>(dst);
    std::uint64_t shift = 0;
    bool aligned = false;
    for (std::uint64_t s = 0; s < E && !aligned; ++s) {
      if ((base + ((E - s) % E) * R) % 64 == 0) {
        shift = s;
        aligned = true;
      }
    }
    stream = stream && aligned;

    const unsigned radix = dg.radix();
    aligned_bytes block = make_aligned_bytes(radix * (W + 2 * sizeof(std::uint64_t)));
    std::byte* const buffers = block.get();
    auto* const pos = reinterpret_cast<std::uint64_t*>(buffers + radix * W);
    std::uint64_t* const first = pos + radix;
    for (unsigned k = 0; k < radix; ++k) pos[k] = first[k] = start[k];

    auto window_store = [&](unsigned g, std::uint64_t from, std::uint64_t count) {
      std::memcpy(dst + from * R, buffers + g * W + ((from + shift) & (E - 1)) * R, count * R);
    };

    const key_reader key = reader();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::byte* rec = src + i * R;
      const unsigned g = dg(key(rec));
      const std::uint64_t p = pos[g]++;
      const std::uint64_t slot = (p + shift) & (E - 1);
      std::byte* line = buffers + g * W;
      std::memcpy(line + slot * R, rec, R);
      if (slot == E - 1) {
        if (p + 1 - first[g] >= E) {
          if (stream) stream_line<W>(dst + (p + 1 - E) * R, line);
          else std::memcpy(dst + (p + 1 - E) * R, line, W);
        } else {
          window_store(g, first[g], p + 1 - first[g]);
        }
      }
    }
    for (unsigned g = 0; g < radix; ++g) {
      const std::uint64_t p = pos[g];
      const std::uint64_t filled = (p + shift) & (E - 1);
      const std::uint64_t count = std::min(filled, p - first[g]);
      if (count != 0) window_store(g, p - count, count);
    }
    if (stream) stream_fence();
  }

  /// The digits of an in-cache LSD sort by bits [low(), top): digit 0 is the most significant;
  /// all are cache_digit_bits wide but the least significant, which may be narrower.
  struct lsd_plan {
    unsigned top = 0;
    unsigned passes = 0;
    [[nodiscard]] unsigned low() const {
      const unsigned covered = passes * radix_tuning::cache_digit_bits;
      return top > covered ? top - covered : 0;
    }
    [[nodiscard]] digit_field digit(unsigned i) const {
      const unsigned upper = top - i * radix_tuning::cache_digit_bits;
      const unsigned shift = upper > radix_tuning::cache_digit_bits
                                 ? upper - radix_tuning::cache_digit_bits
                                 : 0;
      return {shift, upper - shift};
    }
  };

  /// LSD passes for n records whose keys vary below bit `top` (>= 1): about log2(n) +
  /// finish_spare_bits bits, so that few records share their prefix with a neighbour.
  static lsd_plan plan_lsd(std::uint64_t n, unsigned top) {
    constexpr unsigned w = radix_tuning::cache_digit_bits;
    const unsigned want = std::min(
        static_cast<unsigned>(std::bit_width(n)) + radix_tuning::finish_spare_bits, top);
    return {top, std::clamp((want + w - 1) / w, 1u, radix_tuning::cache_max_passes)};
  }

  using lsd_histograms =
      std::array<std::array<std::uint32_t, std::size_t{1} << radix_tuning::cache_digit_bits>,
                 radix_tuning::cache_max_passes>;

  /// Counts every digit of `plan` in one read of the range, with the OR and the AND of the keys.
  void count_lsd(const std::byte* src, std::uint64_t n, const lsd_plan& plan,
                 lsd_histograms& hist, Word& any_set, Word& all_set) const {
    static_assert(radix_tuning::cache_max_passes == 4);
    auto count = [&]<std::size_t Digits>() {
      std::array<digit_field, Digits> dg;
      for (unsigned i = 0; i < Digits; ++i) dg[i] = plan.digit(i);
      count_digits(src, n, dg, hist.data(), any_set, all_set);
    };
    switch (plan.passes) {
      case 1: return count.template operator()<1>();
      case 2: return count.template operator()<2>();
      case 3: return count.template operator()<3>();
      default: return count.template operator()<4>();
    }
  }

  /**
   * Sorts a range that fits in cache on one thread, from `a` into `a`, or into `b` when `want`
   * is place::second (only then is `b` used, and then `a` is only read). One read counts every
   * digit; LSD passes by 8-bit digits (least significant first) cover about log2(n) + 4 bits
   * below the highest bit that varies, between this thread's two cache buffers; one insertion
   * pass from the last of them into the destination finishes the range (about one record in
   * 16 shares its prefix with a neighbour). Returns true when the result is in `a`.
   *
   * Why LSD rather than MSD in cache: MSD recursion pays for a 256-entry histogram and a call
   * per bucket of about 256 records, as much as the records' own work; the LSD passes count
   * once and touch 256 counters per pass. The cache buffers sit on one huge page: scattering
   * into 4 KiB pages (the output mapping, or a heap block) misses the L1 TLB on many stores.
   * Measured on the 2-core Sapphire Rapids VM, one thread re-sorting one bucket of 2^16 random
   * u64 keys in the L2: 10-11.5 ns per key against 11.5-12 for the MSD recursion this
   * replaced (about 20 cycles per key: the count and three scatters take 4-6 each).
   */
  bool cache_sort(std::byte* a, std::byte* b, std::uint64_t n, unsigned hi, place want) const {
    if (n <= radix_tuning::insertion_max || hi == 0) {
      if (want == place::second) {
        insertion_sort_into(a, n, b);
        return false;
      }
      insertion_sort(a, n);
      return true;
    }
    lsd_plan plan = plan_lsd(n, hi);
    lsd_histograms hist;
    Word any_set = 0;
    Word all_set = 0;
    count_lsd(a, n, plan, hist, any_set, all_set);
    const Word varying = any_set ^ all_set;
    if (varying == 0) return settle(a, b, n, true, want);  // all keys equal: sorted
    // The keys may agree on more high bits than the caller knew: the digits start below the
    // highest bit that varies instead.
    const auto top = static_cast<unsigned>(std::bit_width(varying));
    if (top < hi) {
      plan = plan_lsd(n, top);
      count_lsd(a, n, plan, hist, any_set, all_set);
    }
    const key_reader key = reader();
    const auto [first, second] = cache_buffers();
    const std::byte* from = a;
    std::byte* to = first;
    std::byte* other = second;
    for (unsigned i = plan.passes; i-- > 0;) {
      const digit_field dg = plan.digit(i);
      std::array<std::uint32_t, std::size_t{1} << radix_tuning::cache_digit_bits>& h = hist[i];
      if (h[dg(key(from))] == n) continue;  // every record has this digit: nothing moves
      std::uint32_t running = 0;
      for (unsigned d = 0; d < dg.radix(); ++d) {
        const std::uint32_t count = h[d];
        h[d] = running;
        running += count;
      }
      scatter_direct<radix_tuning::cache_digit_bits>(from, n, dg, to, h.data());
      from = to;
      std::swap(to, other);
    }
    std::byte* const dst = want == place::second ? b : a;
    finish_lsd(from, dst, n, plan.low());
    return dst == a;
  }

  /**
   * Finishes a range that LSD passes sorted by bits [low, key_bits): one insertion pass from
   * `s` into `dst` (or in place when they are the same). When it moves records too often
   * (skewed keys left large groups that agree on every bit the passes looked at) it stops,
   * and each group is sorted on its own by the bits below `low`.
   */
  void finish_lsd(const std::byte* s, std::byte* dst, std::uint64_t n, unsigned low) const {
    const std::uint64_t budget = radix_tuning::finish_moves_per_record * n + 64;
    const std::uint64_t placed =
        s == dst ? insertion_sort(dst, n, budget) : insertion_sort_into(s, n, dst, budget);
    if (placed == n) return;
    // What the insertion pass placed is still sorted by the prefix (records only move past
    // larger ones with the same prefix), so the groups can be sorted where they are.
    if (s != dst) std::memcpy(dst + placed * R, s + placed * R, (n - placed) * R);
    sort_groups(dst, n, low);
  }

  /// Sorts each group of records that agree on bits [low, key_bits) by the bits below `low`,
  /// in place. The groups reuse this thread's cache buffers: the range is no longer in them.
  void sort_groups(std::byte* d, std::uint64_t n, unsigned low) const {
    const key_reader key = reader();
    std::uint64_t begin = 0;
    while (begin < n) {
      const Word prefix = key(d + begin * R) >> low;
      std::uint64_t end = begin + 1;
      while (end < n && (key(d + end * R) >> low) == prefix) ++end;
      if (end - begin > 1) cache_sort(d + begin * R, nullptr, end - begin, low, place::first);
      begin = end;
    }
  }

  /// Number of blocks a range is counted and scattered in.
  static std::uint64_t block_count(std::uint64_t n) {
    if (n < radix_tuning::parallel_min) return 1;
    const auto threads = static_cast<std::uint64_t>(
        std::max(1, tbb::this_task_arena::max_concurrency()));
    std::uint64_t blocks = std::min(4 * threads, n / radix_tuning::block_min);
    // Per-block counts are 32-bit.
    blocks = std::max(blocks, (n >> 31) + 1);
    return std::max<std::uint64_t>(blocks, 1);
  }

  /// Digit width for a pass over memory: wide enough for the buckets to fit in cache.
  static unsigned memory_bits(std::uint64_t n, unsigned hi) {
    const std::uint64_t buckets =
        (n * R + radix_tuning::bucket_target_bytes - 1) / radix_tuning::bucket_target_bytes;
    const unsigned want = std::clamp(ceil_log2(buckets), radix_tuning::memory_min_bits,
                                     radix_tuning::memory_max_bits);
    return std::min(want, hi);
  }

  /// This thread's two buffers of cache_max_bytes for in-cache passes, on one huge page.
  std::pair<std::byte*, std::byte*> cache_buffers() const {
    host_buffer& buffers = cache_buffers_.local();
    if (buffers.data() == nullptr) buffers = host_buffer(2 * radix_tuning::cache_max_bytes);
    return {buffers.data(), buffers.data() + radix_tuning::cache_max_bytes};
  }

  /**
   * Scatters the range a -> b by a digit just below the highest bit that varies (bits below
   * `hi`), then sorts each bucket by the bits below it (in parallel over buckets).
   * `src` is the range; `a` is src when the sort may write there, null when it is read-only
   * (then `want` must be place::second, and buckets too large for the cache pair with a
   * buffer of their own instead of their place in a), or another buffer that only receives
   * the result (`want` place::first): then each record of `a` is written once, but for
   * buckets above radix_tuning::pooled_max_bytes.
   */
  bool msd_step(const std::byte* src, std::byte* a, std::byte* b, std::uint64_t n, unsigned hi,
                place want) const {
    GPUSORT_EXPECTS(a != nullptr || want == place::second,
                    "radix_engine: a read-only range must be sorted into the other buffer");
    const std::uint64_t blocks = block_count(n);
    const std::uint64_t per_block = (n + blocks - 1) / blocks;
    auto block_begin = [&](std::uint64_t blk) { return std::min(n, blk * per_block); };

    // Which bits vary comes from the OR and AND of all keys (a bit that differs between two
    // keys is set in one and clear in the other); only the digit scattered by needs a
    // histogram, guessed to sit just below `hi` and counted again (with the same OR and AND)
    // when the keys agree on more.
    struct block_stats {
      std::array<std::uint32_t, std::size_t{1} << radix_tuning::memory_max_bits> hist;
      Word any_set = 0;
      Word all_set = 0;
    };
    std::vector<block_stats> stats(blocks);
    auto count_all = [&](digit_field dg) {
      auto count_block = [&](std::uint64_t blk) {
        const std::uint64_t begin = block_begin(blk);
        block_stats& st = stats[blk];
        count_digits(src + begin * R, block_begin(blk + 1) - begin, std::array{dg}, &st.hist,
                     st.any_set, st.all_set);
      };
      if (blocks == 1) count_block(0);
      else tbb::parallel_for(std::uint64_t{0}, blocks, count_block);
    };
    digit_field dg{hi - memory_bits(n, hi), memory_bits(n, hi)};
    count_all(dg);
    Word any_set = 0;
    Word all_set = ~Word(0);
    for (const block_stats& st : stats) {
      any_set |= st.any_set;
      all_set &= st.all_set;
    }
    const Word varying = any_set ^ all_set;
    if (varying == 0) {  // all keys equal: already sorted
      if (want == place::second) {
        copy_records(b, src, n * R);
        return false;
      }
      if (a != src) copy_records(a, src, n * R);
      return true;
    }
    const auto top = static_cast<unsigned>(std::bit_width(varying));
    if (top < hi) {
      const digit_field better{top - memory_bits(n, top), memory_bits(n, top)};
      if (better.shift != dg.shift || better.bits != dg.bits) {
        dg = better;
        count_all(dg);
      }
    }
    const unsigned radix = dg.radix();

    // Bucket-major, block-minor offsets keep equal digits in input order (stability).
    std::vector<std::uint64_t> start(blocks * radix);
    std::vector<std::uint64_t> bucket_begin(radix + 1);
    std::uint64_t running = 0;
    for (unsigned k = 0; k < radix; ++k) {
      bucket_begin[k] = running;
      for (std::uint64_t blk = 0; blk < blocks; ++blk) {
        start[blk * radix + k] = running;
        running += stats[blk].hist[k];
      }
    }
    bucket_begin[radix] = running;
    stats = {};

    const bool stream = n * R >= radix_tuning::stream_min_bytes;
    auto scatter_block = [&](std::uint64_t blk) {
      const std::uint64_t begin = block_begin(blk);
      const std::uint64_t count = block_begin(blk + 1) - begin;
      if (n * R < radix_tuning::buffered_min_bytes)
        scatter_direct<radix_tuning::memory_max_bits>(src + begin * R, count, dg, b,
                                                      start.data() + blk * radix);
      else
        scatter_buffered(src + begin * R, count, dg, b, start.data() + blk * radix, stream);
    };
    if (blocks == 1) scatter_block(0);
    else tbb::parallel_for(std::uint64_t{0}, blocks, scatter_block);

    // The records are in b now. Each bucket goes on from b; the result stays there unless the
    // caller wants it in a. A bucket that fits in cache goes through this thread's cache
    // buffers and back into its place in b.
    const bool to_a = want == place::first;
    auto sort_bucket = [&](unsigned k) {
      const std::uint64_t count = bucket_begin[k + 1] - bucket_begin[k];
      if (count == 0) return;
      const std::uint64_t off = bucket_begin[k] * R;
      const bool in_cache = count * R <= radix_tuning::cache_max_bytes;
      const bool pooled = count * R <= radix_tuning::pooled_max_bytes;
      if (to_a && in_cache) {
        cache_sort(b + off, a + off, count, dg.shift, place::second);
      } else if (to_a && pooled) {
        // Through a buffer of the pool into a, so that a is written once: sorting into a and
        // again within it writes each of its pages twice.
        pooled_buffer own(bucket_buffers_, count * R);
        msd_step(b + off, a + off, own.data(), count, dg.shift, place::first);
      } else if (to_a) {
        sort_range(b + off, a + off, count, dg.shift, place::second);
      } else if (in_cache) {
        cache_sort(b + off, nullptr, count, dg.shift, place::first);
      } else if (a != nullptr) {
        sort_range(b + off, a + off, count, dg.shift, place::first);
      } else if (pooled) {
        pooled_buffer own(bucket_buffers_, count * R);
        sort_range(b + off, own.data(), count, dg.shift, place::first);
      } else {
        sort_range(b + off, host_buffer(count * R).data(), count, dg.shift, place::first);
      }
    };
    tbb::parallel_for(tbb::blocked_range<unsigned>(0, radix, 1),
                      [&](const tbb::blocked_range<unsigned>& r) {
                        for (unsigned k = r.begin(); k != r.end(); ++k) sort_bucket(k);
                      });
    return to_a;
  }

  /// Buffers of buckets larger than the cache, kept for the next such bucket of the sort:
  /// taken and given back per bucket, not per thread, since a thread that waits in a nested
  /// parallel loop may start another bucket meanwhile. A fresh mapping per bucket paid its
  /// page faults and zeroing again, 4096 times for 16 GiB.
  class buffer_pool {
   public:
    host_buffer take(std::size_t bytes) {
      {
        std::lock_guard lock(mutex_);
        const auto fits = std::find_if(free_.begin(), free_.end(),
                                       [&](const host_buffer& b) { return b.size() >= bytes; });
        if (fits != free_.end()) {
          host_buffer b = std::move(*fits);
          free_.erase(fits);
          return b;
        }
      }
      // An eighth more, in whole huge pages, so that the next bucket, a little larger, fits.
      constexpr std::size_t huge = std::size_t{2} << 20;
      return host_buffer((bytes + bytes / 8 + huge - 1) / huge * huge);
    }
    void give_back(host_buffer b) noexcept {
      try {
        std::lock_guard lock(mutex_);
        free_.push_back(std::move(b));
      } catch (...) {  // no room to keep it: it is freed instead
      }
    }

   private:
    std::mutex mutex_;
    std::vector<host_buffer> free_;
  };

  /// A buffer of the pool for one bucket's sort.
  class pooled_buffer {
   public:
    pooled_buffer(buffer_pool& pool, std::size_t bytes) : pool_(pool), b_(pool.take(bytes)) {}
    ~pooled_buffer() { pool_.give_back(std::move(b_)); }
    pooled_buffer(const pooled_buffer&) = delete;
    pooled_buffer& operator=(const pooled_buffer&) = delete;
    [[nodiscard]] std::byte* data() { return b_.data(); }

   private:
    buffer_pool& pool_;
    host_buffer b_;
  };

  detail::key_codec<Word> codec_;
  std::uint32_t key_offset_;
  mutable tbb::enumerable_thread_specific<host_buffer> cache_buffers_;
  mutable buffer_pool bucket_buffers_;
};

/// Calls fn(engine) with the engine for R-byte records, integer or float keys.
template <std::size_t R, typename Word, typename Fn>
void with_engine_for(const record_format& format, bool descending, Fn&& fn) {
  const detail::key_codec<Word> codec = detail::make_key_codec<Word>(format.type, descending);
  if (format.type == key_type::f32 || format.type == key_type::f64)
    fn(radix_engine<R, Word, true>(codec, format.key_offset));
  else
    fn(radix_engine<R, Word, false>(codec, format.key_offset));
}

/// Calls fn(engine) with the engine for the record size and key width of a format that
/// sorts_records_directly.
template <typename Fn>
void with_engine(const record_format& format, bool descending, Fn&& fn) {
  const bool narrow = detail::has_32bit_word(format.type);
  switch (format.record_size) {
    case 4:
      return with_engine_for<4, std::uint32_t>(format, descending, fn);
    case 8:
      return narrow ? with_engine_for<8, std::uint32_t>(format, descending, fn)
                    : with_engine_for<8, std::uint64_t>(format, descending, fn);
    case 12:
      return narrow ? with_engine_for<12, std::uint32_t>(format, descending, fn)
                    : with_engine_for<12, std::uint64_t>(format, descending, fn);
    case 16:
      return narrow ? with_engine_for<16, std::uint32_t>(format, descending, fn)
                    : with_engine_for<16, std::uint64_t>(format, descending, fn);
    default:
      break;
  }
  throw_error("sort_records: no radix path for " + describe(format));
}

/// Throws unless [a, a + a_bytes) and [b, b + b_bytes) are disjoint.
void expect_disjoint(const std::byte* a, std::uint64_t a_bytes, const std::byte* b,
                     std::uint64_t b_bytes, const std::string& what) {
  const auto x = reinterpret_cast<std::uintptr_t>(a);
  const auto y = reinterpret_cast<std::uintptr_t>(b);
  GPUSORT_EXPECTS(x + a_bytes <= y || y + b_bytes <= x, what);
}

/// True when the record moves whole through the radix passes (layouts (a) and (b)).
bool sorts_records_directly(const record_format& format) {
  if (format.type == key_type::bytes) return false;
  const std::uint32_t r = format.record_size;
  return r == 4 || r == 8 || r == 12 || r == 16;
}

/// Where the items live inside the scratch buffer: after the gathered records, 64-aligned.
std::uint64_t items_offset(const std::byte* scratch, std::uint64_t count,
                           std::uint32_t record_size) {
  const auto records_end = reinterpret_cast<std::uintptr_t>(scratch) + count * record_size;
  const std::uintptr_t aligned = (records_end + 63) & ~std::uintptr_t{63};
  return aligned - reinterpret_cast<std::uintptr_t>(scratch);
}

/// Wide records, bytes:N keys: sort (key, index) items, settle prefix ties, gather records.
std::byte* sort_through_items(const std::byte* data, std::byte* scratch, std::uint64_t count,
                              const record_format& format, bool descending) {
  auto* items = reinterpret_cast<sort_item*>(scratch + items_offset(scratch, count,
                                                                    format.record_size));
  sort_item* spare = items + count;
  extract_items(data, count, format, descending, 0, items);
  const radix_engine<16, std::uint64_t, false> engine(
      detail::make_key_codec<std::uint64_t>(key_type::u64, false), 0);
  sort_item* sorted = engine.sort(reinterpret_cast<std::byte*>(items),
                                  reinterpret_cast<std::byte*>(spare), count)
                          ? items
                          : spare;
  resolve_prefix_ties(data, sorted, count, format, descending, 0);
  gather_records(data, sorted, count, format.record_size, 0, scratch);
  return scratch;
}

}  // namespace

std::uint64_t sort_scratch_bytes(std::uint64_t count, const record_format& format) {
  const std::uint64_t records = count * format.record_size;
  if (sorts_records_directly(format)) return records;
  // Records, up to 63 bytes of alignment padding, then items and their spare buffer.
  return records + 64 + 2 * count * sizeof(sort_item);
}

std::uint64_t sort_into_scratch_bytes(std::uint64_t count, const record_format& format) {
  return sorts_records_directly(format) ? 0 : sort_scratch_bytes(count, format);
}

std::byte* sort_records(std::byte* data, std::byte* scratch, std::uint64_t count,
                        const record_format& format, bool descending) {
  format.validate();
  if (count <= 1) return data;
  GPUSORT_EXPECTS(data != nullptr && scratch != nullptr, "sort_records: null buffer");
  expect_disjoint(data, count * format.record_size, scratch, sort_scratch_bytes(count, format),
                  "sort_records: the scratch buffer overlaps the records");
  if (!sorts_records_directly(format))
    return sort_through_items(data, scratch, count, format, descending);
  std::byte* sorted = nullptr;
  with_engine(format, descending, [&](const auto& engine) {
    sorted = engine.sort(data, scratch, count) ? data : scratch;
  });
  return sorted;
}

namespace {

/// What sort_records_into and sort_records_from share: checks, and the paths that leave the
/// records where they are. `sort_direct` sorts records that move whole.
template <typename SortDirect>
void sort_to_output(const std::byte* data, std::byte* scratch, std::byte* out,
                    std::uint64_t count, const record_format& format, bool descending,
                    const char* what, SortDirect&& sort_direct) {
  format.validate();
  const std::uint64_t bytes = count * format.record_size;
  if (count == 0) return;
  GPUSORT_EXPECTS(data != nullptr && out != nullptr, std::string(what) + ": null buffer");
  expect_disjoint(data, bytes, out, bytes,
                  (std::string(what) + ": the output overlaps the records"));
  if (count == 1) {
    std::memcpy(out, data, bytes);
    return;
  }
  if (sorts_records_directly(format)) {
    with_engine(format, descending, sort_direct);
    return;
  }
  GPUSORT_EXPECTS(scratch != nullptr, std::string(what) + ": null scratch buffer");
  expect_disjoint(data, bytes, scratch, sort_scratch_bytes(count, format),
                  (std::string(what) + ": the scratch buffer overlaps the records"));
  expect_disjoint(out, bytes, scratch, sort_scratch_bytes(count, format),
                  (std::string(what) + ": the scratch buffer overlaps the output"));
  copy_records(out, sort_through_items(data, scratch, count, format, descending), bytes);
}

}  // namespace

void sort_records_into(std::byte* data, std::byte* scratch, std::byte* out, std::uint64_t count,
                       const record_format& format, bool descending) {
  sort_to_output(data, scratch, out, count, format, descending, "sort_records_into",
                 [&](const auto& engine) { engine.sort_into(data, out, count); });
}

void sort_records_from(const std::byte* src, std::byte* scratch, std::byte* out,
                       std::uint64_t count, const record_format& format, bool descending) {
  sort_to_output(src, scratch, out, count, format, descending, "sort_records_from",
                 [&](const auto& engine) { engine.sort_from(src, out, count); });
}

void sort_records_through(const std::byte* src, std::byte* scratch, std::byte* out,
                          std::uint64_t count, const record_format& format, bool descending) {
  if (sorts_records_directly(format) && count > 1) {
    GPUSORT_EXPECTS(scratch != nullptr, "sort_records_through: null scratch buffer");
    expect_disjoint(scratch, count * format.record_size, src, count * format.record_size,
                    "sort_records_through: the scratch buffer overlaps the records");
    expect_disjoint(scratch, count * format.record_size, out, count * format.record_size,
                    "sort_records_through: the scratch buffer overlaps the output");
  }
  sort_to_output(src, scratch, out, count, format, descending, "sort_records_through",
                 [&](const auto& engine) { engine.sort_through(src, scratch, out, count); });
}

}  // namespace gpusort::cpu
