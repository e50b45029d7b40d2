// Every tool answers --version as GNU tools do: one line "<tool> (gpusort) <version>", exit 0.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gpusort/version.hpp"
#include "tools_test_support.hpp"

namespace gpusort::test {
namespace {

TEST(ToolVersion, EveryToolPrintsItsNameAndVersion) {
  for (const std::string tool : {GPUSORT_DATAGEN, GPUSORT_VALIDATE, GPUSORT_IOFLOOR}) {
    SCOPED_TRACE(tool);
    const command_result r = run_command(sh_quote(tool) + " --version");
    EXPECT_EQ(r.status, 0);
    const std::string name = std::filesystem::path(tool).filename().string();
    EXPECT_EQ(r.output, name + " (gpusort) " GPUSORT_VERSION "\n");
  }
}

}  // namespace
}  // namespace gpusort::test
