// An output sink that writes with O_DIRECT, past the page cache: for outputs larger than the
// memory the page cache may use, where buffered writes only queue dirty pages that the kernel
// then throttles to disk speed, and that a cgroup counts against its limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "io/output_file.hpp"
#include "io/output_sink.hpp"

namespace gpusort {
class trace_recorder;
}

namespace gpusort::io {

/**
 * The direct sink for `total_bytes` into our own temporary file `out` (is_private_file()), or
 * nullptr when the filesystem refuses O_DIRECT (tmpfs, some FUSE mounts): the caller then
 * writes through the page cache.
 * - Windows and writes may come in any order and from several threads at once.
 * - Windows are laid out at the file's alignment, so that their whole blocks go to the disk
 *   from where the producer wrote them; commit() queues a window for a writer thread, which
 *   writes every queued window in one batch (io::append_range, uring::write_batch), so that
 *   producers never wait for the disk unless all 8 staging windows are in use. write() from
 *   the caller's memory returns once the bytes are on the disk.
 * @throw gpusort::error (with the errno) when preallocating or writing fails.
 */
std::unique_ptr<output_sink> make_direct_sink(output_file& out, std::uint64_t total_bytes,
                                              std::size_t min_window, trace_recorder* trace);

}  // namespace gpusort::io
