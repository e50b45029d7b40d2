// find_gpu for CUDA builds: which device the options select and how large its chunks are.
#include "core/parse_size.hpp"
#include "cpu/sort_items.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/error.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

std::optional<gpu_facts> find_gpu(const sort_options& options, std::string& gpu_note) {
  const bool demanded = options.algo == algorithm::onesweep || options.algo == algorithm::hrs ||
                        options.merge == merge_location::gpu ||
                        options.devices.how == device_selection::mode::list;
  const int count = gpu::device_count();
  if (count == 0) {
    GPUSORT_EXPECTS(!demanded, "no usable CUDA device found (needed by --algorithm onesweep or "
                               "hrs, --merge-on gpu or --devices); use --devices none for the "
                               "CPU path");
    gpu_note = "no usable CUDA device found";
    return std::nullopt;
  }
  const int id = options.devices.ids.empty() ? 0 : options.devices.ids.front();
  GPUSORT_EXPECTS(id < count, "--devices " + std::to_string(id) + ": only " +
                                  std::to_string(count) + " CUDA device(s) present");
  const gpu::device_info info = gpu::query_device(id);
  // Formats the former cannot sort directly travel as 16-byte (key, index) items.
  gpu::run_former_config config;
  config.device = id;
  config.format = gpu::supports_format(options.format) ? options.format : cpu::sort_item_format();
  config.memory_budget = options.gpu_memory_bytes;
  config.algorithm = chunk_algorithm_for(options, gpu::supports_format(options.format));
  const gpu::chunk_plan chunks = gpu::plan_chunks(config, info);
  if (chunks.chunk_records == 0)
    throw out_of_memory("GPU " + std::to_string(id) + " (" + info.name + "): a memory budget of " +
                            format_bytes(chunks.budget_bytes) + " holds no chunk of " +
                            describe(options.format) + " (--gpu-memory)",
                        chunks.budget_bytes);
  gpu_facts facts;
  facts.device = id;
  facts.name = info.name;
  facts.free_bytes = info.free_bytes;
  facts.chunk_records = chunks.chunk_records;
  facts.sorts_records = gpu::supports_format(options.format);
  if (options.devices.ids.size() > 1)
    gpu_note = "--devices lists " + std::to_string(options.devices.ids.size()) +
               " GPUs: only the first listed, device " + std::to_string(id) +
               ", is used (sorting on several GPUs is not supported yet)";
  return facts;
}

bool gpu_backend_built() noexcept { return true; }

std::string backend_description() {
  return std::string("CUDA backend, sm_") + GPUSORT_CUDA_ARCHS;
}

}  // namespace gpusort::pipeline
