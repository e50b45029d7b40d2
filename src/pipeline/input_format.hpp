// The record format a sort reads: the caller's, or the one .npy inputs describe in their header.
#pragma once

#include "gpusort/options.hpp"
#include "io/input_source.hpp"

namespace gpusort::pipeline {

/**
 * `options` with the record format of `input`'s records: an .npy input's header decides it
 * (io::npy_record_format: --key picks the field, what the caller set of -t, --record-size and
 * --key-offset must agree); raw inputs keep options.format.
 * @throw gpusort::error naming the input when the header and the options disagree, or when
 *   --key is given for raw inputs.
 */
[[nodiscard]] sort_options with_input_format(const sort_options& options,
                                             const io::input_source& input);

}  // namespace gpusort::pipeline
