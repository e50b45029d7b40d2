// The record format a sort reads: the caller's, or the one .npy inputs describe in their header.
#include "pipeline/input_format.hpp"

#include "gpusort/error.hpp"
#include "io/npy_header.hpp"

namespace gpusort::pipeline {

sort_options with_input_format(const sort_options& options, const io::input_source& input) {
  sort_options out = options;
  if (const io::npy_header* npy = input.npy()) {
    // Every input shares the first one's dtype (the input source checked): one answer.
    out.format = io::npy_record_format(*npy, input.describe(), options.format, options.npy);
  } else {
    GPUSORT_EXPECTS(options.npy.key_field.empty(),
                    input.describe() + ": --key names a field of an .npy file's structured "
                                       "dtype, and this is not an .npy file: give the key's "
                                       "place with --key-offset and -t");
  }
  return out;
}

}  // namespace gpusort::pipeline
