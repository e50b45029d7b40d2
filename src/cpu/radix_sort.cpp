// Parallel, stable radix sort of records on TBB: one MSD pass over memory, LSD passes in cache.
//
// Shape of the sort (8-bit digits of the normalized key, which is computed on every read and
// never stored):
//  1. One read pass (per block, in parallel) finds which digits vary, from the OR and the AND
//     of all keys, and counts the highest digit.
//  2. The records are scattered by the highest varying digit from memory to memory through
//     write-combining buffers (whole cache lines, streaming stores).
//  3. Each bucket is sorted on its own, in parallel over buckets: buckets that fit in the L2
//     are finished by LSD passes on the digits below (one read up front finds the varying
//     digits and counts the first; each pass counts the next while it moves the records;
//     constant digits are skipped); larger buckets repeat steps 1-2 on the next digit first.
// Every pass is a stable counting sort, so the whole sort is stable. Records are moved whole;
// only 4-, 8-, 12- and 16-byte records take this path (others are sorted as sort_items).
//
// Why not plain LSD: random 64-bit keys need all 8 passes either way, but here only the first
// two passes touch DRAM and the other six run on buckets that sit in L1/L2. Measured on 2
// cores (2^26 random u64 keys), a parallel LSD sort built from the same counting and
// write-combining scatter took 1.35-1.6 s against 0.94-1.0 s for this shape; 2^25 16-byte
// records, 0.92-1.1 s against 0.73-0.78 s.
#include "cpu/radix_sort.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/parallel_copy.hpp"
#include "cpu/sort_items.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"

namespace gpusort::cpu {
namespace {

constexpr unsigned radix_bits = 8;
constexpr unsigned radix = 1u << radix_bits;

/// Sizes that pick between the strategies, in records or bytes, measured with
/// tools/bench/cpu_sort on 2 cores of a Sapphire Rapids VM (48 KiB L1d, 2 MiB L2 per core).
struct radix_tuning {
  /// Ranges of at most this many records are sorted by insertion sort.
  static constexpr std::uint64_t insertion_max = 24;
  /// Ranges of at most this many bytes are finished by LSD passes (both buffers stay in L2;
  /// an LSD pass over 2 MiB buffers took three times as long per record as over 512 KiB).
  static constexpr std::uint64_t lsd_max_bytes = std::uint64_t{512} << 10;
  /// Ranges of at least this many records are counted and scattered by several threads.
  static constexpr std::uint64_t parallel_min = std::uint64_t{1} << 20;
  /// Smallest block one thread counts and scatters in a parallel MSD pass.
  static constexpr std::uint64_t block_min = std::uint64_t{1} << 16;
  /// MSD passes over at least this many bytes go through write-combining buffers, and write
  /// whole windows with streaming stores: their destination is not in cache, and a streaming
  /// store skips reading each line before overwriting it (about 15% faster on 2^26 keys than
  /// ordinary stores).
  static constexpr std::uint64_t buffered_min_bytes = std::uint64_t{1} << 20;
  static constexpr std::uint64_t stream_min_bytes = std::uint64_t{1} << 20;
  /// Bytes per write-combining buffer (per bucket): two cache lines (one line was slower).
  static constexpr std::uint64_t wc_bytes = 128;
};

/// Where a sorted range must end up: in the first buffer, the second, or either.
enum class place : std::uint8_t { first, second, any };

/// 64-byte aligned heap block for the write-combining buffers (too large for the stack of a
/// TBB worker when several levels nest).
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

/**
 * The sorter for records of R bytes whose key normalizes to a Word (u32 or u64). The key
 * offset and the key's type (signed, float, descending) are runtime values: normalization is
 * a branch-free XOR, so one instantiation serves every key type of a width.
 */
template <std::size_t R, typename Word>
class radix_engine {
 public:
  static constexpr unsigned digits = sizeof(Word);

  radix_engine(detail::key_codec<Word> codec, std::uint32_t key_offset)
      : codec_(codec), key_offset_(key_offset) {}

  /// Sorts n records held in `data`; returns true when they end in `data`, false in `scratch`.
  bool sort(std::byte* data, std::byte* scratch, std::uint64_t n) const {
    return sort_range(data, scratch, n, digits - 1, place::any);
  }

 private:
  /// Reads normalized keys. Hot loops take a local copy: stores through std::byte pointers may
  /// alias any member, so the compiler would reload the masks after every record moved.
  struct key_reader {
    detail::key_codec<Word> codec;
    std::uint64_t offset;
    Word operator()(const std::byte* rec) const {
      return codec.normalize(detail::load_word<Word>(rec + offset));
    }
  };
  [[nodiscard]] key_reader reader() const { return key_reader{codec_, key_offset_}; }
  [[nodiscard]] Word key(const std::byte* rec) const { return reader()(rec); }
  static unsigned digit(Word k, unsigned d) {
    return static_cast<unsigned>(k >> (radix_bits * d)) & (radix - 1);
  }

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

  /// Sorts n records in `a` by digits 0..top (the higher digits are equal for all of them).
  bool sort_range(std::byte* a, std::byte* b, std::uint64_t n, unsigned top, place want) const {
    if (n <= radix_tuning::insertion_max) {
      insertion_sort(a, n);
      return settle(a, b, n, true, want);
    }
    if (n * R <= radix_tuning::lsd_max_bytes) return lsd_sort(a, b, n, top, want);
    return msd_step(a, b, n, top, want);
  }

  void insertion_sort(std::byte* a, std::uint64_t n) const {
    const key_reader key = reader();
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
    }
  }

  /// One digit's histogram of a block, and the OR and AND of its keys.
  struct digit_stats {
    std::array<std::uint32_t, radix> hist;
    Word any_set;
    Word all_set;
  };

  void count_one_digit(const std::byte* src, std::uint64_t n, unsigned d, bool bits,
                       digit_stats& st) const {
    const key_reader key = reader();
    st.hist.fill(0);
    if (!bits) {
      for (std::uint64_t i = 0; i < n; ++i) ++st.hist[digit(key(src + i * R), d)];
      return;
    }
    Word any_set = 0;
    Word all_set = ~Word(0);
    for (std::uint64_t i = 0; i < n; ++i) {
      const Word k = key(src + i * R);
      any_set |= k;
      all_set &= k;
      ++st.hist[digit(k, d)];
    }
    st.any_set = any_set;
    st.all_set = all_set;
  }

  /// One stable counting pass by digit d, src -> dst, records written straight to their
  /// place: right when both buffers are in cache. `start` holds each bucket's first index.
  void scatter_direct(const std::byte* src, std::uint64_t n, unsigned d, std::byte* dst,
                      const std::uint64_t* start) const {
    const key_reader key = reader();
    std::byte* pos[radix];
    for (unsigned k = 0; k < radix; ++k) pos[k] = dst + start[k] * R;
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::byte* rec = src + i * R;
      const unsigned g = digit(key(rec), d);
      std::memcpy(pos[g], rec, R);
      pos[g] += R;
    }
  }

  /// scatter_direct that also counts digit `next` of every record into `next_hist`.
  void scatter_counting(const std::byte* src, std::uint64_t n, unsigned d, std::byte* dst,
                        const std::uint64_t* start, unsigned next,
                        std::array<std::uint32_t, radix>& next_hist) const {
    const key_reader key = reader();
    std::byte* pos[radix];
    for (unsigned k = 0; k < radix; ++k) pos[k] = dst + start[k] * R;
    next_hist.fill(0);
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::byte* rec = src + i * R;
      const Word k = key(rec);
      const unsigned g = digit(k, d);
      ++next_hist[digit(k, next)];
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
   * One stable counting pass by digit d, src -> dst, through per-bucket buffers that are
   * written out a whole window at a time: 256 open write streams would otherwise thrash the
   * TLB and the L1, and a whole window can be written with streaming stores (no read for
   * ownership) when `stream` is set. Windows are aligned to dst addresses, so the first and
   * last window of each bucket may be partial: those are written with ordinary stores and only
   * cover this block's own records (neighbouring blocks write the rest of those lines).
   */
  void scatter_buffered(const std::byte* src, std::uint64_t n, unsigned d, std::byte* dst,
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

    aligned_bytes buffers = make_aligned_bytes(radix * W);
    std::uint64_t pos[radix];
    std::uint64_t first[radix];
    for (unsigned k = 0; k < radix; ++k) pos[k] = first[k] = start[k];

    auto window_store = [&](unsigned g, std::uint64_t from, std::uint64_t count) {
      std::memcpy(dst + from * R, buffers.get() + g * W + ((from + shift) & (E - 1)) * R,
                  count * R);
    };

    const key_reader key = reader();
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::byte* rec = src + i * R;
      const unsigned g = digit(key(rec), d);
      const std::uint64_t p = pos[g]++;
      const std::uint64_t slot = (p + shift) & (E - 1);
      std::byte* line = buffers.get() + g * W;
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

  /// LSD passes over digits 0..top of a range that fits in cache, skipping constant digits.
  bool lsd_sort(std::byte* a, std::byte* b, std::uint64_t n, unsigned top, place want) const {
    // One read finds the varying digits (OR and AND of the keys) and counts digit 0; every
    // pass then counts the digit of the pass after it while it moves the records.
    digit_stats st;
    count_one_digit(a, n, 0, true, st);
    const Word varying = st.any_set ^ st.all_set;
    unsigned order[digits];
    unsigned passes = 0;
    for (unsigned d = 0; d <= top; ++d)
      if (digit(varying, d) != 0) order[passes++] = d;
    if (passes == 0) return settle(a, b, n, true, want);
    if (order[0] != 0) count_one_digit(a, n, order[0], false, st);
    std::array<std::uint32_t, radix> hist = st.hist;
    std::byte* src = a;
    std::byte* dst = b;
    std::uint64_t start[radix];
    for (unsigned p = 0; p < passes; ++p) {
      std::uint64_t running = 0;
      for (unsigned k = 0; k < radix; ++k) {
        start[k] = running;
        running += hist[k];
      }
      if (p + 1 < passes) scatter_counting(src, n, order[p], dst, start, order[p + 1], hist);
      else scatter_direct(src, n, order[p], dst, start);
      std::swap(src, dst);
    }
    return settle(a, b, n, passes % 2 == 0, want);
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

  /**
   * Finds the highest digit (at most `top`) that varies, scatters the range a -> b by it, then
   * sorts each bucket by the digits below it (in parallel over buckets).
   */
  bool msd_step(std::byte* a, std::byte* b, std::uint64_t n, unsigned top, place want) const {
    const std::uint64_t blocks = block_count(n);
    const std::uint64_t per_block = (n + blocks - 1) / blocks;
    auto block_begin = [&](std::uint64_t blk) { return std::min(n, blk * per_block); };

    // Which digits vary comes from the OR and AND of all keys (a bit that differs between
    // two keys is set in one and clear in the other); only the digit scattered by needs a
    // histogram, guessed to be `top` and counted again in the rare case it is constant.
    std::vector<digit_stats> stats(blocks);
    auto count_block = [&](std::uint64_t blk, unsigned d, bool bits) {
      const std::uint64_t begin = block_begin(blk);
      count_one_digit(a + begin * R, block_begin(blk + 1) - begin, d, bits, stats[blk]);
    };
    auto count_all = [&](unsigned d, bool bits) {
      if (blocks == 1) count_block(0, d, bits);
      else
        tbb::parallel_for(std::uint64_t{0}, blocks,
                          [&](std::uint64_t blk) { count_block(blk, d, bits); });
    };
    count_all(top, true);
    Word any_set = 0;
    Word all_set = ~Word(0);
    for (const digit_stats& st : stats) {
      any_set |= st.any_set;
      all_set &= st.all_set;
    }
    const Word varying = any_set ^ all_set;
    int msd = -1;
    unsigned varying_below = 0;
    for (int d = static_cast<int>(top); d >= 0; --d) {
      if (digit(varying, static_cast<unsigned>(d)) == 0) continue;
      if (msd < 0) msd = d;
      else ++varying_below;
    }
    if (msd < 0) return settle(a, b, n, true, want);  // all keys equal: already sorted
    const auto md = static_cast<unsigned>(msd);
    if (md != top) count_all(md, false);
    std::array<std::uint64_t, radix> total{};

    // Bucket-major, block-minor offsets keep equal digits in input order (stability).
    std::vector<std::array<std::uint64_t, radix>> start(blocks);
    std::array<std::uint64_t, radix> bucket_begin{};
    std::uint64_t running = 0;
    for (unsigned k = 0; k < radix; ++k) {
      bucket_begin[k] = running;
      for (std::uint64_t blk = 0; blk < blocks; ++blk) {
        start[blk][k] = running;
        running += stats[blk].hist[k];
      }
      total[k] = running - bucket_begin[k];
    }

    const bool stream = n * R >= radix_tuning::stream_min_bytes;
    auto scatter_block = [&](std::uint64_t blk) {
      const std::uint64_t begin = block_begin(blk);
      const std::uint64_t count = block_begin(blk + 1) - begin;
      if (n * R < radix_tuning::buffered_min_bytes)
        scatter_direct(a + begin * R, count, md, b, start[blk].data());
      else
        scatter_buffered(a + begin * R, count, md, b, start[blk].data(), stream);
    };
    if (blocks == 1) scatter_block(0);
    else tbb::parallel_for(std::uint64_t{0}, blocks, scatter_block);

    // The records are in b now. Each bucket goes on from b; when the caller does not mind
    // where the result lands, aim for where an even or odd count of further passes ends.
    if (md == 0) return settle(a, b, n, false, want);
    place sub_want = place::first;
    bool in_a = false;
    if (want == place::any) {
      sub_want = varying_below % 2 == 0 ? place::first : place::second;
      in_a = varying_below % 2 != 0;
    } else {
      sub_want = want == place::first ? place::second : place::first;
      in_a = want == place::first;
    }
    auto sort_bucket = [&](unsigned k) {
      if (total[k] == 0) return;
      const std::uint64_t off = bucket_begin[k] * R;
      sort_range(b + off, a + off, total[k], md - 1, sub_want);
    };
    tbb::parallel_for(tbb::blocked_range<unsigned>(0, radix, 1),
                      [&](const tbb::blocked_range<unsigned>& r) {
                        for (unsigned k = r.begin(); k != r.end(); ++k) sort_bucket(k);
                      });
    return in_a;
  }

  detail::key_codec<Word> codec_;
  std::uint32_t key_offset_;
};

template <std::size_t R, typename Word>
std::byte* sort_with(std::byte* data, std::byte* scratch, std::uint64_t count,
                     const record_format& format, bool descending) {
  const radix_engine<R, Word> engine(detail::make_key_codec<Word>(format.type, descending),
                                     format.key_offset);
  return engine.sort(data, scratch, count) ? data : scratch;
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
std::byte* sort_through_items(std::byte* data, std::byte* scratch, std::uint64_t count,
                              const record_format& format, bool descending) {
  auto* items = reinterpret_cast<sort_item*>(scratch + items_offset(scratch, count,
                                                                    format.record_size));
  sort_item* spare = items + count;
  extract_items(data, count, format, descending, 0, items);
  const radix_engine<16, std::uint64_t> engine(
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

std::byte* sort_records(std::byte* data, std::byte* scratch, std::uint64_t count,
                        const record_format& format, bool descending) {
  format.validate();
  if (count <= 1) return data;
  GPUSORT_EXPECTS(data != nullptr && scratch != nullptr, "sort_records: null buffer");
  {
    const auto d = reinterpret_cast<std::uintptr_t>(data);
    const auto s = reinterpret_cast<std::uintptr_t>(scratch);
    GPUSORT_EXPECTS(d + count * format.record_size <= s ||
                        s + sort_scratch_bytes(count, format) <= d,
                    "sort_records: the scratch buffer overlaps the records");
  }
  if (!sorts_records_directly(format))
    return sort_through_items(data, scratch, count, format, descending);

  const bool narrow = detail::has_32bit_word(format.type);
  switch (format.record_size) {
    case 4:
      return sort_with<4, std::uint32_t>(data, scratch, count, format, descending);
    case 8:
      return narrow ? sort_with<8, std::uint32_t>(data, scratch, count, format, descending)
                    : sort_with<8, std::uint64_t>(data, scratch, count, format, descending);
    case 12:
      return narrow ? sort_with<12, std::uint32_t>(data, scratch, count, format, descending)
                    : sort_with<12, std::uint64_t>(data, scratch, count, format, descending);
    case 16:
      return narrow ? sort_with<16, std::uint32_t>(data, scratch, count, format, descending)
                    : sort_with<16, std::uint64_t>(data, scratch, count, format, descending);
    default:
      break;
  }
  throw_error("sort_records: no radix path for " + describe(format));
}

}  // namespace gpusort::cpu
