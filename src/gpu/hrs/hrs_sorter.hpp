// Construction of the HRS chunk sorter with explicit tuning (tests and benchmarks); the run
// former goes through make_chunk_sorter.
#pragma once

#include <memory>

#include "gpu/chunk_sorter.hpp"
#include "gpu/hrs/hrs_tuning.cuh"

namespace gpusort::gpu::detail {

/// The HRS sorter for `format` on the current device, with `tuning` (zero fields: the policy's).
/// @throw gpusort::error for out-of-range thresholds,
///        gpusort::cuda_error
[[nodiscard]] std::unique_ptr<chunk_sorter> make_hrs_sorter(const record_format& format,
                                                            bool descending,
                                                            const hrs::tuning& tuning);

/// The default HRS tuning for `format` on the current device, resolved (thresholds, the first
/// round of zero-extended digits): what `auto` replays on sampled keys.
/// @throw gpusort::cuda_error
[[nodiscard]] hrs::tuning hrs_default_tuning(const record_format& format);

}  // namespace gpusort::gpu::detail
