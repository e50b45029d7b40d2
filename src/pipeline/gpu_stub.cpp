// The GPU entry points of a build without CUDA: no GPU to probe, none to sort on.
#include "gpusort/error.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

std::optional<gpu_facts> find_gpu(const sort_options& options, std::optional<std::uint64_t>,
                                  std::string& gpu_note) {
  GPUSORT_EXPECTS(!gpu_demanded(options),
                  "this gpusort was built without CUDA (see --version); use "
                  "--devices none or rebuild with nvcc present");
  gpu_note = "built without CUDA";
  return std::nullopt;
}

strategy_result sort_on_gpu(const sort_context&) {
  throw error("sort on the GPU: this gpusort was built without CUDA");
}

strategy_result sort_by_exchange(const sort_context&) {
  throw error("sort on the GPUs: this gpusort was built without CUDA");
}

strategy_result sort_by_partition(const sort_context&) {
  throw error("sort on the GPU: this gpusort was built without CUDA");
}

std::string backend_description() { return "CPU only"; }

bool gpu_backend_built() noexcept { return false; }

}  // namespace gpusort::pipeline
