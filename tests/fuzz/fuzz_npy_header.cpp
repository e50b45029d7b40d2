// libFuzzer target: the .npy header parser and what is built on what it returns.
//
// The input is the start of an .npy file; one that does not begin with the magic string is
// taken as the header's dict and given a version 1.0 preamble, so that the search spends its
// time in the dict. npy_header_size and parse_npy_header must return or throw gpusort::error,
// never read outside the input (ASan), never throw anything else. A header that parses must
// then survive what gpusort does with one: check_sortable, npy_record_format for every field
// (a format that comes back validates), and, for a sortable array, the output header:
// format_npy_header parsed again gives the same dtype, the new shape and the planned length,
// also for fewer records (--unique) in the same length.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "fuzz_support.hpp"
#include "gpusort/error.hpp"
#include "io/npy_header.hpp"

namespace {

constexpr std::size_t max_input_bytes = 1 << 16;

[[noreturn]] void finding(const char* where, const char* what) {
  gpusort::fuzz::finding("fuzz_npy_header", where, what);
}

template <typename F>
bool expect_ok_or_error(const char* where, F&& f) {
  return gpusort::fuzz::expect_ok_or_error("fuzz_npy_header", where, std::forward<F>(f));
}

void check_output_header(const gpusort::io::npy_header& h, std::uint64_t records) {
  using namespace gpusort::io;
  std::uint64_t bytes = 0;
  std::vector<std::byte> out;
  if (!expect_ok_or_error("npy_output_header_bytes",
                          [&] { bytes = npy_output_header_bytes(h, records); }))
    finding("npy_output_header_bytes", "refused a sortable header");
  if (bytes < h.header_bytes) finding("npy_output_header_bytes", "shorter than the input's");
  for (const std::uint64_t n : {records, records / 2, std::uint64_t{0}}) {
    if (!expect_ok_or_error("format_npy_header", [&] { out = format_npy_header(h, n, bytes); }))
      finding("format_npy_header", "refused a count no larger than the planned one");
    if (out.size() != bytes) finding("format_npy_header", "not the planned length");
    npy_header back;
    if (!expect_ok_or_error("parse_npy_header(output)",
                            [&] { back = parse_npy_header(out, "output"); }))
      finding("format_npy_header", "wrote a header the parser refuses");
    if (back.dtype != h.dtype || back.item_size != h.item_size)
      finding("format_npy_header", "the dtype changed");
    if (back.shape != std::vector<std::uint64_t>{n}) finding("format_npy_header", "wrong shape");
    if (back.header_bytes != bytes) finding("format_npy_header", "wrong header length");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpusort::io;
  if (size > max_input_bytes) return 0;
  std::vector<std::byte> input(size);
  if (size > 0) std::memcpy(input.data(), data, size);
  if (!is_npy_magic(input)) {
    // The dict alone: a version 1.0 preamble in front (its length field fits 16 bits here).
    std::vector<std::byte> wrapped(10);
    const char magic[] = "\x93NUMPY\x01\x00";
    std::memcpy(wrapped.data(), magic, 8);
    wrapped[8] = static_cast<std::byte>(size & 0xff);
    wrapped[9] = static_cast<std::byte>(size >> 8);
    wrapped.insert(wrapped.end(), input.begin(), input.end());
    input = std::move(wrapped);
  }
  // The exact size a reader allocates for the header, as input_source does.
  std::uint64_t header_bytes = 0;
  if (!expect_ok_or_error("npy_header_size",
                          [&] { header_bytes = npy_header_size(input, "fuzz.npy"); }))
    return 0;
  if (header_bytes < input.size()) input.resize(static_cast<std::size_t>(header_bytes));
  npy_header h;
  if (!expect_ok_or_error("parse_npy_header", [&] { h = parse_npy_header(input, "fuzz.npy"); }))
    return 0;
  if (h.header_bytes != header_bytes) finding("parse_npy_header", "header_bytes disagrees");
  if (h.fields.empty()) finding("parse_npy_header", "a dtype without fields");
  std::uint64_t records = 0;
  if (!expect_ok_or_error("check_sortable", [&] {
        check_sortable(h, "fuzz.npy");
        records = h.records("fuzz.npy");
      }))
    return 0;
  for (const npy_field& field : h.fields) {
    gpusort::npy_options said;
    said.key_field = field.name;
    gpusort::record_format f;
    if (expect_ok_or_error("npy_record_format",
                           [&] { f = npy_record_format(h, "fuzz.npy", {}, said); })) {
      if (!expect_ok_or_error("validate", [&] { f.validate(); }))
        finding("npy_record_format", "returned a format that validate() rejects");
      if (f.record_size != h.item_size) finding("npy_record_format", "record size not the item's");
    }
  }
  check_output_header(h, records);
  return 0;
}
