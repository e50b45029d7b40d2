// Format options and the generator's index field, shared by datagen, validate and iofloor.
#include "common/tool_support.hpp"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "gpusort/error.hpp"
#include "gpusort/version.hpp"

namespace gpusort::tools {

namespace po = boost::program_options;

void print_version(const std::string& tool) {
  std::cout << tool << " (gpusort) " << GPUSORT_VERSION << "\n";
}

tool_options parse_options_only(int argc, const char* const* argv,
                                const po::options_description& visible,
                                const std::string& tool) {
  tool_options parsed;
  std::optional<po::variables_map> vm = parse_with_operands(argc, argv, visible, tool);
  if (!vm) {
    parsed.status = 2;
    return parsed;
  }
  if (vm->count("help")) {
    std::cout << visible << "\n";
    return parsed;
  }
  if (vm->count("version")) {
    print_version(tool);
    return parsed;
  }
  GPUSORT_EXPECTS(!vm->count("files"), "no operands expected");
  parsed.values = std::move(vm);
  return parsed;
}

void add_format_options(po::options_description& desc) {
  desc.add_options()
      ("format", po::value<std::string>()->value_name("NAME"),
       "record layout preset: u32 u64 i32 i64 f32 f64 (key-only records), kv64 (u64 key + u64 "
       "value, 16-byte records) or gensort (100-byte records, 10-byte key at offset 0); "
       "default u64")
      ("type,t", po::value<std::string>()->value_name("T"),
       "key type: u32 u64 i32 i64 f32 f64 bytes:N (N-byte unsigned byte string)")
      ("record-size", po::value<std::uint32_t>()->value_name("BYTES"),
       "bytes per record (default: the key's size, or the preset's)")
      ("key-offset", po::value<std::uint32_t>()->value_name("BYTES"),
       "byte offset of the key inside each record (default 0)");
}

record_format resolve_format(const po::variables_map& vm) {
  record_format format = format_preset(vm.count("format") ? vm["format"].as<std::string>() : "u64");
  if (vm.count("type")) set_key_type(format, vm["type"].as<std::string>());
  if (vm.count("record-size")) format.record_size = vm["record-size"].as<std::uint32_t>();
  if (vm.count("key-offset")) format.key_offset = vm["key-offset"].as<std::uint32_t>();
  format.validate();
  return format;
}

std::string format_help() {
  return "Records: fixed-size, with the key field at --key-offset. Numeric keys are "
         "little-endian;\n"
         "u32/u64 compare unsigned, i32/i64 as two's complement, f32/f64 by IEEE 754 totalOrder\n"
         "(-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN); bytes:N keys compare as unsigned\n"
         "byte strings (memcmp).\n";
}

bool is_gensort_layout(const record_format& format) noexcept {
  return format.type == key_type::bytes && format.key_size == 10 && format.record_size == 100 &&
         format.key_offset == 0;
}

index_field locate_index(const record_format& format) noexcept {
  index_field field;
  if (is_gensort_layout(format)) {
    field.how = index_field::encoding::gensort_hex;
    field.offset = 12;
    field.width = 32;
    return field;
  }
  const std::uint32_t key_end = format.key_offset + format.key_size;
  const std::uint32_t after = format.record_size - key_end;
  if (format.key_offset >= 8) {
    field = {index_field::encoding::little_endian, 0, 8};
  } else if (after > 0) {
    field = {index_field::encoding::little_endian, key_end, std::min<std::uint32_t>(after, 8)};
  } else if (format.key_offset > 0) {
    field = {index_field::encoding::little_endian, 0, format.key_offset};
  }
  return field;
}

std::uint64_t index_limit(const index_field& field) noexcept {
  if (field.how == index_field::encoding::none) return 0;
  if (field.how == index_field::encoding::gensort_hex || field.width >= 8) return ~std::uint64_t{0};
  return std::uint64_t{1} << (8 * field.width);
}

std::uint64_t read_index(const std::byte* record, const index_field& field) noexcept {
  const std::byte* p = record + field.offset;
  if (field.how == index_field::encoding::gensort_hex) {
    // The low 64 bits of the 128-bit record number are the last 16 hex digits.
    std::uint64_t v = 0;
    for (std::uint32_t i = 16; i < 32; ++i) {
      const auto c = static_cast<unsigned char>(p[i]);
      const unsigned digit = c >= 'A' ? static_cast<unsigned>(c - 'A' + 10) : c - '0';
      v = (v << 4) | (digit & 0xf);
    }
    return v;
  }
  std::uint64_t v = 0;
  std::memcpy(&v, p, field.width);  // little-endian host: the low bytes land first
  return v;
}

std::optional<po::variables_map> parse_with_operands(int argc, const char* const* argv,
                                                     const po::options_description& visible,
                                                     const std::string& tool) {
  po::options_description hidden;
  hidden.add_options()("files", po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description positional;
  positional.add("files", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << tool << ": " << e.what() << "\nTry '" << tool << " --help'.\n";
    return std::nullopt;
  }
  return vm;
}

std::vector<int> parse_device_ids(const std::string& text, const std::string& expected,
                                  bool repeats) {
  std::vector<int> ids;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    GPUSORT_EXPECTS(!item.empty() && item.find_first_not_of("0123456789") == std::string::npos,
                    "--devices '" + text + "': " + expected);
    const int id = std::stoi(item);
    GPUSORT_EXPECTS(repeats || std::find(ids.begin(), ids.end(), id) == ids.end(),
                    "--devices '" + text + "': device " + item + " is listed twice");
    ids.push_back(id);
    at = comma + 1;
  }
  return ids;
}

unsigned capped_threads(unsigned requested) noexcept {
  return std::min(requested, std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace gpusort::tools
