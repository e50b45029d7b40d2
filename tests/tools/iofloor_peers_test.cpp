// Tests of gpusort-iofloor (every path copies the input exactly) and of the peer programs.
#include <algorithm>
#include <cstring>

#include "datagen/generator.hpp"
#include "test_support.hpp"
#include "tools_test_support.hpp"

namespace gpusort::test {
namespace {

std::vector<std::byte> make_u64_input(const std::string& path, std::uint64_t count) {
  tools::generator_config c;
  c.count = count;
  c.seed = base_seed();
  const tools::record_generator gen(c);
  std::vector<std::byte> bytes(count * 8);
  gen.generate(0, count, bytes);
  write_bytes(path, bytes);
  return bytes;
}

TEST(IoFloor, EveryPathCopiesTheInputExactly) {
  scratch_dir dir;
  // Not a multiple of 4096: the O_DIRECT paths write an unaligned tail.
  std::vector<std::byte> input = random_records(3 * 131072 + 13, format_preset("u64"), base_seed());
  input.resize(input.size() - 3);
  write_bytes(dir.file("in.bin"), input);
  const std::string tool = sh_quote(GPUSORT_IOFLOOR);
  std::string files = " ";
  files += dir.file("in.bin");
  files += ' ';
  files += dir.file("out.bin");
  // Each write path alone, then checked byte for byte.
  for (const char* path : {"uring-sink", "mmap-sink", "uring-inline", "uring-async",
                           "uring-threads", "direct", "direct-threads"}) {
    SCOPED_TRACE(path);
    const command_result r = run_command(tool + " --repeat 1 -j 3 --block-size 64K --write " +
                                         path + files);
    ASSERT_EQ(r.status, 0) << r.output;
    if (r.output.find("skipped") != std::string::npos) continue;  // e.g. no O_DIRECT here
    EXPECT_EQ(read_bytes(dir.file("out.bin")), input);
  }
  const command_result j = run_command(tool + " --repeat 2 --json --verify" + files);
  ASSERT_EQ(j.status, 0) << j.output;
  for (const char* key : {"\"variants\"", "\"best\"", "\"floor\"", "\"median_s\"",
                          "\"uring-threads\"", "\"mmap-sink\"", "\"direct\""})
    EXPECT_NE(j.output.find(key), std::string::npos) << key << " in\n" << j.output;
  EXPECT_EQ(read_bytes(dir.file("out.bin")), input);
  const command_result table = run_command(tool + " --repeat 1" + files);
  ASSERT_EQ(table.status, 0) << table.output;
  EXPECT_NE(table.output.find("floor:"), std::string::npos) << table.output;
  EXPECT_EQ(run_command(tool + " " + dir.file("missing.bin") + " " + dir.file("out.bin")).status,
            2);
}

TEST(Peers, TbbSortSortsU64Files) {
  scratch_dir dir;
  const std::vector<std::byte> input = make_u64_input(dir.file("in.bin"), 100000);
  const command_result r = run_command(sh_quote(GPUSORT_PEER_TBBSORT) + " --timings " +
                                       dir.file("in.bin") + " " + dir.file("out.bin"));
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<std::uint64_t> keys(100000);
  std::memcpy(keys.data(), input.data(), input.size());
  std::sort(keys.begin(), keys.end());
  std::vector<std::byte> expected(input.size());
  std::memcpy(expected.data(), keys.data(), expected.size());
  EXPECT_EQ(read_bytes(dir.file("out.bin")), expected);
  EXPECT_EQ(run_command(sh_quote(GPUSORT_VALIDATE) + " " + dir.file("in.bin") + " " +
                        dir.file("out.bin")).status, 0);
  EXPECT_EQ(run_command(sh_quote(GPUSORT_PEER_TBBSORT) + " " + dir.file("missing") + " " +
                        dir.file("out.bin")).status, 2);
}

TEST(Peers, NumpyScriptSortsU64Files) {
  if (run_command("python3 -c 'import numpy'").status != 0) GTEST_SKIP() << "numpy not installed";
  scratch_dir dir;
  make_u64_input(dir.file("in.bin"), 100000);
  const command_result r = run_command("python3 " + sh_quote(GPUSORT_NUMPY_SCRIPT) + " " +
                                       dir.file("in.bin") + " " + dir.file("out.bin"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(run_command(sh_quote(GPUSORT_VALIDATE) + " " + dir.file("in.bin") + " " +
                        dir.file("out.bin")).status, 0);
}

}  // namespace
}  // namespace gpusort::test
