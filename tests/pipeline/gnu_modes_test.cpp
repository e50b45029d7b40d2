// The GNU sort modes through the library: check_file (-c), unique (-u) on every strategy the
// CPU backend plans, and merge_only (-m) of sorted inputs, against std::stable_sort.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "gpusort/error.hpp"
#include "gpusort/sort.hpp"
#include "io/file_descriptor.hpp"
#include "pipeline/unique_output.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

sort_options cpu_options(const record_format& f, bool descending, std::uint64_t budget) {
  sort_options o;
  o.format = f;
  o.descending = descending;
  o.buffer_bytes = budget;
  o.devices.how = device_selection::mode::none;
  return o;
}

/// The first record of each run of equal keys of `sorted`.
std::vector<std::byte> reference_unique(const std::vector<std::byte>& sorted,
                                        const record_format& f) {
  std::vector<std::byte> out;
  const std::size_t n = sorted.size() / f.record_size;
  for (std::size_t i = 0; i < n; ++i) {
    const std::byte* r = sorted.data() + i * f.record_size;
    if (i == 0 || test::reference_compare(r - f.record_size, r, f) != 0)
      out.insert(out.end(), r, r + f.record_size);
  }
  return out;
}

/// Records with few distinct keys, so that equal keys are common.
std::vector<std::byte> records_with_repeats(std::uint64_t count, const record_format& f,
                                            std::uint64_t seed, std::uint64_t distinct) {
  std::vector<std::byte> data = test::random_records(count, f, seed);
  const std::vector<std::byte> keys = test::random_records(distinct, f, seed + 1);
  std::mt19937_64 rng(seed);
  for (std::uint64_t i = 0; i < count; ++i)
    std::memcpy(data.data() + i * f.record_size + f.key_offset,
                keys.data() + (rng() % distinct) * f.record_size + f.key_offset, f.key_size);
  return data;
}

struct layout_case {
  const char* type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
};

class GnuModes : public ::testing::TestWithParam<layout_case> {
 protected:
  [[nodiscard]] record_format format() const {
    return test::make_format(GetParam().type, GetParam().record_size, GetParam().key_offset);
  }
};

TEST_P(GnuModes, UniqueOnEveryCpuStrategy) {
  const record_format f = format();
  test::scratch_dir dir;
  const std::uint64_t records = 150001;
  for (const bool descending : {false, true}) {
    // One run into the mapping; resident runs merged; runs spilled to disk.
    for (const std::uint64_t budget : {std::uint64_t{1} << 30,
                                       records * f.record_size + (std::uint64_t{2} << 20),
                                       std::uint64_t{4} << 20}) {
      const std::uint64_t seed = test::base_seed() ^ (budget + descending);
      SCOPED_TRACE(std::string(GetParam().type) + " budget " + std::to_string(budget) +
                   (descending ? " desc" : "") + " seed " + std::to_string(seed));
      const auto data = records_with_repeats(records, f, seed, 5000);
      test::write_file(dir.file("in"), data);
      sort_options o = cpu_options(f, descending, budget);
      o.unique = true;
      const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"), o);
      const auto expected = reference_unique(test::reference_sort(data, f, descending), f);
      EXPECT_EQ(stats.records, records);
      EXPECT_EQ(stats.output_records, expected.size() / f.record_size) << stats.strategy;
      EXPECT_EQ(test::read_file(dir.file("out")), expected) << stats.strategy;
      EXPECT_TRUE(check_file({dir.file("out")}, o).sorted());
    }
  }
}

TEST_P(GnuModes, CheckFindsTheFirstDisorderAcrossInputs) {
  const record_format f = format();
  test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed() + 5;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto sorted = test::reference_sort(records_with_repeats(200000, f, seed, 100000), f, false);
  const std::size_t half = 100000 * f.record_size;
  test::write_file(dir.file("a"),
                   {sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(half)});
  test::write_file(dir.file("b"),
                   {sorted.begin() + static_cast<std::ptrdiff_t>(half), sorted.end()});
  sort_options o = cpu_options(f, false, 0);
  check_result r = check_file({dir.file("a"), dir.file("b")}, o);
  EXPECT_TRUE(r.sorted());
  EXPECT_EQ(r.records, 200000u);
  // Concatenated the other way round, the first record of `a` breaks the order (unless the
  // boundary keys are equal).
  r = check_file({dir.file("b"), dir.file("a")}, o);
  if (test::reference_compare(sorted.data(), sorted.data() + sorted.size() - f.record_size,
                              f) < 0) {
    ASSERT_FALSE(r.sorted());
    EXPECT_EQ(*r.disorder, 100000u);
    EXPECT_EQ(r.input, dir.file("a"));
    EXPECT_FALSE(r.key.empty());
    EXPECT_FALSE(r.previous_key.empty());
  }
  // Strictly (-c -u): the first pair of equal neighbours.
  o.unique = true;
  r = check_file({dir.file("a"), dir.file("b")}, o);
  std::optional<std::uint64_t> equal_at;
  for (std::uint64_t i = 1; i < 200000 && !equal_at; ++i)
    if (test::reference_compare(sorted.data() + (i - 1) * f.record_size,
                                sorted.data() + i * f.record_size, f) == 0)
      equal_at = i;
  EXPECT_EQ(r.disorder, equal_at);
  // Descending order is disorder for an ascending file (unless every key is equal).
  o.unique = false;
  o.descending = true;
  EXPECT_FALSE(check_file({dir.file("a")}, o).sorted());
}

TEST_P(GnuModes, MergeOnlyMergesSortedInputsStably) {
  const record_format f = format();
  test::scratch_dir dir;
  for (const bool descending : {false, true}) {
    for (const std::size_t inputs : {std::size_t{1}, std::size_t{2}, std::size_t{17}}) {
      const std::uint64_t seed = test::base_seed() + inputs * 3 + descending;
      SCOPED_TRACE(std::to_string(inputs) + " inputs" + (descending ? " desc" : "") + " seed " +
                   std::to_string(seed));
      std::vector<std::string> names;
      std::vector<std::byte> all;
      for (std::size_t j = 0; j < inputs; ++j) {
        // Sizes from empty to several merge windows; many equal keys across inputs.
        const std::uint64_t n = j == 1 ? 0 : 1 + (seed * (j + 1)) % 40000;
        const auto run =
            test::reference_sort(records_with_repeats(n, f, seed + j, 300), f, descending);
        names.push_back(dir.file("run" + std::to_string(j)));
        test::write_file(names.back(), run);
        all.insert(all.end(), run.begin(), run.end());
      }
      sort_options o = cpu_options(f, descending, 0);
      o.merge_only = true;
      const sort_stats stats = sort_file(names, dir.file("out"), o);
      EXPECT_EQ(stats.strategy, "merge-inputs");
      // Equal keys keep input order: the merge equals a stable sort of the concatenation.
      EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(all, f, descending));
      o.unique = true;
      sort_file(names, dir.file("out"), o);
      EXPECT_EQ(test::read_file(dir.file("out")),
                reference_unique(test::reference_sort(all, f, descending), f));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, GnuModes,
                         ::testing::Values(layout_case{"u32", 4, 0}, layout_case{"u64", 8, 0},
                                           layout_case{"i64", 16, 8}, layout_case{"f64", 8, 0},
                                           layout_case{"f32", 12, 4},
                                           layout_case{"bytes:10", 100, 0}),
                         [](const auto& param_info) {
                           std::string s = std::string(param_info.param.type) + "_" +
                                           std::to_string(param_info.param.record_size);
                           std::replace(s.begin(), s.end(), ':', '_');
                           return s;
                         });

TEST(MergeOnly, InputsPastTheBudgetMergeIntoWindowsOfTheOutput) {
  // 12 MiB of 16-byte records in three inputs against a 4 MiB budget: their mappings are not
  // populated, and the output is written in windows, each mapped by the merge thread that
  // fills it.
  const record_format f = test::make_format("u64", 16, 0);
  test::scratch_dir dir;
  for (const bool descending : {false, true}) {
    const std::uint64_t seed = test::base_seed() + 12 + descending;
    SCOPED_TRACE(std::string(descending ? "desc" : "asc") + " seed " + std::to_string(seed));
    std::vector<std::string> names;
    std::vector<std::byte> all;
    for (std::size_t j = 0; j < 3; ++j) {
      const auto run = test::reference_sort(
          records_with_repeats((std::uint64_t{4} << 20) / 16, f, seed + j, 5000), f, descending);
      names.push_back(dir.file("run" + std::to_string(j)));
      test::write_file(names.back(), run);
      all.insert(all.end(), run.begin(), run.end());
    }
    sort_options o = cpu_options(f, descending, std::uint64_t{4} << 20);
    o.merge_only = true;
    const sort_stats stats = sort_file(names, dir.file("out"), o);
    EXPECT_EQ(stats.strategy, "merge-inputs");
    EXPECT_EQ(stats.runs, 3u);
    const std::vector<std::byte> expected = test::reference_sort(all, f, descending);
    EXPECT_EQ(test::read_file(dir.file("out")), expected);
    o.unique = true;
    sort_file(names, dir.file("out"), o);
    EXPECT_EQ(test::read_file(dir.file("out")), reference_unique(expected, f));
  }
}

TEST(MergeOnly, AnUnsortedInputFailsBeforeTheOutputExists) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 8, 0);
  const auto sorted =
      test::reference_sort(test::random_records(5000, f, test::base_seed()), f, false);
  auto unsorted = sorted;
  std::swap_ranges(unsorted.begin() + 8 * 4000, unsorted.begin() + 8 * 4001,
                   unsorted.begin() + 8 * 10);
  test::write_file(dir.file("good"), sorted);
  test::write_file(dir.file("bad"), unsorted);
  test::write_file(dir.file("out"), sorted);  // an old output, which must survive
  sort_options o = cpu_options(f, false, 0);
  o.merge_only = true;
  try {
    sort_file({dir.file("good"), dir.file("bad")}, dir.file("out"), o);
    FAIL() << "an unsorted input was merged";
  } catch (const error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dir.file("bad")), std::string::npos) << what;
    EXPECT_NE(what.find("not sorted"), std::string::npos) << what;
  }
  EXPECT_EQ(test::read_file(dir.file("out")), sorted);
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 3u) << "a temporary file was left behind";
}

// The compaction itself, in blocks far smaller than the output: the first equal keys come
// after several untouched blocks, then every block shifts.
TEST(UniqueCompaction, InMemoryAndInAFileAcrossManyBlocks) {
  const record_format f = test::make_format("i64", 24, 8);
  test::scratch_dir dir;
  for (const std::uint64_t first_repeat :
       {std::uint64_t{0}, std::uint64_t{50000}, std::uint64_t{99999}}) {
    SCOPED_TRACE("first repeat at " + std::to_string(first_repeat));
    // Distinct ascending keys, then from first_repeat on every key three times.
    std::vector<std::byte> data = test::random_records(100000, f, test::base_seed());
    for (std::uint64_t i = 0; i < 100000; ++i) {
      const std::uint64_t rank = i < first_repeat ? i : first_repeat + (i - first_repeat) / 3;
      const std::int64_t key = static_cast<std::int64_t>(rank) - 70000;
      std::memcpy(data.data() + i * 24 + 8, &key, 8);
    }
    const auto expected = reference_unique(data, f);
    const std::uint64_t buffer_bytes = 2 * 4096 * 24;  // blocks of 4096 records
    std::vector<std::byte> memory = data;
    const std::uint64_t kept =
        pipeline::unique_in_memory(memory, f, buffer_bytes, nullptr);
    ASSERT_EQ(kept, expected.size() / 24);
    memory.resize(expected.size());
    EXPECT_EQ(memory, expected);

    // In a file, after a header of 5 bytes that must stay.
    // (Built by a copy: GCC 12 reports a false out-of-bounds memmove for insert() here.)
    std::vector<std::byte> file_bytes(5 + data.size(), std::byte{7});
    std::memcpy(file_bytes.data() + 5, data.data(), data.size());
    test::write_file(dir.file("out"), file_bytes);
    const io::file_descriptor fd = io::file_descriptor::open(dir.file("out"), O_RDWR);
    ASSERT_EQ(pipeline::unique_in_file(fd, 5, 100000, f, buffer_bytes, nullptr), kept);
    std::vector<std::byte> back = test::read_file(dir.file("out"));
    EXPECT_EQ(std::vector<std::byte>(back.begin(), back.begin() + 5),
              std::vector<std::byte>(5, std::byte{7}));
    back.erase(back.begin(), back.begin() + 5);
    back.resize(expected.size());
    EXPECT_EQ(back, expected);
  }
}

TEST(SortBufferUnique, KeptRecordsMoveToTheFront) {
  const record_format f = test::make_format("u32", 8, 4);
  auto data = records_with_repeats(100000, f, test::base_seed(), 777);
  const auto expected = reference_unique(test::reference_sort(data, f, false), f);
  sort_options o = cpu_options(f, false, 0);
  o.unique = true;
  const sort_stats stats = sort_buffer(data, o);
  ASSERT_EQ(stats.output_records, expected.size() / f.record_size);
  data.resize(expected.size());
  EXPECT_EQ(data, expected);
}

}  // namespace
}  // namespace gpusort
