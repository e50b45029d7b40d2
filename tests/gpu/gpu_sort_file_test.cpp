// sort_file on the GPU end to end: every key type, payloads moved as pairs and as (key, index)
// items, one chunk written straight to the output, many chunks sorted again by key range or
// merged on the host, spilled runs, a pipe as input, and .npy files (records after a header);
// with two GPUs, key-only records that they hold together sorted by exchange.
// Skips without a CUDA device.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "cpu/multiway_merge.hpp"
#include "gpu/multi_gpu_sort.hpp"
#include "gpu/run_former.hpp"
#include "gpusort/sort.hpp"
#include "npy_support.hpp"
#include "pipeline/key_partition.hpp"
#include "pipeline/pipeline_config.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

class GpuSortFile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (gpu::device_count() == 0) GTEST_SKIP() << "no CUDA device present: GPU test skipped";
  }
};

struct gpu_case {
  const char* type;
  std::uint32_t record_size;
  std::uint32_t key_offset;
};

TEST_F(GpuSortFile, EveryFormatOneChunkAndManyChunks) {
  const gpu_case cases[] = {{"u32", 4, 0},   {"i32", 4, 0},  {"f32", 4, 0},  {"u64", 8, 0},
                            {"i64", 8, 0},   {"f64", 8, 0},  {"u64", 16, 8}, {"i32", 12, 4},
                            {"f64", 100, 40}, {"bytes:10", 100, 0}, {"bytes:4", 4, 0}};
  test::scratch_dir dir;
  for (const gpu_case& c : cases) {
    const record_format f = test::make_format(c.type, c.record_size, c.key_offset);
    for (const std::uint64_t records : {0ull, 1ull, 5000ull, 3000017ull}) {
      for (const bool descending : {false, true}) {
        // Default device budget (one chunk, written straight out) and a small one (runs).
        for (const std::uint64_t gpu_memory : {std::uint64_t{0}, std::uint64_t{48} << 20}) {
          const std::uint64_t seed = test::base_seed() ^ (records * 7 + c.record_size + descending);
          SCOPED_TRACE(std::string(c.type) + " rec " + std::to_string(c.record_size) + " n " +
                       std::to_string(records) + (descending ? " desc" : " asc") +
                       " gpu-memory " + std::to_string(gpu_memory) + " seed " +
                       std::to_string(seed));
          const auto data = test::random_records(records, f, seed);
          test::write_file(dir.file("in"), data);
          sort_options o;
          o.devices.how = device_selection::mode::all;  // the GPU, also below the CPU crossover
          o.format = f;
          o.descending = descending;
          o.gpu_memory_bytes = gpu_memory;
          const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"), o);
          EXPECT_EQ(stats.records, records);
          EXPECT_NE(stats.backend, "cpu");
          // The planner's choice, from the run former's own chunk plan for this device, is
          // what ran: the whole device holds every input here; 48 MiB holds 3M 4-byte keys
          // but not 8-byte ones or (key, index) items.
          if (gpu_memory == 0) {
            EXPECT_EQ(stats.strategy, "gpu-one-chunk");
          }
          // Several runs of records the GPU sorts directly are sorted again by key range on
          // the GPU, unless they are few enough for the host's vector merge; (key, index)
          // items are merged on the host.
          const bool few = stats.runs <= pipeline::host_merge_max_runs && f.key_size == 8 &&
                           cpu::merges_with_vectors(f, cpu::merge_policy{});
          const char* several = gpu::supports_format(f) && !few ? "gpu-ranges" : "gpu-runs";
          // Where several GPUs hold key-only records together, they sort them by exchange.
          if (stats.strategy == "gpu-exchange") {
            EXPECT_GE(gpu::device_count(), 2);
            EXPECT_TRUE(gpu::exchange_supports(f));
          } else {
            EXPECT_EQ(stats.strategy, stats.runs > 1 ? several : "gpu-one-chunk");
          }
          // (Two GPUs hold 3000017 key-only records of 8 bytes together in 48 MiB each:
          // one range each, sorted by exchange.)
          if (records == 3000017 && gpu_memory != 0 && c.record_size >= 8 &&
              stats.strategy != "gpu-exchange") {
            EXPECT_GT(stats.runs, 1u) << "48 MiB of device memory holds no such chunk";
          }
          EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, descending));
          if (stats.runs > 1 && gpu::supports_format(f)) {
            // The same runs sorted again by key range, and merged on the host, give the same
            // bytes, whichever of the two the planner chose.
            o.merge = merge_location::gpu;
            const sort_stats ranges = sort_file({dir.file("in")}, dir.file("out"), o);
            EXPECT_EQ(ranges.strategy, "gpu-ranges");
            EXPECT_EQ(ranges.runs, stats.runs);
            EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, descending));
            // A file's runs were page-locked as they formed: every byte of them.
            const auto pinned =
                std::find_if(ranges.stages.begin(), ranges.stages.end(),
                             [](const stage_stats& s) { return s.name == "pin runs"; });
            ASSERT_NE(pinned, ranges.stages.end());
            EXPECT_EQ(pinned->bytes, data.size());
            o.merge = merge_location::host;
            const sort_stats host = sort_file({dir.file("in")}, dir.file("out"), o);
            EXPECT_EQ(host.strategy, "gpu-runs");
            EXPECT_EQ(host.runs, stats.runs);
            EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, descending));
          }
        }
      }
    }
  }
}

TEST_F(GpuSortFile, TwoGpusSortWhatTheyHoldTogetherByExchange) {
  if (gpu::device_count() < 2) GTEST_SKIP() << "one CUDA device: the exchange needs two";
  // 40 MiB of each GPU holds 4M keys of either width together, not in one chunk of one GPU.
  test::scratch_dir dir;
  for (const char* type : {"u32", "i32", "f32", "u64", "i64", "f64"}) {
    const record_format f = test::make_format(type, std::string(type).back() == '2' ? 4 : 8, 0);
    for (const bool descending : {false, true}) {
      for (const bool all_equal : {false, true}) {
        const std::uint64_t seed = test::base_seed() + f.record_size + descending;
        SCOPED_TRACE(std::string(type) + (descending ? " desc" : " asc") +
                     (all_equal ? " all equal" : " random") + " seed " + std::to_string(seed));
        auto data = test::random_records(4000037, f, seed);
        if (all_equal)  // one key: the destinations split it by records
          for (std::size_t at = f.record_size; at < data.size(); at += f.record_size)
            std::copy_n(data.begin(), f.record_size,
                        data.begin() + static_cast<std::ptrdiff_t>(at));
        test::write_file(dir.file("in"), data);
        sort_options o;
        o.devices.how = device_selection::mode::list;
        o.devices.ids = {0, 1};
        o.format = f;
        o.descending = descending;
        o.gpu_memory_bytes = std::uint64_t{40} << 20;
        const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"), o);
        EXPECT_EQ(stats.strategy, "gpu-exchange");
        EXPECT_EQ(stats.records, 4000037u);
        EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, descending));
      }
    }
  }
  // Into a pipe: the GPUs' ranges in order.
  const record_format f = test::make_format("u64", 8, 0);
  const auto data = test::random_records(4000037, f, test::base_seed() + 99);
  test::write_file(dir.file("in"), data);
  ASSERT_EQ(::mkfifo(dir.file("fifo").c_str(), 0600), 0);
  std::thread drain([&] {
    const std::string cmd = "cat " + dir.file("fifo") + " > " + dir.file("out");
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  });
  sort_options o;
  o.devices.how = device_selection::mode::list;
  o.devices.ids = {1, 0};
  o.format = f;
  o.gpu_memory_bytes = std::uint64_t{40} << 20;
  const sort_stats stats = sort_file({dir.file("in")}, dir.file("fifo"), o);
  drain.join();
  EXPECT_EQ(stats.strategy, "gpu-exchange");
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
  // An .npy file of u64: the ranges land after the header.
  const std::vector<std::byte> header =
      test::npy_header(test::npy_dict("'<u8'", test::npy_shape(4000037)), 1, 16);
  std::vector<std::byte> file = header;
  file.insert(file.end(), data.begin(), data.end());
  test::write_file(dir.file("in.npy"), file);
  sort_options npy;
  npy.devices.how = device_selection::mode::list;
  npy.devices.ids = {0, 1};
  npy.gpu_memory_bytes = std::uint64_t{40} << 20;
  const sort_stats npy_stats = sort_file({dir.file("in.npy")}, dir.file("out.npy"), npy);
  EXPECT_EQ(npy_stats.strategy, "gpu-exchange");
  std::vector<std::byte> expected = header;
  const auto sorted = test::reference_sort(data, f, false);
  expected.insert(expected.end(), sorted.begin(), sorted.end());
  EXPECT_EQ(test::read_file(dir.file("out.npy")), expected);
  // Each GPU's range by the local sort asked for (auto took HRS for these even u64 keys).
  EXPECT_EQ(npy_stats.gpu_sorter, "hrs");
  for (const algorithm a : {algorithm::onesweep, algorithm::hrs}) {
    sort_options by = o;
    by.devices.ids = {0, 1};
    by.algo = a;
    const sort_stats s = sort_file({dir.file("in")}, dir.file("out"), by);
    EXPECT_EQ(s.strategy, "gpu-exchange");
    EXPECT_EQ(s.gpu_sorter, a == algorithm::hrs ? "hrs" : "onesweep");
    EXPECT_EQ(test::read_file(dir.file("out")), sorted);
  }
}

TEST_F(GpuSortFile, ManyChunksSpilledToDisk) {
  test::scratch_dir dir;
  const record_format f = test::make_format("f64", 16, 8);
  const std::uint64_t seed = test::base_seed() + 41;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto data = test::random_records(4000000, f, seed);  // 64 MB
  test::write_file(dir.file("in"), data);
  sort_options o;
  o.format = f;
  o.gpu_memory_bytes = 24 << 20;  // ~8 MB chunks: 8+ runs
  o.buffer_bytes = 40 << 20;      // runs cannot all stay in memory
  o.temp_dir = dir.path().string();
  // The planner partitions the file through the output instead: no runs kept, none spilled.
  const sort_stats partitioned = sort_file({dir.file("in")}, dir.file("out"), o);
  EXPECT_EQ(partitioned.strategy, "gpu-partition");
  EXPECT_FALSE(partitioned.spilled);
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
  // --merge-on host: the runs spill and are merged on the host.
  o.merge = merge_location::host;
  const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"), o);
  EXPECT_GE(stats.runs, 8u);
  EXPECT_EQ(partitioned.runs, 1u) << "no sorted runs, nothing merged";
  EXPECT_TRUE(stats.spilled);
  EXPECT_EQ(stats.strategy, "gpu-runs");
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
  // --merge-on gpu: the spilled runs are read through mappings and sorted again by key range.
  o.merge = merge_location::gpu;
  const sort_stats ranges = sort_file({dir.file("in")}, dir.file("out"), o);
  EXPECT_EQ(ranges.strategy, "gpu-ranges");
  EXPECT_TRUE(ranges.spilled);
  EXPECT_EQ(ranges.runs, stats.runs);
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
}

TEST_F(GpuSortFile, FilesWhoseRunsWouldSpillArePartitionedThroughTheOutput) {
  // Every format the GPU sorts directly, keys spread evenly, skewed (AND of 3 words), of three
  // values (ranges of one key larger than a chunk, in input order) and all equal; both orders.
  struct partition_case {
    const char* type;
    std::uint32_t record_size;
    std::uint32_t key_offset;
  };
  const partition_case cases[] = {
      {"u64", 8, 0}, {"u32", 4, 0}, {"f64", 16, 8}, {"i32", 12, 4}, {"i64", 16, 0}, {"f32", 8, 4}};
  test::scratch_dir dir;
  for (const partition_case& c : cases) {
    const record_format f = test::make_format(c.type, c.record_size, c.key_offset);
    for (const int dist : {0, 1, 2, 3}) {
      for (const bool descending : {false, true}) {
        const std::uint64_t records = (std::uint64_t{48} << 20) / c.record_size + 4099;
        const std::uint64_t seed =
            test::base_seed() ^ (c.record_size * 131 + dist * 7 + descending);
        SCOPED_TRACE(std::string(c.type) + " rec " + std::to_string(c.record_size) + " dist " +
                     std::to_string(dist) + (descending ? " desc" : " asc") + " seed " +
                     std::to_string(seed));
        auto data = test::random_records(records, f, seed);
        std::mt19937_64 rng(seed);
        for (std::uint64_t i = 0; i < records && dist != 0; ++i) {
          std::byte* key = data.data() + i * c.record_size + c.key_offset;
          std::uint64_t k = 0;
          std::memcpy(&k, key, f.key_size);
          if (dist == 1) k &= rng() & rng();
          if (dist == 2) k = (rng() % 3) * 0x1111111111111111ull;
          if (dist == 3) k = 0x0123456789abcdefull;
          std::memcpy(key, &k, f.key_size);
        }
        test::write_file(dir.file("in"), data);
        sort_options o;
        o.devices.how = device_selection::mode::all;
        o.format = f;
        o.descending = descending;
        o.gpu_memory_bytes = 24 << 20;  // chunks of a few MB: 8 or more
        o.buffer_bytes = 32 << 20;      // their runs would spill
        o.temp_dir = dir.path().string();
        const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"), o);
        EXPECT_EQ(stats.strategy, "gpu-partition");
        // No sorted runs to merge: the ranges land where they belong (--stats said 8 or more,
        // counting pass one's chunks).
        EXPECT_EQ(stats.runs, 1u);
        EXPECT_EQ(stats.merge_passes, 0u);
        EXPECT_FALSE(stats.spilled);
        EXPECT_EQ(stats.records, records);
        EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, descending));
      }
    }
  }
}

TEST_F(GpuSortFile, APartitionFallsBackToSpilledRunsWhereTheInputIsNotCached) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 8, 0);
  const std::uint64_t seed = test::base_seed() + 43;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto data = test::random_records(8000000, f, seed);  // 64 MB
  test::write_file(dir.file("in"), data);
  {
    // Written back and dropped from the page cache: sampling it would read the disk.
    const int fd = ::open(dir.file("in").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::fdatasync(fd), 0);
    ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    ::close(fd);
  }
  sort_options o;
  o.devices.how = device_selection::mode::all;
  o.format = f;
  o.gpu_memory_bytes = 24 << 20;
  o.buffer_bytes = 32 << 20;
  o.temp_dir = dir.path().string();
  const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"), o);
  // (A page the kernel kept anyway makes the partition go ahead: both are correct.)
  EXPECT_TRUE(stats.strategy == "gpu-runs" || stats.strategy == "gpu-partition")
      << stats.strategy;
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
}

TEST_F(GpuSortFile, APartitionFallsBackToRunsWhereTheSampleMissesADenseKeyRange) {
  // Every sampled record holds key 0 and every other a key of its own: the one splitter leaves
  // all the others in one bucket, more than a chunk, which pass one finds before it writes.
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 16, 0);
  const std::uint64_t records = 4000000;  // 64 MB
  const std::uint64_t seed = test::base_seed() + 47;
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto data = test::random_records(records, f, seed);
  for (std::uint64_t i = 0; i < records; ++i) {
    const std::uint64_t key = i * 2654435761u % records + 1;
    std::memcpy(data.data() + i * 16, &key, 8);
  }
  const std::size_t count =
      pipeline::partition_splitters(records, records / 4) * pipeline::partition_sample_per_splitter;
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint64_t zero = 0;
    std::memcpy(data.data() + pipeline::sample_position(k, count, records) * 16, &zero, 8);
  }
  test::write_file(dir.file("in"), data);
  sort_options o;
  o.devices.how = device_selection::mode::all;
  o.format = f;
  o.gpu_memory_bytes = 48 << 20;  // chunks of 1M records: 4 or more
  o.buffer_bytes = 32 << 20;
  o.temp_dir = dir.path().string();
  const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"), o);
  EXPECT_EQ(stats.strategy, "gpu-runs");
  EXPECT_TRUE(stats.spilled);
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
}

TEST_F(GpuSortFile, FromAPipeIntoAPipe) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u32", 4, 0);
  const auto data = test::random_records(2000003, f, test::base_seed() + 3);
  test::write_file(dir.file("in"), data);
  // Input of unknown length and a stream output: runs, sorted again by key range (or merged
  // on the host) and written in order.
  const std::string fifo_in = dir.file("fifo-in");
  const std::string fifo_out = dir.file("fifo-out");
  ASSERT_EQ(::mkfifo(fifo_in.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(fifo_out.c_str(), 0600), 0);
  for (const merge_location where : {merge_location::automatic, merge_location::host}) {
    SCOPED_TRACE(where == merge_location::host ? "merged on the host" : "auto");
    std::thread feeder([&] {
      const std::string cmd = "cat " + dir.file("in") + " > " + fifo_in;
      EXPECT_EQ(std::system(cmd.c_str()), 0);
    });
    std::thread drain([&] {
      const std::string cmd = "cat " + fifo_out + " > " + dir.file("out");
      EXPECT_EQ(std::system(cmd.c_str()), 0);
    });
    sort_options o;
    o.format = f;
    o.gpu_memory_bytes = 8 << 20;  // several chunks
    o.merge = where;
    const sort_stats stats = sort_file({fifo_in}, fifo_out, o);
    feeder.join();
    drain.join();
    EXPECT_GT(stats.runs, 1u);
    EXPECT_EQ(stats.strategy, where == merge_location::host ? "gpu-runs" : "gpu-ranges");
    EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
  }
}

TEST_F(GpuSortFile, StreamOfOneChunkIsOneRunInTheOutput) {
  test::scratch_dir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Keys and key+value records the former sorts directly; into a file (opened, and faulted in,
  // when the stream ends), and into a pipe that takes the bytes in order.
  struct stream_case {
    const char* type;
    std::uint32_t record_size;
    std::uint64_t records;
    bool to_pipe;
  };
  const stream_case cases[] = {{"u64", 8, 1500007, false},
                               {"u32", 8, 700001, false},
                               {"u64", 16, 333333, true},
                               {"u32", 4, 1 << 20, false}};
  for (const stream_case& c : cases) {
    const record_format f = test::make_format(c.type, c.record_size, 0);
    SCOPED_TRACE(std::string(c.type) + " in " + std::to_string(c.record_size) + "-byte records, " +
                 std::to_string(c.records) + (c.to_pipe ? ", into a pipe" : ", into a file"));
    const auto data = test::random_records(c.records, f, test::base_seed() + c.records);
    test::write_file(dir.file("in"), data);
    std::thread feeder([&] {
      const std::string cmd = "cat " + dir.file("in") + " > " + fifo;
      EXPECT_EQ(std::system(cmd.c_str()), 0);
    });
    const std::string fifo_out = dir.file("fifo-out");
    std::optional<std::thread> drain;
    if (c.to_pipe) {
      ASSERT_EQ(::mkfifo(fifo_out.c_str(), 0600), 0);
      drain.emplace([&] {
        const std::string cmd = "cat " + fifo_out + " > " + dir.file("out");
        EXPECT_EQ(std::system(cmd.c_str()), 0);
      });
    }
    sort_options o;
    o.format = f;
    const sort_stats stats = sort_file({fifo}, c.to_pipe ? fifo_out : dir.file("out"), o);
    feeder.join();
    if (drain) drain->join();
    ::unlink(fifo_out.c_str());
    EXPECT_EQ(stats.strategy, "gpu-one-chunk");
    EXPECT_EQ(stats.runs, 1u);
    EXPECT_EQ(stats.records, c.records);
    EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
  }
  // --unique: compacted in the output's mapping, which a stream now has too.
  std::vector<std::uint64_t> keys(1000003);
  std::mt19937_64 rng(test::base_seed() + 8);
  for (std::uint64_t& k : keys) k = rng() % 5000;
  std::vector<std::byte> data(keys.size() * sizeof(std::uint64_t));
  std::memcpy(data.data(), keys.data(), data.size());
  test::write_file(dir.file("in"), data);
  std::thread feeder([&] {
    const std::string cmd = "cat " + dir.file("in") + " > " + fifo;
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  });
  sort_options o;
  o.format = test::make_format("u64", 8, 0);
  o.unique = true;
  const sort_stats stats = sort_file({fifo}, dir.file("out"), o);
  feeder.join();
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<std::byte> expected(keys.size() * sizeof(std::uint64_t));
  std::memcpy(expected.data(), keys.data(), expected.size());
  EXPECT_EQ(stats.output_records, keys.size());
  EXPECT_EQ(test::read_file(dir.file("out")), expected);
}

TEST_F(GpuSortFile, StreamWhoseRunsSpillIsMergedOnTheHost) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 8, 0);
  const auto data = test::random_records(2000003, f, test::base_seed() + 5);  // 16 MB
  test::write_file(dir.file("in"), data);
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread feeder([&] {
    const std::string cmd = "cat " + dir.file("in") + " > " + fifo;
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  });
  sort_options o;
  o.format = f;
  o.gpu_memory_bytes = 8 << 20;
  o.buffer_bytes = 4 << 20;  // runs cannot all stay in memory
  o.temp_dir = dir.path().string();
  const sort_stats stats = sort_file({fifo}, dir.file("out"), o);
  feeder.join();
  EXPECT_TRUE(stats.spilled);
  EXPECT_EQ(stats.strategy, "gpu-runs") << "the plan's gpu-ranges falls back to the host merge";
  EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false));
}

TEST_F(GpuSortFile, NpyRecordsLandAfterTheHeaderOnEveryGpuStrategy) {
  test::scratch_dir dir;
  struct npy_case {
    std::string descr;
    const char* key;
    record_format format;
  };
  // Pairs the GPU sorts directly, and (key, index) items gathered on the host.
  const npy_case cases[] = {
      {"[('k', '<u8'), ('v', '<u8')]", "k", test::make_format("u64", 16, 0)},
      {"[('id', '<u4'), ('x', '<f4')]", "x", test::make_format("f32", 8, 4)},
      {"[('pad', '|V40'), ('t', '<f8'), ('rest', '|V52')]", "t", test::make_format("f64", 100, 40)},
  };
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const npy_case& c : cases) {
    const record_format& f = c.format;
    const std::uint64_t records = 3000017;
    const std::uint64_t seed = test::base_seed() + f.record_size;
    const auto data = test::random_records(records, f, seed);
    // An 80-byte header (16-byte aligned, as old NumPy wrote): the records start off any page
    // and off any 64-byte line of the output.
    const std::vector<std::byte> header =
        test::npy_header(test::npy_dict(c.descr, test::npy_shape(records)), 1, 16);
    std::vector<std::byte> file = header;
    file.insert(file.end(), data.begin(), data.end());
    test::write_file(dir.file("in.npy"), file);
    for (const bool descending : {false, true}) {
      std::vector<std::byte> expected = header;
      const auto sorted = test::reference_sort(data, f, descending);
      expected.insert(expected.end(), sorted.begin(), sorted.end());
      // One chunk; key ranges sorted again on the GPU; runs merged on the host; a FIFO output.
      for (const int variant : {0, 1, 2, 3}) {
        SCOPED_TRACE(c.descr + (descending ? " desc" : " asc") + " variant " +
                     std::to_string(variant) + " seed " + std::to_string(seed));
        sort_options o;
        o.devices.how = device_selection::mode::all;  // the GPU, also below the CPU crossover
        o.npy.key_field = c.key;
        o.descending = descending;
        if (variant >= 1) o.gpu_memory_bytes = 48 << 20;
        // (Asked for by name: the planner merges few runs of 64-bit keys on the host.)
        if (variant == 1 && gpu::supports_format(f)) o.merge = merge_location::gpu;
        if (variant == 2) o.merge = merge_location::host;
        std::thread drain;
        std::string out = dir.file("out.npy");
        if (variant == 3) {
          drain = std::thread([&] {
            EXPECT_EQ(std::system(("cat " + fifo + " > " + dir.file("out.npy")).c_str()), 0);
          });
          out = fifo;
        }
        const sort_stats stats = sort_file({dir.file("in.npy")}, out, o);
        if (drain.joinable()) drain.join();
        EXPECT_EQ(stats.records, records);
        EXPECT_NE(stats.backend, "cpu");
        if (variant == 0) {
          EXPECT_EQ(stats.strategy, "gpu-one-chunk");
        }
        EXPECT_EQ(test::read_file(dir.file("out.npy")), expected) << stats.strategy;
      }
    }
    // --unique into the output's mapping after a one-chunk sort: the shape rewritten.
    sort_options o;
    o.devices.how = device_selection::mode::all;  // the GPU, also below the CPU crossover
    o.npy.key_field = c.key;
    o.unique = true;
    const sort_stats stats = sort_file({dir.file("in.npy")}, dir.file("out.npy"), o);
    const test::npy_parts p = test::split_npy(test::read_file(dir.file("out.npy")));
    EXPECT_EQ(p.header_bytes, header.size());
    EXPECT_EQ(p.dict, test::npy_dict(c.descr, test::npy_shape(stats.output_records)));
    EXPECT_EQ(p.data.size(), stats.output_records * f.record_size);
  }
}

}  // namespace
}  // namespace gpusort
