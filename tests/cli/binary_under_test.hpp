// The gpusort executable the end-to-end tests run.
#pragma once

#include <cstdlib>
#include <string>

namespace gpusort::test {

/// GPUSORT_TEST_BINARY when set (another build, e.g. the one before a fix, or
/// the packaged binary on the GPU machine, where the build tree's path does not
/// exist), else the gpusort of the build these tests come from.
inline std::string gpusort_binary() {
  if (const char *env = std::getenv("GPUSORT_TEST_BINARY");
      env != nullptr && *env != '\0')
    return env;
  return GPUSORT_BINARY;
}

} // namespace gpusort::test
