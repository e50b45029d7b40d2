// The sort validator: key order from DESIGN.md §2 (written independently of gpusort's sorting
// code), an order-independent multiset hash of whole records, and the stability check.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpusort/record_format.hpp"

namespace gpusort::tools {

/**
 * Three-way comparison of two keys (pointers to the key fields) by the key type's order:
 * unsigned or two's complement little-endian integers, IEEE 754 totalOrder for floats,
 * memcmp for bytes:N. Returns <0, 0 or >0.
 */
[[nodiscard]] int compare_keys(const std::byte* a, const std::byte* b,
                               const record_format& format) noexcept;

/// A key for messages: "12345 (0x0000000000003039)", "-0 (0x8000000000000000)", hex for bytes.
[[nodiscard]] std::string key_text(const std::byte* key, const record_format& format);

/// The multiset of a file's records: count plus two independent 64-bit hashes per record,
/// each summed modulo 2^64, so the order of the records does not matter.
struct multiset_hash {
  std::uint64_t count = 0;
  std::uint64_t h1 = 0;
  std::uint64_t h2 = 0;
  friend bool operator==(const multiset_hash&, const multiset_hash&) = default;
};

/// Adds one record's two hashes to `sum` (count included).
void add_record(multiset_hash& sum, const std::byte* record, std::uint32_t record_size) noexcept;

/// "0x<h1><h2>": the 128-bit hash as 32 hex digits.
[[nodiscard]] std::string hash_text(const multiset_hash& hash);

struct validate_options {
  record_format format{};
  bool descending = false;  ///< -r: keys must not increase
  bool stable = false;      ///< equal keys must carry increasing generator indexes
};

/// What one pass over a file found.
struct file_scan {
  std::uint64_t bytes = 0;
  multiset_hash hash;
  /// Index of the first record of the first out-of-order pair (order checks only).
  std::optional<std::uint64_t> first_unordered;
  /// Index of the first record of the first equal-key pair whose indexes do not increase.
  std::optional<std::uint64_t> first_unstable;
};

/**
 * Reads `path` (mapped, scanned in parallel) and hashes its whole records; a trailing partial
 * record is left out of the hash (file_scan::bytes shows it). With `check_order`, also finds
 * the first adjacent pair out of order and, with options.stable, the first unstable pair.
 * @throw gpusort::error when the file cannot be opened or mapped, or when options.stable is
 * asked for records that carry no index (or too narrow a one for the file's record count).
 */
[[nodiscard]] file_scan scan_file(const std::string& path, const validate_options& options,
                                  bool check_order);

/// The verdict for a pair of files.
struct validation {
  bool ordered = true;
  bool same_records = true;
  bool stable = true;             ///< true when not checked
  std::vector<std::string> problems;  ///< one line per failed check, saying where
  std::string summary;            ///< one line for success
  [[nodiscard]] bool ok() const noexcept { return ordered && same_records && stable; }
};

/**
 * Checks that `out` is ordered by options (and stable, when asked) and that it holds exactly
 * the records of `in` (count and multiset hash). An empty `in` path checks the order only.
 * @throw gpusort::error on trouble: unreadable files, `in` not a whole number of records.
 */
[[nodiscard]] validation validate_files(const std::string& in, const std::string& out,
                                        const validate_options& options);

}  // namespace gpusort::tools
