// Whether the vector merge may run here; on other architectures, its entry points exist but are
// never called (vector_merge_supported is false).
#include "cpu/merge_vector.hpp"

#include <cstdlib>

namespace gpusort::cpu::detail {

bool vector_merge_supported() noexcept {
#if defined(__x86_64__)
  // libgcc's probe also asks the OS (XGETBV) whether it saves the AVX-512 registers.
  static const bool supported = __builtin_cpu_supports("avx512f");
  return supported;
#else
  return false;
#endif
}

#if !defined(__x86_64__)
std::size_t vector_merge_scratch_bytes(std::size_t, vector_layout) noexcept { return 0; }

std::uint64_t vector_merge(const vector_input*, std::size_t, std::byte*, std::uint64_t,
                           vector_layout, const vector_key_masks&, std::byte*) noexcept {
  std::abort();  // unreachable: vector_merge_supported() is false
}
#endif

}  // namespace gpusort::cpu::detail
