// libFuzzer target: the gpusort command line and the record-format and size parsers under it.
//
// The input is an argument vector, one argument per line (a NUL also ends an argument: a real
// argv cannot hold one). It goes to gpusort::cli::parse_command_line whole, and each argument
// goes on its own to parse_size, set_key_type and format_preset; the last line steers a
// record_format built field by field through validate(). A gpusort::error is the expected
// answer to bad input. Anything else is a finding: a crash, a sanitizer report, a hang, an
// exception of another type (the parsers promise gpusort::error only), or a result that breaks
// what its function promises (a format that fails validate(), a request without an input).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>
#include <vector>

#include "cli/cli_options.hpp"
#include "core/parse_size.hpp"
#include "fuzz_support.hpp"
#include "gpusort/error.hpp"
#include "gpusort/record_format.hpp"

namespace {

// Longer inputs only slow the search down (the parsers look at a few dozen bytes at a time);
// the ctest run also caps them with -max_len.
constexpr std::size_t max_input_bytes = 4096;

[[noreturn]] void finding(const char* where, const char* what) {
  gpusort::fuzz::finding("fuzz_command_line", where, what);
}

template <typename F>
bool expect_ok_or_error(const char* where, F&& f) {
  return gpusort::fuzz::expect_ok_or_error("fuzz_command_line", where, std::forward<F>(f));
}

std::vector<std::string> split_arguments(std::string_view input) {
  std::vector<std::string> args;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= input.size(); ++i) {
    if (i == input.size() || input[i] == '\n' || input[i] == '\0') {
      if (i > start || i < input.size()) args.emplace_back(input.substr(start, i - start));
      start = i + 1;
    }
  }
  return args;
}

void check_request(const gpusort::cli::request& req) {
  if (req.help || req.version) return;
  // parse_command_line validates the format; a request that gets out must be usable as it is.
  // (Empty file names are left to the open that fails on them, as for any missing file.)
  if (!expect_ok_or_error("validate after parse_command_line",
                          [&] { req.options.format.validate(); }))
    finding("parse_command_line", "accepted a record format that validate() rejects");
  if (req.inputs.empty()) finding("parse_command_line", "accepted a request without inputs");
}

void fuzz_command_line(const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  argv.reserve(args.size() + 2);
  argv.push_back("gpusort");
  for (const std::string& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);  // as the kernel passes it
  gpusort::cli::request req;
  if (expect_ok_or_error("parse_command_line", [&] {
        req = gpusort::cli::parse_command_line(static_cast<int>(argv.size() - 1), argv.data());
      }))
    check_request(req);
}

void fuzz_one_argument(std::string_view arg) {
  // The two callers: --buffer-size (a share of physical memory) and --gpu-memory (no base).
  for (const std::uint64_t percent_of : {gpusort::physical_memory_bytes(), std::uint64_t{0}}) {
    std::uint64_t bytes = 0;
    if (expect_ok_or_error("parse_size",
                           [&] { bytes = gpusort::parse_size(arg, percent_of, "size"); })) {
      if (bytes >= (std::uint64_t{1} << 63)) finding("parse_size", "returned 2^63 bytes or more");
      (void)gpusort::format_bytes(bytes);
    }
  }

  gpusort::record_format preset;
  if (expect_ok_or_error("format_preset", [&] { preset = gpusort::format_preset(arg); })) {
    // Every preset is a valid format.
    if (!expect_ok_or_error("validate(format_preset)", [&] { preset.validate(); }))
      finding("format_preset", "returned a format that validate() rejects");
    (void)gpusort::describe(preset);
  }

  // A key type on the default (key-only) format must leave a valid key-only format.
  gpusort::record_format keyed;
  if (expect_ok_or_error("set_key_type", [&] { gpusort::set_key_type(keyed, arg); })) {
    if (!keyed.key_only()) finding("set_key_type", "a key-only format stopped being key-only");
    if (!expect_ok_or_error("validate(set_key_type)", [&] { keyed.validate(); }))
      finding("set_key_type", "left a key-only format that validate() rejects");
    (void)gpusort::key_type_name(keyed);
  }
}

// A format assembled field by field, as the CLI does: preset, key type, then sizes taken from
// the raw bytes (any 32-bit value, not only what Boost would parse).
void fuzz_format(const std::vector<std::string>& args, std::string_view raw) {
  if (args.size() < 2) return;
  gpusort::record_format format;
  expect_ok_or_error("format_preset", [&] { format = gpusort::format_preset(args[0]); });
  expect_ok_or_error("set_key_type", [&] { gpusort::set_key_type(format, args[1]); });
  if (raw.size() >= 8) {
    auto u32_at = [&](std::size_t at) {
      std::uint32_t v = 0;
      for (std::size_t i = 0; i < 4; ++i)
        v |= std::uint32_t{static_cast<unsigned char>(raw[raw.size() - 8 + at + i])} << (8 * i);
      return v;
    };
    format.record_size = u32_at(0);
    format.key_offset = u32_at(4);
  }
  if (expect_ok_or_error("validate", [&] { format.validate(); })) {
    // What validate() promises the sorters: the key lies inside a record of bounded size.
    if (format.record_size == 0 || format.key_size == 0 ||
        std::uint64_t{format.key_offset} + format.key_size > format.record_size)
      finding("validate", "accepted a key outside the record");
    if (format.record_size > gpusort::max_record_size)
      finding("validate", "accepted a record larger than max_record_size");
    (void)gpusort::describe(format);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > max_input_bytes) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> args = split_arguments(input);
  fuzz_command_line(args);
  for (const std::string& a : args) fuzz_one_argument(a);
  fuzz_format(args, input);
  return 0;
}
