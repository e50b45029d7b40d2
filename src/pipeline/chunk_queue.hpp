// Chunks of records that several GPUs take, each the next one as it is done with its last, so
// that a faster GPU does more: a file's chunks as the GPUs form its runs (chunk c is the
// file's records [c * chunk_records, (c + 1) * chunk_records) and becomes run c, whichever GPU
// sorts it), and the output's key ranges as they sort them again.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace gpusort::pipeline {

class chunk_queue {
 public:
  /// A file of `records` records of `record_size` bytes, in chunks of `chunk_records` (> 0),
  /// for `gpus` GPUs.
  chunk_queue(std::uint64_t records, std::uint64_t chunk_records, std::uint32_t record_size,
              std::size_t gpus);

  /**
   * Whether the GPUs take their chunks from the queue: only where every one holds a chunk of
   * chunk_records, which each says once, when set up (`chunk`: what its former holds), and
   * which none knows before all have said it. Waits for the others; where all hold the chunk,
   * the last to arrive runs `when_agreed` before any returns. Else each GPU forms the runs of
   * its own share.
   * @throw gpusort::error once `stop` is set (another GPU failed) while waiting
   */
  bool agree(std::uint64_t chunk, const std::atomic<bool>& stop,
             const std::function<void()>& when_agreed = {});

  /// The next chunk no GPU has taken, in file order, or none once all are taken.
  [[nodiscard]] std::optional<std::uint64_t> take() noexcept;

  /// One GPU's end of the queue: it takes chunks and remembers which one it took k-th, which
  /// its former's k-th run then is (asked on the former's thread).
  class taker {
   public:
    explicit taker(chunk_queue& queue);
    /// As chunk_queue::take(), remembered as this taker's next.
    [[nodiscard]] std::optional<std::uint64_t> take() noexcept;
    /// The chunk this taker took k-th (k below the number it has taken).
    [[nodiscard]] std::uint64_t taken(std::uint64_t k) const noexcept {
      return order_[k].load(std::memory_order_acquire);
    }

   private:
    chunk_queue* queue_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> order_;
    std::uint64_t count_ = 0;
  };

  [[nodiscard]] std::uint64_t chunks() const noexcept { return chunks_; }
  [[nodiscard]] std::uint64_t chunk_records() const noexcept { return chunk_records_; }
  /// Bytes [first_byte, last_byte) of chunk c in the file.
  [[nodiscard]] std::uint64_t first_byte(std::uint64_t c) const noexcept {
    return c * chunk_records_ * record_size_;
  }
  [[nodiscard]] std::uint64_t last_byte(std::uint64_t c) const noexcept;
  /// The bytes of every chunk, in order: the runs' sizes.
  [[nodiscard]] std::vector<std::size_t> chunk_bytes() const;

 private:
  std::uint64_t records_;
  std::uint64_t chunk_records_;
  std::uint32_t record_size_;
  std::uint64_t chunks_;
  std::size_t gpus_;
  std::atomic<std::uint64_t> next_{0};
  std::mutex mutex_;
  std::condition_variable arrived_all_;
  std::size_t arrived_ = 0;
  bool all_hold_ = true;
};

}  // namespace gpusort::pipeline
