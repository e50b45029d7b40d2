// Record generation: per-block random streams, key distributions mapped onto each key type's
// order, payloads that carry the record index, and the parallel writer.
#include "datagen/generator.hpp"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/tool_support.hpp"
#include "gpusort/error.hpp"
#include "io/output_file.hpp"

namespace gpusort::tools {
namespace {

// Independent counter-based streams: one constant per use, mixed with the seed.
constexpr std::uint64_t stream_blocks = 0x1f83d9abfb41bd6bull;
constexpr std::uint64_t stream_jitter = 0x6a09e667f3bcc909ull;
constexpr std::uint64_t stream_few = 0xbb67ae8584caa73bull;
constexpr std::uint64_t stream_equal = 0x3c6ef372fe94f82bull;
constexpr std::uint64_t stream_key_perm = 0xa54ff53a5f1d36f1ull;
constexpr std::uint64_t stream_swaps = 0x510e527fade682d1ull;
constexpr std::uint64_t stream_payload = 0x9b05688c2b3e6c1full;
constexpr std::uint64_t stream_key_tail = 0x5be0cd19137e2179ull;

constexpr std::uint32_t max_record_size = 16u << 20;
constexpr std::uint64_t block_bytes_target = 1u << 20;
constexpr std::uint64_t max_block_records = 4096;

bool is_float_type(key_type t) { return t == key_type::f32 || t == key_type::f64; }

unsigned key_word_bits(const record_format& f) {
  switch (f.type) {
    case key_type::u32:
    case key_type::i32:
    case key_type::f32: return 32;
    case key_type::u64:
    case key_type::i64:
    case key_type::f64: return 64;
    case key_type::bytes: return std::min<unsigned>(64, 8 * f.key_size);
  }
  return 64;
}

std::uint64_t low_mask(unsigned bits) {
  return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
}

/// The key's raw bits for a word in the key type's order (the inverse of totalOrder's map).
std::uint64_t ordered_to_raw(std::uint64_t u, key_type type, unsigned bits) {
  const std::uint64_t sign = std::uint64_t{1} << (bits - 1);
  switch (type) {
    case key_type::i32:
    case key_type::i64: return u ^ sign;
    case key_type::f32:
    case key_type::f64: return (u & sign) ? (u ^ sign) : (~u & low_mask(bits));
    default: return u;
  }
}

std::uint64_t float_exponent_mask(key_type type) {
  return type == key_type::f32 ? 0x7f800000ull : 0x7ff0000000000000ull;
}

// (x * n) >> 64: a uniform x in [0, 2^64) mapped to [0, n) without a division.
std::uint64_t mul_high(std::uint64_t x, std::uint64_t n) {
  return static_cast<std::uint64_t>((static_cast<uint128>(x) * n) >> 64);
}

// The round function: the high half of one multiply depends on every bit of the input half.
std::uint64_t feistel_round(std::uint64_t v, std::uint64_t key, std::uint64_t mask) {
  return (((v ^ key) * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

// log1p(x)/x and expm1(x)/x, accurate near 0 (where the Zipf integrals meet exponent 1).
double log1p_over_x(double x) {
  if (std::fabs(x) > 1e-8) return std::log1p(x) / x;
  return 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
}
double expm1_over_x(double x) {
  if (std::fabs(x) > 1e-8) return std::expm1(x) / x;
  return 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
}

std::string number_text(double v) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, end) : std::to_string(v);
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

constexpr char hex_digits[] = "0123456789ABCDEF";

/// The values sorts get wrong: zeros of both signs, infinities, NaNs of both signs and kinds,
/// denormals, extremes, and their neighbours. Raw bits; for bytes:N, first|fill<<8|last<<16.
std::vector<std::uint64_t> edge_keys(const record_format& f, bool finite) {
  switch (f.type) {
    case key_type::f64: {
      std::vector<std::uint64_t> v = {0, 0x8000000000000000ull, 1, 0x8000000000000001ull,
                                      0x000fffffffffffffull, 0x7fefffffffffffffull,
                                      0xffefffffffffffffull, 0x3ff0000000000000ull,
                                      0xbff0000000000000ull, 0x0010000000000000ull};
      if (!finite)
        v.insert(v.end(), {0x7ff0000000000000ull, 0xfff0000000000000ull, 0x7ff8000000000000ull,
                           0xfff8000000000000ull, 0x7ff0000000000001ull, 0xfff0000000000001ull,
                           0x7fffffffffffffffull, 0xffffffffffffffffull});
      return v;
    }
    case key_type::f32: {
      std::vector<std::uint64_t> v = {0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x7f7fffff,
                                      0xff7fffff, 0x3f800000, 0xbf800000, 0x00800000};
      if (!finite)
        v.insert(v.end(), {0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001,
                           0xff800001, 0x7fffffff, 0xffffffff});
      return v;
    }
    case key_type::u32:
    case key_type::i32:
      return {0, 1, 2, 0x7fffffff, 0x80000000, 0x80000001, 0xfffffffe, 0xffffffff};
    case key_type::u64:
    case key_type::i64:
      return {0, 1, 2, 0x7fffffffffffffffull, 0x8000000000000000ull, 0x8000000000000001ull,
              0xfffffffffffffffeull, 0xffffffffffffffffull};
    case key_type::bytes:
      return {0x000000, 0xffffff, 0x010000, 0x000080, 0xffff7f, 0xfeffff};
  }
  return {0};
}

}  // namespace

// xoshiro256**: small state, fast, and good enough statistically for benchmark data.
class record_generator::block_rng {
 public:
  explicit block_rng(std::uint64_t seed) noexcept {
    std::uint64_t x = seed;
    for (std::uint64_t& w : s_) {
      x += 0x9e3779b97f4a7c15ull;
      w = mix64(x);
    }
  }
  std::uint64_t next() noexcept {
    const std::uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }
  /// Uniform in [0, 1).
  double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1p-53; }

 private:
  std::uint64_t s_[4];
};

distribution parse_distribution(std::string_view spelled) {
  distribution d;
  auto bad = [&](const std::string& why) -> distribution {
    throw_error("bad distribution '" + std::string(spelled) + "': " + why +
                " (expected uniform, special, and:Q, equal, zipf:S[:D], sorted, reverse, "
                "nearly:F or few:K)");
  };
  const std::size_t colon = spelled.find(':');
  const std::string_view name = spelled.substr(0, colon);
  const std::string_view arg = colon == std::string_view::npos ? "" : spelled.substr(colon + 1);
  const bool has_arg = colon != std::string_view::npos;
  using k = distribution::kind;
  if (name == "uniform" || name == "equal" || name == "sorted" || name == "reverse" ||
      name == "special") {
    if (has_arg) return bad("takes no parameter");
    d.what = name == "uniform" ? k::uniform
             : name == "special" ? k::special
             : name == "equal" ? k::equal
             : name == "sorted" ? k::sorted
                                : k::reverse;
    return d;
  }
  if (!has_arg) return bad("needs a parameter");
  if (name == "and") {
    d.what = k::and_words;
    if (!parse_number(arg, d.and_words) || d.and_words < 1 || d.and_words > 64)
      return bad("Q must be an integer from 1 to 64");
    return d;
  }
  if (name == "zipf") {
    d.what = k::zipf;
    const std::size_t c2 = arg.find(':');
    const std::string_view exponent = arg.substr(0, c2);
    if (!parse_number(exponent, d.zipf_exponent) || !(d.zipf_exponent >= 0) ||
        !(d.zipf_exponent <= 100))
      return bad("S must be a number from 0 to 100");
    if (c2 != std::string_view::npos &&
        (!parse_number(arg.substr(c2 + 1), d.zipf_domain) || d.zipf_domain < 1))
      return bad("D must be a positive integer");
    return d;
  }
  if (name == "nearly") {
    d.what = k::nearly;
    if (!parse_number(arg, d.swap_fraction) || !(d.swap_fraction >= 0) ||
        !(d.swap_fraction <= 0.5))
      return bad("F must be a fraction from 0 to 0.5");
    return d;
  }
  if (name == "few") {
    d.what = k::few;
    if (!parse_number(arg, d.distinct) || d.distinct < 1)
      return bad("K must be a positive integer");
    return d;
  }
  return bad("unknown name");
}

std::string distribution_name(const distribution& d) {
  using k = distribution::kind;
  switch (d.what) {
    case k::uniform: return "uniform";
    case k::special: return "special";
    case k::and_words: return "and:" + std::to_string(d.and_words);
    case k::equal: return "equal";
    case k::zipf: {
      std::string s = "zipf:";
      s += number_text(d.zipf_exponent);
      if (d.zipf_domain != 0) {
        s += ':';
        s += std::to_string(d.zipf_domain);
      }
      return s;
    }
    case k::sorted: return "sorted";
    case k::reverse: return "reverse";
    case k::nearly: return "nearly:" + number_text(d.swap_fraction);
    case k::few: return "few:" + std::to_string(d.distinct);
  }
  return "?";
}

void record_generator::feistel::init(unsigned half, std::uint64_t seed) {
  half_bits = half;
  mask = low_mask(half);
  for (std::uint64_t r = 0; r < std::size(keys); ++r) keys[r] = hash2(seed, r);
}

std::uint64_t record_generator::feistel::forward(std::uint64_t x) const noexcept {
  std::uint64_t left = (x >> half_bits) & mask;
  std::uint64_t right = x & mask;
  for (const std::uint64_t key : keys) {
    const std::uint64_t t = right;
    right = left ^ feistel_round(right, key, mask);
    left = t;
  }
  return (left << half_bits) | right;
}

std::uint64_t record_generator::feistel::backward(std::uint64_t x) const noexcept {
  std::uint64_t left = (x >> half_bits) & mask;
  std::uint64_t right = x & mask;
  for (std::size_t r = std::size(keys); r-- > 0;) {
    const std::uint64_t t = left;
    left = right ^ feistel_round(left, keys[r], mask);
    right = t;
  }
  return (left << half_bits) | right;
}

record_generator::record_generator(const generator_config& config) : config_(config) {
  const record_format& f = config_.format;
  f.validate();
  GPUSORT_EXPECTS(f.record_size <= max_record_size,
                  "records of " + std::to_string(f.record_size) +
                      " bytes are too large for the generator (at most 16 MiB)");
  GPUSORT_EXPECTS(config_.count <= (std::uint64_t{1} << 62) / f.record_size,
                  "too many records: " + std::to_string(config_.count));
  block_records_ = std::clamp<std::uint64_t>(block_bytes_target / f.record_size, 1,
                                             max_block_records);
  word_bits_ = key_word_bits(f);
  is_float_ = is_float_type(f.type);
  gensort_ = is_gensort_layout(f);

  // The ordered words keys may take: all of them, or the finite floats only.
  span_ = static_cast<uint128>(1) << word_bits_;
  if (is_float_ && config_.finite) {
    const std::uint64_t sign = std::uint64_t{1} << (word_bits_ - 1);
    const std::uint64_t exponent = float_exponent_mask(f.type);
    // In the ordered space, -max is just above -inf = ~raw(-inf), +max just below sign|+inf.
    lo_ = (~(sign | exponent) & low_mask(word_bits_)) + 1;
    const std::uint64_t hi = (exponent | sign) - 1;
    span_ = static_cast<uint128>(hi - lo_) + 1;
  }
  equal_value_ = scale(hash2(config_.seed ^ stream_equal, 0));
  if (config_.count > 0) {
    // span / count in 64.64 fixed point, rounded down; span * 2^64 - 1 fits in 128 bits.
    const uint128 scaled_span = span_ >> 64 ? ~uint128{0} : (span_ << 64) - 1;
    step_ = scaled_span / config_.count;
  }

  const distribution& d = config_.dist;
  using k = distribution::kind;
  if (d.what == k::zipf) {
    const std::uint64_t space_limit =
        word_bits_ >= 64 ? ~std::uint64_t{0} : std::uint64_t{1} << word_bits_;
    std::uint64_t domain = d.zipf_domain != 0 ? d.zipf_domain
                                              : std::min<std::uint64_t>(space_limit, 1ull << 32);
    GPUSORT_EXPECTS(domain <= space_limit, "zipf domain " + std::to_string(domain) +
                                               " is larger than the key space");
    GPUSORT_EXPECTS(domain <= (std::uint64_t{1} << 53),
                    "zipf domain " + std::to_string(domain) + " is larger than 2^53");
    const double s = d.zipf_exponent;
    zipf_n_ = static_cast<double>(domain);
    auto h = [s](double x) { return std::exp(-s * std::log(x)); };
    auto big_h = [s](double x) {
      const double lx = std::log(x);
      return expm1_over_x((1 - s) * lx) * lx;
    };
    auto big_h_inv = [s](double y) {
      const double t = std::max(-1.0, y * (1 - s));
      return std::exp(log1p_over_x(t) * y);
    };
    zipf_h_x1_ = big_h(1.5) - 1;
    zipf_h_n_ = big_h(zipf_n_ + 0.5);
    zipf_threshold_ = 2 - big_h_inv(big_h(2.5) - h(2));
    scatter_key_ = hash2(config_.seed ^ stream_key_perm, 0);
  }
  if (d.what == k::nearly && config_.count >= 2) {
    const auto swaps = static_cast<std::uint64_t>(
        std::llround(d.swap_fraction * static_cast<double>(config_.count)));
    swapped_ = 2 * std::min(swaps, config_.count / 2);
    const unsigned bits = std::max(2u, static_cast<unsigned>(std::bit_width(config_.count - 1)));
    swap_permutation_.init((bits + 1) / 2, config_.seed ^ stream_swaps);
  }
  if (d.what == k::special) edges_ = edge_keys(f, config_.finite);
  GPUSORT_EXPECTS(d.what != k::few || d.distinct >= 1, "few:K needs K >= 1");
  GPUSORT_EXPECTS(d.what != k::and_words || (d.and_words >= 1 && d.and_words <= 64),
                  "and:Q needs 1 <= Q <= 64");
}

std::uint64_t record_generator::scale(std::uint64_t word) const {
  const std::uint64_t w = word & low_mask(word_bits_);
  return lo_ + static_cast<std::uint64_t>((static_cast<uint128>(w) * span_) >> word_bits_);
}

std::uint64_t record_generator::scatter(std::uint64_t x) const {
  // Xor-shifts and odd multiplies modulo 2^W: each step is a bijection of W-bit words.
  const unsigned half = word_bits_ / 2;
  const std::uint64_t mask = low_mask(word_bits_);
  x = (x ^ scatter_key_) & mask;
  x ^= x >> half;
  x = (x * 0xbf58476d1ce4e5b9ull) & mask;
  x ^= x >> half;
  x = (x * 0x94d049bb133111ebull) & mask;
  x ^= x >> half;
  return x;
}

std::uint64_t record_generator::draw_word(block_rng& rng) const {
  std::uint64_t w = rng.next();
  if (config_.dist.what == distribution::kind::and_words)
    for (unsigned q = 1; q < config_.dist.and_words; ++q) w &= rng.next();
  return w;
}

std::uint64_t record_generator::sorted_value(std::uint64_t index) const {
  // Evenly spaced slots over the key space, each key at a random place inside its own slot:
  // ascending, and as varied in its low bits as a sorted uniform sample.
  const uint128 base = slot_start(index);
  const uint128 gap = slot_start(index + 1) - base;  // <= 2^64
  const uint128 jitter =
      (static_cast<uint128>(hash2(config_.seed ^ stream_jitter, index)) * gap) >> 64;
  return lo_ + static_cast<std::uint64_t>(base + jitter);
}

uint128 record_generator::slot_start(std::uint64_t index) const {
  // index * step_ / 2^64, with step_ = span / count in 64.64 fixed point: a multiply instead of
  // a 128-bit division per key. Any non-decreasing slot start keeps the keys sorted.
  const auto step_high = static_cast<std::uint64_t>(step_ >> 64);
  const auto step_low = static_cast<std::uint64_t>(step_);
  return static_cast<uint128>(index) * step_high + mul_high(index, step_low);
}

std::uint64_t record_generator::swap_partner(std::uint64_t index) const {
  if (swapped_ == 0) return index;
  // Position p holds rank sigma^-1(p); ranks 0..swapped_-1 are paired (0,1), (2,3), ...
  const std::uint64_t n = config_.count;
  std::uint64_t rank = index;
  do rank = swap_permutation_.backward(rank);
  while (rank >= n);
  if (rank >= swapped_) return index;
  std::uint64_t partner = rank ^ 1;
  do partner = swap_permutation_.forward(partner);
  while (partner >= n);
  return partner;
}

std::uint64_t record_generator::zipf_rank(block_rng& rng) const {
  for (;;) {
    const double u = zipf_h_n_ + rng.unit() * (zipf_h_x1_ - zipf_h_n_);
    const double s = config_.dist.zipf_exponent;
    const double t = std::max(-1.0, u * (1 - s));
    const double x = std::exp(log1p_over_x(t) * u);
    const double k = std::clamp(std::floor(x + 0.5), 1.0, zipf_n_);
    if (k - x <= zipf_threshold_) return static_cast<std::uint64_t>(k);
    const double lk = std::log(k + 0.5);
    const double h_k = std::exp(-s * std::log(k));
    if (u >= expm1_over_x((1 - s) * lk) * lk - h_k) return static_cast<std::uint64_t>(k);
  }
}

std::uint64_t record_generator::ordered_value(std::uint64_t index, block_rng& rng) const {
  using k = distribution::kind;
  switch (config_.dist.what) {
    case k::equal: return equal_value_;
    case k::sorted: return sorted_value(index);
    case k::reverse: return sorted_value(config_.count - 1 - index);
    case k::nearly: return sorted_value(swap_partner(index));
    case k::few:
      return scale(hash2(config_.seed ^ stream_few, mul_high(rng.next(), config_.dist.distinct)));
    case k::zipf: return scale(scatter(zipf_rank(rng) - 1));
    default: break;
  }
  return 0;
}

void record_generator::emit_raw_key(std::byte* key, block_rng& rng) const {
  const record_format& f = config_.format;
  if (f.type == key_type::bytes) {
    for (std::uint32_t off = 0; off < f.key_size; off += 8) {
      const std::uint64_t w = draw_word(rng);
      std::memcpy(key + off, &w, std::min<std::uint32_t>(8, f.key_size - off));
    }
    return;
  }
  const std::uint64_t exponent = is_float_ ? float_exponent_mask(f.type) : 0;
  std::uint64_t w = 0;
  do w = draw_word(rng);
  while (is_float_ && config_.finite && (w & exponent) == exponent);
  if (word_bits_ == 32) {
    const auto v = static_cast<std::uint32_t>(w);
    std::memcpy(key, &v, 4);
  } else {
    std::memcpy(key, &w, 8);
  }
}

void record_generator::emit_ordered_key(std::byte* key, std::uint64_t ordered) const {
  const record_format& f = config_.format;
  if (f.type != key_type::bytes) {
    const std::uint64_t raw = ordered_to_raw(ordered, f.type, word_bits_);
    if (word_bits_ == 32) {
      const auto v = static_cast<std::uint32_t>(raw);
      std::memcpy(key, &v, 4);
    } else {
      std::memcpy(key, &raw, 8);
    }
    return;
  }
  // Byte strings: the ordered word big-endian in the leading bytes (so memcmp order follows
  // it), the rest a function of the word (so equal words make equal keys).
  const std::uint32_t head = std::min<std::uint32_t>(f.key_size, 8);
  for (std::uint32_t j = 0; j < head; ++j)
    key[j] = static_cast<std::byte>(ordered >> (8 * (head - 1 - j)));
  for (std::uint32_t off = 8, t = 0; off < f.key_size; off += 8, ++t) {
    const std::uint64_t w = hash2(ordered ^ stream_key_tail, t);
    std::memcpy(key + off, &w, std::min<std::uint32_t>(8, f.key_size - off));
  }
}

void record_generator::emit_special_key(std::byte* key, block_rng& rng) const {
  if ((rng.next() & 3) != 0) {
    emit_raw_key(key, rng);
    return;
  }
  const std::uint64_t edge = edges_[mul_high(rng.next(), edges_.size())];
  const record_format& f = config_.format;
  if (f.type == key_type::bytes) {
    std::memset(key, static_cast<int>((edge >> 8) & 0xff), f.key_size);
    key[0] = static_cast<std::byte>(edge & 0xff);
    if (f.key_size > 1) key[f.key_size - 1] = static_cast<std::byte>((edge >> 16) & 0xff);
  } else if (word_bits_ == 32) {
    const auto v = static_cast<std::uint32_t>(edge);
    std::memcpy(key, &v, 4);
  } else {
    std::memcpy(key, &edge, 8);
  }
}

void record_generator::emit_key(std::byte* key, std::uint64_t index, block_rng& rng) const {
  using k = distribution::kind;
  if (config_.dist.what == k::special) {
    emit_special_key(key, rng);
    return;
  }
  if (config_.dist.what == k::uniform || config_.dist.what == k::and_words)
    emit_raw_key(key, rng);
  else
    emit_ordered_key(key, ordered_value(index, rng));
}

void record_generator::emit_payload(std::byte* record, std::uint64_t index) const {
  const record_format& f = config_.format;
  if (gensort_) {
    // gensort's binary record: key(10) 00 11 | record number, 32 hex digits | 88 99 AA BB |
    // 48 filler bytes (12 hex digits, each 4 times) | CC DD EE FF.
    static constexpr unsigned char break1[] = {0x00, 0x11};
    static constexpr unsigned char break2[] = {0x88, 0x99, 0xAA, 0xBB};
    static constexpr unsigned char break3[] = {0xCC, 0xDD, 0xEE, 0xFF};
    std::memcpy(record + 10, break1, 2);
    std::memset(record + 12, '0', 16);
    for (int i = 0; i < 16; ++i)
      record[12 + 16 + i] = static_cast<std::byte>(hex_digits[(index >> (4 * (15 - i))) & 0xf]);
    std::memcpy(record + 44, break2, 4);
    const std::uint64_t h = hash2(config_.seed ^ stream_payload, index);
    for (int i = 0; i < 12; ++i)
      std::memset(record + 48 + 4 * i, hex_digits[(h >> (4 * i)) & 0xf], 4);
    std::memcpy(record + 96, break3, 4);
    return;
  }
  const index_field field = locate_index(f);
  const std::uint32_t covered = f.key_size + field.width;
  if (covered < f.record_size) {
    // Filler for the bytes that are neither key nor index: a hash stream of the index. The key
    // and the index are written over it.
    const std::uint64_t base = hash2(config_.seed ^ stream_payload, index);
    for (std::uint32_t off = 0, t = 0; off < f.record_size; off += 8, ++t) {
      const std::uint64_t w = mix64(base + t * 0x9e3779b97f4a7c15ull);
      std::memcpy(record + off, &w, std::min<std::uint32_t>(8, f.record_size - off));
    }
  }
  if (field.how == index_field::encoding::little_endian)
    std::memcpy(record + field.offset, &index, field.width);
}

void record_generator::generate_block(std::uint64_t block, std::span<std::byte> dst) const {
  const std::uint32_t rs = config_.format.record_size;
  const std::uint64_t n = dst.size() / rs;
  const std::uint64_t first = block * block_records_;
  GPUSORT_EXPECTS(dst.size() % rs == 0 && n <= block_records_ && first + n <= config_.count,
                  "generate_block: range outside block " + std::to_string(block));
  const bool payload = !config_.format.key_only();
  block_rng rng(hash2(config_.seed ^ stream_blocks, block));
  std::byte* rec = dst.data();
  for (std::uint64_t j = 0; j < n; ++j, rec += rs) {
    if (payload) emit_payload(rec, first + j);
    emit_key(rec + config_.format.key_offset, first + j, rng);
  }
}

void record_generator::generate(std::uint64_t first, std::uint64_t count,
                                std::span<std::byte> dst) const {
  const std::uint64_t rs = config_.format.record_size;
  GPUSORT_EXPECTS(first % block_records_ == 0 && first + count <= config_.count &&
                      (count % block_records_ == 0 || first + count == config_.count) &&
                      dst.size() == count * rs,
                  "generate: records " + std::to_string(first) + "+" + std::to_string(count) +
                      " do not fall on block boundaries");
  const std::uint64_t blocks = (count + block_records_ - 1) / block_records_;
  const std::uint64_t first_block = first / block_records_;
  tbb::parallel_for(tbb::blocked_range<std::uint64_t>(0, blocks),
                    [&](const tbb::blocked_range<std::uint64_t>& r) {
                      for (std::uint64_t b = r.begin(); b != r.end(); ++b) {
                        const std::uint64_t begin = b * block_records_;
                        const std::uint64_t n = std::min(block_records_, count - begin);
                        generate_block(first_block + b, dst.subspan(begin * rs, n * rs));
                      }
                    });
}

void write_records(const generator_config& config, const std::string& path,
                   io::write_method method) {
  const record_generator gen(config);
  const std::uint64_t rs = config.format.record_size;
  const std::uint64_t total = config.count * rs;
  io::output_file out(path);
  const std::unique_ptr<io::output_sink> sink = io::make_output_sink(out, total, method);
  // Windows hold whole blocks, so each is generated independently of the others.
  const std::uint64_t block_bytes = gen.block_records() * rs;
  const std::uint64_t window_records =
      std::max<std::uint64_t>(1, sink->max_window() / block_bytes) * gen.block_records();
  const std::uint64_t windows = (config.count + window_records - 1) / window_records;
  auto fill = [&](std::uint64_t w) {
    const std::uint64_t first = w * window_records;
    const std::uint64_t n = std::min(window_records, config.count - first);
    const std::span<std::byte> window = sink->acquire(first * rs, n * rs);
    gen.generate(first, n, window);
    sink->commit(first * rs, window);
  };
  if (sink->parallel_writes()) {
    // Mapped windows may be filled in any order: each thread maps (and so populates) its own.
    tbb::parallel_for(std::uint64_t{0}, windows, fill);
  } else {
    // Staged windows go out in order (a pipe needs it); the writer thread overlaps the next fill.
    for (std::uint64_t w = 0; w < windows; ++w) fill(w);
  }
  sink->finish();
  out.commit(/*fsync=*/false, total);
}

}  // namespace gpusort::tools
