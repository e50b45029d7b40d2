// Tuning policies of the record kernels (key transform, split, merge), chosen per GPU
// generation; printed by run_former::describe().
#pragma once

#include <ostream>

namespace gpusort::gpu {

/// Launch shape of a memory-bound kernel: each block handles block_threads * items_per_thread
/// items (keys or records) per tile.
struct kernel_policy {
  int block_threads = 256;
  int items_per_thread = 4;

  [[nodiscard]] constexpr int tile_items() const { return block_threads * items_per_thread; }
  friend constexpr bool operator==(const kernel_policy&, const kernel_policy&) = default;
  friend std::ostream& operator<<(std::ostream& os, const kernel_policy& p) {
    return os << p.block_threads << "x" << p.items_per_thread;
  }
};

/// Hopper (sm_90). The kernels are bound by device memory bandwidth; 256 threads with 4 items
/// each keeps enough 16-byte loads in flight, and a record tile (4 KiB..16 KiB of shared
/// memory for 4..16-byte records) leaves room for several blocks per multiprocessor.
struct sm90_policies {
  /// In-place key normalization over 16-byte vectors: items are vectors here.
  static constexpr kernel_policy transform{256, 4};
  /// AoS records <-> (keys, payload): items are records; tile_items must be a multiple of 16
  /// so that every tile starts 16-byte aligned whatever the record size.
  static constexpr kernel_policy records{256, 4};
};
static_assert(sm90_policies::records.tile_items() % 16 == 0);

}  // namespace gpusort::gpu
