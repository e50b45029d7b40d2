// Which GPUs a --devices selection names once the number of visible devices is known.
#pragma once

#include <string>
#include <vector>

#include "gpusort/options.hpp"

namespace gpusort::pipeline {

/**
 * The device ids `selection` names on a host with `visible` CUDA devices (ordinals 0 to
 * visible - 1), in order: every visible one for automatic and all, the ids as listed for
 * list, none for none. The first one sorts today.
 * @throw gpusort::error for a listed id that is negative, listed twice or not visible, and for
 *        all without a visible device (automatic gives an empty list instead)
 */
[[nodiscard]] std::vector<int> resolve_devices(const device_selection& selection, int visible);

/// "0,1,3": ids as --devices takes them.
[[nodiscard]] std::string device_list_text(const std::vector<int>& ids);

}  // namespace gpusort::pipeline
