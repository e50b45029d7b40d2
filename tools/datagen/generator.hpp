// Deterministic, parallel generation of benchmark records: key distributions and payloads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpusort/record_format.hpp"
#include "io/output_sink.hpp"

namespace gpusort::tools {

/// 128-bit products for exact scaling of 64-bit words (a GCC/Clang extension).
__extension__ typedef unsigned __int128 uint128;

/// How keys are drawn. Spelled on the command line as listed in parse_distribution().
struct distribution {
  enum class kind : std::uint8_t {
    uniform,  ///< uniform random key bits
    and_words,  ///< Thearling/Smith entropy reduction: each key the AND of `and_words` draws
    equal,    ///< every key the same
    zipf,     ///< Zipf-distributed ranks (P(k) ~ k^-s) mapped to scattered key values
    sorted,   ///< ascending keys spread evenly over the key space
    reverse,  ///< the sorted keys in descending order
    nearly,   ///< the sorted keys after swapping random disjoint pairs of records
    few,      ///< each key one of `distinct` values drawn once
    special,  ///< uniform, with one key in four an edge value of the key type
  } what = kind::uniform;
  unsigned and_words = 1;          ///< and:Q
  double zipf_exponent = 1.0;      ///< zipf:S
  std::uint64_t zipf_domain = 0;   ///< zipf:S:D; 0 = min(2^32, size of the key space)
  double swap_fraction = 0;        ///< nearly:F: round(F * count) swaps
  std::uint64_t distinct = 1;      ///< few:K
};

/**
 * Parses uniform, special, and:Q (1 <= Q <= 64; and:1 is uniform), equal, zipf:S or zipf:S:D
 * (S >= 0, D >= 1), sorted, reverse, nearly:F (0 <= F <= 0.5) or few:K (K >= 1).
 * @throw gpusort::error naming the spelling.
 */
[[nodiscard]] distribution parse_distribution(std::string_view spelled);

/// The canonical spelling, e.g. "and:3", "zipf:0.75", "nearly:0.01".
[[nodiscard]] std::string distribution_name(const distribution& dist);

struct generator_config {
  record_format format{};
  distribution dist{};
  std::uint64_t count = 0;  ///< records to generate
  std::uint64_t seed = 1;
  /// Floats only: keep every key finite (no NaN, no infinity). Without it, uniform and and:Q
  /// draw raw bit patterns, so NaNs and infinities of both signs occur.
  bool finite = false;
};

/**
 * Produces the records of one generated file, any range of them at a time.
 * - Records are produced in blocks of block_records(); each block draws from its own random
 *   stream derived from (seed, block index), so the bytes depend on the configuration only,
 *   never on the thread count or on how the file is cut into ranges.
 * - Payload bytes hold the record's index where locate_index() puts it, the rest a hash of
 *   (seed, index); gensort-layout records get gensort's fixed fields.
 */
class record_generator {
 public:
  /// @throw gpusort::error for an invalid format, distribution or count.
  explicit record_generator(const generator_config& config);

  [[nodiscard]] const generator_config& config() const noexcept { return config_; }
  [[nodiscard]] std::uint64_t block_records() const noexcept { return block_records_; }

  /**
   * Writes records [first, first + count) into dst (count * record_size bytes), in parallel.
   * - `first` must be a multiple of block_records(), and the range must end at a block
   *   boundary or at the end of the file.
   */
  void generate(std::uint64_t first, std::uint64_t count, std::span<std::byte> dst) const;

  /// Writes one block of records (the last may be short) into dst, on the calling thread.
  void generate_block(std::uint64_t block, std::span<std::byte> dst) const;

 private:
  class block_rng;
  void emit_key(std::byte* key, std::uint64_t index, block_rng& rng) const;
  void emit_raw_key(std::byte* key, block_rng& rng) const;
  void emit_special_key(std::byte* key, block_rng& rng) const;
  void emit_ordered_key(std::byte* key, std::uint64_t ordered) const;
  void emit_payload(std::byte* record, std::uint64_t index) const;
  [[nodiscard]] std::uint64_t draw_word(block_rng& rng) const;
  [[nodiscard]] std::uint64_t ordered_value(std::uint64_t index, block_rng& rng) const;
  [[nodiscard]] std::uint64_t sorted_value(std::uint64_t index) const;
  [[nodiscard]] std::uint64_t scale(std::uint64_t word) const;
  [[nodiscard]] std::uint64_t zipf_rank(block_rng& rng) const;
  [[nodiscard]] std::uint64_t swap_partner(std::uint64_t index) const;
  [[nodiscard]] std::uint64_t scatter(std::uint64_t x) const;
  [[nodiscard]] uint128 slot_start(std::uint64_t index) const;

  /// A keyed Feistel permutation of [0, 4^half_bits), walked in cycles for smaller domains.
  struct feistel {
    unsigned half_bits = 1;
    std::uint64_t mask = 1;
    std::uint64_t keys[4] = {};
    void init(unsigned half, std::uint64_t seed);
    [[nodiscard]] std::uint64_t forward(std::uint64_t x) const noexcept;
    [[nodiscard]] std::uint64_t backward(std::uint64_t x) const noexcept;
  };

  generator_config config_;
  std::uint64_t block_records_ = 1;
  unsigned word_bits_ = 64;          // W: bits of the key's ordered word (<= 64)
  std::uint64_t lo_ = 0;             // the ordered words that keys may take: [lo_, lo_ + span_)
  uint128 span_ = 0;
  uint128 step_ = 0;                 // sorted: span_ / count in 64.64 fixed point
  bool is_float_ = false;
  std::uint64_t equal_value_ = 0;
  // Zipf by rejection-inversion (Hörmann & Derflinger): O(1) per draw for any domain size.
  double zipf_h_x1_ = 0, zipf_h_n_ = 0, zipf_threshold_ = 0, zipf_n_ = 0;
  std::uint64_t scatter_key_ = 0;  // zipf: keys the permutation that scatters ranks
  feistel swap_permutation_;  // nearly: picks the swapped pairs over [0, count)
  std::uint64_t swapped_ = 0;  // nearly: positions taking part in a swap (2 * swaps)
  bool gensort_ = false;
  std::vector<std::uint64_t> edges_;  // special: raw edge keys (bytes:N: first|fill|last bytes)
};

/**
 * Generates config.count records into `path` ("-" = standard output) through gpusort's output
 * layer: a temp file renamed into place at the end, filled through `method`'s sink.
 * @throw gpusort::error on any I/O failure.
 */
void write_records(const generator_config& config, const std::string& path,
                   io::write_method method = io::write_method::automatic);

}  // namespace gpusort::tools
