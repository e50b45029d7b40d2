// partition_planner: destination boundaries from per-source MSD histograms, refined pass by pass.
#include "core/partition_plan.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "gpusort/error.hpp"

namespace gpusort {
namespace {

/// floor(d * n / g) without the overflow of d * n: the ideal start of destination d.
std::uint64_t ideal_begin(std::uint64_t n, std::uint32_t g, std::uint32_t d) {
  return n / g * d + n % g * d / g;
}

std::uint64_t ceil_div(std::uint64_t n, std::uint64_t d) { return n / d + (n % d != 0); }

/// Prefix sums of the leaves' totals: leaf i covers [starts[i], starts[i + 1]).
template <typename Leaf>
std::vector<std::uint64_t> leaf_starts(const std::vector<Leaf>& leaves) {
  std::vector<std::uint64_t> starts(leaves.size() + 1, 0);
  for (std::size_t i = 0; i < leaves.size(); ++i) starts[i + 1] = starts[i] + leaves[i].total;
  return starts;
}

/// The leaf that holds global position p < n: starts[i] <= p < starts[i + 1].
std::size_t leaf_at(const std::vector<std::uint64_t>& starts, std::uint64_t p) {
  return static_cast<std::size_t>(std::upper_bound(starts.begin(), starts.end(), p) -
                                  starts.begin()) - 1;
}

}  // namespace

std::uint64_t default_padding(std::uint64_t records, std::uint32_t destinations) {
  GPUSORT_EXPECTS(destinations >= 1, "partition plan: no destination");
  return ceil_div(records, destinations) / default_padding_divisor;
}

std::uint64_t partition_plan::bound() const noexcept {
  return ceil_div(total_records, destinations) + 2 * padding;
}

partition_planner::partition_planner(const partition_config& config) : config_(config) {
  GPUSORT_EXPECTS(config.key_bits >= 1 && config.key_bits <= 64,
                  "partition plan: key_bits " + std::to_string(config.key_bits) +
                      " (expected 1 to 64)");
  GPUSORT_EXPECTS(config.digit_bits >= min_digit_bits && config.digit_bits <= max_digit_bits,
                  "partition plan: digit_bits " + std::to_string(config.digit_bits) +
                      " (expected " + std::to_string(min_digit_bits) + " to " +
                      std::to_string(max_digit_bits) + ")");
  GPUSORT_EXPECTS(config.sources >= 1, "partition plan: no source");
  GPUSORT_EXPECTS(config.destinations >= 1, "partition plan: no destination");
  // The whole key space is the first bucket to refine; its counts come with the first pass.
  leaves_.push_back(leaf{key_bucket{}, std::vector<std::uint64_t>(config.sources, 0), 0});
  pending_.push_back(key_bucket{});
}

unsigned partition_planner::next_digit_bits() const noexcept {
  if (pending_.empty()) return 0;
  // Every pending bucket comes from the same pass, so they all have the same width.
  return std::min(config_.digit_bits, config_.key_bits - pending_.front().bits);
}

std::size_t partition_planner::next_histogram_size() const noexcept {
  return pending_.size() << next_digit_bits();
}

void partition_planner::add_histograms(std::span<const std::vector<std::uint64_t>> per_source) {
  GPUSORT_EXPECTS(!pending_.empty(), "partition plan: histograms given after the last pass");
  GPUSORT_EXPECTS(per_source.size() == config_.sources,
                  "partition plan: histograms of " + std::to_string(per_source.size()) +
                      " sources, expected " + std::to_string(config_.sources));
  const std::size_t size = next_histogram_size();
  for (const std::vector<std::uint64_t>& h : per_source)
    GPUSORT_EXPECTS(h.size() == size, "partition plan: a histogram of " +
                                          std::to_string(h.size()) + " counters, expected " +
                                          std::to_string(size));
  const unsigned digit = next_digit_bits();
  const std::size_t width = std::size_t{1} << digit;
  const bool first_pass = passes_ == 0;

  std::vector<leaf> refined;
  refined.reserve(leaves_.size() + size);
  std::size_t next_pending = 0;
  for (leaf& parent : leaves_) {
    if (next_pending == pending_.size() || !(parent.bucket == pending_[next_pending])) {
      refined.push_back(std::move(parent));
      continue;
    }
    const std::size_t base = next_pending * width;
    std::vector<std::uint64_t> counted(config_.sources, 0);
    for (std::size_t digit_value = 0; digit_value < width; ++digit_value) {
      leaf child{key_bucket{(parent.bucket.prefix << digit) | digit_value,
                            parent.bucket.bits + digit},
                 std::vector<std::uint64_t>(config_.sources, 0), 0};
      for (std::uint32_t s = 0; s < config_.sources; ++s) {
        child.per_source[s] = per_source[s][base + digit_value];
        child.total += child.per_source[s];
        counted[s] += child.per_source[s];
      }
      // Empty buckets hold no boundary and send nothing: leaving them out keeps the leaves
      // few under skew (at most g - 1 refined buckets of 2^digit_bits per pass).
      if (child.total != 0) refined.push_back(std::move(child));
    }
    // A GPU histogram of the wrong keys or bits would silently misplace records: refuse it.
    if (!first_pass)
      for (std::uint32_t s = 0; s < config_.sources; ++s)
        GPUSORT_EXPECTS(counted[s] == parent.per_source[s],
                        "partition plan: source " + std::to_string(s) + " counts " +
                            std::to_string(counted[s]) + " records in a refined bucket of " +
                            std::to_string(parent.per_source[s]));
    ++next_pending;
  }
  leaves_ = std::move(refined);
  if (first_pass)
    for (const leaf& l : leaves_) total_ += l.total;
  ++passes_;
  place_boundaries();
}

void partition_planner::place_boundaries() {
  const std::uint32_t g = config_.destinations;
  const std::vector<std::uint64_t> starts = leaf_starts(leaves_);
  pending_.clear();
  positions_.assign(std::size_t{g} + 1, 0);
  positions_[g] = total_;
  for (std::uint32_t d = 1; d < g; ++d) {
    const std::uint64_t ideal = ideal_begin(total_, g, d);
    positions_[d] = ideal;
    if (ideal == total_) continue;
    const std::size_t i = leaf_at(starts, ideal);
    const std::uint64_t start = starts[i];
    const std::uint64_t end = starts[i + 1];
    if (ideal == start) continue;                       // on a bucket edge already
    if (leaves_[i].bucket.bits == config_.key_bits) continue;  // one key: split by records
    const std::uint64_t to_start = ideal - start;
    const std::uint64_t to_end = end - ideal;
    if (std::min(to_start, to_end) <= config_.padding) {
      // Nearer edge, ties to the start: boundaries in the same bucket then move the same way
      // or apart, never across each other.
      positions_[d] = to_start <= to_end ? start : end;
      continue;
    }
    if (pending_.empty() || !(pending_.back() == leaves_[i].bucket))
      pending_.push_back(leaves_[i].bucket);
  }
}

partition_plan partition_planner::plan() const {
  GPUSORT_EXPECTS(done(), "partition plan: asked for before the last histogram pass");
  const std::uint32_t g = config_.destinations;
  const std::uint32_t sources = config_.sources;
  partition_plan plan;
  plan.sources = sources;
  plan.destinations = g;
  plan.total_records = total_;
  plan.padding = config_.padding;
  plan.passes = passes_;
  const std::size_t pairs = std::size_t{sources} * g;
  plan.counts.assign(pairs, 0);
  plan.send_offsets.assign(pairs, 0);
  plan.receive_offsets.assign(pairs, 0);
  plan.destination_records.assign(g, 0);

  // Each source's records of a leaf occupy [start + earlier sources' records, + its own) in
  // the stable order; a destination takes the part of that within its boundaries.
  const std::vector<std::uint64_t> starts = leaf_starts(leaves_);
  for (std::size_t i = 0; i < leaves_.size(); ++i) {
    std::uint64_t lo = starts[i];
    for (std::uint32_t s = 0; s < sources; ++s) {
      const std::uint64_t hi = lo + leaves_[i].per_source[s];
      if (lo == hi) continue;
      std::uint32_t d = static_cast<std::uint32_t>(
          std::upper_bound(positions_.begin() + 1, positions_.end(), lo) -
          (positions_.begin() + 1));
      for (; d < g && positions_[d] < hi; ++d) {
        const std::uint64_t from = std::max(lo, positions_[d]);
        const std::uint64_t to = std::min(hi, positions_[d + 1]);
        if (from < to) plan.counts[std::size_t{s} * g + d] += to - from;
      }
      lo = hi;
    }
  }

  for (std::uint32_t s = 0; s < sources; ++s)
    for (std::uint32_t d = 1; d < g; ++d)
      plan.send_offsets[std::size_t{s} * g + d] =
          plan.send_offsets[std::size_t{s} * g + d - 1] + plan.counts[std::size_t{s} * g + d - 1];
  for (std::uint32_t d = 0; d < g; ++d) {
    for (std::uint32_t s = 1; s < sources; ++s)
      plan.receive_offsets[std::size_t{s} * g + d] =
          plan.receive_offsets[std::size_t{s - 1} * g + d] +
          plan.counts[std::size_t{s - 1} * g + d];
    plan.destination_records[d] = positions_[d + 1] - positions_[d];
  }

  plan.begins.reserve(g);
  for (std::uint32_t d = 0; d < g; ++d) {
    destination_begin begin{key_bucket{}, std::vector<std::uint64_t>(sources, 0)};
    if (total_ != 0) {
      const std::uint64_t p = positions_[d];
      // Past the last record, every record of the last bucket comes before.
      const std::size_t i = p == total_ ? leaves_.size() - 1 : leaf_at(starts, p);
      begin.bucket = leaves_[i].bucket;
      std::uint64_t lo = starts[i];
      for (std::uint32_t s = 0; s < sources; ++s) {
        const std::uint64_t n = leaves_[i].per_source[s];
        begin.before[s] = std::min(n, p > lo ? p - lo : 0);
        lo += n;
      }
    }
    plan.begins.push_back(std::move(begin));
  }

  for (std::uint32_t d = 0; d < g; ++d)
    GPUSORT_EXPECTS(plan.destination_records[d] <= plan.bound(),
                    "partition plan: destination " + std::to_string(d) + " receives " +
                        std::to_string(plan.destination_records[d]) + " records, more than " +
                        std::to_string(plan.bound()));
  return plan;
}

partition_plan plan_partition(const partition_config& config, const histogram_fn& histograms) {
  partition_planner planner(config);
  while (!planner.done()) {
    const std::vector<std::vector<std::uint64_t>> h =
        histograms(planner.pending(), planner.next_digit_bits());
    planner.add_histograms(h);
  }
  return planner.plan();
}

}  // namespace gpusort
