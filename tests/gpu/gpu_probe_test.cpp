// Tests for pipeline/gpu_probe.cpp on the GPUs present: of several selected GPUs, find_gpu
// opens the first alone for a stream or an input of one chunk, and every one where the input
// may need them. Skips without a CUDA device; the cases of several GPUs skip with one.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/run_former.hpp"
#include "gpu_test_support.hpp"
#include "pipeline/plan.hpp"
#include "pipeline/strategy.hpp"
#include "test_support.hpp"

namespace gpusort::pipeline {
namespace {

class GpuProbe : public test::gpu_test {
 protected:
  void SetUp() override {
    test::gpu_test::SetUp();
    if (IsSkipped()) return;
    if (gpu::device_count() < 2) GTEST_SKIP() << "one CUDA device: nothing left unopened";
    options_.format = test::make_format("u64", 8, 0);
    options_.devices.how = device_selection::mode::list;
    options_.devices.ids = {1, 0};
  }
  /// The GPUs find_gpu opened for an input of `bytes` (nullopt: a stream), and its note.
  std::vector<int> opened(std::optional<std::uint64_t> bytes, std::string& note) const {
    const std::optional<gpu_facts> facts = find_gpu(options_, bytes, note);
    EXPECT_TRUE(facts.has_value());
    return facts ? facts->devices : std::vector<int>{};
  }
  sort_options options_;
};

TEST_F(GpuProbe, OneChunkOrAStreamOpensTheFirstGpuAlone) {
  std::string note;
  EXPECT_EQ(opened(std::uint64_t{1} << 20, note), std::vector<int>{1});
  EXPECT_EQ(note, "one chunk of 1 MiB goes to GPU 1 alone: GPU 0 is not opened");
  EXPECT_EQ(opened(std::nullopt, note), std::vector<int>{1});
  EXPECT_EQ(note, "a stream goes to GPU 1 alone: GPU 0 is not opened");
}

TEST_F(GpuProbe, MoreThanOneChunkOpensEveryGpu) {
  std::string note;
  options_.gpu_memory_bytes = std::uint64_t{96} << 20;
  // Far more than the budget holds: judged without opening the first GPU.
  EXPECT_EQ(opened(std::uint64_t{1} << 30, note), (std::vector<int>{1, 0}));
  EXPECT_NE(note.find("2 GPUs selected"), std::string::npos) << note;
  // As many records as three slots of the budget take: the first GPU is opened to find that
  // its workspace leaves less, then the other.
  EXPECT_EQ(opened(std::uint64_t{32} << 20, note), (std::vector<int>{1, 0}));
  // Within one chunk of the budget: the first alone.
  EXPECT_EQ(opened(std::uint64_t{16} << 20, note), std::vector<int>{1});
}

}  // namespace
}  // namespace gpusort::pipeline
