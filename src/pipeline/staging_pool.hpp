// Page-locked staging between the host and a GPU: the pool both GPU passes (run formation and
// the range sort) take their transfer buffers from, and how large those buffers are.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "gpu/run_former.hpp"
#include "io/buffer_pool.hpp"
#include "pipeline/pipeline_config.hpp"

namespace gpusort::pipeline {

/// Staging buffer size: large pieces for large inputs, small ones where pinning 1 GiB of
/// staging would cost more than the whole sort.
[[nodiscard]] inline std::size_t staging_size(std::optional<std::uint64_t> input_bytes) {
  if (!input_bytes) return max_staging_bytes;
  const std::uint64_t per_buffer = *input_bytes / staging_buffers;
  return static_cast<std::size_t>(
      std::clamp<std::uint64_t>(per_buffer, min_staging_bytes, max_staging_bytes));
}

/// Page-locked buffers handed out by one thread and returned by another.
class staging_pool final : public io::buffer_pool {
 public:
  staging_pool(std::size_t count, std::size_t bytes, int device) : bytes_(bytes) {
    for (std::size_t i = 0; i < count; ++i) {
      buffers_.emplace_back(bytes, device);
      add(buffers_.back().data());
    }
  }
  [[nodiscard]] std::size_t buffer_bytes() const noexcept { return bytes_; }

 private:
  std::size_t bytes_;
  std::vector<gpu::pinned_buffer> buffers_;
};

}  // namespace gpusort::pipeline
