// Host-side tests of the GPU layer that need no device: record split/join bit arithmetic (the
// same functions the split/merge kernels run), supports_format, device_count without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>

#include "gpu/record_kernels.cuh"
#include "gpu/run_former.hpp"
#include "gpu/tuning.cuh"
#include "test_support.hpp"

namespace gpusort::test {
namespace {

using gpu::detail::join_record_bits;
using gpu::detail::load_record;
using gpu::detail::split_record_bits;
using gpu::detail::store_record;
using gpu::detail::u128;

template <typename Word>
void check_layout(std::uint32_t record_size, std::uint32_t key_offset, std::uint64_t seed) {
  SCOPED_TRACE("record " + std::to_string(record_size) + " key at " + std::to_string(key_offset) +
               " key bytes " + std::to_string(sizeof(Word)));
  std::mt19937_64 rng(seed);
  const std::uint32_t payload_bytes = record_size - sizeof(Word);
  alignas(16) unsigned char rec[16];
  alignas(16) unsigned char back[16];
  for (int i = 0; i < 1000; ++i) {
    for (auto& b : rec) b = static_cast<unsigned char>(rng());
    const u128 bits = load_record(rec, record_size);
    Word key;
    std::uint64_t payload;
    split_record_bits<Word>(bits, key_offset, key, payload);
    Word expected_key;
    std::memcpy(&expected_key, rec + key_offset, sizeof(Word));
    ASSERT_EQ(key, expected_key);
    // The payload is the bytes before the key, then the bytes after it.
    unsigned char expected_payload[8] = {};
    std::memcpy(expected_payload, rec, key_offset);
    std::memcpy(expected_payload + key_offset, rec + key_offset + sizeof(Word),
                record_size - key_offset - sizeof(Word));
    std::uint64_t expected_payload_word;
    std::memcpy(&expected_payload_word, expected_payload, 8);
    ASSERT_EQ(payload, expected_payload_word);
    if (payload_bytes < 8) ASSERT_EQ(payload >> (8 * payload_bytes), 0u) << "zero-extended";
    std::memset(back, 0xA5, sizeof back);
    store_record(back, record_size, join_record_bits<Word>(key, payload, key_offset));
    ASSERT_EQ(std::memcmp(back, rec, record_size), 0);
    for (std::uint32_t b = record_size; b < 16; ++b)
      ASSERT_EQ(back[b], 0xA5) << "wrote past the record";
  }
}

TEST(record_bits, SplitJoinRoundTripEveryLayout) {
  for (std::uint32_t payload = 0; payload <= 8; ++payload) {
    for (std::uint32_t off = 0; off <= payload; ++off) {
      check_layout<std::uint32_t>(4 + payload, off, base_seed() + payload * 16 + off);
      check_layout<std::uint64_t>(8 + payload, off, base_seed() + payload * 16 + off + 1000);
    }
  }
}

TEST(record_bits, SupportsFormat) {
  record_format f;  // u64 key-only
  EXPECT_TRUE(gpu::supports_format(f));
  f.record_size = 16;
  EXPECT_TRUE(gpu::supports_format(f));
  f.key_offset = 8;
  EXPECT_TRUE(gpu::supports_format(f));
  f.key_offset = 9;
  EXPECT_FALSE(gpu::supports_format(f));
  f.key_offset = 0;
  f.record_size = 17;
  EXPECT_FALSE(gpu::supports_format(f));
  set_key_type(f, "f32");
  f.record_size = 12;
  EXPECT_TRUE(gpu::supports_format(f));
  f.record_size = 13;
  EXPECT_FALSE(gpu::supports_format(f));
  record_format g = format_preset("gensort");
  EXPECT_FALSE(gpu::supports_format(g));
  record_format bad;
  bad.type = key_type::u32;
  bad.key_size = 8;  // inconsistent with the type
  EXPECT_FALSE(gpu::supports_format(bad));
}

TEST(record_bits, DeviceCountNeverThrows) {
  int n = -1;
  EXPECT_NO_THROW(n = gpu::device_count());
  EXPECT_GE(n, 0);
}

TEST(record_bits, PolicyPrints) {
  std::ostringstream os;
  os << gpu::sm90_policies::records;
  EXPECT_EQ(os.str(), "256x4");
  EXPECT_EQ(gpu::sm90_policies::records, (gpu::kernel_policy{256, 4}));
}

}  // namespace
}  // namespace gpusort::test
