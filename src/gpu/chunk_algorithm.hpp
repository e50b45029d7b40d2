// Names of the GPU sort algorithms behind the chunk_sorter seam; plain C++ so that the pipeline
// and the planner can name them without CUDA headers.
#pragma once

#include <cstdint>

namespace gpusort::gpu {

/// The GPU sort algorithms behind chunk_sorter (gpu/chunk_sorter.hpp).
enum class chunk_algorithm : std::uint8_t {
  onesweep,  ///< CUB DeviceRadixSort (Onesweep, LSD), the baseline
  hrs,       ///< the hybrid MSD radix sort (Stehle & Jacobsen 2017, section 4), gpu/hrs/
};

/// "onesweep", "hrs".
[[nodiscard]] const char* to_string(chunk_algorithm algorithm) noexcept;

}  // namespace gpusort::gpu
