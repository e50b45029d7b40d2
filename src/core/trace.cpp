// Interval bookkeeping for --stats and the Chrome trace-event writer for --trace (through
// nlohmann::json: valid whatever locale a calling program set).
#include "core/trace.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "gpusort/error.hpp"

namespace gpusort {
namespace {

/// Length of the union of [begin, end) intervals.
double union_length(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0;
  double cur_begin = 0;
  double cur_end = -1;
  for (const auto& [b, e] : spans) {
    if (b > cur_end) {
      if (cur_end > cur_begin) total += cur_end - cur_begin;
      cur_begin = b;
      cur_end = e;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (cur_end > cur_begin) total += cur_end - cur_begin;
  return total;
}

}  // namespace

trace_recorder::trace_recorder() : start_(std::chrono::steady_clock::now()) {}

double trace_recorder::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void trace_recorder::record(std::string_view track, double begin, double end,
                            std::uint64_t bytes, std::string_view label) {
  std::lock_guard lock(mutex_);
  auto it = std::find(tracks_.begin(), tracks_.end(), track);
  if (it == tracks_.end()) {
    it = tracks_.insert(tracks_.end(), std::string(track));
    totals_.push_back({std::string(track), 0, begin});
  }
  const auto index = static_cast<std::size_t>(it - tracks_.begin());
  totals_[index].bytes += bytes;
  totals_[index].first_start = std::min(totals_[index].first_start, begin);
  events_.push_back(event{static_cast<std::uint32_t>(index), begin, std::max(begin, end), bytes,
                          std::string(label)});
}

std::vector<trace_recorder::track_total> trace_recorder::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

std::vector<stage_stats> trace_recorder::summarize() const {
  std::lock_guard lock(mutex_);
  std::vector<stage_stats> out(tracks_.size());
  std::vector<std::vector<std::pair<double, double>>> spans(tracks_.size());
  for (std::size_t t = 0; t < tracks_.size(); ++t) {
    out[t].name = tracks_[t];
    out[t].first_start = 1e300;
  }
  for (const event& e : events_) {
    stage_stats& s = out[e.track];
    s.bytes += e.bytes;
    s.first_start = std::min(s.first_start, e.begin);
    s.last_end = std::max(s.last_end, e.end);
    spans[e.track].emplace_back(e.begin, e.end);
  }
  for (std::size_t t = 0; t < out.size(); ++t) {
    out[t].busy_seconds = union_length(spans[t]);
    if (spans[t].empty()) out[t].first_start = 0;
  }
  return out;
}

double trace_recorder::overlap_seconds(const std::vector<std::string>& tracks) const {
  // Sweep over interval boundaries counting how many of the chosen tracks are busy.
  std::vector<std::pair<double, int>> edges;
  {
    std::lock_guard lock(mutex_);
    for (const std::string& name : tracks) {
      const auto it = std::find(tracks_.begin(), tracks_.end(), name);
      if (it == tracks_.end()) continue;
      const auto id = static_cast<std::uint32_t>(it - tracks_.begin());
      std::vector<std::pair<double, double>> spans;
      for (const event& e : events_)
        if (e.track == id) spans.emplace_back(e.begin, e.end);
      // Merge this track's own intervals first so that it counts once.
      std::sort(spans.begin(), spans.end());
      double b = 0;
      double en = -1;
      for (const auto& [sb, se] : spans) {
        if (sb > en) {
          if (en > b) {
            edges.emplace_back(b, +1);
            edges.emplace_back(en, -1);
          }
          b = sb;
          en = se;
        } else {
          en = std::max(en, se);
        }
      }
      if (en > b) {
        edges.emplace_back(b, +1);
        edges.emplace_back(en, -1);
      }
    }
  }
  std::sort(edges.begin(), edges.end());
  double overlap = 0;
  int active = 0;
  double last = 0;
  for (const auto& [t, delta] : edges) {
    if (active >= 2) overlap += t - last;
    active += delta;
    last = t;
  }
  return overlap;
}

std::string trace_recorder::chrome_trace() const {
  using json = nlohmann::ordered_json;
  std::lock_guard lock(mutex_);
  json events = json::array();
  events.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "gpusort"}}}});
  for (std::size_t t = 0; t < tracks_.size(); ++t) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", t + 1},
                      {"args", {{"name", tracks_[t]}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", t + 1},
                      {"args", {{"sort_index", t}}}});
  }
  for (const event& e : events_) {
    // Microseconds, rounded to nanoseconds: shorter files than full doubles.
    auto micros = [](double seconds) { return std::round(seconds * 1e9) / 1e3; };
    events.push_back({{"name", e.label.empty() ? tracks_[e.track] : e.label},
                      {"cat", tracks_[e.track]},
                      {"ph", "X"},
                      {"pid", 1},
                      {"tid", e.track + 1},
                      {"ts", micros(e.begin)},
                      {"dur", micros(e.end - e.begin)},
                      {"args", {{"bytes", e.bytes}}}});
  }
  const json trace = {{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}};
  return trace.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

void trace_recorder::write_chrome_trace(const std::string& path) const {
  const std::string json = chrome_trace();
  std::ofstream out(path);
  if (!out) throw_error("cannot write trace " + path, errno);
  out << json;
  if (!out) throw_error("cannot write trace " + path, errno);
}

}  // namespace gpusort
