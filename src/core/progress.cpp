// The progress line: chosen from the trace's running totals, rendered for a terminal (a bar
// redrawn in place, cut to the terminal's width) or for a log (a plain line).
#include "core/progress.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <string_view>

#include "core/parse_size.hpp"

namespace gpusort {
namespace {

/// Stages whose bytes are the data's way through the sort; setup and teardown stages
/// (prefault, pin, unmap, ...) are not progress.
constexpr std::array<std::string_view, 11> data_stages = {
    "read", "H2D", "sort", "D2H", "merge", "write", "spill", "read runs", "unique", "check",
    "map inputs"};

constexpr int bar_width = 16;

std::string rate_text(double bytes, double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB/s", seconds > 0 ? bytes / seconds / 1e9 : 0.0);
  return buf;
}

std::string eta_text(double seconds) {
  char buf[32];
  if (seconds < 60) std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  else if (seconds < 3600)
    std::snprintf(buf, sizeof buf, "%d min %02d s", int(seconds) / 60, int(seconds) % 60);
  else std::snprintf(buf, sizeof buf, "%d h %02d min", int(seconds) / 3600, int(seconds) / 60 % 60);
  return buf;
}

int terminal_width(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace

progress_state current_progress(const std::vector<trace_recorder::track_total>& totals,
                                std::optional<std::uint64_t> total_bytes, double now) {
  progress_state state;
  state.total = total_bytes;
  double latest = -1;
  for (const trace_recorder::track_total& t : totals) {
    if (t.bytes == 0 ||
        std::find(data_stages.begin(), data_stages.end(), t.name) == data_stages.end())
      continue;
    if (t.first_start > latest) {
      latest = t.first_start;
      state.stage = t.name;
      state.bytes = t.bytes;
      state.seconds = std::max(0.0, now - t.first_start);
    }
  }
  return state;
}

std::string progress_text(const progress_state& state, bool bar) {
  if (state.stage.empty()) return "starting";
  const double bytes = static_cast<double>(state.bytes);
  const std::string rate = rate_text(bytes, state.seconds);
  if (!state.total || *state.total == 0)
    return state.stage + " " + format_bytes(state.bytes) + " at " + rate;
  // A merge in several passes moves the data more than once: it is shown as the last pass.
  const std::uint64_t total = *state.total;
  const std::uint64_t done =
      state.bytes % total == 0 && state.bytes > 0 ? total : state.bytes % total;
  const double fraction = static_cast<double>(done) / static_cast<double>(total);
  const int percent = static_cast<int>(fraction * 100);
  const double per_second = state.seconds > 0 ? bytes / state.seconds : 0;
  const std::string eta =
      per_second > 0 ? eta_text(static_cast<double>(total - done) / per_second) : "?";
  if (!bar)
    return state.stage + " " + std::to_string(percent) + "% (" + format_bytes(done) + " of " +
           format_bytes(total) + ") at " + rate + ", ETA " + eta;
  const int filled = static_cast<int>(fraction * bar_width);
  char pct[8];
  std::snprintf(pct, sizeof pct, "%3d%%", percent);
  return state.stage + " [" + std::string(static_cast<std::size_t>(filled), '#') +
         std::string(static_cast<std::size_t>(bar_width - filled), '.') + "] " + pct + " " +
         format_bytes(done) + "/" + format_bytes(total) + " " + rate + " ETA " + eta;
}

progress_reporter::progress_reporter(const trace_recorder& trace,
                                     std::optional<std::uint64_t> total_bytes, int fd,
                                     double tty_interval, double plain_interval)
    : trace_(trace),
      total_(total_bytes),
      fd_(fd),
      tty_(::isatty(fd) != 0),
      interval_(tty_ ? std::max(tty_interval, 0.1) : plain_interval),
      thread_([this] { run(); }) {}

progress_reporter::~progress_reporter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (drawn_) emit("\r\x1b[K");  // leave the terminal as it was: --stats and errors follow
}

void progress_reporter::emit(const std::string& text) const {
  // One write(2) per line, so that lines of other writers to stderr are never cut in two.
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n <= 0) return;  // progress is best effort: a closed stderr stops nothing
    done += static_cast<std::size_t>(n);
  }
}

void progress_reporter::run() {
  std::unique_lock lock(mutex_);
  const auto interval = std::chrono::duration<double>(interval_);
  while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
    const progress_state state = current_progress(trace_.totals(), total_, trace_.now());
    if (state.stage.empty()) continue;
    if (tty_) {
      // No "gpusort:" prefix: the line must fit 80 columns, and it is erased at the end.
      std::string line = progress_text(state, true);
      line.resize(
          std::min<std::size_t>(line.size(), static_cast<std::size_t>(terminal_width(fd_) - 1)));
      emit("\r" + line + "\x1b[K");
      drawn_ = true;
    } else {
      emit("gpusort: progress: " + progress_text(state, false) + "\n");
    }
  }
}

}  // namespace gpusort
