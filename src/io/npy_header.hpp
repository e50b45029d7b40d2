// NumPy .npy headers: a strict parser (versions 1.0, 2.0 and 3.0), the record format a sort
// reads from one, and the header of a sorted output. Plain C++, no NumPy, no CUDA.
//
// An .npy file is a preamble (the magic "\x93NUMPY", a major and a minor version byte, the
// header's length as a little-endian u16 in version 1, u32 in versions 2 and 3), then a Python
// dict literal such as {'descr': '<u8', 'fortran_order': False, 'shape': (4,), } padded with
// spaces and a newline so that the array's bytes start aligned (64 bytes; 16 in old files),
// then the array's elements, back to back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpusort/options.hpp"
#include "gpusort/record_format.hpp"

namespace gpusort::io {

/// Bytes read to learn a header's size: the preamble of versions 2 and 3 (version 1's is 10).
inline constexpr std::size_t npy_preamble_bytes = 12;

/// The largest header read (NumPy itself refuses more than 10000 bytes unless told otherwise).
inline constexpr std::uint64_t npy_max_header_bytes = std::uint64_t{1} << 20;

/// One element type of a dtype, as a type string spells it: '<u8', '|S10', '<M8[ns]', '|O'.
struct npy_scalar {
  char byte_order = '|';  ///< '<', '>' or '|' (not applicable); '=' (native) reads as '<'
  char kind = 0;          ///< NumPy's kind: b i u f c S U V M m O ('a' reads as 'S')
  std::uint64_t size = 0; ///< bytes of one element
};

/// One field of a structured dtype, or the one unnamed field standing for a plain dtype.
struct npy_field {
  std::string name;         ///< "" for padding fields ('', '|V4') and for a plain dtype
  std::uint64_t offset = 0; ///< bytes from the start of the record
  std::uint64_t size = 0;   ///< bytes of the whole field (every element of its sub-array)
  std::uint64_t count = 1;  ///< elements of its sub-array shape, e.g. 3 for ('v', '<f4', (3,))
  bool nested = false;      ///< a structure of its own ('pos', [('x', '<f4'), ...]): no scalar
  npy_scalar scalar;        ///< the element type unless nested
  std::string type_text;    ///< the type as written in the header, e.g. '<u8'
};

/// What an .npy header says.
struct npy_header {
  unsigned major = 1;
  unsigned minor = 0;
  std::uint64_t header_bytes = 0;  ///< preamble, dict and padding: the records start here
  std::string descr;     ///< the 'descr' value exactly as written (an output's header copies it)
  std::string dtype;     ///< the dtype in one canonical spelling, to compare and to print
  bool structured = false;
  std::vector<npy_field> fields;  ///< top-level fields; a plain dtype has one unnamed field
  std::uint64_t item_size = 0;    ///< bytes of one element of the array: one record
  bool has_object = false;        ///< an object ('O') element anywhere in the dtype
  bool fortran_order = false;
  std::vector<std::uint64_t> shape;

  /// The elements the shape holds (1 for shape ()); throws gpusort::error naming `name` if
  /// their bytes would not fit 64 bits.
  [[nodiscard]] std::uint64_t records(const std::string& name) const;
  /// "(4,)", "(2, 3)", "()".
  [[nodiscard]] std::string shape_text() const;
  /// The names of the named fields, "id, key, value", for messages.
  [[nodiscard]] std::string field_names() const;
};

/// True when `head` starts with the .npy magic string "\x93NUMPY" (needs 6 bytes).
[[nodiscard]] bool is_npy_magic(std::span<const std::byte> head) noexcept;

/**
 * The whole header's size (preamble, dict, padding) from its first bytes.
 * - `preamble` holds at least the preamble: 10 bytes for version 1, 12 for versions 2 and 3.
 * @throw gpusort::error naming `name` for a short preamble, a version other than 1.0, 2.0 or
 *   3.0, or a header larger than npy_max_header_bytes.
 */
[[nodiscard]] std::uint64_t npy_header_size(std::span<const std::byte> preamble,
                                            const std::string& name);

/**
 * Parses a whole header: npy_header_size() bytes from the start of the file. Strict: exactly
 * the keys 'descr', 'fortran_order' and 'shape'; Python literals only (strings, True/False,
 * integers, tuples, lists); never reads outside `header`.
 * @throw gpusort::error naming `name` and what is wrong, for any header NumPy would not write.
 */
[[nodiscard]] npy_header parse_npy_header(std::span<const std::byte> header,
                                          const std::string& name);

/**
 * Throws gpusort::error naming `name` when the array is not one gpusort sorts: object
 * elements, records of 0 bytes or over max_record_size, Fortran order with several
 * dimensions, other than one dimension, or a shape whose bytes overflow.
 */
void check_sortable(const npy_header& header, const std::string& name);

/**
 * The record format of a sort of `header`'s records. The key is the array's element (a plain
 * dtype) or the field `said.key_field` names (a structured dtype): <u4 <u8 <i4 <i8 <f4 <f8
 * ('=' too) are the numeric key types, a byte string (S, V, or u1 elements, at most 4096
 * bytes) is bytes:N; the record is the whole element.
 * - `given`: the caller's format; the parts `said` marks as set must agree with the header.
 * @throw gpusort::error naming `name`: a structured dtype without --key (the message lists the
 *   fields), --key on a plain dtype or naming no field, a key that is no key type or is
 *   big-endian, or a contradiction with the caller's format.
 */
[[nodiscard]] record_format npy_record_format(const npy_header& header, const std::string& name,
                                              const record_format& given,
                                              const npy_options& said);

/**
 * The size the header of an output of up to `records` records of `like`'s dtype takes:
 * `like.header_bytes` when the dict fits there (an output keeps its input's layout, and its
 * records their alignment), else the next multiple of 64 bytes that holds it.
 */
[[nodiscard]] std::uint64_t npy_output_header_bytes(const npy_header& like,
                                                    std::uint64_t records);

/**
 * The header of a 1-D, C-order .npy file of `records` records of `like`'s dtype ('descr' as
 * the input wrote it), `header_bytes` long: the dict padded with spaces and a newline. The
 * version is `like`'s, or 2.0 where a version 1.0 length field cannot hold the header.
 * - `header_bytes` must be at least npy_output_header_bytes(like, records) when it is not
 *   like.header_bytes; a count with fewer digits than that always fits.
 * @throw gpusort::error when the dict does not fit in `header_bytes`.
 */
[[nodiscard]] std::vector<std::byte> format_npy_header(const npy_header& like,
                                                       std::uint64_t records,
                                                       std::uint64_t header_bytes);

}  // namespace gpusort::io
