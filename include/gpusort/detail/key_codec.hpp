// Order-preserving map from a numeric key's bits to an unsigned word ("normalized key").
//
// Sorting normalized keys as unsigned integers sorts the original keys in the requested order,
// so every sorter (CPU radix, CUB, the merge) works on plain unsigned words. The map is one
// XOR with a mask that depends on the key's own sign bit, so it is branch-free and cheap enough
// to apply on every load instead of in a separate pass:
//   unsigned: bits
//   signed:   bits ^ sign_bit
//   float:    bits ^ (sign set ? all ones : sign_bit)        (IEEE 754 totalOrder)
// and `descending` complements the result.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gpusort/detail/host_device.hpp"
#include "gpusort/record_format.hpp"

namespace gpusort::detail {

/// Normalizes and denormalizes keys held in a Word (uint32_t or uint64_t).
template <typename Word>
struct key_codec {
  static_assert(std::is_same_v<Word, std::uint32_t> || std::is_same_v<Word, std::uint64_t>);
  static constexpr Word sign_bit = Word{1} << (sizeof(Word) * 8 - 1);

  Word sign_mask = 0;   ///< sign_bit for signed and float keys
  Word float_mask = 0;  ///< all ones for float keys: negative floats flip every bit
  Word order_mask = 0;  ///< all ones for descending order

  GPUSORT_HD Word normalize(Word bits) const {
    const Word negative = Word(0) - (bits >> (sizeof(Word) * 8 - 1));  // all ones if sign set
    return bits ^ ((negative & float_mask) | sign_mask) ^ order_mask;
  }

  GPUSORT_HD Word denormalize(Word key) const {
    const Word ordered = key ^ order_mask;
    // After normalization a float's top bit is set exactly when it was non-negative.
    const Word was_negative = Word(0) - ((ordered >> (sizeof(Word) * 8 - 1)) ^ 1);
    return ordered ^ ((was_negative & float_mask) | sign_mask);
  }
};

/// The codec for a numeric key type; `Word` must match its width.
template <typename Word>
constexpr key_codec<Word> make_key_codec(key_type type, bool descending) {
  key_codec<Word> codec;
  const bool is_signed = type == key_type::i32 || type == key_type::i64;
  const bool is_float = type == key_type::f32 || type == key_type::f64;
  codec.sign_mask = (is_signed || is_float) ? key_codec<Word>::sign_bit : 0;
  codec.float_mask = is_float ? ~Word(0) : 0;
  codec.order_mask = descending ? ~Word(0) : 0;
  return codec;
}

/// True for key types whose normalized key is a 32-bit word.
constexpr bool has_32bit_word(key_type type) {
  return type == key_type::u32 || type == key_type::i32 || type == key_type::f32;
}

/// Loads a Word from unaligned memory.
template <typename Word>
GPUSORT_HD Word load_word(const void* p) {
  Word w;
  std::memcpy(&w, p, sizeof(Word));
  return w;
}

template <typename Word>
GPUSORT_HD void store_word(void* p, Word w) {
  std::memcpy(p, &w, sizeof(Word));
}

}  // namespace gpusort::detail
