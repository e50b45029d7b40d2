// Neighbour comparisons over blocks of records, in parallel: each block compares its records
// with the one in front of them, so block boundaries need no second pass.
#include "cpu/key_order.hpp"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <vector>

#include "cpu/merge_keys.hpp"
#include "gpusort/detail/key_codec.hpp"

namespace gpusort::cpu {
namespace {

using detail::with_keys;

/// Records per task: large enough that a task's cost dwarfs scheduling it.
constexpr std::uint64_t block_records = std::uint64_t{1} << 16;

template <typename Keys>
bool equal_keys(const Keys& keys, const typename Keys::key& a, const typename Keys::key& b) {
  return !keys.less(a, b) && !keys.less(b, a);
}

template <typename T>
std::string number_text(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
  return ec == std::errc{} ? std::string(buf, end) : std::string("?");
}

}  // namespace

std::optional<std::uint64_t> first_disorder(const std::byte* records, std::uint64_t count,
                                            const std::byte* previous,
                                            const record_format& format, bool descending,
                                            bool strict) {
  const std::uint64_t rec = format.record_size;
  const std::uint64_t blocks = (count + block_records - 1) / block_records;
  std::atomic<std::uint64_t> first{count};
  with_keys(format, descending, [&](const auto& keys) {
    tbb::parallel_for(std::uint64_t{0}, blocks, [&](std::uint64_t b) {
      const std::uint64_t begin = b * block_records;
      const std::uint64_t end = std::min(count, begin + block_records);
      if (begin >= first.load(std::memory_order_relaxed)) return;  // an earlier one is known
      const std::byte* before = begin > 0 ? records + (begin - 1) * rec : previous;
      auto prev_key = before != nullptr ? keys.load(before) : keys.load(records + begin * rec);
      for (std::uint64_t i = before != nullptr ? begin : begin + 1; i < end; ++i) {
        const auto key = keys.load(records + i * rec);
        if (keys.less(key, prev_key) || (strict && !keys.less(prev_key, key))) {
          std::uint64_t seen = first.load(std::memory_order_relaxed);
          while (i < seen && !first.compare_exchange_weak(seen, i)) {
          }
          return;
        }
        prev_key = key;
      }
    });
  });
  const std::uint64_t at = first.load();
  if (at == count) return std::nullopt;
  return at;
}

std::uint64_t unique_records(const std::byte* src, std::uint64_t count, const std::byte* previous,
                             std::byte* dst, const record_format& format) {
  if (count == 0) return 0;
  const std::uint64_t rec = format.record_size;
  std::uint64_t kept_total = 0;
  with_keys(format, false, [&](const auto& keys) {
    // Keeps the records of [begin, end) that differ from the one in front, at `out`.
    auto keep = [&](std::uint64_t begin, std::uint64_t end, std::byte* out) {
      std::uint64_t kept = 0;
      const std::byte* before = begin > 0 ? src + (begin - 1) * rec : previous;
      bool have_prev = before != nullptr;
      auto prev_key = have_prev ? keys.load(before) : keys.load(src);
      for (std::uint64_t i = begin; i < end; ++i) {
        const std::byte* r = src + i * rec;
        const auto key = keys.load(r);
        if (!have_prev || !equal_keys(keys, prev_key, key)) {
          if (out != nullptr) {
            std::byte* d = out + kept * rec;
            if (d != r) std::memmove(d, r, rec);
          }
          ++kept;
        }
        // A dropped record equals the kept one in front of it: comparing with either is alike.
        prev_key = key;
        have_prev = true;
      }
      return kept;
    };
    if (dst == src || count <= block_records) {
      kept_total = keep(0, count, dst);
      return;
    }
    const std::uint64_t blocks = (count + block_records - 1) / block_records;
    std::vector<std::uint64_t> kept(blocks + 1, 0);
    tbb::parallel_for(std::uint64_t{0}, blocks, [&](std::uint64_t b) {
      kept[b + 1] = keep(b * block_records, std::min(count, (b + 1) * block_records), nullptr);
    });
    for (std::uint64_t b = 0; b < blocks; ++b) kept[b + 1] += kept[b];
    tbb::parallel_for(std::uint64_t{0}, blocks, [&](std::uint64_t b) {
      keep(b * block_records, std::min(count, (b + 1) * block_records), dst + kept[b] * rec);
    });
    kept_total = kept[blocks];
  });
  return kept_total;
}

std::string key_text(const std::byte* record, const record_format& format) {
  const std::byte* key = record + format.key_offset;
  switch (format.type) {
    case key_type::u32: return number_text<std::uint32_t>(key);
    case key_type::u64: return number_text<std::uint64_t>(key);
    case key_type::i32: return number_text<std::int32_t>(key);
    case key_type::i64: return number_text<std::int64_t>(key);
    case key_type::f32: return number_text<float>(key);
    case key_type::f64: return number_text<double>(key);
    case key_type::bytes: break;
  }
  static constexpr char digits[] = "0123456789abcdef";
  constexpr std::uint32_t shown_bytes = 32;
  std::string s = "0x";
  for (std::uint32_t i = 0; i < std::min(format.key_size, shown_bytes); ++i) {
    const auto b = static_cast<unsigned>(key[i]);
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  if (format.key_size > shown_bytes) s += "...";
  return s;
}

}  // namespace gpusort::cpu
