// GPU run formation: records stream in, sorted runs of one chunk each stream out. Plain C++
// (no CUDA types), so the pipeline compiles without nvcc; built only when CUDA is enabled. The
// sort of each chunk is a gpu::chunk_sorter (gpu/chunk_sorter.hpp); the former keeps the
// streams, the slots and the events.
//
// Device memory holds three chunk slots (two data, one auxiliary). Chunk i+1 is copied in
// (H2D stream) while chunk i sorts (compute stream) and run i-1 is copied out (D2H stream);
// the slot that holds run i is refilled with chunk i+2 piece by piece as run i leaves it
// (in-place replacement, Stehle & Jacobsen 2017, section 5), ordered by events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/host_buffer.hpp"
#include "gpu/chunk_algorithm.hpp"
#include "gpusort/record_format.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::gpu {

struct device_info {
  int id = 0;
  std::string name;
  std::uint64_t free_bytes = 0;
  std::uint64_t total_bytes = 0;
};

/// Number of usable CUDA devices; 0 when there is no driver or no device. Never throws.
[[nodiscard]] int device_count() noexcept;
/// Opens the device (its primary context, 0.3-0.7 s on the H100 and H200 machines) and reads
/// its memory free. @throw gpusort::cuda_error
[[nodiscard]] device_info query_device(int device);
/// The device's name and memory size without opening it (no context); free_bytes is the size,
/// the most that query_device can report. @throw gpusort::cuda_error
[[nodiscard]] device_info describe_device(int device);

/// True when the GPU run former sorts this format directly: a numeric key of 4 or 8 bytes and
/// at most 8 bytes of payload (record_size <= key_size + 8). Wider records go through
/// cpu::sort_item (16-byte items with a u64 key at offset 0).
[[nodiscard]] bool supports_format(const record_format& format) noexcept;

/**
 * Page-locks `memory` (already touched: registering untouched memory faults every page in one
 * thread inside the driver) for every device, so that copies to and from it run at full PCIe
 * speed; unlocked when the last copy of the returned token goes. Registering measured 14 GB/s
 * on one thread and 42 GB/s on four (H100 machine, 1 GiB parts).
 * @throw gpusort::out_of_memory, gpusort::cuda_error
 */
[[nodiscard]] std::shared_ptr<void> register_host_memory(std::span<std::byte> memory, int device);

/**
 * Page-locked host memory for transfers at full PCIe speed. Allocated as anonymous memory on
 * the GPU's NUMA node where it has one (gpu::device_numa_node), first-touched in parallel and
 * registered with cudaHostRegister: cudaHostAlloc measured 5.2 s
 * for 8 GiB on the H200 machine, this path 0.7 s. Move-only.
 * @throw gpusort::out_of_memory, gpusort::cuda_error
 */
class pinned_buffer {
 public:
  pinned_buffer() = default;
  pinned_buffer(std::size_t bytes, int device);
  ~pinned_buffer();
  pinned_buffer(pinned_buffer&& other) noexcept;
  pinned_buffer& operator=(pinned_buffer&& other) noexcept;
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;

  [[nodiscard]] std::byte* data() const noexcept { return memory_.data(); }
  [[nodiscard]] std::size_t size() const noexcept { return memory_.size(); }

 private:
  host_buffer memory_;  // first-touched in parallel: registering untouched memory is slow
  std::shared_ptr<void> registration_;  // after memory_: unregistered before it is unmapped
};

/// D2H pieces a run former keeps outstanding: each needs a sink buffer, and H2D refills wait
/// for them.
inline constexpr std::size_t run_former_d2h_window = 8;
/// Bytes per H2D/D2H copy when run_former_config::piece_bytes is 0. Measured on the H200
/// machine (16 GiB of u64 keys, 16 chunks): 8/16/32/64/128 MiB pieces gave 79/82/79-83/84/85 %
/// of one-way H2D; larger pieces mean fewer copies but coarser refill.
inline constexpr std::size_t run_former_default_piece_bytes = std::size_t{64} << 20;

struct run_former_config {
  int device = 0;
  record_format format{};  ///< must satisfy supports_format()
  bool descending = false;
  /// The GPU sort algorithm for every chunk.
  chunk_algorithm algorithm = chunk_algorithm::onesweep;
  /// Device memory to use in bytes; 0: most of the free memory.
  std::uint64_t memory_budget = 0;
  /// Upper bound on records per chunk (0: as many as the budget allows). Lets tests force
  /// many chunks and lets the planner balance chunk sizes.
  std::uint64_t max_chunk_records = 0;
  /// Records the caller will push, when known (0: unknown). When they fit one chunk, the
  /// second data slot is not allocated; pushing more is then an error.
  std::uint64_t expected_records = 0;
  /// Bytes per H2D/D2H copy (rounded to whole records); 0: a default of tens of MiB.
  std::size_t piece_bytes = 0;
  /// Tests: fill all device memory with 0xA5 at setup, and the auxiliary slot and CUB's
  /// workspace before every sort, so that a byte the sort fails to write shows in the output.
  bool poison_device_memory = false;
  /// The id of the first run: the sink sees runs first_run_id, first_run_id + 1, ... Formers
  /// on several GPUs that feed one sink or store take disjoint ranges, so run ids stay global.
  std::uint64_t first_run_id = 0;
};

/// How a run former divides device memory: three chunk slots and the sorter's workspace.
struct chunk_plan {
  std::uint64_t budget_bytes = 0;     ///< device memory it may use
  std::uint64_t chunk_records = 0;    ///< records per chunk; 0 when the budget holds none
  std::uint64_t slot_bytes = 0;
  std::uint64_t workspace_bytes = 0;  ///< the chunk sorter's workspace
  std::uint64_t piece_records = 0;    ///< records per H2D/D2H copy
};

/// The plan a run former with `config` makes on a device with `info` (free and total memory):
/// the planner asks it before choosing between one chunk and several. Host arithmetic only.
/// @throw gpusort::error when config.format is not supports_format()
[[nodiscard]] chunk_plan plan_chunks(const run_former_config& config, const device_info& info);

/// Whether a device of `total_bytes` may hold a chunk of `records` within config's budget: a
/// necessary condition, checked without opening the device (each of the former's three slots
/// holds a chunk), for plan_chunks to decide.
[[nodiscard]] bool may_hold_chunk(const run_former_config& config, std::uint64_t total_bytes,
                                  std::uint64_t records) noexcept;

class chunk_sorter;
/// As above, with the sorter the former will use (its slot layout and workspace).
[[nodiscard]] chunk_plan plan_chunks(const run_former_config& config, const device_info& info,
                                     const chunk_sorter& sorter);

/// Receives sorted runs (ids from run_former_config::first_run_id on). Called from the
/// former's own thread: runs in order, pieces of a run
/// in order of offset. piece_buffer() for the next run may come before run_done() of the
/// previous one; at most run_former_d2h_window pieces are outstanding (handed out,
/// piece_done() not yet called).
class run_sink {
 public:
  virtual ~run_sink() = default;
  /// Host memory (page-locked for full speed) to receive bytes [offset, offset + len) of run
  /// `run`; it must stay valid until piece_done for it returns. An empty span means no buffer
  /// is free now: the former keeps delivering finished pieces and asks again. Blocking here
  /// instead would hold back the piece_done() calls that free buffers.
  virtual std::span<std::byte> piece_buffer(std::uint64_t run, std::uint64_t offset,
                                            std::size_t len) = 0;
  /// Those bytes have landed.
  virtual void piece_done(std::uint64_t run, std::uint64_t offset,
                          std::span<std::byte> piece) = 0;
  /// Run `run` is complete: `records` records.
  virtual void run_done(std::uint64_t run, std::uint64_t records) = 0;
};

/**
 * Sorts chunks of records on one GPU.
 * - push() appends whole records in input order; chunks are cut every chunk_records().
 * - All callbacks run on the former's thread; an exception thrown by one fails the sort and is
 *   rethrown by push() or finish().
 * @throw gpusort::cuda_error on any CUDA failure, gpusort::out_of_memory when the budget does
 *        not hold even a small chunk.
 */
class run_former {
 public:
  run_former(const run_former_config& config, run_sink& sink, trace_recorder* trace);
  ~run_former();
  run_former(const run_former&) = delete;
  run_former& operator=(const run_former&) = delete;

  [[nodiscard]] std::uint64_t chunk_records() const noexcept;
  [[nodiscard]] const device_info& device() const noexcept;
  /// Tuning and memory plan, one line (for --verbose).
  [[nodiscard]] std::string describe() const;
  /// What the sorter chose for the chunks sorted so far (--algorithm auto), one line; empty
  /// when it makes no choice. Call it after finish().
  [[nodiscard]] std::string choices() const;

  /// Copies `records` to the device. `on_consumed` runs once the bytes are on the device and
  /// the caller may reuse the memory. `records` should be page-locked for full speed.
  /// Returns at once (the copy is queued); the memory must stay valid until on_consumed.
  /// After a failure, on_consumed still runs for every accepted push once the device no longer
  /// touches its memory, so that a caller waiting for buffers wakes up; push() then throws.
  /// @throw gpusort::error when `records` is not a whole number of records or after finish()
  void push(std::span<const std::byte> records, std::function<void()> on_consumed);
  /// The records pushed so far since the last run began form a run of their own, even short of
  /// a chunk (a key range sorted in place: strategy gpu_partition); the next push begins the
  /// next run. Nothing happens where no records are pending. Returns at once.
  /// @throw gpusort::error after finish() or a failure
  void end_run();
  /// Rethrows the former's failure, if it failed (it then delivers no more runs).
  void check() const;
  /// No more input: sorts the last chunk; returns once every run was delivered to the sink.
  /// Destroying the former without finish() abandons the sort: it waits until the device no
  /// longer touches caller or sink memory and runs no further callbacks.
  void finish();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace gpusort::gpu
