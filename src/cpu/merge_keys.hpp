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

  // The loser tree's view of a key. Its comparisons never look at run numbers: a tree node only
  // ever compares the winner of its left subtree (lower runs) with that of its right subtree,
  // so where each came from decides ties. Exhausted runs hold a sentinel above every key.

  /// 32-bit keys widen to 64 bits, which leaves room for a sentinel above every key and turns
  /// the tie rule into one add.
  using tree_key = std::uint64_t;

  [[nodiscard]] tree_key tree_load(const std::byte* record) const { return load(record); }

  /// True when `t` goes first: it orders before `e`, or ties and `t_on_left` (a lower run).
  [[nodiscard]] static bool tree_wins(tree_key t, tree_key e, bool t_on_left) {
    if constexpr (sizeof(Word) == 4) {
      return t < e + t_on_left;
    } else {
      // t < e + t_on_left without overflow, as one 128-bit compare: boolean logic here would be
      // compiled into branches, which random keys mispredict.
      __extension__ using wide = unsigned __int128;
      return static_cast<wide>(t) < static_cast<wide>(e) + t_on_left;
    }
  }

  [[nodiscard]] static tree_key tree_sentinel() {
    if constexpr (sizeof(Word) == 4) return std::uint64_t{1} << 32;
    else return ~std::uint64_t{0};
  }

  /// 64-bit keys have no spare value: records whose key equals the sentinel must be kept out of
  /// the tree (they sort last anyway, so the merge appends them afterwards, in run order).
  static constexpr bool sentinel_is_a_key = sizeof(Word) == 8;
  [[nodiscard]] static bool is_sentinel(key k) { return k == ~Word{0}; }
};

/// bytes:N keys: memcmp order over N bytes, reversed when descending. The first (up to) 8 bytes
/// are loaded big-endian into a word so that most comparisons are one integer compare; the rest
/// is compared in place only when those words are equal.
struct bytes_key {
  std::uint64_t prefix;
  const std::byte* bytes;  ///< the key field; nullptr marks the sentinel
};

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

  using tree_key = bytes_key;

  [[nodiscard]] tree_key tree_load(const std::byte* record) const { return load(record); }

  [[nodiscard]] bool tree_wins(const tree_key& t, const tree_key& e, bool t_on_left) const {
    if (t.prefix != e.prefix) return t.prefix < e.prefix;
    const int c = compare_tail(t, e);
    return c != 0 ? c < 0 : t_on_left;
  }

  /// Orders after every key (compare_tail knows it by its null pointer).
  [[nodiscard]] static tree_key tree_sentinel() { return {~std::uint64_t{0}, nullptr}; }

  static constexpr bool sentinel_is_a_key = false;
  [[nodiscard]] static bool is_sentinel(const key&) { return false; }
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

inline void swap_if(bool c, bytes_key& a, bytes_key& b) {
  swap_if(c, a.prefix, b.prefix);
  auto pa = reinterpret_cast<std::uintptr_t>(a.bytes);
  auto pb = reinterpret_cast<std::uintptr_t>(b.bytes);
  swap_if(c, pa, pb);
  a.bytes = reinterpret_cast<const std::byte*>(pa);
  b.bytes = reinterpret_cast<const std::byte*>(pb);
}

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

}  // namespace gpusort::cpu::detail
