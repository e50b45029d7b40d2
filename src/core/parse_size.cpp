// Size parsing and printing shared by the CLI and the tools.
#include "core/parse_size.hpp"

#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "gpusort/error.hpp"

namespace gpusort {

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return std::uint64_t{4} << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
}

std::uint64_t parse_size(std::string_view text, std::uint64_t percent_of, std::string_view what) {
  auto bad = [&]() -> std::uint64_t {
    throw_error("invalid " + std::string(what) + " '" + std::string(text) +
                "' (expected e.g. 4096, 512M, 8G or 50%)");
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return bad();
  const std::string number(text.substr(0, i));
  double value = 0;
  try {
    std::size_t used = 0;
    value = std::stod(number, &used);
    if (used != number.size()) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  std::string_view suffix = text.substr(i);
  double scale = 1;
  if (suffix == "%") {
    if (value > 100) return bad();
    return static_cast<std::uint64_t>(std::floor(static_cast<double>(percent_of) * value / 100));
  }
  if (!suffix.empty()) {
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    const std::string_view rest = suffix.substr(1);
    if (!(rest.empty() || rest == "B" || rest == "b" || rest == "iB")) return bad();
    switch (unit) {
      case 'B': if (!rest.empty()) return bad(); scale = 1; break;
      case 'K': scale = 0x1p10; break;
      case 'M': scale = 0x1p20; break;
      case 'G': scale = 0x1p30; break;
      case 'T': scale = 0x1p40; break;
      case 'P': scale = 0x1p50; break;
      default: return bad();
    }
  }
  const double bytes = value * scale;
  if (!(bytes < 0x1p63)) return bad();
  return static_cast<std::uint64_t>(bytes);
}

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.3g %s", v, units[u]);
  return buf;
}

}  // namespace gpusort
