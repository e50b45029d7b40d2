// (normalized key, record index) items: how records too wide to move in every radix pass are
// sorted, on the CPU and on the GPU alike: extract items, sort them, gather the records.
#pragma once

#include <cstdint>

#include "gpusort/record_format.hpp"

namespace gpusort::cpu {

/// 16 bytes, the key first: sorts as a key+value record with a u64 key at offset 0.
struct sort_item {
  std::uint64_t key;    ///< normalized key (or its first 8 bytes, big-endian, for bytes:N)
  std::uint64_t index;  ///< record index within the chunk
};
static_assert(sizeof(sort_item) == 16);

/// The record format of sort_item itself, for handing items to a record sorter.
[[nodiscard]] record_format sort_item_format();

/// items[i] = {normalized key of record i, first_index + i}. Parallel.
void extract_items(const std::byte* records, std::uint64_t count, const record_format& format,
                   bool descending, std::uint64_t first_index, sort_item* items);

/// out[i] = records[items[i].index - first_index]. Parallel.
void gather_records(const std::byte* records, const sort_item* items, std::uint64_t count,
                    std::uint32_t record_size, std::uint64_t first_index, std::byte* out);

/// True when items compare the whole key (every key type except bytes:N with N > 8).
[[nodiscard]] bool items_hold_whole_key(const record_format& format);

/// For bytes:N keys with N > 8: after items were sorted stably by their 8-byte prefix, sorts
/// each group of equal prefixes by the rest of the key, stably. No-op for other formats.
/// Parallel, and never quadratic: long groups are split by radix passes over the next 8 key
/// bytes (linear time when every key is equal). Item keys still hold the prefixes afterwards.
/// `records` are the records the items index (as in gather_records).
void resolve_prefix_ties(const std::byte* records, sort_item* items, std::uint64_t count,
                         const record_format& format, bool descending, std::uint64_t first_index);

}  // namespace gpusort::cpu
