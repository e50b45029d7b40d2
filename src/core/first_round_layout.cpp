// make_first_round_layout: owners of the digits, the destinations' two groups, then each
// source's places in the destinations and in its staging buffer.
#include "core/first_round_layout.hpp"

#include <algorithm>
#include <string>

#include "gpusort/error.hpp"

namespace gpusort {

first_round_layout make_first_round_layout(std::span<const first_round_source> sources,
                                           std::span<const std::uint64_t> destination_records,
                                           bool overlap) {
  const std::size_t g = sources.size();
  GPUSORT_EXPECTS(g >= 1 && destination_records.size() == g,
                  "first-round layout: " + std::to_string(g) + " sources, " +
                      std::to_string(destination_records.size()) + " destinations");
  const std::size_t digits = sources[0].digit_counts.size();
  for (const first_round_source& s : sources)
    GPUSORT_EXPECTS(s.digit_counts.size() == digits,
                    "first-round layout: sources count different digits");

  first_round_layout l;
  l.owner.assign(digits, 0);
  l.digit_at.assign(digits, 0);
  l.owned.assign(g, std::vector<std::uint64_t>(digits, 0));
  // Each digit goes whole to the destination whose range holds it.
  std::uint64_t start = 0;  // of the digit, in the global order
  std::uint64_t end = destination_records[0];  // of destination d
  std::size_t d = 0;
  for (std::size_t k = 0; k < digits; ++k) {
    std::uint64_t total = 0;
    for (const first_round_source& s : sources) total += s.digit_counts[k];
    if (total == 0) continue;
    while (end <= start && d + 1 < g) end += destination_records[++d];
    GPUSORT_EXPECTS(start + total <= end,
                    "first-round layout: digit " + std::to_string(k) + " passes the end of " +
                        "destination " + std::to_string(d));
    l.owner[k] = d;
    l.digit_at[k] = start - (end - destination_records[d]);
    l.owned[d][k] = total;
    start += total;
  }
  std::uint64_t records = 0;
  for (const std::uint64_t r : destination_records) records += r;
  GPUSORT_EXPECTS(start == records, "first-round layout: " + std::to_string(start) +
                                        " keys counted, " + std::to_string(records) +
                                        " in the destinations");

  // The late digits of a destination: from the first one that begins at half its keys or after.
  std::vector<bool> late(digits, false);
  const std::vector<std::uint64_t> all(destination_records.begin(), destination_records.end());
  std::vector<std::uint64_t> early = all;
  if (overlap) {
    for (std::size_t k = 0; k < digits; ++k) {
      const std::size_t o = l.owner[k];
      if (l.owned[o][k] == 0 || 2 * l.digit_at[k] < destination_records[o]) continue;
      late[k] = true;
      early[o] = std::min(early[o], l.digit_at[k]);
    }
  }

  l.to.assign(g, std::vector<std::uint64_t>(digits, 0));
  l.crosses.assign(g, std::vector<bool>(digits, false));
  l.stage.assign(g, std::vector<std::uint64_t>(digits, 0));
  l.staged.assign(g, false);
  for (std::size_t s = 0; s < g; ++s) {
    std::uint64_t early_out = 0;
    std::uint64_t late_out = 0;
    for (std::size_t k = 0; k < digits; ++k) {
      l.to[s][k] = l.digit_at[k];
      for (std::size_t e = 0; e < s; ++e) l.to[s][k] += sources[e].digit_counts[k];
      if (sources[l.owner[k]].device == sources[s].device) continue;
      (late[k] ? late_out : early_out) += sources[s].digit_counts[k];
    }
    const std::uint64_t cap = sources[s].staging_capacity;
    // The source's own early sort writes the first early[s] keys of its staging buffer while
    // its late keys are still being copied out of the top.
    l.staged[s] = early_out + late_out != 0 && early_out + late_out <= cap &&
                  (late_out == 0 || cap - late_out >= early[s]);
    if (!l.staged[s]) continue;
    std::uint64_t low = 0;
    std::uint64_t high = cap - late_out;
    for (std::size_t k = 0; k < digits; ++k) {
      const std::uint64_t c = sources[s].digit_counts[k];
      if (c == 0 || sources[l.owner[k]].device == sources[s].device) continue;
      l.crosses[s][k] = true;
      std::uint64_t& at = late[k] ? high : low;
      l.stage[s][k] = at;
      at += c;
    }
  }

  l.split = false;
  for (std::size_t s = 0; s < g; ++s) l.split = l.split || l.staged[s];
  l.split = l.split && overlap;
  l.late = l.split ? late : std::vector<bool>(digits, false);
  l.early_records = l.split ? early : all;
  return l;
}

}  // namespace gpusort
