// Helpers for the tools' tests: running the tool executables and reading/writing whole files.
#pragma once

#include <sys/wait.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace gpusort::test {

struct command_result {
  int status = -1;     ///< exit status, or -1 when the command did not exit normally
  std::string output;  ///< stdout and stderr together
};

/// Single-quotes a word for /bin/sh.
inline std::string sh_quote(const std::string& word) {
  std::string s = "'";
  for (const char c : word) {
    if (c == '\'') s += "'\\''";
    else s += c;
  }
  return s + "'";
}

/// Runs a shell command line, capturing its output (stderr included).
inline command_result run_command(const std::string& command) {
  command_result r;
  const std::string full = command + " 2>&1";
  FILE* pipe = ::popen(full.c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.status = (status != -1 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::vector<std::byte> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  const std::vector<char> chars((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  if (!chars.empty()) std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

inline void write_bytes(const std::string& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

/// The records of a byte buffer as separate strings (easy to sort, compare and count).
inline std::vector<std::string> split_records(const std::vector<std::byte>& bytes,
                                              std::uint32_t record_size) {
  std::vector<std::string> out;
  for (std::size_t off = 0; off + record_size <= bytes.size(); off += record_size)
    out.emplace_back(reinterpret_cast<const char*>(bytes.data()) + off, record_size);
  return out;
}

inline std::vector<std::byte> join_records(const std::vector<std::string>& records) {
  std::vector<std::byte> out;
  for (const std::string& r : records) {
    const auto* p = reinterpret_cast<const std::byte*>(r.data());
    out.insert(out.end(), p, p + r.size());
  }
  return out;
}

}  // namespace gpusort::test
