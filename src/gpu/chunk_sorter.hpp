// The seam between the run former and the GPU sort algorithms: a chunk_sorter sorts one chunk of
// records that lies in a device slot, using a second slot and a workspace, and says which slot
// holds the sorted run. The run former keeps streams, slots and events; the sorters keep the
// algorithm (CUB Onesweep today, the hybrid radix sort in gpu/hrs/).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "gpu/chunk_algorithm.hpp"
#include "gpu/record_shape.hpp"
#include "gpusort/record_format.hpp"

namespace gpusort::gpu {

/// Which of the two slots holds a sorted run.
enum class chunk_slot : std::uint8_t { data, aux };

/// Device memory one sort works in. `data` holds the chunk's records; `data` and `aux` are
/// slot_bytes(n) each (256-byte aligned) and `workspace` at least workspace_bytes(n). The three
/// must not overlap.
struct chunk_buffers {
  std::byte* data = nullptr;
  std::byte* aux = nullptr;
  std::byte* workspace = nullptr;
  std::size_t workspace_bytes = 0;
};

/// Events a sort records on its stream between its phases, where set (the trace's "GPU split",
/// "sort" and "GPU join" intervals): after the split or key transform, after the sort proper.
struct sort_phase_events {
  cudaEvent_t prepared = nullptr;
  cudaEvent_t sorted = nullptr;
};

/// Normalized keys (key_codec: unsigned order, low key_size * 8 bits) of records spread evenly
/// over a chunk, taken on the host as the chunk was copied up; the sorter may reorder them.
/// Empty when the sorter asked for none (key_sample_size() 0).
using chunk_key_sample = std::span<std::uint64_t>;

/**
 * Sorts chunks of one record format on one device (the current device at every call).
 * Implementations are host objects that hold no device memory of their own, so that the run
 * former can size and allocate everything once.
 */
class chunk_sorter {
 public:
  virtual ~chunk_sorter() = default;

  /// The most records one sort takes.
  [[nodiscard]] virtual std::uint64_t max_records() const = 0;
  /// Bytes one slot needs for `n` records (the AoS chunk and the sorter's split layout).
  [[nodiscard]] virtual std::uint64_t slot_bytes(std::uint64_t n) const = 0;
  /// Device workspace a sort of `n` records needs beside the two slots. Host only; it may query
  /// the current device.
  /// @throw gpusort::cuda_error
  [[nodiscard]] virtual std::uint64_t workspace_bytes(std::uint64_t n) const = 0;
  /**
   * Sorts the `n` records in `buffers.data` by normalized key, ascending (descending and
   * signed/float keys through the key codec), in the format given at construction.
   * - Asynchronous: returns once the work is enqueued on `stream`; which slot holds the run is
   *   known on the host at once. Both slots and the workspace are overwritten.
   * - Equal keys keep no particular order unless the implementation says otherwise; the
   *   multiset of records is always the input's.
   * @throw gpusort::error when n > max_records() or the workspace is too small,
   *        gpusort::cuda_error when a launch fails
   */
  virtual chunk_slot sort(const chunk_buffers& buffers, std::uint64_t n, cudaStream_t stream,
                          const sort_phase_events& events, chunk_key_sample key_sample) = 0;
  /// Keys this sorter would like sampled from each chunk for sort() (0: none, the default).
  [[nodiscard]] virtual std::uint32_t key_sample_size() const { return 0; }
  /// What the sorter chose for the chunks it sorted so far, one line (for --verbose); empty
  /// for sorters that make no choice.
  [[nodiscard]] virtual std::string choices() const { return {}; }
  /// Algorithm, layout and tuning in one line (for --verbose).
  [[nodiscard]] virtual std::string describe() const = 0;
};

/// The sorter of `algorithm` for `format` (must satisfy gpu::supports_format).
/// @throw gpusort::error for an unsupported format
[[nodiscard]] std::unique_ptr<chunk_sorter> make_chunk_sorter(chunk_algorithm algorithm,
                                                              const record_format& format,
                                                              bool descending);

namespace detail {

/// The implementations behind make_chunk_sorter (gpu/onesweep_sorter.cu, gpu/hrs/hrs_sorter.cu).
[[nodiscard]] std::unique_ptr<chunk_sorter> make_onesweep_sorter(const record_format& format,
                                                                 bool descending);
[[nodiscard]] std::unique_ptr<chunk_sorter> make_hrs_sorter(const record_format& format,
                                                            bool descending);
/// Both of the above, each chunk to the one choose_chunk_algorithm() names for its size and its
/// sampled keys.
[[nodiscard]] std::unique_ptr<chunk_sorter> make_auto_sorter(const record_format& format,
                                                             bool descending);

/// Calls f(Word{}) for the key word of `key_size` bytes.
template <typename F>
void with_word(std::uint32_t key_size, F&& f) {
  if (key_size == 4) f(std::uint32_t{});
  else f(std::uint64_t{});
}

/// Calls f(Word{}, Value{}) for the key word and the packed payload word.
template <typename F>
void with_words(std::uint32_t key_size, std::uint32_t value_size, F&& f) {
  with_word(key_size, [&](auto word) {
    if (value_size == 4) f(word, std::uint32_t{});
    else f(word, std::uint64_t{});
  });
}

/// The normalized keys and packed payloads a word sort works on: [0] is where they are, [1] the
/// alternate buffers; `values` are null for key-only records.
struct word_buffers {
  void* keys[2] = {nullptr, nullptr};
  void* values[2] = {nullptr, nullptr};
};

/**
 * The steps every GPU sorter shares around its sort proper: key-only records are normalized in
 * place (when the key type or order needs it) and denormalized afterwards; key+payload records
 * are split into normalized keys and packed payloads in the aux slot and joined back into AoS
 * records in whichever slot the sort left free. Subclasses sort the unsigned words.
 */
class record_chunk_sorter : public chunk_sorter {
 public:
  record_chunk_sorter(const record_format& format, bool descending);

  [[nodiscard]] std::uint64_t slot_bytes(std::uint64_t n) const override {
    return shape_.slot_bytes(n);
  }
  chunk_slot sort(const chunk_buffers& buffers, std::uint64_t n, cudaStream_t stream,
                  const sort_phase_events& events, chunk_key_sample key_sample) override;

 protected:
  /**
   * Sorts `n` normalized keys (shape().key_size bytes each) in words.keys[0], moving the
   * payloads in words.values[0] along when there are any; words.*[1] are the alternates.
   * Asynchronous on `stream`.
   * @return 0 or 1: the index of the buffers that hold the sorted keys and payloads
   */
  virtual int sort_words(const word_buffers& words, std::uint64_t n, std::byte* d_workspace,
                         std::size_t workspace_bytes, cudaStream_t stream) = 0;

  [[nodiscard]] const record_shape& shape() const noexcept { return shape_; }
  [[nodiscard]] const record_format& format() const noexcept { return format_; }
  [[nodiscard]] bool descending() const noexcept { return descending_; }
  /// "pairs u64+u32", "keys u32"; ", in-place key transform" where one runs.
  [[nodiscard]] std::string shape_description() const;

 private:
  record_format format_;
  bool descending_;
  record_shape shape_;
  bool transform_keys_;  ///< key-only records whose keys need normalizing
};

}  // namespace detail
}  // namespace gpusort::gpu
