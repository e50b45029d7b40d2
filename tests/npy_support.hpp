// NumPy .npy files for tests, written and read back from the format's description (magic,
// version, little-endian header length, a padded dict literal), sharing no code with
// src/io/npy_header: no Python or NumPy is needed to run the tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpusort::test {

/// The dict NumPy writes: keys in sorted order, each followed by ", ".
inline std::string npy_dict(const std::string& descr, const std::string& shape,
                            bool fortran = false) {
  return "{'descr': " + descr + ", 'fortran_order': " + (fortran ? "True" : "False") +
         ", 'shape': " + shape + ", }";
}

/// "(n,)".
inline std::string npy_shape(std::uint64_t n) {
  std::string s(1, '(');  // built piece by piece: "(" + ... trips GCC 12's -Wrestrict
  s += std::to_string(n);
  s += ",)";
  return s;
}

/// The header NumPy would write around `dict`: version `major`, padded with spaces and a
/// newline so that the data starts at a multiple of `align` (64; 16 in files of NumPy < 1.14).
inline std::vector<std::byte> npy_header(const std::string& dict, unsigned major = 1,
                                         unsigned align = 64) {
  const std::size_t pre = major == 1 ? 10 : 12;
  const std::size_t total = (pre + dict.size() + 1 + align - 1) / align * align;
  const std::size_t len = total - pre;
  std::string h("\x93NUMPY", 6);
  h += static_cast<char>(major);
  h += '\0';
  for (std::size_t i = 0; i < pre - 8; ++i) h += static_cast<char>((len >> (8 * i)) & 0xff);
  h += dict;
  h.resize(total - 1, ' ');
  h += '\n';
  std::vector<std::byte> out(h.size());
  std::memcpy(out.data(), h.data(), h.size());
  return out;
}

/// A whole .npy file: the header of `dict`, then `data`.
inline std::vector<std::byte> npy_file(const std::string& dict, const std::vector<std::byte>& data,
                                       unsigned major = 1, unsigned align = 64) {
  std::vector<std::byte> f = npy_header(dict, major, align);
  f.insert(f.end(), data.begin(), data.end());
  return f;
}

/// A 1-D array of `descr` holding `data` (whole records of `record_size` bytes).
inline std::vector<std::byte> npy_array(const std::string& descr, std::uint32_t record_size,
                                        const std::vector<std::byte>& data) {
  return npy_file(npy_dict(descr, npy_shape(data.size() / record_size)), data);
}

/// An .npy file taken apart, checking the layout NumPy expects on the way.
struct npy_parts {
  unsigned major = 0;
  std::size_t header_bytes = 0;  ///< where the data starts
  std::string dict;              ///< the dict, without its padding
  std::vector<std::byte> data;
};

/// Splits `file`; throws std::runtime_error when the preamble is wrong, the length field does
/// not match, or the padding is not spaces ended by one newline.
inline npy_parts split_npy(const std::vector<std::byte>& file) {
  auto at = [&](std::size_t i) { return static_cast<unsigned char>(file.at(i)); };
  if (file.size() < 12 || std::memcmp(file.data(), "\x93NUMPY", 6) != 0)
    throw std::runtime_error("no .npy magic");
  npy_parts p;
  p.major = at(6);
  if (p.major < 1 || p.major > 3 || at(7) != 0) throw std::runtime_error("bad version");
  const std::size_t pre = p.major == 1 ? 10 : 12;
  std::size_t len = at(8) | std::size_t{at(9)} << 8;
  if (p.major > 1) len |= std::size_t{at(10)} << 16 | std::size_t{at(11)} << 24;
  p.header_bytes = pre + len;
  if (p.header_bytes > file.size()) throw std::runtime_error("header past the end");
  if (at(p.header_bytes - 1) != '\n') throw std::runtime_error("header does not end in \\n");
  std::string text(reinterpret_cast<const char*>(file.data()) + pre, len - 1);
  const std::size_t close = text.rfind('}');
  if (close == std::string::npos) throw std::runtime_error("no dict");
  if (text.find_first_not_of(' ', close + 1) != std::string::npos)
    throw std::runtime_error("padding is not spaces");
  p.dict = text.substr(0, close + 1);
  p.data.assign(file.begin() + static_cast<std::ptrdiff_t>(p.header_bytes), file.end());
  return p;
}

/// Little-endian bytes of `values`, for building records field by field.
template <typename T>
void append_le(std::vector<std::byte>& out, T value) {
  std::byte b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));  // the tests run on little-endian hosts, as gpusort does
  out.insert(out.end(), b, b + sizeof(T));
}

}  // namespace gpusort::test
