// Device-resident sort over several GPUs after RMG sort (issue 12 item 2): every GPU holds a
// slice of the keys; MSD histograms → partition plan → scatter by destination, straight into
// the destinations' memory (or into a local buffer, then peer copies) → a local sort per
// destination (CUB Onesweep or the hybrid radix sort, multi_gpu_sort_config::local_algorithm).
// The destinations' ranges, concatenated in order, are the sorted sequence: no merge.
//
// With HRS as the local sort and every pair of slots in reach (fused), the exchange is HRS's
// first counting round: each slot counts its slice's top 8 bits with HRS's histogram pass,
// which is also the planner's first pass; where that pass already puts every destination
// boundary on a digit edge (evenly spread keys), each source scatters its keys by top digit
// straight into the destinations' receive buffers, and each destination sorts from HRS's
// second round on. One pass fewer per key than exchanging first and sorting after; keys that
// need a finer plan (skewed top bits) take the general path. Where the caller holds the slices
// (not in place), a source's keys for other GPUs go through its alternate buffer, free until
// its own local sort: the slice is scattered a section at a time, and each section's pieces
// cross the link by copy engines while the next section is scattered
// (multi_gpu_sort_config::exchange_sections): long copies, not the scatter's short stores.
//
// One host thread drives every GPU, one stream per slot, events between them. A slot is one
// entry of the device list; the same device may appear in several slots, so that the whole
// algorithm, exchange included, runs on a machine with one GPU (slots of one device write or
// copy within it instead of peer to peer).
//
// Device memory per slot (memory()), beside the caller's slice:
//   scatter   the slice laid out by destination              slice records (none when fused)
//   receive   the destination's key range                    bound records
//   alternate the local sort's second buffer                 bound records
//   sort temp the local sort's temporary storage for bound keys (Onesweep's), or HRS's
//             workspace for max(slice, bound) keys (about 0.85 bytes a key), which also
//             serves the slice's first round
//   small     histograms and the scatter's per-segment class counts and offsets (16 bytes per
//             class and 2048 keys: 0.3 % of a slice of u64 keys with 2 slots, 3 classes)
// where bound = ceil(n / g) + 2 * padding (partition_plan::bound(), capped at n), n the keys
// of all slices together and g the slots. Fused (multi_gpu_sort_config::fuse_exchange, where
// every pair of slots reaches the other's memory) the sources write into the receive buffers
// as they scatter. Else the scatter buffer cannot double as the alternate: other slots may
// still be reading it when the local sort starts.
//
// In place (multi_gpu_sort_config::in_place, what the command uses): the sorter holds the
// slices itself, each in a buffer of max(slice, bound) keys. Fused, that buffer is read by the
// slot's own scatter only and is then the local sort's alternate; the receive buffer holds
// bound keys. Else it receives the destination's range, and the scatter buffer, as large, is
// the alternate once every slot has pulled its pieces out of it. Either way a slot needs about
// 2 x max(slice, bound) keys, sort temp and small: 32.3 GiB for 2^31 u64 keys a slot, against
// 64.6 GiB beside the caller's slice.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/partition_plan.hpp"
#include "gpu/chunk_algorithm.hpp"
#include "gpusort/record_format.hpp"

namespace gpusort::gpu {

/// Normalized keys (key_codec: unsigned order is key order) of 32 or 64 bits.
enum class multi_gpu_key : std::uint8_t { u32, u64 };

/// The most slots one sorter drives: the scatter's key classes (at most 2g - 1) and the
/// histogram's pending buckets (at most g - 1) are kernel parameters of fixed size.
inline constexpr std::size_t multi_gpu_max_slots = 64;

struct multi_gpu_sort_config {
  multi_gpu_key key = multi_gpu_key::u64;
  /// Bits per histogram pass (partition_config::digit_bits).
  unsigned digit_bits = 8;
  /// Records a destination boundary may move to keep a bucket whole; unset: the paper's
  /// default, default_padding(n, g).
  std::optional<std::uint64_t> padding;
  /// Each source scatters its keys straight into the destinations' receive buffers, over
  /// NVLink or PCIe peer writes, where every pair of slots reaches the other's memory: no
  /// exchange copies. False, or where some pair cannot: the slice is laid out by destination
  /// in a scatter buffer, and the destinations copy their pieces out of it.
  bool fuse_exchange = true;
  /// The sorter holds the slices (filled by copy_in()) and sort_in_place()
  /// overwrites them; see the file comment. sort() is then unavailable.
  bool in_place = false;
  /// How sort_in_place() reads the keys: a numeric key type of the key's width, ascending or
  /// not. Keys are normalized on the GPUs before the sort and restored after (key_codec);
  /// u32 and u64 ascending need neither.
  key_type type = key_type::u64;
  bool descending = false;
  /// How each destination sorts its range: Onesweep (CUB) or the hybrid radix sort. Equal
  /// keys are alike in a key-only sort, so HRS's unstable order cannot be seen.
  chunk_algorithm local_algorithm = chunk_algorithm::onesweep;
  /// Where the exchange is HRS's first round and the caller holds the slices (not in place),
  /// each source scatters the keys bound for other GPUs into its alternate buffer (free until
  /// its own local sort) a section at a time, and copy engines move each section's pieces over
  /// the link while the next section is scattered: long copies instead of the scatter's short
  /// stores across the link. At most this many sections a slice, each of at least
  /// hrs::min_section_keys keys; 0 (or a slice too small for two sections): scatter straight
  /// into the peers.
  std::uint32_t exchange_sections = 8;
  /// Where some source stages, each destination sorts its smallest digits (about half its
  /// keys) as soon as they have arrived, while the others still cross the link, then the
  /// others (first_round_layout).
  bool exchange_overlap = true;
};

/// The most sections multi_gpu_sort_config::exchange_sections may ask for.
inline constexpr std::uint32_t multi_gpu_max_sections = 64;

/// Whether the command's exchange sort (strategy gpu_exchange) takes records of `format`:
/// key-only records of a numeric key (the key's bytes are the whole record, so the order of
/// equal keys cannot be seen).
[[nodiscard]] bool exchange_supports(const record_format& format) noexcept;

/**
 * Device memory per slot for an in-place sort of `records` keys of `key_bytes` each split
 * equally among `slots` slots (the default padding), on `device`, ranges sorted by `local`
 * (onesweep or hrs): what reserve() would take of each. No sorter needed; asks CUB on
 * `device`.
 * @throw gpusort::error when a destination could receive 2^32 keys or more
 */
[[nodiscard]] std::uint64_t exchange_slot_bytes(std::uint64_t records, std::uint32_t key_bytes,
                                                std::size_t slots, int device,
                                                chunk_algorithm local);

/// One slot's input: `records` keys at `d_keys` on the slot's device. The sort reads them only.
struct multi_gpu_slice {
  const void* d_keys = nullptr;
  std::uint64_t records = 0;
};

/// Device memory one slot needs, in bytes (see the file comment).
struct multi_gpu_memory {
  std::uint64_t scatter = 0;
  std::uint64_t receive = 0;
  std::uint64_t alternate = 0;
  std::uint64_t sort_temp = 0;
  std::uint64_t small = 0;
  [[nodiscard]] std::uint64_t total() const noexcept {
    return scatter + receive + alternate + sort_temp + small;
  }
};

/// Milliseconds per phase of one sort. Device phases are the slowest slot's, from CUDA events
/// on that slot's device; exchange runs from the end of the slot's own scatter to the arrival
/// of the keys its local sort starts with (every incoming key, or the early digits' where the
/// first round's destinations sort in two groups; so it includes waiting for slower sources).
struct multi_gpu_phase_ms {
  double histogram = 0;  ///< host clock: every pass, launches to counts on the host
  double plan = 0;       ///< host clock: the planner's work between the passes
  double scatter = 0;
  double exchange = 0;
  double local_sort = 0;
  double total = 0;  ///< host clock: sort() from call to return
};

/// One destination's sorted key range, in the sorter's memory.
struct multi_gpu_range {
  std::size_t slot = 0;
  int device = 0;
  const void* d_keys = nullptr;
  std::uint64_t records = 0;
};

struct multi_gpu_result {
  /// Per slot, in key order: their concatenation is the sorted sequence. Valid until the next
  /// sort() or reserve() on the sorter, or its destruction.
  std::vector<multi_gpu_range> ranges;
  partition_plan plan;
  multi_gpu_phase_ms ms;
  /// Whether the exchange was the hybrid radix sort's first round (see the file comment):
  /// the histogram was HRS's, and the scatter sorted by top digit as it moved the keys.
  bool first_round_exchange = false;
  /// The most sections a source's keys for other GPUs crossed the link in, through its
  /// alternate buffer and copy engines (multi_gpu_sort_config::exchange_sections); 0 where
  /// every source stored its keys straight into the peers.
  std::uint32_t staged_sections = 0;
};

/**
 * Sorts device-resident keys spread over the slots' GPUs. Owns streams, events and the
 * workspace; move-only. Not thread-safe: one sort at a time.
 * @throw gpusort::error for an empty list, more than multi_gpu_max_slots slots or a bad
 *        digit_bits; gpusort::cuda_error (naming the slot's device) when a device cannot be
 *        used or peer access cannot be enabled
 */
class multi_gpu_sorter {
 public:
  multi_gpu_sorter(std::vector<int> devices, const multi_gpu_sort_config& config);
  ~multi_gpu_sorter();
  multi_gpu_sorter(multi_gpu_sorter&&) noexcept;
  multi_gpu_sorter& operator=(multi_gpu_sorter&&) noexcept;
  multi_gpu_sorter(const multi_gpu_sorter&) = delete;
  multi_gpu_sorter& operator=(const multi_gpu_sorter&) = delete;

  [[nodiscard]] const std::vector<int>& devices() const noexcept;
  [[nodiscard]] std::size_t slots() const noexcept;
  [[nodiscard]] std::uint32_t key_bytes() const noexcept;
  /// Whether the sources scatter straight into the destinations (fuse_exchange, and every
  /// pair of slots reaches the other's memory).
  [[nodiscard]] bool fused() const noexcept;

  /// Device memory each slot needs to sort slices of these sizes (one entry per slot), before
  /// anything is allocated. Queries CUB on each slot's device.
  /// @throw gpusort::error when a destination could receive 2^32 keys or more (the local
  ///        sort's limit), gpusort::cuda_error
  [[nodiscard]] std::vector<multi_gpu_memory> memory(
      std::span<const std::uint64_t> slice_records) const;

  /// Allocates (or grows) the workspace for slices of these sizes, so that sort() allocates
  /// nothing. @throw as memory(), gpusort::out_of_memory naming the slot's device
  void reserve(std::span<const std::uint64_t> slice_records);

  /**
   * Sorts the keys of all slices (slices[i] on devices()[i]) ascending.
   * - Reserves the workspace first when it is too small.
   * - Synchronous: returns once every slot's range is sorted; the caller's streams are not
   *   used, and the slices must not be written until it returns.
   * @throw gpusort::error on a wrong number of slices, as memory() and reserve();
   *        gpusort::cuda_error naming the slot, its device and the phase on any CUDA failure
   */
  [[nodiscard]] multi_gpu_result sort(std::span<const multi_gpu_slice> slices);

  /// In place only: copies `host` (page-locked) to byte `offset` of the slot's slice, after
  /// reserve() for the slices' sizes. Synchronous, on the slot's stream; one thread per slot
  /// may copy at once.
  /// @throw gpusort::error past the slice buffer, gpusort::cuda_error
  void copy_in(std::size_t slot, std::uint64_t offset, std::span<const std::byte> host);

  /**
   * In place only: sorts the keys that copy_in() put in the slices (slice_records[i] keys in
   * slot i), ascending in the order of config.type and config.descending, and restores their
   * bytes. The slices are gone afterwards: the ranges lie in the sorter's buffers.
   * @throw as sort(); gpusort::error when reserve() was not called for these sizes
   */
  [[nodiscard]] multi_gpu_result sort_in_place(std::span<const std::uint64_t> slice_records);

  /// Copies bytes [offset, offset + host.size()) of a sorted range to `host` (page-locked).
  /// Synchronous, on the range's slot's stream. @throw gpusort::error past the range,
  /// gpusort::cuda_error
  void copy_out(const multi_gpu_range& range, std::uint64_t offset, std::span<std::byte> host);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// "u32" / "u64".
[[nodiscard]] std::string to_string(multi_gpu_key key);

}  // namespace gpusort::gpu
