// Pieces shared by the measurement tools: record-format options spelled as gpusort spells them,
// where a generated record keeps its index, and a small counter-based hash.
#pragma once

#include <boost/program_options.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpusort/record_format.hpp"

namespace gpusort::tools {

/// Parses argv against `visible` with every operand collected under "files". On a usage
/// error prints "<tool>: <what>" and a --help hint on stderr and returns nullopt.
[[nodiscard]] std::optional<boost::program_options::variables_map> parse_with_operands(
    int argc, const char* const* argv, const boost::program_options::options_description& visible,
    const std::string& tool);

/// Device ids from "0,1,...", for the benchmarks' --devices. `expected` ends the error message
/// ("expected device ids such as 0,1"); a repeated id is an error unless `repeats` allows it.
/// @throw gpusort::error on an empty or non-numeric item, or a repeat that is not allowed
[[nodiscard]] std::vector<int> parse_device_ids(const std::string& text,
                                                const std::string& expected, bool repeats);

/// "<tool> (gpusort) 0.1.0" on stdout: what --version prints, as GNU tools spell it.
void print_version(const std::string& tool);

/// The options of a tool that takes no operands, or why it is done already.
struct tool_options {
  std::optional<boost::program_options::variables_map> values;  ///< empty: exit with `status`
  int status = 0;
};

/// parse_with_operands, then --help (`visible` on stdout) and --version (print_version), both
/// ending the run with status 0; a usage error ends it with status 2.
/// @throw gpusort::error when an operand is given
[[nodiscard]] tool_options parse_options_only(
    int argc, const char* const* argv, const boost::program_options::options_description& visible,
    const std::string& tool);

/// Adds -t/--type, --record-size, --key-offset and --format to `desc`.
void add_format_options(boost::program_options::options_description& desc);

/**
 * The record format the options describe: the --format preset (default u64), then --type
 * (a key-only format follows the key's size), then --record-size and --key-offset.
 * @throw gpusort::error when the key does not fit or a name is unknown.
 */
[[nodiscard]] record_format resolve_format(const boost::program_options::variables_map& vm);

/// Help text for the format options' values (presets and key types), for --help.
[[nodiscard]] std::string format_help();

/// A --threads request capped at the hardware threads: more only compete for them, and TBB
/// fails to allocate for absurd counts (-j 4294967295).
[[nodiscard]] unsigned capped_threads(unsigned requested) noexcept;

/// True when records have gensort's binary layout: 100 bytes, a 10-byte key at offset 0.
[[nodiscard]] bool is_gensort_layout(const record_format& format) noexcept;

/// Where the generator stores a record's index (its position in the generated file).
struct index_field {
  enum class encoding : std::uint8_t {
    none,             ///< no payload bytes: the index is not stored
    little_endian,    ///< the low `width` bytes of the index, little-endian
    gensort_hex,      ///< gensort: 32 upper-case hex digits at bytes 12..43
  } how = encoding::none;
  std::uint32_t offset = 0;  ///< first byte of the field inside the record
  std::uint32_t width = 0;   ///< bytes in the field (1..8 for little_endian, 32 for gensort_hex)
};

/**
 * The index field of a format: gensort's record-number field, else the first 8 payload bytes
 * (before the key when the key starts at byte 8 or later, else right after the key), else all
 * the payload bytes after the key when fewer than 8 (the index truncated to them).
 */
[[nodiscard]] index_field locate_index(const record_format& format) noexcept;

/// Largest index (exclusive) the field can hold without wrapping: 2^(8*width), or 2^64.
[[nodiscard]] std::uint64_t index_limit(const index_field& field) noexcept;

/// Reads the index back from a record; the field must not be encoding::none.
[[nodiscard]] std::uint64_t read_index(const std::byte* record, const index_field& field) noexcept;

/// splitmix64's finalizer: a bijective mix of 64 bits.
[[nodiscard]] constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/// A counter-based hash of (a, b): what position b of stream a would draw, without state.
[[nodiscard]] constexpr std::uint64_t hash2(std::uint64_t a, std::uint64_t b) noexcept {
  return mix64(mix64(a + 0x9e3779b97f4a7c15ull) ^
               (b * 0xd1342543de82ef95ull + 0x632be59bd9b4e019ull));
}

}  // namespace gpusort::tools
