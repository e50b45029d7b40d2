// Large host allocations: anonymous mappings with transparent huge pages, aligned to a huge
// page when they are that large, optionally first-touched in parallel (a fresh page costs a
// fault and a zeroing; 16 threads fault about 15 GB/s, one thread far less).
#pragma once

#include <cstddef>
#include <span>

namespace gpusort {

/// Move-only owner of an anonymous mapping. @throw gpusort::out_of_memory
class host_buffer {
 public:
  host_buffer() = default;
  /// `prefault`: touch every page now, in parallel, instead of on first use.
  explicit host_buffer(std::size_t bytes, bool prefault = false);
  ~host_buffer();
  host_buffer(host_buffer&& other) noexcept;
  host_buffer& operator=(host_buffer&& other) noexcept;
  host_buffer(const host_buffer&) = delete;
  host_buffer& operator=(const host_buffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::span<std::byte> span() const noexcept { return {data_, size_}; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;
};

}  // namespace gpusort
