// (normalized key, record index) items: extraction, gather, and exact order for long bytes keys.
#include "cpu/sort_items.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cpu/radix_sort.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"

namespace gpusort::cpu {
namespace {

constexpr std::uint64_t extract_grain = std::uint64_t{1} << 14;
constexpr std::uint64_t gather_grain = std::uint64_t{1} << 12;
/// How far ahead the gather prefetches: records are scattered, so each one is a cache miss.
constexpr std::uint64_t gather_prefetch = 32;
/// Tied runs at least this long are split by a radix sort on the next key bytes instead of a
/// comparison sort (which would reach for two random records per comparison).
constexpr std::uint64_t radix_run_min = std::uint64_t{1} << 12;

/// Key bytes [0, len) of a bytes key (len <= 8) as the high bytes of a big-endian word.
std::uint64_t big_endian_prefix(const std::byte* p, std::uint32_t len) {
  if (len >= 8) return __builtin_bswap64(detail::load_word<std::uint64_t>(p));
  std::uint64_t v = 0;
  for (std::uint32_t j = 0; j < len; ++j)
    v |= std::uint64_t(std::to_integer<unsigned>(p[j])) << (56 - 8 * j);
  return v;
}

/// Output bytes from which gather_records writes with streaming stores, and its staging size.
constexpr std::uint64_t stream_gather_min_bytes = std::uint64_t{8} << 20;
constexpr std::uint64_t gather_stage_bytes = 4096;

/// Copies `bytes` from src to dst, which agree modulo 64: the whole cache lines in between with
/// streaming stores, the partial lines at both ends with ordinary ones.
inline void stream_copy(std::byte* dst, const std::byte* src, std::uint64_t bytes) {
#if defined(__SSE2__)
  const std::uint64_t head =
      std::min<std::uint64_t>(bytes, (64 - reinterpret_cast<std::uintptr_t>(dst) % 64) % 64);
  std::memcpy(dst, src, head);
  std::uint64_t at = head;
  for (; at + 64 <= bytes; at += 64) {
    for (std::uint64_t k = 0; k < 64; k += 16) {
      const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(src + at + k));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + at + k), v);
    }
  }
  std::memcpy(dst + at, src + at, bytes - at);
#else
  std::memcpy(dst, src, bytes);
#endif
}

inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

/// Copies one record of any size with a few unaligned 16/8/4-byte moves (overlapping at the
/// end) instead of a call to memcpy with a runtime size.
inline void copy_record(std::byte* dst, const std::byte* src, std::uint32_t size) {
  if (size >= 16) {
    std::uint32_t i = 0;
    for (; i + 16 <= size; i += 16) std::memcpy(dst + i, src + i, 16);
    if (i != size) std::memcpy(dst + size - 16, src + size - 16, 16);
  } else if (size >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + size - 8, src + size - 8, 8);
  } else if (size >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + size - 4, src + size - 4, 4);
  } else {
    for (std::uint32_t i = 0; i < size; ++i) dst[i] = src[i];
  }
}

template <typename Fn>
void for_ranges(std::uint64_t count, std::uint64_t grain, Fn&& fn) {
  if (count <= grain) {
    fn(std::uint64_t{0}, count);
    return;
  }
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, count, grain),
                    [&](const tbb::blocked_range<std::uint64_t>& r) { fn(r.begin(), r.end()); });
}

template <typename Word>
void extract_numeric(const std::byte* records, std::uint64_t count, const record_format& format,
                     bool descending, std::uint64_t first_index, sort_item* items) {
  const detail::key_codec<Word> codec = detail::make_key_codec<Word>(format.type, descending);
  const std::uint32_t size = format.record_size;
  const std::byte* keys = records + format.key_offset;
  for_ranges(count, extract_grain, [&](std::uint64_t begin, std::uint64_t end) {
    for (std::uint64_t i = begin; i < end; ++i)
      items[i] = {codec.normalize(detail::load_word<Word>(keys + i * size)), first_index + i};
  });
}

/// Sorts a run of items whose keys agree on bytes [0, from) by bytes [from, key_size), stably.
class tie_resolver {
 public:
  tie_resolver(const std::byte* records, const record_format& format, bool descending,
               std::uint64_t first_index)
      : records_(records),
        record_size_(format.record_size),
        key_offset_(format.key_offset),
        key_size_(format.key_size),
        descending_(descending),
        first_index_(first_index) {}

  void resolve(sort_item* run, std::uint64_t len, std::uint32_t from) const {
    if (len < radix_run_min) comparison_sort(run, len, from);
    else radix_split(run, len, from);
  }

 private:
  [[nodiscard]] const std::byte* key_of(const sort_item& item) const {
    return records_ + (item.index - first_index_) * record_size_ + key_offset_;
  }

  void comparison_sort(sort_item* run, std::uint64_t len, std::uint32_t from) const {
    const std::uint32_t rest = key_size_ - from;
    auto less = [&](const sort_item& x, const sort_item& y) {
      const int c = std::memcmp(key_of(x) + from, key_of(y) + from, rest);
      return descending_ ? c > 0 : c < 0;
    };
    std::stable_sort(run, run + len, less);
  }

  /// Replaces the item keys by key bytes [from, from + 8), radix sorts the run by them (stable,
  /// parallel, linear even when every key is equal), settles ties on later bytes the same way,
  /// and puts the run's shared prefix back into the keys.
  void radix_split(sort_item* run, std::uint64_t len, std::uint32_t from) const {
    const std::uint64_t prefix = run[0].key;
    const std::uint32_t take = std::min<std::uint32_t>(8, key_size_ - from);
    for_ranges(len, extract_grain, [&](std::uint64_t begin, std::uint64_t end) {
      for (std::uint64_t i = begin; i < end; ++i) {
        const std::uint64_t k = big_endian_prefix(key_of(run[i]) + from, take);
        run[i].key = descending_ ? ~k : k;
      }
    });
    const auto spare = std::make_unique_for_overwrite<sort_item[]>(len);
    const std::byte* sorted = sort_records(reinterpret_cast<std::byte*>(run),
                                           reinterpret_cast<std::byte*>(spare.get()), len,
                                           sort_item_format(), false);
    if (sorted != reinterpret_cast<const std::byte*>(run))
      std::memcpy(run, sorted, len * sizeof(sort_item));
    if (from + take < key_size_) {
      std::uint64_t s = 0;
      while (s < len) {
        std::uint64_t e = s + 1;
        while (e < len && run[e].key == run[s].key) ++e;
        if (e - s >= 2) resolve(run + s, e - s, from + take);
        s = e;
      }
    }
    for (std::uint64_t i = 0; i < len; ++i) run[i].key = prefix;
  }

  const std::byte* records_;
  std::uint64_t record_size_;
  std::uint32_t key_offset_;
  std::uint32_t key_size_;
  bool descending_;
  std::uint64_t first_index_;
};

}  // namespace

record_format sort_item_format() {
  record_format format;
  format.type = key_type::u64;
  format.key_size = 8;
  format.record_size = sizeof(sort_item);
  format.key_offset = 0;
  return format;
}

void extract_items(const std::byte* records, std::uint64_t count, const record_format& format,
                   bool descending, std::uint64_t first_index, sort_item* items) {
  format.validate();
  if (format.type != key_type::bytes) {
    if (detail::has_32bit_word(format.type))
      extract_numeric<std::uint32_t>(records, count, format, descending, first_index, items);
    else
      extract_numeric<std::uint64_t>(records, count, format, descending, first_index, items);
    return;
  }
  const std::uint32_t size = format.record_size;
  const std::uint32_t take = std::min<std::uint32_t>(8, format.key_size);
  const std::uint64_t flip = descending ? ~std::uint64_t{0} : 0;
  const std::byte* keys = records + format.key_offset;
  for_ranges(count, extract_grain, [&](std::uint64_t begin, std::uint64_t end) {
    if (take == 8) {
      for (std::uint64_t i = begin; i < end; ++i)
        items[i] = {big_endian_prefix(keys + i * size, 8) ^ flip, first_index + i};
    } else {
      for (std::uint64_t i = begin; i < end; ++i)
        items[i] = {big_endian_prefix(keys + i * size, take) ^ flip, first_index + i};
    }
  });
}

void gather_records(const std::byte* records, const sort_item* items, std::uint64_t count,
                    std::uint32_t record_size, std::uint64_t first_index, std::byte* out) {
  auto source = [&](std::uint64_t i) {
    return records + (items[i].index - first_index) * record_size;
  };
  auto prefetch = [&](std::uint64_t i) {
    const std::byte* rec = source(i);
    __builtin_prefetch(rec);
    __builtin_prefetch(rec + record_size - 1);
  };
  // Large outputs are staged in L1 and written a whole cache line at a time with streaming
  // stores, which skip reading each output line before overwriting it (2 cores, 2^24 100-byte
  // records: 3 of 4 rounds faster, by up to 10%).
  const bool stream = count * record_size >= stream_gather_min_bytes &&
                      record_size <= gather_stage_bytes / 4;
  for_ranges(count, gather_grain, [&](std::uint64_t begin, std::uint64_t end) {
    for (std::uint64_t i = begin; i < std::min(end, begin + gather_prefetch); ++i) prefetch(i);
    if (!stream) {
      for (std::uint64_t i = begin; i < end; ++i) {
        if (i + gather_prefetch < end) prefetch(i + gather_prefetch);
        copy_record(out + i * record_size, source(i), record_size);
      }
      return;
    }
    alignas(64) std::byte stage[gather_stage_bytes + 64];
    const std::uint64_t per_stage = gather_stage_bytes / record_size;
    for (std::uint64_t i = begin; i < end;) {
      const std::uint64_t n = std::min(per_stage, end - i);
      std::byte* dst = out + i * record_size;
      std::byte* staged = stage + reinterpret_cast<std::uintptr_t>(dst) % 64;
      for (std::uint64_t j = 0; j < n; ++j) {
        if (i + j + gather_prefetch < end) prefetch(i + j + gather_prefetch);
        copy_record(staged + j * record_size, source(i + j), record_size);
      }
      stream_copy(dst, staged, n * record_size);
      i += n;
    }
    stream_fence();
  });
}

bool items_hold_whole_key(const record_format& format) {
  return format.type != key_type::bytes || format.key_size <= 8;
}

void resolve_prefix_ties(const std::byte* records, sort_item* items, std::uint64_t count,
                         const record_format& format, bool descending,
                         std::uint64_t first_index) {
  if (items_hold_whole_key(format) || count < 2) return;
  const tie_resolver resolver(records, format, descending, first_index);
  // Find the tied runs first (read only; each piece reports the runs that start inside it,
  // which may reach past its end), then sort them: resolving while other pieces still scan
  // would race with their reads. With random keys nearly every run has one item and this is
  // one read of the items.
  struct run {
    std::uint64_t begin;
    std::uint64_t length;
  };
  const std::uint64_t pieces = (count + extract_grain - 1) / extract_grain;
  std::vector<std::vector<run>> found(pieces);
  for_ranges(pieces, 1, [&](std::uint64_t first_piece, std::uint64_t end_piece) {
    for (std::uint64_t piece = first_piece; piece < end_piece; ++piece) {
      const std::uint64_t end = std::min(count, (piece + 1) * extract_grain);
      std::uint64_t s = piece * extract_grain;
      if (s > 0)
        while (s < end && items[s].key == items[s - 1].key) ++s;
      while (s < end) {
        std::uint64_t e = s + 1;
        while (e < count && items[e].key == items[s].key) ++e;
        if (e - s >= 2) found[piece].push_back({s, e - s});
        s = e;
      }
    }
  });
  std::vector<run> runs;
  for (const std::vector<run>& piece : found) runs.insert(runs.end(), piece.begin(), piece.end());
  for_ranges(runs.size(), 64, [&](std::uint64_t begin, std::uint64_t end) {
    for (std::uint64_t r = begin; r < end; ++r)
      resolver.resolve(items + runs[r].begin, runs[r].length, 8);
  });
}

}  // namespace gpusort::cpu
