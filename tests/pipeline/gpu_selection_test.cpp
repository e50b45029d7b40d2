// resolve_devices: --devices against the number of visible GPUs (no GPU needed).
#include "pipeline/gpu_selection.hpp"

#include <gtest/gtest.h>

#include <string>

#include "gpusort/error.hpp"

namespace gpusort::pipeline {
namespace {

device_selection selection(device_selection::mode how, std::vector<int> ids = {}) {
  device_selection s;
  s.how = how;
  s.ids = std::move(ids);
  return s;
}

/// The message resolve_devices throws, or "" when it does not.
std::string error_of(const device_selection& s, int visible) {
  try {
    static_cast<void>(resolve_devices(s, visible));
  } catch (const error& e) {
    return e.what();
  }
  return {};
}

using mode = device_selection::mode;

TEST(gpu_selection, auto_and_all_take_every_visible_gpu) {
  EXPECT_EQ(resolve_devices(selection(mode::automatic), 3), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(resolve_devices(selection(mode::all), 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(resolve_devices(selection(mode::automatic), 1), (std::vector<int>{0}));
  // auto falls back to the CPU; all insists.
  EXPECT_TRUE(resolve_devices(selection(mode::automatic), 0).empty());
  EXPECT_EQ(error_of(selection(mode::all), 0), "--devices all: no usable CUDA device found");
  EXPECT_TRUE(resolve_devices(selection(mode::none), 4).empty());
}

TEST(gpu_selection, a_list_keeps_its_order) {
  EXPECT_EQ(resolve_devices(selection(mode::list, {2, 0}), 3), (std::vector<int>{2, 0}));
  EXPECT_EQ(resolve_devices(selection(mode::list, {0}), 1), (std::vector<int>{0}));
}

TEST(gpu_selection, bad_lists_are_named) {
  EXPECT_EQ(error_of(selection(mode::list, {0, 2}), 2),
            "--devices 0,2: no CUDA device 2 (2 present, 0 to 1)");
  EXPECT_EQ(error_of(selection(mode::list, {1, 1}), 2), "--devices 1,1: device 1 is listed twice");
  EXPECT_EQ(error_of(selection(mode::list, {-1}), 2), "--devices -1: device -1 is negative");
  EXPECT_EQ(error_of(selection(mode::list, {}), 2), "--devices: an empty list of devices");
  EXPECT_EQ(error_of(selection(mode::list, {0}), 0), "--devices 0: no CUDA device 0 (0 present)");
}

TEST(gpu_selection, list_text) {
  EXPECT_EQ(device_list_text({}), "");
  EXPECT_EQ(device_list_text({3}), "3");
  EXPECT_EQ(device_list_text({1, 0, 7}), "1,0,7");
}

}  // namespace
}  // namespace gpusort::pipeline
