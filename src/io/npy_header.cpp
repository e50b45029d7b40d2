// The .npy header: a recursive-descent reader of the few Python literals NumPy writes there,
// the record format a sort takes from it, and the header of a sorted output.
#include "io/npy_header.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <limits>
#include <string_view>

#include "gpusort/error.hpp"

namespace gpusort::io {
namespace {

static_assert(std::endian::native == std::endian::little,
              "'=' (native byte order) in a dtype is read as little-endian");

constexpr unsigned char npy_magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
/// Nesting of lists and tuples in a descr: NumPy's own dtypes stay far below it; a header
/// built to exhaust the stack stops here.
constexpr unsigned max_depth = 32;
/// Dimensions of a shape (NumPy 2 allows 64).
constexpr std::size_t max_dims = 64;
/// The longest bytes:N key (set_key_type's limit).
constexpr std::uint64_t max_bytes_key = 4096;
/// Element sizes beyond this are refused while parsing, so that sizes times counts never
/// overflow; a record is at most max_record_size (1 GiB) anyway.
constexpr std::uint64_t max_parsed_size = std::uint64_t{1} << 40;

std::size_t preamble_size(unsigned major) { return major == 1 ? 10 : 12; }

/// `s` as Python would print it in a message: quoted, control bytes escaped.
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string tuple_text(const std::vector<std::uint64_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims[i]);
  }
  if (dims.size() == 1) s += ",";
  return s + ")";
}

/// a * b, or nullopt past `limit`.
bool checked_multiply(std::uint64_t a, std::uint64_t b, std::uint64_t limit, std::uint64_t& out) {
  if (a != 0 && b > limit / a) return false;
  out = a * b;
  return true;
}

/// What a type in a descr stands for: a scalar type string, or a nested structure.
struct parsed_type {
  bool nested = false;
  npy_scalar scalar;
  std::uint64_t size = 0;
  bool has_object = false;
  std::string canonical;
  std::string text;              // as written
  std::vector<npy_field> fields;  // nested: its fields
};

/// Reads the dict of one header; every read is bounds-checked against `text`.
class header_reader {
 public:
  /// `latin1`: versions 1.0 and 2.0 encode the header in Latin-1 (3.0 in UTF-8); strings are
  /// returned in UTF-8 either way, as a command line spells a field's name.
  header_reader(std::string_view text, std::size_t base, bool latin1, const std::string& name)
      : text_(text), base_(base), latin1_(latin1), name_(name) {}

  npy_header read() {
    npy_header h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{', "'{' opening the header's dict");
    for (;;) {
      if (accept('}')) break;
      const std::size_t key_at = pos_;
      const std::string key = string_literal();
      expect(':', "':' after a key");
      if (key == "descr") {
        if (have_descr) fail_at(key_at, "the key 'descr' appears twice");
        have_descr = true;
        skip_space();
        const std::size_t begin = pos_;
        parsed_type t = type(0);
        h.descr = std::string(text_.substr(begin, pos_ - begin));
        h.dtype = t.canonical;
        h.item_size = t.size;
        h.has_object = t.has_object;
        h.structured = t.nested;
        if (t.nested) {
          h.fields = std::move(t.fields);
        } else {
          npy_field f;
          f.size = t.size;
          f.scalar = t.scalar;
          f.type_text = t.text;
          h.fields.push_back(std::move(f));
        }
      } else if (key == "fortran_order") {
        if (have_order) fail_at(key_at, "the key 'fortran_order' appears twice");
        have_order = true;
        h.fortran_order = boolean();
      } else if (key == "shape") {
        if (have_shape) fail_at(key_at, "the key 'shape' appears twice");
        have_shape = true;
        h.shape = int_tuple(/*bare_int=*/false);
      } else {
        fail_at(key_at, "unexpected key " + quoted(key) +
                            " (a header holds 'descr', 'fortran_order' and 'shape')");
      }
      if (accept(',')) continue;
      expect('}', "',' or '}' after a value");
      break;
    }
    skip_space();
    if (pos_ != text_.size()) fail("text after the dict");
    if (!have_descr) fail_plain("no 'descr' key");
    if (!have_order) fail_plain("no 'fortran_order' key");
    if (!have_shape) fail_plain("no 'shape' key");
    return h;
  }

 private:
  [[noreturn]] void fail_plain(const std::string& why) const {
    throw_error(name_ + ": not a valid .npy header: " + why);
  }
  [[noreturn]] void fail_at(std::size_t at, const std::string& why) const {
    fail_plain(why + " (header byte " + std::to_string(base_ + at) + ")");
  }
  [[noreturn]] void fail(const std::string& why) const { fail_at(pos_, why); }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r'))
      ++pos_;
  }
  bool at(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool accept(char c) {
    if (!at(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const char* what) {
    if (!accept(c)) fail(std::string("expected ") + what);
  }

  std::string string_literal() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a quoted string");
    const char quote = text_[pos_++];
    std::string s;
    for (;;) {
      if (pos_ >= text_.size()) fail("a string without its closing quote");
      const char c = text_[pos_++];
      if (c == quote) return s;
      const auto u = static_cast<unsigned char>(c);
      if (u < 0x20) fail("a control character inside a string");
      if (u >= 0x80 && latin1_) {
        s += static_cast<char>(0xc0 | u >> 6);
        s += static_cast<char>(0x80 | (u & 0x3f));
        continue;
      }
      if (c != '\\') {
        s += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("a string without its closing quote");
      const char e = text_[pos_++];
      switch (e) {
        case '\\':
        case '\'':
        case '"': s += e; break;
        case 'n': s += '\n'; break;
        case 't': s += '\t'; break;
        case 'r': s += '\r'; break;
        case 'x': {
          auto digit = [&](char h) -> int {
            if (h >= '0' && h <= '9') return h - '0';
            if (h >= 'a' && h <= 'f') return h - 'a' + 10;
            if (h >= 'A' && h <= 'F') return h - 'A' + 10;
            return -1;
          };
          if (pos_ + 2 > text_.size() || digit(text_[pos_]) < 0 || digit(text_[pos_ + 1]) < 0)
            fail("a bad \\x escape in a string");
          // A code point (Python's str), written in UTF-8 as every other name.
          const int v = digit(text_[pos_]) * 16 + digit(text_[pos_ + 1]);
          if (v >= 0x80) s += static_cast<char>(0xc0 | v >> 6);
          s += static_cast<char>(v >= 0x80 ? 0x80 | (v & 0x3f) : v);
          pos_ += 2;
          break;
        }
        default: fail("an unsupported escape in a string");
      }
    }
  }

  bool boolean() {
    skip_space();
    auto word = [&](std::string_view w) {
      if (text_.substr(pos_, w.size()) != w) return false;
      const std::size_t end = pos_ + w.size();
      if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) ||
                                 text_[end] == '_'))
        return false;
      pos_ = end;
      return true;
    };
    if (word("True")) return true;
    if (word("False")) return false;
    fail("expected True or False");
  }

  std::uint64_t integer() {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '-') fail("a negative dimension");
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_])))
      fail("expected an integer");
    std::uint64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const auto d = static_cast<std::uint64_t>(text_[pos_] - '0');
      if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) fail("an integer too large");
      v = v * 10 + d;
      ++pos_;
    }
    // Python 2 wrote longs as 10L: NumPy files of that time say so.
    if (pos_ < text_.size() && (text_[pos_] == 'L' || text_[pos_] == 'l')) ++pos_;
    return v;
  }

  /// (2, 3), (4,), (); with `bare_int` also a plain 3 (a field's sub-array shape).
  std::vector<std::uint64_t> int_tuple(bool bare_int) {
    std::vector<std::uint64_t> dims;
    if (bare_int && !at('(')) {
      dims.push_back(integer());
      return dims;
    }
    expect('(', "a tuple such as (4,)");
    bool trailing_comma = false;
    while (!accept(')')) {
      if (dims.size() >= max_dims) fail("a shape of too many dimensions");
      dims.push_back(integer());
      trailing_comma = accept(',');
      if (!trailing_comma) {
        expect(')', "',' or ')' in a tuple");
        break;
      }
    }
    if (dims.size() == 1 && !trailing_comma) fail("(n) is a number, not a tuple: write (n,)");
    return dims;
  }

  /// A descr: a type string, or a list of fields.
  parsed_type type(unsigned depth) {
    if (depth > max_depth) fail("a dtype nested too deeply");
    if (at('[')) return structure(depth + 1);
    skip_space();
    const std::size_t begin = pos_;
    const std::string spelled = string_literal();
    return scalar_type(spelled, begin);
  }

  parsed_type scalar_type(const std::string& spelled, std::size_t at_pos) {
    parsed_type t;
    t.text = quoted(spelled);
    std::size_t i = 0;
    char order = '=';
    if (!spelled.empty() && std::strchr("<>|=", spelled[0]) != nullptr && spelled[0] != '\0')
      order = spelled[i++];
    if (i >= spelled.size()) fail_at(at_pos, "an empty type string");
    char kind = spelled[i++];
    if (kind == 'a') kind = 'S';  // NumPy's old name for bytes
    if (std::strchr("biufcSUVMmO", kind) == nullptr || kind == '\0')
      fail_at(at_pos, "unknown type " + quoted(spelled));
    std::uint64_t digits = 0;
    bool have_digits = false;
    while (i < spelled.size() && std::isdigit(static_cast<unsigned char>(spelled[i]))) {
      digits = digits * 10 + static_cast<std::uint64_t>(spelled[i++] - '0');
      have_digits = true;
      if (digits > max_parsed_size) fail_at(at_pos, "type " + quoted(spelled) + " too large");
    }
    std::string unit;
    if ((kind == 'M' || kind == 'm') && i < spelled.size() && spelled[i] == '[') {
      const std::size_t close = spelled.find(']', i);
      if (close == std::string::npos || close == i + 1)
        fail_at(at_pos, "bad time unit in " + quoted(spelled));
      for (std::size_t k = i + 1; k < close; ++k)
        if (!std::isalnum(static_cast<unsigned char>(spelled[k])))
          fail_at(at_pos, "bad time unit in " + quoted(spelled));
      unit = spelled.substr(i, close + 1 - i);
      i = close + 1;
    }
    if (i != spelled.size()) fail_at(at_pos, "unknown type " + quoted(spelled));
    std::uint64_t size = digits;
    auto one_of = [&](std::initializer_list<std::uint64_t> sizes) {
      for (const std::uint64_t s : sizes)
        if (digits == s) return true;
      return false;
    };
    bool ok = have_digits;
    switch (kind) {
      case 'b': ok = ok && digits == 1; break;
      case 'i':
      case 'u': ok = ok && one_of({1, 2, 4, 8}); break;
      case 'f': ok = ok && one_of({2, 4, 8, 12, 16}); break;
      case 'c': ok = ok && one_of({8, 16, 24, 32}); break;
      case 'M':
      case 'm': ok = ok && digits == 8; break;
      case 'O':
        ok = !have_digits || digits == 8;
        size = 8;
        break;
      case 'U':
        ok = ok && digits > 0;
        size = digits * 4;
        break;
      default: ok = ok && digits > 0; break;  // S, V
    }
    if (!ok) fail_at(at_pos, "unknown type " + quoted(spelled));
    if (order == '=') order = (size == 1 || std::strchr("SVOb", kind) != nullptr) ? '|' : '<';
    t.scalar = npy_scalar{order, kind, size};
    t.size = size;
    t.has_object = kind == 'O';
    std::string canonical(1, order);
    canonical += kind;
    if (kind == 'O') {
      canonical = "|O";
    } else {
      canonical += std::to_string(kind == 'U' ? digits : size);
      canonical += unit;
    }
    t.canonical = quoted(canonical);
    return t;
  }

  parsed_type structure(unsigned depth) {
    parsed_type t;
    t.nested = true;
    const std::size_t begin = pos_;
    expect('[', "'['");
    t.canonical.push_back('[');  // (= "[" trips GCC 12's -Wrestrict false positive)
    while (!accept(']')) {
      if (!t.fields.empty()) t.canonical += ", ";
      field(t, depth);
      if (!accept(',')) {
        expect(']', "',' or ']' in a list of fields");
        break;
      }
    }
    t.canonical += "]";
    if (t.fields.empty()) fail_at(begin, "a structured dtype without fields");
    t.text = std::string(text_.substr(begin, pos_ - begin));
    return t;
  }

  /// ('name', type) or ('name', type, shape); the name may be a (title, name) pair.
  void field(parsed_type& parent, unsigned depth) {
    skip_space();
    const std::size_t begin = pos_;
    expect('(', "a field such as ('name', '<u8')");
    npy_field f;
    if (at('(')) {
      expect('(', "'('");
      static_cast<void>(string_literal());  // the title: only the name matters here
      expect(',', "',' between a field's title and name");
      f.name = string_literal();
      accept(',');
      expect(')', "')' after a field's title and name");
    } else {
      f.name = string_literal();
    }
    expect(',', "',' after a field's name");
    skip_space();
    const std::size_t type_begin = pos_;
    parsed_type t = type(depth);
    std::string type_text(text_.substr(type_begin, pos_ - type_begin));
    std::vector<std::uint64_t> sub;
    if (accept(',') && !at(')')) {
      sub = int_tuple(/*bare_int=*/true);
      accept(',');
    }
    expect(')', "')' closing a field");
    f.count = 1;
    for (const std::uint64_t d : sub)
      if (!checked_multiply(f.count, d, max_parsed_size, f.count))
        fail_at(begin, "field " + quoted(f.name) + " too large");
    if (!checked_multiply(t.size, f.count, max_parsed_size, f.size))
      fail_at(begin, "field " + quoted(f.name) + " too large");
    if (!f.name.empty())
      for (const npy_field& other : parent.fields)
        if (other.name == f.name) fail_at(begin, "field " + quoted(f.name) + " appears twice");
    f.offset = parent.size;
    f.nested = t.nested;
    f.scalar = t.scalar;
    f.type_text = sub.empty() ? type_text : type_text + ", " + tuple_text(sub);
    parent.size += f.size;
    if (parent.size > max_parsed_size) fail_at(begin, "a structured dtype too large");
    parent.has_object = parent.has_object || t.has_object;
    parent.canonical += "(" + quoted(f.name) + ", " + t.canonical;
    if (!sub.empty()) parent.canonical += ", " + tuple_text(sub);
    parent.canonical += ")";
    parent.fields.push_back(std::move(f));
  }

  std::string_view text_;
  std::size_t base_;  // where text_ begins in the header, for messages
  bool latin1_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

/// The dict NumPy writes (keys sorted, a trailing ", "), for a 1-D array of `records`.
std::string output_dict(const npy_header& like, std::uint64_t records) {
  return "{'descr': " + like.descr + ", 'fortran_order': False, 'shape': (" +
         std::to_string(records) + ",), }";
}

/// The version an output header of `header_bytes` takes: `like`'s, unless a version 1.0
/// length field (16 bits) cannot hold it.
unsigned output_major(const npy_header& like, std::uint64_t header_bytes) {
  return like.major == 1 && header_bytes - preamble_size(1) > 0xffff ? 2 : like.major;
}

}  // namespace

std::uint64_t npy_header::records(const std::string& name) const {
  std::uint64_t n = 1;
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() / std::max<std::uint64_t>(item_size, 1);
  for (const std::uint64_t d : shape)
    if (!checked_multiply(n, d, limit, n))
      throw_error(name + ": the array's shape " + shape_text() + " of " +
                  std::to_string(item_size) + "-byte elements is too large");
  return n;
}

std::string npy_header::shape_text() const { return tuple_text(shape); }

std::string npy_header::field_names() const {
  std::string s;
  for (const npy_field& f : fields) {
    if (f.name.empty()) continue;
    if (!s.empty()) s += ", ";
    s += f.name;
  }
  return s;
}

bool is_npy_magic(std::span<const std::byte> head) noexcept {
  return head.size() >= sizeof npy_magic &&
         std::memcmp(head.data(), npy_magic, sizeof npy_magic) == 0;
}

std::uint64_t npy_header_size(std::span<const std::byte> preamble, const std::string& name) {
  auto byte = [&](std::size_t i) { return static_cast<std::uint64_t>(preamble[i]); };
  if (!is_npy_magic(preamble) || preamble.size() < 8)
    throw_error(name + ": not a valid .npy header: the file ends inside its preamble");
  const unsigned major = static_cast<unsigned>(byte(6));
  const unsigned minor = static_cast<unsigned>(byte(7));
  if (major < 1 || major > 3 || minor != 0)
    throw_error(name + ": .npy format version " + std::to_string(major) + "." +
                std::to_string(minor) + " is not supported (versions 1.0, 2.0 and 3.0 are)");
  const std::size_t pre = preamble_size(major);
  if (preamble.size() < pre)
    throw_error(name + ": not a valid .npy header: the file ends inside its preamble");
  const std::uint64_t len = major == 1 ? byte(8) | byte(9) << 8
                                       : byte(8) | byte(9) << 8 | byte(10) << 16 | byte(11) << 24;
  if (len > npy_max_header_bytes)
    throw_error(name + ": its .npy header of " + std::to_string(len) +
                " bytes is larger than gpusort reads (" + std::to_string(npy_max_header_bytes) +
                ")");
  return pre + len;
}

npy_header parse_npy_header(std::span<const std::byte> header, const std::string& name) {
  const std::uint64_t size = npy_header_size(header, name);
  if (header.size() < size)
    throw_error(name + ": not a valid .npy header: the file ends inside its header (" +
                std::to_string(header.size()) + " of " + std::to_string(size) + " bytes)");
  const unsigned major = static_cast<unsigned>(header[6]);
  const std::size_t pre = preamble_size(major);
  const std::string_view text(reinterpret_cast<const char*>(header.data()) + pre,
                              static_cast<std::size_t>(size) - pre);
  npy_header h = header_reader(text, pre, /*latin1=*/major < 3, name).read();
  h.major = major;
  h.minor = 0;
  h.header_bytes = size;
  return h;
}

void check_sortable(const npy_header& h, const std::string& name) {
  if (h.has_object)
    throw_error(name + ": its dtype " + h.dtype + " holds Python objects ('O'), stored as "
                "pickles, not as fixed-size records: gpusort cannot sort it");
  if (h.item_size == 0)
    throw_error(name + ": its dtype " + h.dtype + " has elements of 0 bytes: nothing to sort by");
  if (h.item_size > max_record_size)
    throw_error(name + ": its records (dtype " + h.dtype + ") are " +
                std::to_string(h.item_size) + " bytes, larger than the largest supported, " +
                std::to_string(max_record_size) + " (1 GiB)");
  if (h.fortran_order && h.shape.size() > 1)
    throw_error(name + ": the array is in Fortran order (column-major, shape " + h.shape_text() +
                "): gpusort sorts the rows of C-order arrays (np.ascontiguousarray)");
  if (h.shape.empty())
    throw_error(name + ": the array has no dimension (shape ()): a single value needs no sort");
  if (h.shape.size() > 1)
    throw_error(name + ": the array has " + std::to_string(h.shape.size()) + " dimensions (shape " +
                h.shape_text() + ") " +
                (h.structured ? "of a structured dtype: gpusort sorts 1-D arrays (reshape(-1))"
                              : "and a plain dtype " + h.dtype +
                                    ": gpusort sorts 1-D arrays, whose records may be the rows "
                                    "of a structured dtype (--key NAME)"));
  static_cast<void>(h.records(name));
}

record_format npy_record_format(const npy_header& h, const std::string& name,
                                const record_format& given, const npy_options& said) {
  const npy_field* key = nullptr;
  if (!h.structured) {
    GPUSORT_EXPECTS(said.key_field.empty(),
                    name + ": --key " + said.key_field + " names a field, but the array's dtype " +
                        h.dtype + " has none: drop --key");
    key = &h.fields.front();
  } else {
    GPUSORT_EXPECTS(!said.key_field.empty(),
                    name + ": its records are of a structured dtype: name the key field with "
                           "--key NAME (fields: " + h.field_names() + ")");
    for (const npy_field& f : h.fields)
      if (!f.name.empty() && f.name == said.key_field) key = &f;
    GPUSORT_EXPECTS(key != nullptr, name + ": no field " + quoted(said.key_field) +
                                        " in its dtype (fields: " + h.field_names() + ")");
  }
  const std::string what = h.structured
                               ? "field " + quoted(key->name) + " (" + key->type_text + ")"
                               : "the dtype " + key->type_text;
  record_format f;
  f.record_size = static_cast<std::uint32_t>(h.item_size);
  f.key_offset = static_cast<std::uint32_t>(key->offset);
  const npy_scalar& s = key->scalar;
  const bool numeric = !key->nested && key->count == 1 &&
                       (s.kind == 'u' || s.kind == 'i' || s.kind == 'f') &&
                       (s.size == 4 || s.size == 8);
  const bool byte_string = !key->nested && (s.kind == 'S' || s.kind == 'V' ||
                                            (s.kind == 'u' && s.size == 1));
  if (numeric) {
    GPUSORT_EXPECTS(s.byte_order != '>',
                    name + ": " + what + " is big-endian: gpusort sorts little-endian keys "
                           "(convert with arr.astype(arr.dtype.newbyteorder('<')))");
    if (s.kind == 'u') f.type = s.size == 4 ? key_type::u32 : key_type::u64;
    if (s.kind == 'i') f.type = s.size == 4 ? key_type::i32 : key_type::i64;
    if (s.kind == 'f') f.type = s.size == 4 ? key_type::f32 : key_type::f64;
    f.key_size = static_cast<std::uint32_t>(s.size);
  } else if (byte_string && key->size >= 1 && key->size <= max_bytes_key) {
    f.type = key_type::bytes;
    f.key_size = static_cast<std::uint32_t>(key->size);
  } else {
    throw_error(name + ": " + what + " is not a key type: gpusort sorts by <u4 <u8 <i4 <i8 "
                "<f4 <f8, or by a byte string (S, V or u1 elements) of 1 to " +
                std::to_string(max_bytes_key) + " bytes");
  }
  if (said.type_set && (given.type != f.type || given.key_size != f.key_size))
    throw_error(name + ": -t " + key_type_name(given) + " contradicts its header: the key, " +
                what + ", is " + key_type_name(f));
  if (said.record_size_set && given.record_size != f.record_size)
    throw_error(name + ": --record-size " + std::to_string(given.record_size) +
                " contradicts its header: its records (dtype " + h.dtype + ") are " +
                std::to_string(f.record_size) + " bytes");
  if (said.key_offset_set && given.key_offset != f.key_offset)
    throw_error(name + ": --key-offset " + std::to_string(given.key_offset) +
                " contradicts its header: the key, " + what + ", is at offset " +
                std::to_string(f.key_offset));
  f.validate();
  return f;
}

std::uint64_t npy_output_header_bytes(const npy_header& like, std::uint64_t records) {
  const std::uint64_t dict = output_dict(like, records).size();
  if (preamble_size(like.major) + dict + 1 <= like.header_bytes) return like.header_bytes;
  auto aligned = [&](std::size_t preamble) { return (preamble + dict + 1 + 63) / 64 * 64; };
  const std::uint64_t bytes = aligned(preamble_size(like.major));
  return output_major(like, bytes) == like.major ? bytes : aligned(preamble_size(2));
}

std::vector<std::byte> format_npy_header(const npy_header& like, std::uint64_t records,
                                         std::uint64_t header_bytes) {
  const unsigned major = output_major(like, header_bytes);
  const std::size_t pre = preamble_size(major);
  const std::string dict = output_dict(like, records);
  GPUSORT_EXPECTS(pre + dict.size() + 1 <= header_bytes,
                  "an .npy header for " + std::to_string(records) + " records needs " +
                      std::to_string(pre + dict.size() + 1) + " bytes, not " +
                      std::to_string(header_bytes));
  const std::uint64_t len = header_bytes - pre;
  std::vector<std::byte> out(static_cast<std::size_t>(header_bytes), std::byte{' '});
  std::memcpy(out.data(), npy_magic, sizeof npy_magic);
  out[6] = static_cast<std::byte>(major);
  out[7] = std::byte{0};
  for (std::size_t i = 0; i < pre - 8; ++i) out[8 + i] = static_cast<std::byte>(len >> (8 * i));
  std::memcpy(out.data() + pre, dict.data(), dict.size());
  out.back() = std::byte{'\n'};
  return out;
}

}  // namespace gpusort::io
