// Every tuning constant of the host pipeline in one place, each with where it was measured, and
// the relations between them checked at compile time (ips4o's Config is the model). The GPU run
// former's own constants (pieces in flight, piece size) live in gpu/run_former.hpp, which the
// checks here read.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gpu/run_former.hpp"
#include "io/direct_io.hpp"

namespace gpusort::pipeline {

// --- GPU stage: staging between the host and the device ---------------------------------------

/// Page-locked staging buffers per direction. The former keeps run_former_d2h_window D2H
/// pieces outstanding; fewer buffers would throttle it.
inline constexpr std::size_t staging_buffers = 8;
/// Pieces of 64 MiB measured 84% of one-way PCIe for 16 chunks, 16 MiB 81.5% (H200); 32 MiB
/// halves the staging to pin (1 GiB -> 512 MiB). Together with starting the output prefault
/// before CUDA initialises, the 8 GiB sort's median wall time fell from 1.49 s to 1.38 s.
inline constexpr std::size_t max_staging_bytes = std::size_t{32} << 20;
/// Small inputs get small buffers: pinning 512 MiB would cost more than their whole sort.
inline constexpr std::size_t min_staging_bytes = std::size_t{1} << 20;

/// Four readers, each with 16 requests of 1 MiB in the kernel's worker pool, read 8 GiB from
/// the page cache at 40-45 GB/s on the H200 machine (one reader: 9-10 GB/s; eight: no faster;
/// sixteen completing inline: 26-28 GB/s).
inline constexpr unsigned reader_threads = 4;
inline constexpr unsigned reader_queue_depth = 16;

/// Threads that page-lock run memory ahead of the former (run_pinner): registering measured
/// 14 GB/s on one thread and 42 GB/s on four (H100 machine, 1 GiB parts).
inline constexpr unsigned run_pin_threads = 4;

/// Runs the GPU path holds outside the run store once runs spill (collected, or being
/// written): the GPU forms runs faster than a disk takes them. make_plan keeps room for them
/// within -S.
inline constexpr std::uint64_t gpu_runs_held = 2;

/// Host copies into staging for the range sort, a few MiB each: a 32 MiB staging buffer is
/// filled by every thread at once.
inline constexpr std::size_t range_copy_grain = std::size_t{2} << 20;

/// Where the GPU's runs are this few, the host's vector merge writes the output sooner than a
/// second pass through the GPU by key range. H100 machine, u64, --gpu-memory 4G (runs of
/// 1.29 GiB), medians of 2: 4 runs merged 1.14-1.19 s against 1.28-1.31 s by range; 7 runs
/// 2.05 s against 2.01-2.18 s; 13 runs 3.99-4.60 s against 3.58-3.83 s.
inline constexpr std::uint64_t host_merge_max_runs = 8;

// --- CPU stage and run store -------------------------------------------------------------------

/// Bytes of input in flight per read request, and the smallest chunk worth forming.
inline constexpr std::uint64_t default_read_block = std::uint64_t{8} << 20;
inline constexpr std::uint64_t min_chunk_bytes = std::uint64_t{64} << 10;

/// Where a stream of unknown length starts: its buffer then doubles while the input keeps
/// coming, so that a short pipe does not reserve the whole budget.
inline constexpr std::uint64_t first_stream_buffer_bytes = std::uint64_t{64} << 20;

/// Unlocking and unmapping 16 GiB of page-locked runs takes tenths of a second on one thread;
/// the runs are independent, so a few threads share them.
inline constexpr std::size_t run_release_threads = 4;

/// Files that runs spilled through the page cache are striped across, each stripe written by
/// a thread of its own: one thread copies into the page cache at 2.6-3.3 GB/s (H100 machine),
/// and writes to one file wait for each other on its inode lock.
inline constexpr std::size_t spill_stripes = 8;
/// Runs are cut into stripes no smaller than this, so that each write still moves megabytes.
inline constexpr std::uint64_t min_stripe_bytes = std::uint64_t{64} << 20;

// --- merge of spilled runs ---------------------------------------------------------------------

/// Smallest read window of a spilled run being merged (the merge gives each run up to three
/// of them, out of what the resident runs leave of -S).
inline constexpr std::size_t merge_window_bytes = std::size_t{16} << 20;
/// Beyond what the next window needs, the merge reads ahead about one window of records per
/// round in all, to the spilled runs with the fewest records left, each in one read of at least
/// 1/merge_min_read_divisor of a window: a run's records then come in large reads, each
/// enough for several rounds, instead of every run's small share of each window at once (H100
/// machine: 16 runs' 4 MB shares took 140 ms for 64 MB, 0.46 GB/s, where one stream of 64 MB
/// reads ran at 1.5 GB/s on the same disk).
inline constexpr std::uint64_t merge_min_read_divisor = 4;
/// A merged run gives its disk blocks back every this many bytes: on a `discard` mount,
/// closing 16 GiB of runs at once had taken 5 s after the merge (H100 machine).
inline constexpr std::uint64_t merge_release_step = std::uint64_t{256} << 20;
/// Runs merged from memory give back the memory of their merged records every this many bytes
/// of output: the kernel's dirty-page limit is a share of the memory not held by processes, so
/// the output may grow dirty as fast as the runs shrink.
inline constexpr std::uint64_t merge_memory_release_step = std::uint64_t{512} << 20;

// --- how they relate -----------------------------------------------------------------------------

static_assert(min_staging_bytes <= max_staging_bytes);
static_assert(staging_buffers >= gpu::run_former_d2h_window,
              "each outstanding D2H piece holds a staging buffer");
static_assert(reader_threads < staging_buffers,
              "each reader holds a staging buffer while it reads; the former needs one too");
static_assert(reader_queue_depth >= 1 && reader_threads >= 1 && run_pin_threads >= 1);
static_assert(max_staging_bytes % range_copy_grain == 0,
              "copy grains tile a staging buffer: every thread gets a whole one");
static_assert(merge_window_bytes % io::direct_io_alignment == 0,
              "merge windows take O_DIRECT reads of whole blocks");
static_assert(gpu_runs_held >= 1, "the former needs somewhere to put the run it forms");

}  // namespace gpusort::pipeline
