// Removes registered temporary files when the process is stopped by SIGINT, SIGTERM or SIGHUP,
// so that a killed sort leaves no partial output behind; SIGPIPE is ignored so that a closed
// output pipe becomes an ordinary write error.
//
// This is the one piece of process-wide state in gpusort: a signal handler has no other way
// to find the files. Most temporary files need no entry here because they are opened with
// O_TMPFILE and vanish with the process; only the named fallback registers.
#pragma once

#include <string>

namespace gpusort::io {

/// Installs the handlers (idempotent). The CLI calls this once; library users may.
void install_signal_cleanup();

/// Registers a path to unlink if a handled signal arrives; returns a slot for unregister.
/// Returns -1 when the registry is full (the file is then only removed on normal exit paths).
int register_temp_path(const std::string& path) noexcept;
void unregister_temp_path(int slot) noexcept;

}  // namespace gpusort::io
