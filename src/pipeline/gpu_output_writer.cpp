#include "pipeline/gpu_output_writer.hpp"

#include "gpusort/error.hpp"

namespace gpusort::pipeline {
namespace {

/// Gives a staging buffer back however its write ends.
struct staging_release {
  staging_pool& pool;
  std::byte* buffer;
  ~staging_release() { pool.release(buffer); }
};

}  // namespace

gpu_output_writer::gpu_output_writer(
    staging_future staging, const std::function<io::output_sink&(std::uint64_t)>& open_sink,
    std::uint64_t output_bytes, tbb::task_arena& arena)
    : staging_(std::move(staging)), open_sink_(open_sink), output_bytes_(output_bytes),
      arena_(arena) {}

gpu_output_writer::~gpu_output_writer() noexcept {
  try {
    arena_.execute([&] { writes_.wait(); });  // errors were reported by drain() already
  } catch (...) {
  }
}

std::span<std::byte> gpu_output_writer::piece_buffer(std::uint64_t, std::uint64_t,
                                                     std::size_t len) {
  GPUSORT_EXPECTS(len <= staging().buffer_bytes(), "run former piece larger than staging");
  // A failed write (a full disk, a closed pipe) stops the worker, whose queued pieces then
  // never give their buffers back: fail the former now instead of letting it poll forever.
  if (const std::exception_ptr failed = worker_.error()) std::rethrow_exception(failed);
  std::byte* p = staging().try_acquire();
  if (p == nullptr) return {};
  return {p, len};
}

void gpu_output_writer::piece_done(std::uint64_t run, std::uint64_t offset,
                                   std::span<std::byte> piece) {
  const std::uint64_t at = (run_offset_ ? run_offset_(run) : 0) + offset;
  if (sink_ == nullptr) arena_.execute([&] { sink_ = &open_sink_(output_bytes_); });
  if (sink_->parallel_writes()) {
    // Pieces of a mapped file are independent: writing several at once keeps every thread
    // busy (one 64 MiB piece at a time measured 2.2 GB/s on the H200 machine, the whole file
    // at once 8.9 GB/s).
    arena_.execute([&] {
      writes_.run([this, at, piece] {
        const staging_release guard{staging(), piece.data()};
        sink_->write(at, piece);
        note_written(at, piece.size());
      });
    });
    return;
  }
  // A stream: written in order, one piece after another.
  worker_.push([this, at, piece] {
    const staging_release guard{staging(), piece.data()};
    arena_.execute([&] { sink_->write(at, piece); });  // the sink records the "write" track
  });
}

void gpu_output_writer::note_written(std::uint64_t at, std::uint64_t bytes) {
  std::uint64_t front = 0;
  {
    std::lock_guard lock(front_mutex_);
    if (at != front_) {
      written_beyond_.emplace(at, at + bytes);
      return;
    }
    front_ = at + bytes;
    for (auto next = written_beyond_.begin();
         next != written_beyond_.end() && next->first == front_;
         next = written_beyond_.erase(next))
      front_ = next->second;
    front = front_;
  }
  sink_->written_through(front);
}

void gpu_output_writer::run_done(std::uint64_t, std::uint64_t records) { records_ += records; }

void gpu_output_writer::drain() {
  arena_.execute([&] { writes_.wait(); });
  worker_.drain();
}

}  // namespace gpusort::pipeline
