// Helpers for the GPU run former tests: a fixture that skips without a device, a sink that
// collects runs and checks the callback contract, and the std::stable_sort oracle.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <numeric>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gpu/run_former.hpp"
#include "gpusort/detail/key_codec.hpp"
#include "gpusort/record_format.hpp"
#include "test_support.hpp"

namespace gpusort::test {

/// GPU tests derive from this: without a device they skip with a reason.
class gpu_test : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::device_count() == 0) GTEST_SKIP() << "no CUDA device present: GPU test skipped";
  }
};

/// `slots` GPU slots spread over the devices present (slot i on device i mod count): several
/// slots run on one GPU listed several times where there is one, and on every GPU where there
/// are more, so that the same test covers both.
inline std::vector<int> spread_slots(std::size_t slots) {
  const int count = std::max(gpu::device_count(), 1);
  std::vector<int> devices(slots);
  for (std::size_t i = 0; i < slots; ++i) devices[i] = static_cast<int>(i % count);
  return devices;
}

/// "{0,1}": a device list as the tests print it.
inline std::string device_list_text(const std::vector<int>& devices) {
  std::string s = "{";
  // Appended piece by piece: "," + std::to_string(...) trips GCC 12's -Wrestrict.
  for (std::size_t i = 0; i < devices.size(); ++i) {
    if (i != 0) s += ',';
    s += std::to_string(devices[i]);
  }
  return s + "}";
}

inline record_format make_format(key_type type, std::uint32_t record_size,
                                 std::uint32_t key_offset) {
  record_format f;
  f.type = type;
  f.key_size = detail::has_32bit_word(type) ? 4 : 8;
  f.record_size = record_size;
  f.key_offset = key_offset;
  return f;
}

inline record_format key_only_format(key_type type) {
  const std::uint32_t size = detail::has_32bit_word(type) ? 4 : 8;
  return make_format(type, size, 0);
}

/// The normalized key of a record: sorting these ascending is the requested order.
inline std::uint64_t normalized_key(const std::byte* record, const record_format& f,
                                    bool descending) {
  if (f.key_size == 4)
    return detail::make_key_codec<std::uint32_t>(f.type, descending)
        .normalize(detail::load_word<std::uint32_t>(record + f.key_offset));
  return detail::make_key_codec<std::uint64_t>(f.type, descending)
      .normalize(detail::load_word<std::uint64_t>(record + f.key_offset));
}

/// std::stable_sort of `count` records by normalized key: the expected run.
inline std::vector<std::byte> oracle_sort(const std::byte* records, std::uint64_t count,
                                          const record_format& f, bool descending) {
  std::vector<std::uint64_t> keys(count);
  for (std::uint64_t i = 0; i < count; ++i)
    keys[i] = normalized_key(records + i * f.record_size, f, descending);
  std::vector<std::uint64_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return keys[a] < keys[b]; });
  std::vector<std::byte> out(count * f.record_size);
  for (std::uint64_t i = 0; i < count; ++i)
    std::memcpy(out.data() + i * f.record_size, records + order[i] * f.record_size, f.record_size);
  return out;
}

/**
 * Collects the runs a former delivers and checks the sink contract as it goes: piece_buffer
 * for runs in order and, within a run, contiguous offsets (the next run's first pieces may be
 * requested before the previous run is done); piece_done in the order the buffers were handed
 * out, for exactly those buffers; run_done in order, after all of the run's pieces, with the
 * right record count; every callback on one thread that is not the test's. Piece buffers are
 * filled with 0x5A first so that unwritten bytes show. With `arena` set, pieces land there
 * (run r at r * run_stride bytes), e.g. in pinned memory.
 */
class collecting_sink : public gpu::run_sink {
 public:
  explicit collecting_sink(std::uint32_t record_size, std::byte* arena = nullptr,
                           std::uint64_t run_stride = 0)
      : record_size_(record_size), arena_(arena), run_stride_(run_stride),
        test_thread_(std::this_thread::get_id()) {}

  std::span<std::byte> piece_buffer(std::uint64_t run, std::uint64_t offset,
                                    std::size_t len) override {
    note_thread();
    if (run == requested_.size()) requested_.push_back(0);
    if (run + 1 != requested_.size()) {
      ADD_FAILURE() << "piece_buffer for run " << run << " after run " << requested_.size() - 1;
      return {};
    }
    EXPECT_EQ(offset, requested_[run]) << "run " << run << ": pieces not contiguous";
    EXPECT_EQ(len % record_size_, 0u);
    requested_[run] += len;
    std::byte* p = nullptr;
    if (arena_ != nullptr) {
      p = arena_ + run * run_stride_ + offset;
    } else {
      storage_.emplace_back(len);
      p = storage_.back().data();
    }
    std::memset(p, 0x5A, len);
    handed_out_.push_back({run, offset, p, len});
    return {p, len};
  }

  void piece_done(std::uint64_t run, std::uint64_t offset, std::span<std::byte> piece) override {
    note_thread();
    ASSERT_FALSE(handed_out_.empty()) << "piece_done without piece_buffer";
    const handed h = handed_out_.front();
    handed_out_.pop_front();
    EXPECT_EQ(h.run, run);
    EXPECT_EQ(h.offset, offset);
    EXPECT_EQ(h.data, piece.data());
    EXPECT_EQ(h.len, piece.size());
    if (run == runs_.size()) runs_.emplace_back();
    ASSERT_EQ(run + 1, runs_.size()) << "piece_done for run " << run << " out of order";
    std::vector<std::byte>& out = runs_.back();
    EXPECT_EQ(offset, out.size()) << "run " << run << ": pieces completed out of order";
    out.insert(out.end(), piece.begin(), piece.end());
  }

  void run_done(std::uint64_t run, std::uint64_t records) override {
    note_thread();
    EXPECT_EQ(run, runs_done_) << "runs completed out of order";
    ++runs_done_;
    if (run == runs_.size()) runs_.emplace_back();  // a run of zero records (never expected)
    ASSERT_LT(run, runs_.size());
    ASSERT_LT(run, requested_.size());
    EXPECT_EQ(records * record_size_, runs_[run].size()) << "run " << run;
    EXPECT_EQ(requested_[run], runs_[run].size()) << "run " << run << " done before its pieces";
    for (const handed& h : handed_out_) EXPECT_NE(h.run, run) << "run done with pieces in flight";
  }

  [[nodiscard]] const std::vector<std::vector<std::byte>>& runs() const { return runs_; }
  [[nodiscard]] std::uint64_t runs_done() const { return runs_done_; }
  [[nodiscard]] bool all_pieces_done() const { return handed_out_.empty(); }

  void note_thread() {
    const std::thread::id id = std::this_thread::get_id();
    std::lock_guard lock(mutex_);
    EXPECT_NE(id, test_thread_) << "callbacks must run on the former's own thread";
    if (callback_thread_ == std::thread::id{}) callback_thread_ = id;
    EXPECT_EQ(id, callback_thread_) << "callbacks from more than one thread";
  }

 private:
  struct handed {
    std::uint64_t run;
    std::uint64_t offset;
    std::byte* data;
    std::size_t len;
  };
  std::uint32_t record_size_;
  std::byte* arena_;
  std::uint64_t run_stride_;
  std::thread::id test_thread_;
  std::thread::id callback_thread_{};
  std::mutex mutex_;
  std::vector<std::vector<std::byte>> runs_;   ///< bytes completed so far, per run
  std::vector<std::uint64_t> requested_;       ///< bytes handed out so far, per run
  std::deque<std::vector<std::byte>> storage_;  ///< piece buffers (stable addresses)
  std::deque<handed> handed_out_;
  std::uint64_t runs_done_ = 0;
};

/// Compares each run with std::stable_sort of its chunk; reports the first differing record.
inline void expect_runs_match(const std::vector<std::byte>& input, const record_format& f,
                              bool descending, std::uint64_t chunk_records,
                              const std::vector<std::vector<std::byte>>& runs) {
  const std::uint64_t n = input.size() / f.record_size;
  ASSERT_GT(chunk_records, 0u);
  const std::uint64_t expected_runs = (n + chunk_records - 1) / chunk_records;
  ASSERT_EQ(runs.size(), expected_runs) << n << " records, chunks of " << chunk_records;
  for (std::uint64_t r = 0; r < expected_runs; ++r) {
    const std::uint64_t first = r * chunk_records;
    const std::uint64_t count = std::min(chunk_records, n - first);
    const std::vector<std::byte> expected =
        oracle_sort(input.data() + first * f.record_size, count, f, descending);
    ASSERT_EQ(runs[r].size(), expected.size()) << "run " << r;
    if (std::memcmp(runs[r].data(), expected.data(), expected.size()) != 0) {
      for (std::uint64_t i = 0; i < count; ++i) {
        if (std::memcmp(runs[r].data() + i * f.record_size, expected.data() + i * f.record_size,
                        f.record_size) != 0) {
          ADD_FAILURE() << "run " << r << " of " << expected_runs << " differs at record " << i
                        << " of " << count << " (" << describe(f) << (descending ? ", desc" : "")
                        << ")";
          break;
        }
      }
      return;
    }
  }
}

}  // namespace gpusort::test
