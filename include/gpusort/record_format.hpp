// The record model: fixed-size records with a typed key field somewhere inside each one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpusort {

/// How the key bytes compare. Numeric keys are little-endian; `bytes` keys compare as unsigned
/// byte strings (memcmp order). Floats follow IEEE 754 totalOrder: -NaN < -inf < ... < -0.0 < +0.0
/// < ... < +inf < +NaN.
enum class key_type : std::uint8_t { u32, u64, i32, i64, f32, f64, bytes };

/// The largest record gpusort sorts: buffers are sized to hold at least one record (a merge
/// holds a few per run), so records must stay far below the memory of any host.
inline constexpr std::uint32_t max_record_size = std::uint32_t{1} << 30;

/// Layout of one record. The default is the u64 preset: 8-byte records that are their own key.
struct record_format {
  key_type type = key_type::u64;
  std::uint32_t key_size = 8;     ///< bytes in the key field (fixed by `type` except for bytes:N)
  std::uint32_t record_size = 8;  ///< bytes in one record
  std::uint32_t key_offset = 0;   ///< byte offset of the key field inside the record

  /// Throws gpusort::error with a one-line reason when the key does not fit in the record or
  /// the record is larger than max_record_size.
  void validate() const;

  /// True when the record is nothing but its key.
  [[nodiscard]] bool key_only() const noexcept {
    return record_size == key_size && key_offset == 0;
  }

  friend bool operator==(const record_format&, const record_format&) = default;
};

/// Parses "u32", "u64", "i32", "i64", "f32", "f64" or "bytes:N" (1 <= N <= 4096); sets `key_size`.
/// The record size and key offset are left as they are, except that a key-only format is resized
/// to the new key. Throws gpusort::error for an unknown type.
void set_key_type(record_format& format, std::string_view spelled);

/// "u64", "bytes:10", ...
[[nodiscard]] std::string key_type_name(const record_format& format);

/// Named presets: "u32", "u64", ... (key-only records), "kv64" (u64 key + u64 value),
/// "gensort" (100-byte records, 10-byte key at offset 0). Throws gpusort::error if unknown.
[[nodiscard]] record_format format_preset(std::string_view name);

/// One-line description, e.g. "u64 key at offset 0 of 16-byte records".
[[nodiscard]] std::string describe(const record_format& format);

}  // namespace gpusort
