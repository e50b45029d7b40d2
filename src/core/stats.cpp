// Text and JSON renderings of sort_stats for --stats.
#include <cstdio>
#include <string>

#include "core/parse_size.hpp"
#include "gpusort/stats.hpp"

namespace gpusort {

std::string sort_stats::to_text() const {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line,
                "gpusort: %llu records (%s) in %.3f s, %.2f GB/s, backend %s, strategy %s, "
                "%llu run(s)%s\n",
                static_cast<unsigned long long>(records), format_bytes(input_bytes).c_str(),
                wall_seconds, wall_seconds > 0 ? input_bytes / wall_seconds / 1e9 : 0.0,
                backend.c_str(), strategy.c_str(), static_cast<unsigned long long>(runs),
                spilled ? ", spilled to disk" : "");
  out += line;
  std::snprintf(line, sizeof line, "  %-12s %9s %9s %12s %10s %10s\n", "stage", "busy s",
                "GB/s", "bytes", "start s", "end s");
  out += line;
  for (const stage_stats& s : stages) {
    // Stages shorter than the clock resolution have no meaningful rate.
    const double rate = s.busy_seconds >= 1e-4 ? s.bytes / s.busy_seconds / 1e9 : 0.0;
    std::snprintf(line, sizeof line, "  %-12s %9.3f %9.2f %12llu %10.3f %10.3f\n", s.name.c_str(),
                  s.busy_seconds, rate, static_cast<unsigned long long>(s.bytes), s.first_start,
                  s.last_end);
    out += line;
  }
  double busy_sum = 0;
  for (const stage_stats& s : stages) busy_sum += s.busy_seconds;
  if (wall_seconds > 0) {
    std::snprintf(line, sizeof line,
                  "  overlap: stages busy %.3f s in %.3f s of wall time (%.2fx)\n", busy_sum,
                  wall_seconds, busy_sum / wall_seconds);
    out += line;
  }
  return out;
}

std::string sort_stats::to_json() const {
  std::string out = "{";
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "\"records\":%llu,\"input_bytes\":%llu,\"runs\":%llu,\"merge_passes\":%llu,"
                "\"spilled\":%s,\"backend\":\"",
                static_cast<unsigned long long>(records),
                static_cast<unsigned long long>(input_bytes),
                static_cast<unsigned long long>(runs),
                static_cast<unsigned long long>(merge_passes), spilled ? "true" : "false");
  out += buf;
  for (char c : backend) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += "\",\"strategy\":\"" + strategy;  // a fixed name: nothing to escape
  std::snprintf(buf, sizeof buf, "\",\"wall_seconds\":%.6f,\"stages\":[", wall_seconds);
  out += buf;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const stage_stats& s = stages[i];
    std::snprintf(buf, sizeof buf,
                  "%s{\"name\":\"%s\",\"busy_seconds\":%.6f,\"bytes\":%llu,\"gb_per_s\":%.3f,"
                  "\"start\":%.6f,\"end\":%.6f}",
                  i ? "," : "", s.name.c_str(), s.busy_seconds,
                  static_cast<unsigned long long>(s.bytes),
                  s.busy_seconds > 0 ? s.bytes / s.busy_seconds / 1e9 : 0.0, s.first_start,
                  s.last_end);
    out += buf;
  }
  out += "]}";
  return out;
}

}  // namespace gpusort
