//===- MicrokernelsTest.cpp - The microkernels against a scalar reference -===//
//
// Each integer-product microkernel (runtime/ukernels/, support/Microkernels.h)
// that this CPU runs, called as Halide calls it (halide_buffer_t), against
// a scalar reference written from the convention: exact integer group sums
// (int64), each times f32(d_x · d_w), summed in double. Odd shapes: 1 to
// 17 rows of x, every count of outputs a 4-output tile leaves over, tasks
// that start past 0 and run past N, groups of 32, 64 and 96, int8 weights
// of -128, all-zero groups, zero, subnormal, infinite and NaN scales;
// from 4 rows on, tasks of up to 75 outputs (the VNNI code's panels of 32);
// and the codes over W in block panels (avx2, vnni, and avx512 without
// VNNI).
// A code the CPU lacks is skipped (test/unit/Microkernels.test runs the
// AVX2 one under qemu as a Haswell).
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/Microkernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace tfmc::runtime::ukernels;

namespace {

struct Isa {
  const char *name;
  IntegerProductsFn fn;
  bool (*runs)();
};

bool cpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

const Isa kIsas[] = {{"avx2", integerProductsAvx2, cpuHasAvx2},
                     {"vnni", integerProductsVnni, cpuHasVnni}};

/// An IEEE half widened as every kernel widens a block scale: exactly,
/// with an infinity or a NaN as an infinity of its sign (Common.cpp's
/// scaleFunc; support/Microkernels.h).
float fromHalfAsKernels(uint16_t half) {
  const float sign = half & 0x8000 ? -1.0f : 1.0f;
  const int exponent = (half >> 10) & 31, mantissa = half & 1023;
  if (exponent == 31)
    return sign * INFINITY;
  if (exponent == 0)
    return sign * std::ldexp(float(mantissa), -24);
  return sign * std::ldexp(float(1024 + mantissa), exponent - 25);
}

struct Problem {
  int64_t depth = 0, group = 32, rows = 0, m = 1;
  bool int4 = false;
  int64_t groups() const { return (depth + group - 1) / group; }
  int64_t blockBytes() const { return int4 ? 18 : 2 + group; }
  std::vector<int8_t> xq;     // (group, groups, m)
  std::vector<float> xScale;  // (groups, m)
  std::vector<uint8_t> w;     // (blockBytes · groups, rows)
  // Weight values as integers (int4: the nibble minus 8) and scales.
  int weight(int64_t n, int64_t k) const {
    const uint8_t *block = &w[n * groups() * blockBytes() + (k / group) * blockBytes()];
    const int64_t j = k % group;
    if (!int4)
      return int8_t(block[2 + j]);
    const uint8_t byte = block[2 + (j % 16)];
    return int(j < 16 ? byte & 15 : byte >> 4) - 8;
  }
  float weightScale(int64_t n, int64_t g) const {
    const uint8_t *block = &w[n * groups() * blockBytes() + g * blockBytes()];
    return fromHalfAsKernels(uint16_t(block[0] | block[1] << 8));
  }
};

Problem randomProblem(std::mt19937 &rng, int64_t depth, int64_t group,
                      int64_t rows, int64_t m, bool int4) {
  Problem p;
  p.depth = depth;
  p.group = group;
  p.rows = rows;
  p.m = m;
  p.int4 = int4;
  const int64_t groups = p.groups();
  p.xq.assign(group * groups * m, 0);
  p.xScale.assign(groups * m, 0.0f);
  std::uniform_int_distribution<int> level(-127, 127), byte(0, 255);
  std::uniform_real_distribution<float> unit(0.001f, 1.0f);
  for (int64_t row = 0; row < m; ++row)
    for (int64_t g = 0; g < groups; ++g) {
      // Every fifth group of x all zero (d = 0, as quantiseRows gives it).
      const bool zero = (row + g) % 5 == 4;
      p.xScale[g + row * groups] = zero ? 0.0f : unit(rng) / 127;
      for (int64_t j = 0; j < group; ++j) {
        const bool inside = g * group + j < depth;
        p.xq[j + g * group + row * group * groups] =
            zero || !inside ? 0 : int8_t(level(rng));
      }
    }
  p.w.assign(p.blockBytes() * groups * rows, 0);
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t g = 0; g < groups; ++g) {
      uint8_t *block = &p.w[(n * groups + g) * p.blockBytes()];
      // A positive normal half around 2^-10 .. 2^-4.
      const uint16_t half = uint16_t((5 + byte(rng) % 7) << 10 | byte(rng) << 2);
      block[0] = uint8_t(half);
      block[1] = uint8_t(half >> 8);
      for (int64_t b = 2; b < p.blockBytes(); ++b)
        block[b] = uint8_t(byte(rng));
      if (!int4 && (n + g) % 7 == 3)
        block[2] = 0x80; // -128: a value a file may hold
    }
  return p;
}

void setScale(Problem &p, int64_t n, int64_t g, uint16_t half) {
  uint8_t *block = &p.w[(n * p.groups() + g) * p.blockBytes()];
  block[0] = uint8_t(half);
  block[1] = uint8_t(half >> 8);
}

/// The convention, in double over exact integer sums.
double reference(const Problem &p, int64_t n, int64_t row) {
  double sum = 0;
  const int64_t groups = p.groups();
  for (int64_t g = 0; g < groups; ++g) {
    int64_t products = 0;
    for (int64_t j = 0; j < p.group; ++j) {
      const int64_t k = g * p.group + j;
      products += int64_t(p.xq[j + g * p.group + row * p.group * groups]) *
                  p.weight(n, k);
    }
    const float scale = p.xScale[g + row * groups] * p.weightScale(n, g);
    sum += double(scale) * double(products);
  }
  return sum;
}

/// A bound on the f32 rounding of the kernel's sums: a few ulps of the sum
/// of the terms' magnitudes.
double bound(const Problem &p, int64_t n, int64_t row) {
  double magnitude = 0;
  const int64_t groups = p.groups();
  for (int64_t g = 0; g < groups; ++g) {
    int64_t products = 0;
    for (int64_t j = 0; j < p.group; ++j)
      products += std::llabs(
          int64_t(p.xq[j + g * p.group + row * p.group * groups]) *
          p.weight(n, g * p.group + j));
    magnitude += std::fabs(double(p.xScale[g + row * groups] *
                                  p.weightScale(n, g))) *
                 double(products);
  }
  return 1e-6 * magnitude + 1e-30;
}

struct Buffers {
  halide_dimension_t xqDims[3], scaleDims[2], wDims[2], outDims[2];
  halide_buffer_t xq{}, xScale{}, w{}, out{};
  std::vector<float> out_;
};

void dense(halide_buffer_t &buffer, halide_dimension_t *dims, void *host,
           halide_type_t type, std::vector<int64_t> extents,
           std::vector<int64_t> mins = {}) {
  buffer.host = static_cast<uint8_t *>(host);
  buffer.type = type;
  buffer.dimensions = int(extents.size());
  buffer.dim = dims;
  int64_t stride = 1;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    dims[i].min = mins.empty() ? 0 : int32_t(mins[i]);
    dims[i].extent = int32_t(extents[i]);
    dims[i].stride = int32_t(stride);
    dims[i].flags = 0;
    stride *= extents[i];
  }
}

std::vector<uint8_t> blockPanels(const Problem &p);

/// Runs `isa` for outputs [nMin, nMin + nExtent) and rows [mMin, mMin +
/// mExtent) of x, and returns out (n fastest); with `panels`, W in block
/// panels (bytes of a panel, panels).
std::vector<float> run(const Isa &isa, Problem &p, int64_t nMin,
                       int64_t nExtent, int64_t mMin, int64_t mExtent,
                       bool panels = false) {
  Buffers b;
  const int64_t groups = p.groups();
  // x's buffers hold only the rows asked for, as Halide passes a region.
  std::vector<int8_t> xq(p.xq.begin() + mMin * p.group * groups,
                         p.xq.begin() + (mMin + mExtent) * p.group * groups);
  std::vector<float> scales(p.xScale.begin() + mMin * groups,
                            p.xScale.begin() + (mMin + mExtent) * groups);
  dense(b.xq, b.xqDims, xq.data(), {halide_type_int, 8, 1},
        {p.group, groups, mExtent}, {0, 0, mMin});
  dense(b.xScale, b.scaleDims, scales.data(), {halide_type_float, 32, 1},
        {groups, mExtent}, {0, mMin});
  std::vector<uint8_t> stored = panels ? blockPanels(p) : p.w;
  if (panels)
    dense(b.w, b.wDims, stored.data(), {halide_type_uint, 8, 1},
          {16 * p.blockBytes() * groups, p.rows / 16});
  else
    dense(b.w, b.wDims, stored.data(),
          {p.int4 ? halide_type_uint : halide_type_int, 8, 1},
          {p.blockBytes() * groups, p.rows});
  std::vector<float> out(nExtent * mExtent, -1.0f);
  dense(b.out, b.outDims, out.data(), {halide_type_float, 32, 1},
        {nExtent, mExtent}, {nMin, mMin});
  EXPECT_EQ(isa.fn(&b.xq, &b.xScale, &b.w, int32_t(p.depth),
                   int32_t(p.group), int32_t(p.rows), p.int4 ? 1 : 0, &b.out),
            0);
  return out;
}

void expectMatches(const Isa &isa, Problem &p, int64_t nMin, int64_t nExtent,
                   int64_t mMin, int64_t mExtent, bool panels = false) {
  const std::vector<float> out =
      run(isa, p, nMin, nExtent, mMin, mExtent, panels);
  for (int64_t m = 0; m < mExtent; ++m)
    for (int64_t n = 0; n < nExtent; ++n) {
      const float got = out[n + m * nExtent];
      const std::string where =
          std::string(isa.name) + (p.int4 ? " int4" : " int8") +
          " K=" + std::to_string(p.depth) + " G=" + std::to_string(p.group) +
          " n=" + std::to_string(nMin + n) + " m=" + std::to_string(mMin + m);
      if (nMin + n >= p.rows) {
        EXPECT_EQ(got, 0.0f) << where << ": an output past N";
        continue;
      }
      const double want = reference(p, nMin + n, mMin + m);
      if (!std::isfinite(want)) {
        // A block's infinite scale makes its values infinite, as an
        // infinite f32 weight's: a product with x's zeros or a sum of
        // opposite infinities is a NaN, so only non-finiteness is the
        // contract (every kernel sums per vector lane).
        EXPECT_FALSE(std::isfinite(got)) << where << ": got " << got;
      } else {
        EXPECT_NEAR(double(got), want, bound(p, nMin + n, mMin + m))
            << where;
      }
    }
}

class IntegerMicrokernel : public ::testing::TestWithParam<Isa> {
protected:
  void SetUp() override {
    if (!GetParam().runs())
      GTEST_SKIP() << "this CPU lacks " << GetParam().name;
  }
};

TEST_P(IntegerMicrokernel, Int8OddShapes) {
  std::mt19937 rng(7);
  for (int64_t group : {32, 64, 96})
    for (int64_t depth : {group, 3 * group - 5, 7 * group})
      for (int64_t m : {1, 2, 3, 5, 17}) {
        Problem p = randomProblem(rng, depth, group, 13, m, false);
        // Every leftover of 4-output tiles, and a task past N.
        for (int64_t extent : {1, 2, 3, 4, 5, 6, 7, 13})
          expectMatches(GetParam(), p, 0, extent, 0, m);
        expectMatches(GetParam(), p, 9, 8, 0, m);
        if (m > 2)
          expectMatches(GetParam(), p, 2, 5, 1, m - 2);
      }
}

TEST_P(IntegerMicrokernel, Int4OddShapes) {
  std::mt19937 rng(11);
  for (int64_t depth : {32, 95, 256})
    for (int64_t m : {1, 2, 4, 9, 16, 17}) {
      Problem p = randomProblem(rng, depth, 32, 11, m, true);
      for (int64_t extent : {1, 2, 3, 4, 5, 11})
        expectMatches(GetParam(), p, 0, extent, 0, m);
      expectMatches(GetParam(), p, 6, 7, 0, m);
    }
}

TEST_P(IntegerMicrokernel, ScalesAtTheEdgesOfF16) {
  std::mt19937 rng(3);
  for (bool int4 : {false, true}) {
    Problem p = randomProblem(rng, 128, 32, 9, 3, int4);
    setScale(p, 0, 1, 0x0000);       // zero
    setScale(p, 1, 2, 0x0001);       // the smallest subnormal
    setScale(p, 2, 0, 0x03ff);       // the largest subnormal
    setScale(p, 3, 3, 0x7bff);       // the largest finite
    setScale(p, 4, 1, 0x7c00);       // +inf
    setScale(p, 5, 2, 0xfc00);       // -inf
    setScale(p, 6, 0, 0x7e00);       // NaN: an infinity, as every kernel's
    setScale(p, 7, 3, 0xfd01);       // -NaN
    expectMatches(GetParam(), p, 0, 9, 0, 3);
    // The same scales through the panel form (4 rows or more).
    Problem many = p;
    many.m = 7;
    many.xq.resize(size_t(7 * 128));
    many.xScale.resize(size_t(7 * 4));
    for (std::size_t i = p.xq.size(); i < many.xq.size(); ++i)
      many.xq[i] = int8_t(int(rng() % 255) - 127);
    for (std::size_t i = p.xScale.size(); i < many.xScale.size(); ++i)
      many.xScale[i] = 0.01f * float(1 + rng() % 50);
    expectMatches(GetParam(), many, 0, 9, 0, 7);
  }
}

// Many rows of x (the VNNI code's panel form, from 4 rows): tasks of more
// than one 32-output panel, a panel's second vector full, partial or
// empty, every leftover of 6-row tiles, a task that starts past 0.
TEST_P(IntegerMicrokernel, ManyRowsAndOutputs) {
  std::mt19937 rng(13);
  for (bool int4 : {false, true})
    for (int64_t group : {32, 64}) {
      if (int4 && group != 32)
        continue;
      for (int64_t depth : {group, 5 * group - 3})
        for (int64_t m : {4, 5, 6, 7, 8, 9, 10, 11, 12, 19}) {
          Problem p = randomProblem(rng, depth, group, 75, m, int4);
          for (int64_t extent : {16, 17, 31, 32, 33, 48, 64, 75})
            expectMatches(GetParam(), p, 0, extent, 0, m);
          expectMatches(GetParam(), p, 40, 40, 0, m);
          expectMatches(GetParam(), p, 3, 37, 2, m - 2);
        }
    }
}

TEST_P(IntegerMicrokernel, BoundsQuery) {
  std::mt19937 rng(5);
  Problem p = randomProblem(rng, 200, 64, 10, 6, false);
  Buffers b;
  dense(b.xq, b.xqDims, nullptr, {halide_type_int, 8, 1}, {1, 1, 1});
  dense(b.xScale, b.scaleDims, nullptr, {halide_type_float, 32, 1}, {1, 1});
  dense(b.w, b.wDims, nullptr, {halide_type_int, 8, 1}, {1, 1});
  std::vector<float> out(8 * 3);
  dense(b.out, b.outDims, out.data(), {halide_type_float, 32, 1}, {8, 3},
        {6, 2});
  ASSERT_EQ(GetParam().fn(&b.xq, &b.xScale, &b.w, 200, 64, 10, 0, &b.out), 0);
  // x: the group's 64 values, 4 groups, rows 2 .. 4; W: rows 6 .. 9 (none
  // past N), whole.
  EXPECT_EQ(b.xqDims[0].min, 0);
  EXPECT_EQ(b.xqDims[0].extent, 64);
  EXPECT_EQ(b.xqDims[1].extent, 4);
  EXPECT_EQ(b.xqDims[2].min, 2);
  EXPECT_EQ(b.xqDims[2].extent, 3);
  EXPECT_EQ(b.scaleDims[0].extent, 4);
  EXPECT_EQ(b.scaleDims[1].min, 2);
  EXPECT_EQ(b.wDims[0].extent, 4 * 66);
  EXPECT_EQ(b.wDims[1].min, 6);
  EXPECT_EQ(b.wDims[1].extent, 4);
  // Levels that are a pipeline input have a host in the query: it stays a query (the scales have none), their shape is
  // left as it is, and nothing is computed.
  std::vector<int8_t> levels(64 * 5 * 3);
  dense(b.xq, b.xqDims, levels.data(), {halide_type_int, 8, 1}, {64, 5, 3});
  dense(b.xScale, b.scaleDims, nullptr, {halide_type_float, 32, 1}, {1, 1});
  std::fill(out.begin(), out.end(), 7.0f);
  ASSERT_EQ(GetParam().fn(&b.xq, &b.xScale, &b.w, 200, 64, 10, 0, &b.out), 0);
  EXPECT_EQ(b.xqDims[1].extent, 5);
  EXPECT_EQ(b.xqDims[2].min, 0);
  EXPECT_EQ(b.xqDims[2].extent, 3);
  EXPECT_EQ(b.scaleDims[0].extent, 4);
  EXPECT_EQ(b.scaleDims[1].min, 2);
  EXPECT_EQ(out.front(), 7.0f);
}

// --- W in block panels (support/WeightFormat.h) --------------------------

/// `p`'s rows of blocks (a multiple of 16 rows) in block panels, written
/// here from support/WeightFormat.h's description (the runtime's
/// layOutBlockPanels is checked against the same layout in
/// WeightConvertTest).
std::vector<uint8_t> blockPanels(const Problem &p) {
  const int64_t groups = p.groups(), blockBytes = p.blockBytes();
  const int64_t valueBytes = blockBytes - 2;
  std::vector<uint8_t> panels(p.w.size());
  for (int64_t n = 0; n < p.rows; ++n) {
    uint8_t *panel = &panels[(n / 16) * 16 * groups * blockBytes];
    const int64_t i = n % 16;
    for (int64_t g = 0; g < groups; ++g) {
      const uint8_t *block = &p.w[(n * groups + g) * blockBytes];
      for (int64_t b = 0; b < valueBytes; ++b)
        panel[g * 16 * valueBytes + (b / 4) * 64 + 4 * i + b % 4] =
            p.int4 ? block[2 + b] : uint8_t(block[2 + b] ^ 0x80);
      panel[groups * 16 * valueBytes + (g * 16 + i) * 2] = block[0];
      panel[groups * 16 * valueBytes + (g * 16 + i) * 2 + 1] = block[1];
    }
  }
  return panels;
}

const Isa kPanelIsas[] = {{"avx2", integerPanelProductsAvx2, cpuHasAvx2},
                          {"vnni", integerPanelProductsVnni, cpuHasVnni},
                          {"avx512", integerPanelProductsAvx512, cpuHasAvx512},
                          {"amx", integerPanelProductsAmx, cpuHasAmx}};

class PanelMicrokernel : public ::testing::TestWithParam<Isa> {
protected:
  void SetUp() override {
    if (!GetParam().runs())
      GTEST_SKIP() << "this CPU lacks " << GetParam().name;
  }
};

// 1 to 19 rows of x (tiles of 6 and every leftover), 16 to 35 (AMX's
// tiles of 16 and the rows left); tasks of one panel, two, three (a pair
// and a single), and one past N; groups of 32, 64 and 96 (AMX: 1 to 3
// chunks of 32), 1 or 3 groups (AMX: a pair and one left), K not a multiple
// of the group, int8 weights of -128.
TEST_P(PanelMicrokernel, OddShapes) {
  std::mt19937 rng(17);
  for (bool int4 : {false, true})
    for (int64_t group : {32, 64, 96}) {
      if (int4 && group != 32)
        continue;
      for (int64_t depth : {group, 3 * group - 5})
        for (int64_t m : {1, 2, 3, 5, 6, 7, 13, 16, 19, 32, 35}) {
          Problem p = randomProblem(rng, depth, group, 80, m, int4);
          for (auto [nMin, nExtent] : std::vector<std::pair<int64_t, int64_t>>{
                   {0, 16}, {0, 32}, {16, 48}, {0, 80}, {64, 32}, {48, 16}})
            expectMatches(GetParam(), p, nMin, nExtent, 0, m, /*panels=*/true);
          if (m > 2)
            expectMatches(GetParam(), p, 32, 32, 1, m - 2, /*panels=*/true);
        }
    }
}

TEST_P(PanelMicrokernel, ScalesAtTheEdgesOfF16) {
  std::mt19937 rng(19);
  for (bool int4 : {false, true})
    for (int64_t m : {1, 7, 17}) {
      Problem p = randomProblem(rng, 128, 32, 32, m, int4);
      setScale(p, 0, 1, 0x0000);  // zero
      setScale(p, 17, 2, 0x0001); // the smallest subnormal
      setScale(p, 2, 0, 0x03ff);  // the largest subnormal
      setScale(p, 31, 3, 0x7bff); // the largest finite
      setScale(p, 4, 1, 0x7c00);  // +inf
      setScale(p, 20, 2, 0xfc00); // -inf
      setScale(p, 6, 0, 0x7e00);  // NaN: an infinity, as every kernel's
      setScale(p, 30, 3, 0xfd01); // -NaN
      expectMatches(GetParam(), p, 0, 32, 0, m, /*panels=*/true);
    }
}

TEST_P(PanelMicrokernel, BoundsQuery) {
  std::mt19937 rng(23);
  Problem p = randomProblem(rng, 200, 64, 48, 6, false);
  Buffers b;
  dense(b.xq, b.xqDims, nullptr, {halide_type_int, 8, 1}, {1, 1, 1});
  dense(b.xScale, b.scaleDims, nullptr, {halide_type_float, 32, 1}, {1, 1});
  dense(b.w, b.wDims, nullptr, {halide_type_uint, 8, 1}, {1, 1});
  std::vector<float> out(32 * 3);
  dense(b.out, b.outDims, out.data(), {halide_type_float, 32, 1}, {32, 3},
        {32, 2});
  ASSERT_EQ(GetParam().fn(&b.xq, &b.xScale, &b.w, 200, 64, 48, 0, &b.out), 0);
  // x: 4 groups of 64, rows 2 .. 4; W: panel 2 (rows 32 .. 47; none past
  // N), whole: 16 rows of 4 blocks of 66 bytes.
  EXPECT_EQ(b.xqDims[0].extent, 64);
  EXPECT_EQ(b.xqDims[1].extent, 4);
  EXPECT_EQ(b.xqDims[2].min, 2);
  EXPECT_EQ(b.xqDims[2].extent, 3);
  EXPECT_EQ(b.wDims[0].min, 0);
  EXPECT_EQ(b.wDims[0].extent, 16 * 4 * 66);
  EXPECT_EQ(b.wDims[1].min, 2);
  EXPECT_EQ(b.wDims[1].extent, 1);
}

// AMX's tiles add the same exact group sums by the same f32 operations in
// the same order as the VNNI form (IntegerPanelsAmx.cpp): the same bits,
// at every row (whole tiles of 16 and the rows left) and output.
TEST(AmxPanelMicrokernel, SameBitsAsVnni) {
  if (!cpuHasAmx())
    GTEST_SKIP() << "this CPU lacks AMX-INT8 (or the kernel's leave to use it)";
  const Isa amx{"amx", integerPanelProductsAmx, cpuHasAmx};
  const Isa vnni{"vnni", integerPanelProductsVnni, cpuHasVnni};
  std::mt19937 rng(29);
  for (bool int4 : {false, true})
    for (int64_t group : {32, 128}) {
      if (int4 && group != 32)
        continue;
      Problem p = randomProblem(rng, 9 * group, group, 64, 53, int4);
      const std::vector<float> got = run(amx, p, 16, 48, 0, 53, /*panels=*/true);
      const std::vector<float> want = run(vnni, p, 16, 48, 0, 53, /*panels=*/true);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << (int4 ? "int4" : "int8") << " G=" << group << " output " << i % 48
            << " row " << i / 48 << ": " << got[i] << " against " << want[i];
    }
}

INSTANTIATE_TEST_SUITE_P(Isas, PanelMicrokernel, ::testing::ValuesIn(kPanelIsas),
                         [](const ::testing::TestParamInfo<Isa> &info) {
                           return std::string(info.param.name);
                         });

INSTANTIATE_TEST_SUITE_P(Isas, IntegerMicrokernel, ::testing::ValuesIn(kIsas),
                         [](const ::testing::TestParamInfo<Isa> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
