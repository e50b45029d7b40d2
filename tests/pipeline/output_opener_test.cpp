// output_opener: a stream's output, opened once the stream has ended, is mapped whole (and
// faulted in) when its size is within the plan's limit, and written in windows beyond it.
#include <gtest/gtest.h>

#include <cstring>

#include "io/output_file.hpp"
#include "pipeline/strategy.hpp"
#include "test_support.hpp"

namespace gpusort::pipeline {
namespace {

TEST(OutputOpener, AStreamsOutputIsMappedWholeOnlyWithinThePlansLimit) {
  const record_format format = test::make_format("u64", 8, 0);
  output_plan plan;  // as plan_output makes it for a stream a GPU may sort
  plan.whole_up_to = 1 << 20;
  plan.prefault = true;
  plan.prefault_threads = 2;
  test::scratch_dir dir;
  for (const std::uint64_t bytes : {std::uint64_t{1} << 20, (std::uint64_t{1} << 20) + 8}) {
    SCOPED_TRACE(std::to_string(bytes) + " bytes");
    const std::vector<std::byte> data = test::random_bytes(bytes, test::base_seed() + bytes);
    const std::string target = dir.file("out" + std::to_string(bytes));
    {
      io::output_file out(target);
      output_opener opener(out, plan, format, /*unique_stream=*/false, nullptr);
      io::output_sink& sink = opener.open(bytes);
      EXPECT_EQ(&opener.open(bytes), &sink) << "opened once";
      EXPECT_EQ(opener.mapping().size(), bytes <= plan.whole_up_to ? bytes : 0u);
      sink.write(0, data);
      sink.finish();
      out.commit(false, bytes);
    }
    EXPECT_EQ(test::read_file(target), data);
  }
}

}  // namespace
}  // namespace gpusort::pipeline
