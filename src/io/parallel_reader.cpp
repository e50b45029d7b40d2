// Several readers, one ordered hand-off.
#include "io/parallel_reader.hpp"

#include <algorithm>

#include "core/trace.hpp"
#include "gpusort/error.hpp"

namespace gpusort::io {

parallel_reader::parallel_reader(const input_source& input, std::size_t piece_bytes,
                                 unsigned threads, piece_buffers& buffers,
                                 const transfer_config& config, trace_recorder* trace)
    : parallel_reader(input, 0, input.known_size().value_or(0), piece_bytes, threads, buffers,
                      config, trace) {}

parallel_reader::parallel_reader(const input_source& input, std::uint64_t begin,
                                 std::uint64_t end, std::size_t piece_bytes, unsigned threads,
                                 piece_buffers& buffers, const transfer_config& config,
                                 trace_recorder* trace)
    : input_(input),
      begin_(begin),
      total_(end >= begin ? end - begin : 0),
      piece_bytes_(piece_bytes),
      pieces_(0),
      buffers_(buffers),
      config_(config),
      trace_(trace) {
  GPUSORT_EXPECTS(input.known_size().has_value(), "parallel_reader: input of unknown size");
  GPUSORT_EXPECTS(piece_bytes_ > 0, "parallel_reader: empty pieces");
  GPUSORT_EXPECTS(begin <= end && end <= *input.known_size(),
                  "parallel_reader: a range beyond the input");
  pieces_ = (total_ + piece_bytes_ - 1) / piece_bytes_;
  const unsigned n =
      static_cast<unsigned>(std::clamp<std::uint64_t>(pieces_, 1, std::max(threads, 1u)));
  threads_.reserve(n);
  for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { run(); });
}

parallel_reader::~parallel_reader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  buffers_.close();
  for (std::thread& t : threads_) t.join();
  for (auto& [index, p] : ready_) buffers_.release(p.data);
}

parallel_reader::piece parallel_reader::next() {
  std::unique_lock lock(mutex_);
  ready_cv_.wait(lock, [&] { return error_ || next_out_ >= pieces_ || ready_.count(next_out_); });
  if (error_) std::rethrow_exception(error_);
  if (next_out_ >= pieces_) return {};
  const auto it = ready_.find(next_out_);
  const piece p = it->second;
  ready_.erase(it);
  ++next_out_;
  return p;
}

void parallel_reader::run() noexcept {
  try {
    uring ring(std::max(config_.queue_depth, 1u));
    for (;;) {
      std::byte* buffer = buffers_.acquire();
      if (buffer == nullptr) return;
      std::uint64_t index = 0;
      {
        std::lock_guard lock(mutex_);
        if (stopping_ || error_ || next_claim_ >= pieces_) {
          buffers_.release(buffer);
          return;
        }
        index = next_claim_++;
      }
      const std::uint64_t offset = index * piece_bytes_;
      const std::size_t bytes =
          static_cast<std::size_t>(std::min<std::uint64_t>(piece_bytes_, total_ - offset));
      const std::uint64_t at = begin_ + offset;
      try {
        trace_recorder::scope timer(trace_, "read", bytes);
        input_.read_at(at, {buffer, bytes}, ring, config_);
      } catch (...) {
        buffers_.release(buffer);
        throw;
      }
      {
        std::lock_guard lock(mutex_);
        ready_[index] = piece{buffer, bytes};
      }
      ready_cv_.notify_all();
    }
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    ready_cv_.notify_all();
  }
}

}  // namespace gpusort::io
