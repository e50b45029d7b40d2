// Sequential merge kernels of the multiway merge: a branch-free two-way merge and a loser tree
// (tournament tree that keeps each match's loser) for three or more runs, each steppable so that
// one thread can interleave two independent merges. All are stable: equal keys come out in run
// order, and in run-internal order within a run.
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "cpu/merge_keys.hpp"

namespace gpusort::cpu::detail {

/// A range of records of one run, possibly empty.
struct run_slice {
  const std::byte* begin;
  const std::byte* end;
};

/// How the loser tree prefetches its runs. With many runs the hardware prefetchers lose track of
/// the streams, and a line still in DRAM when its run's turn comes stalls the merge: from
/// `block_prefetch_min_runs` runs on, each run is fetched into the L2 a block ahead, the block's
/// lines asked for together when the cursor enters the block before it (100-byte records in 64
/// runs merged 1.3x faster than with one prefetch per record, on the H100 machine; at 4 and 16
/// runs the bursts slowed them down). Every run is also prefetched into the L1 a few records
/// ahead.
inline constexpr std::size_t prefetch_block = 4096;
inline constexpr std::uint32_t block_prefetch_min_runs = 32;

/// How far ahead of its cursor a run is prefetched into the L1: four records, within
/// [128, 512] bytes (shorter measured faster for 8- and 16-byte records, longer for 100-byte).
[[nodiscard]] inline std::size_t l1_prefetch_distance(std::size_t record_size) {
  return std::clamp<std::size_t>(4 * record_size, 128, 512);
}

/// A two-way merge of a and b into dst in progress; on equal keys a goes first.
template <typename Keys, std::uint32_t RecordSize>
class two_way_merge {
 public:
  two_way_merge(const Keys& keys, record_stride<RecordSize> stride, run_slice a, run_slice b,
                std::byte* dst)
      : keys_(keys),
        stride_(stride),
        pa_(reinterpret_cast<std::uintptr_t>(a.begin)),
        pb_(reinterpret_cast<std::uintptr_t>(b.begin)),
        a_end_(reinterpret_cast<std::uintptr_t>(a.end)),
        b_end_(reinterpret_cast<std::uintptr_t>(b.end)),
        dst_(dst) {}

  /// Steps that cannot exhaust either input: each step takes one record, so neither runs out
  /// within min(left_a, left_b) steps, and those need no bounds checks.
  [[nodiscard]] std::size_t safe_steps() const {
    return std::min(a_end_ - pa_, b_end_ - pb_) / stride_.size();
  }

  /// Emits one record; requires safe_steps() > 0.
  void step() {
    const std::size_t size = stride_.size();
    const bool take_b = keys_.less(keys_.load(reinterpret_cast<const std::byte*>(pb_)),
                                   keys_.load(reinterpret_cast<const std::byte*>(pa_)));
    // Cursors are integers so that picking one is arithmetic: on random keys the choice is a
    // coin flip, and compilers turn `c ? pa : pb` on pointers into a mispredicted jump.
    const std::uintptr_t mask = std::uintptr_t{0} - static_cast<std::uintptr_t>(take_b);
    stride_.copy(dst_, reinterpret_cast<const std::byte*>(pa_ ^ ((pa_ ^ pb_) & mask)));
    dst_ += size;
    pa_ += size & ~mask;
    pb_ += size & mask;
  }

  /// Emits everything left.
  void finish() {
    for (std::size_t n = safe_steps(); n != 0; n = safe_steps()) {
      for (; n != 0; --n) step();
    }
    if (pa_ != a_end_) std::memcpy(dst_, reinterpret_cast<const std::byte*>(pa_), a_end_ - pa_);
    dst_ += a_end_ - pa_;
    if (pb_ != b_end_) std::memcpy(dst_, reinterpret_cast<const std::byte*>(pb_), b_end_ - pb_);
    dst_ += b_end_ - pb_;
    pa_ = a_end_;
    pb_ = b_end_;
  }

 private:
  Keys keys_;
  record_stride<RecordSize> stride_;
  std::uintptr_t pa_;
  std::uintptr_t pb_;
  std::uintptr_t a_end_;
  std::uintptr_t b_end_;
  std::byte* dst_;
};

/// Merges a and b into dst; on equal keys a goes first.
template <typename Keys, std::uint32_t RecordSize>
void merge_two(const Keys& keys, record_stride<RecordSize> stride, run_slice a, run_slice b,
               std::byte* dst) {
  two_way_merge<Keys, RecordSize> merge(keys, stride, a, b, dst);
  merge.finish();
}

/// A loser tree (tournament tree that keeps each match's loser) over any number of slices,
/// empty ones included, emitting one record per step(); on equal keys the lower-numbered slice
/// goes first. Meant to live on the stack of the function that steps it, so that the compiler
/// can keep its scalars in registers.
template <typename Keys, std::uint32_t RecordSize>
class loser_tree {
 public:
  loser_tree(const Keys& keys, record_stride<RecordSize> stride,
             std::span<const run_slice> slices, std::byte* dst)
      : keys_(keys), stride_(stride), dst_(dst) {
    const std::size_t size = stride_.size();
    const auto runs = static_cast<std::uint32_t>(slices.size());
    leaves_ = std::bit_ceil(std::max<std::uint32_t>(runs, 1));
    block_prefetch_ = runs >= block_prefetch_min_runs;
    l1_distance_ = l1_prefetch_distance(size);
    cur_.assign(leaves_, nullptr);
    end_.assign(leaves_, nullptr);
    std::uint64_t bytes = 0;
    for (std::uint32_t s = 0; s < runs; ++s) {
      cur_[s] = slices[s].begin;
      end_[s] = slices[s].end;
      bytes += static_cast<std::uint64_t>(end_[s] - cur_[s]);
    }
    remaining_ = bytes / size;

    // Play the first tournament bottom-up: node i's winner goes up, its loser stays in tree_[i].
    tree_.resize(leaves_);
    std::vector<entry> winners(2 * std::size_t{leaves_});
    for (std::uint32_t s = 0; s < leaves_; ++s) winners[leaves_ + s] = head(s);
    for (std::uint32_t node = leaves_ - 1; node >= 1; --node) {
      entry loser = winners[2 * node];
      entry winner = winners[2 * node + 1];
      keys_.play(loser, winner);
      winners[node] = winner;
      tree_[node] = loser;
    }
    winner_ = winners[1];
  }

  /// Records step() has still to emit.
  [[nodiscard]] std::uint64_t remaining() const { return remaining_; }

  /// Emits the smallest record left; requires remaining() > 0.
  void step() {
    const std::size_t size = stride_.size();
    const std::uint32_t s = winner_.run;
    stride_.copy(dst_, cur_[s]);
    dst_ += size;
    const auto before = reinterpret_cast<std::uintptr_t>(cur_[s]);
    cur_[s] += size;
    prefetch(before, before + size);
    --remaining_;
    entry e = head(s);
    // Replay the winner's path: at each node the newcomer meets the best of the subtree on the
    // other side of the path.
    for (std::uint32_t node = (s + leaves_) >> 1; node != 0; node >>= 1) keys_.play(tree_[node], e);
    winner_ = e;
  }

  /// Emits everything left.
  void finish() {
    while (remaining_ != 0) step();
  }

 private:
  using entry = typename Keys::tree_entry;

  /// Prefetches for a cursor that moved from `before` to `after` (integer addresses: they may
  /// lie past the run's end, where a pointer may not point).
  void prefetch(std::uintptr_t before, std::uintptr_t after) const {
    if (block_prefetch_ && (before ^ after) >= prefetch_block) [[unlikely]] {
      const std::uintptr_t next = (after & ~std::uintptr_t{prefetch_block - 1}) + prefetch_block;
      for (std::size_t line = 0; line < prefetch_block; line += 64)
        __builtin_prefetch(reinterpret_cast<const void*>(next + line), 0, 2);
    }
    __builtin_prefetch(reinterpret_cast<const void*>(after + l1_distance_));
  }

  [[nodiscard]] entry head(std::uint32_t s) const {
    return cur_[s] != end_[s] ? keys_.tree_load(cur_[s], s) : Keys::tree_sentinel(s);
  }

  Keys keys_;
  record_stride<RecordSize> stride_;
  std::byte* dst_;
  std::uint32_t leaves_ = 1;
  bool block_prefetch_ = false;
  std::size_t l1_distance_ = 0;
  std::vector<const std::byte*> cur_;
  std::vector<const std::byte*> end_;
  std::vector<entry> tree_;  ///< tree_[1..leaves_): the losers
  entry winner_{};
  std::uint64_t remaining_ = 0;
};

/// Merges the slices into dst with a loser tree.
template <typename Keys, std::uint32_t RecordSize>
void merge_loser_tree(const Keys& keys, record_stride<RecordSize> stride,
                      std::span<const run_slice> slices, std::byte* dst) {
  loser_tree<Keys, RecordSize> tree(keys, stride, slices, dst);
  tree.finish();
}

/// Two independent merges (each a loser_tree or a two_way_merge), stepped in turn: one merge is
/// a chain of dependent compares, and interleaving two lets the core overlap them (measured
/// 1.1-1.6x for 3 to 256 runs).
template <typename Merge>
void run_interleaved(Merge& a, Merge& b) {
  if constexpr (requires { a.remaining(); }) {
    for (std::uint64_t n = std::min(a.remaining(), b.remaining()); n != 0; --n) {
      a.step();
      b.step();
    }
  } else {
    for (std::size_t n = std::min(a.safe_steps(), b.safe_steps()); n != 0;
         n = std::min(a.safe_steps(), b.safe_steps())) {
      for (; n != 0; --n) {
        a.step();
        b.step();
      }
    }
  }
  a.finish();
  b.finish();
}

}  // namespace gpusort::cpu::detail
