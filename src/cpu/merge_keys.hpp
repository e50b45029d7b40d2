// Key policies of the multiway merge: how a record's key is loaded and how (key, run) pairs order,
// so that selection and merging share one definition of the stable merge order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gpusort/detail/key_codec.hpp"
#include "gpusort/record_format.hpp"

namespace gpusort::cpu::detail {

/// Run numbers of the loser tree's exhausted runs have this bit set, which orders their
/// sentinels after every record, whatever its key.
inline constexpr std::uint32_t exhausted_run = std::uint32_t{1} << 31;

/// The loser tree's view of a record: its key (as the key policy holds it) and its run.
template <typename Key>
struct tree_entry_of {
  Key key;
  std::uint32_t run;
};

/// Swaps a and b when c holds, without a branch: in a merge c is a coin flip on random keys, and
/// compilers turn even `c ? a : b` into a jump.
template <typename T>
  requires std::is_unsigned_v<T>
inline void swap_if(bool c, T& a, T& b) {
  const T diff = (a ^ b) & (T(0) - static_cast<T>(c));
  a ^= diff;
  b ^= diff;
}

/// Numeric keys (u32/i32/f32 in a 32-bit word, the rest in a 64-bit word), compared as their
/// normalized unsigned word, which already folds in the sign, float and descending rules.
template <typename Word>
struct word_keys {
  using key = Word;

  gpusort::detail::key_codec<Word> codec;
  std::uint32_t key_offset = 0;

  word_keys(const record_format& format, bool descending)
      : codec(gpusort::detail::make_key_codec<Word>(format.type, descending)),
        key_offset(format.key_offset) {}

  [[nodiscard]] key load(const std::byte* record) const {
    return codec.normalize(gpusort::detail::load_word<Word>(record + key_offset));
  }

  [[nodiscard]] static bool less(key a, key b) { return a < b; }

  /// (a, run_a) < (b, run_b): equal keys order by run.
  [[nodiscard]] static bool less_tie(key a, std::uint32_t run_a, key b, std::uint32_t run_b) {
    return a < b || (a == b && run_a < run_b);
  }

  // The loser tree's view of a record: its key and its run. Matches order by key, then by run,
  // so ties need no knowledge of the tree's shape. An exhausted run holds the largest key with
  // its run number's top bit set, behind every record (keys equal to the largest key included).

  /// 32-bit keys widen to 64 bits: one tree layout for both.
  using tree_key = std::uint64_t;
  using tree_entry = tree_entry_of<tree_key>;

  [[nodiscard]] tree_entry tree_load(const std::byte* record, std::uint32_t run) const {
    return {load(record), run};
  }

  [[nodiscard]] static tree_entry tree_sentinel(std::uint32_t run) {
    return {~tree_key{0}, run | exhausted_run};
  }

  /// One match: the winner ends in `e`, the loser in `stored`. Every match of a step passes
  /// `e` on to the next, so the chain through `e` sets the merge's pace: a 128-bit compare of
  /// (key, run) and conditional moves, three cycles, without branches (on random keys the
  /// outcome is a coin flip, and compilers turn selects of this shape into jumps).
  static void play(tree_entry& stored, tree_entry& e) {
#if defined(__x86_64__)
    std::uint64_t winner_key = e.key;
    std::uint64_t winner_run = e.run;
    std::uint64_t loser_key = stored.key;
    std::uint64_t loser_run = stored.run;
    std::uint64_t scratch;
    // CF = (stored.key, stored.run) < (e.key, e.run), then the moves that CF decides.
    asm("cmp %[e_run], %[s_run]\n\t"
        "mov %[s_key], %[scratch]\n\t"
        "sbb %[e_key], %[scratch]\n\t"
        "cmovc %[s_key], %[w_key]\n\t"
        "cmovc %[s_run], %[w_run]\n\t"
        "cmovc %[e_key], %[l_key]\n\t"
        "cmovc %[e_run], %[l_run]"
        : [scratch] "=&r"(scratch), [w_key] "+&r"(winner_key), [w_run] "+&r"(winner_run),
          [l_key] "+&r"(loser_key), [l_run] "+&r"(loser_run)
        : [s_key] "r"(static_cast<std::uint64_t>(stored.key)),
          [s_run] "r"(static_cast<std::uint64_t>(stored.run)),
          [e_key] "r"(static_cast<std::uint64_t>(e.key)),
          [e_run] "r"(static_cast<std::uint64_t>(e.run))
        : "cc");
    e = {winner_key, static_cast<std::uint32_t>(winner_run)};
    stored = {loser_key, static_cast<std::uint32_t>(loser_run)};
#else
    __extension__ using wide = unsigned __int128;
    const bool stored_wins = ((static_cast<wide>(stored.key) << 64) | stored.run) <
                             ((static_cast<wide>(e.key) << 64) | e.run);
    swap_if(stored_wins, stored.key, e.key);
    swap_if(stored_wins, stored.run, e.run);
#endif
  }
};

/// bytes:N keys: memcmp order over N bytes, reversed when descending. The first (up to) 8 bytes
/// are loaded big-endian into a word so that most comparisons are one integer compare; the rest
/// is compared in place only when those words are equal.
struct bytes_key {
  std::uint64_t prefix;
  const std::byte* bytes;  ///< the key field; nullptr marks the sentinel
};

inline void swap_if(bool c, bytes_key& a, bytes_key& b) {
  swap_if(c, a.prefix, b.prefix);
  auto pa = reinterpret_cast<std::uintptr_t>(a.bytes);
  auto pb = reinterpret_cast<std::uintptr_t>(b.bytes);
  swap_if(c, pa, pb);
  a.bytes = reinterpret_cast<const std::byte*>(pa);
  b.bytes = reinterpret_cast<const std::byte*>(pb);
}

struct bytes_keys {
  using key = bytes_key;

  std::uint32_t key_offset = 0;
  std::uint32_t key_size = 0;
  std::uint64_t order_mask = 0;  ///< all ones when descending: complements the prefix
  bool descending = false;

  bytes_keys(const record_format& format, bool descending_order)
      : key_offset(format.key_offset),
        key_size(format.key_size),
        order_mask(descending_order ? ~std::uint64_t{0} : 0),
        descending(descending_order) {}

  [[nodiscard]] key load(const std::byte* record) const {
    const std::byte* field = record + key_offset;
    std::uint64_t raw = 0;
    if (key_size >= 8) [[likely]]
      std::memcpy(&raw, field, 8);
    else
      std::memcpy(&raw, field, key_size);  // missing bytes stay zero in every key alike
    return {__builtin_bswap64(raw) ^ order_mask, field};
  }

  /// Three-way comparison of the bytes after the prefix; the sentinel is above every key.
  [[nodiscard]] int compare_tail(const key& a, const key& b) const {
    if (a.bytes == nullptr || b.bytes == nullptr) [[unlikely]]
      return (a.bytes == nullptr) - (b.bytes == nullptr);
    if (key_size <= 8) return 0;
    const int c = descending ? std::memcmp(b.bytes + 8, a.bytes + 8, key_size - 8)
                             : std::memcmp(a.bytes + 8, b.bytes + 8, key_size - 8);
    return c;
  }

  [[nodiscard]] bool less(const key& a, const key& b) const {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return compare_tail(a, b) < 0;
  }

  [[nodiscard]] bool less_tie(const key& a, std::uint32_t run_a, const key& b,
                              std::uint32_t run_b) const {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    const int c = compare_tail(a, b);
    return c != 0 ? c < 0 : run_a < run_b;
  }

  using tree_entry = tree_entry_of<bytes_key>;

  [[nodiscard]] tree_entry tree_load(const std::byte* record, std::uint32_t run) const {
    return {load(record), run};
  }

  /// Orders after every key (compare_tail knows it by its null pointer).
  [[nodiscard]] static tree_entry tree_sentinel(std::uint32_t run) {
    return {{~std::uint64_t{0}, nullptr}, run | exhausted_run};
  }

  /// One match: the winner ends in `e`, the loser in `stored`.
  void play(tree_entry& stored, tree_entry& e) const {
    bool stored_wins;
    if (stored.key.prefix != e.key.prefix) {
      stored_wins = stored.key.prefix < e.key.prefix;
    } else {
      const int c = compare_tail(stored.key, e.key);
      stored_wins = c != 0 ? c < 0 : stored.run < e.run;
    }
    swap_if(stored_wins, stored.key, e.key);
    swap_if(stored_wins, stored.run, e.run);
  }
};

/// Record size known at compile time (RecordSize > 0), so that moving a record is one or two
/// register moves, or at run time (RecordSize == 0).
template <std::uint32_t RecordSize>
struct record_stride {
  std::uint32_t runtime_size = RecordSize;

  [[nodiscard]] std::uint32_t size() const {
    if constexpr (RecordSize != 0) return RecordSize;
    else return runtime_size;
  }

  void copy(std::byte* dst, const std::byte* src) const { std::memcpy(dst, src, size()); }
};

/// Calls f(keys) with the key policy of `format`: three instantiations in all.
template <typename F>
void with_keys(const record_format& format, bool descending, F&& f) {
  if (format.type == key_type::bytes) {
    f(bytes_keys(format, descending));
  } else if (gpusort::detail::has_32bit_word(format.type)) {
    f(word_keys<std::uint32_t>(format, descending));
  } else {
    f(word_keys<std::uint64_t>(format, descending));
  }
}

}  // namespace gpusort::cpu::detail
