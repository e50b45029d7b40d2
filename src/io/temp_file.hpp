// Anonymous temporary files for spilled runs: created in the temporary directory and unlinked
// at once, so they vanish with the descriptor on every exit path, SIGKILL included.
#pragma once

#include <string>

#include "io/file_descriptor.hpp"

namespace gpusort::io {

/// The directory for temporary files: `requested` if non-empty, else $TMPDIR, else /tmp.
[[nodiscard]] std::string temp_directory(const std::string& requested);

/// Creates an unnamed read-write file in `dir`. Throws gpusort::error naming the directory.
[[nodiscard]] file_descriptor make_anonymous_file(const std::string& dir);

}  // namespace gpusort::io
