// The baseline chunk sorter: CUB's DeviceRadixSort (Onesweep, Adinets & Merrill 2022) over all
// key bits, behind the chunk_sorter seam.
#include <sstream>

#include "core/parse_size.hpp"
#include "gpu/chunk_sorter.hpp"
#include "gpu/onesweep_dispatch.cuh"

namespace gpusort::gpu::detail {
namespace {

class onesweep_sorter final : public record_chunk_sorter {
 public:
  using record_chunk_sorter::record_chunk_sorter;

  [[nodiscard]] std::uint64_t max_records() const override { return max_sort_items; }

  [[nodiscard]] std::uint64_t workspace_bytes(std::uint64_t n) const override {
    const auto items = static_cast<std::uint32_t>(std::min(n, max_sort_items));
    std::size_t bytes = 0;
    if (shape().value_size == 0) {
      with_word(shape().key_size,
                [&](auto word) { bytes = onesweep_keys_temp_bytes<decltype(word)>(items); });
    } else {
      with_words(shape().key_size, shape().value_size, [&](auto word, auto value) {
        bytes = onesweep_pairs_temp_bytes<decltype(word), decltype(value)>(items);
      });
    }
    return bytes;
  }

  [[nodiscard]] std::string describe() const override {
    return "CUB onesweep " + shape_description();
  }

 protected:
  int sort_words(const word_buffers& words, std::uint64_t n, std::byte* d_workspace,
                 std::size_t workspace_bytes, cudaStream_t stream) override {
    const auto items = static_cast<std::uint32_t>(n);
    bool in_alternate = false;
    if (shape().value_size == 0) {
      with_word(shape().key_size, [&](auto word) {
        using Word = decltype(word);
        in_alternate = onesweep_sort_keys<Word>(d_workspace, workspace_bytes,
                                                static_cast<Word*>(words.keys[0]),
                                                static_cast<Word*>(words.keys[1]), items, stream);
      });
    } else {
      with_words(shape().key_size, shape().value_size, [&](auto word, auto value) {
        using Word = decltype(word);
        using Value = decltype(value);
        in_alternate = onesweep_sort_pairs<Word, Value>(
            d_workspace, workspace_bytes, static_cast<Word*>(words.keys[0]),
            static_cast<Word*>(words.keys[1]), static_cast<Value*>(words.values[0]),
            static_cast<Value*>(words.values[1]), items, stream);
      });
    }
    return in_alternate ? 1 : 0;
  }
};

}  // namespace

std::unique_ptr<chunk_sorter> make_onesweep_sorter(const record_format& format, bool descending) {
  return std::make_unique<onesweep_sorter>(format, descending);
}

}  // namespace gpusort::gpu::detail
