// Text and JSON renderings of sort_stats for --stats. JSON goes through nlohmann::json, whose
// numbers do not depend on the locale a calling program set (printf's "%f" gives "0,5" under
// de_DE).
#include <nlohmann/json.hpp>

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
  if (!gpu_sorter.empty()) out += "  GPU sorter: " + gpu_sorter + "\n";
  if (output_records != records) {
    std::snprintf(line, sizeof line, "  %llu records written (--unique)\n",
                  static_cast<unsigned long long>(output_records));
    out += line;
  }
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
  nlohmann::ordered_json stage_list = nlohmann::ordered_json::array();
  for (const stage_stats& s : stages)
    stage_list.push_back({{"name", s.name},
                          {"busy_seconds", s.busy_seconds},
                          {"bytes", s.bytes},
                          {"gb_per_s", s.busy_seconds > 0 ? s.bytes / s.busy_seconds / 1e9 : 0.0},
                          {"start", s.first_start},
                          {"end", s.last_end}});
  const nlohmann::ordered_json out = {{"records", records},
                                      {"output_records", output_records},
                                      {"input_bytes", input_bytes},
                                      {"runs", runs},
                                      {"merge_passes", merge_passes},
                                      {"spilled", spilled},
                                      {"backend", backend},
                                      {"strategy", strategy},
                                      {"gpu_sorter", gpu_sorter},
                                      {"wall_seconds", wall_seconds},
                                      {"stages", std::move(stage_list)}};
  // Invalid UTF-8 (a device name, say) is replaced rather than thrown on.
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace gpusort
