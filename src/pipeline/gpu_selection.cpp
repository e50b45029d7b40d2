// resolve_devices: --devices checked against the devices the host shows; share_input: the
// part of the input each GPU forms into runs; file_runs: how many runs the GPUs form of a file.
#include "pipeline/gpu_selection.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "gpusort/error.hpp"

namespace gpusort::pipeline {

std::string device_list_text(const std::vector<int>& ids) {
  std::string text;
  for (const int id : ids) {
    if (!text.empty()) text += ',';
    text += std::to_string(id);
  }
  return text;
}

std::vector<int> resolve_devices(const device_selection& selection, int visible) {
  std::vector<int> ids;
  switch (selection.how) {
    case device_selection::mode::none: return ids;
    case device_selection::mode::automatic:
    case device_selection::mode::all:
      GPUSORT_EXPECTS(selection.how == device_selection::mode::automatic || visible > 0,
                      "--devices all: no usable CUDA device found");
      ids.resize(static_cast<std::size_t>(std::max(visible, 0)));
      std::iota(ids.begin(), ids.end(), 0);
      return ids;
    case device_selection::mode::list: break;
  }
  // The library takes sort_options from any caller, not only the command line: check again.
  const std::string what = "--devices " + device_list_text(selection.ids);
  GPUSORT_EXPECTS(!selection.ids.empty(), "--devices: an empty list of devices");
  for (std::size_t i = 0; i < selection.ids.size(); ++i) {
    const int id = selection.ids[i];
    GPUSORT_EXPECTS(id >= 0, what + ": device " + std::to_string(id) + " is negative");
    GPUSORT_EXPECTS(std::find(selection.ids.begin(), selection.ids.begin() +
                                  static_cast<std::ptrdiff_t>(i), id) ==
                        selection.ids.begin() + static_cast<std::ptrdiff_t>(i),
                    what + ": device " + std::to_string(id) + " is listed twice");
    GPUSORT_EXPECTS(id < visible,
                    what + ": no CUDA device " + std::to_string(id) + " (" +
                        std::to_string(visible) + " present" +
                        (visible > 0 ? ", 0 to " + std::to_string(visible - 1) : std::string()) +
                        ")");
  }
  return selection.ids;
}

std::vector<gpu_share> share_input(std::optional<std::uint64_t> input_bytes,
                                   std::uint32_t record_size, const std::vector<int>& devices) {
  GPUSORT_EXPECTS(!devices.empty(), "share_input: no device");
  if (!input_bytes || *input_bytes == 0)
    return {gpu_share{devices.front(), 0, input_bytes.value_or(0), 0}};
  const std::uint64_t records = *input_bytes / record_size;
  const std::uint64_t n =
      std::min<std::uint64_t>(devices.size(), std::max<std::uint64_t>(records, 1));
  std::vector<gpu_share> shares;
  for (std::uint64_t i = 0; i < n; ++i) {
    // Records first, then bytes: every boundary falls between records.
    const std::uint64_t begin = records * i / n * record_size;
    const std::uint64_t end = i + 1 == n ? *input_bytes : records * (i + 1) / n * record_size;
    shares.push_back({devices[i], begin, end, i * share_run_id_stride});
  }
  return shares;
}

std::uint64_t file_runs(std::uint64_t input_bytes, std::uint32_t record_size,
                        const std::vector<int>& devices, std::uint64_t chunk_records) {
  GPUSORT_EXPECTS(chunk_records > 0, "file_runs: empty chunks");
  const auto runs_of = [&](std::uint64_t bytes) {
    return (bytes / record_size + chunk_records - 1) / chunk_records;
  };
  const std::vector<gpu_share> shares = share_input(input_bytes, record_size, devices);
  const bool queued = shares.size() > 1 && std::all_of(shares.begin(), shares.end(), [&](auto& s) {
    return (s.end - s.begin) / record_size >= chunk_records;
  });
  if (queued) return runs_of(input_bytes);
  std::uint64_t runs = 0;
  for (const gpu_share& share : shares) runs += runs_of(share.end - share.begin);
  return runs;
}

}  // namespace gpusort::pipeline
