// Tests of gpu::run_former on a real GPU: every key type and order, key-only and key+payload
// records, chunking and in-place refill over many chunks, tiny inputs, stability, callbacks,
// errors. Device memory is poisoned; each run is compared with std::stable_sort of its chunk.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/trace.hpp"
#include "gpu/run_former.hpp"
#include "gpu_test_support.hpp"
#include "gpusort/error.hpp"
#include "test_support.hpp"

namespace gpusort::test {
namespace {

struct sort_case {
  record_format format;
  bool descending = false;
  std::uint64_t records = 0;
  std::uint64_t max_chunk_records = 0;
  std::uint64_t memory_budget = 0;
  std::size_t piece_bytes = 0;
  /// 0: one push of everything; else pushes of random whole-record sizes up to this many bytes.
  std::size_t max_push_bytes = 0;
  /// Tell the former how many records come (run_former_config::expected_records).
  bool announce_records = false;
  /// The sink has no buffer free for every n-th piece_buffer() call (0: always has one).
  unsigned refuse_every = 0;
};

/// A collecting sink that now and then has no buffer free, as a sink with a bounded pool does.
class refusing_sink final : public collecting_sink {
 public:
  refusing_sink(std::uint32_t record_size, unsigned every)
      : collecting_sink(record_size), every_(every) {}
  std::span<std::byte> piece_buffer(std::uint64_t run, std::uint64_t offset,
                                    std::size_t len) override {
    if (every_ != 0 && ++calls_ % every_ == 0) {
      ++refusals_;
      return {};
    }
    return collecting_sink::piece_buffer(run, offset, len);
  }
  [[nodiscard]] std::uint64_t refusals() const { return refusals_; }

 private:
  unsigned every_;
  std::uint64_t calls_ = 0;
  std::uint64_t refusals_ = 0;
};

struct sort_result {
  std::uint64_t chunk_records = 0;
  std::vector<std::vector<std::byte>> runs;
  std::uint64_t pushes = 0;
  std::uint64_t consumed = 0;
};

/// Pushes `input` in the case's pattern, finishes, and checks the push/consume contract.
sort_result run_former_on(const sort_case& c, const std::vector<std::byte>& input,
                          std::uint64_t seed) {
  gpu::run_former_config config;
  config.format = c.format;
  config.descending = c.descending;
  config.max_chunk_records = c.max_chunk_records;
  config.memory_budget = c.memory_budget;
  config.piece_bytes = c.piece_bytes;
  config.poison_device_memory = true;
  if (c.announce_records) config.expected_records = input.size() / c.format.record_size;
  refusing_sink sink(c.format.record_size, c.refuse_every);
  sort_result result;
  std::atomic<std::uint64_t> consumed{0};
  std::atomic<std::uint64_t> consumed_in_order{0};
  {
    gpu::run_former former(config, sink, nullptr);
    result.chunk_records = former.chunk_records();
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    std::uint64_t offset = 0;
    while (offset < input.size()) {
      std::size_t len = input.size() - offset;
      if (c.max_push_bytes != 0) {
        const std::uint64_t max_records =
            std::max<std::uint64_t>(1, c.max_push_bytes / c.format.record_size);
        len = std::min<std::size_t>(len, (1 + rng() % max_records) * c.format.record_size);
      }
      const std::uint64_t id = result.pushes++;
      former.push(std::span<const std::byte>(input.data() + offset, len), [&, id] {
        sink.note_thread();
        EXPECT_EQ(consumed_in_order.fetch_add(1), id) << "on_consumed out of order";
        consumed.fetch_add(1);
      });
      offset += len;
    }
    former.finish();
  }
  result.consumed = consumed.load();
  EXPECT_EQ(result.consumed, result.pushes) << "every push is consumed by the end of finish()";
  EXPECT_TRUE(sink.all_pieces_done());
  EXPECT_EQ(sink.runs_done(), sink.runs().size());
  result.runs = sink.runs();
  if (c.refuse_every != 0 && !input.empty()) {
    EXPECT_GT(sink.refusals(), 0u) << "the sink never refused a buffer";
  }
  return result;
}

void sort_and_check(const sort_case& c, std::uint64_t seed) {
  SCOPED_TRACE("seed " + std::to_string(seed) + ", " + describe(c.format) +
               (c.descending ? ", descending" : "") + ", " + std::to_string(c.records) +
               " records");
  const std::vector<std::byte> input = random_records(c.records, c.format, seed);
  const sort_result r = run_former_on(c, input, seed);
  if (c.max_chunk_records != 0) {
    EXPECT_LE(r.chunk_records, c.max_chunk_records);
  }
  expect_runs_match(input, c.format, c.descending, r.chunk_records, r.runs);
}

std::string type_name(key_type t) {
  record_format f;
  f.type = t;
  f.key_size = detail::has_32bit_word(t) ? 4 : 8;
  return key_type_name(f);
}

// --- every key type, both orders, key-only and key+payload layouts ---------------------------

struct layout_param {
  key_type type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
  bool descending;
};

std::vector<layout_param> all_layouts() {
  std::vector<layout_param> out;
  const key_type types[] = {key_type::u32, key_type::i32, key_type::f32,
                            key_type::u64, key_type::i64, key_type::f64};
  for (key_type t : types) {
    const bool w32 = detail::has_32bit_word(t);
    // (record size, key offset): key-only, payloads of 4 and 8 bytes, odd sizes, key at the
    // start, middle and end.
    const std::vector<std::pair<std::uint32_t, std::uint32_t>> shapes =
        w32 ? std::vector<std::pair<std::uint32_t, std::uint32_t>>{{4, 0},  {8, 0},  {8, 4},
                                                                   {12, 0}, {12, 8}, {12, 3},
                                                                   {5, 1},  {7, 3}}
            : std::vector<std::pair<std::uint32_t, std::uint32_t>>{
                  {8, 0}, {16, 0}, {16, 8}, {12, 0}, {12, 4}, {13, 5}, {10, 2}, {9, 1}};
    for (const auto& [size, offset] : shapes)
      for (bool desc : {false, true}) out.push_back({t, size, offset, desc});
  }
  return out;
}

class layout_test : public ::testing::TestWithParam<layout_param> {
 protected:
  void SetUp() override {
    if (gpu::device_count() == 0) GTEST_SKIP() << "no CUDA device present: GPU test skipped";
  }
};

TEST_P(layout_test, MatchesStableSortPerChunk) {
  const layout_param p = GetParam();
  sort_case c;
  c.format = make_format(p.type, p.record_size, p.key_offset);
  c.descending = p.descending;
  c.max_chunk_records = 10007;
  c.records = 3 * 10007 + 123;  // 4 chunks, the last one short
  c.piece_bytes = 4000 * p.record_size + 8;  // pieces that do not divide the chunk
  c.max_push_bytes = 300000;
  sort_and_check(c, base_seed() + p.record_size * 31 + p.key_offset + (p.descending ? 7 : 0) +
                        static_cast<unsigned>(p.type) * 1000);
}

INSTANTIATE_TEST_SUITE_P(
    AllKeyTypes, layout_test, ::testing::ValuesIn(all_layouts()),
    [](const ::testing::TestParamInfo<layout_param>& param_info) {
      const layout_param& p = param_info.param;
      return type_name(p.type) + "_r" + std::to_string(p.record_size) + "_k" +
             std::to_string(p.key_offset) + (p.descending ? "_desc" : "_asc");
    });

// --- chunking ----------------------------------------------------------------------------

class run_former_test : public gpu_test {};

TEST_F(run_former_test, SizesAroundChunkBoundaries) {
  const std::uint64_t chunk = 1000;
  for (const record_format& f :
       {key_only_format(key_type::u64), make_format(key_type::i32, 8, 4)}) {
    for (std::uint64_t n : {chunk - 1, chunk, chunk + 1, 2 * chunk, 3 * chunk + 1}) {
      sort_case c;
      c.format = f;
      c.records = n;
      c.max_chunk_records = chunk;
      c.piece_bytes = 300 * f.record_size;
      sort_and_check(c, base_seed() + n);
    }
  }
}

TEST_F(run_former_test, SeventeenChunksByMaxChunkRecords) {
  sort_case c;
  c.format = make_format(key_type::u64, 16, 0);
  c.max_chunk_records = 4099;
  c.records = 16 * 4099 + 17;
  c.piece_bytes = 1000 * 16;
  c.max_push_bytes = 50000;
  sort_and_check(c, base_seed() + 17);
}

TEST(MayHoldChunk, ThreeSlotsOfTheRecordsWithinTheBudgetOrTheDevice) {
  // Host arithmetic only: runs without a device.
  gpu::run_former_config config;
  config.format = key_only_format(key_type::u64);
  config.memory_budget = std::uint64_t{3} << 20;
  const std::uint64_t total = std::uint64_t{80} << 30;
  EXPECT_TRUE(gpu::may_hold_chunk(config, total, 131072));
  EXPECT_FALSE(gpu::may_hold_chunk(config, total, 131073));
  config.format = make_format(key_type::u32, 12, 0);  // 12-byte records: a third as many
  EXPECT_TRUE(gpu::may_hold_chunk(config, total, 87381));
  EXPECT_FALSE(gpu::may_hold_chunk(config, total, 87382));
  // No budget, or one beyond the device: the device's memory.
  config.memory_budget = 0;
  EXPECT_TRUE(gpu::may_hold_chunk(config, std::uint64_t{36} << 20, std::uint64_t{1} << 20));
  EXPECT_FALSE(gpu::may_hold_chunk(config, std::uint64_t{36} << 20, (std::uint64_t{1} << 20) + 1));
  config.memory_budget = std::uint64_t{1} << 40;
  EXPECT_FALSE(gpu::may_hold_chunk(config, std::uint64_t{36} << 20, (std::uint64_t{1} << 20) + 1));
}

TEST_F(run_former_test, MayHoldChunkWherePlanChunksHoldsOne) {
  const gpu::device_info info = gpu::query_device(0);
  for (const record_format& f : {key_only_format(key_type::u32), key_only_format(key_type::u64),
                                 make_format(key_type::u64, 16, 0)}) {
    for (const std::uint64_t budget : {std::uint64_t{64} << 20, std::uint64_t{1} << 30}) {
      gpu::run_former_config config;
      config.format = f;
      config.memory_budget = budget;
      const gpu::chunk_plan plan = gpu::plan_chunks(config, info);
      ASSERT_GT(plan.chunk_records, 0u);
      EXPECT_TRUE(gpu::may_hold_chunk(config, info.total_bytes, plan.chunk_records));
      EXPECT_FALSE(gpu::may_hold_chunk(config, info.total_bytes, budget / 3 / f.record_size + 1));
    }
  }
}

TEST_F(run_former_test, ManyChunksFromSmallMemoryBudget) {
  // The budget alone decides the chunk size; the input is sized for at least 16 chunks.
  for (const record_format& f :
       {key_only_format(key_type::f64), make_format(key_type::u64, 12, 4)}) {
    gpu::run_former_config config;
    config.format = f;
    config.memory_budget = std::uint64_t{3} << 20;
    collecting_sink probe_sink(f.record_size);
    std::uint64_t chunk = 0;
    {
      gpu::run_former probe(config, probe_sink, nullptr);
      chunk = probe.chunk_records();
      probe.finish();
    }
    ASSERT_GT(chunk, 0u);
    ASSERT_LT(3 * chunk * f.record_size, config.memory_budget) << "slots must fit the budget";
    sort_case c;
    c.format = f;
    c.memory_budget = config.memory_budget;
    c.records = 16 * chunk + chunk / 3;
    c.piece_bytes = 64 << 10;
    c.max_push_bytes = 1 << 20;
    sort_and_check(c, base_seed() + 99);
  }
}

TEST_F(run_former_test, EmptyInputGivesNoRuns) {
  sort_case c;
  c.format = key_only_format(key_type::u32);
  c.records = 0;
  const sort_result r = run_former_on(c, {}, 1);
  EXPECT_TRUE(r.runs.empty());
  EXPECT_EQ(r.pushes, 0u);
}

TEST_F(run_former_test, EmptyPushesAreConsumed) {
  gpu::run_former_config config;
  config.format = make_format(key_type::u64, 16, 8);
  collecting_sink sink(16);
  int consumed = 0;
  {
    gpu::run_former former(config, sink, nullptr);
    former.push({}, [&] { ++consumed; });
    former.push({}, [&] { ++consumed; });
    former.finish();
  }
  EXPECT_EQ(consumed, 2);
  EXPECT_TRUE(sink.runs().empty());
}

TEST_F(run_former_test, SinkWithoutFreeBuffersIsAskedAgain) {
  for (const unsigned every : {2u, 3u}) {
    sort_case c;
    c.format = make_format(key_type::u64, 16, 0);
    c.records = 300001;
    c.max_chunk_records = 70000;  // 5 chunks, refilled in place
    c.piece_bytes = 64 << 10;
    c.refuse_every = every;
    sort_and_check(c, base_seed() + every);
  }
}

TEST_F(run_former_test, AnnouncedSingleChunkSkipsTheSecondSlot) {
  for (const std::uint64_t n : {std::uint64_t{1}, std::uint64_t{123457}}) {
    sort_case c;
    c.format = key_only_format(key_type::f64);
    c.records = n;
    c.announce_records = true;
    c.max_chunk_records = 123457;
    c.descending = true;
    sort_and_check(c, base_seed() + n);
  }
}

TEST_F(run_former_test, MoreRecordsThanAnnouncedThrows) {
  gpu::run_former_config config;
  config.format = key_only_format(key_type::u32);
  config.max_chunk_records = 1000;
  config.expected_records = 1000;
  collecting_sink sink(4);
  const std::vector<std::byte> input = random_records(2500, config.format, base_seed());
  gpu::run_former former(config, sink, nullptr);
  former.push(input, [] {});
  EXPECT_THROW(former.finish(), error);
}

TEST_F(run_former_test, OneRecord) {
  for (const record_format& f :
       {key_only_format(key_type::i64), make_format(key_type::f32, 12, 8)}) {
    sort_case c;
    c.format = f;
    c.records = 1;
    c.descending = true;
    sort_and_check(c, base_seed() + 1);
  }
}

TEST_F(run_former_test, StableForEqualKeys) {
  // Keys from a tiny range, payload = input index: equal keys must keep input order.
  for (bool desc : {false, true}) {
    const record_format f = make_format(key_type::u32, 8, 0);
    const std::uint64_t n = 200000;
    std::vector<std::byte> input(n * 8);
    std::mt19937_64 rng(base_seed());
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto key = static_cast<std::uint32_t>(rng() % 8);
      const auto index = static_cast<std::uint32_t>(i);
      std::memcpy(input.data() + i * 8, &key, 4);
      std::memcpy(input.data() + i * 8 + 4, &index, 4);
    }
    sort_case c;
    c.format = f;
    c.descending = desc;
    c.records = n;
    c.max_chunk_records = 70000;
    const sort_result r = run_former_on(c, input, 5);
    expect_runs_match(input, f, desc, r.chunk_records, r.runs);
    for (const auto& run : r.runs) {
      for (std::uint64_t i = 1; i < run.size() / 8; ++i) {
        std::uint32_t k0, k1, i0, i1;
        std::memcpy(&k0, run.data() + (i - 1) * 8, 4);
        std::memcpy(&i0, run.data() + (i - 1) * 8 + 4, 4);
        std::memcpy(&k1, run.data() + i * 8, 4);
        std::memcpy(&i1, run.data() + i * 8 + 4, 4);
        if (k0 == k1) {
          ASSERT_LT(i0, i1) << "equal keys out of input order at " << i;
        }
      }
    }
  }
}

TEST_F(run_former_test, LargeSingleChunkKeys) {
  // Big enough for CUB's multi-block Onesweep path; std::sort suffices for key-only records.
  const record_format f = key_only_format(key_type::u64);
  const std::uint64_t n = std::uint64_t{1} << 24;
  const std::vector<std::byte> input = random_records(n, f, base_seed() + 24);
  sort_case c;
  c.format = f;
  c.records = n;
  const sort_result r = run_former_on(c, input, 24);
  ASSERT_EQ(r.runs.size(), 1u);
  std::vector<std::uint64_t> expected(n);
  std::memcpy(expected.data(), input.data(), input.size());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(std::memcmp(expected.data(), r.runs[0].data(), input.size()), 0);
}

TEST_F(run_former_test, LargeChunksOfPairs) {
  sort_case c;
  c.format = make_format(key_type::i64, 16, 0);
  c.records = 3u << 20;
  c.max_chunk_records = 1u << 20;
  sort_and_check(c, base_seed() + 3);
}

// compute-sanitizer runs this one (memcheck, racecheck): 4 chunks of 1M records each.
TEST_F(run_former_test, SanitizerMultiChunk) {
  for (const record_format& f :
       {key_only_format(key_type::f64), make_format(key_type::u64, 16, 8)}) {
    sort_case c;
    c.format = f;
    c.records = 4u << 20;
    c.max_chunk_records = 1u << 20;
    c.piece_bytes = 3 << 20;
    sort_and_check(c, base_seed() + 4);
  }
}

TEST_F(run_former_test, PinnedInputAndOutput) {
  const record_format f = make_format(key_type::f32, 8, 0);
  const std::uint64_t n = 500000;
  const std::uint64_t chunk = 123457;
  const std::vector<std::byte> input = random_records(n, f, base_seed() + 8);
  gpu::pinned_buffer in(input.size(), 0);
  gpu::pinned_buffer out(input.size(), 0);
  ASSERT_EQ(in.size(), input.size());
  std::memcpy(in.data(), input.data(), input.size());
  collecting_sink sink(f.record_size, out.data(), chunk * f.record_size);
  gpu::run_former_config config;
  config.format = f;
  config.max_chunk_records = chunk;
  config.poison_device_memory = true;
  int consumed = 0;
  {
    gpu::run_former former(config, sink, nullptr);
    ASSERT_EQ(former.chunk_records(), chunk);
    former.push({in.data(), in.size()}, [&] { ++consumed; });
    former.finish();
  }
  EXPECT_EQ(consumed, 1);
  expect_runs_match(input, f, false, chunk, sink.runs());
  // The runs also landed in the pinned arena, back to back.
  std::vector<std::byte> joined;
  for (const auto& run : sink.runs()) joined.insert(joined.end(), run.begin(), run.end());
  EXPECT_EQ(std::memcmp(joined.data(), out.data(), out.size()), 0);

  gpu::pinned_buffer moved = std::move(in);
  EXPECT_EQ(in.data(), nullptr);
  EXPECT_EQ(moved.size(), input.size());
}

// --- interface, errors -------------------------------------------------------------------

TEST_F(run_former_test, DescribeAndDevice) {
  gpu::run_former_config config;
  config.format = make_format(key_type::u64, 16, 0);
  config.max_chunk_records = 1000;
  collecting_sink sink(16);
  gpu::run_former former(config, sink, nullptr);
  EXPECT_EQ(former.chunk_records(), 1000u);
  EXPECT_FALSE(former.device().name.empty());
  EXPECT_GT(former.device().total_bytes, 0u);
  const std::string d = former.describe();
  EXPECT_NE(d.find(former.device().name), std::string::npos) << d;
  EXPECT_NE(d.find("1000 records"), std::string::npos) << d;
  std::cout << d << "\n";
  former.finish();
}

/// Forwards to a collecting sink with the run ids shifted back by `first`, and checks that
/// every id the former gives is at least `first`.
class shifted_sink final : public gpu::run_sink {
 public:
  shifted_sink(collecting_sink& target, std::uint64_t first) : target_(target), first_(first) {}
  std::span<std::byte> piece_buffer(std::uint64_t run, std::uint64_t offset,
                                    std::size_t len) override {
    EXPECT_GE(run, first_);
    return target_.piece_buffer(run - first_, offset, len);
  }
  void piece_done(std::uint64_t run, std::uint64_t offset, std::span<std::byte> piece) override {
    EXPECT_GE(run, first_);
    target_.piece_done(run - first_, offset, piece);
  }
  void run_done(std::uint64_t run, std::uint64_t records) override {
    EXPECT_GE(run, first_);
    target_.run_done(run - first_, records);
  }

 private:
  collecting_sink& target_;
  std::uint64_t first_;
};

TEST_F(run_former_test, RunIdsStartAtFirstRunId) {
  // Formers on several GPUs feed one store with disjoint id ranges: the ids are global.
  const record_format f = make_format(key_type::u64, 16, 0);
  constexpr std::uint64_t chunk = 1000;
  constexpr std::uint64_t first_run_id = 1u << 20;
  const std::uint64_t n = 3 * chunk + 7;
  const std::uint64_t seed = base_seed() + 1234;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<std::byte> input = random_records(n, f, seed);
  gpu::run_former_config config;
  config.format = f;
  config.max_chunk_records = chunk;
  config.first_run_id = first_run_id;
  collecting_sink collected(f.record_size);
  shifted_sink sink(collected, first_run_id);
  {
    gpu::run_former former(config, sink, nullptr);
    former.push(std::span<const std::byte>(input.data(), input.size()), [] {});
    former.finish();
  }
  EXPECT_EQ(collected.runs_done(), 4u);
  expect_runs_match(input, f, false, chunk, collected.runs());
}

TEST_F(run_former_test, DefaultBudgetHoldsLargeChunks) {
  gpu::run_former_config config;
  collecting_sink sink(8);
  gpu::run_former former(config, sink, nullptr);
  const gpu::device_info& info = former.device();
  // Three slots of 8-byte keys in most of the free memory: well over 1/4 of it per slot.
  EXPECT_GT(former.chunk_records() * 8, info.free_bytes / 5) << former.describe();
  EXPECT_LT(3 * former.chunk_records() * 8, info.free_bytes) << former.describe();
  former.finish();
}

TEST_F(run_former_test, TraceHasTransfersAndSorts) {
  const record_format f = make_format(key_type::u64, 16, 0);
  const std::uint64_t n = 200000;
  const std::vector<std::byte> input = random_records(n, f, base_seed() + 77);
  trace_recorder trace;
  collecting_sink sink(16);
  gpu::run_former_config config;
  config.format = f;
  config.max_chunk_records = 50000;
  {
    gpu::run_former former(config, sink, &trace);
    former.push({input.data(), input.size()}, nullptr);
    former.finish();
  }
  expect_runs_match(input, f, false, 50000, sink.runs());
  bool h2d = false, d2h = false, sorted = false;
  for (const stage_stats& s : trace.summarize()) {
    if (s.name == "H2D") {
      h2d = true;
      EXPECT_EQ(s.bytes, input.size());
    } else if (s.name == "D2H") {
      d2h = true;
      EXPECT_EQ(s.bytes, input.size());
    } else if (s.name == "sort") {
      sorted = true;
      EXPECT_EQ(s.bytes, input.size());
      EXPECT_GT(s.busy_seconds, 0);
    }
    EXPECT_GE(s.first_start, 0) << s.name;
    EXPECT_LE(s.first_start, s.last_end) << s.name;
    EXPECT_LE(s.last_end, trace.now() + 1e-3) << s.name;
  }
  EXPECT_TRUE(h2d && d2h && sorted);
}

TEST_F(run_former_test, PartialRecordPushThrows) {
  gpu::run_former_config config;
  config.format = make_format(key_type::u32, 12, 0);
  collecting_sink sink(12);
  gpu::run_former former(config, sink, nullptr);
  std::vector<std::byte> bytes(100);
  EXPECT_THROW(former.push({bytes.data(), bytes.size()}, nullptr), gpusort::error);
  former.finish();
  EXPECT_THROW(former.push({bytes.data(), 96}, nullptr), gpusort::error);
}

TEST_F(run_former_test, UnsupportedFormatThrows) {
  gpu::run_former_config config;
  config.format = make_format(key_type::u64, 17, 0);  // 9 bytes of payload
  collecting_sink sink(17);
  EXPECT_THROW(gpu::run_former(config, sink, nullptr), gpusort::error);
}

TEST_F(run_former_test, TinyBudgetThrowsOutOfMemory) {
  gpu::run_former_config config;
  config.memory_budget = 100;
  collecting_sink sink(8);
  EXPECT_THROW(gpu::run_former(config, sink, nullptr), gpusort::out_of_memory);
}

class throwing_sink : public collecting_sink {
 public:
  using collecting_sink::collecting_sink;
  void piece_done(std::uint64_t run, std::uint64_t offset, std::span<std::byte> piece) override {
    if (run == 1) throw std::runtime_error("sink refused run 1");
    collecting_sink::piece_done(run, offset, piece);
  }
};

TEST_F(run_former_test, SinkErrorPropagatesToFinish) {
  const record_format f = key_only_format(key_type::u64);
  const std::uint64_t n = 100000;
  const std::vector<std::byte> input = random_records(n, f, base_seed() + 5);
  throwing_sink sink(8);
  gpu::run_former_config config;
  config.format = f;
  config.max_chunk_records = 10000;
  std::atomic<int> consumed{0};
  int accepted = 0;
  bool threw = false;
  {
    gpu::run_former former(config, sink, nullptr);
    try {
      for (std::uint64_t i = 0; i < n; i += 5000) {
        former.push({input.data() + i * 8, 5000 * 8}, [&] { ++consumed; });
        ++accepted;
      }
      former.finish();
    } catch (const std::runtime_error& e) {
      threw = true;
      EXPECT_STREQ(e.what(), "sink refused run 1");
    }
    EXPECT_THROW(former.push({input.data(), 8}, nullptr), std::runtime_error);
  }
  EXPECT_TRUE(threw) << "the sink's exception must reach push() or finish()";
  // Every accepted push is handed back, even after the failure.
  EXPECT_EQ(consumed.load(), accepted);
}

TEST_F(run_former_test, DestroyWithoutFinishIsSafe) {
  const record_format f = make_format(key_type::u64, 16, 0);
  const std::vector<std::byte> input = random_records(300000, f, base_seed() + 6);
  collecting_sink sink(16);
  gpu::run_former_config config;
  config.format = f;
  config.max_chunk_records = 40000;
  {
    gpu::run_former former(config, sink, nullptr);
    former.push({input.data(), input.size()}, nullptr);
  }  // abandoned: must wait for the device and return
  SUCCEED();
}

}  // namespace
}  // namespace gpusort::test
