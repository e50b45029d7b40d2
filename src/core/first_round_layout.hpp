// Where every key goes when a multi-GPU exchange is the hybrid radix sort's first round (see
// gpu/multi_gpu_sort.hpp): the plan put each destination boundary on a digit edge, so each
// top digit belongs to one destination, whose receive buffer holds its digits in order and,
// within a digit, the sources' keys source after source. Plain host arithmetic, so that the
// layout is checked without a GPU.
//
// Staging. A source whose keys for other GPUs go through its staging buffer (its alternate
// buffer, free until its own local sort) lays them out there digit by digit, and copy engines
// move them over the link a section at a time while the next section is scattered.
//
// Two groups. Where some source stages, each destination sorts its digits in two groups: the
// early ones (its smallest digits, about half its keys) as soon as they have arrived, while
// the late ones still cross the link. The sources copy early digits section by section and
// late ones after. A source's staged late digits lie at the top of its staging buffer, above
// the part of that buffer its own early sort writes while they are still being copied out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace gpusort {

/// One source (slot) of the exchange.
struct first_round_source {
  /// Keys of each top digit in the source's slice: the same number of digits for every source.
  std::vector<std::uint64_t> digit_counts;
  /// The slot's GPU: keys for a slot on the same GPU are stored there directly, never staged.
  int device = 0;
  /// Keys the source's staging buffer holds; 0: the source does not stage (it has no such
  /// buffer, or its slice was counted in one section, so there is nothing to overlap).
  std::uint64_t staging_capacity = 0;
};

struct first_round_layout {
  std::vector<std::size_t> owner;        ///< per digit: the destination that sorts it
  std::vector<std::uint64_t> digit_at;   ///< per digit: where its keys begin in the owner
  /// Per destination and digit: the keys it receives of that digit (0 for digits it does not own).
  std::vector<std::vector<std::uint64_t>> owned;
  /// Per source and digit: where the source's keys of that digit begin in the owner's buffer.
  std::vector<std::vector<std::uint64_t>> to;
  /// Per source: whether its keys for other GPUs go through its staging buffer.
  std::vector<bool> staged;
  /// Per source and digit: whether those keys are staged (for another GPU, source staged).
  std::vector<std::vector<bool>> crosses;
  /// Per source and digit, where crosses: where those keys begin in the staging buffer.
  std::vector<std::vector<std::uint64_t>> stage;
  /// Whether the destinations sort in two groups (some source stages and overlap was asked).
  bool split = false;
  /// Per digit: sorted in its owner's second group.
  std::vector<bool> late;
  /// Per destination: keys of its first group (all of them where not split); its late digits
  /// begin there.
  std::vector<std::uint64_t> early_records;
};

/**
 * The layout of an exchange whose plan gives destination d `destination_records[d]` keys (one
 * destination per source). A source stages where it has keys for another GPU and they fit its
 * staging buffer (with `overlap`, under the late digits' rule above). With `overlap`,
 * destinations sort in two groups where some source stages.
 * @throw gpusort::error when a digit's keys cross a destination boundary (the plan was not on
 *        digit edges), the counts do not add up to the destinations' records, or the sources'
 *        digit counts differ in length
 */
[[nodiscard]] first_round_layout make_first_round_layout(
    std::span<const first_round_source> sources,
    std::span<const std::uint64_t> destination_records, bool overlap);

}  // namespace gpusort
