// The library entry points: sort files or a buffer of records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

/// Told the stats of a sort whose output is in place (sort_file's `committed`).
using committed_callback = std::function<void(const sort_stats&)>;

/**
 * sort_file that calls `committed` once the output is in place (renamed, synced where asked),
 * with the stats up to then, and only then gives back what the sort held: the output's
 * mapping and the runs' memory, which took 0.5-1.3 s for 16-32 GiB on the GPU machines. The
 * returned stats count that too. The command line ends its process in `committed` and leaves
 * the rest to a process of its own. An exception from `committed` propagates after the rest is
 * given back; the output stays in place.
 */
sort_stats sort_file(const std::vector<std::string>& inputs, const std::string& output,
                     const sort_options& options, const committed_callback& committed);

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
