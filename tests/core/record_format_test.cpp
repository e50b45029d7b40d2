// Record formats: parsing key types, presets and validation messages.
#include <gtest/gtest.h>

#include "gpusort/error.hpp"
#include "gpusort/record_format.hpp"

namespace gpusort {
namespace {

TEST(RecordFormat, DefaultIsU64KeyOnly) {
  const record_format f;
  EXPECT_EQ(f.type, key_type::u64);
  EXPECT_EQ(f.record_size, 8u);
  EXPECT_TRUE(f.key_only());
  EXPECT_NO_THROW(f.validate());
}

TEST(RecordFormat, SetKeyTypeResizesKeyOnlyRecords) {
  record_format f;
  set_key_type(f, "u32");
  EXPECT_EQ(f.key_size, 4u);
  EXPECT_EQ(f.record_size, 4u);
  f.record_size = 16;
  set_key_type(f, "f64");
  EXPECT_EQ(f.key_size, 8u);
  EXPECT_EQ(f.record_size, 16u) << "records with a payload keep their size";
  set_key_type(f, "bytes:10");
  EXPECT_EQ(f.type, key_type::bytes);
  EXPECT_EQ(f.key_size, 10u);
  EXPECT_EQ(key_type_name(f), "bytes:10");
}

TEST(RecordFormat, RejectsUnknownTypes) {
  record_format f;
  for (const char* bad : {"u16", "U64", "bytes:", "bytes:0", "bytes:x", "bytes:99999", ""}) {
    EXPECT_THROW(set_key_type(f, bad), error) << bad;
  }
  try {
    set_key_type(f, "u128");
    FAIL();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key type 'u128'"), std::string::npos);
  }
}

TEST(RecordFormat, KeyOutsideRecordIsAnError) {
  record_format f;
  f.record_size = 12;
  f.key_offset = 8;
  try {
    f.validate();
    FAIL();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("key outside the record"), std::string::npos);
  }
  f.key_offset = 4;
  EXPECT_NO_THROW(f.validate());
}

TEST(RecordFormat, Presets) {
  const record_format g = format_preset("gensort");
  EXPECT_EQ(g.record_size, 100u);
  EXPECT_EQ(g.key_size, 10u);
  EXPECT_EQ(g.type, key_type::bytes);
  const record_format kv = format_preset("kv64");
  EXPECT_EQ(kv.record_size, 16u);
  EXPECT_EQ(kv.type, key_type::u64);
  EXPECT_EQ(format_preset("i32").record_size, 4u);
  EXPECT_THROW((void)format_preset("csv"), error);
  EXPECT_EQ(describe(kv), "u64 key at offset 0 of 16-byte records");
}

}  // namespace
}  // namespace gpusort
