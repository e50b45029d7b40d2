// Where the key sits inside a record handled by the split/merge kernels (shared by the kernels
// and the dispatch layer).
#pragma once

#include <cstdint>

namespace gpusort::gpu::detail {

/// A record of at most 16 bytes; the key is sizeof(Word) bytes at key_offset and the rest of
/// the record, in order, is the payload.
struct record_layout {
  std::uint32_t record_size = 0;
  std::uint32_t key_offset = 0;
};

}  // namespace gpusort::gpu::detail
