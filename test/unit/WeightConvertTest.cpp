//===- WeightConvertTest.cpp - f32 to bf16/f16/int8/int4, hand-derived ----===//
//
// Every expected value here is derived by hand from the formats' bit
// layouts (bf16: the top 16 bits of an f32; f16: 1-5-10), never from a run
// of the code under test. The large-tensor tests check properties that
// hold for any correct quantisation (|w - q s| <= s / 2, the scale is
// f16(max|w| / 127)) and that threads change nothing.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/WeightConvert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace tfmc::runtime;

namespace {

float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// Rows of int8 blocks (support/WeightFormat.h: per block the f16 scale,
/// little-endian, then `group` values) read back apart: q (rows x cols),
/// the scales (rows x blocks), and every padding value of a short last
/// block in `padding`.
struct Int8Parts {
  std::vector<int8_t> q, padding;
  std::vector<uint16_t> scales;
};
Int8Parts splitInt8(const std::vector<uint8_t> &blocks, int64_t rows,
                    int64_t cols, int64_t group) {
  Int8Parts parts;
  const int64_t perRow = (cols + group - 1) / group;
  EXPECT_EQ(int64_t(blocks.size()), rows * perRow * (2 + group));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < perRow; ++b) {
      const uint8_t *block = blocks.data() + (r * perRow + b) * (2 + group);
      parts.scales.push_back(uint16_t(block[0] | (block[1] << 8)));
      for (int64_t j = 0; j < group; ++j)
        (b * group + j < cols ? parts.q : parts.padding)
            .push_back(static_cast<int8_t>(block[2 + j]));
    }
  return parts;
}

TEST(WeightConvert, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(-1.5f), 0xbfc0);
  // 1 + 2^-8 is halfway between 0x3f80 and 0x3f81: ties go to the even one.
  EXPECT_EQ(floatToBf16(fromBits(0x3f808000)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 0x3f81 and 0x3f82: even is 0x3f82.
  EXPECT_EQ(floatToBf16(fromBits(0x3f818000)), 0x3f82);
  EXPECT_EQ(floatToBf16(fromBits(0x3f808001)), 0x3f81); // just above half
  EXPECT_EQ(floatToBf16(fromBits(0x3f807fff)), 0x3f80); // just below
  // Subnormals round the same way.
  EXPECT_EQ(floatToBf16(fromBits(0x00008000)), 0x0000);
  EXPECT_EQ(floatToBf16(fromBits(0x00018000)), 0x0002);
  // f32's largest value is past bf16's largest plus half an ulp.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(floatToBf16(-std::numeric_limits<float>::infinity()), 0xff80);
  // A NaN stays a NaN, even one whose payload is only in the low bits
  // (truncating 0x7f800001 would give infinity).
  EXPECT_EQ(floatToBf16(fromBits(0x7fc00000)), 0x7fc0);
  EXPECT_EQ(floatToBf16(fromBits(0x7f800001)), 0x7fc0);
  EXPECT_EQ(bf16ToFloat(0x3f82), 1.015625f);
}

TEST(WeightConvert, Bf16ArrayMatchesTheScalarOnEveryThreadCount) {
  std::vector<float> values(1 << 19);
  uint32_t bits = 0x12345678;
  for (float &value : values) {
    bits = bits * 1664525u + 1013904223u; // every bit pattern, NaNs included
    value = fromBits(bits);
  }
  for (int threads : {1, 2, 3}) {
    std::vector<uint16_t> converted(values.size());
    convertToBf16(values.data(), static_cast<int64_t>(values.size()),
                  converted.data(), threads);
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(converted[i], floatToBf16(values[i])) << i;
  }
}

TEST(WeightConvert, F16RoundsToNearestEven) {
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(-2.0f), 0xc000);
  EXPECT_EQ(floatToF16(0.1f), 0x2e66); // 0.0999755859375
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65519.0f), 0x7bff);
  // 65520 is halfway to 65536, and 65504's mantissa is odd: infinity.
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00);
  EXPECT_EQ(floatToF16(-1e9f), 0xfc00);
  // 1 + 2^-11 ties between 0x3c00 and 0x3c01; 1 + 3 * 2^-11 between
  // 0x3c01 and 0x3c02.
  EXPECT_EQ(floatToF16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(floatToF16(1.0f + 3 * 0x1p-11f), 0x3c02);
  // Rounding carries into the exponent: 2 - 2^-12 rounds up to 2.
  EXPECT_EQ(floatToF16(2.0f - 0x1p-12f), 0x4000);
  // Subnormals: units of 2^-24, ties to even.
  EXPECT_EQ(floatToF16(0x1p-14f), 0x0400);
  EXPECT_EQ(floatToF16(0x1p-24f), 0x0001);
  EXPECT_EQ(floatToF16(0x1p-25f), 0x0000);
  EXPECT_EQ(floatToF16(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(floatToF16(0x1p-14f - 0x1p-25f), 0x0400); // 1023.5 units: even
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_EQ(floatToF16(std::nanf("")) & 0x7e00, 0x7e00);

  EXPECT_EQ(f16ToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(f16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(f16ToFloat(0x0400), 0x1p-14f);
  EXPECT_EQ(f16ToFloat(0xc000), -2.0f);
  EXPECT_EQ(f16ToFloat(0x2e66), 0.0999755859375f);
  EXPECT_TRUE(std::isinf(f16ToFloat(0x7c00)));
  // Every half survives the round trip.
  for (uint32_t half = 0; half < 0x10000; ++half)
    if ((half & 0x7c00) != 0x7c00 || (half & 0x3ff) == 0)
      ASSERT_EQ(floatToF16(f16ToFloat(static_cast<uint16_t>(half))), half);
}

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// The f32 bits widenBf16 / widenF16 give for each 16-bit pattern, read
/// from a buffer one byte past an aligned address (a mapped tensor may lie
/// anywhere).
std::vector<uint32_t> widened(const std::vector<uint16_t> &halves, bool bf16,
                              int threads = 1) {
  std::vector<unsigned char> bytes(2 * halves.size() + 1);
  std::memcpy(bytes.data() + 1, halves.data(), 2 * halves.size());
  std::vector<float> wide(halves.size());
  if (bf16)
    widenBf16(bytes.data() + 1, int64_t(halves.size()), wide.data(), threads);
  else
    widenF16(bytes.data() + 1, int64_t(halves.size()), wide.data(), threads);
  std::vector<uint32_t> bits;
  for (float value : wide)
    bits.push_back(bitsOf(value));
  return bits;
}

TEST(WeightConvert, Bf16WidensToItsUpperHalf) {
  // bf16 is f32's upper 16 bits: 1.0, -1.5, the smallest subnormal
  // (2^-133), the largest subnormal, the smallest normal (2^-126), the
  // largest finite value, +-infinity, a quiet NaN, a signalling NaN whose
  // payload must survive, and -0.
  const std::vector<uint16_t> in = {0x3f80, 0xbfc0, 0x0001, 0x007f, 0x0080,
                                    0x7f7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81,
                                    0x8000};
  const std::vector<uint32_t> out = {
      0x3f800000, 0xbfc00000, 0x00010000, 0x007f0000, 0x00800000, 0x7f7f0000,
      0x7f800000, 0xff800000, 0x7fc00000, 0x7f810000, 0x80000000};
  EXPECT_EQ(widened(in, true), out);
  EXPECT_EQ(fromBits(0x00010000), 0x1p-133f);
  EXPECT_EQ(fromBits(0x7f7f0000), 0x1.fep127f);
}

TEST(WeightConvert, F16WidensExactly) {
  // Hand-derived from 1-5-10 (bias 15) to 1-8-23 (bias 127):
  //   0x3c00 = 1, 0xc000 = -2, 0x2e66 = 0.0999755859375,
  //   0x0001 = 2^-24 (smallest subnormal: 0x33800000),
  //   0x0003 = 3 * 2^-24 (0x34400000), 0x03ff = 1023 * 2^-24 (largest
  //   subnormal: 0x387fc000), 0x8001 = -2^-24, 0x0400 = 2^-14 (smallest
  //   normal: 0x38800000), 0x7bff = 65504 (0x477fe000), 0x7c00 = inf,
  //   0xfc00 = -inf, 0x7e00 = a quiet NaN (0x7fc00000), 0x7c01 = a
  //   signalling NaN (payload 1 << 13: 0x7f802000), 0x8000 = -0.
  const std::vector<uint16_t> in = {0x3c00, 0xc000, 0x2e66, 0x0001, 0x0003,
                                    0x03ff, 0x8001, 0x0400, 0x7bff, 0x7c00,
                                    0xfc00, 0x7e00, 0x7c01, 0x8000, 0x0000};
  const std::vector<uint32_t> out = {
      0x3f800000, 0xc0000000, 0x3dccc000, 0x33800000, 0x34400000,
      0x387fc000, 0xb3800000, 0x38800000, 0x477fe000, 0x7f800000,
      0xff800000, 0x7fc00000, 0x7f802000, 0x80000000, 0x00000000};
  EXPECT_EQ(widened(in, false), out);
  EXPECT_EQ(fromBits(0x3dccc000), 0.0999755859375f);
  EXPECT_EQ(fromBits(0x387fc000), 1023 * 0x1p-24f);
}

TEST(WeightConvert, WideningEveryPatternOnEveryThreadCount) {
  // Every 16-bit pattern, many times over (past the size at which the
  // work is split): bf16 against the shift, f16 against the value
  // sign * mantissa * 2^(exponent - 25) computed in double (exact), with
  // infinities and NaN payloads as the format says.
  std::vector<uint16_t> all(1 << 19);
  for (std::size_t i = 0; i < all.size(); ++i)
    all[i] = static_cast<uint16_t>(i * 40503u);
  for (int threads : {1, 2, 3, 8}) {
    SCOPED_TRACE(threads);
    std::vector<uint32_t> bf16 = widened(all, true, threads);
    std::vector<uint32_t> f16 = widened(all, false, threads);
    for (std::size_t i = 0; i < all.size(); ++i) {
      const uint32_t h = all[i];
      ASSERT_EQ(bf16[i], h << 16) << std::hex << h;
      const uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1f,
                     mantissa = h & 0x3ff;
      uint32_t expected;
      if (exponent == 31) {
        expected = sign | 0x7f800000u | mantissa << 13;
      } else {
        const double magnitude =
            exponent == 0 ? std::ldexp(double(mantissa), -24)
                          : std::ldexp(double(mantissa + 1024),
                                       int(exponent) - 25);
        expected = sign | bitsOf(static_cast<float>(magnitude));
      }
      ASSERT_EQ(f16[i], expected) << std::hex << h;
    }
  }
}

TEST(WeightConvert, Int8HandDerived) {
  // 3 rows of 5 columns in groups of 2: the last group is 1 column.
  const std::vector<float> w = {
      // group max 127 -> scale 1; 63.5 ties to 64 (even)
      63.5f, -127.0f,
      // max 254 -> scale 2; 127 / 2 = 63.5 -> 64
      254.0f, 127.0f,
      // the tail group: scale f16(12.7 / 127) = f16(0.1) = 0.0999755859375,
      // 12.7 / that = 127.03 -> clamped to 127
      12.7f,
      // row 1: scale 1, 0.5 -> 0; scale 1, 2.5 -> 2; the tail's scale
      // f16(1.5 / 127) = 0x220c = 0.011810302734375, -1.5 / that =
      // -127.007 -> -127
      0.5f, -127.0f, 2.5f, 127.0f, -1.5f,
      // row 2: zeros (scale 0, q 0), a subnormal scale 2^-24, an f16
      // scale at its largest (65504)
      0.0f, -0.0f, 127 * 0x1p-24f, 0.0f, -127.0f * 65504.0f};
  // Rows of 3 blocks of 4 bytes (the scale, 2 values); the tail block's
  // second value is padding (0).
  std::vector<uint8_t> blocks(36, 99);
  QuantizeProblem problem;
  ASSERT_TRUE(quantizeInt8(w.data(), 3, 5, 2, blocks.data(), problem))
      << problem.what;
  Int8Parts parts = splitInt8(blocks, 3, 5, 2);
  const std::vector<int8_t> expectedQ = {64, -127, 127, 64,  127,  //
                                         0,  -127, 2,   127, -127, //
                                         0,  0,    127, 0,   -127};
  const std::vector<uint16_t> expectedScales = {
      0x3c00, 0x4000, 0x2e66, //
      0x3c00, 0x3c00, 0x220c, //
      0x0000, 0x0001, 0x7bff};
  EXPECT_EQ(parts.q, expectedQ);
  EXPECT_EQ(parts.scales, expectedScales);
  EXPECT_EQ(parts.padding, std::vector<int8_t>(3, 0));
  // The first block of row 1 byte for byte: scale 1.0 (0x3c00), 0, -127.
  EXPECT_EQ(std::vector<uint8_t>(blocks.begin() + 12, blocks.begin() + 16),
            std::vector<uint8_t>({0x00, 0x3c, 0x00, 0x81}));
}

TEST(WeightConvert, Int8RefusesWhatItCannotQuantise) {
  std::vector<uint8_t> blocks(2 * 6);
  QuantizeProblem problem;
  std::vector<float> w(8, 1.0f);
  w[6] = std::nanf("");
  EXPECT_FALSE(quantizeInt8(w.data(), 2, 4, 4, blocks.data(), problem));
  EXPECT_EQ(problem.what, "a NaN at [1, 2]");
  w[6] = 1.0f;
  w[1] = -std::numeric_limits<float>::infinity();
  EXPECT_FALSE(quantizeInt8(w.data(), 2, 4, 4, blocks.data(), problem));
  EXPECT_EQ(problem.what, "an infinity at [0, 1]");
  // 127 * 65520: the scale rounds to f16 infinity.
  w[1] = 127.0f * 65520.0f;
  EXPECT_FALSE(quantizeInt8(w.data(), 2, 4, 4, blocks.data(), problem));
  EXPECT_EQ(problem.what, "row 0 columns 0..3: max |w| = 8321040 gives a "
                          "scale max |w| / 127 beyond f16's 65504");
}

TEST(WeightConvert, Int8ErrorIsBoundedAndThreadsChangeNothing) {
  const int64_t rows = 512, cols = 770, group = 64; // a 2-column tail group
  const int64_t groups = (cols + group - 1) / group;
  const std::size_t bytes = static_cast<std::size_t>(rows * groups * (2 + group));
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  std::mt19937 random(7);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float &value : w)
    value = normal(random);
  std::vector<uint8_t> b1(bytes);
  QuantizeProblem problem;
  ASSERT_TRUE(quantizeInt8(w.data(), rows, cols, group, b1.data(), problem, 1));
  Int8Parts parts = splitInt8(b1, rows, cols, group);
  const std::vector<int8_t> &q1 = parts.q;
  const std::vector<uint16_t> &s1 = parts.scales;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      float maxAbs = 0;
      for (int64_t c = g * group; c < std::min(cols, (g + 1) * group); ++c)
        maxAbs = std::max(maxAbs, std::fabs(w[r * cols + c]));
      const uint16_t scale = s1[r * groups + g];
      ASSERT_EQ(scale, floatToF16(maxAbs / 127.0f));
      const double step = f16ToFloat(scale);
      for (int64_t c = g * group; c < std::min(cols, (g + 1) * group); ++c) {
        const int8_t value = q1[r * cols + c];
        ASSERT_GE(value, -127);
        // Within half a step, plus f16's relative rounding of the scale
        // (2^-11) times 127 steps for the clamped extremes.
        ASSERT_LE(std::fabs(w[r * cols + c] - value * step),
                  step / 2 + std::fabs(w[r * cols + c]) * 0x1p-11)
            << r << ", " << c;
      }
    }
  EXPECT_EQ(parts.padding, std::vector<int8_t>(rows * (groups * group - cols), 0));
  for (int threads : {2, 4}) {
    std::vector<uint8_t> b(bytes);
    ASSERT_TRUE(quantizeInt8(w.data(), rows, cols, group, b.data(), problem,
                             threads));
    EXPECT_EQ(b, b1);
  }
  // The first problem in row order is reported, whichever thread finds it.
  w[(rows - 1) * cols + 5] = std::nanf("");
  w[3 * cols + 769] = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(quantizeInt8(w.data(), rows, cols, group, b1.data(), problem, 4));
  EXPECT_EQ(problem.what, "an infinity at [3, 769]");
}

} // namespace

// int4: GGUF's Q4_0 blocks, rounded as ggml's reference quantiser
// (WeightConvert.h); every byte below is derived by hand.
TEST(WeightConvert, Int4HandDerived) {
  // One row of 40 columns: a whole block and one padded with zeros.
  std::vector<float> w(40, 0.0f);
  // Block 0: -16 is the first value of largest |w| (16 at j = 16 comes
  // later), so d = -16 / -8 = 2 (f16 0x4000) and id = 0.5.
  w[0] = -16.0f; // -8 + 8.5 = 0.5 -> level 0 (value -16)
  w[16] = 16.0f; // 8 + 8.5 = 16.5 -> 16, clamped to 15 (value 14)
  w[1] = 1.0f;   // 0.5 + 8.5 = 9 -> 9
  w[17] = -1.0f; // -0.5 + 8.5 = 8 -> 8 (half rounds up: value 0)
  w[2] = 3.0f;   // 1.5 + 8.5 = 10 -> 10
  w[3] = -3.0f;  // -1.5 + 8.5 = 7 -> 7
  // Block 1 (columns 32..39, then 24 zeros of padding): max 0.25, d =
  // -0.03125 = -2^-5 (f16 0xa800), id = -32.
  w[32] = 0.25f;  // -8 + 8.5 -> level 0
  w[33] = -0.1f;  // 3.2000000477 + 8.5 = 11.7 -> 11
  std::vector<uint8_t> blocks(36, 0x55);
  QuantizeProblem problem;
  ASSERT_TRUE(quantizeInt4(w.data(), 1, 40, blocks.data(), problem))
      << problem.what;
  // Zeros are level 8: a byte of two zeros is 0x88.
  const std::vector<uint8_t> expected = {
      0x00, 0x40, 0xf0, 0x89, 0x8a, 0x87, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
      0x88, 0x88, 0x88, 0x88, 0x88, 0x88, //
      0x00, 0xa8, 0x80, 0x8b, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
      0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
  EXPECT_EQ(blocks, expected);
  // An all-zero block: d = 0 / -8 = -0 (f16 0x8000, as ggml stores it),
  // id = 0, every level 8.
  std::vector<float> zeros(32, 0.0f);
  ASSERT_TRUE(quantizeInt4(zeros.data(), 1, 32, blocks.data(), problem));
  EXPECT_EQ(std::vector<uint8_t>(blocks.begin(), blocks.begin() + 18),
            std::vector<uint8_t>({0x00, 0x80, 0x88, 0x88, 0x88, 0x88, 0x88,
                                  0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
                                  0x88, 0x88, 0x88, 0x88}));
  // A block of subnormals: d = 1e-39 / -8 and 1 / d overflows (ggml's cast
  // of the infinity is undefined); f16(d) = -0 makes every value 0, and
  // the levels are a block of zeros'.
  std::vector<float> tiny(32, 0.0f);
  tiny[5] = 1e-39f;
  tiny[6] = -5e-40f;
  ASSERT_TRUE(quantizeInt4(tiny.data(), 1, 32, blocks.data(), problem));
  EXPECT_EQ(std::vector<uint8_t>(blocks.begin(), blocks.begin() + 18),
            std::vector<uint8_t>({0x00, 0x80, 0x88, 0x88, 0x88, 0x88, 0x88,
                                  0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
                                  0x88, 0x88, 0x88, 0x88}));
}

TEST(WeightConvert, Int4RefusesWhatItCannotQuantise) {
  std::vector<uint8_t> blocks(2 * 18);
  QuantizeProblem problem;
  std::vector<float> w(64, 1.0f);
  w[32 + 5] = std::nanf("");
  EXPECT_FALSE(quantizeInt4(w.data(), 2, 32, blocks.data(), problem));
  EXPECT_EQ(problem.what, "a NaN at [1, 5]");
  w[37] = 1.0f;
  w[3] = -std::numeric_limits<float>::infinity();
  EXPECT_FALSE(quantizeInt4(w.data(), 2, 32, blocks.data(), problem));
  EXPECT_EQ(problem.what, "an infinity at [0, 3]");
  // 8 * 65520: d rounds to f16 infinity.
  w[3] = 8.0f * 65520.0f;
  EXPECT_FALSE(quantizeInt4(w.data(), 2, 32, blocks.data(), problem));
  EXPECT_EQ(problem.what, "row 0 columns 0..31: max |w| = 524160 gives a "
                          "scale max |w| / 8 beyond f16's 65504");
}

TEST(WeightConvert, Int4ThreadsChangeNothing) {
  const int64_t rows = 512, cols = 770; // a padded last block
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  std::mt19937 random(11);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float &value : w)
    value = normal(random);
  const std::size_t bytes = static_cast<std::size_t>(rows * 25 * 18);
  std::vector<uint8_t> one(bytes), four(bytes);
  QuantizeProblem problem;
  ASSERT_TRUE(quantizeInt4(w.data(), rows, cols, one.data(), problem, 1));
  ASSERT_TRUE(quantizeInt4(w.data(), rows, cols, four.data(), problem, 4));
  EXPECT_EQ(one, four);
}

// K-quants (ggml's reference quantisers; test/Gguf/kquant-quantise.test
// checks their bytes against ggml's own library). Hand-derived: a
// super-block of 256 ones.
//  - q4_k: each sub-block's min is 0 (clamped), max 1, so the first
//    iscale 15 gives every level 15 and scale 1/15; every candidate scale
//    of the search gives equal levels, whose D = Σw·Σwl² - (Σwl)² is 0
//    (weights all 2: exact), so none replaces it. d = f16((1/15) / 63) =
//    f16(0.0010582) = 0x1456 (2^-10 · 1110/1024), dmin = 0; each 6-bit
//    scale nearest(63/(1/15) · 1/15) = 63, minimum 0: scale bytes 0..3
//    63 | (63 >> 4) << 6 = 0xff, 4..7 0, 8..11 (63 & 15) = 0x0f. Levels
//    again: 1 / (f16(d) · 63) = 14.995 -> 15: qs all 0xff.
//  - q5_k: nmax 31, scale 1/31, d = f16((1/31) / 63) = f16(0.000512) =
//    0x1032 (2^-11 · 1074/1024), the same scale bytes; levels 1 / (d · 63)
//    = 30.99 -> 31: low nibbles 15 (qs 0xff) and every fifth bit (qh 0xff).
//  - q6_k: each 16-value sub-block: iscale -32 / 1 gives level -32, scale
//    Σx³l / Σx²l² = -512 / 16384 = -1/32, and no candidate is strictly
//    better (a constant block fits exactly at every level); max scale
//    -1/32, iscale -128 / (-1/32) = 4096, d = f16(1/4096) = 0x0c00, the
//    int8 scales nearest(4096 · -1/32) = -128 (0x80), levels 1 / (2^-12 ·
//    -128) = -32 -> stored 0: ql and qh all 0. The value 2^-12 · -128 ·
//    (0 - 32) is 1 exactly.
TEST(WeightConvert, KQuantHandDerived) {
  std::vector<float> ones(256, 1.0f);
  QuantizeProblem problem;
  std::vector<uint8_t> q4(144), q5(176), q6(210);
  ASSERT_TRUE(quantizeKQuant(ones.data(), 1, 256, 12, q4.data(), problem))
      << problem.what;
  ASSERT_TRUE(quantizeKQuant(ones.data(), 1, 256, 13, q5.data(), problem))
      << problem.what;
  ASSERT_TRUE(quantizeKQuant(ones.data(), 1, 256, 14, q6.data(), problem))
      << problem.what;
  const std::vector<uint8_t> scales = {0xff, 0xff, 0xff, 0xff, 0, 0,
                                       0,    0,    0x0f, 0x0f, 0x0f, 0x0f};
  // d (little-endian), dmin 0, the scales, then values all 0xff.
  auto affine = [&](std::size_t bytes, uint8_t dLow, uint8_t dHigh) {
    std::vector<uint8_t> block(bytes, 0xff);
    block[0] = dLow;
    block[1] = dHigh;
    block[2] = block[3] = 0;
    std::copy(scales.begin(), scales.end(), block.begin() + 4);
    return block;
  };
  EXPECT_EQ(q4, affine(144, 0x56, 0x14));
  EXPECT_EQ(q5, affine(176, 0x32, 0x10));
  // ql, qh 0; the sixteen scales 0x80; d.
  std::vector<uint8_t> expected6(210, 0);
  std::fill(expected6.begin() + 192, expected6.begin() + 208, uint8_t(0x80));
  expected6[209] = 0x0c;
  EXPECT_EQ(q6, expected6);
  // All zeros: every byte 0 (q4_k, q5_k: max == min, scale and minimum
  // 0; q6_k: max |scale| below ggml's 1e-15, the block zeroed).
  std::vector<float> zeros(256, 0.0f);
  for (auto [type, bytes] : {std::pair{12, 144}, {13, 176}, {14, 210}}) {
    std::vector<uint8_t> block(static_cast<std::size_t>(bytes), 0x55);
    ASSERT_TRUE(quantizeKQuant(zeros.data(), 1, 256, type, block.data(), problem));
    EXPECT_EQ(block, std::vector<uint8_t>(static_cast<std::size_t>(bytes), 0))
        << "type " << type;
  }
}

TEST(WeightConvert, KQuantRefusesWhatItCannotQuantise) {
  std::vector<uint8_t> blocks(2 * 144);
  QuantizeProblem problem;
  std::vector<float> w(512, 1.0f);
  w[256 + 5] = std::nanf("");
  EXPECT_FALSE(quantizeKQuant(w.data(), 2, 256, 12, blocks.data(), problem));
  EXPECT_EQ(problem.what, "a NaN at [1, 5]");
  w[261] = 1.0f;
  w[3] = -std::numeric_limits<float>::infinity();
  EXPECT_FALSE(quantizeKQuant(w.data(), 2, 256, 14, blocks.data(), problem));
  EXPECT_EQ(problem.what, "an infinity at [0, 3]");
  // q4_k: a sub-block of [0, 1e9] has scale 1e9 / 15, and d = that / 63 =
  // 1.06e6 is beyond f16; 1e31 is refused before the search.
  w[3] = 1e9f;
  EXPECT_FALSE(quantizeKQuant(w.data(), 2, 256, 12, blocks.data(), problem));
  EXPECT_EQ(problem.what, "row 0 columns 0..255: max |w| = 1000000000 gives a "
                          "super-block scale beyond f16's 65504");
  w[3] = 1e31f;
  EXPECT_FALSE(quantizeKQuant(w.data(), 2, 256, 13, blocks.data(), problem));
  EXPECT_EQ(problem.what, "row 0 columns 0..255: max |w| = 1e+31 gives a "
                          "super-block scale beyond f16's 65504");
}

TEST(WeightConvert, KQuantThreadsChangeNothing) {
  const int64_t rows = 256, cols = 1024;
  std::vector<float> w(static_cast<std::size_t>(rows * cols));
  std::mt19937 random(12);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  for (float &value : w)
    value = normal(random);
  for (auto [type, bytes] : {std::pair{12, 144}, {13, 176}, {14, 210}}) {
    const std::size_t size = static_cast<std::size_t>(rows * cols / 256 * bytes);
    std::vector<uint8_t> one(size), four(size);
    QuantizeProblem problem;
    ASSERT_TRUE(quantizeKQuant(w.data(), rows, cols, type, one.data(), problem, 1));
    ASSERT_TRUE(quantizeKQuant(w.data(), rows, cols, type, four.data(), problem, 4));
    EXPECT_EQ(one, four) << "type " << type;
  }
}

// Panels of 2 rows of a 4 x 3 weight whose value is 10·row + column: panel
// p holds, for each column k, rows 2p and 2p + 1 side by side
// (support/WeightFormat.h): 0 10 | 1 11 | 2 12, then 20 30 | 21 31 | 22 32.
TEST(WeightConvert, PanelsHandDerived) {
  const std::vector<float> expected{0, 10, 1, 11, 2, 12, 20, 30, 21, 31, 22, 32};
  std::vector<float> rows(12), columns(12);
  for (int r = 0; r < 4; ++r)
    for (int k = 0; k < 3; ++k) {
      rows[r * 3 + k] = float(10 * r + k);
      columns[k * 4 + r] = float(10 * r + k); // the file's transpose
    }
  for (bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "from the transpose" : "from rows");
    std::vector<float> panels(12, -1.0f);
    layOutPanels(transposed ? columns.data() : rows.data(), 4, 3, 2,
                 transposed, panels.data());
    EXPECT_EQ(panels, expected);
  }
}

// A large weight (parallel over panels, from an unaligned source) is the
// same permutation on every thread count.
TEST(WeightConvert, PanelsThreadsChangeNothing) {
  const int64_t rows = 768, cols = 300, panel = 16;
  std::vector<float> source(rows * cols + 1);
  std::mt19937 random(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (float &v : source)
    v = value(random);
  // Two bytes in: a source that is not even 4-byte aligned.
  const void *unaligned = reinterpret_cast<const char *>(source.data()) + 2;
  std::vector<float> shifted(rows * cols);
  std::memcpy(shifted.data(), unaligned, shifted.size() * sizeof(float));
  for (bool transposed : {false, true})
    for (int threads : {1, 2, 5}) {
      SCOPED_TRACE(std::to_string(threads) + " threads" +
                   (transposed ? ", transposed" : ""));
      std::vector<float> panels(rows * cols);
      layOutPanels(unaligned, rows, cols, panel, transposed, panels.data(),
                   threads);
      for (int64_t n = 0; n < rows; n += 37)
        for (int64_t k = 0; k < cols; k += 11) {
          // Bits, not values: two bytes in, some are NaN patterns.
          float want = transposed ? shifted[k * rows + n] : shifted[n * cols + k];
          float got = panels[((n / panel) * cols + k) * panel + n % panel];
          ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
              << "at " << n << ", " << k;
        }
    }
}
