// Dispatch layer of the hybrid radix sort: workspace size, launch shapes, the launches of one
// sort and their checks. Definitions in hrs_dispatch_impl.cuh, instantiated per key/value type in
// hrs_*.cu (compiled in parallel). Key words are normalized unsigned keys (u32 or u64); Value is
// a packed payload word or hrs::no_value.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/hrs/hrs_tuning.cuh"
#include "gpu/hrs/hrs_workspace.cuh"

namespace gpusort::gpu::hrs {

/// Grid sizes on one device: enough thread blocks to fill it (occupancy x multiprocessors);
/// the kernels loop over the work the device produced.
struct device_shapes {
  int device = -1;
  int compute_capability = 0;  ///< major * 10 + minor
  int multiprocessors = 0;
  int histogram_grid = 0;
  int joint_grid = 0;  ///< at most max_joint_blocks
  int plan_grid = 0;
  int scatter_grid = 0;
  /// The same for rounds whose zero digit takes 16 bits (0 where the sort cannot extend).
  int extended_histogram_grid = 0;
  int extended_plan_grid = 0;
  int extended_scatter_grid = 0;
  int init_grid = 0;
  int local_grid[max_local_configs] = {};
  /// The launch shapes these grids are for (a sort's tuning must have the same).
  std::uint32_t counting_threads = 0;
  int local_config_count = 0;
  local_config local_configs[max_local_configs] = {};
};

/// The compute capability of `device`.
/// @throw gpusort::cuda_error
[[nodiscard]] int compute_capability(int device);

/// Launch shapes of the sort of Key/Value with `requested` tuning on `device`; raises the
/// kernels' dynamic shared-memory limits there. Host, synchronous.
/// @throw gpusort::error for a tuning resolve() rejects, gpusort::cuda_error
template <typename Key, typename Value>
[[nodiscard]] device_shapes prepare(int device, const tuning& requested);

/// `requested` with the policy's defaults filled in.
/// @throw gpusort::error when a threshold is out of range (local threshold above the largest
///        local configuration, merge threshold 0 or above half the local threshold)
template <typename Key, typename Value>
[[nodiscard]] tuning resolve(const tuning& requested, int compute_capability);

/// Workspace bytes of a sort of `n` keys (host arithmetic, as CUB's temp-storage query).
template <typename Key, typename Value>
[[nodiscard]] std::uint64_t workspace_bytes(std::uint64_t n, const tuning& requested,
                                            int compute_capability);

/// Told of each kernel launch of a sort (benchmarks record an event between kernels).
class launch_observer {
 public:
  virtual ~launch_observer() = default;
  /// `kernel` ("init", "histogram", "plan", "scatter", "local") was enqueued on `stream`;
  /// `index` is its round, or its local configuration.
  virtual void launched(const char* kernel, int index, cudaStream_t stream) = 0;
};

/**
 * Sorts the n keys in keys[0] ascending, moving values[0] along for pairs; keys[1] and
 * values[1] are the alternate buffers. The result is always in keys[0] / values[0]. Equal keys
 * keep no particular order. Asynchronous on `stream`; the workspace is overwritten.
 * `shapes` must come from prepare() with a tuning of the same launch shapes (counting threads,
 * local configurations) as `requested`.
 * @throw gpusort::error when the workspace is smaller than workspace_bytes(n) or the shapes
 *        do not match, gpusort::cuda_error when a launch fails
 */
template <typename Key, typename Value>
void sort(const device_shapes& shapes, const tuning& requested, Key* const keys[2],
          Value* const values[2], std::uint64_t n, std::byte* d_workspace,
          std::size_t workspace_size, cudaStream_t stream, launch_observer* observer = nullptr);

// --- the first round on its own: a multi-GPU exchange ------------------------------------------
// A sort over several GPUs (multi_gpu_sort.cu) makes HRS's first counting round its exchange:
// every GPU counts the top digit of its slice (count_first_digit), the host gives each GPU whole
// digits, every GPU scatters its slice straight into the destinations' buffers at cursors the
// host computed (scatter_first_digit), and each GPU sorts what it received from the second
// round on (sort_from_second_round). The keys cross the link once, in a pass that one GPU alone
// would have made too. Key-only sorts.

/// Keys of a section of round 0 at least (a few of them per section at most are cut; the
/// sections of a slice: between 1 and its keys / this, see count_first_digit()).
inline constexpr std::uint64_t min_section_keys = std::uint64_t{1} << 22;

/**
 * Round 0's histogram of the n >= 1 keys at `keys`, cut into `sections` runs of consecutive
 * key blocks (1 <= sections <= max(1, n / min_section_keys)): enqueues the count of each top
 * digit d in section j into h_counts[j * radix + d] (page-locked host memory of sections x
 * radix entries, valid once `stream` is synchronized), and keeps the key blocks' histograms in
 * the workspace for scatter_first_digit() with the same n.
 * @throw as sort(); gpusort::error for more sections than the keys allow
 */
template <typename Key>
void count_first_digit(const device_shapes& shapes, const tuning& requested, const Key* keys,
                       std::uint64_t n, std::byte* d_workspace, std::size_t workspace_size,
                       std::uint32_t sections, std::uint64_t* h_counts, cudaStream_t stream);

/// Which of count_first_digit()'s sections a scatter launch takes (all of them: {0, 1}).
struct first_round_section {
  std::uint32_t index = 0;
  std::uint32_t count = 1;
};

/**
 * Round 0's scatter after count_first_digit() of the same keys: the keys of top digit d go to
 * consecutive places from base + cursors[d] (in keys, modulo 2^64: a cursor may reach another
 * allocation, on another GPU through unified addressing, as its distance from base), in no
 * particular order within a digit. `cursors` is host memory, read before returning.
 * A scatter may go a section at a time, the sections in order on one stream (cursors are read
 * for section 0 only, then each digit continues where the last section left it): section j's
 * keys of digit d then lie right after those of sections 0..j-1, as many as counted for j.
 * @throw as sort()
 */
template <typename Key>
void scatter_first_digit(const device_shapes& shapes, const tuning& requested, const Key* keys,
                         Key* base, std::uint64_t n, const std::uint64_t* cursors,
                         first_round_section section, std::byte* d_workspace,
                         std::size_t workspace_size, cudaStream_t stream);

/**
 * Sorts n keys that lie in keys[1] grouped by their top digit, digit_counts[d] of digit d
 * (host memory, radix entries summing to n), as round 0 would have left them: the sorted keys
 * end in keys[0]. @throw gpusort::error when the counts do not add up to n; as sort()
 */
template <typename Key>
void sort_from_second_round(const device_shapes& shapes, const tuning& requested,
                            Key* const keys[2], const std::uint64_t* digit_counts,
                            std::uint64_t n, std::byte* d_workspace, std::size_t workspace_size,
                            cudaStream_t stream);

/// "counting 256x16 (4096 keys per block), local 64x9..512x18 in 10 configurations, ...".
template <typename Key, typename Value>
[[nodiscard]] std::string describe(const tuning& requested, int compute_capability);

/// The counters a sort left in its workspace: buckets and key blocks per round, jobs per local
/// configuration, the overflow flag. Synchronizes `stream` (tests and benchmarks).
/// @throw gpusort::cuda_error
[[nodiscard]] counters read_counters(const std::byte* d_workspace, cudaStream_t stream);

}  // namespace gpusort::gpu::hrs
