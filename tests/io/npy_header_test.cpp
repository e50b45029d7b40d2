// The .npy header parser on valid and malformed headers, the record format it gives a sort,
// and the header of a sorted output, against headers written here from the format's
// description (tests/npy_support.hpp).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "gpusort/error.hpp"
#include "io/npy_header.hpp"
#include "npy_support.hpp"
#include "test_support.hpp"

namespace gpusort::io {
namespace {

npy_header parse(const std::vector<std::byte>& bytes) { return parse_npy_header(bytes, "t.npy"); }

npy_header parse_dict(const std::string& dict, unsigned major = 1, unsigned align = 64) {
  return parse(test::npy_header(dict, major, align));
}

/// The message parsing `bytes` throws, or "" when it parses.
std::string parse_error(const std::vector<std::byte>& bytes) {
  try {
    static_cast<void>(parse(bytes));
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

std::string dict_error(const std::string& dict) { return parse_error(test::npy_header(dict)); }

std::string contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos ? "" : "'" + part + "' not in: " + text;
}

struct scalar_case {
  const char* descr;
  std::uint64_t size;
  char kind;
};

TEST(NpyHeader, ParsesPlainDtypesOfEveryVersionAndAlignment) {
  for (const scalar_case c : {scalar_case{"'<u4'", 4, 'u'}, scalar_case{"'<u8'", 8, 'u'},
                              scalar_case{"'<i4'", 4, 'i'}, scalar_case{"'<i8'", 8, 'i'},
                              scalar_case{"'<f4'", 4, 'f'}, scalar_case{"'<f8'", 8, 'f'},
                              scalar_case{"'|S10'", 10, 'S'}, scalar_case{"'|V16'", 16, 'V'},
                              scalar_case{"'<U3'", 12, 'U'}, scalar_case{"'|u1'", 1, 'u'},
                              scalar_case{"'<M8[ns]'", 8, 'M'}}) {
    for (const unsigned major : {1u, 2u, 3u}) {
      for (const unsigned align : {16u, 64u}) {
        SCOPED_TRACE(std::string(c.descr) + " v" + std::to_string(major) + " align " +
                     std::to_string(align));
        const std::vector<std::byte> bytes =
            test::npy_header(test::npy_dict(c.descr, "(1000,)"), major, align);
        const npy_header h = parse(bytes);
        EXPECT_EQ(npy_header_size(bytes, "t.npy"), bytes.size());
        EXPECT_EQ(h.header_bytes, bytes.size());
        EXPECT_EQ(h.header_bytes % align, 0u);
        EXPECT_EQ(h.major, major);
        EXPECT_EQ(h.descr, c.descr);
        EXPECT_EQ(h.dtype, c.descr);
        EXPECT_FALSE(h.structured);
        EXPECT_FALSE(h.fortran_order);
        EXPECT_EQ(h.item_size, c.size);
        ASSERT_EQ(h.fields.size(), 1u);
        EXPECT_EQ(h.fields[0].scalar.kind, c.kind);
        EXPECT_EQ(h.shape, std::vector<std::uint64_t>{1000});
        EXPECT_EQ(h.records("t.npy"), 1000u);
      }
    }
  }
}

TEST(NpyHeader, ReadsThePythonLiteralsNumPyAndOldWritersUse) {
  // Keys in any order, double quotes, no trailing comma, tabs and newlines, Python 2 longs.
  npy_header h = parse_dict("{\"shape\": (7L,),\t'fortran_order':True,\n'descr':\"<u8\"}");
  EXPECT_EQ(h.shape, std::vector<std::uint64_t>{7});
  EXPECT_TRUE(h.fortran_order);
  EXPECT_EQ(h.dtype, "'<u8'");
  // '=' is native (little-endian here), a missing byte order too; 'a' is an old name for 'S'.
  h = parse_dict(test::npy_dict("'=u8'", "(3,)"));
  EXPECT_EQ(h.fields[0].scalar.byte_order, '<');
  EXPECT_EQ(h.dtype, "'<u8'");
  EXPECT_EQ(parse_dict(test::npy_dict("'f4'", "(3,)")).dtype, "'<f4'");
  EXPECT_EQ(parse_dict(test::npy_dict("'a5'", "(3,)")).dtype, "'|S5'");
  EXPECT_EQ(parse_dict(test::npy_dict("'<u8'", "(2, 3,)")).shape,
            (std::vector<std::uint64_t>{2, 3}));
  EXPECT_EQ(parse_dict(test::npy_dict("'<u8'", "()")).shape, std::vector<std::uint64_t>{});
  EXPECT_EQ(parse_dict(test::npy_dict("'<u8'", "()")).records("t.npy"), 1u);
  // Escapes in names are decoded.
  h = parse_dict(test::npy_dict("[('it\\'s', '<u8'), (\"q\\\"\\\\\", '<u4')]", "(1,)"));
  EXPECT_EQ(h.fields[0].name, "it's");
  EXPECT_EQ(h.fields[1].name, "q\"\\");
}

TEST(NpyHeader, StructuredDtypesSumTheirFieldsPaddingSubArraysAndNesting) {
  const std::string descr =
      "[('id', '<u4'), ('', '|V4'), ('score', '<f8'), ('v', '<f4', (3,)), ('name', 'S5'), "
      "('pos', [('x', '<f4'), ('y', '<f4')]), (('a title', 't'), '<i8'), ('m', '<u2', (2, 2))]";
  const npy_header h = parse_dict(test::npy_dict(descr, "(5,)"));
  EXPECT_TRUE(h.structured);
  EXPECT_EQ(h.descr, descr);
  ASSERT_EQ(h.fields.size(), 8u);
  const std::uint64_t offsets[] = {0, 4, 8, 16, 28, 33, 41, 49};
  const std::uint64_t sizes[] = {4, 4, 8, 12, 5, 8, 8, 8};
  for (std::size_t i = 0; i < 8; ++i) {
    SCOPED_TRACE(h.fields[i].name);
    EXPECT_EQ(h.fields[i].offset, offsets[i]);
    EXPECT_EQ(h.fields[i].size, sizes[i]);
  }
  EXPECT_EQ(h.item_size, 57u);
  EXPECT_EQ(h.fields[3].count, 3u);
  EXPECT_EQ(h.fields[7].count, 4u);
  EXPECT_TRUE(h.fields[5].nested);
  EXPECT_EQ(h.fields[6].name, "t");
  EXPECT_EQ(h.field_names(), "id, score, v, name, pos, t, m");
  EXPECT_EQ(h.dtype, "[('id', '<u4'), ('', '|V4'), ('score', '<f8'), ('v', '<f4', (3,)), "
                     "('name', '|S5'), ('pos', [('x', '<f4'), ('y', '<f4')]), ('t', '<i8'), "
                     "('m', '<u2', (2, 2))]");
  // Spelled differently, the same dtype compares equal.
  EXPECT_EQ(parse_dict(test::npy_dict("[ ( 'a' , '=u8' , ) , ('b','<f4',3) , ]", "(1,)")).dtype,
            parse_dict(test::npy_dict("[('a', '<u8'), ('b', '<f4', (3,))]", "(1,)")).dtype);
}

TEST(NpyHeader, NamesAreUtf8WhateverTheVersionEncodes) {
  // Versions 1.0 and 2.0 are Latin-1 ('\xe9' is é), 3.0 is UTF-8: both read as UTF-8.
  const npy_header latin = parse_dict(test::npy_dict("[('cl\xe9', '<u8')]", "(1,)"), 1);
  const npy_header utf8 = parse_dict(test::npy_dict("[('cl\xc3\xa9', '<u8')]", "(1,)"), 3);
  EXPECT_EQ(latin.fields[0].name, "cl\xc3\xa9");
  EXPECT_EQ(utf8.fields[0].name, "cl\xc3\xa9");
  EXPECT_EQ(latin.dtype, utf8.dtype);
  EXPECT_EQ(latin.descr, "[('cl\xe9', '<u8')]") << "the descr stays as written";
}

/// A structure nested `depth` times: [('a', [('a', ... '<u8' ...)])].
std::string nested(int depth) {
  std::string s = "'<u8'";
  for (int i = 0; i < depth; ++i) s = "[('a', " + s + ")]";
  return s;
}

TEST(NpyHeader, MalformedHeadersAreRefusedWithTheReason) {
  EXPECT_EQ(dict_error(test::npy_dict(nested(20), "(1,)")), "") << "deep enough for NumPy's own";
  const struct {
    std::string dict;
    const char* message;
  } cases[] = {
      {"", "expected '{'"},
      {"{'descr': '<u8', 'fortran_order': False}", "no 'shape' key"},
      {"{'fortran_order': False, 'shape': (1,)}", "no 'descr' key"},
      {"{'descr': '<u8', 'shape': (1,)}", "no 'fortran_order' key"},
      {test::npy_dict("'<u8'", "(1,)") + "x", "text after the dict"},
      {"{'descr': '<u8', 'fortran_order': False, 'shape': (1,), 'extra': 1}",
       "unexpected key 'extra'"},
      {"{'descr': '<u8', 'descr': '<u4', 'fortran_order': False, 'shape': (1,)}", "appears twice"},
      {test::npy_dict("'<u8'", "(3)"), "not a tuple"},
      {test::npy_dict("'<u8'", "(-3,)"), "negative dimension"},
      {test::npy_dict("'<u8'", "(18446744073709551616,)"), "integer too large"},
      {test::npy_dict("'<u8'", "[3]"), "a tuple"},
      {"{'descr': \"<u8}", "inside a string"},
      {test::npy_dict("'<u\\q8'", "(1,)"), "unsupported escape"},
      {test::npy_dict("'<u3'", "(1,)"), "unknown type '<u3'"},
      {test::npy_dict("'<x8'", "(1,)"), "unknown type '<x8'"},
      {test::npy_dict("'S0'", "(1,)"), "unknown type 'S0'"},
      {test::npy_dict("''", "(1,)"), "an empty type string"},
      {test::npy_dict("[]", "(1,)"), "without fields"},
      {test::npy_dict("[('a', '<u8'), ('a', '<u4')]", "(1,)"), "field 'a' appears twice"},
      {test::npy_dict("[('a' '<u8')]", "(1,)"), "',' after a field's name"},
      {test::npy_dict("{'names': ['a'], 'formats': ['<u8']}", "(1,)"), "quoted string"},
      {"{'descr': '<u8', 'fortran_order': 0, 'shape': (1,)}", "True or False"},
      {"{'descr': '<u8', 'fortran_order': Falsey, 'shape': (1,)}", "True or False"},
      {test::npy_dict(nested(40), "(1,)"), "nested too deeply"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dict);
    const std::string err = dict_error(c.dict);
    EXPECT_EQ(contains(err, c.message), "");
    EXPECT_EQ(contains(err, "t.npy: not a valid .npy header"), "");
  }
}

TEST(NpyHeader, PreamblesOfOtherVersionsOrHugeHeadersAreRefused) {
  std::vector<std::byte> bytes = test::npy_header(test::npy_dict("'<u8'", "(1,)"));
  bytes[6] = std::byte{4};
  EXPECT_EQ(contains(parse_error(bytes), "version 4.0 is not supported"), "");
  bytes[6] = std::byte{1};
  bytes[7] = std::byte{1};
  EXPECT_EQ(contains(parse_error(bytes), "version 1.1 is not supported"), "");
  bytes = test::npy_header(test::npy_dict("'<u8'", "(1,)"), 2);
  bytes[11] = std::byte{1};  // 16 MiB of header
  EXPECT_EQ(contains(parse_error(bytes), "larger than gpusort reads"), "");
}

TEST(NpyHeader, EveryTruncationIsAnErrorNeverAReadPastTheEnd) {
  // Under ASan (scripts/sanitize.sh) a read past `prefix` would be reported.
  const std::vector<std::byte> whole = test::npy_header(test::npy_dict(
      "[('id', '<u4'), ('v', '<f4', (3,)), ('pos', [('x', '<f4')])]", "(12,)"));
  for (std::size_t n = 0; n < whole.size(); ++n) {
    SCOPED_TRACE(n);
    const std::vector<std::byte> prefix(whole.begin(), whole.begin() + static_cast<long>(n));
    EXPECT_NE(parse_error(prefix), "");
  }
  EXPECT_EQ(parse_error(whole), "");
}

TEST(NpyHeader, RandomDamageGivesAParseOrAGpusortErrorOnly) {
  const std::uint64_t seed = test::base_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::byte> whole = test::npy_header(test::npy_dict(
      "[('id', '<u4'), ('', '|V4'), ('v', '<f4', (3,)), (('t', 'n'), 'S5')]", "(12,)"), 2);
  const char alphabet[] = "{}[](),:'\" 0123456789<>|=uifSVLTrueFalse\\x\n";
  for (int round = 0; round < 20000; ++round) {
    std::vector<std::byte> bytes = whole;
    for (int k = 1 + static_cast<int>(rng() % 4); k > 0; --k) {
      const std::size_t at = 12 + rng() % (bytes.size() - 12);
      bytes[at] = static_cast<std::byte>(rng() % 2 ? alphabet[rng() % (sizeof alphabet - 1)]
                                                   : static_cast<char>(rng()));
    }
    try {
      const npy_header h = parse(bytes);
      EXPECT_EQ(h.header_bytes, bytes.size());
    } catch (const error&) {
      // expected for most damage
    }
  }
}

TEST(NpyHeader, ArraysGpusortCannotSortAreNamedWithTheReason) {
  const struct {
    std::string descr;
    std::string shape;
    bool fortran;
    const char* message;
  } cases[] = {
      {"'|O'", "(3,)", false, "holds Python objects"},
      {"[('a', '<u8'), ('b', '|O')]", "(3,)", false, "holds Python objects"},
      {"'<u8'", "(3, 4)", true, "Fortran order"},
      {"'<u8'", "()", false, "no dimension"},
      {"'<u8'", "(3, 4)", false, "2 dimensions (shape (3, 4)) and a plain dtype '<u8'"},
      {"[('a', '<u8')]", "(3, 4)", false, "of a structured dtype: gpusort sorts 1-D arrays"},
      {"[('a', '<u4', (0,))]", "(3,)", false, "elements of 0 bytes"},
      {"'|V2000000000'", "(3,)", false, "larger than the largest supported"},
      {"'<u8'", "(4611686018427387904,)", false, "too large"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.descr + " " + c.shape);
    const npy_header h = parse_dict(test::npy_dict(c.descr, c.shape, c.fortran));
    try {
      check_sortable(h, "t.npy");
      ADD_FAILURE() << "accepted";
    } catch (const error& e) {
      EXPECT_EQ(contains(e.what(), c.message), "");
      EXPECT_EQ(contains(e.what(), "t.npy: "), "");
    }
  }
  // Fortran order means nothing for one dimension.
  EXPECT_NO_THROW(check_sortable(parse_dict(test::npy_dict("'<u8'", "(3,)", true)), "t.npy"));
}

record_format format_of(const std::string& descr, const std::string& key = "",
                        const record_format& given = {}, const npy_options& said = {}) {
  npy_options o = said;
  o.key_field = key;
  return npy_record_format(parse_dict(test::npy_dict(descr, "(1,)")), "t.npy", given, o);
}

std::string format_error(const std::string& descr, const std::string& key = "",
                         const record_format& given = {}, const npy_options& said = {}) {
  try {
    static_cast<void>(format_of(descr, key, given, said));
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

TEST(NpyRecordFormat, PlainDtypesAreTheirOwnKeys) {
  EXPECT_EQ(format_of("'<u4'"), test::make_format("u32", 4, 0));
  EXPECT_EQ(format_of("'<u8'"), test::make_format("u64", 8, 0));
  EXPECT_EQ(format_of("'<i4'"), test::make_format("i32", 4, 0));
  EXPECT_EQ(format_of("'<i8'"), test::make_format("i64", 8, 0));
  EXPECT_EQ(format_of("'<f4'"), test::make_format("f32", 4, 0));
  EXPECT_EQ(format_of("'<f8'"), test::make_format("f64", 8, 0));
  EXPECT_EQ(format_of("'=i8'"), test::make_format("i64", 8, 0));
  // Byte strings and bytes compare as memcmp does: bytes:N.
  EXPECT_EQ(format_of("'|S10'"), test::make_format("bytes:10", 10, 0));
  EXPECT_EQ(format_of("'|V16'"), test::make_format("bytes:16", 16, 0));
  EXPECT_EQ(format_of("'|u1'"), test::make_format("bytes:1", 1, 0));
}

TEST(NpyRecordFormat, KeyNamesTheFieldOfAStructuredDtype) {
  const std::string descr =
      "[('id', '<u4'), ('', '|V4'), ('score', '<f8'), ('key', '|u1', (10,)), ('n', 'S3'), "
      "('big', '>u8'), ('v', '<f4', (3,)), ('pos', [('x', '<f4')]), ('h', '<f2'), "
      "('c', '<c8'), ('u', '<U2'), ('b', '|b1'), ('huge', '|S5000')]";
  EXPECT_EQ(format_of(descr, "id"), test::make_format("u32", 5072, 0));
  EXPECT_EQ(format_of(descr, "score"), test::make_format("f64", 5072, 8));
  EXPECT_EQ(format_of(descr, "key"), test::make_format("bytes:10", 5072, 16));
  EXPECT_EQ(format_of(descr, "n"), test::make_format("bytes:3", 5072, 26));
  const struct {
    const char* key;
    const char* message;
  } refused[] = {
      {"", "name the key field with --key NAME (fields: id, score, key, n, big, v, pos, h, c, "
           "u, b, huge)"},
      {"nope", "no field 'nope' in its dtype (fields: id, score"},
      {"big", "field 'big' ('>u8') is big-endian"},
      {"v", "field 'v' ('<f4', (3,)) is not a key type"},
      {"pos", "field 'pos' ([('x', '<f4')]) is not a key type"},
      {"h", "field 'h' ('<f2') is not a key type"},
      {"c", "is not a key type"},
      {"u", "is not a key type"},
      {"b", "is not a key type"},
      {"huge", "field 'huge' ('|S5000') is not a key type"},
  };
  for (const auto& r : refused) {
    SCOPED_TRACE(r.key);
    const std::string err = format_error(descr, r.key);
    EXPECT_EQ(contains(err, r.message), "");
    EXPECT_EQ(contains(err, "t.npy: "), "");
  }
  EXPECT_EQ(contains(format_error("'<u8'", "id"), "--key id names a field, but the array's "
                                                  "dtype '<u8' has none"), "");
  EXPECT_EQ(contains(format_error("'>f8'"), "the dtype '>f8' is big-endian"), "");
}

TEST(NpyRecordFormat, WhatTheCallerSetMustAgreeWithTheHeader) {
  const std::string descr = "[('id', '<u8'), ('score', '<f8'), ('pad', '|V8')]";
  npy_options all;
  all.type_set = all.record_size_set = all.key_offset_set = true;
  // Agreeing: accepted; unset parts are free to differ.
  EXPECT_NO_THROW(static_cast<void>(
      format_of(descr, "score", test::make_format("f64", 24, 8), all)));
  EXPECT_NO_THROW(static_cast<void>(
      format_of(descr, "score", test::make_format("u32", 4, 0), npy_options{})));
  npy_options type_only;
  type_only.type_set = true;
  EXPECT_EQ(contains(format_error(descr, "score", test::make_format("u64", 8, 0), type_only),
                     "-t u64 contradicts its header: the key, field 'score' ('<f8'), is f64"),
            "");
  npy_options size_only;
  size_only.record_size_set = true;
  EXPECT_EQ(contains(format_error(descr, "id", test::make_format("u64", 16, 0), size_only),
                     "--record-size 16 contradicts its header: its records (dtype"),
            "");
  npy_options offset_only;
  offset_only.key_offset_set = true;
  EXPECT_EQ(contains(format_error(descr, "id", test::make_format("u64", 24, 8), offset_only),
                     "--key-offset 8 contradicts its header: the key, field 'id' ('<u8'), is at "
                     "offset 0"),
            "");
}

TEST(NpyOutputHeader, IsTheHeaderNumPyWritesWithTheNewShape) {
  const npy_header like = parse_dict(test::npy_dict("'<u8'", "(4,)"));
  const std::vector<std::byte> bytes = format_npy_header(like, 4, like.header_bytes);
  EXPECT_EQ(bytes, test::npy_header(test::npy_dict("'<u8'", "(4,)")));
  std::string expected("\x93NUMPY\x01\x00\x76\x00", 10);
  expected += "{'descr': '<u8', 'fortran_order': False, 'shape': (4,), }";
  expected.resize(127, ' ');
  expected += '\n';
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()), expected);
  // A Fortran-order 1-D input (the same bytes) comes out in C order; the descr as written.
  const npy_header odd = parse_dict("{'shape':(9,),'fortran_order':True,'descr':[('a','=u8')]}");
  const test::npy_parts p = test::split_npy(format_npy_header(odd, 9, odd.header_bytes));
  EXPECT_EQ(p.dict, "{'descr': [('a','=u8')], 'fortran_order': False, 'shape': (9,), }");
}

TEST(NpyOutputHeader, KeepsTheInputsLengthAndGrowsOnlyWhenTheShapeDoesNotFit) {
  // A 16-byte aligned header of an old file keeps its length (and the data its alignment).
  const npy_header old = parse_dict(test::npy_dict("'<u8'", "(4,)"), 1, 16);
  ASSERT_EQ(old.header_bytes, 80u);
  EXPECT_EQ(npy_output_header_bytes(old, 4), 80u);
  EXPECT_EQ(npy_output_header_bytes(old, 12345), 80u);  // 4 more digits still fit
  const std::uint64_t grown = npy_output_header_bytes(old, 123456789012345);
  EXPECT_EQ(grown, 128u);
  // Fewer records never need more room: --unique rewrites the shape in the same length.
  for (const std::uint64_t n : {0ull, 9ull, 123456789012345ull}) {
    const std::vector<std::byte> bytes = format_npy_header(old, n, grown);
    EXPECT_EQ(bytes.size(), grown);
    const npy_header back = parse(bytes);
    EXPECT_EQ(back.shape, std::vector<std::uint64_t>{n});
    EXPECT_EQ(back.dtype, old.dtype);
  }
  EXPECT_THROW(static_cast<void>(format_npy_header(old, 123456789012345, 80)), error);
}

TEST(NpyOutputHeader, AVersionOneHeaderPastSixtyFourKiBBecomesVersionTwo) {
  // A dtype whose descr takes 70000 bytes fits only a version 2.0 length field.
  const std::string descr = "[('a', '<u4')" + std::string(70000, ' ') + "]";
  const npy_header v2 = parse_dict(test::npy_dict(descr, "(1,)"), 2);
  npy_header v1 = v2;  // as if a version 1.0 input had to grow that far
  v1.major = 1;
  v1.header_bytes = 128;
  const std::uint64_t bytes = npy_output_header_bytes(v1, 5);
  EXPECT_EQ(bytes % 64, 0u);
  EXPECT_GT(bytes, 65536u);
  const std::vector<std::byte> out = format_npy_header(v1, 5, bytes);
  EXPECT_EQ(static_cast<unsigned>(out[6]), 2u);
  const npy_header back = parse(out);
  EXPECT_EQ(back.dtype, v2.dtype);
  EXPECT_EQ(back.header_bytes, bytes);
}

}  // namespace
}  // namespace gpusort::io
