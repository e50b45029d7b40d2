// The vector merge's AVX-512 kernels (see merge_vector.hpp). This file alone is compiled with
// -mavx512f; it instantiates no standard-library template, so that no code generated for
// AVX-512 can stand in for an inline function that the rest of the program shares.
#include "cpu/merge_vector.hpp"

#if defined(__x86_64__)

#include <immintrin.h>

// GCC 12's AVX-512 headers start some intrinsics from a deliberately undefined vector, which
// -Wmaybe-uninitialized (or -Wuninitialized, where the merge step is a function of its own)
// reports once they are inlined here.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace gpusort::cpu::detail {
namespace {

constexpr std::uint32_t lanes = 8;
/// Whether `layout` carries payloads in vectors of their own (16-byte records); the others
/// travel as one 64-bit word per record.
constexpr bool separate_values(vector_layout layout) {
  return layout == vector_layout::key_value || layout == vector_layout::value_key;
}

/// Vectors per merge step (block<V> takes any power of two), by layout. The step's carry (the
/// largest records so far) is a chain of dependent instructions from one step to the next:
/// more records per step shorten it per record, and the vectors of a step run side by side.
/// Four vectors for keys alone: 20% faster than two on the development VM's AMD cores; on the
/// GPU machine's Intel cores 0-10% slower while minima and maxima shared one port
/// (tools/bench/results/2026-11-25-h100-merge-vector/ab.txt), and 3-4% faster once the
/// maxima took ternary logic (exchange_vectors; medians of 6 paired rounds on 16 threads,
/// 2026-11-27-h100-merge-v4). With payloads four run out of registers.
constexpr int step_vectors(vector_layout layout) { return separate_values(layout) ? 2 : 4; }
constexpr std::uint32_t max_step_records = 4 * lanes;

/// The root writes whole cache lines of the output with non-temporal stores, which need not
/// read the lines first: 3-29% faster on the GPU machine's 16 cores, 8- and 16-byte records,
/// 16 and 64 runs (tools/bench/results/2026-11-25-h100-merge-vector/variants.txt).
constexpr bool stream_output = true;

/// Records per tree vertex buffer: a multiple of the step. Each refill of a vertex costs a walk
/// down the tree and a save of the carry, so larger buffers spend less of the merge on
/// refills; but the buffers of the tree should stay in the 2 MiB L2 cache of the GPU machine's
/// cores. Keys alone take up to 2048 records (16 KiB a vertex), as many as 2 MiB hold for the
/// fan-in: 2048 up to 64 runs, 512 at 256 (so never more memory than records with payloads
/// take). Against 512 everywhere, 2048 merged 64 runs 7.6% faster on the H200 host's 16 cores
/// and 16 runs 4% (tools/bench/results/2026-11-28-h200-merge-buffers). Records with payloads
/// keep 512 (8 KiB of keys and 8 of payloads): at 1024 they lost 9% over 64 runs.
constexpr std::uint32_t key_buffer_max_records = 2048;
constexpr std::uint32_t value_buffer_records = 512;
constexpr std::size_t key_buffers_bytes = std::size_t{2} << 20;
static_assert(key_buffer_max_records % max_step_records == 0);
static_assert(value_buffer_records % max_step_records == 0);

constexpr std::size_t cache_line = 64;

constexpr std::size_t round_up(std::size_t bytes) {
  return (bytes + cache_line - 1) / cache_line * cache_line;
}

constexpr std::uint64_t min_u64(std::uint64_t a, std::uint64_t b) { return a < b ? a : b; }

/// A leaf (one input) or an inner node (the merge of two vertices) of the merge tree, with the
/// buffer of normalized keys (and payloads) its parent reads: records pos to len are still
/// unread, at `keys[i & mask]`, and `done` says that nothing more will come once they are read.
/// An inner vertex's buffer is a ring (pos and len run on; mask is its size less one), so that
/// it can be topped up before it runs dry; a leaf's window is refilled only once read (mask all
/// ones).
struct alignas(cache_line) vertex {
  std::uint64_t carry_keys[max_step_records];  ///< inner: the largest records merged so far
  std::uint64_t carry_values[max_step_records];
  std::uint64_t* buffer;  ///< its own: keys, then payloads
  /// What the parent reads: the buffer, or a leaf's input itself where that is already keys
  /// in merge order (fill_leaf).
  const std::uint64_t* keys;
  std::uint64_t* values;  ///< null for key-only records
  std::uint32_t pos;
  std::uint32_t len;
  std::uint32_t mask;
  bool done;
  bool leaf;
  bool started;  ///< inner: the carry holds the first step of a child
  std::uint32_t left;   ///< inner: vertex indexes of the children
  std::uint32_t right;
  const std::byte* next;    ///< leaf: the next record not yet read
  std::uint64_t remaining;  ///< leaf: records not yet read
};

std::uint32_t vertex_count(std::size_t runs) { return static_cast<std::uint32_t>(2 * runs - 1); }

/// Records per vertex buffer of a tree over `runs` inputs.
std::uint32_t buffer_records_for(vector_layout layout, std::size_t runs) {
  if (separate_values(layout)) return value_buffer_records;
  std::uint32_t records = key_buffer_max_records;
  while (records > value_buffer_records &&
         std::size_t{vertex_count(runs)} * records * sizeof(std::uint64_t) > key_buffers_bytes)
    records /= 2;
  return records;
}

std::size_t buffer_bytes(vector_layout layout, std::size_t runs) {
  return std::size_t{buffer_records_for(layout, runs)} * sizeof(std::uint64_t) *
         (separate_values(layout) ? 2 : 1);
}

// --- Bitonic networks. A block holds the records of one step, V vectors, in ascending key
// order: keys in k[0] (lanes 0-7), k[1] (8-15), ..., payloads in v beside them (unused for
// key-only records). Keys move by min and max; a payload follows its key by comparing where
// the key ended up.

template <int V>
struct block {
  __m512i k[V];
  __m512i v[V];
};

inline __m512i reverse(__m512i x) {
  return _mm512_permutexvar_epi64(_mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7), x);
}

/// Lane-wise compare-exchange of two vectors: the smaller keys to (lk, lv), the larger to
/// (hk, hv). With equal keys the low side keeps its own record.
template <bool Values>
inline void exchange_vectors(__m512i& lk, __m512i& lv, __m512i& hk, __m512i& hv) {
  const __m512i low = _mm512_min_epu64(lk, hk);
  // The larger is the XOR of both with the smaller: one ternary-logic instruction, which
  // Intel cores issue on two ports, where the 64-bit max needs the port that every min takes.
  // On one core of the GPU machine, 16-byte records merged 6-15% faster, 8-byte ones alike
  // (tools/bench/results/2026-11-27-h100-merge-ports).
  const __m512i high = _mm512_ternarylogic_epi64(lk, hk, low, 0x96);
  if constexpr (Values) {
    const __mmask8 kept = _mm512_cmpeq_epu64_mask(low, lk);
    const __m512i low_v = _mm512_mask_blend_epi64(kept, hv, lv);
    hv = _mm512_mask_blend_epi64(kept, lv, hv);
    lv = low_v;
  }
  lk = low;
  hk = high;
}

/// Sorts two bitonic vectors (a, b) at once: at distances 4, 2 and 1, two shuffles first line
/// up the lanes to compare in two vectors, so that each stage is one min and one max for both
/// vectors (sorting each vector alone takes a permute, a min and a max per vector and stage;
/// the 64-bit min and max are the scarcer instructions). Payloads take the same shuffles.
template <bool Values>
inline void clean_pair(__m512i& ak, __m512i& av, __m512i& bk, __m512i& bv) {
  // d4: a0-3 | b0-3 against a4-7 | b4-7.
  constexpr int lower = _MM_SHUFFLE(1, 0, 1, 0);
  constexpr int upper = _MM_SHUFFLE(3, 2, 3, 2);
  __m512i xk = _mm512_shuffle_i64x2(ak, bk, lower);
  __m512i yk = _mm512_shuffle_i64x2(ak, bk, upper);
  __m512i xv = Values ? _mm512_shuffle_i64x2(av, bv, lower) : xk;
  __m512i yv = Values ? _mm512_shuffle_i64x2(av, bv, upper) : yk;
  exchange_vectors<Values>(xk, xv, yk, yv);  // x: a0 a1 a2 a3 b0 b1 b2 b3, y: a4-7 b4-7
  // d2: a0 a1 a4 a5 b0 b1 b4 b5 against a2 a3 a6 a7 b2 b3 b6 b7.
  const __m512i even_pairs = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
  const __m512i odd_pairs = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
  __m512i pk = _mm512_permutex2var_epi64(xk, even_pairs, yk);
  __m512i qk = _mm512_permutex2var_epi64(xk, odd_pairs, yk);
  __m512i pv = Values ? _mm512_permutex2var_epi64(xv, even_pairs, yv) : pk;
  __m512i qv = Values ? _mm512_permutex2var_epi64(xv, odd_pairs, yv) : qk;
  exchange_vectors<Values>(pk, pv, qk, qv);
  // d1: even positions against odd ones, each 128-bit lane one pair.
  xk = _mm512_unpacklo_epi64(pk, qk);
  yk = _mm512_unpackhi_epi64(pk, qk);
  xv = Values ? _mm512_unpacklo_epi64(pv, qv) : xk;
  yv = Values ? _mm512_unpackhi_epi64(pv, qv) : yk;
  exchange_vectors<Values>(xk, xv, yk, yv);  // x: a0 a2 a4 a6 b0 b2 b4 b6, y: the odd ones
  const __m512i first = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
  const __m512i second = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
  ak = _mm512_permutex2var_epi64(xk, first, yk);
  bk = _mm512_permutex2var_epi64(xk, second, yk);
  if constexpr (Values) {
    av = _mm512_permutex2var_epi64(xv, first, yv);
    bv = _mm512_permutex2var_epi64(xv, second, yv);
  }
}

/// Sorts a bitonic block: whole vectors at distances V/2 down to 1, then within vectors.
template <bool Values, int V>
inline void clean_block(block<V>& b) {
  for (int d = V / 2; d >= 1; d /= 2)
    for (int i = 0; i < V; ++i)
      if ((i & d) == 0) exchange_vectors<Values>(b.k[i], b.v[i], b.k[i + d], b.v[i + d]);
  for (int i = 0; i < V; i += 2) clean_pair<Values>(b.k[i], b.v[i], b.k[i + 1], b.v[i + 1]);
}

/// Merges the sorted blocks `carry` and `in`: the smaller half of their records to `low`, the
/// larger half to `carry`.
template <bool Values, int V>
inline void merge_blocks(block<V>& carry, const block<V>& in, block<V>& low) {
  for (int i = 0; i < V; ++i) {
    low.k[i] = reverse(in.k[V - 1 - i]);
    low.v[i] = Values ? reverse(in.v[V - 1 - i]) : low.k[i];
    exchange_vectors<Values>(low.k[i], low.v[i], carry.k[i], carry.v[i]);
  }
  clean_block<Values>(low);
  clean_block<Values>(carry);
}

// --- The tree.

template <vector_layout Layout>
class merge_tree {
 public:
  static constexpr bool has_values = separate_values(Layout);
  /// A 32-bit key, carried in the upper half of a word whose lower half is zero.
  static constexpr bool narrow = Layout == vector_layout::key32;
  static constexpr std::uint32_t record_bytes = has_values ? 16 : narrow ? 4 : 8;
  /// Whole cache lines go past the caches only where eight records fill them.
  static constexpr bool streams = stream_output && lanes * record_bytes % cache_line == 0;
  static constexpr int V = step_vectors(Layout);
  static constexpr std::uint32_t step = V * lanes;
  using step_block = block<V>;

  merge_tree(const vector_input* inputs, std::size_t runs, const vector_key_masks& masks,
             std::byte* scratch)
      : vertices_(reinterpret_cast<vertex*>(scratch)),
        buffers_(scratch + round_up(vertex_count(runs) * sizeof(vertex))),
        buffer_records_(buffer_records_for(Layout, runs)),
        buffer_bytes_(buffer_bytes(Layout, runs)),
        sign_(key_mask(masks.sign_mask)),
        float_(key_mask(masks.float_mask)),
        order_(key_mask(masks.order_mask)),
        padding_(_mm512_set1_epi64(-1)),
        keys_in_place_(Layout == vector_layout::key && masks.sign_mask == 0 &&
                       masks.float_mask == 0 && masks.order_mask == 0) {
    std::uint32_t next = 0;
    root_ = build(inputs, 0, runs, next);
  }

  /// Writes the merge; returns the records at the start of `out` that are final: `count`, or
  /// fewer where records with a payload and equal keys meet (those before the first of them).
  std::uint64_t run(std::byte* out, std::uint64_t count) {
    vertex& root = vertices_[root_];
    std::uint64_t written = 0;
    while (written < count) {
      refill(root);
      const std::uint32_t take = static_cast<std::uint32_t>(min_u64(root.len, count - written));
      bool tie_with_last = false;
      if (!store_records(root, take, out + written * record_bytes, written == 0, tie_with_last)) {
        if constexpr (streams) _mm_sfence();
        return tie_with_last ? written - 1 : written;
      }
      written += take;
    }
    if constexpr (streams) _mm_sfence();  // the streamed lines before the caller goes on
    return count;
  }

 private:
  std::uint32_t build(const vector_input* inputs, std::size_t lo, std::size_t hi,
                      std::uint32_t& next) {
    const std::uint32_t index = next++;
    vertices_[index] = vertex{};
    vertex& x = vertices_[index];
    std::byte* buffer = buffers_ + index * buffer_bytes_;
    x.buffer = reinterpret_cast<std::uint64_t*>(buffer);
    x.keys = x.buffer;
    x.values = has_values ? x.buffer + buffer_records_ : nullptr;
    x.mask = buffer_records_ - 1;
    if (hi - lo == 1) {
      x.leaf = true;
      x.mask = ~std::uint32_t{0};
      x.next = inputs[lo].data;
      x.remaining = inputs[lo].count;
      x.done = x.remaining == 0;
      return index;
    }
    const std::size_t mid = lo + (hi - lo) / 2;
    const std::uint32_t left = build(inputs, lo, mid, next);
    const std::uint32_t right = build(inputs, mid, hi, next);
    vertices_[index].left = left;
    vertices_[index].right = right;
    return index;
  }

  /// A mask of the key's bits where the key lies in the word: a narrow key's sign is the
  /// word's top bit too.
  static __m512i key_mask(std::uint64_t mask) {
    return _mm512_set1_epi64(static_cast<long long>(narrow ? mask << 32 : mask));
  }

  __m512i normalize(__m512i bits) const {
    const __m512i negative = _mm512_srai_epi64(bits, 63);
    return _mm512_xor_si512(
        _mm512_xor_si512(bits, _mm512_or_si512(_mm512_and_si512(negative, float_), sign_)),
        order_);
  }

  __m512i denormalize(__m512i key) const {
    const __m512i ordered = _mm512_xor_si512(key, order_);
    // After normalization a float's top bit is set exactly when it was non-negative.
    const __m512i was_negative = _mm512_andnot_si512(_mm512_srai_epi64(ordered, 63), float_);
    return _mm512_xor_si512(ordered, _mm512_or_si512(was_negative, sign_));
  }

  /// Loads `r` (1 to 8) records at `src` as normalized keys and payloads; missing lanes get the
  /// padding key.
  void load_records(const std::byte* src, std::uint32_t r, __m512i& k, __m512i& v) const {
    if constexpr (has_values) {
      const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
      const __m512i odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
      __m512i r0, r1;
      if (r == lanes) {
        r0 = _mm512_loadu_si512(src);
        r1 = _mm512_loadu_si512(src + 64);
      } else {
        r0 = _mm512_maskz_loadu_epi64(
            static_cast<__mmask8>(r >= 4 ? 0xFFu : (1u << (2 * r)) - 1), src);
        r1 = _mm512_maskz_loadu_epi64(
            static_cast<__mmask8>(r > 4 ? (1u << (2 * (r - 4))) - 1 : 0u), src + 64);
      }
      constexpr bool key_first = Layout == vector_layout::key_value;
      k = _mm512_permutex2var_epi64(r0, key_first ? even : odd, r1);
      v = _mm512_permutex2var_epi64(r0, key_first ? odd : even, r1);
    } else if constexpr (Layout == vector_layout::key32) {
      const __m512i keys32 =
          r == lanes ? _mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(
                           static_cast<const void*>(src))))
                     : _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << r) - 1), src);
      k = _mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(keys32)), 32);
      v = k;
    } else {
      k = r == lanes ? _mm512_loadu_si512(src)
                     : _mm512_maskz_loadu_epi64(static_cast<__mmask8>((1u << r) - 1), src);
      v = k;
    }
    k = normalize(k);
    if (r != lanes) k = _mm512_mask_mov_epi64(padding_, static_cast<__mmask8>((1u << r) - 1), k);
  }

  /// Stores the first `r` (1 to 8) records of normalized keys `k` and payloads `v` at `dst`;
  /// `stream`: eight records to 64-byte aligned `dst`, past the caches.
  void store_records8(std::byte* dst, std::uint32_t r, __m512i k, __m512i v,
                      bool stream = false) const {
    k = denormalize(k);
    if constexpr (has_values) {
      const __m512i low = _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0);
      const __m512i high = _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4);
      constexpr bool key_first = Layout == vector_layout::key_value;
      const __m512i r0 = key_first ? _mm512_permutex2var_epi64(k, low, v)
                                   : _mm512_permutex2var_epi64(v, low, k);
      const __m512i r1 = key_first ? _mm512_permutex2var_epi64(k, high, v)
                                   : _mm512_permutex2var_epi64(v, high, k);
      if (stream) {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), r0);
        _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + 64), r1);
      } else if (r == lanes) {
        _mm512_storeu_si512(dst, r0);
        _mm512_storeu_si512(dst + 64, r1);
      } else {
        _mm512_mask_storeu_epi64(dst, static_cast<__mmask8>(r >= 4 ? 0xFFu : (1u << (2 * r)) - 1),
                                 r0);
        _mm512_mask_storeu_epi64(
            dst + 64, static_cast<__mmask8>(r > 4 ? (1u << (2 * (r - 4))) - 1 : 0u), r1);
      }
    } else if constexpr (Layout == vector_layout::key32) {
      _mm512_mask_cvtepi64_storeu_epi32(dst, static_cast<__mmask8>((1u << r) - 1),
                                        _mm512_srli_epi64(k, 32));
    } else {
      if (stream) {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(dst), k);
      } else if (r == lanes) {
        _mm512_storeu_si512(dst, k);
      } else {
        _mm512_mask_storeu_epi64(dst, static_cast<__mmask8>((1u << r) - 1), k);
      }
    }
  }

  static step_block load_block(const std::uint64_t* keys, const std::uint64_t* values) {
    step_block b;
    for (int j = 0; j < V; ++j) {
      b.k[j] = _mm512_loadu_si512(keys + j * lanes);  // a leaf's input: 8-byte aligned
      b.v[j] = has_values ? _mm512_load_si512(values + j * lanes) : b.k[j];
    }
    return b;
  }

  static void store_block(std::uint64_t* keys, std::uint64_t* values, const step_block& b) {
    for (int j = 0; j < V; ++j) {
      _mm512_store_si512(keys + j * lanes, b.k[j]);
      if constexpr (has_values) _mm512_store_si512(values + j * lanes, b.v[j]);
    }
  }

  /// Reads the next records of a leaf's input into its buffer, normalized; the last step is
  /// padded with all-ones keys. Unsigned 64-bit keys in ascending order are their own
  /// normalized form: the parent then reads whole steps of them where they lie, and only the
  /// last, padded step goes through the buffer (one copy of every record fewer).
  void fill_leaf(vertex& x) {
    if (keys_in_place_ && x.remaining >= step) {
      const std::uint64_t whole = min_u64(x.remaining / step * step, buffer_records_);
      x.keys = reinterpret_cast<const std::uint64_t*>(x.next);
      x.next += whole * record_bytes;
      x.remaining -= whole;
      x.pos = 0;
      x.len = static_cast<std::uint32_t>(whole);
      x.done = x.remaining == 0;
      return;
    }
    x.keys = x.buffer;
    std::uint32_t n = 0;
    const std::byte* src = x.next;
    while (n < buffer_records_ && x.remaining != 0) {
      step_block b;
      const auto r = static_cast<std::uint32_t>(min_u64(x.remaining, step));
      for (std::uint32_t j = 0; j < V; ++j) {
        const std::uint32_t first = j * lanes;
        if (r >= first + lanes) {
          load_records(src + first * record_bytes, lanes, b.k[j], b.v[j]);
        } else if (r > first) {
          load_records(src + first * record_bytes, r - first, b.k[j], b.v[j]);
        } else {
          b.k[j] = padding_;
          b.v[j] = _mm512_setzero_si512();
        }
      }
      store_block(x.buffer + n, has_values ? x.values + n : nullptr, b);
      src += r * record_bytes;
      x.remaining -= r;
      n += step;
    }
    x.next = src;
    x.pos = 0;
    x.len = n;
    x.done = x.remaining == 0;
  }

  static bool dry(const vertex& x) { return x.pos == x.len; }

  /// Records an inner vertex's ring can still take: a multiple of the step.
  std::uint32_t space(const vertex& x) const { return buffer_records_ - (x.len - x.pos); }

  /// Makes `x` readable again where it ran dry.
  void refill(vertex& x) {
    if (!dry(x) || x.done) return;
    if (x.leaf) {
      fill_leaf(x);
      return;
    }
    x.pos = x.len = 0;  // from the ring's start: the root's records are then read in one piece
    start(x);
    step_block carry = load_block(x.carry_keys, x.carry_values);
    merge_alone(x, carry);
    store_block(x.carry_keys, x.carry_values, carry);
  }

  /// Refills the children of `x` where one of them ran dry.
  void refill_children(const vertex& x) {
    vertex& a = vertices_[x.left];
    vertex& b = vertices_[x.right];
    if ((dry(a) && !a.done) || (dry(b) && !b.done)) fill_pair(a, b);
  }

  /// Refills siblings. Where both are inner vertices of records that are keys alone, both rings
  /// are topped up and their merges take steps by turns in one loop: a merge step's carry is a
  /// chain of dependent instructions, and two independent chains keep the vector ports busier
  /// than one. On the H200 host's 16 cores (2^28 u64, paired rounds) that merged 16 runs 9.6%
  /// faster and 64 runs 1.8-5.9% (two hosts); records with payloads, whose two steps do not
  /// fit the vector registers together, lost 5-6% and are merged one vertex at a time
  /// (tools/bench/results/2026-11-28-h200-merge-buffers).
  void fill_pair(vertex& x, vertex& y) {
    if (has_values || x.leaf || y.leaf || x.done || y.done) {
      refill(x);
      refill(y);
      return;
    }
    if (dry(x)) x.pos = x.len = 0;
    if (dry(y)) y.pos = y.len = 0;
    start(x);
    start(y);
    step_block cx = load_block(x.carry_keys, x.carry_values);
    step_block cy = load_block(y.carry_keys, y.carry_values);
    merge_pair(x, y, cx, cy);
    merge_alone(x, cx);  // whichever still has room, or whose children ran out, goes on alone
    merge_alone(y, cy);
    store_block(x.carry_keys, x.carry_values, cx);
    store_block(y.carry_keys, y.carry_values, cy);
  }

  /// Before an inner vertex's first merge step: its carry takes the first step of a child.
  void start(vertex& x) {
    if (x.started) return;
    refill_children(x);
    vertex& a = vertices_[x.left];
    vertex& b = vertices_[x.right];
    vertex& first = dry(a) ? b : a;  // inputs are never empty: one of them has records
    const std::uint32_t at = first.pos & first.mask;
    store_block(x.carry_keys, x.carry_values,
                load_block(first.keys + at, has_values ? first.values + at : nullptr));
    first.pos += step;
    x.started = true;
  }

  /// Merges into `x` until its ring is full or both children are spent (then the carry, the
  /// largest records, goes last).
  void merge_alone(vertex& x, step_block& carry) {
    vertex& a = vertices_[x.left];
    vertex& b = vertices_[x.right];
    while (space(x) != 0 && !x.done) {
      refill_children(x);
      const bool a_has = !dry(a);
      const bool b_has = !dry(b);
      if (a_has && b_has) {
        merge_both(a, b, x, carry);
      } else if (a_has || b_has) {
        merge_one(a_has ? a : b, x, carry);
      } else {
        const std::uint32_t at = x.len & x.mask;
        store_block(x.buffer + at, has_values ? x.values + at : nullptr, carry);
        x.len += step;
        x.done = true;
      }
    }
  }

  /// One merge step of `x`: the next block of whichever child's next key is smaller.
  /// Branch-free: on random keys the choice is a coin flip.
  [[gnu::always_inline]] static void merge_step(const vertex& a, const vertex& b, vertex& x,
                                                std::uint32_t& ia, std::uint32_t& ib,
                                                std::uint32_t& n, step_block& carry) {
    const std::uint32_t at_a = ia & a.mask;
    const std::uint32_t at_b = ib & b.mask;
    // Selected by masks: with two merges in one loop, GCC turned the conditional expressions
    // into branches, which random keys mispredict half the time.
    const std::uint32_t take_a = a.keys[at_a] <= b.keys[at_b] ? 1 : 0;
    const std::uintptr_t choose_a = 0 - std::uintptr_t{take_a};
    auto select = [choose_a](const std::uint64_t* p, const std::uint64_t* q) {
      return reinterpret_cast<const std::uint64_t*>(
          (reinterpret_cast<std::uintptr_t>(p) & choose_a) |
          (reinterpret_cast<std::uintptr_t>(q) & ~choose_a));
    };
    const std::uint64_t* keys = select(a.keys + at_a, b.keys + at_b);
    const std::uint64_t* values = has_values ? select(a.values + at_a, b.values + at_b) : nullptr;
    step_block low;
    merge_blocks<has_values>(carry, load_block(keys, values), low);
    const std::uint32_t at = n & x.mask;
    store_block(x.buffer + at, has_values ? x.values + at : nullptr, low);
    ia += take_a * step;
    ib += (1 - take_a) * step;
    n += step;
  }

  /// Merge steps until the ring of `x` is full or a child has nothing more to read now.
  void merge_both(vertex& a, vertex& b, vertex& x, step_block& carry) const {
    std::uint32_t ia = a.pos;
    std::uint32_t ib = b.pos;
    std::uint32_t n = x.len;
    const std::uint32_t full = x.pos + buffer_records_;
    while (n != full && ia != a.len && ib != b.len) merge_step(a, b, x, ia, ib, n, carry);
    a.pos = ia;
    b.pos = ib;
    x.len = n;
  }

  /// Merge steps of two siblings by turns, while both rings have room and all four children
  /// have records to read (refilled as they run dry, while none is spent).
  void merge_pair(vertex& x, vertex& y, step_block& cx, step_block& cy) {
    vertex& a = vertices_[x.left];
    vertex& b = vertices_[x.right];
    vertex& c = vertices_[y.left];
    vertex& d = vertices_[y.right];
    while (space(x) != 0 && space(y) != 0) {
      refill_children(x);
      refill_children(y);
      if (dry(a) || dry(b) || dry(c) || dry(d)) return;
      std::uint32_t ia = a.pos;
      std::uint32_t ib = b.pos;
      std::uint32_t ic = c.pos;
      std::uint32_t id = d.pos;
      std::uint32_t nx = x.len;
      std::uint32_t ny = y.len;
      const std::uint32_t full_x = x.pos + buffer_records_;
      const std::uint32_t full_y = y.pos + buffer_records_;
      while (nx != full_x && ny != full_y && ia != a.len && ib != b.len && ic != c.len &&
             id != d.len) {
        merge_step(a, b, x, ia, ib, nx, cx);
        merge_step(c, d, y, ic, id, ny, cy);
      }
      a.pos = ia;
      b.pos = ib;
      c.pos = ic;
      d.pos = id;
      x.len = nx;
      y.len = ny;
    }
  }

  /// Merge steps from one child, the other being spent, until the ring of `x` is full or the
  /// child has nothing more to read now.
  void merge_one(vertex& only, vertex& x, step_block& carry) const {
    const std::uint32_t full = x.pos + buffer_records_;
    while (x.len != full && !dry(only)) {
      const std::uint32_t from = only.pos & only.mask;
      step_block low;
      merge_blocks<has_values>(
          carry, load_block(only.keys + from, has_values ? only.values + from : nullptr), low);
      const std::uint32_t at = x.len & x.mask;
      store_block(x.buffer + at, has_values ? x.values + at : nullptr, low);
      only.pos += step;
      x.len += step;
    }
  }

  /// Writes `count` records of the root's buffer to `out` as records again. With payloads,
  /// first checks that no key equals the one before it (`first`: the merge's first records,
  /// which have none before them); false, with nothing written, where one does, and
  /// `tie_with_last` set where the first of these records ties with the last one written.
  bool store_records(vertex& root, std::uint32_t count, std::byte* out, bool first,
                     bool& tie_with_last) {
    if constexpr (has_values) {
      __mmask8 equal = 0;
      for (std::uint32_t i = 0; i < count; i += lanes) {
        const std::uint32_t r = count - i < lanes ? count - i : lanes;
        const __m512i k = _mm512_load_si512(root.keys + i);
        // Lane j against lane j - 1, lane 0 against the last key before this vector.
        const __m512i before = _mm512_alignr_epi64(k, last_key_, 7);
        auto lanes_in = static_cast<__mmask8>(r == lanes ? 0xFFu : (1u << r) - 1);
        if (first && i == 0) lanes_in = static_cast<__mmask8>(lanes_in & 0xFEu);
        const __mmask8 ties = _mm512_mask_cmpeq_epu64_mask(lanes_in, k, before);
        if (i == 0) tie_with_last = (ties & 1u) != 0;
        equal = static_cast<__mmask8>(equal | ties);
        last_key_ = _mm512_permutexvar_epi64(_mm512_set1_epi64(r - 1), k);
      }
      if (equal != 0) return false;
    }
    std::uint32_t i = 0;
    auto write = [&](std::uint32_t r, bool stream) {
      const __m512i k = _mm512_loadu_si512(root.keys + i);
      const __m512i v = has_values ? _mm512_loadu_si512(root.values + i) : k;
      store_records8(out + std::size_t{i} * record_bytes, r, k, v, stream);
      i += r;
    };
    const auto misaligned = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(out) %
                                                       cache_line);
    if (streams && (cache_line - misaligned) % record_bytes == 0) {
      // Plain stores up to the first whole line, then whole lines past the caches.
      const std::uint32_t head = misaligned == 0 ? 0 : (cache_line - misaligned) / record_bytes;
      if (head != 0) write(head < count ? head : count, false);
      while (count - i >= lanes) write(lanes, true);
    }
    while (i < count) write(count - i < lanes ? count - i : lanes, false);
    root.pos = count;
    return true;
  }

  vertex* vertices_;
  std::byte* buffers_;
  /// Records per vertex buffer (a multiple of the step) and its bytes with the payloads.
  std::uint32_t buffer_records_;
  std::size_t buffer_bytes_;
  __m512i sign_;
  __m512i float_;
  __m512i order_;
  __m512i padding_;
  bool keys_in_place_;  ///< unsigned 64-bit keys, ascending: records are normalized keys
  __m512i last_key_ = _mm512_setzero_si512();  ///< lane 7: the last key written
  std::uint32_t root_ = 0;
};

template <vector_layout Layout>
std::uint64_t merge_with(const vector_input* inputs, std::size_t runs, std::byte* out,
                         std::uint64_t count, const vector_key_masks& masks, std::byte* scratch) {
  merge_tree<Layout> tree(inputs, runs, masks, scratch);
  return tree.run(out, count);
}

}  // namespace

std::size_t vector_merge_scratch_bytes(std::size_t runs, vector_layout layout) noexcept {
  if (runs < 2) return 0;
  const std::size_t vertices = vertex_count(runs);
  return round_up(vertices * sizeof(vertex)) + vertices * buffer_bytes(layout, runs);
}

std::uint64_t vector_merge(const vector_input* inputs, std::size_t runs, std::byte* out,
                           std::uint64_t count, vector_layout layout,
                           const vector_key_masks& masks, std::byte* scratch) noexcept {
  switch (layout) {
    case vector_layout::key:
      return merge_with<vector_layout::key>(inputs, runs, out, count, masks, scratch);
    case vector_layout::key_value:
      return merge_with<vector_layout::key_value>(inputs, runs, out, count, masks, scratch);
    case vector_layout::value_key:
      return merge_with<vector_layout::value_key>(inputs, runs, out, count, masks, scratch);
    case vector_layout::key32:
      return merge_with<vector_layout::key32>(inputs, runs, out, count, masks, scratch);
  }
  return 0;
}

}  // namespace gpusort::cpu::detail

#endif  // __x86_64__
