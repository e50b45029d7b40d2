// The second pass of strategy gpu_ranges, run by hand for the tests: a run store's runs sorted
// again by key range into a file.
#pragma once

#include <tbb/task_arena.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "pipeline/gpu_range_sort.hpp"
#include "pipeline/run_store.hpp"

namespace gpusort::test {

/**
 * Sorts the runs of `store` by key range on `devices` (sort_ranges_on_gpu, each GPU given
 * 6 MiB: chunks far smaller than the inputs of the tests) into the file at `path`, written with
 * `method` (mmap: mapped whole, concurrent writes; uring: staged, in order), and commits it.
 * Returns the number of key ranges.
 */
inline std::uint64_t sort_ranges_into_file(pipeline::run_store& store, const record_format& format,
                                           bool descending, const std::vector<int>& devices,
                                           const std::string& path, io::write_method method,
                                           tbb::task_arena& arena) {
  sort_options o;
  o.format = format;
  o.descending = descending;
  o.gpu_memory_bytes = std::uint64_t{6} << 20;
  io::output_file out(path);
  std::unique_ptr<io::output_sink> sink;
  std::uint64_t bytes = 0;
  const auto open_sink = [&](std::uint64_t total) -> io::output_sink& {
    if (!sink) {
      sink = io::make_output_sink(out, total, method, nullptr, method == io::write_method::mmap);
      bytes = total;
    }
    return *sink;
  };
  std::uint64_t ranges = 0;
  arena.execute([&] {
    ranges = pipeline::sort_ranges_on_gpu(store, o, devices, open_sink, arena, nullptr).ranges;
  });
  EXPECT_TRUE(sink) << "no output was opened";
  if (!sink) return ranges;
  sink->finish();
  out.commit(false, bytes);
  return ranges;
}

}  // namespace gpusort::test
