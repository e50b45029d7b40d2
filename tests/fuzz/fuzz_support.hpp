// What the fuzz targets share: how a finding is reported, and the check that a parser answers
// bad input with gpusort::error and nothing else.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "gpusort/error.hpp"

namespace gpusort::fuzz {

/// Reports a broken promise and aborts, so that libFuzzer saves the input.
[[noreturn]] inline void finding(const char* target, const char* where, const char* what) {
  std::fprintf(stderr, "%s: %s: %s\n", target, where, what);
  std::abort();
}

/// Runs `f`; true when it returned, false when it threw gpusort::error; a finding for any other
/// exception.
template <typename F>
bool expect_ok_or_error(const char* target, const char* where, F&& f) {
  try {
    f();
    return true;
  } catch (const gpusort::error&) {
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s threw %s\n", target, where, typeid(e).name());
    finding(target, where, e.what());
  }
}

}  // namespace gpusort::fuzz
