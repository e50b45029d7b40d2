// make_plan: the strategy, output mode and knobs chosen for given sizes and hosts, with
// made-up host_facts (no GPU needed), and sort_file reporting the strategy it ran.
#include <gtest/gtest.h>

#include "gpusort/sort.hpp"
#include "pipeline/gpu_selection.hpp"
#include "pipeline/plan.hpp"
#include "cpu/multiway_merge.hpp"
#include "test_support.hpp"

namespace gpusort::pipeline {
namespace {

constexpr std::uint64_t MiB = std::uint64_t{1} << 20;
constexpr std::uint64_t GiB = std::uint64_t{1} << 30;

host_facts cpu_host(std::uint64_t memory = 64 * GiB, unsigned cpus = 16) {
  host_facts facts;
  facts.usable_memory = memory;
  facts.cpus = cpus;
  return facts;
}

/// A host with one GPU whose chunks hold `chunk_records` records.
host_facts gpu_host(std::uint64_t chunk_records, std::uint64_t memory = 128 * GiB) {
  host_facts facts = cpu_host(memory, 16);
  facts.gpu_allowed = true;
  facts.gpu = gpu_facts{0, "Test GPU", 80 * GiB, chunk_records};
  return facts;
}

sort_options u64_options(std::uint64_t budget = 0) {
  sort_options o;
  o.buffer_bytes = budget;
  return o;
}

std::string why(const sort_plan& plan) {
  std::string s;
  for (const std::string& line : plan.why) s += line + "\n";
  return s;
}

TEST(MakePlan, GpuOneChunkWhenTheInputFitsAChunk) {
  // 8 GiB of u64 is 2^30 records; the chunk holds 1.5 times that.
  const sort_plan plan = make_plan(8 * GiB, u64_options(), gpu_host(std::uint64_t{3} << 29));
  EXPECT_EQ(plan.how, strategy::gpu_one_chunk) << why(plan);
  ASSERT_TRUE(plan.device.has_value());
  EXPECT_EQ(*plan.device, 0);
  EXPECT_EQ(plan.output.mode, output_mode::mapped_whole);
  EXPECT_TRUE(plan.output.prefault) << "8 GiB fits the 64 GiB default budget";
  EXPECT_EQ(plan.output.prefault_threads, 8u) << "half the 16 CPUs";
  EXPECT_EQ(plan.threads, 16u);
}

TEST(MakePlan, DirectIoWhereTheDataPassesTheMemoryLeftToThePageCache) {
  // A 6 GiB cgroup with -S 4G leaves 2 GiB to the page cache: 16 GiB in and out bypass it.
  host_facts limited = gpu_host(std::uint64_t{3} << 30, 6 * GiB);
  limited.memory_note = "memory limited to 6 GiB by /sys/fs/cgroup/job/memory.max";
  sort_plan plan = make_plan(16 * GiB, u64_options(4 * GiB), limited);
  EXPECT_EQ(plan.how, strategy::gpu_one_chunk) << why(plan);
  EXPECT_EQ(plan.output.mode, output_mode::direct) << why(plan);
  EXPECT_TRUE(plan.bypass_page_cache);
  EXPECT_FALSE(plan.output.prefault);
  EXPECT_NE(why(plan).find("memory.max"), std::string::npos) << why(plan);
  // The same input on a host with room for it stays in the page cache.
  plan = make_plan(16 * GiB, u64_options(4 * GiB), gpu_host(std::uint64_t{3} << 30));
  EXPECT_NE(plan.output.mode, output_mode::direct) << why(plan);
  EXPECT_FALSE(plan.bypass_page_cache);
  // On the CPU: spilled runs, all past the cache.
  plan = make_plan(16 * GiB, u64_options(4 * GiB), cpu_host(6 * GiB, 16));
  EXPECT_EQ(plan.how, strategy::cpu_spilled_runs) << why(plan);
  EXPECT_EQ(plan.output.mode, output_mode::direct);
  EXPECT_TRUE(plan.bypass_page_cache);
}

TEST(MakePlan, DirectIoAsAskedAndNeverForStreams) {
  sort_options always = u64_options();
  always.direct = direct_io::always;
  sort_plan plan = make_plan(1 * MiB, always, cpu_host());
  EXPECT_EQ(plan.output.mode, output_mode::direct) << why(plan);
  EXPECT_TRUE(plan.bypass_page_cache);
  EXPECT_NE(plan.describe(always.format).find("O_DIRECT"), std::string::npos);
  sort_options never = u64_options(4 * GiB);
  never.direct = direct_io::never;
  plan = make_plan(16 * GiB, never, cpu_host(6 * GiB, 16));
  EXPECT_NE(plan.output.mode, output_mode::direct) << why(plan);
  EXPECT_FALSE(plan.bypass_page_cache);
  // A stream's size is unknown: buffered unless asked.
  plan = make_plan(std::nullopt, u64_options(4 * GiB), cpu_host(6 * GiB, 16));
  EXPECT_NE(plan.output.mode, output_mode::direct);
  EXPECT_FALSE(plan.bypass_page_cache);
}

TEST(MakePlan, GpuRangesWhenTheInputExceedsAChunk) {
  // 16 GiB of u64 is 2^31 records; chunks of 2^27 make 16 runs, which stay in memory and
  // are sorted again on the GPU by key range.
  const sort_plan plan = make_plan(16 * GiB, u64_options(), gpu_host(std::uint64_t{1} << 27));
  EXPECT_EQ(plan.how, strategy::gpu_ranges) << why(plan);
  EXPECT_EQ(plan.output.mode, output_mode::mapped_whole);
  EXPECT_EQ(plan.layout.resident_bytes, plan.budget_bytes)
      << "GPU runs need no host scratch: resident while they fit the whole budget";
  EXPECT_NE(why(plan).find("exceeds one GPU chunk"), std::string::npos) << why(plan);
  EXPECT_NE(why(plan).find("no host merge"), std::string::npos) << why(plan);
}

TEST(MakePlan, FewGpuRunsMergedOnTheHost) {
  // Eight runs of u64 keys: the vector merge, where the CPU has one; nine: by range.
  if (!cpu::merges_with_vectors(u64_options().format, cpu::merge_policy{}))
    GTEST_SKIP() << "this CPU merges with the loser tree: few runs go by range too";
  const std::uint64_t chunk = std::uint64_t{1} << 27;
  const sort_plan plan = make_plan(8 * chunk * 8, u64_options(), gpu_host(chunk));
  EXPECT_EQ(plan.how, strategy::gpu_runs) << why(plan);
  EXPECT_NE(why(plan).find("its 8 runs are few enough"), std::string::npos) << why(plan);
  EXPECT_EQ(make_plan(8 * chunk * 8 + 8, u64_options(), gpu_host(chunk)).how,
            strategy::gpu_ranges);
  sort_options insist = u64_options();
  insist.merge = merge_location::gpu;
  EXPECT_EQ(make_plan(8 * chunk * 8, insist, gpu_host(chunk)).how, strategy::gpu_ranges);
  // u32 keys: by range (their vector merge was not measured against it).
  sort_options u32 = u64_options();
  u32.format = test::make_format("u32", 4, 0);
  EXPECT_EQ(make_plan(8 * chunk * 4, u32, gpu_host(chunk)).how, strategy::gpu_ranges);
}

TEST(MakePlan, GpuRunsMergedOnTheHostWhenAsked) {
  sort_options o = u64_options();
  o.merge = merge_location::host;
  const sort_plan plan = make_plan(16 * GiB, o, gpu_host(std::uint64_t{1} << 29));
  EXPECT_EQ(plan.how, strategy::gpu_runs) << why(plan);
  EXPECT_NE(why(plan).find("--merge-on host"), std::string::npos) << why(plan);
}

TEST(MakePlan, GpuRunsMergedOnTheHostWhenTheGpuSortsItems) {
  // 100-byte records travel as (key, index) items: a range sort could not place them.
  sort_options o = u64_options();
  o.format.record_size = 100;
  host_facts facts = gpu_host(std::uint64_t{1} << 20);
  facts.gpu->sorts_records = false;
  const sort_plan plan = make_plan(GiB, o, facts);
  EXPECT_EQ(plan.how, strategy::gpu_runs) << why(plan);
  EXPECT_NE(why(plan).find("(key, index) items"), std::string::npos) << why(plan);
  o.merge = merge_location::gpu;
  EXPECT_THROW(static_cast<void>(make_plan(GiB, o, facts)), error);
}

TEST(MakePlan, AFileWhoseGpuRunsWouldSpillIsPartitionedThroughTheOutput) {
  const sort_plan plan = make_plan(40 * GiB, u64_options(16 * GiB), gpu_host(GiB));
  EXPECT_EQ(plan.how, strategy::gpu_partition) << why(plan);
  EXPECT_NE(why(plan).find("would spill past the host budget of 16 GiB"), std::string::npos)
      << why(plan);
  EXPECT_NE(why(plan).find("no runs, no merge"), std::string::npos) << why(plan);
  EXPECT_EQ(why(plan).find("runs resident up to"), std::string::npos) << why(plan);
  // Its fallback, the host merge, keeps the spilling layout.
  EXPECT_EQ(plan.layout.resident_bytes,
            make_plan(40 * GiB, [] {
              sort_options o = u64_options(16 * GiB);
              o.merge = merge_location::host;
              return o;
            }(), gpu_host(GiB)).layout.resident_bytes);
  // Not for a stream, several GPUs, (key, index) items or an input read past the page cache.
  EXPECT_EQ(make_plan(std::nullopt, u64_options(16 * GiB), gpu_host(GiB)).how,
            strategy::gpu_ranges);
  host_facts two = gpu_host(GiB);
  two.gpu->devices = {0, 1};
  EXPECT_NE(make_plan(40 * GiB, u64_options(16 * GiB), two).how, strategy::gpu_partition);
  host_facts items = gpu_host(GiB);
  items.gpu->sorts_records = false;
  EXPECT_EQ(make_plan(40 * GiB, u64_options(16 * GiB), items).how, strategy::gpu_runs);
  sort_options direct = u64_options(16 * GiB);
  direct.direct = direct_io::always;
  EXPECT_EQ(make_plan(40 * GiB, direct, gpu_host(GiB)).how, strategy::gpu_runs);
}

TEST(MakePlan, GpuRunsMergedOnTheHostWhenTheyWouldSpill) {
  sort_options host = u64_options(16 * GiB);
  host.merge = merge_location::host;
  const sort_plan plan = make_plan(40 * GiB, host, gpu_host(GiB));
  EXPECT_EQ(plan.how, strategy::gpu_runs) << why(plan);
  EXPECT_NE(why(plan).find("--merge-on host"), std::string::npos) << why(plan);
  // --merge-on gpu sorts key ranges of the spilled runs, read through mappings; not where
  // they spill with O_DIRECT (an input larger than the memory left to the page cache).
  sort_options o = u64_options(16 * GiB);
  o.merge = merge_location::gpu;
  const sort_plan insisted = make_plan(40 * GiB, o, gpu_host(GiB));
  EXPECT_EQ(insisted.how, strategy::gpu_ranges) << why(insisted);
  EXPECT_NE(why(insisted).find("read back through mappings"), std::string::npos)
      << why(insisted);
  o.direct = direct_io::always;
  EXPECT_THROW(static_cast<void>(make_plan(40 * GiB, o, gpu_host(GiB))), error);
}

TEST(MakePlan, GpuRunsMergedOnTheHostWhereTheOutputPassesTheDirtyLimit) {
  // 128 GiB and vm.dirty_ratio 20: beside 16 GiB of runs the limit is 22.4 GiB, beside 24 GiB
  // of runs 20.8 GiB, which a 24 GiB output passes. (Chunks of 2^26 records: too many runs
  // for the host merge to be chosen for their fewness.)
  host_facts facts = gpu_host(std::uint64_t{1} << 26);
  facts.dirty_ratio = 20;
  EXPECT_EQ(make_plan(16 * GiB, u64_options(), facts).how, strategy::gpu_ranges);
  const sort_plan plan = make_plan(24 * GiB, u64_options(), facts);
  EXPECT_EQ(plan.how, strategy::gpu_runs) << why(plan);
  EXPECT_NE(why(plan).find("dirty-page limit of 20.8 GiB"), std::string::npos) << why(plan);
  sort_options insist = u64_options();
  insist.merge = merge_location::gpu;
  EXPECT_EQ(make_plan(24 * GiB, insist, facts).how, strategy::gpu_ranges);
  // vm.dirty_bytes, where set, is the limit itself.
  facts.dirty_bytes = 8 * GiB;
  EXPECT_EQ(make_plan(16 * GiB, u64_options(), facts).how, strategy::gpu_runs);
  EXPECT_EQ(make_plan(8 * GiB, u64_options(), facts).how, strategy::gpu_ranges);
}

TEST(MakePlan, TheOutputFaultsInWithinTheWriteBackThresholdAheadOfAHostMerge) {
  // 128 GiB, vm.dirty_background_ratio 10: beside 24 GiB of runs write-back starts at
  // 10.4 GiB of dirty pages; the prefault keeps within three quarters of that, 7.8 GiB.
  host_facts facts = gpu_host(std::uint64_t{1} << 26);
  facts.dirty_ratio = 20;
  facts.dirty_background_ratio = 10;
  const sort_plan plan = make_plan(24 * GiB, u64_options(), facts);
  ASSERT_EQ(plan.how, strategy::gpu_runs) << why(plan);
  EXPECT_TRUE(plan.output.prefault);
  EXPECT_EQ(plan.output.prefault_ahead_beside_runs(24 * GiB), 104 * GiB / 100 * 10 / 4 * 3);
  EXPECT_NE(why(plan).find("faulted in at most 7.8 GiB ahead of the merge"), std::string::npos)
      << why(plan);
  // The range sort writes its output otherwise: no word of it there.
  const sort_plan ranges = make_plan(16 * GiB, u64_options(), facts);
  ASSERT_EQ(ranges.how, strategy::gpu_ranges) << why(ranges);
  EXPECT_EQ(why(ranges).find("ahead of the merge"), std::string::npos) << why(ranges);
  // vm.dirty_background_bytes, where set, is the threshold itself; unknown: no limit.
  facts.dirty_background_bytes = 4 * GiB;
  EXPECT_EQ(make_plan(24 * GiB, u64_options(), facts).output.prefault_ahead_beside_runs(24 * GiB),
            3 * GiB);
  output_plan unknown;
  EXPECT_EQ(unknown.prefault_ahead_beside_runs(24 * GiB), ~std::uint64_t{0});
}

TEST(MakePlan, SpillingGpuRunsLeaveRoomForRunsOnTheirWayToDisk) {
  // -S 4G, chunks of 2^26 u64 records (512 MiB): two held runs and two staging pools of
  // 8 x 32 MiB come out of the budget before runs are kept resident.
  sort_options host = u64_options(4 * GiB);
  host.merge = merge_location::host;
  const sort_plan plan = make_plan(16 * GiB, host, gpu_host(std::uint64_t{1} << 26));
  EXPECT_EQ(plan.how, strategy::gpu_runs) << why(plan);
  EXPECT_EQ(plan.layout.resident_bytes, 4 * GiB - 2 * 512 * MiB - 2 * 8 * 32 * MiB);
  EXPECT_NE(why(plan).find("on their way to disk"), std::string::npos) << why(plan);
  // An input within the budget keeps it all: its runs never spill.
  EXPECT_EQ(make_plan(3 * GiB, u64_options(4 * GiB), gpu_host(std::uint64_t{1} << 26))
                .layout.resident_bytes,
            4 * GiB);
}

TEST(MakePlan, ChunkBoundaryIsExact) {
  const std::uint64_t chunk = 1000;
  EXPECT_EQ(make_plan(chunk * 8, u64_options(), gpu_host(chunk)).how, strategy::gpu_one_chunk);
  EXPECT_NE(make_plan(chunk * 8 + 8, u64_options(), gpu_host(chunk)).how, strategy::gpu_one_chunk);
}

TEST(MakePlan, GpuRunsThatSpillPrefaultTheOutputOnlyAheadOfTheMerge) {
  // Where the kernel's write-back threshold is unknown, nothing says how far ahead is safe:
  // the merge faults its windows in itself.
  sort_options host = u64_options(16 * GiB);
  host.merge = merge_location::host;
  const sort_plan unknown = make_plan(40 * GiB, host, gpu_host(GiB));
  EXPECT_EQ(unknown.how, strategy::gpu_runs);
  EXPECT_EQ(unknown.output.mode, output_mode::mapped_whole);
  EXPECT_FALSE(unknown.output.prefault) << "it would fault in the whole output";
  // Known: faulted in from the start, within three quarters of it ahead of the merge
  // (strategy_gpu limits it), never the whole output at once.
  host_facts facts = gpu_host(GiB);
  facts.dirty_background_ratio = 10;
  const sort_plan plan = make_plan(40 * GiB, host, facts);
  EXPECT_EQ(plan.how, strategy::gpu_runs);
  EXPECT_EQ(plan.output.mode, output_mode::mapped_whole);
  EXPECT_TRUE(plan.output.prefault);
  EXPECT_EQ(plan.output.prefault_ahead_beside_runs(40 * GiB), 88 * GiB / 100 * 10 / 4 * 3);
  // Where three quarters of the threshold span the whole output, all of it from the start.
  facts.usable_memory = 1024 * GiB;
  const sort_plan roomy = make_plan(40 * GiB, host, facts);
  EXPECT_EQ(roomy.how, strategy::gpu_runs);
  EXPECT_TRUE(roomy.output.prefault);
  EXPECT_GE(roomy.output.prefault_ahead_beside_runs(40 * GiB), 40 * GiB);
}

TEST(MakePlan, AnOutputWrittenInPlaceIsNeverMappedNorPrefaulted) {
  // A pipe, a device or standard output: whatever the input and the backend.
  for (host_facts facts : {gpu_host(GiB), cpu_host()}) {
    facts.output_in_place = true;
    for (const std::optional<std::uint64_t> size :
         {std::optional<std::uint64_t>{GiB}, std::optional<std::uint64_t>{200 * GiB},
          std::optional<std::uint64_t>{}}) {
      const sort_plan plan = make_plan(size, u64_options(), facts);
      EXPECT_TRUE(plan.output.in_place);
      EXPECT_EQ(plan.output.mode, output_mode::windows);
      EXPECT_FALSE(plan.output.prefault);
      EXPECT_FALSE(plan.output.whole(GiB));
      const std::string text = plan.describe(u64_options().format);
      EXPECT_NE(text.find("; output written in place"), std::string::npos) << text;
      EXPECT_EQ(text.find("mapped whole"), std::string::npos) << text;
      EXPECT_EQ(text.find("faulted in"), std::string::npos) << text;
      // One CPU run is sorted in memory and written out, not sorted into a mapping.
      EXPECT_NE(plan.how, strategy::cpu_one_run) << text;
    }
  }
}

TEST(MakePlan, GpuStreamFormsRunsSortedAgainByRange) {
  const sort_plan plan = make_plan(std::nullopt, u64_options(), gpu_host(GiB));
  EXPECT_EQ(plan.how, strategy::gpu_ranges);
  EXPECT_NE(why(plan).find("should the stream's runs spill"), std::string::npos) << why(plan);
  // Its size is known only when it ends: the output opens then, mapped whole and prefaulted
  // while the GPU sorts, if it fits the budget.
  EXPECT_EQ(plan.output.mode, output_mode::windows);
  EXPECT_EQ(plan.output.whole_up_to, plan.layout.budget_bytes);
  EXPECT_TRUE(plan.output.prefault);
  EXPECT_TRUE(plan.output.whole(plan.layout.budget_bytes));
  EXPECT_FALSE(plan.output.whole(plan.layout.budget_bytes + 1));
  EXPECT_NE(plan.describe(u64_options().format).find("output mapped whole once the stream ends"),
            std::string::npos)
      << plan.describe(u64_options().format);
  // Without a GPU the stream's runs are merged into the output mapped whole too, if it ends
  // within the budget; nothing says how far ahead it may be faulted in on this host.
  const sort_plan cpu = make_plan(std::nullopt, u64_options(), cpu_host());
  EXPECT_EQ(cpu.output.whole_up_to, cpu.layout.budget_bytes);
  EXPECT_TRUE(cpu.output.whole(GiB));
  EXPECT_FALSE(cpu.output.prefault);
}

TEST(MakePlan, CpuOneRunWhenTheSortFitsTheBudget) {
  const sort_plan plan = make_plan(GiB, u64_options(), cpu_host());
  EXPECT_EQ(plan.how, strategy::cpu_one_run) << why(plan);
  EXPECT_FALSE(plan.device.has_value());
  EXPECT_EQ(plan.output.mode, output_mode::mapped_whole);
  EXPECT_TRUE(plan.layout.single_run);
  EXPECT_FALSE(plan.output.prefault) << "the single run faults the output in itself";
  EXPECT_NE(why(plan).find("sorting on the CPU"), std::string::npos) << why(plan);
}

TEST(MakePlan, OneCpuRunPastTheWriteBackThresholdWritesEachOutputPageOnce) {
  // 64 GiB usable, vm.dirty_background_ratio 10: the kernel writes back from 6.4 GiB of
  // dirty pages, and the plan keeps a quarter of that spare.
  host_facts facts = cpu_host();
  facts.dirty_background_ratio = 10;
  const sort_plan small = make_plan(4 * GiB, u64_options(), facts);
  EXPECT_EQ(small.how, strategy::cpu_one_run) << why(small);
  EXPECT_FALSE(small.output.write_once);
  const sort_plan large = make_plan(8 * GiB, u64_options(), facts);
  EXPECT_EQ(large.how, strategy::cpu_one_run) << why(large);
  EXPECT_TRUE(large.output.write_once);
  EXPECT_FALSE(large.output.prefault) << "faulting a page in writes it";
  EXPECT_NE(why(large).find("writing each page of the output mapping once"), std::string::npos)
      << why(large);
  // Where the threshold is unknown, nothing says a second write would be written back first.
  EXPECT_FALSE(make_plan(8 * GiB, u64_options(), cpu_host()).output.write_once);
  // Runs that are merged write the output once anyway.
  EXPECT_FALSE(make_plan(8 * GiB, u64_options(12 * GiB), facts).output.write_once);
  // Planned for a GPU that is not there: the prefault begun before the probe stops when the
  // sort starts (sort_cpu_one_run), which writes each page once.
  facts.gpu_allowed = true;
  facts.gpu_note = "no usable CUDA device found";
  const sort_plan absent = make_plan(8 * GiB, u64_options(), facts);
  EXPECT_EQ(absent.how, strategy::cpu_one_run) << why(absent);
  EXPECT_TRUE(absent.output.prefault);
  EXPECT_TRUE(absent.output.write_once);
  EXPECT_NE(why(absent).find("the prefault started for the GPU stops"), std::string::npos)
      << why(absent);
}

TEST(MakePlan, AllowedButAbsentGpuStillPrefaultsForTheCpu) {
  // The output is planned before the GPU is probed: when none turns up, the CPU strategies
  // write into the pages already faulted in.
  host_facts facts = cpu_host();
  facts.gpu_allowed = true;
  facts.gpu_note = "no usable CUDA device found";
  const sort_plan one = make_plan(GiB, u64_options(), facts);
  EXPECT_EQ(one.how, strategy::cpu_one_run);
  EXPECT_EQ(one.output.mode, output_mode::mapped_whole);
  EXPECT_TRUE(one.output.prefault);
  EXPECT_NE(why(one).find("no usable CUDA device found: sorting on the CPU"), std::string::npos)
      << why(one);
  const sort_plan runs = make_plan(24 * MiB, u64_options(32 * MiB), facts);
  EXPECT_EQ(runs.how, strategy::cpu_runs);
  EXPECT_EQ(runs.output.mode, output_mode::mapped_whole);
  // The same answer as plan_output gives before the probe.
  const output_plan early = plan_output(24 * MiB, u64_options(32 * MiB), facts);
  EXPECT_EQ(early.mode, runs.output.mode);
  EXPECT_EQ(early.prefault, runs.output.prefault);
  EXPECT_EQ(early.prefault_threads, runs.output.prefault_threads);
}

TEST(MakePlan, CpuRunsInMemoryWhenOnlyTheInputFitsTheBudget) {
  // 24 MiB of input in a 32 MiB budget: the radix sort's scratch does not fit beside it.
  const sort_plan plan = make_plan(24 * MiB, u64_options(32 * MiB), cpu_host());
  EXPECT_EQ(plan.how, strategy::cpu_runs) << why(plan);
  EXPECT_GE(plan.layout.resident_bytes, 24 * MiB);
  EXPECT_LT(plan.layout.chunk_records * 8, 24 * MiB);
  // The merge writes one mapping of the output, as for runs that spill: faulted in by the
  // merge's threads where the write-back threshold is unknown (here),
  EXPECT_EQ(plan.output.mode, output_mode::mapped_whole);
  EXPECT_FALSE(plan.output.prefault);
  EXPECT_NE(why(plan).find("runs kept in memory: mapped whole, each merge thread"),
            std::string::npos)
      << why(plan);
  // and from the start, at most three quarters of the threshold ahead of the merge, where
  // it is known.
  host_facts known = cpu_host();
  known.dirty_background_bytes = 8 * MiB;
  const sort_plan ahead = make_plan(24 * MiB, u64_options(32 * MiB), known);
  EXPECT_EQ(ahead.how, strategy::cpu_runs) << why(ahead);
  EXPECT_EQ(ahead.output.mode, output_mode::mapped_whole);
  EXPECT_TRUE(ahead.output.prefault);
  EXPECT_EQ(ahead.output.prefault_threads, 8u);
  EXPECT_EQ(ahead.output.prefault_ahead_beside_runs(24 * MiB), 6 * MiB);
  EXPECT_NE(why(ahead).find("runs kept in memory: mapped whole and faulted in from the start"),
            std::string::npos)
      << why(ahead);
  EXPECT_NE(why(ahead).find("the output faulted in at most 6 MiB ahead of the merge"),
            std::string::npos)
      << why(ahead);
  // The plan made before the probe says the same.
  const output_plan early = plan_output(24 * MiB, u64_options(32 * MiB), known);
  EXPECT_EQ(early.mode, ahead.output.mode);
  EXPECT_EQ(early.prefault, ahead.output.prefault);
}

TEST(MakePlan, CpuSpilledRunsWhenTheInputExceedsTheBudget) {
  const sort_plan plan = make_plan(GiB, u64_options(64 * MiB), cpu_host());
  EXPECT_EQ(plan.how, strategy::cpu_spilled_runs) << why(plan);
  EXPECT_EQ(plan.layout.resident_bytes, 0u);
  EXPECT_GE(plan.layout.merge_fanin, 2u);
  // One mapping, faulted in by the merge's threads (the write-back threshold is unknown
  // here), or from the start ahead of the merge where it is known.
  EXPECT_EQ(plan.output.mode, output_mode::mapped_whole);
  EXPECT_FALSE(plan.output.prefault);
  EXPECT_NE(why(plan).find("runs spilled: mapped whole"), std::string::npos) << why(plan);
  host_facts known = cpu_host();
  known.dirty_background_bytes = 256 * MiB;
  const sort_plan ahead = make_plan(GiB, u64_options(64 * MiB), known);
  EXPECT_EQ(ahead.how, strategy::cpu_spilled_runs);
  EXPECT_TRUE(ahead.output.prefault);
  EXPECT_EQ(ahead.output.prefault_threads, 8u);
  EXPECT_EQ(ahead.output.prefault_ahead_beside_runs(GiB), 192 * MiB);
  EXPECT_NE(why(ahead).find("the output faulted in at most 192 MiB ahead of the merge"),
            std::string::npos)
      << why(ahead);
  // A threshold beyond the whole output (a host with much memory): all of it faulted in from
  // the start, with no distance to keep.
  known.dirty_background_bytes = 2 * GiB;
  const sort_plan whole = make_plan(GiB, u64_options(64 * MiB), known);
  EXPECT_EQ(whole.how, strategy::cpu_spilled_runs);
  EXPECT_TRUE(whole.output.prefault) << why(whole);
  EXPECT_GE(whole.output.prefault_ahead_beside_runs(GiB), GiB);
  EXPECT_NE(why(whole).find("faulted in from the start"), std::string::npos) << why(whole);
  EXPECT_EQ(why(whole).find("faulted in at most"), std::string::npos) << why(whole);
  // Merging sorted inputs (--merge) keeps its windows.
  sort_options merge = u64_options(64 * MiB);
  merge.merge_only = true;
  EXPECT_EQ(plan_output(GiB, merge, cpu_host()).mode, output_mode::windows);
}

TEST(MakePlan, CpuStreamKeepsRunsInMemoryUpToHalfTheBudget) {
  const sort_plan plan = make_plan(std::nullopt, u64_options(64 * MiB), cpu_host());
  EXPECT_EQ(plan.how, strategy::cpu_spilled_runs);
  EXPECT_EQ(plan.layout.resident_bytes, 32 * MiB);
  // Its runs are merged into one mapping of the output once it ends within the budget, else
  // into windows; faulted in from the merge's start where the write-back threshold is known
  // (the strategy bounds the distance once it knows the runs' size).
  host_facts known = cpu_host();
  known.dirty_background_bytes = 8 * MiB;
  const sort_plan ahead = make_plan(std::nullopt, u64_options(64 * MiB), known);
  for (const sort_plan* p : {&plan, &ahead}) {
    EXPECT_EQ(p->output.mode, output_mode::windows);
    EXPECT_TRUE(p->output.whole(64 * MiB));
    EXPECT_FALSE(p->output.whole(64 * MiB + 1));
  }
  EXPECT_FALSE(plan.output.prefault);
  EXPECT_NE(why(plan).find("each merge thread faulting in what it writes"), std::string::npos)
      << why(plan);
  EXPECT_TRUE(ahead.output.prefault);
  EXPECT_EQ(ahead.output.prefault_threads, 8u);
  EXPECT_NE(why(ahead).find("merged into one mapping of the output then, faulted in ahead"),
            std::string::npos)
      << why(ahead);
  EXPECT_NE(ahead.describe(u64_options().format)
                .find("output mapped whole once the stream ends within 64 MiB, else in windows"),
            std::string::npos)
      << ahead.describe(u64_options().format);
}

TEST(MakePlan, EmptyInputIsRunsOfNothing) {
  EXPECT_EQ(make_plan(0, u64_options(), cpu_host()).how, strategy::cpu_runs);
}

TEST(MakePlan, BudgetIsRaisedToTheMinimumAndCappedAtMemoryWithAReason) {
  const sort_plan tiny = make_plan(GiB, u64_options(1), cpu_host());
  EXPECT_EQ(tiny.budget_bytes, min_buffer_bytes);
  EXPECT_NE(why(tiny).find("adjusted to 4 MiB"), std::string::npos) << why(tiny);
  const sort_plan huge = make_plan(GiB, u64_options(std::uint64_t{1} << 40), cpu_host(8 * GiB));
  EXPECT_EQ(huge.budget_bytes, 8 * GiB);
  EXPECT_EQ(make_plan(GiB, u64_options(), cpu_host(8 * GiB)).budget_bytes, 4 * GiB)
      << "default: half the physical memory";
}

TEST(MakePlan, ThreadsAreCappedAtTheCpusWithAReason) {
  sort_options o = u64_options();
  o.threads = 64;
  const sort_plan plan = make_plan(GiB, o, cpu_host(64 * GiB, 4));
  EXPECT_EQ(plan.threads, 4u);
  EXPECT_NE(why(plan).find("64 threads asked, 4 CPUs available"), std::string::npos);
  o.threads = 3;
  EXPECT_EQ(make_plan(GiB, o, cpu_host(64 * GiB, 4)).threads, 3u);
}

TEST(MakePlan, WideRecordsPlanLikeKeysOnTheHost) {
  sort_options o = u64_options(64 * MiB);
  o.format = test::make_format("u64", 100, 20);
  EXPECT_EQ(make_plan(std::uint64_t{10000} * 100, o, cpu_host()).how, strategy::cpu_one_run);
  EXPECT_EQ(make_plan(std::uint64_t{10000000} * 100, o, cpu_host()).how,
            strategy::cpu_spilled_runs);
}

TEST(MakePlan, DescriptionNamesTheStrategyDeviceAndReasons) {
  const std::string gpu = make_plan(16 * GiB, u64_options(), gpu_host(GiB / 8))
                              .describe(record_format{});
  EXPECT_NE(gpu.find("gpu-ranges on GPU 0 (Test GPU)"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("prefaulted by 8 threads"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("because"), std::string::npos) << gpu;
  const std::string cpu =
      make_plan(GiB, u64_options(64 * MiB), cpu_host()).describe(record_format{});
  EXPECT_NE(cpu.find("cpu-spilled-runs"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("spilled to temporary files"), std::string::npos) << cpu;
}

TEST(MakePlan, SeveralGpusAreListedWithTheirTopology) {
  // Two GPUs selected, 1 GiB in one chunk: the first sorts, both show in the plan with their
  // peer access.
  host_facts facts = gpu_host(GiB / 8);
  facts.gpu->devices = {0, 1};
  facts.gpu->topology.devices = {{0, "Test GPU", 80 * GiB, "0000:1b:00.0", 0},
                                 {1, "Test GPU", 80 * GiB, "0000:2c:00.0", 1}};
  facts.gpu->topology.can_access = {true, true, true, true};
  const sort_plan plan = make_plan(GiB, u64_options(), facts);
  EXPECT_EQ(plan.device, 0);
  EXPECT_EQ(plan.devices, (std::vector<int>{0, 1}));
  const std::string text = plan.describe(record_format{});
  EXPECT_NE(text.find("\n  GPUs selected: 0,1"), std::string::npos) << text;
  EXPECT_NE(text.find("\n  GPU 1: Test GPU, 80 GiB, PCI 0000:2c:00.0, NUMA node 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\n  peer access (row from, column to) 0 1: 0 [- y] 1 [y -]"),
            std::string::npos)
      << text;
  // One GPU: no list line, the plan names it as before.
  const sort_plan one = make_plan(GiB, u64_options(), gpu_host(GiB / 8));
  EXPECT_EQ(one.devices, (std::vector<int>{0}));
  EXPECT_EQ(one.describe(record_format{}).find("GPUs selected"), std::string::npos);
  // The CPU: no devices.
  EXPECT_TRUE(make_plan(GiB, u64_options(), cpu_host()).devices.empty());
}

TEST(MakePlan, SeveralGpusShareTheRunsOfAFile) {
  host_facts facts = gpu_host(std::uint64_t{1} << 27);  // chunks of 1 GiB of u64
  facts.gpu->devices = {0, 1};
  // 16 GiB: the GPUs take its 16 chunks from one queue.
  const sort_plan plan = make_plan(16 * GiB, u64_options(), facts);
  EXPECT_EQ(plan.sort_devices, (std::vector<int>{0, 1})) << why(plan);
  EXPECT_EQ(plan.how, strategy::gpu_ranges) << why(plan);
  EXPECT_NE(why(plan).find("2 GPUs form runs at once, each taking the file's next chunk from "
                           "one queue"),
            std::string::npos)
      << why(plan);
  EXPECT_NE(plan.describe(record_format{}).find("plan: gpu-ranges on GPUs 0,1 (Test GPU)"),
            std::string::npos)
      << plan.describe(record_format{});
  // One chunk: the first GPU sorts it straight into the output.
  const sort_plan one = make_plan(GiB, u64_options(), facts);
  EXPECT_EQ(one.how, strategy::gpu_one_chunk);
  EXPECT_EQ(one.sort_devices, (std::vector<int>{0}));
  // A stream is read in order, by the first GPU.
  const sort_plan stream = make_plan(std::nullopt, u64_options(), facts);
  EXPECT_EQ(stream.sort_devices, (std::vector<int>{0}));
  EXPECT_NE(why(stream).find("a stream is read in order: GPU 0 forms every run"),
            std::string::npos)
      << why(stream);
  // Spilling: each GPU holds its own runs on their way to disk and has its own staging.
  const sort_plan spill = make_plan(16 * GiB, u64_options(8 * GiB), facts);
  EXPECT_EQ(spill.layout.resident_bytes, 8 * GiB - 2 * (2 * GiB + 2 * 8 * 32 * MiB)) << why(spill);
}

TEST(MakePlan, OneChunkIsTheFirstGpusAndSharesAreCutForTheSmallest) {
  // GPU 0 holds chunks of 2 GiB of u64, GPU 1 (less memory free) of 1 GiB.
  host_facts facts = gpu_host(std::uint64_t{1} << 27);
  facts.gpu->one_chunk_records = std::uint64_t{1} << 28;
  facts.gpu->devices = {0, 1};
  // 2 GiB fits the first GPU: one chunk there, straight into the output.
  const sort_plan one = make_plan(2 * GiB, u64_options(), facts);
  EXPECT_EQ(one.how, strategy::gpu_one_chunk) << why(one);
  EXPECT_EQ(one.sort_devices, (std::vector<int>{0}));
  EXPECT_EQ(one.gpu_chunk_records, std::uint64_t{1} << 28);
  EXPECT_NE(why(one).find("fits one GPU chunk of 268435456 records"), std::string::npos)
      << why(one);
  // 16 GiB: shares of 8 GiB, each cut into the smaller GPU's 1 GiB chunks, 16 runs in all.
  const sort_plan shared = make_plan(16 * GiB, u64_options(), facts);
  EXPECT_EQ(shared.sort_devices, (std::vector<int>{0, 1})) << why(shared);
  EXPECT_EQ(shared.gpu_chunk_records, std::uint64_t{1} << 27);
  EXPECT_EQ(shared.how, strategy::gpu_ranges) << why(shared);
}

TEST(MakePlan, GpusThatHoldTheInputTogetherSortItByExchange) {
  // Two GPUs of 1 GiB chunks of u64 that sort 2^31 records (16 GiB) together by exchange.
  host_facts facts = gpu_host(std::uint64_t{1} << 27);
  facts.gpu->devices = {0, 1};
  facts.gpu->exchange_records = std::uint64_t{1} << 31;
  const sort_plan both = make_plan(16 * GiB, u64_options(), facts);
  EXPECT_EQ(both.how, strategy::gpu_exchange) << why(both);
  EXPECT_EQ(both.sort_devices, (std::vector<int>{0, 1}));
  EXPECT_STREQ(strategy_name(both.how), "gpu-exchange");
  EXPECT_NE(why(both).find("hold it together"), std::string::npos) << why(both);
  // One chunk still goes to the first GPU alone.
  EXPECT_EQ(make_plan(GiB, u64_options(), facts).how, strategy::gpu_one_chunk);
  // A record more than they hold: runs, sorted again by range.
  EXPECT_EQ(make_plan(16 * GiB + 8, u64_options(), facts).how, strategy::gpu_ranges);
  // --merge-on host asks for runs merged on the host.
  sort_options host_merge = u64_options();
  host_merge.merge = merge_location::host;
  EXPECT_EQ(make_plan(16 * GiB, host_merge, facts).how, strategy::gpu_runs);
  // Each GPU's key range: by the hybrid radix sort where --algorithm asks for it or auto finds
  // 64-bit keys spread evenly; keys not sampled yet are left to the strategy's sample.
  EXPECT_EQ(both.exchange_local, gpu::chunk_algorithm::automatic) << why(both);
  EXPECT_NE(why(both).find("or Onesweep, as a sample of the keys says"), std::string::npos)
      << why(both);
  sort_options hrs = u64_options();
  hrs.algo = algorithm::hrs;
  const sort_plan by_hrs = make_plan(16 * GiB, hrs, facts);
  EXPECT_EQ(by_hrs.how, strategy::gpu_exchange) << why(by_hrs);
  EXPECT_EQ(by_hrs.exchange_local, gpu::chunk_algorithm::hrs);
  EXPECT_NE(why(by_hrs).find("with the hybrid radix sort (--algorithm)"), std::string::npos)
      << why(by_hrs);
  host_facts even = facts;
  even.spread = key_spread::even;
  const sort_plan sampled = make_plan(16 * GiB, u64_options(), even);
  EXPECT_EQ(sampled.exchange_local, gpu::chunk_algorithm::hrs);
  EXPECT_NE(why(sampled).find("with the hybrid radix sort for evenly spread keys"),
            std::string::npos)
      << why(sampled);
  // A stream's size is unknown: its runs.
  EXPECT_NE(make_plan(std::nullopt, u64_options(), facts).how, strategy::gpu_exchange);
  // One GPU selected: the probe leaves exchange_records at 0.
  facts.gpu->devices = {0};
  facts.gpu->exchange_records = 0;
  EXPECT_NE(make_plan(16 * GiB, u64_options(), facts).how, strategy::gpu_exchange);
}

TEST(ExchangeLocalSort, FollowsTheAlgorithmAndTheSampledKeys) {
  using gpu::chunk_algorithm;
  const sort_options wide = u64_options();
  sort_options narrow = u64_options();
  narrow.format = format_preset("u32");
  // auto: HRS where it measured faster over two GPUs (even keys, whose exchange is HRS's first
  // round, of either width; few distinct keys), Onesweep for skewed keys.
  EXPECT_EQ(exchange_local_sort(wide, key_spread::even), chunk_algorithm::hrs);
  EXPECT_EQ(exchange_local_sort(wide, key_spread::patterned), chunk_algorithm::hrs);
  EXPECT_EQ(exchange_local_sort(wide, key_spread::few_distinct), chunk_algorithm::hrs);
  EXPECT_EQ(exchange_local_sort(wide, key_spread::skewed), chunk_algorithm::onesweep);
  EXPECT_EQ(exchange_local_sort(wide, key_spread::unknown), chunk_algorithm::automatic);
  EXPECT_EQ(exchange_local_sort(narrow, key_spread::even), chunk_algorithm::hrs);
  EXPECT_EQ(exchange_local_sort(narrow, key_spread::few_distinct), chunk_algorithm::hrs);
  EXPECT_EQ(exchange_local_sort(narrow, key_spread::skewed), chunk_algorithm::onesweep);
  // Asked for by name, whatever the keys.
  sort_options hrs = narrow;
  hrs.algo = algorithm::hrs;
  EXPECT_EQ(exchange_local_sort(hrs, key_spread::skewed), chunk_algorithm::hrs);
  sort_options onesweep = wide;
  onesweep.algo = algorithm::onesweep;
  EXPECT_EQ(exchange_local_sort(onesweep, key_spread::few_distinct), chunk_algorithm::onesweep);
}

TEST(MakePlan, FewRunsCountTheChunksTheGpusTakeFromOneQueue) {
  if (!cpu::merges_with_vectors(u64_options().format, cpu::merge_policy{}))
    GTEST_SKIP() << "this CPU merges with the loser tree: few runs go by range too";
  const std::uint64_t chunk = std::uint64_t{1} << 27;
  host_facts facts = gpu_host(chunk);
  facts.gpu->devices = {0, 1, 2};
  // 8 chunks over 3 GPUs, each share over two: run c is chunk c, 8 runs, merged on the host
  // (shares cut alone would make 3 runs each, 9 in all).
  const sort_plan eight = make_plan(8 * chunk * 8, u64_options(), facts);
  EXPECT_EQ(eight.how, strategy::gpu_runs) << why(eight);
  EXPECT_NE(why(eight).find("its 8 runs are few enough"), std::string::npos) << why(eight);
  EXPECT_NE(why(eight).find("one queue"), std::string::npos) << why(eight);
  // 8.5 chunks: 9 runs, by range.
  EXPECT_EQ(make_plan(17 * chunk / 2 * 8, u64_options(), facts).how, strategy::gpu_ranges);
}

TEST(FileRuns, OnePerChunkWhereEveryShareHoldsAChunkElseEachShareCutAlone) {
  const std::vector<int> three{0, 1, 2};
  EXPECT_EQ(file_runs(70 * 8, 8, three, 10), 7u);  // shares of 23-24 records
  EXPECT_EQ(file_runs(71 * 8, 8, three, 10), 8u);
  EXPECT_EQ(file_runs(70 * 8, 8, {0}, 10), 7u);
  // A share of less than a chunk: each share is its own run.
  EXPECT_EQ(file_runs(25 * 8, 8, three, 10), 3u);
  EXPECT_EQ(file_runs(0, 8, three, 10), 0u);
}

TEST(ShareInput, EqualSharesOfWholeRecordsInInputOrder) {
  const std::vector<int> two{3, 1};
  const std::vector<gpu_share> halves = share_input(1000 * 16, 16, two);
  ASSERT_EQ(halves.size(), 2u);
  EXPECT_EQ(halves[0].device, 3);
  EXPECT_EQ(halves[0].begin, 0u);
  EXPECT_EQ(halves[0].end, 500u * 16);
  EXPECT_EQ(halves[1].device, 1);
  EXPECT_EQ(halves[1].begin, 500u * 16);
  EXPECT_EQ(halves[1].end, 1000u * 16);
  EXPECT_LT(halves[0].first_run, halves[1].first_run);
  EXPECT_EQ(halves[1].first_run, share_run_id_stride);
  // Uneven: boundaries stay on records, sizes differ by at most one record.
  const std::vector<gpu_share> three = share_input(1001 * 12, 12, {0, 1, 2});
  ASSERT_EQ(three.size(), 3u);
  std::uint64_t at = 0;
  for (const gpu_share& s : three) {
    EXPECT_EQ(s.begin, at);
    EXPECT_EQ(s.begin % 12, 0u);
    EXPECT_GE((s.end - s.begin) / 12, 333u);
    EXPECT_LE((s.end - s.begin) / 12, 334u);
    at = s.end;
  }
  EXPECT_EQ(at, 1001u * 12);
  // Fewer records than GPUs: a share per record; a stream or nothing: the first GPU's.
  EXPECT_EQ(share_input(2 * 8, 8, {0, 1, 2, 3}).size(), 2u);
  const std::vector<gpu_share> stream = share_input(std::nullopt, 8, two);
  ASSERT_EQ(stream.size(), 1u);
  EXPECT_EQ(stream[0].device, 3);
  EXPECT_EQ(share_input(0, 8, two).size(), 1u);
  EXPECT_THROW((void)share_input(64, 8, {}), error);
}

// --- the GPU sort algorithm: per input (--algorithm, the record format) and per chunk -------

TEST(ChunkAlgorithm, AutoTakesHrsOnlyWhereEqualKeysCannotBeToldApart) {
  using gpu::chunk_algorithm;
  sort_options o;  // --algorithm auto, u64 keys
  EXPECT_EQ(chunk_algorithm_for(o, true), chunk_algorithm::automatic);
  EXPECT_EQ(chunk_algorithm_for(o, false), chunk_algorithm::onesweep) << "(key, index) items";
  o.format = test::make_format("u64", 16, 0);  // a payload: Onesweep keeps equal keys in order
  EXPECT_EQ(chunk_algorithm_for(o, true), chunk_algorithm::onesweep);
  o.algo = algorithm::hrs;
  EXPECT_EQ(chunk_algorithm_for(o, true), chunk_algorithm::hrs);
  EXPECT_EQ(chunk_algorithm_for(o, false), chunk_algorithm::onesweep);
  o.stable = true;  // hrs cannot keep equal keys with a payload in order: refused
  EXPECT_THROW((void)chunk_algorithm_for(o, true), error);
  o.format = record_format{};  // keys alone: equal records are identical, so hrs may sort them
  EXPECT_EQ(chunk_algorithm_for(o, true), chunk_algorithm::hrs);
  o.algo = algorithm::onesweep;
  EXPECT_EQ(chunk_algorithm_for(o, true), chunk_algorithm::onesweep);
}

TEST(ChunkAlgorithm, AutoSwitchesAtTheMeasuredCrossovers) {
  using gpu::chunk_algorithm;
  constexpr chunk_algorithm hrs = chunk_algorithm::hrs;
  constexpr chunk_algorithm onesweep = chunk_algorithm::onesweep;
  // Every shape the GPU sorts directly has a crossover; pairs never reach theirs.
  for (const std::uint32_t key : {4u, 8u}) {
    for (const std::uint32_t value : {0u, 4u, 8u}) {
      const gpu::hrs_crossover* c = gpu::find_hrs_crossover(key, value);
      ASSERT_NE(c, nullptr) << key << "+" << value;
      if (gpu::hrs_smallest_chunk(*c) != gpu::hrs_never) continue;
      for (const std::uint64_t records : {0ull, 1ull, 1ull << 20, 1ull << 32, ~0ull})
        EXPECT_EQ(gpu::choose_chunk_algorithm(key, value, records, 0.0, 1.0), onesweep)
            << key << "+" << value << ", " << records << " records";
    }
  }
  // Key-only chunks: (records, scatter rounds, top-digit concentration) -> sorter.
  const struct {
    std::uint32_t key_size;
    std::uint64_t records;
    double rounds;
    double concentration;
    chunk_algorithm expected;
  } table[] = {
      // 64-bit: nothing below 2^22 records.
      {8, 0, 0.0, 1.0, onesweep},
      {8, (1ull << 22) - 1, 0.0, 1.0, onesweep},
      {8, (1ull << 22) - 1, 2.0, 1.0, onesweep},
      // Few distinct keys from 2^22 on, however concentrated.
      {8, 1ull << 22, 0.0, 256.0, hrs},
      {8, 1ull << 22, 1.0, 40.0, hrs},
      // Evenly spread keys from 2^22 on; mildly concentrated ones (Zipf: 1.5, AND of 2 words:
      // 6) from 2^24 on; the rest (AND of 3 words: 2.9 rounds, 35; of 5: 4.1, 155) from 2^26.
      {8, 1ull << 22, 2.0, 1.0, hrs},
      {8, 1ull << 22, 4.5, 1.2, hrs},
      {8, 1ull << 22, 2.0, 1.5, onesweep},
      {8, (1ull << 24) - 1, 2.1, 6.2, onesweep},
      {8, 1ull << 24, 2.0, 1.5, hrs},
      {8, 1ull << 24, 2.1, 6.2, hrs},
      {8, 1ull << 24, 2.5, 37.0, onesweep},
      {8, (1ull << 26) - 1, 2.9, 35.0, onesweep},
      {8, 1ull << 26, 2.9, 35.0, hrs},
      {8, 1ull << 28, 4.1, 155.0, hrs},
      // Too many rounds: Onesweep at any size.
      {8, 1ull << 22, 4.6, 1.0, onesweep},
      {8, 1ull << 32, 4.6, 1.0, onesweep},
      {8, 1ull << 32, 7.0, 1.0, onesweep},
      // 32-bit: few distinct keys from 2^22 on; evenly spread keys from 2^26 up to 9216 x 2^16
      // (then a third round: 2^30 uniform measured 1.30x slower), only if spread evenly.
      {4, (1ull << 22) - 1, 0.0, 256.0, onesweep},
      {4, 1ull << 22, 0.0, 256.0, hrs},
      {4, 1ull << 28, 1.0, 1.0, hrs},
      {4, 1ull << 22, 2.0, 1.0, onesweep},
      {4, (1ull << 26) - 1, 2.0, 1.0, onesweep},
      {4, 1ull << 26, 2.0, 1.0, hrs},
      {4, 1ull << 28, 2.1, 0.97, hrs},
      {4, 1ull << 28, 2.1, 1.5, onesweep},
      {4, 1ull << 32, 2.1, 1.4, onesweep},
      {4, 1ull << 32, 2.5, 1.0, onesweep},
      {4, 1ull << 29, 2.1, 1.0, hrs},
      {4, 9216ull << 16, 2.1, 1.0, hrs},
      {4, (9216ull << 16) + 1, 2.1, 1.0, onesweep},
      {4, 1ull << 30, 2.1, 1.0, onesweep},
      {4, 1ull << 31, 2.0, 0.97, onesweep},
      {4, 1ull << 31, 1.0, 1.0, hrs},  // few distinct keys at any size
      {8, 1ull << 31, 2.1, 1.0, hrs},
  };
  for (const auto& row : table)
    EXPECT_EQ(gpu::choose_chunk_algorithm(row.key_size, 0, row.records, row.rounds,
                                          row.concentration),
              row.expected)
        << "u" << row.key_size * 8 << ", " << row.records << " records, " << row.rounds
        << " rounds, concentration " << row.concentration;
  EXPECT_EQ(gpu::choose_chunk_algorithm(16, 0, std::uint64_t{1} << 30, 0.0, 1.0), onesweep)
      << "no crossover measured: Onesweep";
  EXPECT_STREQ(gpu::to_string(chunk_algorithm::automatic), "auto");
}

TEST(ProbeHost, AutoSortsSmallInputsOnTheCpuWithoutTouchingTheGpu) {
  sort_options o = u64_options();
  const std::uint64_t crossover = cpu_crossover_bytes_per_cpu * 16;
  EXPECT_EQ(crossover, 896 * MiB) << "896 MiB on the 16 CPUs of the H100 machine";
  EXPECT_FALSE(cpu_crossover_reason(o, crossover, 16).empty());
  EXPECT_FALSE(cpu_crossover_reason(o, 0, 16).empty());
  EXPECT_TRUE(cpu_crossover_reason(o, crossover + 8, 16).empty());
  EXPECT_TRUE(cpu_crossover_reason(o, std::nullopt, 16).empty()) << "a stream: size unknown";
  EXPECT_FALSE(cpu_crossover_reason(o, crossover / 8, 2).empty()) << "fewer CPUs: lower";
  EXPECT_TRUE(cpu_crossover_reason(o, crossover / 8 + 8, 2).empty());
  // Options that ask for the GPU keep it at any size.
  for (int variant = 0; variant < 5; ++variant) {
    sort_options asked = o;
    if (variant == 0) asked.algo = algorithm::onesweep;
    if (variant == 1) asked.algo = algorithm::hrs;
    if (variant == 2) asked.devices.how = device_selection::mode::all;
    if (variant == 3) asked.devices = {device_selection::mode::list, {0}};
    if (variant == 4) asked.gpu_memory_bytes = GiB;
    EXPECT_TRUE(cpu_crossover_reason(asked, 1024, 16).empty()) << "variant " << variant;
  }
  sort_options merge_on_gpu = o;
  merge_on_gpu.merge = merge_location::gpu;
  EXPECT_TRUE(cpu_crossover_reason(merge_on_gpu, 1024, 16).empty());
  // probe_host rules the GPU out below the crossover, and probe_gpu says why without probing.
  host_facts facts = probe_host(o, std::uint64_t{1024});
  EXPECT_FALSE(facts.gpu_allowed);
  probe_gpu(o, facts, std::uint64_t{1024});
  EXPECT_FALSE(facts.gpu.has_value());
  EXPECT_NE(facts.gpu_note.find("sooner than the GPU path starts"), std::string::npos)
      << facts.gpu_note;
  EXPECT_EQ(make_plan(1024, o, facts).how, strategy::cpu_one_run);
}

TEST(ProbeHost, CpuOptionsNeverTouchTheGpu) {
  sort_options o;
  o.devices.how = device_selection::mode::none;
  host_facts facts = probe_host(o);
  EXPECT_FALSE(facts.gpu_allowed);
  EXPECT_GE(facts.cpus, 1u);
  EXPECT_GT(facts.usable_memory, 0u);
  probe_gpu(o, facts);
  EXPECT_FALSE(facts.gpu.has_value());
  EXPECT_EQ(facts.gpu_note, "--devices none");
  o.devices.how = device_selection::mode::automatic;
  o.algo = algorithm::cpu;
  EXPECT_FALSE(probe_host(o).gpu_allowed);
}

TEST(MakePlan, MergeOnlyMergesTheInputsOnTheHostEvenWithAGpu) {
  sort_options o = u64_options();
  o.merge_only = true;
  for (const host_facts& facts : {cpu_host(), gpu_host(GiB)}) {
    const sort_plan plan = make_plan(16 * GiB, o, facts);
    EXPECT_EQ(plan.how, strategy::merge_inputs) << why(plan);
    EXPECT_EQ(plan.output.mode, output_mode::mapped_whole);
    EXPECT_TRUE(plan.output.prefault) << "faulted in while the inputs are checked";
    EXPECT_NE(plan.describe(o.format).find("one run per input"), std::string::npos);
  }
  // Past the budget (within the page cache's share of memory), windows, each faulted in by
  // the merge thread that writes it: one mapping faulted in ahead of the merge measured no
  // faster on the H200 machine (16 GiB in four inputs with -S 4G: medians 1.98 s against
  // 1.91 s; tools/bench/results/2026-11-29-h200-merge-inputs).
  o.buffer_bytes = 4 * GiB;
  host_facts known = cpu_host();
  known.dirty_background_bytes = 8 * GiB;
  for (const host_facts& facts : {cpu_host(), known}) {
    const sort_plan past = make_plan(16 * GiB, o, facts);
    EXPECT_EQ(past.output.mode, output_mode::windows) << why(past);
    EXPECT_FALSE(past.output.prefault) << "an output larger than the budget would evict itself";
  }
  // No CUDA initialisation for a merge.
  EXPECT_FALSE(probe_host(o).gpu_allowed);
  host_facts facts = probe_host(o);
  probe_gpu(o, facts);
  EXPECT_FALSE(facts.gpu.has_value());
  EXPECT_EQ(facts.gpu_note, "--merge");
}

// The strategy sort_file reports is the one the plan names, for each CPU strategy.
TEST(SortFileStrategy, StatsNameTheStrategyThatRan) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 8, 0);
  const auto data = test::random_records(1 << 20, f, test::base_seed() + 41);
  test::write_file(dir.file("in"), data);
  struct expectation {
    std::uint64_t budget;
    const char* strategy;
    bool spilled;
  };
  for (const expectation& e : {expectation{0, "cpu-one-run", false},
                               expectation{12 * MiB, "cpu-runs", false},
                               expectation{4 * MiB, "cpu-spilled-runs", true}}) {
    sort_options o;
    o.format = f;
    o.buffer_bytes = e.budget;
    o.devices.how = device_selection::mode::none;
    o.temp_dir = dir.path();
    const sort_stats stats = sort_file({dir.file("in")}, dir.file("out"), o);
    EXPECT_EQ(stats.strategy, e.strategy) << "budget " << e.budget;
    EXPECT_EQ(stats.spilled, e.spilled) << e.strategy;
    EXPECT_EQ(stats.records, std::uint64_t{1} << 20);
    EXPECT_EQ(test::read_file(dir.file("out")), test::reference_sort(data, f, false))
        << e.strategy;
  }
}

}  // namespace
}  // namespace gpusort::pipeline
