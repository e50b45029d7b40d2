// Parallel multiway merge of sorted runs (TBB): the output is cut into independent ranges by
// multi-sequence selection and each range is merged by its own task with a loser tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "gpusort/record_format.hpp"

namespace gpusort::cpu {

/// A sorted run of `count` records in host memory.
struct run_view {
  const std::byte* data = nullptr;
  std::uint64_t count = 0;
};

/// Which merge kernels merge_ranks may use.
struct merge_policy {
  /// The AVX-512 vector merge (cpu/merge_vector.hpp) for records of a 64-bit key alone or with
  /// an 8-byte payload, where the CPU has it; the loser tree otherwise. Both give the same
  /// output. Off only to measure the loser tree against it.
  bool vector = true;
};

/**
 * Multi-sequence selection: the per-run cut for output rank `rank`.
 * - Returns cuts with cuts[j] <= runs[j].count and sum(cuts) == rank, such that every record
 *   before a cut orders before (or equal to) every record after any cut.
 * - Equal keys are taken from lower-numbered runs first, so a merge that respects the cuts is
 *   stable when runs are numbered in input order.
 * - Costs O(runs * log^2 total) key comparisons, however many keys are equal.
 * @throw gpusort::error when the format is invalid, rank exceeds the total count, or a run
 *        with records has no data.
 */
[[nodiscard]] std::vector<std::uint64_t> select_cuts(std::span<const run_view> runs,
                                                     std::uint64_t rank,
                                                     const record_format& format,
                                                     bool descending);

/**
 * Writes output ranks [rank_begin, rank_end) of the merge of `runs` to `dst`
 * ((rank_end - rank_begin) * record_size bytes), in parallel, stably (see select_cuts).
 * - `dst` must not overlap any run.
 * - Runs on the calling thread's TBB arena, split into merge_part_count(...) parts.
 * @throw gpusort::error when the format is invalid, rank_begin > rank_end, rank_end exceeds the
 *        total count, or a run with records has no data.
 */
void merge_ranks(std::span<const run_view> runs, std::uint64_t rank_begin,
                 std::uint64_t rank_end, std::byte* dst, const record_format& format,
                 bool descending, const merge_policy& policy = {});

/**
 * merge_ranks with an explicit number of parts (>= 1): independent tasks whose boundaries are
 * found by select_cuts. The output does not depend on `parts`.
 */
void merge_ranks_in_parts(std::span<const run_view> runs, std::uint64_t rank_begin,
                          std::uint64_t rank_end, std::byte* dst, const record_format& format,
                          bool descending, std::uint64_t parts,
                          const merge_policy& policy = {});

/// Whether merge_ranks merges `format`'s records with the vector merge under `policy` (a part
/// of (key, payload) records whose keys repeat goes to the loser tree): for benchmarks.
[[nodiscard]] bool merges_with_vectors(const record_format& format,
                                       const merge_policy& policy) noexcept;

/// How many parts merge_ranks cuts `count` output records of `runs` runs into: about sixteen
/// per thread of the current TBB arena, but none so small that selecting its cuts would
/// dominate.
[[nodiscard]] std::uint64_t merge_part_count(std::uint64_t count, std::size_t runs);

}  // namespace gpusort::cpu
