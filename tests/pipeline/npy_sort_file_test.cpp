// sort_file and check_file on .npy inputs through the library: every CPU strategy (one run into
// the output mapping, resident runs merged, spilled runs), with -r and -u, against
// std::stable_sort; the output keeps the input's header, with the shape of what was written.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpusort/error.hpp"
#include "gpusort/sort.hpp"
#include "npy_support.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

// 20-byte records, the key (i64) at offset 4: records and keys off any alignment.
const std::string descr = "[('id', '<u4'), ('k', '<i8'), ('', '|V3'), ('c', 'S5')]";

TEST(NpySortFile, EveryCpuStrategyWritesAfterTheHeader) {
  test::scratch_dir dir;
  const record_format f = test::make_format("i64", 20, 4);
  const std::uint64_t records = 200003;
  std::vector<std::byte> data = test::random_records(records, f, test::base_seed() + 31);
  std::mt19937_64 rng(test::base_seed());
  for (std::uint64_t i = 0; i < records; ++i) {  // few distinct keys: --unique drops many
    const std::int64_t key = static_cast<std::int64_t>(rng() % 5000) - 2500;
    std::memcpy(data.data() + i * 20 + 4, &key, 8);
  }
  // A 16-byte aligned header (an old NumPy's): the records start off the page.
  const std::vector<std::byte> header =
      test::npy_header(test::npy_dict(descr, test::npy_shape(records)), 1, 16);
  std::vector<std::byte> file = header;
  file.insert(file.end(), data.begin(), data.end());
  test::write_file(dir.file("in.npy"), file);
  for (const bool descending : {false, true}) {
    for (const bool unique : {false, true}) {
      for (const std::uint64_t budget : {std::uint64_t{1} << 30,
                                         records * 20 + (std::uint64_t{2} << 20),
                                         std::uint64_t{4} << 20}) {
        SCOPED_TRACE(std::string(descending ? "desc" : "asc") + (unique ? " unique" : "") +
                     " budget " + std::to_string(budget));
        sort_options o;
        o.npy.key_field = "k";
        o.descending = descending;
        o.unique = unique;
        o.buffer_bytes = budget;
        o.temp_dir = dir.path().string();
        o.devices.how = device_selection::mode::none;
        const sort_stats stats = sort_file({dir.file("in.npy")}, dir.file("out.npy"), o);
        std::vector<std::byte> expected = test::reference_sort(data, f, descending);
        if (unique) {
          std::vector<std::byte> kept;
          for (std::size_t i = 0; i < records; ++i) {
            const std::byte* r = expected.data() + i * 20;
            if (i == 0 || test::reference_compare(r - 20, r, f) != 0)
              kept.insert(kept.end(), r, r + 20);
          }
          expected = kept;
        }
        EXPECT_EQ(stats.records, records);
        EXPECT_EQ(stats.output_records, expected.size() / 20) << stats.strategy;
        const test::npy_parts p = test::split_npy(test::read_file(dir.file("out.npy")));
        EXPECT_EQ(p.header_bytes, header.size()) << stats.strategy;
        EXPECT_EQ(p.dict, test::npy_dict(descr, test::npy_shape(stats.output_records)));
        EXPECT_EQ(p.data, expected) << stats.strategy;
        const check_result c = check_file({dir.file("out.npy")}, o);
        EXPECT_TRUE(c.sorted()) << c.key;
        EXPECT_EQ(c.records, stats.output_records);
      }
    }
  }
  // The format comes from the header: a library caller's format is not consulted unless marked
  // as chosen, and then it must agree.
  sort_options o;
  o.npy.key_field = "k";
  o.format = test::make_format("f32", 4, 0);
  o.devices.how = device_selection::mode::none;
  EXPECT_NO_THROW(sort_file({dir.file("in.npy")}, dir.file("out.npy"), o));
  o.npy.type_set = true;
  EXPECT_THROW(sort_file({dir.file("in.npy")}, dir.file("out.npy"), o), error);
  EXPECT_THROW(check_file({dir.file("in.npy")}, o), error);
}

}  // namespace
}  // namespace gpusort
