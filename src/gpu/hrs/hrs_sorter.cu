// The hybrid radix sort behind the chunk_sorter seam: the host-facing sorter the run former
// calls. The shared steps (key transform, split, join) come from record_chunk_sorter; this sorts
// the normalized words through the HRS dispatch layer.
#include <limits>

#include "gpu/chunk_sorter.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/hrs/hrs_dispatch.cuh"
#include "gpu/hrs/hrs_sorter.hpp"
#include "gpusort/error.hpp"

namespace gpusort::gpu {
namespace detail {
namespace {

/// The largest chunk: job sizes and key-block counts are 32-bit inside the sort.
constexpr std::uint64_t hrs_max_records = std::uint64_t{1} << 40;

class hrs_sorter final : public record_chunk_sorter {
 public:
  hrs_sorter(const record_format& format, bool descending, const hrs::tuning& tuning)
      : record_chunk_sorter(format, descending), tuning_(tuning) {
    int device = 0;
    GPUSORT_CUDA_TRY(cudaGetDevice(&device));
    with_types([&](auto key, auto value) {
      using Key = decltype(key);
      using Value = decltype(value);
      shapes_ = hrs::prepare<Key, Value>(device, tuning_);
      tuning_ = hrs::resolve<Key, Value>(tuning_, shapes_.compute_capability);
    });
  }

  [[nodiscard]] std::uint64_t max_records() const override { return hrs_max_records; }

  [[nodiscard]] std::uint64_t workspace_bytes(std::uint64_t n) const override {
    std::uint64_t bytes = 0;
    with_types([&](auto key, auto value) {
      bytes = hrs::workspace_bytes<decltype(key), decltype(value)>(n, tuning_,
                                                                   shapes_.compute_capability);
    });
    return bytes;
  }

  [[nodiscard]] std::string describe() const override {
    std::string d;
    with_types([&](auto key, auto value) {
      d = hrs::describe<decltype(key), decltype(value)>(tuning_, shapes_.compute_capability);
    });
    return "hybrid radix sort " + shape_description() + " (" + d + ")";
  }

 protected:
  int sort_words(const word_buffers& words, std::uint64_t n, std::byte* d_workspace,
                 std::size_t workspace_bytes, cudaStream_t stream) override {
    with_types([&](auto key, auto value) {
      using Key = decltype(key);
      using Value = decltype(value);
      Key* const keys[2] = {static_cast<Key*>(words.keys[0]), static_cast<Key*>(words.keys[1])};
      Value* const values[2] = {static_cast<Value*>(words.values[0]),
                                static_cast<Value*>(words.values[1])};
      hrs::sort<Key, Value>(shapes_, tuning_, keys, values, n, d_workspace, workspace_bytes,
                            stream);
    });
    return 0;  // HRS always ends in the first buffers (section 4.1)
  }

 private:
  /// Calls f(Key{}, Value{}) for this format's words (Value hrs::no_value for key-only).
  template <typename F>
  void with_types(F&& f) const {
    if (shape().value_size == 0)
      with_word(shape().key_size, [&](auto key) { f(key, hrs::no_value{}); });
    else
      with_words(shape().key_size, shape().value_size, f);
  }

  hrs::tuning tuning_;
  hrs::device_shapes shapes_;
};

}  // namespace

std::unique_ptr<chunk_sorter> make_hrs_sorter(const record_format& format, bool descending,
                                              const hrs::tuning& tuning) {
  return std::make_unique<hrs_sorter>(format, descending, tuning);
}

std::unique_ptr<chunk_sorter> make_hrs_sorter(const record_format& format, bool descending) {
  return make_hrs_sorter(format, descending, hrs::tuning{});
}

hrs::tuning hrs_default_tuning(const record_format& format) {
  int device = 0;
  GPUSORT_CUDA_TRY(cudaGetDevice(&device));
  const int cc = hrs::compute_capability(device);
  const record_shape shape(format);
  hrs::tuning t;
  auto resolved = [&](auto key, auto value) {
    t = hrs::resolve<decltype(key), decltype(value)>(hrs::tuning{}, cc);
  };
  if (shape.value_size == 0)
    with_word(shape.key_size, [&](auto key) { resolved(key, hrs::no_value{}); });
  else
    with_words(shape.key_size, shape.value_size, resolved);
  return t;
}

}  // namespace detail
}  // namespace gpusort::gpu
