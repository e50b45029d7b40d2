// Block-level building blocks shared by the GPU sorters: whole tiles of bytes copied between
// global and shared memory as 16-byte vectors (the record split/join kernels, the HRS kernels).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpusort::gpu::detail {

/// Shared-memory tile of whole records: TileItems records of at most 16 bytes, 16-byte aligned.
template <int TileItems>
struct record_tile {
  uint4 vectors[TileItems];
};

/// Copies `bytes` from global to shared memory: 16-byte vectors, then the odd tail bytes.
/// `src` must be 16-byte aligned.
template <int BlockThreads>
__device__ __forceinline__ void load_tile(uint4* smem, const std::byte* src, std::uint32_t bytes) {
  const std::uint32_t vectors = bytes / 16;
  const auto* src_v = reinterpret_cast<const uint4*>(src);
  for (std::uint32_t i = threadIdx.x; i < vectors; i += BlockThreads) smem[i] = src_v[i];
  auto* smem_b = reinterpret_cast<unsigned char*>(smem);
  const auto* src_b = reinterpret_cast<const unsigned char*>(src);
  for (std::uint32_t i = vectors * 16 + threadIdx.x; i < bytes; i += BlockThreads)
    smem_b[i] = src_b[i];
}

template <int BlockThreads>
__device__ __forceinline__ void store_tile(std::byte* dst, const uint4* smem, std::uint32_t bytes) {
  const std::uint32_t vectors = bytes / 16;
  auto* dst_v = reinterpret_cast<uint4*>(dst);
  for (std::uint32_t i = threadIdx.x; i < vectors; i += BlockThreads) dst_v[i] = smem[i];
  const auto* smem_b = reinterpret_cast<const unsigned char*>(smem);
  auto* dst_b = reinterpret_cast<unsigned char*>(dst);
  for (std::uint32_t i = vectors * 16 + threadIdx.x; i < bytes; i += BlockThreads)
    dst_b[i] = smem_b[i];
}

}  // namespace gpusort::gpu::detail
