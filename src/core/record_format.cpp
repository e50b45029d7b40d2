// Parsing, presets and validation of record formats.
#include "gpusort/record_format.hpp"

#include <charconv>

#include "gpusort/error.hpp"

namespace gpusort {
namespace {

constexpr std::uint32_t max_bytes_key = 4096;

std::uint32_t fixed_key_size(key_type type) {
  switch (type) {
    case key_type::u32:
    case key_type::i32:
    case key_type::f32: return 4;
    case key_type::u64:
    case key_type::i64:
    case key_type::f64: return 8;
    case key_type::bytes: return 0;
  }
  return 0;
}

}  // namespace

void record_format::validate() const {
  GPUSORT_EXPECTS(record_size > 0, "record size must be positive");
  GPUSORT_EXPECTS(record_size <= max_record_size,
                  "record size " + std::to_string(record_size) + " is larger than the largest " +
                      "supported, " + std::to_string(max_record_size) + " bytes (1 GiB)");
  GPUSORT_EXPECTS(key_size > 0, "key size must be positive");
  const std::uint32_t fixed = fixed_key_size(type);
  GPUSORT_EXPECTS(fixed == 0 || fixed == key_size,
                  "key size " + std::to_string(key_size) + " does not match type " +
                      key_type_name(*this));
  GPUSORT_EXPECTS(std::uint64_t{key_offset} + key_size <= record_size,
                  "key outside the record: " + key_type_name(*this) + " key at offset " +
                      std::to_string(key_offset) + " needs " +
                      std::to_string(std::uint64_t{key_offset} + key_size) +
                      "-byte records, but records are " + std::to_string(record_size) +
                      " bytes");
}

void set_key_type(record_format& format, std::string_view spelled) {
  const bool was_key_only = format.key_only();
  key_type type{};
  std::uint32_t size = 0;
  if (spelled == "u32") type = key_type::u32;
  else if (spelled == "u64") type = key_type::u64;
  else if (spelled == "i32") type = key_type::i32;
  else if (spelled == "i64") type = key_type::i64;
  else if (spelled == "f32") type = key_type::f32;
  else if (spelled == "f64") type = key_type::f64;
  else if (spelled.starts_with("bytes:")) {
    type = key_type::bytes;
    const std::string_view digits = spelled.substr(6);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
    GPUSORT_EXPECTS(ec == std::errc{} && end == digits.data() + digits.size() && size >= 1 &&
                        size <= max_bytes_key,
                    "bad key type '" + std::string(spelled) + "': bytes:N needs 1 <= N <= " +
                        std::to_string(max_bytes_key));
  } else {
    throw_error("unknown key type '" + std::string(spelled) +
                "' (expected u32, u64, i32, i64, f32, f64 or bytes:N)");
  }
  format.type = type;
  format.key_size = type == key_type::bytes ? size : fixed_key_size(type);
  if (was_key_only) format.record_size = format.key_size;
}

std::string key_type_name(const record_format& format) {
  switch (format.type) {
    case key_type::u32: return "u32";
    case key_type::u64: return "u64";
    case key_type::i32: return "i32";
    case key_type::i64: return "i64";
    case key_type::f32: return "f32";
    case key_type::f64: return "f64";
    case key_type::bytes: return "bytes:" + std::to_string(format.key_size);
  }
  return "?";
}

record_format format_preset(std::string_view name) {
  record_format format;
  if (name == "gensort") {
    format.type = key_type::bytes;
    format.key_size = 10;
    format.record_size = 100;
    format.key_offset = 0;
    return format;
  }
  if (name == "kv64") {
    format.record_size = 16;
    return format;
  }
  if (name == "u32" || name == "u64" || name == "i32" || name == "i64" || name == "f32" ||
      name == "f64") {
    set_key_type(format, name);
    format.record_size = format.key_size;
    return format;
  }
  throw_error("unknown format '" + std::string(name) +
              "' (expected gensort, kv64, u32, u64, i32, i64, f32 or f64)");
}

std::string describe(const record_format& format) {
  if (format.key_only()) return key_type_name(format) + " keys";
  return key_type_name(format) + " key at offset " + std::to_string(format.key_offset) + " of " +
         std::to_string(format.record_size) + "-byte records";
}

}  // namespace gpusort
