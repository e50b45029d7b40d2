// Shared test helpers: replayable seeds, scratch directories, random records of any format.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

/// Random bytes for `count` records; keys drawn to hit edge values often (zero, extremes,
/// signed zeros, infinities, NaNs of both signs for floats) and to repeat, so ties occur.
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

}  // namespace gpusort::test
