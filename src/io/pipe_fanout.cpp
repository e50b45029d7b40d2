// A pipe read on several threads: the caller's thread moves buffers, the lanes copy them.
#include "io/pipe_fanout.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <system_error>

#include "gpusort/error.hpp"

namespace gpusort::io {
namespace {

/// Waits until `fd` is ready for `events`; a non-blocking descriptor said EAGAIN.
void wait_until_ready(int fd, short events) {
  pollfd p{fd, events, 0};
  while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
}

/// Reads exactly dst.size() bytes of lane pipe `fd`, which holds at least that many by the
/// time they are asked for. On failure the rest of them is read into a scratch buffer (the
/// lane must go on draining, or the thread that fills it would wait for room for ever).
/// Returns 0, or the errno of the first failure.
int copy_segment(int fd, std::span<std::byte> dst) {
  int failure = 0;
  std::array<std::byte, 4096> scratch{};
  std::size_t done = 0;
  while (done < dst.size()) {
    const std::size_t want = dst.size() - done;
    const ssize_t got = failure == 0 ? ::read(fd, dst.data() + done, want)
                                     : ::read(fd, scratch.data(), std::min(want, scratch.size()));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (failure != 0) return failure;  // not even the scratch reads go: give up on this lane
      failure = got < 0 ? errno : EIO;
      continue;
    }
    done += static_cast<std::size_t>(got);
  }
  return failure;
}

}  // namespace

std::size_t pipe_fanout::default_lanes() noexcept {
  const std::size_t threads = std::thread::hardware_concurrency();
  return std::clamp<std::size_t>(threads / 2, 2, 8);
}

pipe_fanout::pipe_fanout(int source, std::string name, std::size_t lanes,
                         std::size_t segment_bytes)
    : source_(source),
      name_(std::move(name)),
      segment_bytes_(std::max<std::size_t>(segment_bytes, 1)) {
  GPUSORT_EXPECTS(lanes >= 1, "pipe_fanout needs at least one lane");
  try {
    for (std::size_t i = 0; i < lanes; ++i) {
      std::array<int, 2> fds{};
      if (::pipe2(fds.data(), O_CLOEXEC) != 0)
        throw_error("read " + name_ + ": cannot make a pipe to read it through", errno);
      auto l = std::make_unique<lane>();
      l->out = file_descriptor(fds[0], name_ + " (lane)");
      l->in = file_descriptor(fds[1], name_ + " (lane)");
      l->in.grow_pipe_buffer();  // a larger lane takes a segment in fewer moves
      lanes_.push_back(std::move(l));
      lane* raw = lanes_.back().get();
      raw->thread = std::thread([this, raw] { drain(*raw); });
    }
  } catch (...) {
    stop_lanes();  // the lanes already started
    throw;
  }
}

pipe_fanout::~pipe_fanout() { stop_lanes(); }

void pipe_fanout::stop_lanes() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  for (const auto& l : lanes_) {
    l->wake.notify_all();
    if (l->thread.joinable()) l->thread.join();
  }
  lanes_.clear();
}

std::size_t pipe_fanout::read(std::span<std::byte> dst) {
  std::size_t filled = 0;
  bool ended = false;
  {
    // However this scope is left, the lanes are done with dst before it goes back.
    struct lanes_done {
      pipe_fanout& f;
      ~lanes_done() { f.wait_for_lanes(); }
    } guard{*this};
    std::size_t next = 0;
    while (splice_works_ && !ended && filled < dst.size()) {
      lane& l = *lanes_[next];
      next = (next + 1) % lanes_.size();
      const std::size_t segment_end = std::min(dst.size(), filled + segment_bytes_);
      while (filled < segment_end) {
        const long moved = move_into(l, segment_end - filled);
        if (moved < 0) {
          splice_works_ = false;
          break;
        }
        if (moved == 0) {
          ended = true;
          break;
        }
        hand_over(l, dst.subspan(filled, static_cast<std::size_t>(moved)));
        filled += static_cast<std::size_t>(moved);
      }
    }
  }
  {
    std::lock_guard lock(mutex_);
    if (lane_error_) std::rethrow_exception(lane_error_);
  }
  // Every byte moved so far is in place: the source goes on where the lanes stopped.
  if (!ended && filled < dst.size()) filled += read_directly(dst.subspan(filled));
  return filled;
}

void pipe_fanout::hand_over(lane& l, std::span<std::byte> where) {
  {
    std::lock_guard lock(mutex_);
    pending_ += where.size();
    // A segment that came in several moves is one copy, if the lane has not started on it.
    if (!l.todo.empty() && l.todo.back().data() + l.todo.back().size() == where.data())
      l.todo.back() = {l.todo.back().data(), l.todo.back().size() + where.size()};
    else
      l.todo.push_back(where);
  }
  l.wake.notify_one();
}

void pipe_fanout::wait_for_lanes() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return pending_ == 0; });
}

void pipe_fanout::drain(lane& l) {
  for (;;) {
    std::span<std::byte> where;
    {
      std::unique_lock lock(mutex_);
      l.wake.wait(lock, [&] { return stopping_ || !l.todo.empty(); });
      if (l.todo.empty()) return;
      where = l.todo.front();
      l.todo.pop_front();
    }
    const int failure = copy_segment(l.out.get(), where);
    std::lock_guard lock(mutex_);
    if (failure != 0 && !lane_error_) {
      try {
        throw_error("read " + name_ + " (through a helper pipe)", failure);
      } catch (...) {
        lane_error_ = std::current_exception();
      }
    }
    pending_ -= where.size();
    if (pending_ == 0) idle_.notify_all();
  }
}

long pipe_fanout::move_into(lane& l, std::size_t bytes) {
  for (;;) {
    const ssize_t moved = ::splice(source_, nullptr, l.in.get(), nullptr, bytes, SPLICE_F_MOVE);
    if (moved >= 0) return static_cast<long>(moved);
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      // A non-blocking source makes the whole move non-blocking: wait for room, then data.
      wait_until_ready(l.in.get(), POLLOUT);
      wait_until_ready(source_, POLLIN);
      continue;
    }
    if (errno == EINVAL) return -1;  // not a source splice takes
    throw_error("read " + name_, errno);
  }
}

std::size_t pipe_fanout::read_directly(std::span<std::byte> dst) {
  std::size_t done = 0;
  while (done < dst.size()) {
    const ssize_t got = ::read(source_, dst.data() + done, dst.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) {
      wait_until_ready(source_, POLLIN);
      continue;
    }
    if (got < 0) throw_error("read " + name_, errno);
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

}  // namespace gpusort::io
