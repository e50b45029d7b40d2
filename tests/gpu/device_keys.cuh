// Device-resident test and benchmark keys: the distributions of the HRS paper's evaluation
// (uniform, Thearling's AND of q uniform words, all equal, Zipf, sorted, reverse) generated on
// the GPU from a counter-based hash, so that 2^30 keys cost milliseconds; and a device compare.
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "gpu/cuda_check.cuh"

namespace gpusort::test {

enum class key_dist : std::uint8_t { uniform, and_words, equal, zipf, sorted, reverse };

/// A distribution: and_words is Q of "AND of Q uniform words" (Q = 1 is uniform, as
/// gpusort-datagen's and:Q).
struct key_distribution {
  key_dist what = key_dist::uniform;
  unsigned and_words = 1;

  [[nodiscard]] std::string name() const {
    switch (what) {
      case key_dist::uniform: return "uniform";
      case key_dist::and_words: return "and" + std::to_string(and_words);
      case key_dist::equal: return "equal";
      case key_dist::zipf: return "zipf";
      case key_dist::sorted: return "sorted";
      case key_dist::reverse: return "reverse";
    }
    return "?";
  }
};

namespace device_keys_detail {

__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <typename Key>
__global__ void generate_kernel(Key* keys, std::uint64_t n, key_distribution dist,
                                std::uint64_t seed) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  constexpr double key_space = sizeof(Key) == 4 ? 4294967296.0 : 18446744073709551616.0;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    std::uint64_t k = 0;
    switch (dist.what) {
      case key_dist::uniform:
        k = mix64(seed ^ (i * 0xd1b54a32d192ed03ull));
        break;
      case key_dist::and_words:
        k = ~std::uint64_t{0};
        for (unsigned q = 0; q < dist.and_words; ++q)
          k &= mix64(seed + q * 0x632be59bd9b4e019ull ^ (i * 0xd1b54a32d192ed03ull));
        break;
      case key_dist::equal:
        k = mix64(seed);
        break;
      case key_dist::zipf: {
        // Ranks with P(r) ~ 1/r over [1, 2^32] (Zipf, exponent 1, drawn log-uniformly), each
        // rank mapped to a scattered key: a few keys are very frequent, most are rare.
        const double u = (mix64(seed ^ (i * 0xd1b54a32d192ed03ull)) >> 11) * 0x1.0p-53;
        const auto rank = static_cast<std::uint64_t>(exp(u * 22.18070977791825));  // ln 2^32
        k = mix64(rank * 0x9fb21c651e98df25ull + seed);
        break;
      }
      case key_dist::sorted:
        k = static_cast<std::uint64_t>(static_cast<double>(i) * (key_space / (n + 1.0)));
        break;
      case key_dist::reverse:
        k = static_cast<std::uint64_t>(static_cast<double>(n - 1 - i) * (key_space / (n + 1.0)));
        break;
    }
    keys[i] = static_cast<Key>(k);
  }
}

template <typename Key>
__global__ void compare_kernel(const Key* a, const Key* b, std::uint64_t n,
                               unsigned long long* mismatches, unsigned long long* first) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    if (a[i] != b[i]) {
      atomicAdd(mismatches, 1ull);
      atomicMin(first, static_cast<unsigned long long>(i));
    }
  }
}

template <typename Value>
__global__ void index_kernel(Value* values, std::uint64_t n) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    values[i] = static_cast<Value>(i);
}

template <typename Key, typename Value>
__global__ void pair_hash_kernel(const Key* keys, const Value* values, std::uint64_t n,
                                 unsigned long long* sum) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  std::uint64_t local = 0;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride)
    local += mix64(std::uint64_t{keys[i]} * 0x9fb21c651e98df25ull ^ std::uint64_t{values[i]});
  atomicAdd(sum, static_cast<unsigned long long>(local));
}

template <typename Key>
__global__ void key_check_kernel(const Key* keys, std::uint64_t n, unsigned long long* sum,
                                 unsigned long long* descents) {
  const std::uint64_t stride = std::uint64_t{gridDim.x} * blockDim.x;
  std::uint64_t local = 0;
  std::uint64_t local_descents = 0;
  for (std::uint64_t i = std::uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    local += mix64(std::uint64_t{keys[i]} * 0x9fb21c651e98df25ull);
    if (i + 1 < n && keys[i + 1] < keys[i]) ++local_descents;
  }
  atomicAdd(sum, static_cast<unsigned long long>(local));
  atomicAdd(descents, static_cast<unsigned long long>(local_descents));
}

inline constexpr int threads = 256;
inline constexpr int max_blocks = 4096;

inline int grid_for(std::uint64_t n) {
  const std::uint64_t blocks = (n + threads - 1) / threads;
  return static_cast<int>(blocks < max_blocks ? (blocks == 0 ? 1 : blocks) : max_blocks);
}

}  // namespace device_keys_detail

/// Fills d_keys[0, n) with `dist`, deterministically from `seed`. Asynchronous on `stream`.
template <typename Key>
void generate_keys(Key* d_keys, std::uint64_t n, key_distribution dist, std::uint64_t seed,
                   cudaStream_t stream) {
  if (n == 0) return;
  device_keys_detail::generate_kernel<Key>
      <<<device_keys_detail::grid_for(n), device_keys_detail::threads, 0, stream>>>(d_keys, n,
                                                                                   dist, seed);
  GPUSORT_CUDA_CHECK_LAUNCH();
}

/// Fills d_values[0, n) with the record index (as the run former's key + index pairs).
template <typename Value>
void generate_indices(Value* d_values, std::uint64_t n, cudaStream_t stream) {
  if (n == 0) return;
  device_keys_detail::index_kernel<Value>
      <<<device_keys_detail::grid_for(n), device_keys_detail::threads, 0, stream>>>(d_values, n);
  GPUSORT_CUDA_CHECK_LAUNCH();
}

struct compare_result {
  std::uint64_t mismatches = 0;
  std::uint64_t first = 0;  ///< first differing index (meaningful when mismatches > 0)
};

/// Compares a[0, n) with b[0, n) on the device; `d_scratch` holds two u64. Synchronizes.
template <typename Key>
compare_result compare_keys(const Key* a, const Key* b, std::uint64_t n,
                            unsigned long long* d_scratch, cudaStream_t stream) {
  const unsigned long long init[2] = {0, ~0ull};
  GPUSORT_CUDA_TRY(cudaMemcpyAsync(d_scratch, init, sizeof init, cudaMemcpyHostToDevice, stream));
  if (n != 0) {
    device_keys_detail::compare_kernel<Key>
        <<<device_keys_detail::grid_for(n), device_keys_detail::threads, 0, stream>>>(
            a, b, n, d_scratch, d_scratch + 1);
    GPUSORT_CUDA_CHECK_LAUNCH();
  }
  unsigned long long out[2] = {};
  GPUSORT_CUDA_TRY(cudaMemcpyAsync(out, d_scratch, sizeof out, cudaMemcpyDeviceToHost, stream));
  GPUSORT_CUDA_TRY(cudaStreamSynchronize(stream));
  return {out[0], out[1]};
}

/// Order-independent hash of the multiset of (key, value) pairs; `d_scratch` holds one u64.
/// Synchronizes.
template <typename Key, typename Value>
std::uint64_t pair_multiset_hash(const Key* keys, const Value* values, std::uint64_t n,
                                 unsigned long long* d_scratch, cudaStream_t stream) {
  GPUSORT_CUDA_TRY(cudaMemsetAsync(d_scratch, 0, sizeof(unsigned long long), stream));
  if (n != 0) {
    device_keys_detail::pair_hash_kernel<Key, Value>
        <<<device_keys_detail::grid_for(n), device_keys_detail::threads, 0, stream>>>(
            keys, values, n, d_scratch);
    GPUSORT_CUDA_CHECK_LAUNCH();
  }
  unsigned long long out = 0;
  GPUSORT_CUDA_TRY(cudaMemcpyAsync(&out, d_scratch, sizeof out, cudaMemcpyDeviceToHost, stream));
  GPUSORT_CUDA_TRY(cudaStreamSynchronize(stream));
  return out;
}

/// What a sort without an oracle can be checked by: an order-free hash of the multiset of keys,
/// and how many neighbours are out of order.
struct key_check {
  std::uint64_t multiset_hash = 0;
  std::uint64_t descents = 0;  ///< i with keys[i + 1] < keys[i]
};

/// key_check of d_keys[0, n); `d_scratch` holds two u64. Synchronizes.
template <typename Key>
key_check check_keys(const Key* keys, std::uint64_t n, unsigned long long* d_scratch,
                     cudaStream_t stream) {
  GPUSORT_CUDA_TRY(cudaMemsetAsync(d_scratch, 0, 2 * sizeof(unsigned long long), stream));
  if (n != 0) {
    device_keys_detail::key_check_kernel<Key>
        <<<device_keys_detail::grid_for(n), device_keys_detail::threads, 0, stream>>>(
            keys, n, d_scratch, d_scratch + 1);
    GPUSORT_CUDA_CHECK_LAUNCH();
  }
  unsigned long long out[2] = {};
  GPUSORT_CUDA_TRY(cudaMemcpyAsync(out, d_scratch, sizeof out, cudaMemcpyDeviceToHost, stream));
  GPUSORT_CUDA_TRY(cudaStreamSynchronize(stream));
  return {out[0], out[1]};
}

}  // namespace gpusort::test
