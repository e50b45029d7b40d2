// The steps every GPU sorter shares around its sort proper (key transform, split, join), and the
// factory behind the chunk_sorter seam.
#include "gpu/chunk_sorter.hpp"

#include <algorithm>
#include <sstream>

#include "gpu/cuda_check.cuh"
#include "gpu/dispatch.cuh"
#include "gpu/hrs/hrs_sorter.hpp"
#include "gpu/hrs_round_estimate.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "gpusort/error.hpp"

namespace gpusort::gpu {

std::unique_ptr<chunk_sorter> make_chunk_sorter(chunk_algorithm algorithm,
                                                const record_format& format, bool descending) {
  GPUSORT_EXPECTS(supports_format(format),
                  "GPU sorter: unsupported record format: " + gpusort::describe(format));
  switch (algorithm) {
    case chunk_algorithm::onesweep: return detail::make_onesweep_sorter(format, descending);
    case chunk_algorithm::hrs: return detail::make_hrs_sorter(format, descending);
    case chunk_algorithm::automatic: return detail::make_auto_sorter(format, descending);
  }
  throw error("GPU sorter: unknown algorithm");
}

namespace detail {
namespace {

/// `automatic`: each chunk to HRS or Onesweep by choose_chunk_algorithm(), from its size and
/// the HRS rounds its sampled keys predict; both sorters are ready, the workspace is the larger
/// of theirs.
class auto_sorter final : public chunk_sorter {
 public:
  auto_sorter(const record_format& format, bool descending)
      : shape_(format),
        onesweep_(make_onesweep_sorter(format, descending)),
        hrs_(make_hrs_sorter(format, descending)),
        hrs_tuning_(hrs_default_tuning(format)),
        crossover_(find_hrs_crossover(shape_.key_size, shape_.value_size)) {}

  [[nodiscard]] std::uint64_t max_records() const override {
    return std::min(onesweep_->max_records(), hrs_->max_records());
  }
  [[nodiscard]] std::uint64_t slot_bytes(std::uint64_t n) const override {
    return std::max(onesweep_->slot_bytes(n), hrs_->slot_bytes(n));
  }
  [[nodiscard]] std::uint64_t workspace_bytes(std::uint64_t n) const override {
    return std::max(onesweep_->workspace_bytes(n), hrs_->workspace_bytes(n));
  }
  [[nodiscard]] std::uint32_t key_sample_size() const override {
    return sometimes_hrs() ? hrs_key_sample_size : 0;
  }
  chunk_slot sort(const chunk_buffers& buffers, std::uint64_t n, cudaStream_t stream,
                  const sort_phase_events& events, chunk_key_sample key_sample) override {
    // Below the crossover's size the keys cannot change the choice: no estimate (sorting the
    // sample costs about 0.7 ms of the former's thread).
    bool hrs = false;
    if (sometimes_hrs() && n >= hrs_smallest_chunk(*crossover_)) {
      const hrs_round_estimate estimate =
          estimate_hrs_rounds(key_sample, shape_.key_size * 8, n, hrs_tuning_.local_threshold,
                              hrs::first_extended_round(n, hrs_tuning_));
      hrs = choose_chunk_algorithm(shape_.key_size, shape_.value_size, n,
                                   estimate.scatter_rounds,
                                   estimate.top_digit_concentration) == chunk_algorithm::hrs;
      max_rounds_ = std::max(max_rounds_, estimate.scatter_rounds);
      estimated_ = true;
    }
    ++(hrs ? hrs_chunks_ : onesweep_chunks_);
    return (hrs ? *hrs_ : *onesweep_).sort(buffers, n, stream, events, key_sample);
  }
  [[nodiscard]] std::string describe() const override {
    std::ostringstream os;
    os << "auto: ";
    if (sometimes_hrs()) {
      const hrs_crossover& c = *crossover_;
      os << "hrs for chunks whose " << hrs_key_sample_size << " sampled keys predict at most "
         << c.few_keys_rounds << " scatter rounds (from " << c.min_records
         << " records), or at most " << c.even_rounds << " and spread evenly (from "
         << c.even_min_records << " records"
         << (c.even_max_records == hrs_never ? std::string()
                                             : " to " + std::to_string(c.even_max_records))
         << "; top-digit concentration at most " << c.even_concentration;
      if (c.mild_skew_records < c.skew_tolerant_records)
        os << ", from " << c.mild_skew_records << " records at most " << c.mild_concentration;
      if (c.skew_tolerant_records != hrs_never)
        os << ", from " << c.skew_tolerant_records << " records any";
      os << "), else onesweep";
    } else {
      os << "onesweep for every chunk";
    }
    os << "; " << hrs_->describe() << "; " << onesweep_->describe();
    return os.str();
  }
  [[nodiscard]] std::string choices() const override {
    std::ostringstream os;
    os << "auto sorted " << hrs_chunks_ << " chunk(s) with hrs, " << onesweep_chunks_
       << " with onesweep";
    if (estimated_)
      os << " (most scatter rounds predicted: " << max_rounds_ << ")";
    return os.str();
  }

 private:
  [[nodiscard]] bool sometimes_hrs() const noexcept {
    return crossover_ != nullptr && hrs_smallest_chunk(*crossover_) != hrs_never;
  }

  record_shape shape_;
  std::unique_ptr<chunk_sorter> onesweep_;
  std::unique_ptr<chunk_sorter> hrs_;
  hrs::tuning hrs_tuning_;  ///< resolved: what the estimate replays
  const hrs_crossover* crossover_;
  std::uint64_t hrs_chunks_ = 0;
  std::uint64_t onesweep_chunks_ = 0;
  double max_rounds_ = 0;
  bool estimated_ = false;  ///< some chunk was large enough for an estimate
};

void record_event(cudaEvent_t event, cudaStream_t stream) {
  if (event != nullptr) GPUSORT_CUDA_TRY(cudaEventRecord(event, stream));
}

}  // namespace

std::unique_ptr<chunk_sorter> make_auto_sorter(const record_format& format, bool descending) {
  return std::make_unique<auto_sorter>(format, descending);
}

record_chunk_sorter::record_chunk_sorter(const record_format& format, bool descending)
    : format_(format), descending_(descending), shape_(format) {
  GPUSORT_EXPECTS(supports_format(format),
                  "GPU sorter: unsupported record format: " + gpusort::describe(format));
  const bool has_transform =
      descending || (format.type != key_type::u32 && format.type != key_type::u64);
  transform_keys_ = format.key_only() && has_transform;
}

chunk_slot record_chunk_sorter::sort(const chunk_buffers& buffers, std::uint64_t n,
                                     cudaStream_t stream, const sort_phase_events& events,
                                     chunk_key_sample /*key_sample*/) {
  GPUSORT_EXPECTS(n <= max_records(), "GPU sorter: a chunk of " + std::to_string(n) +
                                          " records is over the limit of " +
                                          std::to_string(max_records()));
  if (shape_.value_size == 0) {
    // Key-only: the keys are sorted where they are, normalized in place around the sort.
    auto transform = [&](std::byte* d_keys, bool normalize) {
      if (!transform_keys_) return;
      with_word(shape_.key_size, [&](auto word) {
        using Word = decltype(word);
        const auto codec = gpusort::detail::make_key_codec<Word>(format_.type, descending_);
        transform_keys<Word>(reinterpret_cast<Word*>(d_keys), n, codec, normalize, stream);
      });
    };
    transform(buffers.data, true);
    record_event(events.prepared, stream);
    word_buffers words;
    words.keys[0] = buffers.data;
    words.keys[1] = buffers.aux;
    const int sorted = sort_words(words, n, buffers.workspace, buffers.workspace_bytes, stream);
    record_event(events.sorted, stream);
    transform(sorted == 0 ? buffers.data : buffers.aux, false);
    return sorted == 0 ? chunk_slot::data : chunk_slot::aux;
  }
  // Key+payload: AoS records in `data` -> keys and payloads in `aux`; `data` is the alternate.
  const std::uint64_t voff = shape_.values_offset(n);
  word_buffers words;
  words.keys[0] = buffers.aux;
  words.values[0] = buffers.aux + voff;
  words.keys[1] = buffers.data;
  words.values[1] = buffers.data + voff;
  const record_layout layout{format_.record_size, format_.key_offset};
  with_words(shape_.key_size, shape_.value_size, [&](auto word, auto value) {
    using Word = decltype(word);
    using Value = decltype(value);
    const auto codec = gpusort::detail::make_key_codec<Word>(format_.type, descending_);
    split_records<Word, Value>(buffers.data, static_cast<Word*>(words.keys[0]),
                               static_cast<Value*>(words.values[0]), n, layout, codec, stream);
  });
  record_event(events.prepared, stream);
  const int sorted = sort_words(words, n, buffers.workspace, buffers.workspace_bytes, stream);
  record_event(events.sorted, stream);
  // The records go back into the slot the sorted words do not occupy.
  const chunk_slot result = sorted == 0 ? chunk_slot::data : chunk_slot::aux;
  std::byte* d_records = result == chunk_slot::data ? buffers.data : buffers.aux;
  with_words(shape_.key_size, shape_.value_size, [&](auto word, auto value) {
    using Word = decltype(word);
    using Value = decltype(value);
    const auto codec = gpusort::detail::make_key_codec<Word>(format_.type, descending_);
    join_records<Word, Value>(static_cast<const Word*>(words.keys[sorted]),
                              static_cast<const Value*>(words.values[sorted]), d_records, n,
                              layout, codec, stream);
  });
  return result;
}

std::string record_chunk_sorter::shape_description() const {
  std::ostringstream os;
  os << (shape_.value_size == 0 ? "keys u" : "pairs u") << shape_.key_size * 8;
  if (shape_.value_size != 0) os << "+u" << shape_.value_size * 8;
  if (transform_keys_) os << ", in-place key transform";
  return os.str();
}

}  // namespace detail
}  // namespace gpusort::gpu
