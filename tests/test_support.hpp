// Shared test helpers: replayable seeds, scratch directories, random records of any format.
#pragma once

#include <poll.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <numeric>
#include <filesystem>
#include <limits>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gpusort/record_format.hpp"

namespace gpusort::test {

/// The base seed: GPUSORT_TEST_SEED if set, else a fixed default. Tests derive per-case seeds
/// from it and print them with SCOPED_TRACE so that a failure can be replayed.
inline std::uint64_t base_seed() {
  if (const char* env = std::getenv("GPUSORT_TEST_SEED"); env != nullptr && *env != '\0')
    return std::strtoull(env, nullptr, 0);
  return 20261122;
}

/// A fresh directory under the system temp dir, removed with everything in it afterwards.
class scratch_dir {
 public:
  scratch_dir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gpusort-test-XXXXXX").string();
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    if (::mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = name.data();
  }
  ~scratch_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;

  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// A validated format: key type by name ("u64", "bytes:10"), record size and key offset.
inline record_format make_format(const char* type, std::uint32_t record_size,
                                 std::uint32_t key_offset) {
  record_format f;
  set_key_type(f, type);
  f.record_size = record_size;
  f.key_offset = key_offset;
  f.validate();
  return f;
}

inline void write_file(const std::string& path, const std::vector<std::byte>& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline std::vector<std::byte> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  // An empty vector's data() may be null, and memcpy's pointers must not be even for 0 bytes.
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

/// Random bytes for `count` records; keys drawn to hit edge values often (zero, extremes,
/// signed zeros, infinities, NaNs of both signs for floats) and to repeat, so ties occur.
/// `n` bytes from a seeded generator.
inline std::vector<std::byte> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

inline std::vector<std::byte> random_records(std::uint64_t count, const record_format& format,
                                             std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::byte> out(count * format.record_size);
  for (auto& b : out) b = static_cast<std::byte>(rng());
  const std::uint64_t specials64[] = {0,
                                      ~0ull,
                                      1ull << 63,
                                      (1ull << 63) - 1,
                                      0x7ff0000000000000ull,  // +inf
                                      0xfff0000000000000ull,  // -inf
                                      0x7ff8000000000001ull,  // +NaN
                                      0xfff8000000000001ull,  // -NaN
                                      0x8000000000000000ull,  // -0.0
                                      1};
  const std::uint32_t specials32[] = {0,          ~0u,        1u << 31,   (1u << 31) - 1,
                                      0x7f800000, 0xff800000, 0x7fc00001, 0xffc00001,
                                      0x80000000, 1};
  std::uint64_t recent[4] = {};
  for (std::uint64_t i = 0; i < count; ++i) {
    std::byte* key = out.data() + i * format.record_size + format.key_offset;
    const unsigned pick = static_cast<unsigned>(rng() % 16);
    std::uint64_t v = rng();
    if (pick < 3) v = specials64[rng() % 10];
    else if (pick < 5) v = recent[rng() % 4];  // a repeat: ties
    else if (pick < 6) v = rng() % 8;          // small values
    if (format.key_size == 4) {
      std::uint32_t w = static_cast<std::uint32_t>(v);
      if (pick < 3) w = specials32[rng() % 10];
      std::memcpy(key, &w, 4);
    } else if (format.key_size == 8) {
      std::memcpy(key, &v, 8);
    } else {
      for (std::uint32_t k = 0; k < format.key_size; ++k)
        key[k] = static_cast<std::byte>(pick < 6 ? (v >> (8 * (k % 8))) & 3 : rng());
    }
    recent[i % 4] = v;
  }
  return out;
}

/// Key of one record as a signed 128-bit-free comparable value, decoded from the definition
/// (independent of the library's key codec): returns <0, 0, >0 like memcmp.
inline int reference_compare(const std::byte* a, const std::byte* b, const record_format& f) {
  const std::byte* ka = a + f.key_offset;
  const std::byte* kb = b + f.key_offset;
  auto cmp = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  // IEEE 754 totalOrder: sign-magnitude bits read as a two's complement integer.
  auto total_order_64 = [](std::uint64_t bits) {
    const auto i = static_cast<std::int64_t>(bits);
    return i < 0 ? std::numeric_limits<std::int64_t>::min() - i - 1 + 0 : i;
  };
  auto total_order_32 = [](std::uint32_t bits) {
    const auto i = static_cast<std::int32_t>(bits);
    return i < 0 ? std::numeric_limits<std::int32_t>::min() - i - 1 + 0 : i;
  };
  switch (f.type) {
    case key_type::u32: {
      std::uint32_t x, y;
      std::memcpy(&x, ka, 4);
      std::memcpy(&y, kb, 4);
      return cmp(x, y);
    }
    case key_type::i32: {
      std::int32_t x, y;
      std::memcpy(&x, ka, 4);
      std::memcpy(&y, kb, 4);
      return cmp(x, y);
    }
    case key_type::f32: {
      std::uint32_t x, y;
      std::memcpy(&x, ka, 4);
      std::memcpy(&y, kb, 4);
      return cmp(total_order_32(x), total_order_32(y));
    }
    case key_type::u64: {
      std::uint64_t x, y;
      std::memcpy(&x, ka, 8);
      std::memcpy(&y, kb, 8);
      return cmp(x, y);
    }
    case key_type::i64: {
      std::int64_t x, y;
      std::memcpy(&x, ka, 8);
      std::memcpy(&y, kb, 8);
      return cmp(x, y);
    }
    case key_type::f64: {
      std::uint64_t x, y;
      std::memcpy(&x, ka, 8);
      std::memcpy(&y, kb, 8);
      return cmp(total_order_64(x), total_order_64(y));
    }
    case key_type::bytes: return std::memcmp(ka, kb, f.key_size);
  }
  return 0;
}

/// The expected output: std::stable_sort of the records by reference_compare.
inline std::vector<std::byte> reference_sort(const std::vector<std::byte>& records,
                                             const record_format& f, bool descending) {
  const std::size_t n = records.size() / f.record_size;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    const int c = reference_compare(records.data() + i * f.record_size,
                                    records.data() + j * f.record_size, f);
    return descending ? c > 0 : c < 0;
  });
  std::vector<std::byte> out(records.size());
  for (std::size_t i = 0; i < n; ++i)
    std::memcpy(out.data() + i * f.record_size, records.data() + order[i] * f.record_size,
                f.record_size);
  return out;
}

/// An inotify watch for the moment the file at `path` is freed: IN_DELETE_SELF comes when its
/// last name is gone and its last reference with it.
class freed_watch {
 public:
  explicit freed_watch(const std::string& path)
      : fd_(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK)) {
    EXPECT_GE(fd_, 0);
    EXPECT_GE(::inotify_add_watch(fd_, path.c_str(), IN_DELETE_SELF), 0) << path;
  }
  ~freed_watch() { ::close(fd_); }
  freed_watch(const freed_watch&) = delete;
  freed_watch& operator=(const freed_watch&) = delete;

  /// Whether the file was freed within `ms` milliseconds.
  bool freed_within(int ms) {
    pollfd p{fd_, POLLIN, 0};
    while (::poll(&p, 1, ms) > 0) {
      alignas(inotify_event) char buffer[4096];
      const ssize_t n = ::read(fd_, buffer, sizeof buffer);
      for (ssize_t at = 0; at < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buffer + at);
        if ((e->mask & IN_DELETE_SELF) != 0) return true;
        at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
    return false;
  }

 private:
  int fd_;
};

/// No child of this process is left to reap (release_in_background waits for its child;
/// the grandchild belongs to init).
inline void expect_no_child_left() {
  int status = 0;
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1) << "a child of ours is left to reap";
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace gpusort::test
