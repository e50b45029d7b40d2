// Tests for the device-aware handles (gpu/device_memory.cuh): each records its device, a move
// carries it, and destroying a handle leaves the caller's current device alone.
#include "gpu/device_memory.cuh"

#include <gtest/gtest.h>

#include <utility>

#include "gpu_test_support.hpp"

namespace gpusort::gpu {
namespace {

int current_device() {
  int d = no_device;
  GPUSORT_CUDA_TRY(cudaGetDevice(&d));
  return d;
}

TEST(device_memory, empty_handles_have_no_device) {
  // No CUDA call: runs without a GPU.
  EXPECT_EQ(device_buffer().device(), no_device);
  EXPECT_EQ(stream().device(), no_device);
  EXPECT_EQ(event().device(), no_device);
}

class device_memory_test : public test::gpu_test {};

TEST_F(device_memory_test, handles_record_their_device_and_moves_carry_it) {
  const int last = device_count() - 1;
  device_buffer buffer(4096, last);
  stream s(last);
  event e(last, false);
  EXPECT_EQ(buffer.device(), last);
  EXPECT_EQ(s.device(), last);
  EXPECT_EQ(e.device(), last);

  device_buffer moved_buffer(std::move(buffer));
  stream moved_stream(std::move(s));
  event moved_event(std::move(e));
  EXPECT_EQ(moved_buffer.device(), last);
  EXPECT_EQ(moved_stream.device(), last);
  EXPECT_EQ(moved_event.device(), last);
  EXPECT_EQ(buffer.device(), no_device);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(s.device(), no_device);
  EXPECT_EQ(s.get(), nullptr);
  EXPECT_EQ(e.device(), no_device);
  EXPECT_FALSE(e);

  device_buffer assigned;
  assigned = std::move(moved_buffer);
  EXPECT_EQ(assigned.device(), last);
  EXPECT_EQ(moved_buffer.device(), no_device);
  EXPECT_EQ(device_buffer(0, last).device(), last);
}

TEST_F(device_memory_test, creating_and_destroying_keeps_the_current_device) {
  // With several GPUs the handles live on another device than the current one; with one, the
  // same checks hold trivially.
  const int count = device_count();
  const int other = count - 1;
  GPUSORT_CUDA_TRY(cudaSetDevice(0));
  {
    device_buffer buffer(1 << 20, other);
    stream s(other);
    event e(other, true);
    EXPECT_EQ(current_device(), 0) << "a constructor changed the current device";
    e.record(s.get());
    s.synchronize();
    EXPECT_TRUE(e.query());
  }
  EXPECT_EQ(current_device(), 0) << "a destructor changed the current device";
}

TEST_F(device_memory_test, device_guard_restores_the_previous_device) {
  const int other = device_count() - 1;
  GPUSORT_CUDA_TRY(cudaSetDevice(0));
  {
    device_guard guard(other);
    EXPECT_EQ(current_device(), other);
  }
  EXPECT_EQ(current_device(), 0);
  {
    device_guard guard(other, std::nothrow);
    EXPECT_EQ(current_device(), other);
  }
  EXPECT_EQ(current_device(), 0);
}

TEST_F(device_memory_test, handles_on_every_device_at_once) {
  const int count = device_count();
  if (count < 2) GTEST_SKIP() << "one CUDA device: the multi-GPU case needs two";
  std::vector<device_buffer> buffers;
  std::vector<stream> streams;
  for (int d = 0; d < count; ++d) {
    buffers.emplace_back(1 << 20, d);
    streams.emplace_back(d);
  }
  for (int d = 0; d < count; ++d) {
    EXPECT_EQ(buffers[static_cast<std::size_t>(d)].device(), d);
    cudaPointerAttributes attributes{};
    GPUSORT_CUDA_TRY(
        cudaPointerGetAttributes(&attributes, buffers[static_cast<std::size_t>(d)].data()));
    EXPECT_EQ(attributes.device, d) << "the memory is not on the device the buffer names";
    streams[static_cast<std::size_t>(d)].synchronize();
  }
}

TEST_F(device_memory_test, allocation_failure_names_the_bytes) {
  const int device = 0;
  // More than any GPU holds: out_of_memory, with the byte count.
  constexpr std::size_t too_many = std::size_t{1} << 52;
  try {
    device_buffer buffer(too_many, device);
    FAIL() << "allocated 4 PiB";
  } catch (const out_of_memory& e) {
    EXPECT_EQ(e.bytes(), too_many);
    EXPECT_NE(std::string(e.what()).find("cudaMalloc"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gpusort::gpu
