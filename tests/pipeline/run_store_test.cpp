// run_store and merge_runs: runs spilled in stripes across several files, through the page cache
// (merged from mappings) and past it (read back in windows), merge to the stable sort of their
// records, in one pass and in several.
#include <sys/resource.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <future>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/host_buffer.hpp"
#include "gpusort/error.hpp"
#include "io/output_file.hpp"
#include "io/output_sink.hpp"
#include "io/uring.hpp"
#include "pipeline/merge_runs.hpp"
#include "pipeline/run_store.hpp"
#include "test_support.hpp"

namespace gpusort::pipeline {
namespace {

struct spill_case {
  const char* type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
  bool direct;
  bool map;                      // runs spilled through the page cache merged from mappings
  std::uint32_t fanin;           // below the run count: intermediate passes
  std::uint64_t resident_limit;  // bytes of runs kept in memory
  // The output mapped whole and faulted in ahead of the merge by background threads, as a
  // sort whose runs spill writes it; else a mapping per window.
  bool whole_output = false;
};

std::string case_name(const ::testing::TestParamInfo<spill_case>& info) {
  const spill_case& c = info.param;
  std::string type = c.type;
  for (char& ch : type) ch = ch == ':' ? '_' : ch;
  const char* mode = c.direct ? "_direct" : c.map ? "_mapped" : "_windows";
  return type + "_r" + std::to_string(c.record_size) + mode + "_fanin" +
         std::to_string(c.fanin) + "_resident" + std::to_string(c.resident_limit) +
         (c.whole_output ? "_whole" : "");
}

class SpilledRuns : public ::testing::TestWithParam<spill_case> {};

TEST_P(SpilledRuns, MergeToTheStableSortOfTheirRecords) {
  const spill_case& c = GetParam();
  const std::uint64_t seed = test::base_seed() + 97 + c.record_size + c.fanin;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const record_format format = test::make_format(c.type, c.record_size, c.key_offset);
  test::scratch_dir dir;
  // Stripes of at least one page, across three files: runs of a few pages are cut in several.
  run_store store(c.record_size, c.resident_limit, dir.path().string(), c.direct, nullptr,
                  spill_striping{3, 4096});
  io::uring ring(8);
  std::vector<std::byte> all;
  const std::uint64_t sizes[] = {1, 700, 4096, 12289, 5000, 3, 20000};
  for (std::uint64_t id = 0; const std::uint64_t count : sizes) {
    std::vector<std::byte> records = test::random_records(count, format, rng());
    all.insert(all.end(), records.begin(), records.end());
    const std::vector<std::byte> sorted = test::reference_sort(records, format, false);
    host_buffer buffer(sorted.size());
    std::memcpy(buffer.data(), sorted.data(), sorted.size());
    store.add(id++, std::move(buffer), count, ring);
  }
  std::size_t striped = 0;
  for (const sorted_run& run : store.runs()) striped += run.pieces.size() > 1 ? 1 : 0;
  if (c.direct) EXPECT_EQ(striped, 0u) << "O_DIRECT runs go to one file";
  else EXPECT_GT(striped, 0u) << "no run was cut into stripes";

  // Every spill file is freed once the store lets go of it (by another process, whole).
  std::vector<const spill_file*> files;
  std::vector<std::unique_ptr<test::freed_watch>> freed;
  for (const sorted_run& run : store.runs()) {
    for (const spill_range& piece : run.pieces) {
      if (std::find(files.begin(), files.end(), piece.file.get()) != files.end()) continue;
      files.push_back(piece.file.get());
      freed.push_back(std::make_unique<test::freed_watch>(
          "/proc/self/fd/" + std::to_string(piece.file->fd.get())));
    }
  }

  run_layout layout;
  layout.budget_bytes = std::uint64_t{1} << 20;  // windows of a few thousand records
  layout.merge_fanin = c.fanin;
  const std::string target = dir.file("out");
  {
    io::output_file out(target);
    auto sink = io::make_output_sink(out, all.size(), io::write_method::automatic, nullptr,
                                     c.whole_output);
    // A short distance ahead: the prefault waits on the merge's progress, window by window.
    if (c.whole_output) sink->prefault(2, /*wait=*/false, std::uint64_t{64} << 10);
    const std::uint32_t passes =
        merge_runs(store, *sink, format, false, layout, nullptr, c.map);
    EXPECT_EQ(passes > 1, c.fanin < std::size(sizes));
    sink->finish();
    out.commit(false, all.size());
  }
  EXPECT_EQ(test::read_file(target), test::reference_sort(all, format, false));
  for (auto& watch : freed) EXPECT_FALSE(watch->freed_within(0)) << "freed while still held";
  store.release_in_background().get();
  for (auto& watch : freed) EXPECT_TRUE(watch->freed_within(10000)) << "a spill file stays";
  test::expect_no_child_left();
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, SpilledRuns,
    ::testing::Values(spill_case{"u64", 8, 0, false, true, 64, 0},
                      spill_case{"u64", 8, 0, true, true, 64, 0},
                      spill_case{"u64", 8, 0, false, true, 3, 0},
                      spill_case{"u64", 8, 0, true, true, 2, 0},
                      spill_case{"u32", 12, 8, false, true, 64, 40000},
                      spill_case{"f64", 16, 8, false, true, 4, 0},
                      spill_case{"bytes:10", 100, 0, false, true, 64, 0},
                      spill_case{"bytes:10", 100, 0, true, true, 3, 0},
                      spill_case{"i32", 4, 0, false, true, 64, 0},
                      // Read in windows across the stripes' pieces, as without mmap.
                      spill_case{"u64", 8, 0, false, false, 64, 0},
                      spill_case{"u64", 16, 8, false, false, 3, 0},
                      spill_case{"bytes:10", 100, 0, false, false, 64, 0},
                      // Into one mapping faulted in ahead, after intermediate passes too.
                      spill_case{"u64", 8, 0, false, true, 64, 0, true},
                      spill_case{"u64", 8, 0, false, true, 3, 0, true},
                      spill_case{"bytes:10", 100, 0, true, true, 3, 0, true},
                      spill_case{"u32", 12, 8, false, false, 64, 40000, true}),
    case_name);

// Runs whose key ranges do not overlap are merged one after another: every window takes all its
// records from one run, which must read far more than its share ahead, while the other runs'
// buffers sit full. Runs of uneven sizes, the largest keys in the first run.
class DisjointRuns : public ::testing::TestWithParam<bool> {};

TEST_P(DisjointRuns, MergeOneRunAfterAnother) {
  const bool direct = GetParam();
  const std::uint64_t seed = test::base_seed() + 515;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const record_format format = test::make_format("u64", 8, 0);
  const std::uint64_t sizes[] = {30000, 2, 17000, 45000, 9000, 1};
  std::uint64_t total = 0;
  for (const std::uint64_t n : sizes) total += n;
  const std::vector<std::byte> all = test::random_records(total, format, rng());
  const std::vector<std::byte> sorted = test::reference_sort(all, format, false);
  test::scratch_dir dir;
  run_store store(8, 0, dir.path().string(), direct, nullptr, spill_striping{3, 4096});
  io::uring ring(8);
  std::uint64_t end = total;  // run i takes the largest records the runs before it left
  for (std::uint64_t id = 0; const std::uint64_t n : sizes) {
    host_buffer buffer(n * 8);
    std::memcpy(buffer.data(), sorted.data() + (end - n) * 8, n * 8);
    store.add(id++, std::move(buffer), n, ring);
    end -= n;
  }
  run_layout layout;
  layout.budget_bytes = std::uint64_t{1} << 20;  // windows of a few thousand records
  layout.merge_fanin = 64;
  const std::string target = dir.file("out");
  {
    io::output_file out(target);
    auto sink = io::make_output_sink(out, all.size(), io::write_method::automatic);
    // Read in windows: not from mappings.
    EXPECT_EQ(merge_runs(store, *sink, format, false, layout, nullptr, false), 1u);
    sink->finish();
    out.commit(false, all.size());
  }
  EXPECT_EQ(test::read_file(target), sorted);
  store.release_in_background().get();
}

INSTANTIATE_TEST_SUITE_P(ThroughThePageCacheAndPastIt, DisjointRuns, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return std::string(param_info.param ? "direct" : "buffered");
                         });

/// A sink into memory that takes small windows in parallel, as an output file takes large
/// ones: mapped whole (`whole`), or in windows.
class memory_sink final : public io::output_sink {
 public:
  memory_sink(std::size_t bytes, bool whole) : data_(bytes), whole_(whole) {}
  /// acquire() at or past `offset` fails, as a write to a full disk would.
  void fail_from(std::uint64_t offset) { fail_from_ = offset; }
  [[nodiscard]] std::size_t max_window() const override { return 64 << 10; }
  std::span<std::byte> acquire(std::uint64_t offset, std::size_t len) override {
    if (offset >= fail_from_) throw error("memory sink: no space at " + std::to_string(offset));
    return {data_.data() + offset, len};
  }
  void commit(std::uint64_t, std::span<std::byte>) override {}
  void write(std::uint64_t offset, std::span<const std::byte> data) override {
    std::memcpy(data_.data() + offset, data.data(), data.size());
  }
  void finish() override {}
  [[nodiscard]] std::span<std::byte> mapping() override {
    return whole_ ? std::span<std::byte>(data_) : std::span<std::byte>();
  }
  [[nodiscard]] const char* name() const override { return "memory"; }
  [[nodiscard]] bool parallel_writes() const override { return true; }
  [[nodiscard]] const std::vector<std::byte>& data() const { return data_; }

 private:
  std::vector<std::byte> data_;
  bool whole_;
  std::uint64_t fail_from_ = ~std::uint64_t{0};
};

// Runs merged from memory into an output mapped whole give their merged records' memory back
// while later windows still merge: the output is right all the same, and the runs' first huge
// pages read zero after. Into an output written in windows they keep it (merged in any order).
class ResidentRuns : public ::testing::TestWithParam<bool> {};

TEST_P(ResidentRuns, MergeGivesTheMergedMemoryBackAsItGoesIntoAWholeOutput) {
  const bool whole = GetParam();
  const std::uint64_t seed = test::base_seed() + 808;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const record_format format = test::make_format("u64", 16, 0);
  test::scratch_dir dir;
  run_store store(16, std::uint64_t{1} << 30, dir.path().string(), false, nullptr);
  io::uring ring(8);
  std::vector<std::byte> all;
  // Runs of 1 to 5 huge pages and two tiny ones; 256 windows of 64 KiB in all.
  const std::uint64_t sizes[] = {300000, 131072 + 5, 1, 250000, 7, 366000};
  for (std::uint64_t id = 0; const std::uint64_t count : sizes) {
    std::vector<std::byte> records = test::random_records(count, format, rng());
    for (std::uint64_t i = 0; i < count; ++i)  // keys never zero: a given-back page would show
      records[i * 16] |= std::byte{1};
    all.insert(all.end(), records.begin(), records.end());
    const std::vector<std::byte> sorted = test::reference_sort(records, format, false);
    host_buffer buffer(sorted.size());
    std::memcpy(buffer.data(), sorted.data(), sorted.size());
    store.add(id++, std::move(buffer), count, ring);
  }
  ASSERT_FALSE(store.any_spilled());
  run_layout layout;
  layout.budget_bytes = std::uint64_t{1} << 30;
  layout.merge_fanin = 64;
  memory_sink sink(all.size(), whole);
  EXPECT_EQ(merge_runs(store, sink, format, false, layout, nullptr), 1u);
  EXPECT_EQ(sink.data(), test::reference_sort(all, format, false));
  for (const sorted_run& run : store.runs()) {
    if (run.records * 16 < host_buffer::discard_grain) continue;
    if (whole)
      EXPECT_EQ(run.memory.data()[0], std::byte{0}) << "run " << run.id << " kept its memory";
    else
      EXPECT_NE(run.memory.data()[0], std::byte{0}) << "run " << run.id << " gave memory back";
  }
  store.release_in_background().get();
}

// A window that fails stops the merge's threads from taking more, and reaches the caller.
TEST_P(ResidentRuns, AFailedWindowReachesTheCaller) {
  const record_format format = test::make_format("u64", 8, 0);
  test::scratch_dir dir;
  run_store store(8, std::uint64_t{1} << 30, dir.path().string(), false, nullptr);
  io::uring ring(8);
  for (std::uint64_t id = 0; id < 4; ++id) {
    constexpr std::uint64_t count = 300000;
    host_buffer buffer(count * 8);
    for (std::uint64_t i = 0; i < count; ++i) {
      const std::uint64_t key = i * 4 + id;
      std::memcpy(buffer.data() + i * 8, &key, 8);
    }
    store.add(id, std::move(buffer), count, ring);
  }
  run_layout layout;
  layout.budget_bytes = std::uint64_t{1} << 30;
  layout.merge_fanin = 64;
  memory_sink sink(4 * 300000 * 8, GetParam());
  sink.fail_from(std::uint64_t{5} << 20);
  EXPECT_THROW(merge_runs(store, sink, format, false, layout, nullptr), error);
  store.release_in_background().get();
}

INSTANTIATE_TEST_SUITE_P(WholeAndInWindows, ResidentRuns, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param_info) {
                           return std::string(param_info.param ? "whole" : "windows");
                         });

// GPU formers add their runs from threads of their own, in no particular order: the store
// orders them by id, and equal keys of different runs merge in that order (the input's).
TEST(RunStoreOrder, RunsAddedOutOfOrderFromSeveralThreadsMergeInIdOrder) {
  const std::uint64_t seed = test::base_seed() + 4242;
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const record_format format = test::make_format("u64", 16, 0);
  constexpr std::uint64_t runs = 12;
  constexpr std::uint64_t per_run = 3000;
  // Eight distinct keys, the payload the record's input position: ties across every run.
  std::vector<std::byte> all(runs * per_run * 16);
  for (std::uint64_t i = 0; i < runs * per_run; ++i) {
    const std::uint64_t key = rng() % 8;
    std::memcpy(all.data() + i * 16, &key, 8);
    std::memcpy(all.data() + i * 16 + 8, &i, 8);
  }
  test::scratch_dir dir;
  // Room for a third of the runs: the others spill, in stripes, while runs are added.
  run_store store(16, runs / 3 * per_run * 16, dir.path().string(), false, nullptr,
                  spill_striping{3, 4096});
  std::vector<std::uint64_t> order(runs);
  for (std::uint64_t i = 0; i < runs; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::thread> threads;
  std::atomic<std::size_t> next{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      io::uring ring(8);
      for (std::size_t i = next++; i < runs; i = next++) {
        const std::uint64_t id = order[i];
        const std::vector<std::byte> run(
            all.begin() + static_cast<std::ptrdiff_t>(id * per_run * 16),
            all.begin() + static_cast<std::ptrdiff_t>((id + 1) * per_run * 16));
        const std::vector<std::byte> sorted = test::reference_sort(run, format, false);
        host_buffer buffer(sorted.size());
        std::memcpy(buffer.data(), sorted.data(), sorted.size());
        store.add(id, std::move(buffer), per_run, ring);
      }
    });
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(store.runs().size(), runs);
  for (std::uint64_t i = 0; i < runs; ++i) EXPECT_EQ(store.runs()[i].id, i);
  EXPECT_TRUE(store.any_spilled());
  EXPECT_EQ(store.total_records(), runs * per_run);
  {
    io::uring ring(8);
    host_buffer again(16);
    EXPECT_THROW(store.add(5, std::move(again), 1, ring), error) << "run 5 added twice";
  }

  run_layout layout;
  layout.budget_bytes = std::uint64_t{1} << 20;
  layout.merge_fanin = 5;  // and intermediate passes
  const std::string target = dir.file("out");
  {
    io::output_file out(target);
    auto sink = io::make_output_sink(out, all.size(), io::write_method::automatic);
    EXPECT_EQ(merge_runs(store, *sink, format, false, layout, nullptr), 2u);
    sink->finish();
    out.commit(false, all.size());
  }
  EXPECT_EQ(test::read_file(target), test::reference_sort(all, format, false));
  store.release_in_background().get();
}

// A spilled run's buffer comes back to the caller, whole and still mapped (formations fill it
// again instead of faulting in fresh memory); a run the store keeps gives nothing back, and
// refilling a returned buffer does not change the spilled run.
TEST(RunStoreAdd, ASpilledRunsBufferComesBackAndAKeptRunsStays) {
  const record_format format = test::make_format("u64", 8, 0);
  constexpr std::uint64_t per_run = 4096;
  constexpr std::size_t bytes = per_run * 8;
  test::scratch_dir dir;
  run_store store(8, bytes, dir.path().string(), false, nullptr);
  io::uring ring(8);
  auto run_of = [&](std::uint64_t first) {
    host_buffer b(bytes);
    for (std::uint64_t i = 0; i < per_run; ++i) {
      const std::uint64_t key = first + i;
      std::memcpy(b.data() + i * 8, &key, 8);
    }
    return b;
  };
  EXPECT_EQ(store.add(0, run_of(0), per_run, ring).size(), 0u) << "kept within the limit";
  host_buffer spilled = run_of(per_run);
  const std::byte* at = spilled.data();
  host_buffer back = store.add(1, std::move(spilled), per_run, ring);
  EXPECT_TRUE(store.any_spilled());
  EXPECT_EQ(back.size(), bytes);
  EXPECT_EQ(back.data(), at) << "the same memory, not a copy";
  std::memset(back.data(), 0xff, back.size());  // a later run's records go there
  EXPECT_EQ(store.add(2, run_of(2 * per_run), per_run, ring, {}, true).size(), 0u)
      << "kept past the limit when asked";

  run_layout layout;
  layout.budget_bytes = std::uint64_t{1} << 20;
  layout.merge_fanin = 8;
  const std::string target = dir.file("out");
  {
    io::output_file out(target);
    auto sink = io::make_output_sink(out, 3 * bytes, io::write_method::automatic);
    merge_runs(store, *sink, format, false, layout, nullptr);
    sink->finish();
    out.commit(false, 3 * bytes);
  }
  const std::vector<std::byte> got = test::read_file(target);
  ASSERT_EQ(got.size(), 3 * bytes);
  for (std::uint64_t i = 0; i < 3 * per_run; ++i) {
    std::uint64_t key = 0;
    std::memcpy(&key, got.data() + i * 8, 8);
    ASSERT_EQ(key, i) << "record " << i;
  }
  store.release_in_background().get();
}

// What the final merge hands over (its last hole-punching task) is let go of by the
// background release, before the spill files, and not by the merge's caller.
TEST(RunStoreRelease, WhatIsHeldGoesWithTheBackgroundRelease) {
  test::scratch_dir dir;
  run_store store(8, 0, dir.path().string(), false, nullptr);
  io::uring ring(8);
  host_buffer buffer(8 * 4096);
  std::memset(buffer.data(), 0, buffer.size());
  store.add(0, std::move(buffer), 4096, ring);
  ASSERT_TRUE(store.any_spilled());
  std::atomic<bool> released{false};
  std::atomic<bool> file_open_then{false};
  const std::string fd_path =
      "/proc/self/fd/" + std::to_string(store.runs().front().pieces.front().file->fd.get());
  store.hold_until_released(std::shared_ptr<void>(nullptr, [&](void*) {
    // Spill files are still open when it goes: it may still punch holes in them.
    file_open_then = ::access(fd_path.c_str(), F_OK) == 0;
    released = true;
  }));
  EXPECT_FALSE(released.load());
  std::future<void> releasing = store.release_in_background();
  releasing.get();
  EXPECT_TRUE(released.load());
  EXPECT_TRUE(file_open_then.load());
  test::expect_no_child_left();
}

TEST(SpilledRunsErrors, AFailedStripeWriteReachesTheCaller) {
  // Files may grow to 64 KiB: every stripe of a 384 KiB run passes that, each in its own thread.
  test::scratch_dir dir;
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
  struct rlimit small = old;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  int code = 0;
  {
    run_store store(8, 0, dir.path().string(), false, nullptr, spill_striping{3, 4096});
    io::uring ring(8);
    const std::uint64_t records = (384 << 10) / 8;
    host_buffer buffer(static_cast<std::size_t>(records * 8));
    std::memset(buffer.data(), 0, buffer.size());
    try {
      store.add(0, std::move(buffer), records, ring);
    } catch (const error& e) {
      code = e.code().value();
    }
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(code, EFBIG);
}

}  // namespace
}  // namespace gpusort::pipeline
