// The gpusort command: sorts files of every type, key+value records, -r, small -S, pipes,
// and fails cleanly (exit 2, one-line message, no output file) on every kind of bad input.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <sstream>

#include "binary_under_test.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

struct result {
  int status = -1;
  std::string err;
};

/// Runs `gpusort ARGS` through the shell with stderr captured.
result run_gpusort(const std::string& args, const test::scratch_dir& dir) {
  const std::string err_path = dir.file("stderr.txt");
  const std::string cmd = test::gpusort_binary() + " " + args + " 2>" + err_path;
  const int raw = std::system(cmd.c_str());
  result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  const auto bytes = test::read_file(err_path);
  r.err.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::filesystem::remove(err_path);
  return r;
}

std::size_t count_files(const test::scratch_dir& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++n;
  return n;
}

struct type_case {
  const char* type;
  std::uint32_t size;
};

class CliSortsType : public ::testing::TestWithParam<type_case> {};

TEST_P(CliSortsType, AscendingAndReverse) {
  test::scratch_dir dir;
  const record_format f = test::make_format(GetParam().type, GetParam().size, 0);
  const std::uint64_t seed = test::base_seed() + GetParam().size;
  SCOPED_TRACE(std::string(GetParam().type) + " seed " + std::to_string(seed));
  const auto data = test::random_records(100003, f, seed);
  test::write_file(dir.file("in.bin"), data);
  for (const bool reverse : {false, true}) {
    const result r = run_gpusort(std::string("--devices none -t ") + GetParam().type +
                                     (reverse ? " -r " : " ") + dir.file("in.bin") + " " +
                                     dir.file("out.bin"),
                                 dir);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(test::read_file(dir.file("out.bin")), test::reference_sort(data, f, reverse));
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CliSortsType,
                         ::testing::Values(type_case{"u32", 4}, type_case{"i32", 4},
                                           type_case{"f32", 4}, type_case{"u64", 8},
                                           type_case{"i64", 8}, type_case{"f64", 8}),
                         [](const auto& param_info) { return std::string(param_info.param.type); });

TEST(Cli, KeyValueRecordsWithKeyOffset) {
  test::scratch_dir dir;
  const record_format f = test::make_format("i64", 24, 8);
  const auto data = test::random_records(50000, f, test::base_seed());
  test::write_file(dir.file("kv.bin"), data);
  const result r = run_gpusort("--devices none -t i64 --record-size 24 --key-offset 8 " +
                                   dir.file("kv.bin") + " -o " + dir.file("sorted.bin"),
                               dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(test::read_file(dir.file("sorted.bin")), test::reference_sort(data, f, false));
}

TEST(Cli, SmallBufferForcesManyRuns) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 8, 0);
  const auto data = test::random_records(1 << 20, f, test::base_seed() + 5);  // 8 MiB
  test::write_file(dir.file("in.bin"), data);
  const result r = run_gpusort("--devices none -S 2M -T " + dir.path().string() +
                                   " --stats=json " + dir.file("in.bin") + " " +
                                   dir.file("out.bin"),
                               dir);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto pos = r.err.find("\"runs\":");
  ASSERT_NE(pos, std::string::npos) << r.err;
  EXPECT_GE(std::stoul(r.err.substr(pos + 7)), 8u) << r.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), test::reference_sort(data, f, false));
}

TEST(Cli, BareStatsDoesNotSwallowTheOperands) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 8, 0);
  const auto data = test::random_records(1000, f, test::base_seed() + 8);
  test::write_file(dir.file("in.bin"), data);
  const result r = run_gpusort("--devices none --stats " + dir.file("in.bin") + " " +
                                   dir.file("out.bin"),
                               dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("1000 records"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), test::reference_sort(data, f, false));
}

TEST(Cli, ExitsOnceTheOutputIsInPlaceUnlessNoForkAsksToWaitForTheRest) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 8, 0);
  const auto data = test::random_records(200000, f, test::base_seed() + 9);
  test::write_file(dir.file("in.bin"), data);
  const std::string files = dir.file("in.bin") + " " + dir.file("out.bin");
  // The output is mapped whole: a child unmaps it after the command has ended, and the stats
  // end with the commit.
  const result early = run_gpusort("--devices none --stats " + files, dir);
  ASSERT_EQ(early.status, 0) << early.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), test::reference_sort(data, f, false));
  EXPECT_NE(early.err.find("\n  commit "), std::string::npos) << early.err;
  EXPECT_EQ(early.err.find("\n  unmap "), std::string::npos) << early.err;
  // --no-fork: one process, which reports the unmap too.
  std::filesystem::remove(dir.file("out.bin"));
  const result waited = run_gpusort("--devices none --no-fork --stats " + files, dir);
  ASSERT_EQ(waited.status, 0) << waited.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), test::reference_sort(data, f, false));
  EXPECT_NE(waited.err.find("\n  unmap "), std::string::npos) << waited.err;
}

TEST(Cli, StdinToStdout) {
  test::scratch_dir dir;
  const record_format f = test::make_format("f32", 4, 0);
  const auto data = test::random_records(300001, f, test::base_seed() + 6);
  test::write_file(dir.file("in.bin"), data);
  // A real pipe in and out (cat | gpusort | cat), not a redirected regular file.
  const std::string cmd = "cat " + dir.file("in.bin") + " | " + test::gpusort_binary() +
                          " --devices none -t f32 - - | cat > " + dir.file("out.bin");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(test::read_file(dir.file("out.bin")), test::reference_sort(data, f, false));
  // One operand: the output goes to stdout.
  const std::string cmd2 = test::gpusort_binary() + " --devices none -t f32 " +
                           dir.file("in.bin") + " > " + dir.file("out2.bin");
  ASSERT_EQ(std::system(cmd2.c_str()), 0);
  EXPECT_EQ(test::read_file(dir.file("out2.bin")), test::reference_sort(data, f, false));
}

// A pipe into a file on the CPU, in several runs (some kept in memory, some spilled): within
// -S the merge writes one mapping of the output once the stream has ended, past it windows;
// with -u the mapping is compacted.
TEST(Cli, StdinIntoAFileInRunsMappedWithinTheBudget) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 8, 0);
  for (const std::uint64_t records : {std::uint64_t{393216}, std::uint64_t{1200000}}) {
    const std::uint64_t seed = test::base_seed() + 60 + records;
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(records) + " records");
    // Keys drawn from a third as many values: equal keys for -u.
    std::vector<std::byte> data(records * 8);
    std::mt19937_64 rng(seed);
    for (std::uint64_t i = 0; i < records; ++i) {
      const std::uint64_t key = rng() % (records / 3);
      std::memcpy(data.data() + 8 * i, &key, 8);
    }
    test::write_file(dir.file("in.bin"), data);
    const bool within = records * 8 <= (std::uint64_t{4} << 20);
    for (const std::string unique : {"", " -u"}) {
      const std::string cmd = "cat " + dir.file("in.bin") + " | " + test::gpusort_binary() +
                              " --devices none -S 4M --verbose" + unique + " - " +
                              dir.file("out.bin") + " 2>" + dir.file("err.txt");
      ASSERT_EQ(std::system(cmd.c_str()), 0) << unique;
      const auto err_bytes = test::read_file(dir.file("err.txt"));
      const std::string err(reinterpret_cast<const char*>(err_bytes.data()), err_bytes.size());
      EXPECT_NE(err.find("output mapped whole once the stream ends within 4 MiB"),
                std::string::npos)
          << err;
      std::vector<std::byte> expected = test::reference_sort(data, f, false);
      if (!unique.empty()) {
        std::vector<std::byte> kept;
        for (std::size_t i = 0; i < expected.size(); i += 8)
          if (i == 0 || std::memcmp(&expected[i], &expected[i - 8], 8) != 0)
            kept.insert(kept.end(), expected.begin() + static_cast<std::ptrdiff_t>(i),
                        expected.begin() + static_cast<std::ptrdiff_t>(i + 8));
        expected = std::move(kept);
      }
      EXPECT_EQ(test::read_file(dir.file("out.bin")), expected)
          << (within ? "mapped whole" : "in windows") << unique;
    }
  }
  EXPECT_EQ(count_files(dir), 3u) << "in.bin, out.bin, err.txt: no temporary file left";
}

TEST(Cli, HelpAndVersion) {
  test::scratch_dir dir;
  EXPECT_EQ(run_gpusort("--help > " + dir.file("help.txt"), dir).status, 0);
  EXPECT_EQ(run_gpusort("--version > /dev/null", dir).status, 0);
  // GNU layout within 80 columns: "-t, --type TYPE", no Boost "[ --type ]", no trailing blanks.
  const auto bytes = test::read_file(dir.file("help.txt"));
  const std::string help(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  EXPECT_NE(help.find("\n  -t, --type TYPE "), std::string::npos) << help;
  EXPECT_NE(help.find("\n      --check[=HOW] "), std::string::npos) << help;
  EXPECT_NE(help.find("\n      --stats[=json] "), std::string::npos) << help;
  EXPECT_EQ(help.find("[ --"), std::string::npos) << help;
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 79u) << line;
    EXPECT_TRUE(line.empty() || line.back() != ' ') << "trailing blank: '" << line << "'";
  }
}

// --devices with several ids: every listed GPU takes a share of a large file, so no warning;
// without the listed GPUs the sort fails naming them (they were demanded).
TEST(Cli, SeveralDevicesAreTakenWithoutAWarning) {
  test::scratch_dir dir;
  test::write_file(dir.file("in.bin"),
                   test::random_records(1000, record_format{}, test::base_seed()));
  const std::string files = dir.file("in.bin") + " " + dir.file("out.bin");
  const result several = run_gpusort("--devices 1,0 " + files, dir);
  EXPECT_EQ(several.err.find("warning"), std::string::npos) << several.err;
  if (several.status != 0) {  // no device 1, no GPU at all, or a build without CUDA
    EXPECT_NE(several.err.find("CUDA"), std::string::npos) << several.err;
  }
  const result one = run_gpusort("--devices 0 " + files, dir);
  EXPECT_EQ(one.err.find("warning"), std::string::npos) << one.err;
  // auto (the default) and all take every GPU without a word: --verbose says which sort.
  const result automatic = run_gpusort("--devices auto " + files, dir);
  EXPECT_EQ(automatic.err.find("warning"), std::string::npos) << automatic.err;
  const result all = run_gpusort("--devices all " + files, dir);
  EXPECT_EQ(all.err.find("warning"), std::string::npos) << all.err;
  const result none = run_gpusort("--devices none " + files, dir);
  EXPECT_EQ(none.status, 0);
  EXPECT_EQ(none.err, "");
}

struct error_case {
  const char* name;
  std::string args;             // {in} and {out} are replaced
  std::vector<std::byte> input;  // written to in.bin
  const char* message;          // must appear in stderr
};

TEST(Cli, ErrorsExitTwoWithAMessageAndLeaveNoOutput) {
  test::scratch_dir dir;
  const std::vector<std::byte> good(800, std::byte{3});
  const std::vector<std::byte> odd(801, std::byte{3});
  const std::vector<error_case> cases = {
      {"missing input", "{dir}/missing.bin {out}", good, "missing.bin: No such file or directory"},
      {"unreadable input (a directory)", "{dir}/adir {out}", good, "Is a directory"},
      {"size not a multiple", "{in} {out}", odd, "not a multiple of the record size"},
      {"key outside record", "--record-size 12 --key-offset 8 {in} {out}", good,
       "key outside the record"},
      {"unknown type", "-t u128 {in} {out}", good, "unknown key type 'u128'"},
      {"output directory not writable", "{in} {dir}/no/such/dir/out.bin", good, "no/such/dir"},
      {"bad buffer size", "-S lots {in} {out}", good, "invalid --buffer-size 'lots'"},
      {"unknown option", "--frobnicate {in} {out}", good, "frobnicate"},
      {"bad merge location", "--merge-on disk {in} {out}", good, "unknown --merge-on 'disk'"},
      {"GPU merge without a GPU", "--merge-on gpu {in} {out}", good,
       "--merge-on gpu needs a GPU"},
      {"device listed twice", "--devices 0,1,0 {in} {out}", good,
       "invalid --devices '0,1,0': device 0 is listed twice"},
      {"negative device", "--devices -1 {in} {out}", good,
       "invalid --devices '-1': device -1 is negative"},
      {"empty device id", "--devices 0, {in} {out}", good, "invalid --devices '0,'"},
      {"unknown device word", "--devices every {in} {out}", good,
       "expected all, auto, none or device ids"},
  };
  std::filesystem::create_directory(dir.path() / "adir");
  for (const error_case& c : cases) {
    SCOPED_TRACE(c.name);
    test::write_file(dir.file("in.bin"), c.input);
    std::string args = c.args;
    auto replace = [&](const std::string& from, const std::string& to) {
      for (auto p = args.find(from); p != std::string::npos; p = args.find(from))
        args.replace(p, from.size(), to);
    };
    replace("{in}", dir.file("in.bin"));
    replace("{out}", dir.file("out.bin"));
    replace("{dir}", dir.path().string());
    const std::size_t before = count_files(dir);
    const result r = run_gpusort("--devices none " + args, dir);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("gpusort: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'),
              r.err.find("Try 'gpusort --help'") != std::string::npos ? 2 : 1)
        << "one line: " << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.bin")));
    EXPECT_EQ(count_files(dir), before) << "no temporary file left behind";
  }
}

// Boost.Program_options substitutes "%original_token%" and its kin into its messages until
// none is left: a bad option holding one hung gpusort (found by fuzz_command_line).
TEST(Cli, BoostPlaceholdersInArgumentsNeitherHangNorAreRefused) {
  test::scratch_dir dir;
  test::write_file(dir.file("in.bin"), std::vector<std::byte>(800, std::byte{3}));
  for (const char* bad : {"--%original_token%", "-%original_token%", "--x%option%"}) {
    SCOPED_TRACE(bad);
    const std::string err = dir.file("err.txt");
    const int raw = std::system(("timeout 20 " + test::gpusort_binary() + " --devices none " +
                                 bad + " " + dir.file("in.bin") + " " + dir.file("out.bin") +
                                 " 2>" + err)
                                    .c_str());
    result r;
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    const auto bytes = test::read_file(err);
    r.err.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    EXPECT_EQ(r.status, 2) << "124: hung until timeout(1) ended it; " << r.err;
    EXPECT_NE(r.err.find("invalid command line"), std::string::npos) << r.err;
  }
  // In a command line that parses they are ordinary characters.
  const result ok = run_gpusort("--devices none " + dir.file("in.bin") + " '" +
                                    dir.file("a%value%.bin") + "'",
                                dir);
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_TRUE(std::filesystem::exists(dir.file("a%value%.bin")));
}

TEST(Cli, FailedSortKeepsTheOldOutput) {
  test::scratch_dir dir;
  test::write_file(dir.file("out.bin"), std::vector<std::byte>(16, std::byte{9}));
  test::write_file(dir.file("in.bin"), std::vector<std::byte>(17, std::byte{1}));
  const result r =
      run_gpusort("--devices none " + dir.file("in.bin") + " " + dir.file("out.bin"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(test::read_file(dir.file("out.bin")), std::vector<std::byte>(16, std::byte{9}));
}


/// u64 keys 0, 1, ..., n-1 with `dup` repeated at its place, and `swap_at` swapped with its
/// successor when set.
std::vector<std::byte> counting_keys(std::uint64_t n, std::optional<std::uint64_t> swap_at = {}) {
  std::vector<std::uint64_t> keys(n);
  for (std::uint64_t i = 0; i < n; ++i) keys[i] = i / 2;  // every key twice
  if (swap_at) std::swap(keys[*swap_at], keys[*swap_at + 1]);
  std::vector<std::byte> out(n * 8);
  std::memcpy(out.data(), keys.data(), out.size());
  return out;
}

TEST(Cli, CheckExitsOneAndNamesTheFirstDisorder) {
  test::scratch_dir dir;
  test::write_file(dir.file("sorted.bin"), counting_keys(100000));
  test::write_file(dir.file("unsorted.bin"), counting_keys(100000, 70001));
  result r = run_gpusort("-c " + dir.file("sorted.bin"), dir);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  r = run_gpusort("--check " + dir.file("unsorted.bin"), dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "gpusort: " + dir.file("unsorted.bin") +
                       ": disorder: record 70002 (key 35000 after key 35001)\n");
  for (const char* quiet : {"-C", "--check=quiet", "--check=silent"}) {
    r = run_gpusort(std::string(quiet) + " " + dir.file("unsorted.bin"), dir);
    EXPECT_EQ(r.status, 1) << quiet;
    EXPECT_EQ(r.err, "") << quiet;
  }
  // -u: equal neighbours are disorder; -r: the other direction.
  r = run_gpusort("-c -u " + dir.file("sorted.bin"), dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("record 1 (key 0 after key 0)"), std::string::npos) << r.err;
  EXPECT_EQ(run_gpusort("-c -r " + dir.file("sorted.bin"), dir).status, 1);
  // From a pipe, and the usage errors sort has too.
  EXPECT_EQ(run_gpusort("-c < " + dir.file("sorted.bin"), dir).status, 0);
  EXPECT_EQ(run_gpusort("-C - < " + dir.file("unsorted.bin"), dir).status, 1);
  const std::string cat =
      "cat " + dir.file("unsorted.bin") + " | " + test::gpusort_binary() + " -C";
  EXPECT_EQ(WEXITSTATUS(std::system(cat.c_str())), 1);
  r = run_gpusort("-c " + dir.file("sorted.bin") + " " + dir.file("other.bin"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("extra operand"), std::string::npos) << r.err;
  EXPECT_EQ(
      run_gpusort("-c -o " + dir.file("x.bin") + " " + dir.file("sorted.bin"), dir).status, 2);
  EXPECT_EQ(run_gpusort("-c -m " + dir.file("sorted.bin"), dir).status, 2);
  EXPECT_EQ(run_gpusort("--check=loud " + dir.file("sorted.bin"), dir).status, 2);
  EXPECT_EQ(run_gpusort("-c " + dir.file("missing.bin"), dir).status, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.bin")));
}

TEST(Cli, UniqueIntoFilesAndPipes) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 8, 0);
  auto data = counting_keys(300000);
  std::mt19937_64 rng(test::base_seed());
  for (std::size_t i = 300000 - 1; i > 0; --i)
    std::swap_ranges(data.begin() + static_cast<std::ptrdiff_t>(8 * i),
                     data.begin() + static_cast<std::ptrdiff_t>(8 * i + 8),
                     data.begin() + static_cast<std::ptrdiff_t>(8 * (rng() % (i + 1))));
  test::write_file(dir.file("in.bin"), data);
  std::vector<std::byte> expected(150000 * 8);
  for (std::uint64_t k = 0; k < 150000; ++k) std::memcpy(expected.data() + 8 * k, &k, 8);
  // A file (one run, and spilled runs), stdout redirected to a file, and a pipe.
  for (const std::string opts : {"-u", "-u -S 4M"}) {
    const result r = run_gpusort("--devices none " + opts + " " + dir.file("in.bin") + " " +
                                     dir.file("out.bin"), dir);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(test::read_file(dir.file("out.bin")), expected) << opts;
  }
  ASSERT_EQ(run_gpusort("--devices none -u " + dir.file("in.bin") + " > " +
                            dir.file("so.bin"), dir).status, 0);
  EXPECT_EQ(test::read_file(dir.file("so.bin")), expected);
  const std::string pipe = "cat " + dir.file("in.bin") + " | " + test::gpusort_binary() +
                           " --devices none -u -S 4M | cat > " + dir.file("pipe.bin");
  ASSERT_EQ(std::system(pipe.c_str()), 0);
  EXPECT_EQ(test::read_file(dir.file("pipe.bin")), expected);
  (void)f;
}

TEST(Cli, MergeTakesSortedFilesAndPipesAndRefusesUnsortedOnes) {
  test::scratch_dir dir;
  test::write_file(dir.file("a.bin"), counting_keys(1000));
  test::write_file(dir.file("b.bin"), counting_keys(3000));
  test::write_file(dir.file("bad.bin"), counting_keys(3000, 11));
  std::vector<std::uint64_t> keys;
  for (std::uint64_t i = 0; i < 1000; ++i) keys.push_back(i / 2);
  for (std::uint64_t i = 0; i < 3000; ++i) keys.push_back(i / 2);
  std::sort(keys.begin(), keys.end());
  std::vector<std::byte> expected(keys.size() * 8);
  std::memcpy(expected.data(), keys.data(), expected.size());
  result r = run_gpusort("-m " + dir.file("a.bin") + " " + dir.file("b.bin") + " -o " +
                             dir.file("out.bin"), dir);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), expected);
  const std::string pipe = "cat " + dir.file("b.bin") + " | " + test::gpusort_binary() + " -m " +
                           dir.file("a.bin") + " - -o " + dir.file("piped.bin");
  ASSERT_EQ(std::system(pipe.c_str()), 0);
  EXPECT_EQ(test::read_file(dir.file("piped.bin")), expected);
  // An unsorted input: exit 2, the input and the place named, nothing written, not even to a
  // pipe.
  r = run_gpusort("-m " + dir.file("a.bin") + " " + dir.file("bad.bin") + " -o " +
                      dir.file("out.bin"), dir);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(dir.file("bad.bin") + ": not sorted: record 12"), std::string::npos)
      << r.err;
  EXPECT_EQ(test::read_file(dir.file("out.bin")), expected);
  r = run_gpusort("-m " + dir.file("bad.bin") + " | cat > " + dir.file("pipe-out.bin"), dir);
  EXPECT_EQ(test::read_file(dir.file("pipe-out.bin")).size(), 0u);
}

}  // namespace
}  // namespace gpusort
