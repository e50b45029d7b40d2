// Thin __global__ kernels around the sort: in-place key normalization for key-only records, and
// the split (AoS records -> normalized keys + packed payload) and join (back) of key+payload
// records. Template parameters are the launch shape (tuning.cuh); launched only from
// dispatch_kernels.cu.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/block_tile.cuh"
#include "gpu/record_layout.cuh"
#include "gpusort/detail/host_device.hpp"
#include "gpusort/detail/key_codec.hpp"

namespace gpusort::gpu::detail {

using u128 = unsigned __int128;

GPUSORT_HD u128 shl128(u128 v, unsigned bits) { return bits >= 128 ? 0 : v << bits; }
GPUSORT_HD u128 shr128(u128 v, unsigned bits) { return bits >= 128 ? 0 : v >> bits; }
GPUSORT_HD u128 low_bits128(unsigned bits) {
  return bits >= 128 ? ~u128(0) : (u128(1) << bits) - 1;
}

/// Splits a record held in the low bytes of a u128 into its key and its payload: the bytes
/// before the key, then the bytes after it, packed little-endian from bit 0.
template <typename Word>
GPUSORT_HD void split_record_bits(u128 rec, unsigned key_offset, Word& key,
                                  std::uint64_t& payload) {
  const unsigned key_shift = 8 * key_offset;
  key = static_cast<Word>(rec >> key_shift);
  payload = static_cast<std::uint64_t>(
      (rec & low_bits128(key_shift)) |
      (shr128(rec, key_shift + 8 * unsigned(sizeof(Word))) << key_shift));
}

/// Inverse of split_record_bits.
template <typename Word>
GPUSORT_HD u128 join_record_bits(Word key, std::uint64_t payload, unsigned key_offset) {
  const unsigned key_shift = 8 * key_offset;
  const u128 p = payload;
  return (p & low_bits128(key_shift)) | (u128(key) << key_shift) |
         shl128(p >> key_shift, key_shift + 8 * unsigned(sizeof(Word)));
}

/// Reads one record (<= 16 bytes) from shared memory into the low bytes of a u128.
GPUSORT_HD u128 load_record(const unsigned char* p, std::uint32_t size) {
  u128 v = 0;
  if ((size & 3u) == 0) {  // word-aligned records: fewer shared-memory transactions
    const auto* w = reinterpret_cast<const std::uint32_t*>(p);
    for (std::uint32_t i = 0; i < size / 4; ++i) v |= u128(w[i]) << (32 * i);
  } else {
    for (std::uint32_t i = 0; i < size; ++i) v |= u128(p[i]) << (8 * i);
  }
  return v;
}

GPUSORT_HD void store_record(unsigned char* p, std::uint32_t size, u128 v) {
  if ((size & 3u) == 0) {
    auto* w = reinterpret_cast<std::uint32_t*>(p);
    for (std::uint32_t i = 0; i < size / 4; ++i) w[i] = static_cast<std::uint32_t>(v >> (32 * i));
  } else {
    for (std::uint32_t i = 0; i < size; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
  }
}

/// Applies the codec to both halves (u64) or all four words (u32) of a 16-byte vector.
template <typename Word, bool Normalize>
__device__ __forceinline__ uint4 transform_vector(uint4 v,
                                                  const gpusort::detail::key_codec<Word>& codec) {
  auto apply = [&](Word w) { return Normalize ? codec.normalize(w) : codec.denormalize(w); };
  if constexpr (sizeof(Word) == 4) {
    v.x = apply(v.x);
    v.y = apply(v.y);
    v.z = apply(v.z);
    v.w = apply(v.w);
  } else {
    const Word lo = apply(Word(v.x) | (Word(v.y) << 32));
    const Word hi = apply(Word(v.z) | (Word(v.w) << 32));
    v.x = static_cast<std::uint32_t>(lo);
    v.y = static_cast<std::uint32_t>(lo >> 32);
    v.z = static_cast<std::uint32_t>(hi);
    v.w = static_cast<std::uint32_t>(hi >> 32);
  }
  return v;
}

/**
 * Normalizes (or denormalizes) `n` keys in place. `keys` must be 16-byte aligned. The bulk is
 * processed as 16-byte vectors, all loads of a thread issued before the first store; block 0
 * finishes the few keys past the last whole vector.
 */
template <typename Word, bool Normalize, int BlockThreads, int ItemsPerThread>
__global__ void __launch_bounds__(BlockThreads)
    transform_keys_kernel(Word* keys, std::uint64_t n, gpusort::detail::key_codec<Word> codec) {
  constexpr std::uint64_t words_per_vector = 16 / sizeof(Word);
  const std::uint64_t vectors = n / words_per_vector;
  auto* v = reinterpret_cast<uint4*>(keys);
  constexpr std::uint64_t tile = BlockThreads * ItemsPerThread;
  for (std::uint64_t base = std::uint64_t(blockIdx.x) * tile; base < vectors;
       base += std::uint64_t(gridDim.x) * tile) {
    uint4 items[ItemsPerThread];
#pragma unroll
    for (int k = 0; k < ItemsPerThread; ++k) {
      const std::uint64_t i = base + std::uint64_t(k) * BlockThreads + threadIdx.x;
      if (i < vectors) items[k] = v[i];
    }
#pragma unroll
    for (int k = 0; k < ItemsPerThread; ++k) {
      const std::uint64_t i = base + std::uint64_t(k) * BlockThreads + threadIdx.x;
      if (i < vectors) v[i] = transform_vector<Word, Normalize>(items[k], codec);
    }
  }
  if (blockIdx.x == 0) {
    const std::uint64_t i = vectors * words_per_vector + threadIdx.x;
    if (i < n) keys[i] = Normalize ? codec.normalize(keys[i]) : codec.denormalize(keys[i]);
  }
}

/**
 * Splits `n` AoS records into normalized keys and packed payloads (the record's other bytes in
 * order, little-endian, zero-extended to Value). Tiles of records are staged through shared
 * memory so that global reads are coalesced 16-byte loads whatever the record size; keys and
 * values are written coalesced. `records` must be 16-byte aligned; outputs must not overlap it.
 */
template <typename Word, typename Value, int BlockThreads, int ItemsPerThread>
__global__ void __launch_bounds__(BlockThreads)
    split_records_kernel(const std::byte* __restrict__ records, Word* __restrict__ keys,
                         Value* __restrict__ values, std::uint64_t n, record_layout layout,
                         gpusort::detail::key_codec<Word> codec) {
  constexpr std::uint32_t tile_items = BlockThreads * ItemsPerThread;
  __shared__ record_tile<tile_items> tile;
  const std::uint32_t size = layout.record_size;
  for (std::uint64_t first = std::uint64_t(blockIdx.x) * tile_items; first < n;
       first += std::uint64_t(gridDim.x) * tile_items) {
    const auto count = static_cast<std::uint32_t>(n - first < tile_items ? n - first : tile_items);
    load_tile<BlockThreads>(tile.vectors, records + first * size, count * size);
    __syncthreads();
    const auto* bytes = reinterpret_cast<const unsigned char*>(tile.vectors);
#pragma unroll
    for (int k = 0; k < ItemsPerThread; ++k) {
      const std::uint32_t r = std::uint32_t(k) * BlockThreads + threadIdx.x;
      if (r < count) {
        Word key;
        std::uint64_t payload;
        split_record_bits<Word>(load_record(bytes + r * size, size), layout.key_offset, key,
                                payload);
        keys[first + r] = codec.normalize(key);
        values[first + r] = static_cast<Value>(payload);
      }
    }
    __syncthreads();  // the next tile reuses the shared memory
  }
}

/// Inverse of split_records_kernel: denormalizes keys and reassembles AoS records.
template <typename Word, typename Value, int BlockThreads, int ItemsPerThread>
__global__ void __launch_bounds__(BlockThreads)
    join_records_kernel(const Word* __restrict__ keys, const Value* __restrict__ values,
                         std::byte* __restrict__ records, std::uint64_t n, record_layout layout,
                         gpusort::detail::key_codec<Word> codec) {
  constexpr std::uint32_t tile_items = BlockThreads * ItemsPerThread;
  __shared__ record_tile<tile_items> tile;
  const std::uint32_t size = layout.record_size;
  for (std::uint64_t first = std::uint64_t(blockIdx.x) * tile_items; first < n;
       first += std::uint64_t(gridDim.x) * tile_items) {
    const auto count = static_cast<std::uint32_t>(n - first < tile_items ? n - first : tile_items);
    auto* bytes = reinterpret_cast<unsigned char*>(tile.vectors);
#pragma unroll
    for (int k = 0; k < ItemsPerThread; ++k) {
      const std::uint32_t r = std::uint32_t(k) * BlockThreads + threadIdx.x;
      if (r < count) {
        const u128 rec =
            join_record_bits<Word>(codec.denormalize(keys[first + r]),
                                   std::uint64_t{values[first + r]}, layout.key_offset);
        store_record(bytes + r * size, size, rec);
      }
    }
    __syncthreads();
    store_tile<BlockThreads>(records + first * size, tile.vectors, count * size);
    __syncthreads();  // the next tile reuses the shared memory
  }
}

}  // namespace gpusort::gpu::detail
