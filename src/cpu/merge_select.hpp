// Exact multi-sequence selection over sorted runs: where each run is cut so that the cuts hold the
// first `rank` records of the stable merge order.
//
// The stable merge order is the strict total order (key, run, index). Let t be the record of
// rank `rank` in it; the answer is cut_j = number of records of run j that order before t. Each
// run keeps an active interval [lo_j, hi_j] with lo_j <= cut_j <= hi_j (and t inside its own
// run's interval). One round takes the middle record of every non-empty interval, picks their
// median weighted by interval length as pivot p, and finds p's position in every run by binary
// search inside the interval (records of lower runs that tie with p order before it, of higher
// runs after it). The clamped positions sum to less than, equal to or more than `rank` exactly
// when p orders before, is, or orders after t, so they become the new lower bounds, the answer,
// or the new upper bounds. Either way at least a quarter of the active records is dropped, so
// there are O(log total) rounds of one binary search per run each, whatever the duplicates.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cpu/multiway_merge.hpp"
#include "gpusort/error.hpp"

namespace gpusort::cpu::detail {

/// Fills cuts (runs.size() entries) for `rank`; requires rank <= total records.
template <typename Keys>
void select_cuts_into(const Keys& keys, std::span<const run_view> runs, std::uint32_t record_size,
                      std::uint64_t rank, std::span<std::uint64_t> cuts) {
  using key = typename Keys::key;
  const std::size_t k = runs.size();

  std::vector<std::uint64_t> hi(k);
  std::uint64_t total = 0;
  for (std::size_t j = 0; j < k; ++j) {
    cuts[j] = 0;  // cuts holds the lower bounds lo_j until the answer is known
    hi[j] = runs[j].count;
    total += runs[j].count;
  }
  if (rank == 0) return;
  if (rank == total) {
    std::copy(hi.begin(), hi.end(), cuts.begin());
    return;
  }

  auto key_at = [&](std::size_t j, std::uint64_t i) {
    return keys.load(runs[j].data + i * record_size);
  };

  struct candidate {
    key value;
    std::uint32_t run;
    std::uint64_t index;
    std::uint64_t weight;
  };
  std::vector<candidate> middles;
  middles.reserve(k);
  std::vector<std::uint64_t> positions(k);

  std::uint64_t sum_lo = 0;
  for (;;) {
    if (sum_lo == rank) return;  // lo_j <= cut_j for all j and the sums agree: lo is the answer

    middles.clear();
    std::uint64_t active = 0;
    for (std::size_t j = 0; j < k; ++j) {
      const std::uint64_t n = hi[j] - cuts[j];
      if (n == 0) continue;
      const std::uint64_t mid = cuts[j] + n / 2;
      middles.push_back({key_at(j, mid), static_cast<std::uint32_t>(j), mid, n});
      active += n;
    }
    // The target is always inside an interval, unless a run was not sorted after all.
    GPUSORT_EXPECTS(!middles.empty(), "select_cuts: the runs are not sorted");
    std::sort(middles.begin(), middles.end(), [&](const candidate& a, const candidate& b) {
      return keys.less_tie(a.value, a.run, b.value, b.run);
    });
    std::uint64_t before = 0;
    std::size_t m = 0;
    while ((before + middles[m].weight) * 2 < active) before += middles[m++].weight;
    const candidate pivot = middles[m];

    // The pivot's position in every run, clamped to the run's active interval.
    std::uint64_t sum = 0;
    for (std::size_t j = 0; j < k; ++j) {
      std::uint64_t first = cuts[j];
      std::uint64_t count = hi[j] - first;
      if (j == pivot.run) {
        first = pivot.index;
      } else if (j < pivot.run) {
        // Ties with the pivot order before it: first record with key > pivot.
        while (count > 0) {
          const std::uint64_t half = count / 2;
          if (!keys.less(pivot.value, key_at(j, first + half))) {
            first += half + 1;
            count -= half + 1;
          } else {
            count = half;
          }
        }
      } else {
        // Ties order after it: first record with key >= pivot.
        while (count > 0) {
          const std::uint64_t half = count / 2;
          if (keys.less(key_at(j, first + half), pivot.value)) {
            first += half + 1;
            count -= half + 1;
          } else {
            count = half;
          }
        }
      }
      positions[j] = first;
      sum += first;
    }

    if (sum == rank) {
      std::copy(positions.begin(), positions.end(), cuts.begin());
      return;
    }
    if (sum < rank) {
      // The pivot orders before the target: everything up to and including it goes left.
      std::copy(positions.begin(), positions.end(), cuts.begin());
      cuts[pivot.run] = pivot.index + 1;
      sum_lo = sum + 1;
    } else {
      std::copy(positions.begin(), positions.end(), hi.begin());
    }
  }
}

}  // namespace gpusort::cpu::detail
