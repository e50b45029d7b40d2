// find_gpu for CUDA builds: which devices the options select, how they are connected, and how
// large the chunks of the one that sorts are.
#include "core/parse_size.hpp"
#include "cpu/sort_items.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/error.hpp"
#include "gpu/topology.hpp"
#include "pipeline/gpu_selection.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/strategy.hpp"

namespace gpusort::pipeline {

std::optional<gpu_facts> find_gpu(const sort_options& options, std::string& gpu_note) {
  using mode = device_selection::mode;
  const bool demanded = gpu_demanded(options);
  const int count = gpu::device_count();
  if (count == 0) {
    GPUSORT_EXPECTS(!demanded, "no usable CUDA device found (needed by --algorithm onesweep or "
                               "hrs, --merge-on gpu or --devices all or a list); use --devices "
                               "none for the CPU path");
    gpu_note = "no usable CUDA device found";
    return std::nullopt;
  }
  const std::vector<int> devices = resolve_devices(options.devices, count);
  const int id = devices.front();
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
  facts.devices = devices;
  // Once, for every selected GPU: --verbose shows how they reach each other.
  facts.topology = gpu::probe_topology(devices);
  if (devices.size() > 1)
    gpu_note = std::to_string(devices.size()) + " GPUs selected (--devices " +
               (options.devices.how == mode::list ? device_list_text(devices)
                : options.devices.how == mode::all ? std::string("all")
                                                   : std::string("auto")) +
               "); chunks are planned on device " + std::to_string(id) + " (" + info.name +
               ", " + format_bytes(info.free_bytes) + " free)";
  return facts;
}

bool gpu_backend_built() noexcept { return true; }

std::string backend_description() {
  return std::string("CUDA backend, sm_") + GPUSORT_CUDA_ARCHS;
}

}  // namespace gpusort::pipeline
