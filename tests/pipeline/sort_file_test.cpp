// sort_file / sort_buffer on the CPU backend: every key type, payloads, descending order,
// budgets that force many runs, spilling and multi-pass merges, streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gpusort/sort.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

sort_options cpu_options(const record_format& f, bool descending, std::uint64_t budget,
                         const std::string& temp_dir = {},
                         direct_io direct = direct_io::automatic) {
  sort_options o;
  o.direct = direct;
  o.format = f;
  o.descending = descending;
  o.buffer_bytes = budget;
  o.devices.how = device_selection::mode::none;
  o.temp_dir = temp_dir;
  return o;
}

/// The names of the files in `dir`, sorted.
bool has_stage(const sort_stats& stats, const std::string& name) {
  return std::any_of(stats.stages.begin(), stats.stages.end(),
                     [&](const stage_stats& s) { return s.name == name; });
}

std::vector<std::string> files_in(const test::scratch_dir& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

struct file_case {
  const char* type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
};

class SortFile : public ::testing::TestWithParam<file_case> {};

TEST_P(SortFile, MatchesStableReferenceAcrossBudgets) {
  const file_case c = GetParam();
  const record_format f = test::make_format(c.type, c.record_size, c.key_offset);
  test::scratch_dir dir;
  for (const std::uint64_t records : {0ull, 1ull, 1000ull, 70001ull}) {
    for (const bool descending : {false, true}) {
      // Budgets: everything in one run; several resident runs; spilled runs.
      // Each through the page cache and past it (O_DIRECT input, spills and output).
      for (const std::uint64_t budget :
           {std::uint64_t{1} << 30, records * c.record_size + (std::uint64_t{1} << 20),
            std::uint64_t{256} << 10})
      for (const direct_io direct : {direct_io::never, direct_io::always}) {
        const std::uint64_t seed = test::base_seed() ^ (records * 31 + budget + descending);
        SCOPED_TRACE(std::string(c.type) + " rec " + std::to_string(c.record_size) + " n " +
                     std::to_string(records) + (descending ? " desc" : " asc") + " budget " +
                     std::to_string(budget) + (direct == direct_io::always ? " direct" : "") +
                     " seed " + std::to_string(seed));
        const auto data = test::random_records(records, f, seed);
        test::write_file(dir.file("in"), data);
        const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"),
                                           cpu_options(f, descending, budget, dir.path(), direct));
        EXPECT_EQ(stats.records, records);
        EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, descending));
        // The stats agree with the strategy that ran, and its temporary files are gone.
        EXPECT_EQ(stats.spilled, stats.strategy == "cpu-spilled-runs") << stats.strategy;
        if (stats.strategy == "cpu-one-run") EXPECT_LE(stats.runs, 1u);
        else EXPECT_EQ(stats.strategy.rfind("cpu-", 0), 0u) << stats.strategy;
        EXPECT_EQ(files_in(dir), (std::vector<std::string>{"in", "out"}));
        // Giving spilled runs back (closing their file) is a stage of its own in --stats.
        if (stats.spilled) {
          EXPECT_TRUE(has_stage(stats, "release runs"));
        }
        // Runs of one file come straight out of its page cache, unless it is read past it.
        if (stats.runs > 1) {
          const bool mapped = direct == direct_io::never;
          EXPECT_EQ(has_stage(stats, "unmap input"), mapped);
          EXPECT_EQ(has_stage(stats, "read"), !mapped);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, SortFile,
    ::testing::Values(file_case{"u32", 4, 0}, file_case{"i32", 4, 0}, file_case{"f32", 4, 0},
                      file_case{"u64", 8, 0}, file_case{"i64", 8, 0}, file_case{"f64", 8, 0},
                      file_case{"u64", 16, 8}, file_case{"i32", 12, 4}, file_case{"f64", 100, 40},
                      file_case{"bytes:10", 100, 0}),
    [](const auto& param_info) {
      std::string name = std::string(param_info.param.type) + "_" +
                         std::to_string(param_info.param.record_size) + "_" +
                         std::to_string(param_info.param.key_offset);
      for (char& ch : name) if (ch == ':') ch = 'x';
      return name;
    });

class SortFileRuns : public ::testing::TestWithParam<direct_io> {};

TEST_P(SortFileRuns, SmallBudgetSpillsAndMergesInSeveralPasses) {
  const record_format f = test::make_format("u64", 16, 0);
  test::scratch_dir dir;
  const std::uint64_t records = 2000000;  // 32 MB against the smallest budget (4 MiB): ~30 runs
  const std::uint64_t seed = test::base_seed() + 99;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto data = test::random_records(records, f, seed);
  test::write_file(dir.file("in"), data);
  const sort_stats stats =
      sort_file({dir.file("in")}, dir.file("out"),
                cpu_options(f, false, min_buffer_bytes, dir.path(), GetParam()));
  EXPECT_GE(stats.runs, 8u);
  EXPECT_TRUE(stats.spilled);
  EXPECT_GE(stats.merge_passes, 2u) << "more runs than the fan-in: a multi-pass merge";
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"in", "out"}))
      << "the runs and the intermediate passes' files are removed";
}

INSTANTIATE_TEST_SUITE_P(PageCacheAndDirect, SortFileRuns,
                         ::testing::Values(direct_io::never, direct_io::always),
                         [](const auto& param_info) {
                           return param_info.param == direct_io::always ? "direct" : "buffered";
                         });

TEST(SortFileRunsInMemory, ReleaseRunsCountsEachByteOfTheRunsOnce) {
  // 24 MiB in a 32 MiB budget: runs kept in memory, merged into one mapping of the output,
  // which gives the merged records' memory back as it goes; what is left goes after the merge.
  // --stats counted the runs' whole memory again then.
  const record_format f = test::make_format("u64", 8, 0);
  test::scratch_dir dir;
  const std::uint64_t records = (std::uint64_t{24} << 20) / 8;
  const std::uint64_t seed = test::base_seed() + 24;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto data = test::random_records(records, f, seed);
  test::write_file(dir.file("in"), data);
  const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"),
                                     cpu_options(f, false, std::uint64_t{32} << 20, dir.path(),
                                                 direct_io::never));
  ASSERT_EQ(stats.strategy, "cpu-runs");
  ASSERT_GE(stats.runs, 2u);
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
  std::uint64_t released = 0;
  for (const stage_stats& s : stats.stages)
    if (s.name == "release runs") released += s.bytes;
  EXPECT_GT(released, 0u);
  EXPECT_LE(released, data.size());
}

TEST(SortFileInputs, SeveralInputsAreConcatenatedAndInputMayBeOutput) {
  const record_format f = test::make_format("i64", 8, 0);
  test::scratch_dir dir;
  const auto a = test::random_records(5000, f, 1);
  const auto b = test::random_records(7000, f, 2);
  test::write_file(dir.file("a"), a);
  test::write_file(dir.file("b"), b);
  sort_file({dir.file("a"), dir.file("b")}, dir.file("a"), cpu_options(f, false, 1 << 30));
  std::vector<std::byte> both = a;
  both.insert(both.end(), b.begin(), b.end());
  EXPECT_EQ(test::read_file(dir.file("a")), test::reference_sort(both, f, false));
}

TEST(SortFileInputs, SeveralInputsFormSpilledRunsAndAnInputMayBeOutput) {
  // Several files are read chunk by chunk (no one mapping holds them), into runs that spill.
  const record_format f = test::make_format("u64", 16, 0);
  test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed() + 7;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto a = test::random_records(300001, f, seed);
  const auto b = test::random_records(200003, f, seed + 1);
  test::write_file(dir.file("a"), a);
  test::write_file(dir.file("b"), b);
  const sort_stats stats = sort_file({dir.file("a"), dir.file("b")}, dir.file("a"),
                                     cpu_options(f, false, min_buffer_bytes, dir.path(),
                                                 direct_io::never));
  EXPECT_TRUE(stats.spilled);
  EXPECT_TRUE(has_stage(stats, "read"));
  EXPECT_FALSE(has_stage(stats, "unmap input"));
  std::vector<std::byte> both = a;
  both.insert(both.end(), b.begin(), b.end());
  EXPECT_EQ(test::read_file(dir.file("a")), test::reference_sort(both, f, false));
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"a", "b"}));
}

TEST(SortFileInputs, ALargeFileSortedInPlaceIsReplacedAndItsOldSelfFreed) {
  // 64 MiB, where the replaced file is handed to another process to free: the input, which is
  // that file, must not keep it open (sort_file closes it before the commit).
  const record_format f = test::make_format("u64", 8, 0);
  test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed() + 64;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto data = test::random_records(std::uint64_t{8} << 20, f, seed);
  test::write_file(dir.file("f"), data);
  test::freed_watch old_file(dir.file("f"));
  sort_file({dir.file("f")}, dir.file("f"), cpu_options(f, false, std::uint64_t{1} << 30));
  EXPECT_EQ(test::read_file(dir.file("f")), test::reference_sort(data, f, false));
  EXPECT_TRUE(old_file.freed_within(10000)) << "nobody holds the replaced input";
  EXPECT_EQ(files_in(dir), (std::vector<std::string>{"f"}));
}

TEST(SortFileCommitted, IsToldOnceWithTheOutputInPlaceBeforeTheRestIsGivenBack) {
  const record_format f = test::make_format("u64", 8, 0);
  for (const std::uint64_t budget : {std::uint64_t{1} << 30, std::uint64_t{4} << 20}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    test::scratch_dir dir;
    const auto data = test::random_records(1 << 20, f, test::base_seed() + 41);  // 8 MiB
    test::write_file(dir.file("in.bin"), data);
    test::write_file(dir.file("out.bin"), std::vector<std::byte>(16));  // the old output
    const auto expected = test::reference_sort(data, f, false);
    int calls = 0;
    sort_stats told;
    const sort_stats returned =
        sort_file({dir.file("in.bin")}, dir.file("out.bin"),
                  cpu_options(f, false, budget, dir.path().string()), [&](const sort_stats& s) {
                    ++calls;
                    told = s;
                    // Renamed into place already, whole.
                    EXPECT_EQ(test::read_file(dir.file("out.bin")), expected);
                  });
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(told.records, data.size() / 8);
    EXPECT_EQ(told.strategy, returned.strategy);
    EXPECT_TRUE(has_stage(told, "commit"));
    EXPECT_LE(told.wall_seconds, returned.wall_seconds);
    if (returned.strategy == "cpu-one-run") {
      // Its output mapped whole: unmapped after the commit, reported in the returned stats.
      EXPECT_FALSE(has_stage(told, "unmap"));
      EXPECT_TRUE(has_stage(returned, "unmap"));
    }
    EXPECT_EQ(test::read_file(dir.file("out.bin")), expected);
  }
}

TEST(SortFileCommitted, AnErrorFromTheCallbackComesAfterTheRestWithTheOutputInPlace) {
  const record_format f = test::make_format("u32", 4, 0);
  test::scratch_dir dir;
  const auto data = test::random_records(100000, f, test::base_seed() + 42);
  test::write_file(dir.file("in.bin"), data);
  EXPECT_THROW(sort_file({dir.file("in.bin")}, dir.file("out.bin"),
                         cpu_options(f, false, 1 << 30),
                         [](const sort_stats&) { throw error("the caller's own failure"); }),
               error);
  EXPECT_EQ(test::read_file(dir.file("out.bin")), test::reference_sort(data, f, false));
}

TEST(SortBuffer, SortsInPlace) {
  const record_format f = test::make_format("f32", 4, 0);
  auto data = test::random_records(100000, f, test::base_seed());
  const auto expect = test::reference_sort(data, f, true);
  sort_options o = cpu_options(f, true, 0);
  sort_buffer(data, o);
  EXPECT_EQ(data, expect);
  std::vector<std::byte> odd(7);
  EXPECT_THROW(sort_buffer(odd, o), error);
}

}  // namespace
}  // namespace gpusort
