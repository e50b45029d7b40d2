// memcpy and memmove of large ranges split across TBB worker threads: one thread copies about
// 12 GB/s, sixteen about 50 GB/s.
#pragma once

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace gpusort::detail {

/// Bytes each task copies.
inline constexpr std::size_t parallel_copy_grain = std::size_t{4} << 20;

/// memcpy of non-overlapping ranges.
inline void parallel_copy(std::byte* dst, const std::byte* src, std::size_t bytes) {
  constexpr std::size_t grain = parallel_copy_grain;
  if (bytes == 0) return;  // the pointers of empty ranges may be null, which memcpy forbids
  if (bytes <= grain) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const std::size_t blocks = (bytes + grain - 1) / grain;
  tbb::parallel_for(std::size_t{0}, blocks, [&](std::size_t b) {
    const std::size_t begin = b * grain;
    std::memcpy(dst + begin, src + begin, std::min(grain, bytes - begin));
  });
}

/// memmove of `bytes` from `src` down to `dst` (dst <= src; the ranges may overlap): pieces
/// no longer than the distance go one after another, so that none overwrites bytes still to be
/// read, each piece copied in parallel. A distance shorter than a grain moves on one thread.
inline void parallel_move_down(std::byte* dst, const std::byte* src, std::size_t bytes) {
  if (bytes == 0) return;  // as parallel_copy
  const auto distance = static_cast<std::size_t>(src - dst);
  if (distance < parallel_copy_grain || bytes <= parallel_copy_grain) {
    std::memmove(dst, src, bytes);
    return;
  }
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t piece = std::min(distance, bytes - done);
    parallel_copy(dst + done, src + done, piece);
    done += piece;
  }
}

}  // namespace gpusort::detail
