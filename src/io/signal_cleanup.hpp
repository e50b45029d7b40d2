// Signal handling for a sort that must leave nothing behind: named temporary files are removed
// on every signal that ends the process, SIGBUS from a mapped input that shrank becomes an
// error message, SIGXFSZ and SIGPIPE become ordinary write errors (EFBIG, EPIPE).
//
// This is the one piece of process-wide state in gpusort: a signal handler has no other way
// to find the files. Most temporary files need no entry here because they are opened with
// O_TMPFILE and vanish with the process; only the named fallback registers.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace gpusort::io {

/**
 * Installs the handlers (idempotent). The CLI calls this once; library users may.
 * - Signals that end a process (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2, SIGALRM, ...) and
 *   crashes (SIGSEGV, SIGBUS, SIGABRT, ...) unlink the registered paths and then take their
 *   default action, so the exit status still tells the signal.
 * - A signal that was ignored when the process started stays ignored (nohup).
 * - SIGPIPE and SIGXFSZ are ignored: the write then fails with EPIPE or EFBIG and is reported.
 */
void install_signal_cleanup();

/**
 * For a process that only waits on `child` (the command line's early exit): each signal that
 * would end a process (the list above, less those ignored since the start) goes to `child`
 * instead, which cleans up and ends by it; the waiting process then ends as its child did.
 * Call once, before any other handler is installed.
 */
void forward_terminating_signals(pid_t child);

/// The signals of that list, to block while a child is made (nothing can forward them yet).
[[nodiscard]] sigset_t terminating_signal_set() noexcept;

/// Registers a path to unlink if a handled signal arrives; returns a slot for unregister.
/// Returns -1 when the registry is full (the file is then only removed on normal exit paths).
int register_temp_path(const std::string& path) noexcept;
void unregister_temp_path(int slot) noexcept;

/// Registers a mapping of the input file `path`: a SIGBUS inside it (the file was truncated
/// while mapped) ends the process with exit status 2 and a message naming the file, instead
/// of a silent crash. Returns a slot for unregister, or -1 when the registry is full.
int register_input_mapping(const void* begin, std::size_t length, const std::string& path) noexcept;
void unregister_input_mapping(int slot) noexcept;

/**
 * For a write that failed with EPIPE on standard output: does what `sort` does when its
 * reader goes away (`gpusort ... | head`). Removes the registered paths and ends the process
 * by SIGPIPE, quietly, unless SIGPIPE was ignored when the process started; then it returns,
 * and the caller reports the error.
 */
void end_quietly_on_broken_pipe();

}  // namespace gpusort::io
