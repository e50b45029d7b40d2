// The library entry points: sort files or a buffer of records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpusort/error.hpp"
#include "gpusort/options.hpp"
#include "gpusort/record_format.hpp"
#include "gpusort/stats.hpp"

namespace gpusort {

/**
 * Sorts the records of `inputs` (concatenated, in order) into `output`.
 * - "-" names stdin (as an input) or stdout (as the output).
 * - The output is written to a hidden temporary file beside it and renamed into place at the
 *   end, so a failed sort leaves the old output (or none). An input may be the output.
 * - Runs on the GPU when `options` allow one and a device is present, else on the CPU.
 * @throw gpusort::error (or a subclass) naming the operation, the file and the cause.
 */
sort_stats sort_file(const std::vector<std::string>& inputs, const std::string& output,
                     const sort_options& options);

/**
 * Sorts `data` in place: `data.size()` must be a multiple of `options.format.record_size`.
 * With `options.unique` the records kept are moved to the front: the first
 * `output_records` of the returned stats.
 * @throw gpusort::error on a bad format or size.
 */
sort_stats sort_buffer(std::span<std::byte> data, const sort_options& options);

/// What check_file found.
struct check_result {
  std::uint64_t records = 0;  ///< records read: all of them, or up to the first disorder
  /// The first record out of order (counting from 0 over the concatenated inputs): it orders
  /// before the record in front of it, or with `unique` equals it. nullopt when sorted.
  std::optional<std::uint64_t> disorder;
  std::string input;         ///< the input that holds it
  std::string key;           ///< its key as text ("42", "0x00ff...")
  std::string previous_key;  ///< the key of the record in front of it
  [[nodiscard]] bool sorted() const noexcept { return !disorder.has_value(); }
};

/**
 * Checks whether `inputs` (concatenated, in order) are sorted by `options.format`,
 * `options.descending` and, with `options.unique`, strictly (no equal neighbours). Reads until
 * the first disorder; writes nothing.
 * @throw gpusort::error naming the file and the cause on trouble.
 */
check_result check_file(const std::vector<std::string>& inputs, const sort_options& options);

/// "gpusort 0.1.0 (CUDA 13.0, sm_90)" or "gpusort 0.1.0 (CPU only)".
[[nodiscard]] std::string version_string();

}  // namespace gpusort
