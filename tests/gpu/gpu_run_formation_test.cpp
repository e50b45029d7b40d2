// form_runs_on_gpu with several GPUs: each takes an equal share of the file, forms its runs
// at once with the others, and the store keeps every run in input order. On a host with one
// GPU the same device is listed several times, so that every share has its own former, readers
// and staging as on several GPUs. The runs, merged on the host or sorted again by key range,
// must equal a stable sort of the input: keys with few distinct values make equal keys meet
// across shares, where only the run order keeps them stable. Skips without a CUDA device.
#include <tbb/task_arena.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "gpu/run_former.hpp"
#include "gpu_test_support.hpp"
#include "gpusort/error.hpp"
#include "io/input_source.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "pipeline/gpu_range_sort.hpp"
#include "pipeline/gpu_run_formation.hpp"
#include "pipeline/merge_runs.hpp"
#include "pipeline/run_store.hpp"
#include "range_sort_support.hpp"
#include "test_support.hpp"

namespace gpusort::pipeline {
namespace {

class GpuRunFormation : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::device_count() == 0) GTEST_SKIP() << "no CUDA device present: GPU test skipped";
  }
};

/// `count` records whose keys take four values (the key's low byte, the rest zero).
std::vector<std::byte> few_key_records(std::uint64_t count, const record_format& format,
                                       std::uint64_t seed) {
  std::vector<std::byte> data = test::random_records(count, format, seed);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::byte* key = data.data() + i * format.record_size + format.key_offset;
    for (std::uint32_t b = 1; b < format.key_size; ++b) key[b] = std::byte{0};
    key[0] = static_cast<std::byte>(static_cast<unsigned>(key[0]) % 4);
  }
  return data;
}

struct formation_case {
  const char* type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
  std::size_t shares;  // GPU slots, spread over the devices present
  bool spill;  // a store that keeps nothing in memory
};

const auto never_one_chunk = [](std::uint64_t) -> io::output_sink& {
  throw error("the output sink was asked for: several shares never write the output");
};

/// Forms the runs of `data` (written to a file) on `devices` into `store`.
gpu_run_result form(const std::vector<std::byte>& data, const record_format& format,
                    const std::vector<int>& devices, std::uint64_t chunk, bool descending,
                    run_store& store, test::scratch_dir& dir, tbb::task_arena& arena,
                    std::uint64_t pin_chunk = 0) {
  test::write_file(dir.file("in"), data);
  io::input_source input({dir.file("in")}, format.record_size);
  sort_options o;
  o.format = format;
  o.descending = descending;
  o.gpu_memory_bytes = std::uint64_t{64} << 20;
  gpu_stage_config config;
  config.devices = devices;
  config.max_chunk_records = chunk;
  config.pin_chunk_records = pin_chunk;
  return form_runs_on_gpu(input, o, config, store, never_one_chunk, arena, nullptr);
}

TEST_F(GpuRunFormation, SharesOfSeveralFormersMergeToTheStableSort) {
  const formation_case cases[] = {
      {"u64", 8, 0, 2, false},       {"u32", 12, 8, 3, false}, {"f64", 16, 0, 2, true},
      {"i32", 4, 0, 4, true},        {"i64", 16, 8, 3, true},
      {"bytes:10", 100, 0, 2, false}};  // (key, index) items gathered on the host
  test::scratch_dir dir;
  tbb::task_arena arena;
  for (const formation_case& c : cases) {
    const std::vector<int> devices = test::spread_slots(c.shares);
    for (const bool descending : {false, true}) {
      const record_format f = test::make_format(c.type, c.record_size, c.key_offset);
      const std::uint64_t records = 200003;
      const std::uint64_t chunk = 30000;  // several runs per share, the last one short
      const std::uint64_t seed =
          test::base_seed() ^ (c.record_size * 131 + c.shares * 7 + descending);
      SCOPED_TRACE(std::string(c.type) + " rec " + std::to_string(c.record_size) + ", " +
                   std::to_string(c.shares) + " shares on GPUs " +
                   test::device_list_text(devices) + (c.spill ? ", spilled" : "") +
                   (descending ? ", desc" : ", asc") + ", seed " + std::to_string(seed));
      const std::vector<std::byte> data = few_key_records(records, f, seed);
      run_store store(f.record_size, c.spill ? 0 : ~std::uint64_t{0}, dir.path().string(), false,
                      nullptr, spill_striping{3, 4096});
      gpu_run_result r;
      arena.execute([&] { r = form(data, f, devices, chunk, descending, store, dir, arena); });
      EXPECT_FALSE(r.wrote_output);
      EXPECT_EQ(r.records, records);
      EXPECT_EQ(store.total_records(), records);
      EXPECT_EQ(store.any_spilled(), c.spill);
      if (gpu::supports_format(f)) {
        // The GPUs take the file's chunks from one queue: run c is chunk c, whoever sorted it.
        ASSERT_EQ(store.runs().size(), (records + chunk - 1) / chunk) << "runs of the chunks";
        for (std::size_t i = 0; i < store.runs().size(); ++i)
          EXPECT_EQ(store.runs()[i].id, i);
      } else {
        // Items: each share is cut into its own chunks, at least one run more per share than
        // the input alone would need where the shares do not divide into whole chunks.
        const std::uint64_t share = records / c.shares;
        ASSERT_EQ(store.runs().size(), c.shares * ((share + chunk) / chunk))
            << "runs of each share";
        for (std::size_t i = 1; i < store.runs().size(); ++i)
          EXPECT_LT(store.runs()[i - 1].id, store.runs()[i].id);
        EXPECT_EQ(store.runs().back().id / share_run_id_stride, c.shares - 1);
      }

      run_layout layout;
      layout.budget_bytes = std::uint64_t{8} << 20;
      layout.merge_fanin = 64;
      {
        io::output_file out(dir.file("out"));
        auto sink = io::make_output_sink(out, data.size(), io::write_method::automatic);
        merge_runs(store, *sink, f, descending, layout, nullptr);
        sink->finish();
        out.commit(false, data.size());
      }
      EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, descending));
      store.release_in_background().get();
    }
  }
}

TEST_F(GpuRunFormation, SharesSmallerThanTheChunkFormARunEach) {
  // A GPU whose share is less than the planned chunk holds less: no queue, each GPU forms
  // the one run of its own share.
  test::scratch_dir dir;
  tbb::task_arena arena;
  const record_format f = test::make_format("u64", 8, 0);
  const std::uint64_t records = 200003;
  const std::uint64_t seed = test::base_seed() + 78;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<std::byte> data = few_key_records(records, f, seed);
  run_store store(f.record_size, ~std::uint64_t{0}, dir.path().string(), false, nullptr);
  const std::vector<int> devices = test::spread_slots(2);
  gpu_run_result r;
  arena.execute([&] { r = form(data, f, devices, 150000, false, store, dir, arena); });
  EXPECT_EQ(r.records, records);
  ASSERT_EQ(store.runs().size(), 2u);
  EXPECT_EQ(store.runs()[0].id, 0u);
  EXPECT_EQ(store.runs()[1].id, share_run_id_stride);
  store.release_in_background().get();
}

TEST_F(GpuRunFormation, PinnedSharesSortAgainByRange) {
  // Strategy gpu_ranges on several GPUs: the chunks the GPUs take from one queue come back
  // into page-locked memory planned for them, and the GPUs take the key ranges of the second
  // pass from one queue too.
  test::scratch_dir dir;
  tbb::task_arena arena;
  const record_format f = test::make_format("u64", 16, 8);
  const std::uint64_t records = 150001;
  const std::uint64_t chunk = 20000;
  const std::uint64_t seed = test::base_seed() + 77;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<std::byte> data = few_key_records(records, f, seed);
  run_store store(f.record_size, ~std::uint64_t{0}, dir.path().string(), false, nullptr);
  const std::vector<int> devices = test::spread_slots(2);
  SCOPED_TRACE("GPUs " + test::device_list_text(devices));
  arena.execute([&] { form(data, f, devices, chunk, false, store, dir, arena, chunk); });
  std::size_t pinned = 0;
  for (const sorted_run& run : store.runs()) pinned += run.pin != nullptr ? 1 : 0;
  EXPECT_EQ(pinned, store.runs().size()) << "every share's runs came back page-locked";

  const std::uint64_t ranges = test::sort_ranges_into_file(
      store, f, false, devices, dir.file("out"), io::write_method::mmap, arena);
  EXPECT_GE(ranges, 2u) << "both GPUs take ranges";
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
  store.release_in_background().get();
}

TEST_F(GpuRunFormation, AFailingGpuStopsTheOthersAndItsErrorReachesTheCaller) {
  // The second share names a device that is not there: its former fails at setup, the first
  // share stops at its next piece, and the caller sees the missing device's error.
  test::scratch_dir dir;
  tbb::task_arena arena;
  const record_format f = test::make_format("u64", 8, 0);
  const std::vector<std::byte> data = test::random_records(400000, f, test::base_seed() + 5);
  run_store store(8, ~std::uint64_t{0}, dir.path().string(), false, nullptr);
  const int missing = gpu::device_count() + 3;
  try {
    arena.execute([&] { form(data, f, {0, missing}, 10000, false, store, dir, arena); });
    FAIL() << "a share on a missing device formed its runs";
  } catch (const error& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find("another GPU's share failed"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(missing)), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace gpusort::pipeline
