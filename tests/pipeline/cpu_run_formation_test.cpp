// sort_single_run_into: one run sorted straight into the output mapping, from one mapped input
// file or from several inputs read into memory, written into the output twice (into the
// mapping and again within it) or once through a scratch buffer (output_plan::write_once).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/input_source.hpp"
#include "io/output_file.hpp"
#include "pipeline/cpu_run_formation.hpp"
#include "pipeline/strategy.hpp"
#include "test_support.hpp"

namespace gpusort::pipeline {
namespace {

TEST(SortSingleRunInto, OnceOrTwiceFromAMappedFileOrSeveralReadInputs) {
  const record_format format = test::make_format("u64", 16, 0);
  // 300007 records (4.6 MiB): more than one pass over memory, buckets in cache after it.
  const std::uint64_t n = 300007;
  test::scratch_dir dir;
  const std::uint64_t seed = test::base_seed() + 131;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<std::byte> records = test::random_records(n, format, seed);
  const std::vector<std::byte> want = test::reference_sort(records, format, false);
  const std::size_t half = (n / 2) * format.record_size;
  test::write_file(dir.file("whole"), records);
  test::write_file(dir.file("first"), {records.begin(), records.begin() + half});
  test::write_file(dir.file("second"), {records.begin() + half, records.end()});
  output_plan writing;
  writing.mode = output_mode::mapped_whole;
  for (const bool write_once : {false, true}) {
    for (const bool several : {false, true}) {
      SCOPED_TRACE(std::string(write_once ? "once" : "twice") +
                   (several ? ", two inputs read" : ", one input mapped"));
      const std::vector<std::string> paths =
          several ? std::vector<std::string>{dir.file("first"), dir.file("second")}
                  : std::vector<std::string>{dir.file("whole")};
      io::input_source input(paths, format.record_size);
      const std::uint64_t bytes = *input.known_size();
      const run_layout layout = make_run_layout(
          bytes, format, 4 * bytes, [&](std::uint64_t r) { return r * format.record_size; });
      ASSERT_TRUE(layout.single_run);
      const std::string target = dir.file(std::string("out") + (write_once ? "1" : "2") +
                                          (several ? "r" : "m"));
      {
        io::output_file out(target);
        writing.write_once = write_once;
        output_opener opener(out, writing, format, /*unique_stream=*/false, nullptr);
        io::output_sink& sink = opener.open(bytes);
        ASSERT_TRUE(sort_single_run_into(input, layout, format, false, sink, bytes, 2,
                                         write_once, nullptr));
        sink.finish();
        out.commit(false, bytes);
      }
      EXPECT_TRUE(test::read_file(target) == want);
    }
  }
}

}  // namespace
}  // namespace gpusort::pipeline
