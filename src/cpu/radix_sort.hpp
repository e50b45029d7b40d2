// Parallel, stable radix sort of records on the host (TBB), the CPU run sorter.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpusort/record_format.hpp"

namespace gpusort::cpu {

/// Bytes of scratch memory sort_records needs for `count` records of `format`
/// (at least count * record_size; more for records sorted through (key, index) items).
[[nodiscard]] std::uint64_t sort_scratch_bytes(std::uint64_t count, const record_format& format);

/**
 * Sorts `count` records of `format` by key, stably (equal keys keep their input order).
 * - `data` holds the records; `scratch` holds sort_scratch_bytes(count, format) bytes and
 *   must not overlap `data`.
 * - Returns the buffer that holds the sorted records: `data` or `scratch` (at its start).
 * - Runs on the calling thread's TBB arena.
 * @throw gpusort::error on a format it cannot sort.
 */
std::byte* sort_records(std::byte* data, std::byte* scratch, std::uint64_t count,
                        const record_format& format, bool descending);

/// Bytes of scratch memory sort_records_into needs besides its input and output: none for
/// 4-, 8-, 12- and 16-byte records with numeric keys, sort_scratch_bytes for the others.
[[nodiscard]] std::uint64_t sort_into_scratch_bytes(std::uint64_t count,
                                                    const record_format& format);

/**
 * Sorts `count` records of `format` from `data` into `out`, stably. For records the radix
 * passes move whole, `data` and `out` are the sort's two buffers: no scratch memory, and the
 * last pass writes the result where it belongs (no copy into the output afterwards).
 * - `out` holds count * record_size bytes; `data` is overwritten.
 * - `scratch` holds sort_into_scratch_bytes(count, format) bytes (null when that is 0).
 * - None of the three overlap. Runs on the calling thread's TBB arena.
 * @throw gpusort::error on a format it cannot sort.
 */
void sort_records_into(std::byte* data, std::byte* scratch, std::byte* out, std::uint64_t count,
                       const record_format& format, bool descending);

/**
 * Sorts `count` records of `format` from `src` into `out`, stably, without writing `src`: it
 * may be a read-only mapping of the input file. The first pass reads `src`; later passes use
 * `out` and buffers of the sort's own (per thread in cache, and one per bucket that is larger
 * than the cache after the first pass: none for evenly spread keys).
 * - `scratch` and the other preconditions as for sort_records_into.
 * @throw gpusort::error on a format it cannot sort.
 */
void sort_records_from(const std::byte* src, std::byte* scratch, std::byte* out,
                       std::uint64_t count, const record_format& format, bool descending);

/**
 * Sorts `count` records of `format` from `src`, which is never written, into `out`, stably,
 * writing each record of `out` once: the passes before the last go through `scratch`
 * (sort_scratch_bytes(count, format) bytes) and buffers of the sort's own. For an output file's
 * mapping larger than the kernel's write-back threshold: pages that the kernel writes back
 * between two writes fault again on the second, and wait for the disk once the dirty-page
 * limit is reached (sort_records_from writes each record into `out` twice).
 * - None of the three overlap. Runs on the calling thread's TBB arena.
 * @throw gpusort::error on a format it cannot sort.
 */
void sort_records_through(const std::byte* src, std::byte* scratch, std::byte* out,
                          std::uint64_t count, const record_format& format, bool descending);

}  // namespace gpusort::cpu
