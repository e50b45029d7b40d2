// Kernels of the multi-GPU sort (gpu/multi_gpu_sort.cu): the MSD histogram of pending buckets
// and the stable scatter of a slice by key class. Thin: the host decides buckets and classes.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace gpusort::gpu::detail::multi_gpu {

inline constexpr unsigned max_pending = 64;   ///< buckets one histogram pass refines
inline constexpr unsigned max_classes = 128;  ///< key classes of one scatter (2g - 1 used)
inline constexpr unsigned warp = 32;
inline constexpr unsigned block_threads = 256;
inline constexpr unsigned block_warps = block_threads / warp;
/// Keys one warp scatters in order, as one segment with its own per-class offsets: larger
/// segments mean smaller count arrays, smaller ones more parallelism on small slices.
inline constexpr unsigned segment_rounds = 64;
inline constexpr unsigned segment_keys = warp * segment_rounds;
/// Histogram counters kept per block in shared memory (32 KiB); more go to global atomics.
inline constexpr unsigned shared_histogram_counters = 8192;

/// The buckets of one histogram pass: every key whose top `bucket_bits` bits equal one of
/// `prefixes` (sorted) is counted at [bucket index << digit_bits | next digit].
struct histogram_params {
  std::uint64_t prefixes[max_pending];
  unsigned buckets = 0;
  unsigned key_bits = 64;
  unsigned bucket_bits = 0;
  unsigned digit_bits = 8;
};

/// Key classes: class c holds the keys in [points[c - 1], points[c]) (points sorted, unique).
template <typename Word>
struct class_params {
  Word points[max_classes - 1];
  unsigned count = 0;  ///< points; classes = count + 1
};

inline constexpr unsigned max_pieces = 64;  ///< destinations of one scatter (the slots)

/// Where a scatter's output goes: position i of the slice laid out by class lands in piece d,
/// begin[d] <= i < begin[d + 1], at out[d] + (i - begin[d]). One piece (the scatter buffer)
/// lays the slice out in place; one piece per destination, each in the destination's receive
/// buffer (on a peer GPU or this one), moves the keys there as they are scattered.
template <typename Word>
struct piece_params {
  std::uint64_t begin[max_pieces + 1];
  Word* out[max_pieces];
  unsigned count = 1;
};

template <typename Word>
__device__ inline Word* piece_address(std::uint64_t i, const piece_params<Word>& p) {
  unsigned lo = 0;
  unsigned hi = p.count - 1;  // the last piece whose begin is at or below i
  while (lo < hi) {
    const unsigned mid = (lo + hi + 1) / 2;
    if (p.begin[mid] <= i) lo = mid;
    else hi = mid - 1;
  }
  return p.out[lo] + (i - p.begin[lo]);
}

__device__ inline unsigned lanemask_lt() {
  unsigned mask = 0;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
  return mask;
}

template <typename Word>
__device__ inline unsigned class_of(Word key, const class_params<Word>& p) {
  // g is small: a linear count of the points at or below the key beats a search.
  unsigned c = 0;
  for (unsigned i = 0; i < p.count; ++i) c += key >= p.points[i] ? 1u : 0u;
  return c;
}

/// Index of the bucket counter a key goes to, or -1 when the key is in no pending bucket.
template <typename Word>
__device__ inline int histogram_slot(Word word, const histogram_params& p) {
  const std::uint64_t key = word;
  unsigned bucket = 0;
  if (p.bucket_bits != 0) {
    const std::uint64_t top = key >> (p.key_bits - p.bucket_bits);
    unsigned lo = 0;
    unsigned hi = p.buckets;
    while (lo < hi) {  // lower_bound over the sorted prefixes
      const unsigned mid = (lo + hi) / 2;
      if (p.prefixes[mid] < top) lo = mid + 1;
      else hi = mid;
    }
    if (lo == p.buckets || p.prefixes[lo] != top) return -1;
    bucket = lo;
  }
  const unsigned shift = p.key_bits - p.bucket_bits - p.digit_bits;
  const auto digit = static_cast<unsigned>((key >> shift) & ((std::uint64_t{1} << p.digit_bits) - 1));
  return static_cast<int>(bucket << p.digit_bits | digit);
}

/// Counts into d_counts (buckets << digit_bits, zeroed by the caller). Dynamic shared memory:
/// that many u32 when `use_shared`, else none.
template <typename Word>
__global__ void __launch_bounds__(block_threads)
    histogram_kernel(const Word* keys, std::uint64_t n, histogram_params p,
                     unsigned long long* d_counts, bool use_shared) {
  extern __shared__ unsigned s_counts[];
  const unsigned counters = p.buckets << p.digit_bits;
  if (use_shared) {
    for (unsigned i = threadIdx.x; i < counters; i += blockDim.x) s_counts[i] = 0;
    __syncthreads();
  }
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  // Whole warps iterate together so that equal counters are added once per warp (skewed keys
  // would otherwise serialize on one address).
  const std::uint64_t first = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::uint64_t rounds_end = (n + stride - 1) / stride * stride;
  for (std::uint64_t i = first; i < rounds_end; i += stride) {
    const int slot = i < n ? histogram_slot(keys[i], p) : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, slot);
    if (slot >= 0 && (peers & lanemask_lt()) == 0) {
      const unsigned add = __popc(peers);
      if (use_shared) atomicAdd(&s_counts[slot], add);
      else atomicAdd(&d_counts[slot], static_cast<unsigned long long>(add));
    }
  }
  if (use_shared) {
    __syncthreads();
    for (unsigned i = threadIdx.x; i < counters; i += blockDim.x)
      if (s_counts[i] != 0) atomicAdd(&d_counts[i], static_cast<unsigned long long>(s_counts[i]));
  }
}

/// Per segment (one warp's segment_keys keys) the keys of each class, at
/// d_counts[class * segments + segment]: an exclusive scan of that array gives every segment
/// its first output position per class, classes in key order.
template <typename Word>
__global__ void __launch_bounds__(block_threads)
    class_count_kernel(const Word* keys, std::uint64_t n, class_params<Word> p,
                       std::uint64_t segments, unsigned long long* d_counts) {
  __shared__ unsigned s_counts[block_warps][max_classes + 1];  // + 1: lanes past the end
  const unsigned lane = threadIdx.x % warp;
  const unsigned w = threadIdx.x / warp;
  const std::uint64_t segment = std::uint64_t{blockIdx.x} * block_warps + w;
  if (segment >= segments) return;  // whole warps: no block-wide barrier follows
  const unsigned classes = p.count + 1;
  for (unsigned c = lane; c <= classes; c += warp) s_counts[w][c] = 0;
  __syncwarp();
  const std::uint64_t base = segment * segment_keys;
  for (unsigned r = 0; r < segment_rounds; ++r) {
    const std::uint64_t i = base + r * warp + lane;
    const unsigned c = i < n ? class_of(keys[i], p) : classes;
    const unsigned peers = __match_any_sync(0xffffffffu, c);
    if ((peers & lanemask_lt()) == 0) s_counts[w][c] += __popc(peers);
    __syncwarp();
  }
  for (unsigned c = lane; c < classes; c += warp)
    d_counts[std::uint64_t{c} * segments + segment] = s_counts[w][c];
}

/// Writes each key to its class's region, segments in order and keys of a segment in order:
/// a stable partition of the slice by class, cut into `out`'s pieces. d_offsets: the exclusive
/// scan of class_count's counts.
template <typename Word>
__global__ void __launch_bounds__(block_threads)
    class_scatter_kernel(const Word* keys, std::uint64_t n, class_params<Word> p,
                         std::uint64_t segments, const unsigned long long* d_offsets,
                         piece_params<Word> out) {
  __shared__ unsigned long long s_next[block_warps][max_classes + 1];
  const unsigned lane = threadIdx.x % warp;
  const unsigned w = threadIdx.x / warp;
  const std::uint64_t segment = std::uint64_t{blockIdx.x} * block_warps + w;
  if (segment >= segments) return;
  const unsigned classes = p.count + 1;
  for (unsigned c = lane; c < classes; c += warp)
    s_next[w][c] = d_offsets[std::uint64_t{c} * segments + segment];
  __syncwarp();
  const std::uint64_t base = segment * segment_keys;
  for (unsigned r = 0; r < segment_rounds; ++r) {
    const std::uint64_t i = base + r * warp + lane;
    const bool valid = i < n;
    const Word key = valid ? keys[i] : Word{0};
    const unsigned c = valid ? class_of(key, p) : classes;
    const unsigned peers = __match_any_sync(0xffffffffu, c);
    const unsigned rank = __popc(peers & lanemask_lt());
    if (valid) *piece_address(s_next[w][c] + rank, out) = key;
    __syncwarp();  // every lane has read s_next before the leader moves it on
    if (valid && rank == 0) s_next[w][c] += __popc(peers);
    __syncwarp();
  }
}

}  // namespace gpusort::gpu::detail::multi_gpu
