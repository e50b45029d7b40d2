// --stats=json and --trace written while a calling program has set a locale whose decimal
// separator is a comma (de_DE): still valid JSON holding the same numbers. printf's "%f"
// wrote "0,006616" there before the writers went through nlohmann::json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <locale>
#include <memory>
#include <string>

#include "core/trace.hpp"
#include "gpusort/stats.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

class GermanLocale : public ::testing::Test {
 protected:
  // Built once from the `locales` package's sources (scripts/install-deps.sh installs it), so
  // that the test needs no locale generated system-wide; localedef takes seconds.
  static void SetUpTestSuite() {
    locales_ = std::make_unique<test::scratch_dir>();
    const std::string cmd = "localedef -i de_DE -f UTF-8 '" + locales_->file("de_DE.UTF-8") +
                            "' >/dev/null 2>&1";
    [[maybe_unused]] const int status = std::system(cmd.c_str());  // warnings exit 1
  }
  static void TearDownTestSuite() { locales_.reset(); }

  void SetUp() override {
    saved_ = std::setlocale(LC_ALL, nullptr);
    ::setenv("LOCPATH", locales_->path().c_str(), 1);
    try {
      std::locale::global(std::locale("de_DE.UTF-8"));  // the C locale as well
    } catch (const std::runtime_error&) {
      GTEST_SKIP() << "no de_DE.UTF-8 locale: localedef (package locales) could not build one";
    }
    char probe[16];
    std::snprintf(probe, sizeof probe, "%.1f", 0.5);
    ASSERT_STREQ(probe, "0,5") << "the locale must write decimal commas for this test to mean "
                                  "anything";
  }
  void TearDown() override {
    std::locale::global(std::locale::classic());
    std::setlocale(LC_ALL, saved_.c_str());
    ::unsetenv("LOCPATH");
  }

 private:
  static inline std::unique_ptr<test::scratch_dir> locales_;
  std::string saved_;
};

TEST_F(GermanLocale, StatsJsonIsValidAndExact) {
  sort_stats stats;
  stats.records = 1000;
  stats.input_bytes = 8000;
  stats.runs = 3;
  stats.backend = "NVIDIA \"H200\"";  // quotes to escape
  stats.strategy = "gpu-ranges";
  stats.wall_seconds = 0.006616;
  stats.stages.push_back({"read", 0.25, 4096, 0.001, 0.5});
  const nlohmann::json parsed = nlohmann::json::parse(stats.to_json());
  EXPECT_EQ(parsed["records"], 1000);
  EXPECT_EQ(parsed["backend"], "NVIDIA \"H200\"");
  EXPECT_DOUBLE_EQ(parsed["wall_seconds"].get<double>(), 0.006616);
  ASSERT_EQ(parsed["stages"].size(), 1u);
  EXPECT_DOUBLE_EQ(parsed["stages"][0]["busy_seconds"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(parsed["stages"][0]["gb_per_s"].get<double>(), 4096 / 0.25 / 1e9);
  EXPECT_DOUBLE_EQ(parsed["stages"][0]["end"].get<double>(), 0.5);
}

TEST_F(GermanLocale, ChromeTraceIsValidAndExact) {
  trace_recorder trace;
  trace.record("read", 0.0015, 0.25, 1 << 20, "piece \"1\"\n");
  trace.record("H2D", 0.125, 0.5, 1 << 20);
  const nlohmann::json parsed = nlohmann::json::parse(trace.chrome_trace());
  int complete = 0;
  for (const nlohmann::json& e : parsed["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++complete;
    if (e["cat"] == "read") {
      EXPECT_EQ(e["name"], "piece \"1\"\n");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1500.0);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 248500.0);
      EXPECT_EQ(e["args"]["bytes"], 1 << 20);
    } else {
      EXPECT_EQ(e["cat"], "H2D");
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 125000.0);
    }
  }
  EXPECT_EQ(complete, 2);
}

}  // namespace
}  // namespace gpusort
