// Concatenated inputs: regular files by offset (parallel requests), streams sequentially.
#include "io/input_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
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

/// True when `head` begins like a NumPy .npy file: the magic string, a format version, and
/// the header dictionary's opening brace.
bool looks_like_npy(std::span<const std::byte> head) {
  static constexpr unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (head.size() < 11 || std::memcmp(head.data(), magic, sizeof magic) != 0) return false;
  const auto major = static_cast<unsigned>(head[6]);
  const std::size_t dict = major == 1 ? 10 : 12;
  return major >= 1 && major <= 3 && head[7] == std::byte{0} && head.size() > dict &&
         head[dict] == std::byte{'{'};
}

void refuse_npy(const std::string& name) {
  throw_error(name + ": this is a NumPy .npy file, which gpusort does not read yet (it would "
              "sort the header as data); write the array without its header (ndarray.tofile) "
              "and name its type with -t");
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
      const std::uint64_t bytes = in.size - in.consumed;
      std::array<std::byte, 16> head{};
      const ssize_t got = ::pread(in.fd.get(), head.data(), head.size(),
                                  static_cast<off_t>(in.consumed));
      if (got > 0 && looks_like_npy({head.data(), static_cast<std::size_t>(got)}))
        refuse_npy(in.fd.path());
      GPUSORT_EXPECTS(bytes % record_size_ == 0,
                      record_size_error(in.fd.path(), bytes, record_size_));
      total += bytes;
    } else {
      all_regular = false;
      in.fd.grow_pipe_buffer();
    }
    inputs_.push_back(std::move(in));
  }
  if (all_regular) known_size_ = total;
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
      const std::size_t n = ring.read_stream(in.fd, rest);
      if (in.consumed == 0 && looks_like_npy(rest.first(n))) refuse_npy(in.fd.path());
      in.consumed += n;
      filled += n;
      if (n < rest.size()) {  // the stream ended
        GPUSORT_EXPECTS(in.consumed % record_size_ == 0,
                        record_size_error(in.fd.path(), in.consumed, record_size_));
        ++current_;
      }
    }
  }
  position_ += filled;
  return filled;
}

void input_source::read_at(std::uint64_t offset, std::span<std::byte> dst, uring& ring,
                           const transfer_config& config) const {
  GPUSORT_EXPECTS(known_size_ && offset + dst.size() <= *known_size_,
                  "read_at past the end of " + describe());
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
    read_file_range(in, in.start + offset, dst.subspan(filled, n), ring, config);
    filled += n;
    offset = 0;
  }
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

}  // namespace gpusort::io
