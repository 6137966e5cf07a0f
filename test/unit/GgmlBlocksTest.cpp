//===- GgmlBlocksTest.cpp - ggml's Q5_0 and IQ4_NL blocks, hand-derived ---===//
//
// runtime/core/GgmlBlocks.h's transcodeGgmlToInt8 and dequantizeGgml on
// hand-built Q5_0 and IQ4_NL blocks (ggml-common.h: block_q5_0 { f16 d;
// u8 qh[4]; u8 qs[16]; }, block_iq4_nl { f16 d; u8 qs[16]; }). Every
// expected q is written out by hand from those layouts and ggml's
// dequantize_row_q5_0 / dequantize_row_iq4_nl (value j = d · q_j), never
// from a run of the code under test; the f32 values are q_j times d in f32,
// with d's half written out bit by bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/GgmlBlocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace tfmc::runtime;

namespace {

constexpr int32_t kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8,
                  kIq4Nl = 20;

// Halves, by their bits.
constexpr uint16_t kOne = 0x3C00, kMinusTwo = 0xC000, kHalf = 0x3800,
                   kZero = 0x0000, kMinusZero = 0x8000, kInf = 0x7C00,
                   kMinusInf = 0xFC00, kNaN = 0x7E00;

float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The f32 value of the half `bits` (IEEE binary16: 1 sign, 5 exponent, 10
/// mantissa bits).
float half(uint16_t bits) {
  const uint32_t sign = uint32_t(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  if (exponent == 0) // zeros and subnormals: mantissa · 2^-24
    return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mantissa), -24);
  if (exponent == 0x1F)
    return fromBits(sign | 0x7F800000 | mantissa << 13);
  return fromBits(sign | (exponent - 15 + 127) << 23 | mantissa << 13);
}

struct Blocks {
  std::vector<uint8_t> bytes;
  TensorView view(int32_t type, int64_t rows, int64_t cols) const {
    TensorView tensor;
    tensor.name = "w";
    tensor.dtype = DType::U8;
    tensor.shape = {rows, cols};
    tensor.data = bytes.data();
    tensor.bytes = bytes.size();
    tensor.ggmlBlocks = type;
    return tensor;
  }
};

void appendHalf(std::vector<uint8_t> &bytes, uint16_t bits) {
  bytes.push_back(static_cast<uint8_t>(bits & 0xFF));
  bytes.push_back(static_cast<uint8_t>(bits >> 8));
}

/// A Q5_0 block: d, qh (little-endian), qs.
void appendQ5_0(Blocks &blocks, uint16_t d, uint32_t qh,
                const std::vector<uint8_t> &qs) {
  appendHalf(blocks.bytes, d);
  for (int i = 0; i < 4; ++i)
    blocks.bytes.push_back(static_cast<uint8_t>(qh >> (8 * i)));
  blocks.bytes.insert(blocks.bytes.end(), qs.begin(), qs.end());
}

void appendIq4Nl(Blocks &blocks, uint16_t d, const std::vector<uint8_t> &qs) {
  appendHalf(blocks.bytes, d);
  blocks.bytes.insert(blocks.bytes.end(), qs.begin(), qs.end());
}

/// qs[j] = j | (15 - j) << 4: every nibble, low (values 0 .. 15) and high
/// (values 16 .. 31, in reverse).
std::vector<uint8_t> everyNibble() {
  std::vector<uint8_t> qs;
  for (int j = 0; j < 16; ++j)
    qs.push_back(static_cast<uint8_t>(j | (15 - j) << 4));
  return qs;
}

/// Splits int8 blocks of 32 into d's bits and q.
void splitInt8(const std::vector<uint8_t> &out, std::vector<uint16_t> &d,
               std::vector<int> &q) {
  ASSERT_EQ(out.size() % 34, 0u);
  for (std::size_t b = 0; b < out.size(); b += 34) {
    d.push_back(static_cast<uint16_t>(out[b] | out[b + 1] << 8));
    for (int j = 0; j < 32; ++j)
      q.push_back(static_cast<int8_t>(out[b + 2 + j]));
  }
}

/// value == q · d in f32, bit for bit, or both NaN (the first 10
/// differences reported).
void expectValues(const std::vector<float> &values, const std::vector<int> &q,
                  const std::vector<uint16_t> &d) {
  ASSERT_EQ(values.size(), q.size());
  int wrong = 0;
  for (std::size_t i = 0; i < values.size() && wrong < 10; ++i) {
    const float expected = static_cast<float>(q[i]) * half(d[i / 32]);
    const bool same = std::isnan(expected)
                          ? std::isnan(values[i])
                          : std::memcmp(&values[i], &expected, 4) == 0;
    if (!same)
      ++wrong;
    EXPECT_TRUE(same) << "value " << i << ": " << values[i] << ", expected "
                      << expected;
  }
}

} // namespace

TEST(GgmlBlocks, WhichTypes) {
  EXPECT_TRUE(canDequantizeGgml(kQ5_0));
  EXPECT_TRUE(canDequantizeGgml(kIq4Nl));
  EXPECT_TRUE(transcodesToInt8(kQ5_0));
  EXPECT_TRUE(transcodesToInt8(kIq4Nl));
  // A per-block minimum (d · q + m): no tfmc format holds it.
  EXPECT_FALSE(canDequantizeGgml(kQ4_1));
  EXPECT_FALSE(canDequantizeGgml(kQ5_1));
  EXPECT_FALSE(transcodesToInt8(kQ4_1));
  EXPECT_FALSE(transcodesToInt8(kQ5_1));
  // Q8_0 is int8 already, Q4_0 int4: used in place, not transcoded.
  EXPECT_FALSE(transcodesToInt8(kQ8_0));
  EXPECT_FALSE(transcodesToInt8(kQ4_0));
}

TEST(GgmlBlocks, Q5_0ToInt8) {
  // A [3, 64] tensor: three rows of two blocks.
  Blocks blocks;
  // Block 0: every nibble; fifth bits set on values 0 .. 15, unset on 16 ..
  // 31: q_j = j for j < 16; q_{16+i} = (15 - i) - 16 = -1 - i.
  appendQ5_0(blocks, kOne, 0x0000FFFFu, everyNibble());
  // Block 1: the same nibbles, the fifth bits the other way round: q_j =
  // j - 16 for j < 16; q_{16+i} = (15 - i) + 16 - 16 = 15 - i.
  appendQ5_0(blocks, kMinusTwo, 0xFFFF0000u, everyNibble());
  // Block 2: nibbles 0, fifth bits 0, 16 and 31 only (bit j + 16, not j +
  // 12, is value j + 16's): q = 0 there, -16 elsewhere.
  appendQ5_0(blocks, kHalf, 0x80010001u, std::vector<uint8_t>(16, 0));
  // Blocks 3 to 5: block 0's bytes with d = 0 and d = +infinity, block 1's
  // with d a NaN.
  appendQ5_0(blocks, kZero, 0x0000FFFFu, everyNibble());
  appendQ5_0(blocks, kInf, 0x0000FFFFu, everyNibble());
  appendQ5_0(blocks, kNaN, 0xFFFF0000u, everyNibble());
  ASSERT_EQ(blocks.bytes.size(), 6u * 22);
  const TensorView tensor = blocks.view(kQ5_0, 3, 64);

  const std::vector<int> block0 = {0,  1,  2,  3,  4,   5,   6,   7,
                                   8,  9,  10, 11, 12,  13,  14,  15,
                                   -1, -2, -3, -4, -5,  -6,  -7,  -8,
                                   -9, -10, -11, -12, -13, -14, -15, -16};
  const std::vector<int> block1 = {-16, -15, -14, -13, -12, -11, -10, -9,
                                   -8,  -7,  -6,  -5,  -4,  -3,  -2,  -1,
                                   15,  14,  13,  12,  11,  10,  9,   8,
                                   7,   6,   5,   4,   3,   2,   1,   0};
  std::vector<int> block2(32, -16);
  block2[0] = block2[16] = block2[31] = 0;
  std::vector<int> expectedQ;
  const std::vector<int> *order[] = {&block0, &block1, &block2,
                                     &block0, &block0, &block1};
  for (const std::vector<int> *b : order)
    expectedQ.insert(expectedQ.end(), b->begin(), b->end());
  const std::vector<uint16_t> expectedD = {kOne,  kMinusTwo, kHalf,
                                           kZero, kInf,      kNaN};

  for (int threads : {1, 4}) {
    std::vector<uint8_t> out(6 * 34, 0xEE);
    transcodeGgmlToInt8(tensor, out.data(), threads);
    std::vector<uint16_t> d;
    std::vector<int> q;
    splitInt8(out, d, q);
    EXPECT_EQ(d, expectedD); // the half as it was: 0, infinity and NaN too
    EXPECT_EQ(q, expectedQ);
  }
  // ggml's values, q_j · d: d = 0 gives zeros, an infinity ±infinity (and
  // NaN for q = 0), a NaN NaN, as the int8 blocks' q · d do.
  std::vector<float> values(6 * 32);
  dequantizeGgml(tensor, values.data());
  expectValues(values, expectedQ, expectedD);
  EXPECT_EQ(values[1], 1.0f);
  EXPECT_EQ(values[32 + 16], -30.0f); // 15 · -2
  EXPECT_EQ(values[64 + 1], -8.0f);   // -16 · 0.5
  EXPECT_EQ(values[128 + 1], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(values[128])); // 0 · infinity
  EXPECT_TRUE(std::isnan(values[160 + 3]));
}

TEST(GgmlBlocks, Iq4NlToInt8) {
  Blocks blocks;
  appendIq4Nl(blocks, kOne, everyNibble());
  appendIq4Nl(blocks, kHalf, std::vector<uint8_t>(16, 0x8F)); // low 15, high 8
  appendIq4Nl(blocks, kMinusZero, everyNibble());
  appendIq4Nl(blocks, kMinusInf, everyNibble());
  ASSERT_EQ(blocks.bytes.size(), 4u * 18);
  const TensorView tensor = blocks.view(kIq4Nl, 2, 64);

  // kvalues_iq4nl (ggml-common.h), by nibble, then in reverse.
  const std::vector<int> block0 = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113,
                                   113,  89,   69,  53,  38,  25,  13,  1,
                                   -10,  -22,  -35, -49, -65, -83, -104, -127};
  std::vector<int> block1(32, 113);
  for (int j = 16; j < 32; ++j)
    block1[j] = 1;
  std::vector<int> expectedQ;
  const std::vector<int> *order[] = {&block0, &block1, &block0, &block0};
  for (const std::vector<int> *b : order)
    expectedQ.insert(expectedQ.end(), b->begin(), b->end());
  const std::vector<uint16_t> expectedD = {kOne, kHalf, kMinusZero, kMinusInf};

  for (int threads : {1, 3}) {
    std::vector<uint8_t> out(4 * 34, 0xEE);
    transcodeGgmlToInt8(tensor, out.data(), threads);
    std::vector<uint16_t> d;
    std::vector<int> q;
    splitInt8(out, d, q);
    EXPECT_EQ(d, expectedD);
    EXPECT_EQ(q, expectedQ);
  }
  std::vector<float> values(4 * 32);
  dequantizeGgml(tensor, values.data());
  expectValues(values, expectedQ, expectedD);
  EXPECT_EQ(values[0], -127.0f);
  EXPECT_EQ(values[32], 56.5f); // 113 · 0.5
  EXPECT_EQ(values[48], 0.5f);  // 1 · 0.5
  EXPECT_TRUE(std::signbit(values[64 + 8]) && values[64 + 8] == 0.0f); // 1 · -0
  EXPECT_EQ(values[96 + 8], -std::numeric_limits<float>::infinity());
}

// A tensor large enough to be split over threads (2^21 values): the same
// blocks whatever the thread count, and every value q · d of its own block.
TEST(GgmlBlocks, LargeTensorOverThreads) {
  std::mt19937 random(7);
  for (int32_t type : {kQ5_0, kIq4Nl}) {
    SCOPED_TRACE(type);
    const int64_t rows = 64, cols = 32768, count = rows * cols / 32;
    const int blockBytes = type == kQ5_0 ? 22 : 18;
    Blocks blocks;
    blocks.bytes.resize(static_cast<std::size_t>(count * blockBytes));
    for (uint8_t &byte : blocks.bytes)
      byte = static_cast<uint8_t>(random());
    for (int64_t b = 0; b < count; ++b) // finite scales, below 2
      blocks.bytes[b * blockBytes + 1] &= 0x3F;
    const TensorView tensor = blocks.view(type, rows, cols);
    std::vector<uint8_t> one(static_cast<std::size_t>(count * 34));
    std::vector<uint8_t> many(one.size());
    transcodeGgmlToInt8(tensor, one.data(), 1);
    transcodeGgmlToInt8(tensor, many.data(), 8);
    EXPECT_EQ(one, many);
    std::vector<uint16_t> d;
    std::vector<int> q;
    splitInt8(one, d, q);
    std::vector<float> values(static_cast<std::size_t>(rows * cols));
    dequantizeGgml(tensor, values.data(), 8);
    expectValues(values, q, d);
    for (int v : q)
      ASSERT_TRUE(type == kQ5_0 ? v >= -16 && v <= 15 : v >= -127 && v <= 113);
  }
}
