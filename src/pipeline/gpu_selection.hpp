// Which GPUs a --devices selection names once the number of visible devices is known, and
// which part of the input each of them forms into runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpusort/options.hpp"

namespace gpusort::pipeline {

/**
 * The device ids `selection` names on a host with `visible` CUDA devices (ordinals 0 to
 * visible - 1), in order: every visible one for automatic and all, the ids as listed for
 * list, none for none.
 * @throw gpusort::error for a listed id that is negative, listed twice or not visible, and for
 *        all without a visible device (automatic gives an empty list instead)
 */
[[nodiscard]] std::vector<int> resolve_devices(const device_selection& selection, int visible);

/// "0,1,3": ids as --devices takes them.
[[nodiscard]] std::string device_list_text(const std::vector<int>& ids);

/// Run ids of the GPU that forms share i start at i times this: apart far enough that a
/// device whose memory holds smaller chunks than planned cannot reach the next share's ids,
/// and in share order, which the run store keeps.
inline constexpr std::uint64_t share_run_id_stride = std::uint64_t{1} << 40;

/// One GPU's part of the input: bytes [begin, end) formed into runs with ids from first_run.
struct gpu_share {
  int device = 0;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t first_run = 0;
};

/// The shares of an input of `input_bytes` among `devices`, in input order: whole records, as
/// equal as they can be, one per device while every one gets a record. A stream (nullopt) or an
/// empty input is one share, the first device's.
/// @throw gpusort::error for an empty device list
[[nodiscard]] std::vector<gpu_share> share_input(std::optional<std::uint64_t> input_bytes,
                                                 std::uint32_t record_size,
                                                 const std::vector<int>& devices);

/// How many runs `devices` form of a file of `input_bytes` sorted in chunks of `chunk_records`
/// records: one per chunk of the file where every share (share_input) holds a whole chunk, for
/// the GPUs then take the file's chunks from one queue; else each share cut into its own.
[[nodiscard]] std::uint64_t file_runs(std::uint64_t input_bytes, std::uint32_t record_size,
                                      const std::vector<int>& devices,
                                      std::uint64_t chunk_records);

}  // namespace gpusort::pipeline
