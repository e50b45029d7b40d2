// Block- and warp-level building blocks of the hybrid radix sort: digit extraction, warp peer
// matching, block reductions and scans over any block size that is a multiple of 32, the
// in-register sorting network of the histogram's per-thread reduction (section 4.3), and the
// two ways a counting pass codes a key's digit (8 bits, or a zero digit with the next 8).
#pragma once

#include <cstdint>

#include <cuda_pipeline.h>

#include "gpu/hrs/hrs_tuning.cuh"

namespace gpusort::gpu::hrs::block {

inline constexpr std::uint32_t full_mask = 0xffffffffu;

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x & (warp_threads - 1); }
__device__ __forceinline__ unsigned warp_id() { return threadIdx.x / warp_threads; }
__device__ __forceinline__ unsigned warp_count() { return blockDim.x / warp_threads; }
/// Bit i set for every lane i below this one.
__device__ __forceinline__ std::uint32_t lanes_below() { return (1u << lane_id()) - 1u; }

/// The `radix_bits`-bit digit of `key` that starts at bit `shift`.
template <typename Key>
__device__ __forceinline__ std::uint32_t digit_of(Key key, unsigned shift) {
  return static_cast<std::uint32_t>(key >> shift) & (radix - 1);
}

/**
 * A key block read in 16-byte vectors (a quarter of the load instructions of 32-bit keys): the
 * whole aligned vectors, and the few keys before the first (head) and after the last (tail),
 * which the first threads read one each. The order in which a thread block reads its keys does
 * not matter to a histogram or to an unstable partition.
 */
template <typename Key>
struct vector_block {
  static constexpr int per_vector = static_cast<int>(sizeof(uint4) / sizeof(Key));
  const Key* keys;
  std::uint32_t count;
  std::uint32_t head;     ///< keys before the first vector
  std::uint32_t vectors;  ///< whole vectors
  std::uint32_t tail;     ///< the first key after them

  __device__ __forceinline__ vector_block(const Key* first, std::uint32_t n)
      : keys(first), count(n) {
    const auto misalign = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(first) % 16);
    const std::uint32_t before = (16u - misalign) % 16u / static_cast<std::uint32_t>(sizeof(Key));
    head = before < n ? before : n;
    vectors = (n - head) / per_vector;
    tail = head + vectors * per_vector;
  }
  /// Vector v (below `vectors`).
  __device__ __forceinline__ uint4 vector(std::uint32_t v) const {
    return reinterpret_cast<const uint4*>(keys + head)[v];
  }
  /// The index of element e of vector v.
  __device__ __forceinline__ std::uint32_t index(std::uint32_t v, int e) const {
    return head + v * per_vector + static_cast<std::uint32_t>(e);
  }
  /// The index of the head or tail key that thread t reads, or `count` where it reads none.
  __device__ __forceinline__ std::uint32_t edge(unsigned t) const {
    if (t < head) return t;
    const std::uint32_t i = tail + (t - head);
    return i < count ? i : count;
  }
  /// The keys of a vector.
  __device__ __forceinline__ static void unpack(const uint4& word, Key (&out)[per_vector]) {
    __builtin_memcpy(out, &word, sizeof(word));
  }
};

/// Where copy_to_shared puts element 0 of `from` in a shared buffer that starts at `base`: at
/// the alignment (mod 16 bytes) it has in device memory, so that whole vectors copy as vectors.
/// The buffer holds 16 bytes more than the elements.
template <typename T>
__device__ __forceinline__ T* staged_in(T* base, const T* from) {
  return base + reinterpret_cast<std::uintptr_t>(from) % sizeof(uint4) / sizeof(T);
}

/// Starts copying from[0..n) to staged_in(base, from) (cp.async, 16 bytes at a time where whole
/// vectors lie, a quarter of the instructions of one element at a time for 32-bit elements).
/// Every thread of the block calls it; the caller commits and waits.
template <typename T>
__device__ __forceinline__ void copy_to_shared(T* base, const T* from, std::uint32_t n) {
  const vector_block<T> span(from, n);
  T* to = staged_in(base, from);
  const auto* from_vectors = reinterpret_cast<const uint4*>(from + span.head);
  auto* to_vectors = reinterpret_cast<uint4*>(to + span.head);
  for (std::uint32_t v = threadIdx.x; v < span.vectors; v += blockDim.x)
    __pipeline_memcpy_async(to_vectors + v, from_vectors + v, sizeof(uint4));
  if (const std::uint32_t e = span.edge(threadIdx.x); e < n)
    __pipeline_memcpy_async(to + e, from + e, sizeof(T));
}

/// Combining operations of the reductions and scans below.
struct op_sum {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct op_min {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return b < a ? b : a; }
};
struct op_max {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a < b ? b : a; }
};
struct op_or {
  template <typename T>
  __device__ __forceinline__ T operator()(T a, T b) const { return a | b; }
};

/// Inclusive scan across the warp.
template <typename T, typename Op>
__device__ __forceinline__ T warp_inclusive_scan(T x, Op op) {
#pragma unroll
  for (int offset = 1; offset < warp_threads; offset <<= 1) {
    const T y = __shfl_up_sync(full_mask, x, offset);
    if (static_cast<int>(lane_id()) >= offset) x = op(y, x);
  }
  return x;
}

/// The reduction of every thread's `x`, returned to all threads. `scratch` holds one T per warp.
/// Every thread of the block calls it; it synchronizes the block twice.
template <typename T, typename Op>
__device__ __forceinline__ T all_reduce(T x, Op op, T* scratch) {
#pragma unroll
  for (int offset = warp_threads / 2; offset > 0; offset >>= 1)
    x = op(x, __shfl_xor_sync(full_mask, x, offset));
  if (lane_id() == 0) scratch[warp_id()] = x;
  __syncthreads();
  T r = scratch[0];
  for (unsigned w = 1; w < warp_count(); ++w) r = op(r, scratch[w]);
  __syncthreads();  // scratch may be reused at once
  return r;
}

/**
 * The OR of every thread's `x`, returned to all threads, behind one barrier: each warp reduces
 * (a redux instruction for 32 bits, a shuffle tree for 64) and its first lane ORs the result into
 * `*word` in shared memory. `*word` must be zero on entry and stays set: the caller zeroes it
 * again once a later barrier has passed every thread's read (all_reduce takes two barriers and
 * a shuffle tree, which the local sort pays per job).
 */
template <typename T>
__device__ __forceinline__ T all_or(T x, T* word) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  T warp_or = x;
  if constexpr (sizeof(T) == 4) {
    warp_or = static_cast<T>(__reduce_or_sync(full_mask, static_cast<std::uint32_t>(x)));
  } else {
    // Two redux instructions here made ptxas spill 50 more bytes in the local sort of 64-bit
    // pairs than this shuffle tree.
#pragma unroll
    for (int offset = warp_threads / 2; offset > 0; offset >>= 1)
      warp_or |= __shfl_xor_sync(full_mask, warp_or, offset);
  }
  if (lane_id() == 0 && warp_or != 0) {
    if constexpr (sizeof(T) == 4) atomicOr(reinterpret_cast<unsigned*>(word), warp_or);
    else atomicOr(reinterpret_cast<unsigned long long*>(word), warp_or);
  }
  __syncthreads();
  return *word;
}

/**
 * Exclusive scan over the threads of the block in thread order: thread t gets
 * op(identity, x_0, ..., x_{t-1}); `*total` (if not null) receives the reduction of all. `scratch`
 * holds one T per warp. Every thread calls it; it synchronizes the block twice.
 */
template <typename T, typename Op>
__device__ __forceinline__ T exclusive_scan(T x, Op op, T identity, T* scratch,
                                            T* total = nullptr) {
  const T inclusive = warp_inclusive_scan(x, op);
  if (lane_id() == warp_threads - 1) scratch[warp_id()] = inclusive;
  __syncthreads();
  // Every warp scans the warps' totals itself (a shuffle scan, not a loop of shared loads).
  const unsigned warps = warp_count();
  const T warp_totals = warp_inclusive_scan(lane_id() < warps ? scratch[lane_id()] : identity, op);
  const unsigned w = warp_id();
  const T earlier = __shfl_sync(full_mask, warp_totals, w == 0 ? 0 : w - 1);
  const T before = w == 0 ? identity : earlier;  // reduction of the earlier warps
  if (total != nullptr) *total = __shfl_sync(full_mask, warp_totals, warps - 1);
  T in_warp = __shfl_up_sync(full_mask, inclusive, 1);
  if (lane_id() == 0) in_warp = identity;
  __syncthreads();  // scratch may be reused at once
  return op(before, in_warp);
}

/**
 * In-place exclusive prefix sum of the counters a[0..count) in shared memory, for any block
 * size: each thread takes a run of consecutive counters. Returns the sum to all threads.
 * `scratch` holds one T per warp. Every thread calls it; the caller synchronizes before (the
 * counters are complete) and this synchronizes after (the prefixes are visible). With `over`,
 * the same barrier also tells every thread whether any counter exceeded `limit`.
 */
template <typename T>
__device__ __forceinline__ T exclusive_sum(T* a, unsigned count, T* scratch, T limit = 0,
                                           bool* over = nullptr) {
  const unsigned per = (count + blockDim.x - 1) / blockDim.x;
  const unsigned begin = threadIdx.x * per < count ? threadIdx.x * per : count;
  const unsigned end = begin + per < count ? begin + per : count;
  T sum = 0;
  bool above = false;
  for (unsigned i = begin; i < end; ++i) {
    sum += a[i];
    above |= a[i] > limit;
  }
  T total = 0;
  T prefix = exclusive_scan(sum, op_sum{}, T{0}, scratch, &total);
  for (unsigned i = begin; i < end; ++i) {
    const T c = a[i];
    a[i] = prefix;
    prefix += c;
  }
  if (over != nullptr) *over = __syncthreads_or(above) != 0;
  else __syncthreads();
  return total;
}

/// exclusive_sum over the radix counters a[0..radix).
template <typename T>
__device__ __forceinline__ T exclusive_sum_radix(T* a, T* scratch) {
  return exclusive_sum(a, radix, scratch);
}

/// Compare-exchange of two registers (ascending).
__device__ __forceinline__ void compare_exchange(std::uint32_t& a, std::uint32_t& b) {
  const std::uint32_t lo = min(a, b);
  b = max(a, b);
  a = lo;
}

/**
 * Sorts v[First, First + N) ascending with a bitonic network (N a power of two). The indices are
 * compile-time constants once unrolled, so the values stay in registers.
 */
template <int First, int N, int Size>
__device__ __forceinline__ void sort_network(std::uint32_t (&v)[Size]) {
  static_assert((N & (N - 1)) == 0 && First + N <= Size);
#pragma unroll
  for (int k = 2; k <= N; k <<= 1) {
#pragma unroll
    for (int j = k >> 1; j > 0; j >>= 1) {
#pragma unroll
      for (int i = 0; i < N; ++i) {
        const int l = i ^ j;
        if (l > i) {
          if ((i & k) == 0) compare_exchange(v[First + i], v[First + l]);
          else compare_exchange(v[First + l], v[First + i]);
        }
      }
    }
  }
}

/// Sorts each group of Group consecutive registers of v (Size a multiple of Group).
template <int Group, int First = 0, int Size>
__device__ __forceinline__ void sort_groups(std::uint32_t (&v)[Size]) {
  static_assert(Size % Group == 0);
  sort_network<First, Group>(v);
  if constexpr (First + Group < Size) sort_groups<Group, First + Group>(v);
}

/**
 * This thread's keys of a key block read in 16-byte vectors (Kpt of them, vector i at
 * i * blockDim.x + threadIdx.x): labels[k] = label_of(key) and visit(key) for each, `none`
 * where the block has no key. The block's unaligned edge keys are the caller's (span.edge).
 */
template <int Kpt, typename Key, typename LabelOf, typename Visit>
__device__ __forceinline__ void read_labels(const vector_block<Key>& span,
                                            std::uint32_t (&labels)[Kpt], std::uint32_t none,
                                            LabelOf label_of, Visit visit) {
  constexpr int per_vector = vector_block<Key>::per_vector;
  static_assert(Kpt % per_vector == 0);
#pragma unroll
  for (int i = 0; i < Kpt / per_vector; ++i) {
    const std::uint32_t v = static_cast<std::uint32_t>(i) * blockDim.x + threadIdx.x;
    if (v < span.vectors) {
      Key vk[per_vector];
      span.unpack(span.vector(v), vk);
#pragma unroll
      for (int e = 0; e < per_vector; ++e) {
        labels[i * per_vector + e] = label_of(vk[e]);
        visit(vk[e]);
      }
    } else {
#pragma unroll
      for (int e = 0; e < per_vector; ++e) labels[i * per_vector + e] = none;
    }
  }
}

/**
 * Sorts each group of Group consecutive labels and calls add(label, run) once per run of equal
 * labels, leaving out `none` (the largest label): a counter of skewed keys takes one atomic per
 * run instead of one per key.
 */
template <int Group, int Kpt, typename Add>
__device__ __forceinline__ void add_label_runs(std::uint32_t (&labels)[Kpt], std::uint32_t none,
                                               Add add) {
  sort_groups<Group>(labels);
#pragma unroll
  for (int g = 0; g < Kpt; g += Group) {
    std::uint32_t run = 1;
#pragma unroll
    for (int i = 0; i < Group; ++i) {
      const std::uint32_t d = labels[g + i];
      const std::uint32_t next = i + 1 < Group ? labels[g + i + 1 < Kpt ? g + i + 1 : g + i]
                                               : none + 1;
      if (next != d) {
        if (d != none) add(d, run);
        run = 1;
      } else {
        ++run;
      }
    }
  }
}

}  // namespace gpusort::gpu::hrs::block

namespace gpusort::gpu::hrs {

/// A counting pass's digit codes: the 8-bit digit at the bucket's shift.
struct byte_digits {
  static constexpr std::uint32_t bins = radix;
  template <typename Key>
  __device__ __forceinline__ static std::uint32_t code_of(Key key, unsigned shift) {
    return block::digit_of(key, shift);
  }
  /// The bits a sub-bucket of `code` has taken.
  __host__ __device__ static constexpr unsigned bits_of(std::uint32_t) { return radix_bits; }
};

/**
 * Digit codes where a zero digit takes the next 8 bits too: code c < radix is digit 0 followed
 * by byte c, code radix - 1 + d is digit d > 0 (511 codes, in key order). Keys with few ones
 * (AND-ed words) put most of a bucket into digit 0, which then needs a pass of its own; here it
 * is split in the same pass. Where no bits follow the digit (shift 0), digit 0 is code 0.
 */
struct zero_extended_digits {
  static constexpr std::uint32_t bins = extended_bins;
  template <typename Key>
  __device__ __forceinline__ static std::uint32_t code_of(Key key, unsigned shift) {
    const std::uint32_t d = block::digit_of(key, shift);
    // The byte below the digit; the key's top byte shifted out keeps shift 0 defined.
    const std::uint32_t below = block::digit_of(static_cast<Key>(key << radix_bits), shift);
    return d != 0 ? d + (radix - 1) : below;
  }
  __host__ __device__ static constexpr unsigned bits_of(std::uint32_t code) {
    return code < radix ? 2 * radix_bits : radix_bits;
  }
};

}  // namespace gpusort::gpu::hrs
