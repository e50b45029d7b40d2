// Order between neighbouring records: where a sequence first breaks the sort order (--check,
// and the inputs of --merge), and the first record of each run of equal keys (--unique).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "gpusort/record_format.hpp"

namespace gpusort::cpu {

/**
 * The index of the first of `count` records at `records` that orders before the record in
 * front of it, or with `strict` also one whose key equals it (--check --unique).
 * - `previous`: the record in front of records[0] (the end of the block before), or nullptr.
 * - nullopt when the records are in order. Parallel on the calling thread's TBB arena.
 */
[[nodiscard]] std::optional<std::uint64_t> first_disorder(const std::byte* records,
                                                          std::uint64_t count,
                                                          const std::byte* previous,
                                                          const record_format& format,
                                                          bool descending, bool strict);

/**
 * Copies to `dst` the first record of each run of equal keys among `count` sorted records at
 * `src`; a record equal to `previous` (the record in front of src[0], or nullptr) is dropped
 * too. Returns the records kept.
 * - `dst == src` compacts in place, on the calling thread; distinct buffers, which must not
 *   overlap, are filled in parallel on the calling thread's TBB arena.
 */
std::uint64_t unique_records(const std::byte* src, std::uint64_t count, const std::byte* previous,
                             std::byte* dst, const record_format& format);

/// The key of `record` as text, for messages: "42", "-0.5", "0x00ff3a" (bytes keys in hex,
/// at most 32 bytes, then "...").
[[nodiscard]] std::string key_text(const std::byte* record, const record_format& format);

}  // namespace gpusort::cpu
