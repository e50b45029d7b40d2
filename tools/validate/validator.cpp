// Validation: each file is mapped and cut into pieces that TBB scans in parallel; each piece
// hashes its records and finds its first bad pair, and the pieces are combined in file order.
#include "validate/validator.hpp"

#include <fcntl.h>
#include <sys/mman.h>

#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include "common/tool_support.hpp"
#include "gpusort/error.hpp"
#include "io/file_descriptor.hpp"

namespace gpusort::tools {
namespace {

template <typename T>
T load(const std::byte* p) noexcept {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
int three_way(T a, T b) noexcept {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Key orders, straight from the definitions.
template <typename T>
struct integer_order {  // unsigned or two's complement, by T's signedness
  static int compare(const std::byte* a, const std::byte* b, std::uint32_t) noexcept {
    return three_way(load<T>(a), load<T>(b));
  }
};

template <typename Bits>
struct total_order {  // IEEE 754 totalOrder on the bit patterns
  static int compare(const std::byte* a, const std::byte* b, std::uint32_t) noexcept {
    const Bits x = load<Bits>(a);
    const Bits y = load<Bits>(b);
    constexpr unsigned top = sizeof(Bits) * 8 - 1;
    const bool x_negative = (x >> top) != 0;
    const bool y_negative = (y >> top) != 0;
    if (x_negative != y_negative) return x_negative ? -1 : 1;  // every negative < every positive
    if (x == y) return 0;
    // Same sign: the larger pattern is the larger magnitude (NaNs beyond the infinities), which
    // is the larger value for positives and the smaller value for negatives.
    const int by_magnitude = x < y ? -1 : 1;
    return x_negative ? -by_magnitude : by_magnitude;
  }
};

struct byte_order {
  static int compare(const std::byte* a, const std::byte* b, std::uint32_t n) noexcept {
    const int c = std::memcmp(a, b, n);
    return (c > 0) - (c < 0);
  }
};

// Two hash chains with different constants and operations over the record's 8-byte words
// (the tail zero-padded, the length folded in), each finished by a different bijective mix.
inline void record_hashes(const std::byte* p, std::uint32_t n, std::uint64_t& a,
                          std::uint64_t& b) noexcept {
  std::uint64_t x = 0x243f6a8885a308d3ull ^ n;
  std::uint64_t y = 0x13198a2e03707344ull + n * 0xa4093822299f31d1ull;
  std::uint32_t off = 0;
  auto step = [&](std::uint64_t w) {
    x = (x ^ w) * 0x9fb21c651e98df25ull;
    x ^= x >> 29;
    y = std::rotl(y + w, 23) * 0xff51afd7ed558ccdull;
  };
  for (; off + 8 <= n; off += 8) step(load<std::uint64_t>(p + off));
  if (off < n) {
    std::uint64_t w = 0;
    std::memcpy(&w, p + off, n - off);
    step(w);
  }
  a += mix64(x);
  y ^= y >> 33;
  y *= 0xc4ceb9fe1a85ec53ull;
  y ^= y >> 29;
  y *= 0x2127599bf4325c37ull;
  y ^= y >> 32;
  b += y;
}

/// A read-only shared mapping of a whole file.
class mapped_file {
 public:
  explicit mapped_file(const std::string& path)
      : fd_(io::file_descriptor::open(path, O_RDONLY)) {
    if (!fd_.is_regular()) throw_error("cannot validate " + path + ": not a regular file");
    size_ = fd_.size();
    if (size_ == 0) return;
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd_.get(), 0);
    if (p == MAP_FAILED) throw_error("cannot map " + path, errno);
    data_ = static_cast<const std::byte*>(p);
  }
  ~mapped_file() {
    if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  }
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  mapped_file(mapped_file&&) = delete;
  mapped_file& operator=(mapped_file&&) = delete;

  [[nodiscard]] const std::byte* data() const noexcept { return data_; }
  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }

 private:
  io::file_descriptor fd_;
  const std::byte* data_ = nullptr;
  std::uint64_t size_ = 0;
};

struct piece_result {
  multiset_hash hash;
  std::optional<std::uint64_t> unordered;
  std::optional<std::uint64_t> unstable;
};

template <typename Order, std::uint32_t FixedSize>
void scan_piece(const std::byte* base, std::uint64_t first, std::uint64_t last,
                const validate_options& options, bool check_order, const index_field& index,
                piece_result& out) {
  // A record size known at compile time unrolls the hash loop for the common formats.
  const std::uint32_t rs = FixedSize != 0 ? FixedSize : options.format.record_size;
  const std::uint32_t ko = options.format.key_offset;
  const std::uint32_t ks = options.format.key_size;
  const bool stable = check_order && options.stable;
  std::uint64_t h1 = 0;
  std::uint64_t h2 = 0;
  const std::byte* rec = base + first * rs;
  for (std::uint64_t i = first; i < last; ++i, rec += rs) {
    record_hashes(rec, rs, h1, h2);
    if (!check_order || i == 0) continue;
    const std::byte* prev = rec - rs;
    const int c = Order::compare(prev + ko, rec + ko, ks);
    if ((options.descending ? c < 0 : c > 0) && !out.unordered) out.unordered = i - 1;
    if (stable && c == 0 && !out.unstable && read_index(prev, index) >= read_index(rec, index))
      out.unstable = i - 1;
  }
  out.hash.count += last - first;
  out.hash.h1 += h1;
  out.hash.h2 += h2;
}

using piece_scanner = void (*)(const std::byte*, std::uint64_t, std::uint64_t,
                               const validate_options&, bool, const index_field&, piece_result&);

template <typename Order>
piece_scanner scanner_sized(std::uint32_t record_size) {
  switch (record_size) {
    case 4: return &scan_piece<Order, 4>;
    case 8: return &scan_piece<Order, 8>;
    case 16: return &scan_piece<Order, 16>;
    case 100: return &scan_piece<Order, 100>;
    default: return &scan_piece<Order, 0>;
  }
}

piece_scanner scanner_for(const record_format& f) {
  switch (f.type) {
    case key_type::u32: return scanner_sized<integer_order<std::uint32_t>>(f.record_size);
    case key_type::u64: return scanner_sized<integer_order<std::uint64_t>>(f.record_size);
    case key_type::i32: return scanner_sized<integer_order<std::int32_t>>(f.record_size);
    case key_type::i64: return scanner_sized<integer_order<std::int64_t>>(f.record_size);
    case key_type::f32: return scanner_sized<total_order<std::uint32_t>>(f.record_size);
    case key_type::f64: return scanner_sized<total_order<std::uint64_t>>(f.record_size);
    case key_type::bytes: return scanner_sized<byte_order>(f.record_size);
  }
  return &scan_piece<byte_order, 0>;
}

std::string hex_bytes(const std::byte* p, std::uint32_t n, bool reverse) {
  std::string s = "0x";
  char buf[3];
  for (std::uint32_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x",
                  static_cast<unsigned>(p[reverse ? n - 1 - i : i]));
    s += buf;
  }
  return s;
}

std::string order_name(const validate_options& options) {
  return options.descending ? "descending" : "ascending";
}

}  // namespace

int compare_keys(const std::byte* a, const std::byte* b, const record_format& format) noexcept {
  switch (format.type) {
    case key_type::u32: return integer_order<std::uint32_t>::compare(a, b, 4);
    case key_type::u64: return integer_order<std::uint64_t>::compare(a, b, 8);
    case key_type::i32: return integer_order<std::int32_t>::compare(a, b, 4);
    case key_type::i64: return integer_order<std::int64_t>::compare(a, b, 8);
    case key_type::f32: return total_order<std::uint32_t>::compare(a, b, 4);
    case key_type::f64: return total_order<std::uint64_t>::compare(a, b, 8);
    case key_type::bytes: return byte_order::compare(a, b, format.key_size);
  }
  return 0;
}

std::string key_text(const std::byte* key, const record_format& format) {
  char buf[64];
  switch (format.type) {
    case key_type::u32:
      std::snprintf(buf, sizeof buf, "%u", load<std::uint32_t>(key));
      break;
    case key_type::u64:
      std::snprintf(buf, sizeof buf, "%llu",
                    static_cast<unsigned long long>(load<std::uint64_t>(key)));
      break;
    case key_type::i32: std::snprintf(buf, sizeof buf, "%d", load<std::int32_t>(key)); break;
    case key_type::i64:
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(load<std::int64_t>(key)));
      break;
    case key_type::f32: {
      const float f = load<float>(key);
      if (std::isnan(f)) std::snprintf(buf, sizeof buf, "%snan", std::signbit(f) ? "-" : "+");
      else std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(f));
      break;
    }
    case key_type::f64: {
      const double f = load<double>(key);
      if (std::isnan(f)) std::snprintf(buf, sizeof buf, "%snan", std::signbit(f) ? "-" : "+");
      else std::snprintf(buf, sizeof buf, "%.17g", f);
      break;
    }
    case key_type::bytes: return hex_bytes(key, format.key_size, false);
  }
  // Numbers also show their bits, most significant first.
  return std::string(buf) + " (" + hex_bytes(key, format.key_size, true) + ")";
}

void add_record(multiset_hash& sum, const std::byte* record, std::uint32_t record_size) noexcept {
  record_hashes(record, record_size, sum.h1, sum.h2);
  ++sum.count;
}

std::string hash_text(const multiset_hash& hash) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "0x%016llx%016llx", static_cast<unsigned long long>(hash.h1),
                static_cast<unsigned long long>(hash.h2));
  return buf;
}

file_scan scan_file(const std::string& path, const validate_options& options, bool check_order) {
  const record_format& f = options.format;
  f.validate();
  const mapped_file file(path);
  file_scan scan;
  scan.bytes = file.size();
  const std::uint64_t records = file.size() / f.record_size;

  const index_field index = locate_index(f);
  if (check_order && options.stable) {
    GPUSORT_EXPECTS(index.how != index_field::encoding::none,
                    "--stable needs records that carry the generator's index in a payload, but " +
                        describe(f) + " have no payload");
    GPUSORT_EXPECTS(records <= index_limit(index),
                    "--stable: " + path + " has " + std::to_string(records) +
                        " records, more than its " + std::to_string(index.width) +
                        "-byte index field can number");
  }

  // Pieces of about 4 MiB, fixed by the format alone; combined in order below.
  const std::uint64_t piece = std::max<std::uint64_t>(1, (std::uint64_t{4} << 20) / f.record_size);
  const std::uint64_t pieces = (records + piece - 1) / piece;
  std::vector<piece_result> results(pieces);
  const piece_scanner scan_range = scanner_for(f);
  tbb::parallel_for(std::uint64_t{0}, pieces, [&](std::uint64_t p) {
    const std::uint64_t first = p * piece;
    scan_range(file.data(), first, std::min(records, first + piece), options, check_order, index,
               results[p]);
  });
  for (const piece_result& r : results) {
    scan.hash.count += r.hash.count;
    scan.hash.h1 += r.hash.h1;
    scan.hash.h2 += r.hash.h2;
    if (!scan.first_unordered && r.unordered) scan.first_unordered = r.unordered;
    if (!scan.first_unstable && r.unstable) scan.first_unstable = r.unstable;
  }
  return scan;
}

validation validate_files(const std::string& in, const std::string& out,
                          const validate_options& options) {
  const record_format& f = options.format;
  f.validate();
  validation v;
  const file_scan out_scan = scan_file(out, options, /*check_order=*/true);

  // The messages need the keys of the pairs found: look them up in a fresh mapping.
  auto record_at = [&](const mapped_file& file, std::uint64_t i) {
    return file.data() + i * f.record_size;
  };
  if (out_scan.first_unordered || out_scan.first_unstable) {
    const mapped_file file(out);
    if (out_scan.first_unordered) {
      v.ordered = false;
      const std::uint64_t i = *out_scan.first_unordered;
      v.problems.push_back("order: " + out + " is not in " + order_name(options) +
                           " order: record " + std::to_string(i) + " has key " +
                           key_text(record_at(file, i) + f.key_offset, f) + ", record " +
                           std::to_string(i + 1) + " has key " +
                           key_text(record_at(file, i + 1) + f.key_offset, f));
    }
    if (out_scan.first_unstable) {
      v.stable = false;
      const std::uint64_t i = *out_scan.first_unstable;
      const index_field index = locate_index(f);
      v.problems.push_back(
          "stability: " + out + " is not stable: records " + std::to_string(i) + " and " +
          std::to_string(i + 1) + " have equal keys " +
          key_text(record_at(file, i) + f.key_offset, f) + " but input indexes " +
          std::to_string(read_index(record_at(file, i), index)) + " and " +
          std::to_string(read_index(record_at(file, i + 1), index)));
    }
  }
  const std::uint64_t out_tail = out_scan.bytes % f.record_size;
  if (out_tail != 0) {
    v.same_records = false;
    v.problems.push_back("content: " + out + " is " + std::to_string(out_scan.bytes) +
                         " bytes, not a whole number of " + std::to_string(f.record_size) +
                         "-byte records (" + std::to_string(out_tail) + " bytes left over)");
  }

  std::string what = std::to_string(out_scan.hash.count) + " records";
  if (!in.empty()) {
    validate_options plain = options;
    plain.stable = false;
    const file_scan in_scan = scan_file(in, plain, /*check_order=*/false);
    GPUSORT_EXPECTS(in_scan.bytes % f.record_size == 0,
                    "input " + in + " is " + std::to_string(in_scan.bytes) +
                        " bytes, not a whole number of " + std::to_string(f.record_size) +
                        "-byte records");
    const std::uint64_t n_in = in_scan.hash.count;
    const std::uint64_t n_out = out_scan.hash.count;
    if (n_in != n_out) {
      v.same_records = false;
      v.problems.push_back(
          "content: record count differs: " + in + " has " + std::to_string(n_in) + ", " + out +
          " has " + std::to_string(n_out) + " (" +
          (n_out < n_in ? std::to_string(n_in - n_out) + " missing"
                        : std::to_string(n_out - n_in) + " extra") +
          ")");
    } else if (!(in_scan.hash == out_scan.hash)) {
      v.same_records = false;
      v.problems.push_back("content: " + out + " holds different records than " + in +
                           " (same count, " + std::to_string(n_in) + "; multiset hash " +
                           hash_text(in_scan.hash) + " vs " + hash_text(out_scan.hash) + ")");
    }
    what = "the " + std::to_string(n_in) + " records of " + in;
  }
  v.summary = "OK: " + out + " holds " + what + " in " + order_name(options) + " order of " +
              describe(f) + (options.stable ? ", stable" : "") + "; multiset hash " +
              hash_text(out_scan.hash);
  return v;
}

}  // namespace gpusort::tools
