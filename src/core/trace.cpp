// Interval bookkeeping for --stats and the Chrome trace-event writer for --trace.
#include "core/trace.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

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

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
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
  if (it == tracks_.end()) it = tracks_.insert(tracks_.end(), std::string(track));
  events_.push_back(event{static_cast<std::uint32_t>(it - tracks_.begin()), begin,
                          std::max(begin, end), bytes, std::string(label)});
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
  std::ostringstream out;
  std::lock_guard lock(mutex_);
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  out << R"({"name":"process_name","ph":"M","pid":1,"args":{"name":"gpusort"}})";
  for (std::size_t t = 0; t < tracks_.size(); ++t) {
    out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" << t + 1
        << ",\"args\":{\"name\":\"" << json_escape(tracks_[t]) << "\"}}";
    out << ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":" << t + 1
        << ",\"args\":{\"sort_index\":" << t << "}}";
  }
  char buf[128];
  for (const event& e : events_) {
    const std::string name = e.label.empty() ? tracks_[e.track] : e.label;
    std::snprintf(buf, sizeof buf, "%.3f,\"dur\":%.3f", e.begin * 1e6, (e.end - e.begin) * 1e6);
    out << ",\n{\"name\":\"" << json_escape(name) << "\",\"cat\":\"" << json_escape(tracks_[e.track])
        << "\",\"ph\":\"X\",\"pid\":1,\"tid\":" << e.track + 1 << ",\"ts\":" << buf
        << ",\"args\":{\"bytes\":" << e.bytes << "}}";
  }
  out << "\n]}\n";
  return out.str();
}

void trace_recorder::write_chrome_trace(const std::string& path) const {
  const std::string json = chrome_trace();
  std::ofstream out(path);
  if (!out) throw_error("cannot write trace " + path, errno);
  out << json;
  if (!out) throw_error("cannot write trace " + path, errno);
}

}  // namespace gpusort
