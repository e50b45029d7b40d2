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
/// Rounds of a segment whose keys a lane loads before it handles the first: loads in flight.
/// The scatter stages that many rounds of a warp in shared memory (batch_keys keys).
inline constexpr unsigned batch_rounds = 8;
inline constexpr unsigned batch_keys = warp * batch_rounds;
static_assert(segment_rounds % batch_rounds == 0, "a segment is whole batches");
/// Keys per thread of one histogram tile, loaded before the first is counted.
inline constexpr unsigned histogram_items = 8;
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
  const auto digit =
      static_cast<unsigned>((key >> shift) & ((std::uint64_t{1} << p.digit_bits) - 1));
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
  // A block takes tiles of histogram_items keys per thread, all of a thread's loads issued
  // before the first is counted. The pass still runs at about 1 TB/s (2^30 u64 keys in 8.6 ms
  // on an H100, 9.1 ms one load at a time): its atomics bound it, not its loads.
  // Whole warps iterate together so that equal counters are added once per warp (skewed keys
  // would otherwise serialize on one address).
  constexpr std::uint64_t tile = std::uint64_t{block_threads} * histogram_items;
  const std::uint64_t tiles = (n + tile - 1) / tile;
  for (std::uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const std::uint64_t first = t * tile + threadIdx.x;
    Word word[histogram_items];
#pragma unroll
    for (unsigned j = 0; j < histogram_items; ++j) {
      const std::uint64_t i = first + std::uint64_t{j} * block_threads;
      word[j] = i < n ? keys[i] : Word{0};
    }
#pragma unroll
    for (unsigned j = 0; j < histogram_items; ++j) {
      const std::uint64_t i = first + std::uint64_t{j} * block_threads;
      const int slot = i < n ? histogram_slot(word[j], p) : -1;
      const unsigned peers = __match_any_sync(0xffffffffu, slot);
      if (slot >= 0 && (peers & lanemask_lt()) == 0) {
        const unsigned add = __popc(peers);
        if (use_shared) atomicAdd(&s_counts[slot], add);
        else atomicAdd(&d_counts[slot], static_cast<unsigned long long>(add));
      }
    }
  }
  if (use_shared) {
    __syncthreads();
    for (unsigned i = threadIdx.x; i < counters; i += blockDim.x)
      if (s_counts[i] != 0) atomicAdd(&d_counts[i], static_cast<unsigned long long>(s_counts[i]));
  }
}

/// A lane's keys of one batch: keys[first + j * warp] for each of its rounds j (0 past n),
/// every load issued before the first key is used.
template <typename Word>
__device__ inline void load_batch(const Word* keys, std::uint64_t n, std::uint64_t first,
                                  Word (&key)[batch_rounds]) {
#pragma unroll
  for (unsigned j = 0; j < batch_rounds; ++j) {
    const std::uint64_t i = first + std::uint64_t{j} * warp;
    key[j] = i < n ? keys[i] : Word{0};
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
  for (unsigned r0 = 0; r0 < segment_rounds; r0 += batch_rounds) {
    Word key[batch_rounds];
    load_batch(keys, n, base + r0 * warp + lane, key);
#pragma unroll
    for (unsigned j = 0; j < batch_rounds; ++j) {
      const std::uint64_t i = base + (r0 + j) * warp + lane;
      const unsigned c = i < n ? class_of(key[j], p) : classes;
      const unsigned peers = __match_any_sync(0xffffffffu, c);
      if ((peers & lanemask_lt()) == 0) s_counts[w][c] += __popc(peers);
      __syncwarp();
    }
  }
  for (unsigned c = lane; c < classes; c += warp)
    d_counts[std::uint64_t{c} * segments + segment] = s_counts[w][c];
}

/// Exclusive prefix sums of counts[0..entries) into starts[0..entries], by one warp (entries
/// at most max_classes + 1).
__device__ inline void warp_exclusive_scan(const unsigned* counts, unsigned* starts,
                                           unsigned entries, unsigned lane) {
  constexpr unsigned per_lane = (max_classes + 1 + warp - 1) / warp;
  const unsigned begin = lane * per_lane;
  unsigned own = 0;
  for (unsigned k = 0; k < per_lane; ++k)
    if (begin + k < entries) own += counts[begin + k];
  unsigned inclusive = own;
  for (unsigned d = 1; d < warp; d *= 2) {
    const unsigned up = __shfl_up_sync(0xffffffffu, inclusive, d);
    if (lane >= d) inclusive += up;
  }
  unsigned running = inclusive - own;
  for (unsigned k = 0; k < per_lane; ++k) {
    if (begin + k < entries) {
      starts[begin + k] = running;
      running += counts[begin + k];
    }
  }
  if (lane == warp - 1) starts[entries] = inclusive;
}

/// Writes each key to its class's region, segments in order and keys of a segment in order:
/// a stable partition of the slice by class, cut into `out`'s pieces. d_offsets: the exclusive
/// scan of class_count's counts.
///
/// A warp stages batch_rounds rounds of its segment in shared memory, grouped by class, and
/// then writes each class's keys as one contiguous run: stores of whole lines, which matters
/// most where a piece lies on a peer GPU and every store crosses NVLink (2^31 u64 keys on two
/// H100s: 19.5 ms one round at a time, 17.1 ms grouped).
template <typename Word>
__global__ void __launch_bounds__(block_threads)
    class_scatter_kernel(const Word* keys, std::uint64_t n, class_params<Word> p,
                         std::uint64_t segments, const unsigned long long* d_offsets,
                         piece_params<Word> out) {
  __shared__ unsigned long long s_next[block_warps][max_classes + 1];
  __shared__ unsigned s_count[block_warps][max_classes + 1];      // + 1: lanes past the end
  __shared__ unsigned s_start[block_warps][max_classes + 2];
  __shared__ Word s_keys[block_warps][batch_keys];
  __shared__ unsigned char s_class[block_warps][batch_keys];
  static_assert(max_classes <= 256, "a staged key's class is kept in one byte");
  const unsigned lane = threadIdx.x % warp;
  const unsigned w = threadIdx.x / warp;
  const std::uint64_t segment = std::uint64_t{blockIdx.x} * block_warps + w;
  if (segment >= segments) return;
  const unsigned classes = p.count + 1;
  for (unsigned c = lane; c < classes; c += warp)
    s_next[w][c] = d_offsets[std::uint64_t{c} * segments + segment];
  for (unsigned c = lane; c <= classes; c += warp) s_count[w][c] = 0;
  __syncwarp();
  const std::uint64_t base = segment * segment_keys;
  for (unsigned r0 = 0; r0 < segment_rounds; r0 += batch_rounds) {
    Word key[batch_rounds];
    unsigned cls[batch_rounds];
    unsigned rank[batch_rounds];
    load_batch(keys, n, base + r0 * warp + lane, key);
    // Rank of each key among the batch's keys of its class, in input order.
#pragma unroll
    for (unsigned j = 0; j < batch_rounds; ++j) {
      const std::uint64_t i = base + (r0 + j) * warp + lane;
      cls[j] = i < n ? class_of(key[j], p) : classes;
      const unsigned peers = __match_any_sync(0xffffffffu, cls[j]);
      const unsigned before = peers & lanemask_lt();
      rank[j] = s_count[w][cls[j]] + __popc(before);
      __syncwarp();  // every lane has read the count before the leader moves it on
      if (before == 0) s_count[w][cls[j]] += __popc(peers);
      __syncwarp();
    }
    // Keys past the end (class `classes`) come last and are not written.
    warp_exclusive_scan(s_count[w], s_start[w], classes + 1, lane);
    __syncwarp();
#pragma unroll
    for (unsigned j = 0; j < batch_rounds; ++j) {
      if (cls[j] < classes) {
        const unsigned at = s_start[w][cls[j]] + rank[j];
        s_keys[w][at] = key[j];
        s_class[w][at] = static_cast<unsigned char>(cls[j]);
      }
    }
    __syncwarp();
    const unsigned staged = s_start[w][classes];
    for (unsigned q = lane; q < staged; q += warp) {
      const unsigned c = s_class[w][q];
      *piece_address(s_next[w][c] + (q - s_start[w][c]), out) = s_keys[w][q];
    }
    __syncwarp();
    for (unsigned c = lane; c <= classes; c += warp) {
      if (c < classes) s_next[w][c] += s_count[w][c];
      s_count[w][c] = 0;
    }
    __syncwarp();
  }
}

}  // namespace gpusort::gpu::detail::multi_gpu
