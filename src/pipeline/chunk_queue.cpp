// chunk_queue: the GPUs agree once on taking a file's chunks from it, then take them in order.
#include "pipeline/chunk_queue.hpp"

#include <algorithm>
#include <chrono>

#include "gpusort/error.hpp"

namespace gpusort::pipeline {

chunk_queue::chunk_queue(std::uint64_t records, std::uint64_t chunk_records,
                         std::uint32_t record_size, std::size_t gpus)
    : records_(records),
      chunk_records_(chunk_records),
      record_size_(record_size),
      chunks_(chunk_records == 0 ? 0 : (records + chunk_records - 1) / chunk_records),
      gpus_(gpus) {
  GPUSORT_EXPECTS(chunk_records > 0 && record_size > 0 && gpus > 0,
                  "chunk_queue: empty chunks, records or no GPU");
}

bool chunk_queue::agree(std::uint64_t chunk, const std::atomic<bool>& stop,
                        const std::function<void()>& when_agreed) {
  std::unique_lock lock(mutex_);
  all_hold_ = all_hold_ && chunk == chunk_records_;
  if (++arrived_ == gpus_) {
    if (all_hold_ && when_agreed) when_agreed();
    arrived_all_.notify_all();
  }
  // Polled: `stop` is set by a GPU that failed before it could arrive.
  while (arrived_ < gpus_) {
    if (stop.load(std::memory_order_relaxed))
      throw error("run formation stopped: another GPU failed before taking chunks");
    arrived_all_.wait_for(lock, std::chrono::milliseconds(10));
  }
  return all_hold_;
}

std::optional<std::uint64_t> chunk_queue::take() noexcept {
  const std::uint64_t c = next_.fetch_add(1, std::memory_order_relaxed);
  if (c >= chunks_) return std::nullopt;
  return c;
}

chunk_queue::taker::taker(chunk_queue& queue)
    : queue_(&queue), order_(std::make_unique<std::atomic<std::uint64_t>[]>(queue.chunks())) {}

std::optional<std::uint64_t> chunk_queue::taker::take() noexcept {
  const std::optional<std::uint64_t> c = queue_->take();
  if (c) order_[count_++].store(*c, std::memory_order_release);
  return c;
}

std::uint64_t chunk_queue::last_byte(std::uint64_t c) const noexcept {
  return std::min(records_, (c + 1) * chunk_records_) * record_size_;
}

std::vector<std::size_t> chunk_queue::chunk_bytes() const {
  std::vector<std::size_t> bytes;
  bytes.reserve(chunks_);
  for (std::uint64_t c = 0; c < chunks_; ++c)
    bytes.push_back(static_cast<std::size_t>(last_byte(c) - first_byte(c)));
  return bytes;
}

}  // namespace gpusort::pipeline
