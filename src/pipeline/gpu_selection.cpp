// resolve_devices: --devices checked against the devices the host shows.
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

}  // namespace gpusort::pipeline
