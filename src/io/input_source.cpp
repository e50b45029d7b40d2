// Concatenated inputs: regular files by offset (parallel requests), streams sequentially.
#include "io/input_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "gpusort/error.hpp"
#include "io/direct_io.hpp"
#include "io/signal_cleanup.hpp"

namespace gpusort::io {
namespace {

std::string record_size_error(const std::string& name, std::uint64_t size, std::uint32_t record) {
  return "input size not a multiple of the record size: " + name + ": " + std::to_string(size) +
         " bytes is not a multiple of " + std::to_string(record) + "-byte records";
}

/// Reads from stream `fd` until dst is full or the stream ends; returns the bytes read.
std::size_t read_fully(const file_descriptor& fd, std::span<std::byte> dst) {
  std::size_t done = 0;
  while (done < dst.size()) {
    const ssize_t got = ::read(fd.get(), dst.data() + done, dst.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_error("read " + fd.path(), errno);
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

/// Reads dst.size() bytes at `offset` of regular file `fd`, or fewer where it ends.
std::size_t pread_fully(const file_descriptor& fd, std::span<std::byte> dst, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < dst.size()) {
    const ssize_t got = ::pread(fd.get(), dst.data() + done, dst.size() - done,
                                static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw_error("read " + fd.path(), errno);
    if (got == 0) break;
    done += static_cast<std::size_t>(got);
  }
  return done;
}

/// `name` holds `have` record bytes where its .npy header's shape (`want` bytes) says otherwise.
std::string npy_size_error(const std::string& name, const std::string& shape,
                           std::uint32_t item_size, std::uint64_t want, std::uint64_t have,
                           bool stream) {
  std::string s = name + ": ";
  if (have < want)
    s += stream ? "the stream ended after " + std::to_string(have) + " of the "
                : "truncated: " + std::to_string(have) + " bytes follow its header, not the ";
  else
    s += stream ? "more bytes than the "
                : std::to_string(have) + " bytes follow its header, not the ";
  return s + std::to_string(want) + " bytes its .npy shape " + shape + " of " +
         std::to_string(item_size) + "-byte records takes";
}

}  // namespace

input_source::input_source(const std::vector<std::string>& paths, std::uint32_t record_size)
    : record_size_(record_size) {
  GPUSORT_EXPECTS(!paths.empty(), "no input");
  std::uint64_t total = 0;
  bool all_regular = true;
  int stdin_uses = 0;
  for (const std::string& path : paths) {
    input in;
    if (path == "-") {
      GPUSORT_EXPECTS(++stdin_uses == 1, "standard input named more than once");
      in.fd = file_descriptor::borrow(STDIN_FILENO, "standard input");
    } else {
      in.fd = file_descriptor::open(path, O_RDONLY);
    }
    in.regular = in.fd.is_regular();
    if (in.regular) {
      in.size = in.fd.size();
      if (path == "-") {
        // stdin redirected from a file: read from its current position.
        const off_t pos = ::lseek(STDIN_FILENO, 0, SEEK_CUR);
        if (pos > 0) {
          in.consumed = static_cast<std::uint64_t>(pos);
          in.start = in.consumed;
          in.size = in.size > in.consumed ? in.size : in.consumed;
        }
      }
      read_file_header(in);
      const std::uint64_t bytes = in.size - in.start;
      if (in.npy) {
        GPUSORT_EXPECTS(bytes == in.npy_bytes,
                        npy_size_error(in.fd.path(), in.npy_shape, record_size_, in.npy_bytes,
                                       bytes, false));
      } else {
        GPUSORT_EXPECTS(bytes % record_size_ == 0,
                        record_size_error(in.fd.path(), bytes, record_size_));
      }
      total += bytes;
    } else {
      all_regular = false;
      in.pipe = in.fd.is_pipe();
      in.fd.grow_pipe_buffer();
      read_stream_header(in);
    }
    inputs_.push_back(std::move(in));
  }
  // One sort has one record layout: raw records and .npy arrays do not mix.
  const auto npy_input = std::find_if(inputs_.begin(), inputs_.end(),
                                      [](const input& in) { return in.npy; });
  const auto raw_input = std::find_if(inputs_.begin(), inputs_.end(),
                                      [](const input& in) { return !in.npy; });
  if (npy_input != inputs_.end() && raw_input != inputs_.end())
    throw_error(raw_input->fd.path() + ": not an .npy file, while " + npy_input->fd.path() +
                " is: the inputs of one sort are all .npy files (of one dtype) or none");
  if (all_regular) known_size_ = total;
}

void input_source::read_file_header(input& in) {
  std::array<std::byte, npy_preamble_bytes> head{};
  const std::size_t got = pread_fully(in.fd, head, in.start);
  if (!is_npy_magic({head.data(), got})) return;
  const std::string& name = in.fd.path();
  std::vector<std::byte> header(
      static_cast<std::size_t>(npy_header_size({head.data(), got}, name)));
  header.resize(pread_fully(in.fd, header, in.start));
  adopt_npy(in, parse_npy_header(header, name));
  in.start += header.size();
  in.consumed = in.start;
}

void input_source::read_stream_header(input& in) {
  std::array<std::byte, npy_preamble_bytes> head{};
  const std::size_t got = read_fully(in.fd, head);
  in.ended = got < head.size();
  if (!is_npy_magic({head.data(), got})) {
    in.peeked.assign(head.begin(), head.begin() + static_cast<std::ptrdiff_t>(got));
    return;
  }
  const std::string& name = in.fd.path();
  const auto size = static_cast<std::size_t>(npy_header_size({head.data(), got}, name));
  std::vector<std::byte> header(std::max(size, got));
  std::memcpy(header.data(), head.data(), got);
  if (size > got) header.resize(got + read_fully(in.fd, std::span(header).subspan(got)));
  // A header shorter than what was looked at (a malformed one) is refused by the parser.
  adopt_npy(in, parse_npy_header(header, name));
  in.ended = false;
}

void input_source::adopt_npy(input& in, npy_header header) {
  const std::string& name = in.fd.path();
  check_sortable(header, name);
  const std::uint64_t records = header.records(name);
  in.npy = true;
  in.npy_shape = header.shape_text();
  if (!npy_) {
    npy_ = std::move(header);
    npy_name_ = name;
    record_size_ = static_cast<std::uint32_t>(npy_->item_size);
  } else if (header.dtype != npy_->dtype) {
    throw_error(name + ": its dtype " + header.dtype + " is not the dtype of " + npy_name_ +
                ", " + npy_->dtype + ": .npy inputs are concatenated, so they must share one");
  }
  // records() checked records * record_size_; the sum must fit as well.
  GPUSORT_EXPECTS(npy_records_ <= std::numeric_limits<std::uint64_t>::max() / record_size_ -
                                      records,
                  name + ": the .npy inputs hold more records than a sort can count");
  npy_records_ += records;
  in.npy_bytes = records * record_size_;
}

template <typename Raw>
std::size_t input_source::stream_bytes(input& in, std::span<std::byte> dst, Raw&& raw) {
  std::size_t filled = std::min(dst.size(), in.peeked.size());
  if (filled > 0) {
    std::memcpy(dst.data(), in.peeked.data(), filled);
    in.peeked.erase(in.peeked.begin(), in.peeked.begin() + static_cast<std::ptrdiff_t>(filled));
  }
  while (filled < dst.size() && !in.ended) {
    const std::uint64_t left = in.npy ? in.npy_bytes - (in.consumed + filled)
                                      : std::numeric_limits<std::uint64_t>::max();
    if (left == 0) {
      // Every record its header announced is here: the stream must end now.
      std::byte extra{};
      if (raw(std::span(&extra, 1)) != 0)
        throw_error(npy_size_error(in.fd.path(), in.npy_shape, record_size_, in.npy_bytes,
                                   in.npy_bytes + 1, true));
      in.ended = true;
      break;
    }
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(dst.size() - filled, left));
    const std::size_t got = raw(dst.subspan(filled, want));
    filled += got;
    if (got < want) in.ended = true;
  }
  in.consumed += filled;
  if (in.ended && in.peeked.empty() && !in.end_checked) {
    in.end_checked = true;
    if (in.npy) {
      GPUSORT_EXPECTS(in.consumed == in.npy_bytes,
                      npy_size_error(in.fd.path(), in.npy_shape, record_size_, in.npy_bytes,
                                     in.consumed, true));
    } else {
      GPUSORT_EXPECTS(in.consumed % record_size_ == 0,
                      record_size_error(in.fd.path(), in.consumed, record_size_));
    }
  }
  return filled;
}

std::size_t input_source::read_stream(std::size_t i, std::span<std::byte> dst) {
  input& in = inputs_.at(i);
  GPUSORT_EXPECTS(!in.regular, "read_stream: " + in.fd.path() + " is a regular file");
  return stream_bytes(in, dst, [&](std::span<std::byte> s) {
    if (pipe_fanout* fanout = fanout_for(in, s.size())) return fanout->read(s);
    return read_fully(in.fd, s);
  });
}

pipe_fanout* input_source::fanout_for(input& in, std::size_t bytes) {
  if (!in.pipe || bytes < pipe_fanout::min_read_bytes || pipe_lanes_ < 2) return nullptr;
  if (!in.fanout)
    in.fanout = std::make_unique<pipe_fanout>(in.fd.get(), in.fd.path(), pipe_lanes_);
  return in.fanout.get();
}

std::string input_source::describe() const {
  std::string s;
  for (const input& in : inputs_) {
    if (!s.empty()) s += ", ";
    s += in.fd.path();
  }
  return s;
}

std::size_t input_source::read(std::span<std::byte> dst, uring& ring,
                               const transfer_config& config) {
  std::size_t filled = 0;
  while (filled < dst.size() && current_ < inputs_.size()) {
    input& in = inputs_[current_];
    const std::span<std::byte> rest = dst.subspan(filled);
    if (in.regular) {
      const std::uint64_t left = in.size - in.consumed;
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, rest.size()));
      if (n > 0) read_file_range(in, in.consumed, rest.first(n), ring, config);
      in.consumed += n;
      filled += n;
      if (in.consumed == in.size) ++current_;
    } else {
      const std::size_t n = stream_bytes(in, rest, [&](std::span<std::byte> s) {
        if (pipe_fanout* fanout = fanout_for(in, s.size())) return fanout->read(s);
        return ring.read_stream(in.fd, s);
      });
      filled += n;
      if (n < rest.size()) ++current_;  // the stream ended
    }
  }
  position_ += filled;
  return filled;
}

template <typename Part>
bool input_source::each_part(std::uint64_t offset, std::span<std::byte> dst, const char* what,
                             Part&& part) const {
  GPUSORT_EXPECTS(known_size_ && offset + dst.size() <= *known_size_,
                  std::string(what) + " past the end of " + describe());
  std::size_t filled = 0;
  for (const input& in : inputs_) {
    if (filled == dst.size()) break;
    const std::uint64_t bytes = in.size - in.start;
    if (offset >= bytes) {
      offset -= bytes;
      continue;
    }
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(bytes - offset, dst.size() - filled));
    if (!part(in, in.start + offset, dst.subspan(filled, n))) return false;
    filled += n;
    offset = 0;
  }
  return true;
}

void input_source::read_at(std::uint64_t offset, std::span<std::byte> dst, uring& ring,
                           const transfer_config& config) const {
  each_part(offset, dst, "read_at",
            [&](const input& in, std::uint64_t at, std::span<std::byte> part) {
    read_file_range(in, at, part, ring, config);
    return true;
  });
}

bool input_source::read_if_cached(std::uint64_t offset, std::span<std::byte> dst) const {
  return each_part(offset, dst, "read_if_cached",
                   [](const input& in, std::uint64_t at, std::span<std::byte> part) {
    iovec v{part.data(), part.size()};
    // Short (part of it cached) or -1 (EAGAIN: not cached; EOPNOTSUPP: cannot tell): not here.
    return ::preadv2(in.fd.get(), &v, 1, static_cast<off_t>(at), RWF_NOWAIT) ==
           static_cast<ssize_t>(part.size());
  });
}

void input_source::read_past_cache() {
  for (input& in : inputs_)
    if (in.regular && !in.direct) in.direct = reopen_direct(in.fd, O_RDONLY);
}

void input_source::read_file_range(const input& in, std::uint64_t offset,
                                   std::span<std::byte> dst, uring& ring,
                                   const transfer_config& config) {
  read_range({in.fd, in.direct ? &*in.direct : nullptr}, offset, dst, ring, config);
}

input_mapping::input_mapping(void* base, std::size_t length, std::size_t offset,
                             const std::string& path) noexcept
    : base_(base),
      length_(length),
      offset_(offset),
      sigbus_slot_(register_input_mapping(base, length, path)) {}

input_mapping::input_mapping(input_mapping&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      length_(std::exchange(other.length_, 0)),
      offset_(std::exchange(other.offset_, 0)),
      sigbus_slot_(std::exchange(other.sigbus_slot_, -1)) {}

input_mapping& input_mapping::operator=(input_mapping&& other) noexcept {
  if (this != &other) {
    input_mapping gone(std::move(*this));
    base_ = std::exchange(other.base_, nullptr);
    length_ = std::exchange(other.length_, 0);
    offset_ = std::exchange(other.offset_, 0);
    sigbus_slot_ = std::exchange(other.sigbus_slot_, -1);
  }
  return *this;
}

input_mapping::~input_mapping() {
  unregister_input_mapping(sigbus_slot_);
  if (base_ != nullptr) ::munmap(base_, length_);
}

std::optional<input_mapping> input_source::map_whole() const {
  if (inputs_.size() != 1 || position_ != 0) return std::nullopt;
  // MAP_POPULATE fills the page tables in one go: faulting 4 KiB pages one by one while the
  // sort reads costs more.
  return map_input(0, true);
}

std::optional<input_mapping> input_source::map_input(std::size_t i, bool populate) const {
  const input& in = inputs_.at(i);
  if (!in.regular || in.size == in.start) return std::nullopt;
  // Mapped from offset 0 (mmap offsets must be page aligned); bytes() skips to the start.
  const auto length = static_cast<std::size_t>(in.size);
  void* p = ::mmap(nullptr, length, PROT_READ, MAP_SHARED | (populate ? MAP_POPULATE : 0),
                   in.fd.get(), 0);
  if (p == MAP_FAILED) throw_error("mmap " + in.fd.path(), errno);
  if (!populate) ::madvise(p, length, MADV_SEQUENTIAL);  // read-ahead; a hint only
  return input_mapping(p, length, static_cast<std::size_t>(in.start), in.fd.path());
}

void input_source::close() noexcept {
  for (input& in : inputs_) {
    in.fanout.reset();
    in.direct.reset();
    in.fd.reset();
  }
}

}  // namespace gpusort::io
