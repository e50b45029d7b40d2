// The partition plan of a multi-GPU sort: which key range each destination GPU receives and
// how many records each source GPU sends it, from histograms of the keys' most significant
// bits (MSD radix partitioning, after RMG sort). Plain data and host arithmetic only, so that
// the same plan can drive peer copies between GPUs today and an exchange between hosts later.
//
// How the plan is made
// - Keys are normalized (gpusort::detail::key_codec: unsigned order equals key order) and
//   `key_bits` wide. A bucket is every key with the same top `bits` bits; buckets are refined
//   digit by digit (`digit_bits` per pass), most significant first.
// - Destination d ideally begins at global record position floor(d * n / g): every
//   destination then holds floor(n / g) or ceil(n / g) records. Positions count the records
//   in key order, equal keys in stable order (source by source, each in its input order).
// - After each pass the planner lays the leaf buckets out in key order and looks at every
//   ideal boundary. One that falls on a bucket edge is kept. One that falls inside a bucket
//   moves to the nearer edge of that bucket (ties to its start) when that edge is at most
//   `padding` records away (the paper's epsilon padding, which spares a pass for buckets that
//   overflow a destination slightly). Otherwise the bucket spans two destinations and is
//   refined on its next digit in the next pass (its histograms are asked for, per source).
// - A spanning bucket with no bits left holds one key only: the boundary splits it at the
//   exact position, by records. Equal keys may go to either side without breaking the order;
//   taking them in stable order (source by source) keeps a stable sort stable.
//
// What the plan guarantees
// - Destination d receives one contiguous range of the global order: every key it holds is
//   >= every key of destination d-1, and where a key is split, the records of destination d-1
//   come first in stable order. Each source sends destination d one contiguous range of its
//   records laid out by leaf bucket (equal keys in input order): concatenating destination
//   d's pieces in source order and sorting them stably gives exactly its part of the stable
//   sort of the whole input.
// - Each destination receives at most ceil(n / g) + 2 * padding records: each of its two
//   boundaries moves at most `padding` records from the ideal one (plan() checks it).
// - At most ceil(key_bits / digit_bits) passes, each refining at most g - 1 buckets.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace gpusort {

/// Every normalized key whose top `bits` bits are `prefix` (bits 0: every key).
struct key_bucket {
  std::uint64_t prefix = 0;
  unsigned bits = 0;

  friend bool operator==(const key_bucket&, const key_bucket&) = default;
};

/// Bits per histogram pass: 2^digit_bits counters per bucket and source.
inline constexpr unsigned min_digit_bits = 1;
inline constexpr unsigned max_digit_bits = 16;

/// The paper measured the fewest partitioning passes with a padding of 0.5% of each GPU's
/// share: the default padding is that share divided by this.
inline constexpr std::uint64_t default_padding_divisor = 200;

struct partition_config {
  unsigned key_bits = 64;          ///< width of the normalized key, 1..64
  unsigned digit_bits = 8;         ///< bits per pass, min_digit_bits..max_digit_bits
  std::uint32_t sources = 1;       ///< GPUs that hold input slices, >= 1
  std::uint32_t destinations = 1;  ///< GPUs that receive key ranges, >= 1
  /// Records a destination boundary may move to keep a bucket whole (see the file comment).
  std::uint64_t padding = 0;
};

/// ceil(records / destinations) / default_padding_divisor.
[[nodiscard]] std::uint64_t default_padding(std::uint64_t records, std::uint32_t destinations);

/// Where a destination's range begins: after every bucket below `bucket`, and after the first
/// `before[s]` records of `bucket` from each source s, in that source's input order. Nonzero
/// counts only where the range begins inside a bucket of one key (or at the end of the input,
/// where the last bucket is all before).
struct destination_begin {
  key_bucket bucket;
  std::vector<std::uint64_t> before;  ///< per source
};

/// What moves where. Counts and offsets are records.
struct partition_plan {
  std::uint32_t sources = 1;
  std::uint32_t destinations = 1;
  std::uint64_t total_records = 0;
  std::uint64_t padding = 0;
  unsigned passes = 0;  ///< histogram passes it took
  std::vector<destination_begin> begins;          ///< per destination, in key order
  std::vector<std::uint64_t> destination_records;  ///< per destination
  /// Per (source, destination), index source * destinations + destination.
  std::vector<std::uint64_t> counts;
  /// Where the piece starts among the source's records, laid out by leaf bucket.
  std::vector<std::uint64_t> send_offsets;
  /// Where the piece lands in the destination: pieces in source order.
  std::vector<std::uint64_t> receive_offsets;

  [[nodiscard]] std::uint64_t count(std::uint32_t source, std::uint32_t destination) const {
    return counts[index(source, destination)];
  }
  [[nodiscard]] std::uint64_t send_offset(std::uint32_t source, std::uint32_t destination) const {
    return send_offsets[index(source, destination)];
  }
  [[nodiscard]] std::uint64_t receive_offset(std::uint32_t source,
                                             std::uint32_t destination) const {
    return receive_offsets[index(source, destination)];
  }
  /// The most records any destination may receive: ceil(n / g) + 2 * padding.
  [[nodiscard]] std::uint64_t bound() const noexcept;

 private:
  [[nodiscard]] std::size_t index(std::uint32_t source, std::uint32_t destination) const {
    return std::size_t{source} * destinations + destination;
  }
};

/**
 * Builds a partition plan pass by pass: ask pending() for the buckets whose histograms the
 * next pass needs, give them to add_histograms(), until done(); then plan().
 * - The first pass asks for the whole key space (one bucket of 0 bits): the histogram of the
 *   top digit_bits bits of every source's keys.
 * @throw gpusort::error on an invalid config (key_bits, digit_bits, sources, destinations)
 */
class partition_planner {
 public:
  explicit partition_planner(const partition_config& config);

  /// Buckets to refine next, in key order; empty once done().
  [[nodiscard]] const std::vector<key_bucket>& pending() const noexcept { return pending_; }
  /// Bits of the next histograms: min(digit_bits, key_bits - pending buckets' bits).
  [[nodiscard]] unsigned next_digit_bits() const noexcept;
  /// Counters per source the next add_histograms() takes: pending().size() << next_digit_bits().
  [[nodiscard]] std::size_t next_histogram_size() const noexcept;

  /**
   * One histogram pass: `per_source[s]` holds, for each pending bucket in order, the counts of
   * source s's keys in that bucket by their next digit (next_histogram_size() counters).
   * @throw gpusort::error when the sizes do not match, or a refined bucket's counts do not add
   *        up to what the previous pass counted (a histogram of other keys)
   */
  void add_histograms(std::span<const std::vector<std::uint64_t>> per_source);

  [[nodiscard]] bool done() const noexcept { return passes_ > 0 && pending_.empty(); }

  /// The plan. @throw gpusort::error before done()
  [[nodiscard]] partition_plan plan() const;

 private:
  struct leaf {
    key_bucket bucket;
    std::vector<std::uint64_t> per_source;
    std::uint64_t total = 0;
  };
  /// Destination boundaries on the current leaves; fills pending_ with the spanning buckets.
  void place_boundaries();

  partition_config config_;
  std::vector<leaf> leaves_;  // in key order, empty buckets left out
  std::uint64_t total_ = 0;
  unsigned passes_ = 0;
  std::vector<key_bucket> pending_;
  std::vector<std::uint64_t> positions_;  // boundary d (1..g-1) once nothing spans; 0 and n
};

/// Histograms for `buckets` by their next `digit_bits` bits, per source (the add_histograms
/// layout): computed on the GPUs, or on the host in tests.
using histogram_fn = std::function<std::vector<std::vector<std::uint64_t>>(
    std::span<const key_bucket> buckets, unsigned digit_bits)>;

/// Runs partition_planner to the end with `histograms` answering every pass.
/// @throw gpusort::error as partition_planner, and whatever `histograms` throws
[[nodiscard]] partition_plan plan_partition(const partition_config& config,
                                            const histogram_fn& histograms);

}  // namespace gpusort
