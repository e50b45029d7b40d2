// Definitions of the HRS dispatch layer (hrs_dispatch.cuh); included only by the hrs_*.cu files
// that instantiate it for one key/value type each.
#pragma once

#include <algorithm>
#include <cstddef>
#include <sstream>

#include "gpu/cuda_check.cuh"
#include "gpu/hrs/hrs_dispatch.cuh"
#include "gpu/hrs/hrs_kernels.cuh"
#include "gpusort/error.hpp"

namespace gpusort::gpu::hrs {
namespace detail {

template <typename Value>
inline constexpr int value_bytes = has_values<Value> ? static_cast<int>(sizeof(Value)) : 0;

template <typename Key, typename Value>
using policies_of = policies<static_cast<int>(sizeof(Key)), value_bytes<Value>>;

/// Key-only sorts are compiled with zero-extended digits too; pairs only with 8-bit digits.
template <typename Value>
inline constexpr bool can_extend = !has_values<Value>;

/// Calls f(byte_digits{}) or, for an extended round, f(zero_extended_digits{}).
template <typename Value, typename F>
void with_digits(bool extended, F&& f) {
  if constexpr (can_extend<Value>) {
    if (extended) {
      f(zero_extended_digits{});
      return;
    }
  }
  f(byte_digits{});
}

/// Threads of the init kernel's blocks (it only writes the first key-block list).
inline constexpr int init_threads = 256;
/// Init blocks per multiprocessor at most: enough to write the first list at full speed.
inline constexpr int init_blocks_per_sm = 8;

template <typename Policy>
layout_params layout_params_of(std::uint32_t key_bytes, const tuning& t) {
  layout_params p;
  p.key_bytes = key_bytes;
  p.keys_per_block = t.counting_threads * Policy::counting.keys_per_thread;
  p.local_threshold = t.local_threshold;
  p.merge_threshold = t.merge_threshold;
  p.config_count = t.local_config_count;
  p.joint_min_keys = t.joint_min_keys;
  p.extend_from_round = t.extend_from_round;
  for (int c = 0; c < t.local_config_count; ++c)
    p.config_capacity[c] = t.local_configs[c].capacity();
  return p;
}

/// `requested` with the policy's defaults filled in, checked.
template <typename Policy, typename Key, typename Value>
tuning resolve_with(const tuning& requested) {
  tuning t = requested;
  if (t.local_config_count == 0) {
    t.local_config_count = Policy::local_config_count;
    for (int c = 0; c < Policy::local_config_count; ++c)
      t.local_configs[c] = Policy::local_configs[c];
  }
  GPUSORT_EXPECTS(t.local_config_count >= 1 && t.local_config_count <= max_local_configs,
                  "HRS: between 1 and " + std::to_string(max_local_configs) +
                      " local configurations");
  for (int c = 0; c < t.local_config_count; ++c) {
    const local_config lc = t.local_configs[c];
    GPUSORT_EXPECTS(lc.keys_per_thread == Policy::small_keys_per_thread ||
                        lc.keys_per_thread == Policy::large_keys_per_thread,
                    "HRS: local configuration " + std::to_string(c) + ": " +
                        std::to_string(lc.keys_per_thread) + " keys per thread is not compiled (" +
                        std::to_string(Policy::small_keys_per_thread) + " or " +
                        std::to_string(Policy::large_keys_per_thread) + ")");
    GPUSORT_EXPECTS(lc.block_threads > 0 && lc.block_threads % warp_threads == 0 &&
                        lc.block_threads <= Policy::max_local_threads,
                    "HRS: local configuration " + std::to_string(c) + ": " +
                        std::to_string(lc.block_threads) + " threads (a multiple of 32 up to " +
                        std::to_string(Policy::max_local_threads) + ")");
    GPUSORT_EXPECTS(c == 0 || t.local_configs[c - 1].capacity() < lc.capacity(),
                    "HRS: local configurations must grow");
  }
  const std::uint32_t largest = t.local_configs[t.local_config_count - 1].capacity();
  if (t.local_threshold == 0) t.local_threshold = largest;
  if (t.merge_threshold == 0)
    t.merge_threshold = std::min(Policy::merge_threshold, (t.local_threshold + 1) / 2);
  if (t.counting_threads == 0) t.counting_threads = Policy::counting.block_threads;
  if (t.skew_divisor == 0) t.skew_divisor = Policy::skew_divisor;
  if (t.local_match == static_cast<match_mode>(0)) t.local_match = Policy::local_match;
  if (t.rank_group_max == 0) t.rank_group_max = Policy::rank_group_max;
  if (t.group_bits == 0) t.group_bits = Policy::group_bits;
  if (t.joint_min_keys == 0) t.joint_min_keys = Policy::joint_min_keys;
  if (t.extend_from_round < 0) t.extend_from_round = Policy::extend_from_round;
  t.extend_from_round = std::min(t.extend_from_round, static_cast<int>(sizeof(Key)));
  GPUSORT_EXPECTS(can_extend<Value> || t.extend_from_round == static_cast<int>(sizeof(Key)),
                  "HRS: pairs count 8-bit digits in every round (no zero-digit extension)");
  GPUSORT_EXPECTS(t.group_bits >= radix_bits && t.group_bits <= max_group_bits,
                  "HRS: the local sort groups by 8 to " + std::to_string(max_group_bits) +
                      " bits, not " + std::to_string(t.group_bits));
  GPUSORT_EXPECTS(t.local_threshold <= largest,
                  "HRS: local threshold " + std::to_string(t.local_threshold) +
                      " is above the largest local sort (" + std::to_string(largest) + " keys)");
  GPUSORT_EXPECTS(t.merge_threshold >= 1 && t.merge_threshold <= (t.local_threshold + 1) / 2,
                  "HRS: merge threshold " + std::to_string(t.merge_threshold) +
                      " must be between 1 and half the local threshold");
  GPUSORT_EXPECTS(t.counting_threads % warp_threads == 0 && t.counting_threads >= warp_threads &&
                      t.counting_threads <= Policy::max_counting_threads,
                  "HRS: " + std::to_string(t.counting_threads) +
                      " counting threads (a multiple of 32 up to " +
                      std::to_string(Policy::max_counting_threads) + ")");
  GPUSORT_EXPECTS(t.local_match == match_mode::atomic_or || t.local_match == match_mode::match_any,
                  "HRS: unknown local match mode");
  return t;
}

/// Thread blocks of `threads` and `smem` bytes that fill the device.
template <typename Kernel>
int fill_grid(Kernel kernel, int threads, std::size_t smem, int multiprocessors) {
  int per_sm = 0;
  GPUSORT_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
  GPUSORT_EXPECTS(per_sm > 0, "HRS: a kernel does not fit a multiprocessor (" +
                                  std::to_string(threads) + " threads, " + std::to_string(smem) +
                                  " bytes of shared memory)");
  return per_sm * multiprocessors;
}

/// The local-sort kernel of a configuration's keys per thread.
template <typename Key, typename Value, typename Policy>
auto local_kernel_for(int keys_per_thread) {
  return keys_per_thread == Policy::small_keys_per_thread
             ? &local_sort_kernel<Key, Value, Policy, Policy::small_keys_per_thread>
             : &local_sort_kernel<Key, Value, Policy, Policy::large_keys_per_thread>;
}

}  // namespace detail

template <typename Key, typename Value>
device_shapes prepare(int device, const tuning& requested) {
  device_shapes s;
  s.device = device;
  s.compute_capability = compute_capability(device);
  GPUSORT_CUDA_TRY(
      cudaDeviceGetAttribute(&s.multiprocessors, cudaDevAttrMultiProcessorCount, device));
  with_policy(detail::policies_of<Key, Value>{}, s.compute_capability, [&](auto policy) {
    using P = decltype(policy);
    const tuning t = detail::resolve_with<P, Key, Value>(requested);
    s.counting_threads = t.counting_threads;
    s.local_config_count = t.local_config_count;
    for (int c = 0; c < t.local_config_count; ++c) s.local_configs[c] = t.local_configs[c];
    const int sms = s.multiprocessors;
    const int threads = static_cast<int>(t.counting_threads);
    int smem_limit = 0;
    GPUSORT_CUDA_TRY(
        cudaDeviceGetAttribute(&smem_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    auto check_smem = [&](std::size_t bytes, const std::string& what) {
      GPUSORT_EXPECTS(bytes <= static_cast<std::size_t>(smem_limit),
                      "HRS: " + what + " needs " + std::to_string(bytes) +
                          " bytes of shared memory, a block may have " +
                          std::to_string(smem_limit));
    };
    check_smem(scatter_smem_bytes<Key, Value>(threads, P::counting.keys_per_thread),
               "the scatter");
    for (int c = 0; c < t.local_config_count; ++c)
      check_smem(local_smem_bytes<Key, Value>(t.local_configs[c].block_threads,
                                              t.local_configs[c].keys_per_thread),
                 "local configuration " + std::to_string(c));
    s.histogram_grid =
        detail::fill_grid(histogram_kernel<Key, Value, P, byte_digits>, threads, 0, sms);
    check_smem(joint_smem_bytes, "the joint histogram");
    GPUSORT_CUDA_TRY(cudaFuncSetAttribute(joint_histogram_kernel<Key, Value, P>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(joint_smem_bytes)));
    s.joint_grid = std::min(static_cast<int>(max_joint_blocks),
                            detail::fill_grid(joint_histogram_kernel<Key, Value, P>,
                                              joint_threads, joint_smem_bytes, sms));
    s.plan_grid = detail::fill_grid(plan_kernel<Key, Value, P, byte_digits>, radix, 0, sms);
    const std::size_t scatter_smem =
        scatter_smem_bytes<Key, Value>(threads, P::counting.keys_per_thread);
    for (const auto kernel : {scatter_kernel<Key, Value, P, false, byte_digits>,
                              scatter_kernel<Key, Value, P, true, byte_digits>})
      GPUSORT_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(scatter_smem)));
    // Both scatters take the same grid: the self-counting one holds as many blocks.
    s.scatter_grid = detail::fill_grid(scatter_kernel<Key, Value, P, false, byte_digits>,
                                       threads, scatter_smem, sms);
    if constexpr (detail::can_extend<Value>) {
      using wide = zero_extended_digits;
      s.extended_histogram_grid =
          detail::fill_grid(histogram_kernel<Key, Value, P, wide>, threads, 0, sms);
      s.extended_plan_grid =
          detail::fill_grid(plan_kernel<Key, Value, P, wide>, wide::bins, 0, sms);
      const auto scatter = scatter_kernel<Key, Value, P, false, wide>;
      GPUSORT_CUDA_TRY(cudaFuncSetAttribute(scatter, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            static_cast<int>(scatter_smem)));
      s.extended_scatter_grid = detail::fill_grid(scatter, threads, scatter_smem, sms);
    }
    s.init_grid = sms * detail::init_blocks_per_sm;
    // Each local kernel may take the largest shared memory of its configurations.
    for (const int kpt : {P::small_keys_per_thread, P::large_keys_per_thread}) {
      std::size_t largest = 0;
      for (int c = 0; c < t.local_config_count; ++c) {
        const local_config lc = t.local_configs[c];
        if (lc.keys_per_thread == kpt)
          largest = std::max(largest, local_smem_bytes<Key, Value>(lc.block_threads, kpt));
      }
      if (largest != 0)
        GPUSORT_CUDA_TRY(cudaFuncSetAttribute(detail::local_kernel_for<Key, Value, P>(kpt),
                                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              static_cast<int>(largest)));
    }
    for (int c = 0; c < t.local_config_count; ++c) {
      const local_config lc = t.local_configs[c];
      s.local_grid[c] = detail::fill_grid(
          detail::local_kernel_for<Key, Value, P>(lc.keys_per_thread), lc.block_threads,
          local_smem_bytes<Key, Value>(lc.block_threads, lc.keys_per_thread), sms);
    }
  });
  return s;
}

template <typename Key, typename Value>
tuning resolve(const tuning& requested, int cc) {
  tuning t;
  with_policy(detail::policies_of<Key, Value>{}, cc,
              [&](auto policy) {
                t = detail::resolve_with<decltype(policy), Key, Value>(requested);
              });
  return t;
}

template <typename Key, typename Value>
std::uint64_t workspace_bytes(std::uint64_t n, const tuning& requested, int cc) {
  std::uint64_t bytes = 0;
  with_policy(detail::policies_of<Key, Value>{}, cc, [&](auto policy) {
    using P = decltype(policy);
    const tuning t = detail::resolve_with<P, Key, Value>(requested);
    bytes = make_layout(n, detail::layout_params_of<P>(sizeof(Key), t)).total_bytes;
  });
  return bytes;
}

namespace detail {

/// The tuning of a sort with `shapes`, resolved and checked against them, and its arguments
/// over `n` keys with this workspace.
template <typename Key, typename Value, typename Policy>
struct launch_setup {
  tuning t;
  sort_args<Key, Value> a;
};

/// How a sort's round 0 is run.
enum class first_round : std::uint8_t {
  here,      ///< by this sort
  exchange,  ///< with 8-bit digits by the multi-GPU exchange (counted, scattered, or both)
};

/// The launch setup of a sort; first_round::exchange: round 0 has 8-bit digits, and a sort
/// from the second round has no joint histogram.
template <typename Key, typename Value, typename Policy>
launch_setup<Key, Value, Policy> setup_launch(const device_shapes& shapes,
                                              const tuning& requested, Key* const keys[2],
                                              Value* const values[2], std::uint64_t n,
                                              std::byte* d_workspace,
                                              std::size_t workspace_size,
                                              first_round first = first_round::here) {
  launch_setup<Key, Value, Policy> s;
  s.t = resolve_with<Policy, Key, Value>(requested);
  const tuning& t = s.t;
  bool same_shapes = shapes.counting_threads == t.counting_threads &&
                     shapes.local_config_count == t.local_config_count;
  for (int c = 0; same_shapes && c < t.local_config_count; ++c)
    same_shapes = shapes.local_configs[c] == t.local_configs[c];
  GPUSORT_EXPECTS(same_shapes, "HRS: the launch shapes were prepared for another tuning");
  const layout_params lp = layout_params_of<Policy>(sizeof(Key), t);
  const workspace_layout l = make_layout(n, lp);
  GPUSORT_EXPECTS(workspace_size >= l.total_bytes,
                  "HRS: workspace of " + std::to_string(workspace_size) + " bytes, " +
                      std::to_string(l.total_bytes) + " needed for " + std::to_string(n) +
                      " keys");
  sort_args<Key, Value>& a = s.a;
  for (int i = 0; i < 2; ++i) {
    a.keys[i] = keys[i];
    a.values[i] = values[i];
  }
  a.n = n;
  a.keys_per_block = lp.keys_per_block;
  a.local_threshold = t.local_threshold;
  a.merge_threshold = t.merge_threshold;
  a.skew_divisor = t.skew_divisor;
  a.local_match = t.local_match;
  a.rank_group_max = t.rank_group_max;
  a.group_bits = t.group_bits;
  a.config_count = lp.config_count;
  auto clamp32 = [](std::uint64_t v) {
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(v, ~std::uint32_t{0}));
  };
  for (int c = 0; c < lp.config_count; ++c) {
    a.config_capacity[c] = lp.config_capacity[c];
    a.ws.jobs[c] = reinterpret_cast<local_job*>(d_workspace + l.jobs_offset[c]);
    a.ws.job_capacity[c] = clamp32(l.job_capacity[c]);
  }
  a.ws.ctr = reinterpret_cast<counters*>(d_workspace + l.counters_offset);
  for (int p = 0; p < 2; ++p) {
    a.ws.buckets[p] = reinterpret_cast<bucket*>(d_workspace + l.buckets_offset[p]);
    a.ws.bucket_hist[p] =
        reinterpret_cast<unsigned long long*>(d_workspace + l.bucket_hist_offset[p]);
    a.ws.blocks[p] = reinterpret_cast<key_block*>(d_workspace + l.blocks_offset[p]);
  }
  a.ws.block_hist = reinterpret_cast<std::uint32_t*>(d_workspace + l.block_hist_offset);
  a.ws.bucket_capacity = clamp32(l.bucket_capacity);
  a.ws.block_capacity = clamp32(l.block_capacity);
  // A sort that starts from round 1 (its round 0 counted and scattered elsewhere) has no joint
  // histogram to read: round 1 counts its own histograms.
  const bool joint = l.joint && first == first_round::here;
  if (joint) {
    a.ws.joint_partials = reinterpret_cast<std::uint32_t*>(d_workspace + l.joint_partials_offset);
    a.ws.joint_carries =
        reinterpret_cast<unsigned long long*>(d_workspace + l.joint_carries_offset);
    a.ws.joint = reinterpret_cast<unsigned long long*>(d_workspace + l.joint_offset);
  }
  // The exchange counts round 0 with 8-bit digits.
  a.extend_from_round = first == first_round::exchange ? std::max(t.extend_from_round, 1)
                                                       : first_extended_round(n, t);
  return s;
}

/// Round 0's key blocks of the setup's keys, as init_kernel lays them out.
template <typename Key, typename Value, typename Policy>
std::uint64_t first_round_blocks(const launch_setup<Key, Value, Policy>& s) {
  return (s.a.n + s.a.keys_per_block - 1) / s.a.keys_per_block;
}

/// Thread blocks of section_counts_kernel, over all sections.
inline constexpr unsigned section_count_blocks = 1024;

/// Checks a launch and tells the observer.
inline void launched(launch_observer* observer, const char* kernel, int index,
                     cudaStream_t stream) {
  GPUSORT_CUDA_CHECK_LAUNCH();
  if (observer != nullptr) observer->launched(kernel, index, stream);
}

/// Zeroes the counters and enqueues round 0's assignment: one bucket of every key (or one
/// local job where they fit one and `count_all` is false).
template <typename Key, typename Value, typename Policy>
void launch_init(const device_shapes& shapes, const launch_setup<Key, Value, Policy>& s,
                 bool count_all, cudaStream_t stream, launch_observer* observer) {
  GPUSORT_CUDA_TRY(cudaMemsetAsync(s.a.ws.ctr, 0, sizeof(counters), stream));
  const std::uint64_t first_blocks = s.a.n / s.a.keys_per_block + 1;
  const int init_grid = static_cast<int>(std::min<std::uint64_t>(
      shapes.init_grid, (first_blocks + init_threads - 1) / init_threads));
  init_kernel<Key, Value, Policy><<<init_grid, init_threads, 0, stream>>>(s.a, count_all);
  launched(observer, "init", 0, stream);
}

/// The counting passes of rounds [first, key_digits), then the local sorts: a constant number
/// of launches per round; a round with no bucket left costs only its launches (every block
/// reads a zero count and returns).
template <typename Key, typename Value, typename Policy>
void launch_rounds(const device_shapes& shapes, const launch_setup<Key, Value, Policy>& s,
                   int first, cudaStream_t stream, launch_observer* observer) {
  const int threads = static_cast<int>(s.t.counting_threads);
  const std::size_t scatter_smem =
      scatter_smem_bytes<Key, Value>(threads, Policy::counting.keys_per_thread);
  const bool joint = s.a.ws.joint != nullptr;
  for (int round = first; round < key_digits<Key>; ++round) {
    const bool extended = round >= s.a.extend_from_round;
    with_digits<Value>(extended, [&](auto digits) {
      using D = decltype(digits);
      const int histogram_grid = extended ? shapes.extended_histogram_grid : shapes.histogram_grid;
      const int plan_grid = extended ? shapes.extended_plan_grid : shapes.plan_grid;
      const int scatter_grid = extended ? shapes.extended_scatter_grid : shapes.scatter_grid;
      if (joint && round == 0) {
        // Round 1's histograms come with round 0's.
        joint_histogram_kernel<Key, Value, Policy>
            <<<shapes.joint_grid, joint_threads, joint_smem_bytes, stream>>>(s.a);
        launched(observer, "histogram", round, stream);
        joint_totals_kernel<Key, Value, Policy><<<radix, radix / 2, 0, stream>>>(
            s.a, static_cast<std::uint32_t>(shapes.joint_grid));
        launched(observer, "joint totals", round, stream);
      } else if (!(joint && round == 1)) {
        histogram_kernel<Key, Value, Policy, D>
            <<<histogram_grid, threads, 0, stream>>>(s.a, round);
        launched(observer, "histogram", round, stream);
      }
      plan_kernel<Key, Value, Policy, D><<<plan_grid, D::bins, 0, stream>>>(s.a, round);
      launched(observer, "plan", round, stream);
      // After a joint histogram, rounds 0 and 1 have no stored key-block histograms to read.
      if (joint && round <= 1) {
        scatter_kernel<Key, Value, Policy, true, byte_digits>
            <<<scatter_grid, threads, scatter_smem, stream>>>(s.a, round, block_window{});
      } else {
        scatter_kernel<Key, Value, Policy, false, D>
            <<<scatter_grid, threads, scatter_smem, stream>>>(s.a, round, block_window{});
      }
      launched(observer, "scatter", round, stream);
    });
  }
}

template <typename Key, typename Value, typename Policy>
void launch_locals(const device_shapes& shapes, const launch_setup<Key, Value, Policy>& s,
                   cudaStream_t stream, launch_observer* observer) {
  for (int c = 0; c < s.t.local_config_count; ++c) {
    const local_config lc = s.t.local_configs[c];
    const std::size_t smem = local_smem_bytes<Key, Value>(lc.block_threads, lc.keys_per_thread);
    const auto kernel = local_kernel_for<Key, Value, Policy>(lc.keys_per_thread);
    kernel<<<shapes.local_grid[c], lc.block_threads, smem, stream>>>(s.a, c);
    launched(observer, "local", c, stream);
  }
}

}  // namespace detail

template <typename Key, typename Value>
void sort(const device_shapes& shapes, const tuning& requested, Key* const keys[2],
          Value* const values[2], std::uint64_t n, std::byte* d_workspace,
          std::size_t workspace_size, cudaStream_t stream, launch_observer* observer) {
  if (n == 0) return;
  with_policy(detail::policies_of<Key, Value>{}, shapes.compute_capability, [&](auto policy) {
    using P = decltype(policy);
    const auto s = detail::setup_launch<Key, Value, P>(shapes, requested, keys, values, n,
                                                       d_workspace, workspace_size);
    detail::launch_init(shapes, s, false, stream, observer);
    if (n > s.t.local_threshold) detail::launch_rounds(shapes, s, 0, stream, observer);
    detail::launch_locals(shapes, s, stream, observer);
  });
}

template <typename Key>
void count_first_digit(const device_shapes& shapes, const tuning& requested, const Key* keys,
                       std::uint64_t n, std::byte* d_workspace, std::size_t workspace_size,
                       std::uint32_t sections, std::uint64_t* h_counts, cudaStream_t stream) {
  GPUSORT_EXPECTS(n >= 1, "HRS: counting the first digit of no keys");
  with_policy(detail::policies_of<Key, no_value>{}, shapes.compute_capability, [&](auto policy) {
    using P = decltype(policy);
    Key* const k[2] = {const_cast<Key*>(keys), nullptr};
    no_value* const v[2] = {nullptr, nullptr};
    const auto s = detail::setup_launch<Key, no_value, P>(shapes, requested, k, v, n,
                                                          d_workspace, workspace_size,
                                                          detail::first_round::exchange);
    const std::uint64_t blocks = detail::first_round_blocks(s);
    // The section counts borrow round 1's bucket histograms.
    GPUSORT_EXPECTS(sections >= 1 && sections <= blocks && sections <= s.a.ws.bucket_capacity,
                    "HRS: " + std::to_string(sections) + " sections of " + std::to_string(n) +
                        " keys");
    detail::launch_init(shapes, s, true, stream, nullptr);
    histogram_kernel<Key, no_value, P, byte_digits>
        <<<shapes.histogram_grid, static_cast<int>(s.t.counting_threads), 0, stream>>>(s.a, 0);
    detail::launched(nullptr, "histogram", 0, stream);
    unsigned long long* counts = s.a.ws.bucket_hist[0];
    if (sections > 1) {
      // Free until a sort from the second round plans round 1.
      counts = s.a.ws.bucket_hist[1];
      const std::size_t bytes = std::size_t{sections} * radix * sizeof(std::uint64_t);
      GPUSORT_CUDA_TRY(cudaMemsetAsync(counts, 0, bytes, stream));
      // About a thousand blocks in all: each sums a run of stored block histograms.
      const dim3 grid(std::max(1u, detail::section_count_blocks / sections), sections);
      section_counts_kernel<Key, no_value, P><<<grid, radix, 0, stream>>>(
          s.a, static_cast<std::uint32_t>(blocks), counts);
      detail::launched(nullptr, "section counts", 0, stream);
    }
    GPUSORT_CUDA_TRY(cudaMemcpyAsync(h_counts, counts,
                                     std::size_t{sections} * radix * sizeof(std::uint64_t),
                                     cudaMemcpyDeviceToHost, stream));
  });
}

template <typename Key>
void scatter_first_digit(const device_shapes& shapes, const tuning& requested, const Key* keys,
                         Key* base, std::uint64_t n, const std::uint64_t* cursors,
                         first_round_section section, std::byte* d_workspace,
                         std::size_t workspace_size, cudaStream_t stream) {
  GPUSORT_EXPECTS(n >= 1, "HRS: scattering no keys");
  GPUSORT_EXPECTS(section.index < section.count,
                  "HRS: section " + std::to_string(section.index) + " of " +
                      std::to_string(section.count));
  with_policy(detail::policies_of<Key, no_value>{}, shapes.compute_capability, [&](auto policy) {
    using P = decltype(policy);
    Key* const k[2] = {const_cast<Key*>(keys), base};
    no_value* const v[2] = {nullptr, nullptr};
    const auto s = detail::setup_launch<Key, no_value, P>(shapes, requested, k, v, n,
                                                          d_workspace, workspace_size,
                                                          detail::first_round::exchange);
    if (section.index == 0) {
      first_round_cursors c;
      std::copy(cursors, cursors + radix, c.at);
      set_cursors_kernel<Key, no_value, P><<<1, radix, 0, stream>>>(s.a, c);
      detail::launched(nullptr, "cursors", 0, stream);
    }
    const auto blocks = static_cast<std::uint32_t>(detail::first_round_blocks(s));
    const block_window window{section_first_block(section.index, section.count, blocks),
                              section_first_block(section.index + 1, section.count, blocks)};
    const int threads = static_cast<int>(s.t.counting_threads);
    scatter_kernel<Key, no_value, P, false, byte_digits>
        <<<shapes.scatter_grid, threads,
           scatter_smem_bytes<Key, no_value>(threads, P::counting.keys_per_thread), stream>>>(
            s.a, 0, window);
    detail::launched(nullptr, "scatter", 0, stream);
  });
}

template <typename Key>
void sort_from_second_round(const device_shapes& shapes, const tuning& requested,
                            Key* const keys[2], const std::uint64_t* digit_counts,
                            std::uint64_t n, std::byte* d_workspace, std::size_t workspace_size,
                            cudaStream_t stream) {
  std::uint64_t total = 0;
  for (int d = 0; d < radix; ++d) total += digit_counts[d];
  GPUSORT_EXPECTS(total == n, "HRS: digit counts of " + std::to_string(total) + " keys for " +
                                  std::to_string(n));
  if (n == 0) return;
  with_policy(detail::policies_of<Key, no_value>{}, shapes.compute_capability, [&](auto policy) {
    using P = decltype(policy);
    no_value* const v[2] = {nullptr, nullptr};
    const auto s = detail::setup_launch<Key, no_value, P>(shapes, requested, keys, v, n,
                                                          d_workspace, workspace_size,
                                                          detail::first_round::exchange);
    GPUSORT_CUDA_TRY(cudaMemsetAsync(s.a.ws.ctr, 0, sizeof(counters), stream));
    first_round_counts c;
    std::copy(digit_counts, digit_counts + radix, c.count);
    seed_second_round_kernel<Key, no_value, P><<<1, radix, 0, stream>>>(s.a, c);
    detail::launched(nullptr, "seed", 0, stream);
    plan_kernel<Key, no_value, P, byte_digits><<<shapes.plan_grid, radix, 0, stream>>>(s.a, 0);
    detail::launched(nullptr, "plan", 0, stream);
    detail::launch_rounds(shapes, s, 1, stream, nullptr);
    detail::launch_locals(shapes, s, stream, nullptr);
  });
}

template <typename Key, typename Value>
std::string describe(const tuning& requested, int cc) {
  std::ostringstream os;
  with_policy(detail::policies_of<Key, Value>{}, cc, [&](auto policy) {
    using P = decltype(policy);
    const tuning t = detail::resolve_with<P, Key, Value>(requested);
    os << "counting " << t.counting_threads << "x" << P::counting.keys_per_thread << " ("
       << t.counting_threads * P::counting.keys_per_thread << " keys per block), local "
       << t.local_configs[0] << ".." << t.local_configs[t.local_config_count - 1] << " in "
       << t.local_config_count << " configurations ("
       << to_string(t.local_match) << " match), thresholds "
       << t.local_threshold << "/" << t.merge_threshold << ", skew 1/" << t.skew_divisor
       << ", rank groups <= " << t.rank_group_max << " of " << t.group_bits << " bits"
       << ", joint histogram from " << t.joint_min_keys << " keys"
       << ", zero digits of 16 bits from round " << t.extend_from_round
       << ", sm_" << P::min_compute_capability << " policy";
  });
  return os.str();
}

}  // namespace gpusort::gpu::hrs

/// Explicit instantiations of the HRS dispatch for one key/value type.
#define GPUSORT_HRS_INSTANTIATE(KEY, VALUE)                                                      \
  template gpusort::gpu::hrs::device_shapes gpusort::gpu::hrs::prepare<KEY, VALUE>(             \
      int, const gpusort::gpu::hrs::tuning&);                                                    \
  template gpusort::gpu::hrs::tuning gpusort::gpu::hrs::resolve<KEY, VALUE>(                     \
      const gpusort::gpu::hrs::tuning&, int);                                                    \
  template std::uint64_t gpusort::gpu::hrs::workspace_bytes<KEY, VALUE>(                         \
      std::uint64_t, const gpusort::gpu::hrs::tuning&, int);                                     \
  template void gpusort::gpu::hrs::sort<KEY, VALUE>(                                             \
      const gpusort::gpu::hrs::device_shapes&, const gpusort::gpu::hrs::tuning&, KEY* const[2], \
      VALUE* const[2], std::uint64_t, std::byte*, std::size_t, cudaStream_t,                     \
      gpusort::gpu::hrs::launch_observer*);                                                      \
  template std::string gpusort::gpu::hrs::describe<KEY, VALUE>(const gpusort::gpu::hrs::tuning&, \
                                                               int);

/// Explicit instantiations of the first-round entries (key-only sorts) for one key type.
#define GPUSORT_HRS_INSTANTIATE_FIRST_ROUND(KEY)                                                 \
  template void gpusort::gpu::hrs::count_first_digit<KEY>(                                       \
      const gpusort::gpu::hrs::device_shapes&, const gpusort::gpu::hrs::tuning&, const KEY*,    \
      std::uint64_t, std::byte*, std::size_t, std::uint32_t, std::uint64_t*, cudaStream_t);      \
  template void gpusort::gpu::hrs::scatter_first_digit<KEY>(                                     \
      const gpusort::gpu::hrs::device_shapes&, const gpusort::gpu::hrs::tuning&, const KEY*,    \
      KEY*, std::uint64_t, const std::uint64_t*, gpusort::gpu::hrs::first_round_section,         \
      std::byte*, std::size_t, cudaStream_t);                                                    \
  template void gpusort::gpu::hrs::sort_from_second_round<KEY>(                                  \
      const gpusort::gpu::hrs::device_shapes&, const gpusort::gpu::hrs::tuning&,                 \
      KEY* const[2], const std::uint64_t*, std::uint64_t, std::byte*, std::size_t, cudaStream_t);
