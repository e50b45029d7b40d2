// A program built against an installed gpusort: sorts a file of u64 keys and a buffer of
// doubles through the public API only, checks both results, and that errors cross over.
// Usage: downstream IN OUT
#include <gpusort/error.hpp>
#include <gpusort/options.hpp>
#include <gpusort/record_format.hpp>
#include <gpusort/sort.hpp>
#include <gpusort/stats.hpp>
#include <gpusort/version.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "downstream: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

std::vector<std::uint64_t> read_u64(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::vector<std::uint64_t> keys(bytes.size() / sizeof(std::uint64_t));
  if (!keys.empty()) std::memcpy(keys.data(), bytes.data(), keys.size() * sizeof(std::uint64_t));
  return keys;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: downstream IN OUT\n");
    return 2;
  }
  const std::string in = argv[1];
  const std::string out = argv[2];
  try {
    // A file: the default options (u64 keys), as `gpusort IN OUT` sorts it.
    const gpusort::sort_options options;
    const gpusort::sort_stats stats = gpusort::sort_file({in}, out, options);
    std::vector<std::uint64_t> expected = read_u64(in);
    std::sort(expected.begin(), expected.end());
    expect(!expected.empty(), "the input holds records");
    expect(stats.records == expected.size(), "stats.records is the input's record count");
    expect(read_u64(out) == expected, "the output file is the input sorted");
    const std::string records_field = "\"records\":" + std::to_string(expected.size());
    expect(stats.to_json().find(records_field) != std::string::npos,
           "stats.to_json() names the records");

    // A buffer: doubles, largest first, with the values whose order IEEE totalOrder fixes.
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<double> values = {2.5, -0.0, inf, 0.0, -1e300, -inf, 7.0, 1e-310};
    gpusort::sort_options descending;
    gpusort::set_key_type(descending.format, "f64");
    descending.descending = true;
    gpusort::sort_buffer(std::as_writable_bytes(std::span(values)), descending);
    const std::vector<double> want = {inf, 7.0, 2.5, 1e-310, 0.0, -0.0, -1e300, -inf};
    expect(std::equal(values.begin(), values.end(), want.begin(), want.end(),
                      [](double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }),
           "sort_buffer orders doubles by totalOrder, largest first (+0.0 before -0.0)");

    expect(gpusort::version_string().rfind(std::string("gpusort ") + GPUSORT_VERSION, 0) == 0,
           "version_string() starts with 'gpusort " GPUSORT_VERSION "'");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "downstream: FAILED: unexpected exception: %s\n", e.what());
    return 1;
  }

  // A missing input: gpusort::error, with the errno kept.
  try {
    gpusort::sort_file({out + ".missing"}, out + ".never", gpusort::sort_options{});
    expect(false, "a missing input throws");
  } catch (const gpusort::error& e) {
    expect(e.code().value() == ENOENT, std::string("a missing input is ENOENT: ") + e.what());
  }

  if (failures != 0) return 1;
  std::printf("downstream: ok (%s)\n", gpusort::version_string().c_str());
  return 0;
}
