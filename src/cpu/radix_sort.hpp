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

}  // namespace gpusort::cpu
