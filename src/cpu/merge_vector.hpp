// The vector merge: a multiway merge of runs of 64-bit keys, alone or with a 64-bit payload,
// built as a tree of two-way merges whose every step merges 32 records (four vectors; sixteen,
// two vectors, where a payload travels in vectors of its own) with an AVX-512 bitonic network.
// Records that are a 32-bit key travel as one 64-bit word each, the key in its upper half.
// (32-bit keys with a 4-byte payload repeat too often for it: among 2^25 uniform keys one
// record in 128 has an equal neighbour, and the loser tree merged them faster on the
// development VM.) Each tree node writes a small buffer that its parent reads, so all levels
// run out of the L2 cache and the runs are read once, the output written once (unsigned 64-bit
// keys merged ascending are read where they lie, without a leaf's buffer).
//
// A loser tree pays a chain of dependent, unpredictable compares per level for every record;
// the network pays a few cycles per record and level (about 1.1 ns on the GPU machine's cores),
// without branches on the keys. The network is not stable, which cannot be seen where records
// with equal keys are equal records (records that are their key) or where no two keys
// are equal: (key, payload) records are merged only while their output shows no equal keys,
// and the caller merges the rest stably.
//
// This header is plain C++; the networks live in merge_vector_avx512.cpp, which is compiled for
// AVX-512 and called only where the CPU has it (vector_merge_supported).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpusort::cpu::detail {

/// Where the key lies in the record, and how wide it is.
enum class vector_layout : std::uint8_t {
  key,          ///< 8-byte records that are their 64-bit key
  key_value,    ///< 16-byte records, 64-bit key at offset 0
  value_key,    ///< 16-byte records, 64-bit key at offset 8
  key32,        ///< 4-byte records that are their 32-bit key
};

/// The order-preserving map of gpusort::detail::key_codec<std::uint64_t>, or of
/// key_codec<std::uint32_t> for the 32-bit layouts, as plain masks.
struct vector_key_masks {
  std::uint64_t sign_mask = 0;
  std::uint64_t float_mask = 0;
  std::uint64_t order_mask = 0;
};

/// A sorted run, or the part of one that a merge takes.
struct vector_input {
  const std::byte* data = nullptr;
  std::uint64_t count = 0;
};

/// The most runs one vector merge takes; the tree's buffers must stay in the L2 cache.
inline constexpr std::size_t vector_merge_max_runs = 256;

/// Whether this CPU runs the vector merge (x86-64 with AVX-512F), asked once per process.
[[nodiscard]] bool vector_merge_supported() noexcept;

/// Bytes of scratch memory vector_merge needs for `runs` runs of `layout`.
[[nodiscard]] std::size_t vector_merge_scratch_bytes(std::size_t runs,
                                                     vector_layout layout) noexcept;

/**
 * Writes the merge of `runs` sorted inputs (2 <= runs <= vector_merge_max_runs, none empty) to
 * `out`: `count` records, the sum of the inputs' counts.
 * - Keys order as their images under `masks` (key_codec's normalize) order as unsigned words.
 * - For 16-byte records, no input may hold a record whose normalized key is all ones: the
 *   merge pads its inputs with that key (records of one word may: the padding equals them).
 * - `scratch` holds vector_merge_scratch_bytes(runs, layout) bytes, 64-byte aligned.
 * - Requires vector_merge_supported().
 * Returns how many records at the start of `out` are final: `count` when `out` is the merge
 * (which is then the stable merge as well); fewer, with `out` written further, when records
 * with a payload and equal keys meet in the output (where a stable merge would have to decide
 * their order): records before the first of them (up to the start of the stretch of the
 * output being written when the tie showed), from which the caller merges on.
 */
[[nodiscard]] std::uint64_t vector_merge(const vector_input* inputs, std::size_t runs,
                                         std::byte* out, std::uint64_t count,
                                         vector_layout layout, const vector_key_masks& masks,
                                         std::byte* scratch) noexcept;

}  // namespace gpusort::cpu::detail
