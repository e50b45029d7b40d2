// Size parsing as GNU sort spells sizes.
#include <gtest/gtest.h>

#include "core/parse_size.hpp"
#include "gpusort/error.hpp"

namespace gpusort {
namespace {

TEST(ParseSize, SuffixesArePowersOf1024) {
  EXPECT_EQ(parse_size("4096", 0, "size"), 4096u);
  EXPECT_EQ(parse_size("1K", 0, "size"), 1024u);
  EXPECT_EQ(parse_size("512M", 0, "size"), 512ull << 20);
  EXPECT_EQ(parse_size("8G", 0, "size"), 8ull << 30);
  EXPECT_EQ(parse_size("8g", 0, "size"), 8ull << 30);
  EXPECT_EQ(parse_size("8GiB", 0, "size"), 8ull << 30);
  EXPECT_EQ(parse_size("1.5G", 0, "size"), 3ull << 29);
  EXPECT_EQ(parse_size("2T", 0, "size"), 2ull << 40);
  EXPECT_EQ(parse_size("100b", 0, "size"), 100u);
}

TEST(ParseSize, PercentOfTotal) {
  EXPECT_EQ(parse_size("50%", 1000, "size"), 500u);
  EXPECT_EQ(parse_size("100%", 1000, "size"), 1000u);
  EXPECT_THROW((void)parse_size("150%", 1000, "size"), error);
}

TEST(ParseSize, RejectsGarbageWithTheFlagName) {
  for (const char* bad : {"", "G", "12X", "1.2.3G", "-5", "8GB2"}) {
    EXPECT_THROW((void)parse_size(bad, 100, "--buffer-size"), error) << bad;
  }
  try {
    (void)parse_size("lots", 100, "--buffer-size");
    FAIL();
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("--buffer-size 'lots'"), std::string::npos);
  }
}

TEST(FormatBytes, Readable) {
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_bytes(512ull << 20), "512 MiB");
  EXPECT_EQ(format_bytes(3ull << 29), "1.5 GiB");
}

}  // namespace
}  // namespace gpusort
