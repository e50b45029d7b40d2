// Large host allocations: anonymous mappings with transparent huge pages, aligned to a huge
// page when they are that large, optionally on a preferred NUMA node, optionally
// first-touched in parallel (a fresh page costs a fault and a zeroing; 16 threads fault about
// 15 GB/s, one thread far less).
#pragma once

#include <cstddef>
#include <span>
#include <utility>

#include "core/unique_mapping.hpp"

namespace gpusort {

/// Move-only owner of an anonymous mapping. @throw gpusort::out_of_memory
class host_buffer {
 public:
  host_buffer() = default;
  /// `prefault`: touch every page now, in parallel, instead of on first use. `numa_node`
  /// (when not negative): pages come from that node where it has them (MPOL_PREFERRED; memory
  /// a GPU copies from is best on the GPU's own node), else from any.
  explicit host_buffer(std::size_t bytes, bool prefault = false, int numa_node = -1);
  host_buffer(host_buffer&& other) noexcept
      : mapping_(std::move(other.mapping_)),
        size_(std::exchange(other.size_, 0)),
        discarded_(std::exchange(other.discarded_, 0)) {}
  host_buffer& operator=(host_buffer&& other) noexcept {
    mapping_ = std::move(other.mapping_);
    size_ = std::exchange(other.size_, 0);
    discarded_ = std::exchange(other.discarded_, 0);
    return *this;
  }

  [[nodiscard]] std::byte* data() const noexcept { return mapping_.data(); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::span<std::byte> span() const noexcept { return {data(), size_}; }

  /// What discard() gives back in: huge pages, so that none is split into small ones.
  static constexpr std::size_t discard_grain = std::size_t{2} << 20;
  /// Gives the memory of the discard_grain pages wholly inside [offset, offset + bytes) back
  /// to the system: memory whose records are consumed, returned while the buffer's other
  /// records are still in use. Reading the range again yields zeros.
  void discard(std::size_t offset, std::size_t bytes) noexcept;
  /// Bytes that discard() gave back, where its calls named disjoint ranges (a merge that gives
  /// back what it has consumed): what is left to free is size() less this.
  [[nodiscard]] std::size_t discarded_bytes() const noexcept { return discarded_; }

 private:
  unique_mapping mapping_;  // whole pages
  std::size_t size_ = 0;
  std::size_t discarded_ = 0;
};

}  // namespace gpusort
