//===- GgufErrorsTest.cpp - The GGUF reader on bad files ------------------===//
//
// One hand-built file per check of support/Gguf.h, each broken in one
// field, against the one-line message that names the file and the key or
// tensor (and the offsets it computed, by hand here).
//
//===----------------------------------------------------------------------===//

#include "test/unit/GgufBuilder.h"

#include "support/Gguf.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

using namespace tfmc::support;
using tfmc::test::GgufBytes;
namespace ggml = tfmc::test;

namespace {

/// parseGguf's error for `bytes` as a whole file (of `fileSize` bytes if
/// given, the rest not in memory); fails the test if it parses.
std::string errorOf(const GgufBytes &bytes, uint64_t fileSize = 0) {
  std::string error;
  std::optional<GgufFile> file =
      parseGguf("m.gguf", bytes.data.data(), bytes.data.size(),
                fileSize ? fileSize : bytes.size(), error);
  EXPECT_FALSE(file) << "parsed";
  EXPECT_EQ(error.find('\n'), std::string::npos);
  return error;
}

/// A header for one tensor and no key, then `info`, padded to 32 bytes
/// with `data` bytes of data section.
GgufBytes oneTensor(const GgufBytes &info, uint64_t data = 64) {
  GgufBytes bytes = GgufBytes::header(1, 0);
  bytes.raw(info.data).dataSection(32, data);
  return bytes;
}

GgufBytes tensorInfo(std::string_view name, const std::vector<uint64_t> &dims,
                     uint32_t type, uint64_t offset = 0) {
  return GgufBytes().tensor(name, dims, type, offset);
}

TEST(GgufErrors, Header) {
  EXPECT_EQ(errorOf(GgufBytes()), "m.gguf: file is empty");
  EXPECT_EQ(errorOf(GgufBytes().raw("GGM")),
            "m.gguf: not a GGUF file: it starts with 'GGM', expected 'GGUF'");
  EXPECT_EQ(errorOf(GgufBytes().raw("GG")),
            "m.gguf: file is truncated: 2 bytes, but a GGUF header takes 24");
  EXPECT_EQ(errorOf(GgufBytes().raw("GGUF").u32(3).u64(0)),
            "m.gguf: file is truncated: 16 bytes, but a GGUF header takes 24");
  GgufBytes png = GgufBytes().raw("\x89PNG").raw(std::string(20, '\0'));
  EXPECT_EQ(errorOf(png),
            "m.gguf: not a GGUF file: it starts with '\\x89PNG', expected "
            "'GGUF'");
  GgufBytes ggml = GgufBytes().raw("GGML").raw(std::string(20, '\0'));
  EXPECT_EQ(errorOf(ggml),
            "m.gguf: not a GGUF file: it starts with 'GGML', expected 'GGUF'");
}

TEST(GgufErrors, Versions) {
  EXPECT_EQ(errorOf(GgufBytes::header(0, 0, 1)),
            "m.gguf: GGUF version 1 is not supported (tfmc reads versions 2 "
            "and 3)");
  EXPECT_EQ(errorOf(GgufBytes::header(0, 0, 4)),
            "m.gguf: GGUF version 4 is not supported (tfmc reads versions 2 "
            "and 3)");
  EXPECT_EQ(errorOf(GgufBytes::header(0, 0, 0)),
            "m.gguf: GGUF version 0 is not supported (tfmc reads versions 2 "
            "and 3)");
  // Version 3 written big-endian.
  EXPECT_EQ(errorOf(GgufBytes::header(0, 0, 0x03000000)),
            "m.gguf: GGUF version 50331648 is not supported (tfmc reads "
            "versions 2 and 3; is this a big-endian file?)");
}

TEST(GgufErrors, CountsThatCannotFit) {
  // Two keys take at least 28 bytes; 27 follow the header.
  GgufBytes keys = GgufBytes::header(0, 2);
  keys.raw(std::string(27, 'x'));
  EXPECT_EQ(errorOf(keys),
            "m.gguf: the header's counts, 2 keys and 0 tensors, cannot fit in "
            "the rest of the file: a key takes at least 14 bytes, a tensor "
            "info 33, and 27 bytes follow the header");
  EXPECT_EQ(errorOf(GgufBytes::header(1, 0)),
            "m.gguf: the header's counts, 0 keys and 1 tensors, cannot fit in "
            "the rest of the file: a key takes at least 14 bytes, a tensor "
            "info 33, and 0 bytes follow the header");
  // Counts whose products overflow 64 bits, and a sum that does.
  EXPECT_NE(errorOf(GgufBytes::header(UINT64_MAX, 0)).find("0 keys and "
                                                           "18446744073709551615 "
                                                           "tensors, cannot fit"),
            std::string::npos);
  EXPECT_NE(errorOf(GgufBytes::header(0, UINT64_MAX / 8)).find("cannot fit"),
            std::string::npos);
  EXPECT_NE(errorOf(GgufBytes::header(UINT64_MAX / 33, 1)).find("cannot fit"),
            std::string::npos);
  // Each count alone fits, both together do not: 38 bytes for one of each
  // would need 47.
  GgufBytes both = GgufBytes::header(1, 1);
  both.raw(std::string(46, 'x'));
  EXPECT_NE(errorOf(both).find("1 keys and 1 tensors, cannot fit"),
            std::string::npos);
  // In a file larger than the header's bound, the bound is what they must
  // fit in.
  EXPECT_EQ(errorOf(GgufBytes::header(0, uint64_t(1) << 27), uint64_t(1) << 32),
            "m.gguf: the header's counts, 134217728 keys and 0 tensors, cannot "
            "fit in the 1073741824 bytes the header may take: a key takes at "
            "least 14 bytes, a tensor info 33, and 1073741800 bytes follow the "
            "header");
}

TEST(GgufErrors, Keys) {
  GgufBytes length = GgufBytes::header(0, 1);
  length.u64(100).raw("abcdef");
  EXPECT_EQ(errorOf(length),
            "m.gguf: key 0: the key (100 bytes at offset 32) runs past the end "
            "of the file (38 bytes)");
  // The second key's length is cut: the first takes 23 bytes from 24.
  GgufBytes second = GgufBytes::header(0, 2);
  second.key("abcdefghij", GgufType::U8, uint8_t(1)).raw("xxxxx");
  EXPECT_EQ(errorOf(second),
            "m.gguf: key 1: the key's length (8 bytes at offset 47) runs past "
            "the end of the file (52 bytes)");
  GgufBytes empty = GgufBytes::header(0, 1);
  empty.key("", GgufType::U8, uint8_t(0)).raw("x");
  EXPECT_EQ(errorOf(empty), "m.gguf: key 0 is empty");
  GgufBytes utf8 = GgufBytes::header(0, 1);
  utf8.key("a\xff" "b", GgufType::U8, uint8_t(0));
  EXPECT_EQ(errorOf(utf8), "m.gguf: key 0 is not valid UTF-8: 'a\\xffb'");
  GgufBytes type = GgufBytes::header(0, 1);
  type.str("k").u32(13).u8(0);
  EXPECT_EQ(errorOf(type), "m.gguf: key 'k' has unknown value type 13");
  GgufBytes hugeType = GgufBytes::header(0, 1);
  hugeType.str("k").u32(UINT32_MAX).u8(0);
  EXPECT_EQ(errorOf(hugeType),
            "m.gguf: key 'k' has unknown value type 4294967295");
  GgufBytes typeCut = GgufBytes::header(0, 1);
  typeCut.str("abcdefghijk").raw("x");
  EXPECT_EQ(errorOf(typeCut),
            "m.gguf: key 'abcdefghijk': the value type (4 bytes at offset 43) "
            "runs past the end of the file (44 bytes)");
  GgufBytes value = GgufBytes::header(0, 1);
  value.str("k").type(GgufType::U64).u8(0);
  EXPECT_EQ(errorOf(value),
            "m.gguf: key 'k': the value (8 bytes at offset 37) runs past the "
            "end of the file (38 bytes)");
  GgufBytes boolean = GgufBytes::header(0, 1);
  boolean.key("b", GgufType::Bool, uint8_t(2));
  EXPECT_EQ(errorOf(boolean), "m.gguf: key 'b' is a bool of value 2, expected "
                              "0 or 1");
  GgufBytes twice = GgufBytes::header(0, 3);
  twice.key("a", GgufType::U8, uint8_t(0))
      .key("b", GgufType::U8, uint8_t(0))
      .keyString("a", "again");
  EXPECT_EQ(errorOf(twice), "m.gguf: key 'a' appears twice");
}

TEST(GgufErrors, Strings) {
  GgufBytes string = GgufBytes::header(0, 1);
  string.str("k").type(GgufType::String).u64(50).raw("ab");
  EXPECT_EQ(errorOf(string),
            "m.gguf: key 'k': the string (50 bytes at offset 45) runs past the "
            "end of the file (47 bytes)");
  GgufBytes stringLength = GgufBytes::header(0, 1);
  stringLength.str("k").type(GgufType::String).u8(0);
  EXPECT_EQ(errorOf(stringLength),
            "m.gguf: key 'k': the string's length (8 bytes at offset 37) runs "
            "past the end of the file (38 bytes)");
  // Strings, the key's name included, are checked against the header's
  // bound before they are read: a 1 GiB key in a 2 GiB file.
  GgufBytes huge = GgufBytes::header(0, 1);
  huge.u64(uint64_t(1) << 30);
  EXPECT_EQ(errorOf(huge, uint64_t(2) << 30),
            "m.gguf: key 0: the key (1073741824 bytes at offset 32) runs past "
            "the 1073741824 bytes the header may take");
  // parseGguf's bytes end before the header does.
  GgufBytes cut = GgufBytes::header(0, 1);
  EXPECT_EQ(errorOf(cut, 100),
            "m.gguf: cannot read key 0: the key's length at offset 24: the "
            "header continues past the 24 bytes given");
}

TEST(GgufErrors, Arrays) {
  GgufBytes element = GgufBytes::header(0, 1);
  element.keyArray("k", static_cast<GgufType>(13), 0);
  EXPECT_EQ(errorOf(element),
            "m.gguf: key 'k': an array of unknown element type 13");
  // Each array starts at offset 49: key length (8), "k", type, element
  // type, count.
  GgufBytes numbers = GgufBytes::header(0, 1);
  numbers.keyArray("k", GgufType::U32, 1000).raw(std::string(8, '\0'));
  EXPECT_EQ(errorOf(numbers),
            "m.gguf: key 'k': an array of 1000 u32 cannot fit in the rest of "
            "the file: each takes 4 bytes, and 8 remain after offset 49");
  GgufBytes strings = GgufBytes::header(0, 1);
  strings.keyArray("k", GgufType::String, 10).raw(std::string(79, '\0'));
  EXPECT_EQ(errorOf(strings),
            "m.gguf: key 'k': an array of 10 strings cannot fit in the rest of "
            "the file: each takes at least 8 bytes, and 79 remain after offset "
            "49");
  GgufBytes arrays = GgufBytes::header(0, 1);
  arrays.keyArray("k", GgufType::Array, 10).raw(std::string(119, '\0'));
  EXPECT_EQ(errorOf(arrays),
            "m.gguf: key 'k': an array of 10 arrays cannot fit in the rest of "
            "the file: each takes at least 12 bytes, and 119 remain after "
            "offset 49");
  GgufBytes bound = GgufBytes::header(0, 1);
  bound.keyArray("k", GgufType::U8, uint64_t(1) << 30);
  EXPECT_EQ(errorOf(bound, uint64_t(2) << 30),
            "m.gguf: key 'k': an array of 1073741824 u8 cannot fit in the "
            "1073741824 bytes the header may take: each takes 1 bytes, and "
            "1073741775 remain after offset 49");
  // String 1 of 2 claims 100 bytes at 67; the file ends at 70.
  GgufBytes string = GgufBytes::header(0, 1);
  string.keyArray("k", GgufType::String, 2).str("ab").u64(100).raw("xyz");
  EXPECT_EQ(errorOf(string),
            "m.gguf: key 'k': string 1 (100 bytes at offset 67) runs past the "
            "end of the file (70 bytes)");
  GgufBytes header = GgufBytes::header(0, 1);
  header.str("k").type(GgufType::Array).u32(4).raw("x");
  EXPECT_EQ(errorOf(header),
            "m.gguf: key 'k': the array's length (8 bytes at offset 41) runs "
            "past the end of the file (42 bytes)");
  GgufBytes bools = GgufBytes::header(0, 1);
  bools.keyArray("f", GgufType::Bool, 3).u8(0).u8(1).u8(7);
  EXPECT_EQ(errorOf(bools),
            "m.gguf: key 'f': element 2 is a bool of value 7, expected 0 or 1");
  // Arrays of arrays of arrays of arrays.
  GgufBytes deep = GgufBytes::header(0, 1);
  deep.keyArray("k", GgufType::Array, 1)
      .type(GgufType::Array).u64(1)
      .type(GgufType::Array).u64(1)
      .raw(std::string(24, '\0'));
  EXPECT_EQ(errorOf(deep), "m.gguf: key 'k': arrays nest deeper than 3 levels");
  // An inner array's count is checked like any other.
  GgufBytes inner = GgufBytes::header(0, 1);
  inner.keyArray("k", GgufType::Array, 1).type(GgufType::U64).u64(2).u64(1);
  EXPECT_EQ(errorOf(inner),
            "m.gguf: key 'k': an array of 2 u64 cannot fit in the rest of the "
            "file: each takes 8 bytes, and 8 remain after offset 61");
}

TEST(GgufErrors, Alignment) {
  GgufBytes u64 = GgufBytes::header(0, 1);
  u64.key("general.alignment", GgufType::U64, uint64_t(64));
  EXPECT_EQ(errorOf(u64),
            "m.gguf: key 'general.alignment' is a u64, expected a u32");
  GgufBytes string = GgufBytes::header(0, 1);
  string.keyString("general.alignment", "32");
  EXPECT_EQ(errorOf(string),
            "m.gguf: key 'general.alignment' is a string, expected a u32");
  for (uint32_t alignment : {0u, 24u, 0x80000001u}) {
    GgufBytes bytes = GgufBytes::header(0, 1);
    bytes.key("general.alignment", GgufType::U32, alignment);
    EXPECT_EQ(errorOf(bytes), "m.gguf: key 'general.alignment' is " +
                                  std::to_string(alignment) +
                                  ", expected a power of two");
  }
  // The alignment the offsets must keep is the file's.
  GgufBytes offset = GgufBytes::header(1, 1);
  offset.key("general.alignment", GgufType::U32, uint32_t(64))
      .tensor("w", {8}, ggml::kF32, 32)
      .dataSection(64, 64);
  EXPECT_EQ(errorOf(offset),
            "m.gguf: tensor 'w': offset 32 is not a multiple of the alignment "
            "64");
}

TEST(GgufErrors, TensorNamesAndShapes) {
  GgufBytes length = GgufBytes::header(1, 0);
  length.u64(100).raw(std::string(25, 'x'));
  EXPECT_EQ(errorOf(length),
            "m.gguf: tensor 0: the name (100 bytes at offset 32) runs past the "
            "end of the file (57 bytes)");
  GgufBytes empty = GgufBytes::header(1, 0);
  empty.tensor("", {4}, ggml::kF32, 0).raw("x");
  EXPECT_EQ(errorOf(empty), "m.gguf: tensor 0 has an empty name");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w\xc3", {4}, ggml::kF32))),
            "m.gguf: tensor 0's name is not valid UTF-8: 'w\\xc3'");
  GgufBytes none = GgufBytes::header(1, 0);
  none.str("w").u32(0).u32(0).u64(0).raw(std::string(8, '\0'));
  EXPECT_EQ(errorOf(none), "m.gguf: tensor 'w' has 0 dimensions (ggml allows "
                           "1 to 4)");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {1, 1, 1, 1, 1}, ggml::kF32))),
            "m.gguf: tensor 'w' has 5 dimensions (ggml allows 1 to 4)");
  // Four dims promised, two there: the 33 bytes a tensor info needs end
  // at 57.
  GgufBytes shape = GgufBytes::header(1, 0);
  shape.str("w").u32(4).u64(1).u64(1).raw("xxxx");
  EXPECT_EQ(errorOf(shape),
            "m.gguf: tensor 'w': the shape (32 bytes at offset 37) runs past "
            "the end of the file (57 bytes)");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {4, 0}, ggml::kF32))),
            "m.gguf: tensor 'w' has a zero dimension: [4, 0]");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo(
                "w", {uint64_t(1) << 32, uint64_t(1) << 32}, ggml::kF32))),
            "m.gguf: tensor 'w': dimensions [4294967296, 4294967296] hold "
            "more than 2^63 - 1 elements");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {uint64_t(1) << 63}, ggml::kI8))),
            "m.gguf: tensor 'w': dimensions [9223372036854775808] hold more "
            "than 2^63 - 1 elements");
  // The two tensors' 73 bytes hold all of the second's info but its offset.
  GgufBytes offset = GgufBytes::header(2, 0);
  offset.tensor("a-long-name-here", {4}, ggml::kF32, 0)
      .str("b").u32(1).u64(4).u32(ggml::kF32);
  EXPECT_EQ(errorOf(offset),
            "m.gguf: tensor 'b': the data offset (8 bytes at offset 97) runs "
            "past the end of the file (97 bytes)");
}

TEST(GgufErrors, TensorTypes) {
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {4}, 99))),
            "m.gguf: tensor 'w' has unknown ggml type 99");
  // Types ggml has removed from GGUF files: Q4_2, Q4_0_4_4, IQ4_NL_4_4.
  for (uint32_t removed : {4u, 5u, 31u, 36u})
    EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {4}, removed))),
              "m.gguf: tensor 'w' has unknown ggml type " +
                  std::to_string(removed));
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {256}, 16))),
            "m.gguf: tensor 'w' has ggml type IQ2_XXS (16), which tfmc does "
            "not read");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {256}, 29))),
            "m.gguf: tensor 'w' has ggml type IQ1_M (29), which tfmc does not "
            "read");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {32}, 39))),
            "m.gguf: tensor 'w' has ggml type MXFP4 (39), which tfmc does not "
            "read");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {30, 4}, ggml::kQ8_0))),
            "m.gguf: tensor 'w': Q8_0 stores rows in blocks of 32 values, but "
            "the rows of [30, 4] have 30");
  // Byte sizes past 64 bits, and past 2^63 - 1.
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {uint64_t(1) << 61}, ggml::kF64))),
            "m.gguf: tensor 'w': F64 [2305843009213693952] takes more than "
            "2^63 - 1 bytes");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {uint64_t(1) << 61}, ggml::kF32))),
            "m.gguf: tensor 'w': F32 [2305843009213693952] takes more than "
            "2^63 - 1 bytes");
  GgufBytes type = GgufBytes::header(1, 0);
  type.str("abcdefghijklmnopqrst").u32(1).u64(4);
  EXPECT_EQ(errorOf(type),
            "m.gguf: tensor 'abcdefghijklmnopqrst': the ggml type (4 bytes at "
            "offset 64) runs past the end of the file (64 bytes)");
}

TEST(GgufErrors, TensorLayout) {
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {4}, ggml::kF32, 16))),
            "m.gguf: tensor 'w': offset 16 is not a multiple of the alignment "
            "32");
  GgufBytes twice = GgufBytes::header(2, 0);
  twice.tensor("w", {4}, ggml::kF32, 0)
      .tensor("w", {4}, ggml::kF32, 32)
      .dataSection(32, 64);
  EXPECT_EQ(errorOf(twice), "m.gguf: tensor 'w' appears twice");
  // The info ends at 57: the data section starts at 64 and holds 32 bytes.
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {16}, ggml::kF32), 32)),
            "m.gguf: tensor 'w': its 64 bytes at offset 0 of the data section "
            "run past the end of the file (the data section starts at byte 64 "
            "and holds 32 bytes)");
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {4}, ggml::kF32, 64), 64)),
            "m.gguf: tensor 'w': its 16 bytes at offset 64 of the data section "
            "run past the end of the file (the data section starts at byte 64 "
            "and holds 64 bytes)");
  // No data section at all; an offset at the top of the u64 range.
  GgufBytes bare = GgufBytes::header(1, 0);
  bare.tensor("w", {4}, ggml::kF32, UINT64_MAX - 31);
  EXPECT_EQ(errorOf(bare),
            "m.gguf: tensor 'w': its 16 bytes at offset 18446744073709551584 "
            "of the data section run past the end of the file (the data "
            "section starts at byte 64 and holds 0 bytes)");
  // An end that wraps around 64 bits lies past the file all the same.
  EXPECT_EQ(errorOf(oneTensor(tensorInfo("w", {16}, ggml::kF32,
                                         UINT64_MAX - 31),
                              64)),
            "m.gguf: tensor 'w': its 64 bytes at offset 18446744073709551584 "
            "of the data section run past the end of the file (the data "
            "section starts at byte 64 and holds 64 bytes)");
  // 'a' holds [0, 64), 'b' starts inside it.
  GgufBytes overlap = GgufBytes::header(3, 0);
  overlap.tensor("c", {8}, ggml::kF32, 128)
      .tensor("b", {8}, ggml::kF32, 32)
      .tensor("a", {16}, ggml::kF32, 0)
      .dataSection(32, 160);
  EXPECT_EQ(errorOf(overlap),
            "m.gguf: tensors 'a' and 'b' overlap: bytes [0, 64) and [32, 64) "
            "of the data section");
  // Two tensors at one offset.
  GgufBytes within = GgufBytes::header(2, 0);
  within.tensor("same", {64}, ggml::kF32, 0)
      .tensor("big", {64}, ggml::kF32, 0)
      .dataSection(32, 256);
  EXPECT_EQ(errorOf(within),
            "m.gguf: tensors 'big' and 'same' overlap: bytes [0, 256) and [0, "
            "256) of the data section");
}

} // namespace
