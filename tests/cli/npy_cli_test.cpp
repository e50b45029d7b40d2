// The gpusort command on NumPy .npy files it writes itself (tests/npy_support.hpp): every key
// type, structured records with --key, -r, -u, several inputs, in place, pipes, -c, -m, and
// every refusal with its message; outputs checked byte for byte against std::stable_sort.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "npy_support.hpp"
#include "binary_under_test.hpp"
#include "test_support.hpp"

namespace gpusort {
namespace {

namespace fs = std::filesystem;

struct outcome {
  int status = -1;
  std::string err;
};

/// Runs `script` with bash, $G the gpusort binary, in the scratch dir; stderr captured.
outcome run(const std::string& script, const test::scratch_dir& dir) {
  const std::string script_path = dir.file(".script.sh");
  const std::string err_path = dir.file(".stderr.txt");
  {
    std::FILE* f = std::fopen(script_path.c_str(), "w");
    std::fprintf(f, "G='%s --devices none'\ncd '%s' || exit 99\n%s\n",
                 test::gpusort_binary().c_str(),
                 dir.path().c_str(), script.c_str());
    std::fclose(f);
  }
  const int raw =
      std::system(("timeout -s KILL 120 bash " + script_path + " 2>" + err_path).c_str());
  outcome o;
  o.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  const auto bytes = test::read_file(err_path);
  o.err.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  fs::remove(script_path);
  fs::remove(err_path);
  return o;
}

/// The first record of each run of equal keys of `sorted`.
std::vector<std::byte> reference_unique(const std::vector<std::byte>& sorted,
                                        const record_format& f) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < sorted.size() / f.record_size; ++i) {
    const std::byte* r = sorted.data() + i * f.record_size;
    if (i == 0 || test::reference_compare(r - f.record_size, r, f) != 0)
      out.insert(out.end(), r, r + f.record_size);
  }
  return out;
}

/// Random records whose key field takes one of `distinct` values (ties are common), and whose
/// first 4 payload bytes at `index_at` hold the record's index, so that payload is traceable.
std::vector<std::byte> keyed_records(std::uint64_t count, const record_format& f,
                                     std::uint64_t seed, std::uint64_t distinct,
                                     std::uint32_t index_at) {
  std::vector<std::byte> data = test::random_records(count, f, seed);
  const std::vector<std::byte> keys = test::random_records(distinct, f, seed + 1);
  std::mt19937_64 rng(seed);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::byte* r = data.data() + i * f.record_size;
    std::memcpy(r + f.key_offset, keys.data() + (rng() % distinct) * f.record_size + f.key_offset,
                f.key_size);
    const auto index = static_cast<std::uint32_t>(i);
    std::memcpy(r + index_at, &index, 4);
  }
  return data;
}

/// The .npy file `name` in `dir`, taken apart (layout checked).
test::npy_parts output(const test::scratch_dir& dir, const std::string& name) {
  return test::split_npy(test::read_file(dir.file(name)));
}

struct plain_case {
  const char* descr;
  const char* type;
  std::uint32_t size;
};

class NpyCliPlain : public ::testing::TestWithParam<plain_case> {};

TEST_P(NpyCliPlain, SortsOneDimensionalArraysAscendingAndReverse) {
  test::scratch_dir dir;
  const plain_case c = GetParam();
  const record_format f = test::make_format(c.type, c.size, 0);
  const std::uint64_t seed = test::base_seed() + c.size;
  SCOPED_TRACE(std::string(c.descr) + " seed " + std::to_string(seed));
  const auto data = test::random_records(100003, f, seed);
  const std::vector<std::byte> in = test::npy_array(c.descr, c.size, data);
  test::write_file(dir.file("in.npy"), in);
  for (const bool reverse : {false, true}) {
    const outcome o = run(std::string("$G ") + (reverse ? "-r " : "") + "in.npy out.npy", dir);
    ASSERT_EQ(o.status, 0) << o.err;
    const std::vector<std::byte> out = test::read_file(dir.file("out.npy"));
    const test::npy_parts p = test::split_npy(out);
    // The input's header, byte for byte (the shape is the same), then the sorted records.
    EXPECT_TRUE(
        std::equal(in.begin(), in.begin() + static_cast<long>(p.header_bytes), out.begin()));
    EXPECT_EQ(p.header_bytes % 64, 0u);
    EXPECT_EQ(p.dict, test::npy_dict(c.descr, "(100003,)"));
    EXPECT_EQ(p.data, test::reference_sort(data, f, reverse));
  }
}

INSTANTIATE_TEST_SUITE_P(
    KeyTypes, NpyCliPlain,
    ::testing::Values(plain_case{"'<u4'", "u32", 4}, plain_case{"'<u8'", "u64", 8},
                      plain_case{"'<i4'", "i32", 4}, plain_case{"'<i8'", "i64", 8},
                      plain_case{"'<f4'", "f32", 4}, plain_case{"'<f8'", "f64", 8},
                      plain_case{"'|S10'", "bytes:10", 10}, plain_case{"'|u1'", "bytes:1", 1}),
    [](const auto& param_info) { return std::string(param_info.param.type).substr(0, 3) +
                                        std::to_string(param_info.param.size); });

// id (u4) | score (f8) | n (u8) | tag (S3): 23-byte records, keys off any alignment.
const std::string rows_descr = "[('id', '<u4'), ('score', '<f8'), ('n', '<u8'), ('tag', 'S3')]";

TEST(NpyCli, StructuredRecordsCarryTheirPayloadWithTheKey) {
  test::scratch_dir dir;
  struct key_case {
    const char* key;
    record_format format;
    const char* extra;  // options
  };
  const key_case cases[] = {
      {"score", test::make_format("f64", 23, 4), ""},
      {"n", test::make_format("u64", 23, 12), ""},
      {"tag", test::make_format("bytes:3", 23, 20), ""},
      // Spilled runs merged in windows: the records land after the header from a merge too.
      {"score", test::make_format("f64", 23, 4), "-S 4M -T . "},
      {"n", test::make_format("u64", 23, 12), "-r -S 4M -T . "},
  };
  for (const key_case& c : cases) {
    const std::uint64_t seed = test::base_seed() + c.format.key_offset;
    SCOPED_TRACE(std::string(c.key) + " " + c.extra + "seed " + std::to_string(seed));
    const std::uint64_t n = std::strlen(c.extra) > 0 ? 400000 : 50000;
    const auto data = keyed_records(n, c.format, seed, n / 3, c.format.key_offset == 0 ? 4 : 0);
    test::write_file(dir.file("rows.npy"), test::npy_array(rows_descr, 23, data));
    const outcome o =
        run(std::string("$G ") + c.extra + "--key " + c.key + " rows.npy out.npy", dir);
    ASSERT_EQ(o.status, 0) << o.err;
    const test::npy_parts p = output(dir, "out.npy");
    EXPECT_EQ(p.dict, test::npy_dict(rows_descr, test::npy_shape(n)));
    const bool reverse = std::strstr(c.extra, "-r") != nullptr;
    EXPECT_EQ(p.data, test::reference_sort(data, c.format, reverse))
        << "records (ids and all) in stable key order";
  }
}

TEST(NpyCli, UniqueRewritesTheShapeInTheHeadersLength) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 23, 12);
  const std::uint64_t seed = test::base_seed() + 77;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto data = keyed_records(300000, f, seed, 1000, 0);
  const std::vector<std::byte> in = test::npy_array(rows_descr, 23, data);
  test::write_file(dir.file("rows.npy"), in);
  const std::size_t header = test::split_npy(in).header_bytes;
  const auto expected = reference_unique(test::reference_sort(data, f, false), f);
  const std::uint64_t kept = expected.size() / 23;
  ASSERT_LT(kept, 1001u);
  // The output mapped and compacted; runs spilled, the file compacted; stdout redirected to a
  // file behind three bytes, filtered on the way.
  for (const std::string script :
       {"$G -u --key n rows.npy out.npy", "$G -u -S 4M -T . --key n rows.npy out.npy",
        "{ printf ABC; $G -u --key n rows.npy; } > so.bin && tail -c +4 so.bin > out.npy"}) {
    SCOPED_TRACE(script);
    fs::remove(dir.file("out.npy"));
    const outcome o = run(script, dir);
    ASSERT_EQ(o.status, 0) << o.err;
    const std::vector<std::byte> out = test::read_file(dir.file("out.npy"));
    const test::npy_parts p = test::split_npy(out);
    EXPECT_EQ(p.header_bytes, header) << "the header keeps its length";
    EXPECT_EQ(p.dict, test::npy_dict(rows_descr, test::npy_shape(kept)));
    EXPECT_EQ(out.size(), header + kept * 23);
    EXPECT_EQ(p.data, expected);
  }
  // -u into a pipe: the header, which goes first, would need the count only the end knows.
  const outcome o = run("set -o pipefail; $G -u --key n rows.npy | cat > piped.npy", dir);
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("standard output: --unique cannot write an .npy file that is written in "
                       "order (a pipe"),
            std::string::npos) << o.err;
  EXPECT_EQ(fs::file_size(dir.file("piped.npy")), 0u) << "nothing went out";
}

TEST(NpyCli, SeveralInputsAreConcatenatedUnderOneHeader) {
  test::scratch_dir dir;
  const record_format f = test::make_format("i64", 8, 0);
  const std::uint64_t seed = test::base_seed() + 3;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto a = test::random_records(5, f, seed);
  const auto b = test::random_records(100000, f, seed + 1);
  const auto c = test::random_records(777, f, seed + 2);
  // a's header has no padding to spare (align 1): the output's must grow, to 64 bytes' multiple.
  test::write_file(dir.file("a.npy"), test::npy_file(test::npy_dict("'<i8'", "(5,)"), a, 1, 1));
  test::write_file(dir.file("b.npy"), test::npy_array("'<i8'", 8, b));
  test::write_file(dir.file("c.npy"), test::npy_file(test::npy_dict("'<i8'", "(777,)"), c, 3, 16));
  const outcome o = run("$G a.npy b.npy c.npy -o all.npy", dir);
  ASSERT_EQ(o.status, 0) << o.err;
  std::vector<std::byte> all = a;
  all.insert(all.end(), b.begin(), b.end());
  all.insert(all.end(), c.begin(), c.end());
  const test::npy_parts p = output(dir, "all.npy");
  EXPECT_EQ(p.major, 1u) << "the first input's version";
  EXPECT_EQ(p.header_bytes, 128u);
  EXPECT_EQ(p.dict, test::npy_dict("'<i8'", "(100782,)"));
  EXPECT_EQ(p.data, test::reference_sort(all, f, false));
}

TEST(NpyCli, InPlaceLinkedStdinStdoutAndPipes) {
  test::scratch_dir dir;
  const record_format f = test::make_format("f64", 23, 4);
  const std::uint64_t seed = test::base_seed() + 11;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto data = keyed_records(70000, f, seed, 70000, 0);
  const std::vector<std::byte> in = test::npy_array(rows_descr, 23, data);
  test::write_file(dir.file("in.npy"), in);
  const std::size_t header = test::split_npy(in).header_bytes;
  const std::vector<std::byte> sorted = test::reference_sort(data, f, false);
  std::vector<std::byte> expected_file(in.begin(), in.begin() + static_cast<long>(header));
  expected_file.insert(expected_file.end(), sorted.begin(), sorted.end());
  const std::string k = "--key score ";
  const std::string scripts[] = {
      "cp in.npy out.npy && $G " + k + "out.npy out.npy",                   // same path
      "cp in.npy out.npy && ln out.npy link.npy && $G " + k + "out.npy link.npy",  // hard link
      "cat in.npy | $G " + k + "- - | cat > out.npy",                       // pipes
      "$G " + k + "in.npy > out.npy",                                       // redirected stdout
      "$G " + k + "- out.npy < in.npy",                                     // redirected stdin
      "$G " + k + "-S 4M -T . in.npy | cat > out.npy",                      // merged into a pipe
  };
  for (const std::string& script : scripts) {
    SCOPED_TRACE(script);
    fs::remove(dir.file("out.npy"));
    fs::remove(dir.file("link.npy"));
    const outcome o = run(script, dir);
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(test::read_file(dir.file("out.npy")), expected_file);
  }
}

TEST(NpyCli, CheckReadsTheRecordsAfterTheHeader) {
  test::scratch_dir dir;
  std::vector<std::byte> keys;
  for (std::uint64_t i = 0; i < 100000; ++i) test::append_le<std::uint64_t>(keys, i / 2);
  test::write_file(dir.file("sorted.npy"), test::npy_array("'<u8'", 8, keys));
  std::vector<std::byte> unsorted = keys;
  std::swap_ranges(unsorted.begin() + 8 * 70001, unsorted.begin() + 8 * 70002,
                   unsorted.begin() + 8 * 70002);
  test::write_file(dir.file("unsorted.npy"), test::npy_array("'<u8'", 8, unsorted));
  EXPECT_EQ(run("$G -c sorted.npy", dir).status, 0);
  outcome o = run("$G -c unsorted.npy", dir);
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.err, "gpusort: unsorted.npy: disorder: record 70002 (key 35000 after key 35001)\n");
  EXPECT_EQ(run("cat unsorted.npy | $G -C", dir).status, 1);
  EXPECT_EQ(run("cat sorted.npy | $G -C -", dir).status, 0);
  EXPECT_EQ(run("$G -c -u sorted.npy", dir).status, 1) << "equal neighbours";
  // Structured records: the key field decides.
  const record_format f = test::make_format("f64", 23, 4);
  const auto rows = test::reference_sort(keyed_records(1000, f, 5, 1000, 0), f, false);
  test::write_file(dir.file("rows.npy"), test::npy_array(rows_descr, 23, rows));
  EXPECT_EQ(run("$G -c --key score rows.npy", dir).status, 0);
  o = run("$G -c rows.npy", dir);
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("--key NAME (fields: id, score, n, tag)"), std::string::npos) << o.err;
}

TEST(NpyCli, MergeTakesSortedNpyInputs) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 23, 12);
  const std::uint64_t seed = test::base_seed() + 21;
  SCOPED_TRACE("seed " + std::to_string(seed));
  const auto a = test::reference_sort(keyed_records(3000, f, seed, 500, 0), f, false);
  const auto b = test::reference_sort(keyed_records(5000, f, seed + 1, 500, 0), f, false);
  test::write_file(dir.file("a.npy"), test::npy_array(rows_descr, 23, a));
  test::write_file(dir.file("b.npy"), test::npy_array(rows_descr, 23, b));
  std::vector<std::byte> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  const auto expected = test::reference_sort(ab, f, false);
  for (const std::string script : {"$G -m --key n a.npy b.npy -o out.npy",
                                   "cat b.npy | $G -m --key n a.npy - -o out.npy"}) {
    SCOPED_TRACE(script);
    const outcome o = run(script, dir);
    ASSERT_EQ(o.status, 0) << o.err;
    const test::npy_parts p = output(dir, "out.npy");
    EXPECT_EQ(p.dict, test::npy_dict(rows_descr, "(8000,)"));
    EXPECT_EQ(p.data, expected);
  }
  const outcome o = run("$G -m --key score a.npy b.npy -o bad.npy", dir);
  EXPECT_EQ(o.status, 2);
  EXPECT_NE(o.err.find("a.npy: not sorted"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(dir.file("bad.npy")));
}

TEST(NpyCli, OptionsThatAgreeWithTheHeaderAreAccepted) {
  test::scratch_dir dir;
  const record_format f = test::make_format("u64", 16, 0);
  const auto data = test::random_records(1000, f, 8);
  test::write_file(dir.file("kv.npy"), test::npy_array("[('k', '<u8'), ('v', '<u8')]", 16, data));
  for (const std::string args : {"--key k", "--key k -t u64", "--format kv64 --key k",
                                 "--key k --record-size 16 --key-offset 0"}) {
    SCOPED_TRACE(args);
    const outcome o = run("$G " + args + " kv.npy out.npy", dir);
    ASSERT_EQ(o.status, 0) << o.err;
    EXPECT_EQ(output(dir, "out.npy").data, test::reference_sort(data, f, false));
  }
}

TEST(NpyCli, UnsupportedArraysAndContradictionsAreRefusedNamingTheFile) {
  test::scratch_dir dir;
  const auto data = test::random_bytes(8 * 12, 4);
  std::vector<std::byte> bad_version = test::npy_array("'<u8'", 8, data);
  bad_version[6] = std::byte{4};
  std::vector<std::byte> extra = test::npy_array("'<u8'", 8, data);
  extra.push_back(std::byte{0});
  const std::vector<std::byte> u8 = test::npy_array("'<u8'", 8, data);
  const std::vector<std::byte> rows = test::npy_file(
      test::npy_dict("[('id', '<u4'), ('', '|V4'), ('when', '<f8')]", "(6,)"), data);
  const struct {
    const char* name;
    std::vector<std::byte> file;  // written to bad.npy
    std::string args;             // before the operands "bad.npy out.npy"
    std::string message;          // after "gpusort: error: bad.npy: "
  } cases[] = {
      {"object dtype", test::npy_file(test::npy_dict("'|O'", "(12,)"), data), "",
       "its dtype '|O' holds Python objects"},
      {"Fortran order", test::npy_file(test::npy_dict("'<u8'", "(3, 4)", true), data), "",
       "the array is in Fortran order (column-major, shape (3, 4))"},
      {"big-endian", test::npy_array("'>u8'", 8, data), "", "the dtype '>u8' is big-endian"},
      {"2-D plain", test::npy_file(test::npy_dict("'<u8'", "(3, 4)"), data), "",
       "the array has 2 dimensions (shape (3, 4)) and a plain dtype '<u8'"},
      {"2-D structured", test::npy_file(test::npy_dict("[('a', '<u8')]", "(3, 4)"), data),
       "--key a ", "the array has 2 dimensions (shape (3, 4)) of a structured dtype"},
      {"0-D", test::npy_file(test::npy_dict("'<u8'", "()"), {data.begin(), data.begin() + 8}),
       "", "the array has no dimension (shape ())"},
      {"truncated", test::npy_file(test::npy_dict("'<u8'", "(13,)"), data), "",
       "truncated: 96 bytes follow its header, not the 104 bytes its .npy shape (13,)"},
      {"extra bytes", extra, "", "97 bytes follow its header, not the 96 bytes"},
      {"structured without --key", rows, "",
       "its records are of a structured dtype: name the key field with --key NAME (fields: id, "
       "when)"},
      {"unknown field", rows, "--key nope ", "no field 'nope' in its dtype (fields: id, when)"},
      {"--key on a plain dtype", u8, "--key id ", "--key id names a field, but the array's "
                                                 "dtype '<u8' has none"},
      {"not a key type", test::npy_array("'<f2'", 2, data), "",
       "the dtype '<f2' is not a key type"},
      {"-t contradicts", u8, "-t f64 ", "-t f64 contradicts its header: the key, the dtype "
                                       "'<u8', is u64"},
      {"--record-size contradicts", u8, "--record-size 16 ",
       "--record-size 16 contradicts its header: its records (dtype '<u8') are 8 bytes"},
      {"--key-offset contradicts", rows, "--key when --record-size 16 --key-offset 4 ",
       "--key-offset 4 contradicts its header: the key, field 'when' ('<f8'), is at offset 8"},
      {"version 4.0", bad_version, "", ".npy format version 4.0 is not supported"},
      {"bad dict", test::npy_file("{'descr': '<u8', 'fortran_order': False, 'shape': (12,) 'x'}",
                                  data),
       "", "not a valid .npy header: expected ',' or '}' after a value"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    test::write_file(dir.file("bad.npy"), c.file);
    const outcome o = run("$G " + c.args + "bad.npy out.npy", dir);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_NE(o.err.find("gpusort: error: bad.npy: " + c.message), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << "one line: " << o.err;
    EXPECT_FALSE(fs::exists(dir.file("out.npy")));
    fs::remove(dir.file("bad.npy"));
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 0)
        << "no temporary left";
  }
  // Inputs that do not fit together, and --key on raw records.
  test::write_file(dir.file("u8.npy"), u8);
  test::write_file(dir.file("i8.npy"), test::npy_array("'<i8'", 8, data));
  test::write_file(dir.file("raw.bin"), data);
  const struct {
    std::string args;
    std::string message;
  } mixes[] = {
      {"u8.npy i8.npy -o out.npy",
       "i8.npy: its dtype '<i8' is not the dtype of u8.npy, '<u8': .npy inputs are "
       "concatenated, so they must share one"},
      {"u8.npy raw.bin -o out.npy", "raw.bin: not an .npy file, while u8.npy is"},
      {"--key id raw.bin out.npy", "raw.bin: --key names a field of an .npy file's structured "
                                   "dtype, and this is not an .npy file"},
  };
  for (const auto& m : mixes) {
    SCOPED_TRACE(m.args);
    const outcome o = run("$G " + m.args, dir);
    EXPECT_EQ(o.status, 2) << o.err;
    EXPECT_NE(o.err.find("gpusort: error: " + m.message), std::string::npos) << o.err;
    EXPECT_FALSE(fs::exists(dir.file("out.npy")));
  }
}

}  // namespace
}  // namespace gpusort
