// sort_ranges_on_gpu, the second pass of strategy gpu_ranges, on runs built by hand: the runs
// are cut into key ranges of one GPU chunk each and sorted again into the output. Every
// directly sorted key type, 2 to 1000 runs, keys with few distinct values (ranges that cut
// through equal keys), both orders, a mapped output (parallel writes) and a staged one (in
// order), runs page-locked (pushed from where they are) and not (staged), one GPU or two lanes
// on it sharing the ranges, runs spilled through the page cache (read through mappings). The
// output must equal a stable sort of the input. Skips without a CUDA device.
#include <tbb/task_arena.h>

#include <gtest/gtest.h>

#include <cstring>

#include "gpu/run_former.hpp"
#include "gpu_test_support.hpp"
#include "gpusort/error.hpp"
#include "io/output_sink.hpp"
#include "pipeline/gpu_range_sort.hpp"
#include "pipeline/run_store.hpp"
#include "range_sort_support.hpp"
#include "test_support.hpp"

namespace gpusort::pipeline {
namespace {

class GpuRangeSort : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::device_count() == 0) GTEST_SKIP() << "no CUDA device present: GPU test skipped";
  }
};

struct range_case {
  const char* type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
};

/// `count` records of `format`; with `few_keys` every key is one of four values, so that
/// range boundaries fall inside runs of equal keys and only run order separates them.
std::vector<std::byte> make_records(std::uint64_t count, const record_format& format,
                                    std::uint64_t seed, bool few_keys) {
  std::vector<std::byte> data = test::random_records(count, format, seed);
  if (few_keys) {
    for (std::uint64_t i = 0; i < count; ++i) {
      std::byte* key = data.data() + i * format.record_size + format.key_offset;
      for (std::uint32_t b = 1; b < format.key_size; ++b) key[b] = std::byte{0};
      key[0] = static_cast<std::byte>(static_cast<unsigned>(key[0]) % 4);
    }
  }
  return data;
}

enum class pinning : std::uint8_t { none, even_runs, all };

/// The input cut into `runs` runs in input order, each sorted stably, in a run store; the runs
/// `pin` names page-locked (copied to the device from where they are, the others staged).
void add_sorted_runs(run_store& store, const std::vector<std::byte>& data,
                     const record_format& format, bool descending, std::uint64_t runs,
                     pinning pin = pinning::none) {
  const std::uint64_t total = data.size() / format.record_size;
  io::uring ring(8);
  for (std::uint64_t r = 0; r < runs; ++r) {
    const std::uint64_t begin = total * r / runs;
    const std::uint64_t end = total * (r + 1) / runs;
    if (begin == end) continue;
    const std::vector<std::byte> run(
        data.begin() + static_cast<std::ptrdiff_t>(begin * format.record_size),
        data.begin() + static_cast<std::ptrdiff_t>(end * format.record_size));
    const std::vector<std::byte> sorted = test::reference_sort(run, format, descending);
    host_buffer memory(sorted.size());
    std::memcpy(memory.data(), sorted.data(), sorted.size());
    std::shared_ptr<void> lock;
    if (pin == pinning::all || (pin == pinning::even_runs && r % 2 == 0))
      lock = gpu::register_host_memory(memory.span(), 0);
    store.add(r, std::move(memory), end - begin, ring, std::move(lock));
  }
}

TEST_F(GpuRangeSort, RangesOfEveryKeyTypeAndRunCountSortStably) {
  const range_case cases[] = {{"u32", 4, 0}, {"i32", 8, 0}, {"f32", 12, 4}, {"u64", 8, 0},
                              {"i64", 16, 8}, {"f64", 16, 0}};
  test::scratch_dir dir;
  tbb::task_arena arena;
  for (const range_case& c : cases) {
    const record_format f = test::make_format(c.type, c.record_size, c.key_offset);
    for (const std::uint64_t runs : {2ull, 7ull, 1000ull}) {
      for (const bool few_keys : {false, true}) {
        for (const bool descending : {false, true}) {
          {
            // Ascending into a mapped output (concurrent writes), descending into a staged one
            // (writes in order on the writer's worker thread).
            const io::write_method method =
                descending ? io::write_method::uring : io::write_method::mmap;
            const std::uint64_t records = 600000 + runs;
            const std::uint64_t seed = test::base_seed() ^ (runs * 131 + c.record_size * 7 +
                                                            few_keys * 3 + descending);
            // Two lanes (one GPU twice, or two GPUs) share the ranges of a mapped output (a
            // staged one is written by the first alone).
            const std::vector<int> devices = test::spread_slots(few_keys ? 2 : 1);
            SCOPED_TRACE(std::string(c.type) + " rec " + std::to_string(c.record_size) +
                         " runs " + std::to_string(runs) +
                         (few_keys ? " few keys, 2 lanes" : "") + " GPUs " +
                         test::device_list_text(devices) +
                         (descending ? " desc" : " asc") +
                         (method == io::write_method::mmap ? " mapped" : " staged") +
                         " seed " + std::to_string(seed));
            const std::vector<std::byte> data = make_records(records, f, seed, few_keys);
            run_store store(f.record_size, ~std::uint64_t{0}, dir.path().string(), false, nullptr);
            add_sorted_runs(store, data, f, descending, runs,
                            few_keys ? pinning::all : pinning::even_runs);
            ASSERT_EQ(store.runs().size(), runs);

            const std::uint64_t ranges = test::sort_ranges_into_file(
                store, f, descending, devices, dir.file("out"), method, arena);
            EXPECT_GE(ranges, 2u) << "the budget holds a fraction of the input per chunk";
            EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, descending));
          }
        }
      }
    }
  }
}

TEST_F(GpuRangeSort, SpilledRunsAreReadThroughMappings) {
  test::scratch_dir dir;
  tbb::task_arena arena;
  for (const char* type : {"u32", "i64", "f64"}) {
    const std::uint32_t record_size = std::string(type) == "u32" ? 4 : 16;
    const record_format f = test::make_format(type, record_size, 0);
    for (const std::uint64_t runs : {3ull, 40ull}) {
      const std::uint64_t records = 500000 + runs;
      const std::uint64_t seed = test::base_seed() ^ (runs * 17 + record_size);
      SCOPED_TRACE(std::string(type) + " runs " + std::to_string(runs) + " seed " +
                   std::to_string(seed));
      const std::vector<std::byte> data = make_records(records, f, seed, false);
      // A third of the runs stay resident, the rest spill through the page cache in stripes
      // across three files (pieces of a run in several files, mapped end to end).
      run_store store(f.record_size, data.size() / 3, dir.path().string(), false, nullptr,
                      spill_striping{3, 4096});
      add_sorted_runs(store, data, f, false, runs, pinning::even_runs);
      ASSERT_TRUE(store.any_spilled());
      ASSERT_TRUE(store.runs().front().resident());
      const std::uint64_t ranges = test::sort_ranges_into_file(
          store, f, false, {0}, dir.file("out"), io::write_method::mmap, arena);
      EXPECT_GE(ranges, 2u);
      EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
    }
  }
}

TEST_F(GpuRangeSort, RefusesDirectSpillsAndItemFormats) {
  test::scratch_dir dir;
  tbb::task_arena arena;
  sort_options o;
  const auto never = [](std::uint64_t) -> io::output_sink& {
    throw error("no output expected");
  };
  {
    o.format = test::make_format("u64", 8, 0);
    run_store store(8, 0, dir.path().string(), true, nullptr);  // every run spills, O_DIRECT
    add_sorted_runs(store, make_records(1000, o.format, 1, false), o.format, false, 2);
    // (Where the filesystem takes no O_DIRECT, the runs spill through the page cache.)
    if (store.runs().front().direct()) {
      EXPECT_THROW(sort_ranges_on_gpu(store, o, {0}, never, arena, nullptr), error);
    }
  }
  {
    o.format = test::make_format("u64", 100, 0);  // sorted as (key, index) items
    run_store store(100, ~std::uint64_t{0}, dir.path().string(), false, nullptr);
    add_sorted_runs(store, make_records(1000, o.format, 2, false), o.format, false, 2);
    EXPECT_THROW(sort_ranges_on_gpu(store, o, {0}, never, arena, nullptr), error);
  }
}

}  // namespace
}  // namespace gpusort::pipeline
