//===- FloatMicrokernelsTest.cpp - The f32 microkernels against a reference ===//
//
// Each f32 microkernel over W in panels (runtime/ukernels/FloatPanels.h,
// support/Microkernels.h's tfmc_uk_f32p_*) that this CPU runs, called as
// Halide calls it (halide_buffer_t), against sums in double with the bound
// of an f32 sum of K products in any order (γ_K · Σ|x·w|). Odd shapes: K of
// 1 to 600 (a chunk of 16 and a depth block of 256 each with a tail), 1 to
// 27 rows (tiles of 6 and every row count left over), tasks of one
// to five panels that start past 0 and run past N, rows past M; NaN and
// infinite values of x and W. A code the CPU lacks is skipped
// (test/E2E/cpu/microkernels-qemu.test runs the AVX2 one as a Haswell).
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/Microkernels.h"
#include "support/Microkernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace tfmc::runtime::ukernels;

namespace {

struct FloatIsa {
  const char *name;
  FloatPanelProductsFn fn;
  bool (*runs)();
  int rows; // of a tile of packed x
};

bool cpuRunsAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

const FloatIsa kFloatIsas[] = {
    {"avx2", floatPanelProductsAvx2, cpuRunsAvx2, tfmc::format::kFloatTileAvx2.rows}};

/// x (K, M) row-major by m, W (N, K) row-major by n.
struct Gemm {
  int64_t depth, rows, xRows;
  std::vector<float> x, w;
  float &at(int64_t n, int64_t k) { return w[size_t(n * depth + k)]; }
  /// W in panels of 16 rows: [N / 16][K][16].
  std::vector<float> panels() const {
    std::vector<float> stored(w.size());
    for (int64_t n = 0; n < rows; ++n)
      for (int64_t k = 0; k < depth; ++k)
        stored[size_t((n / 16) * 16 * depth + k * 16 + n % 16)] =
            w[size_t(n * depth + k)];
    return stored;
  }
};

Gemm randomGemm(std::mt19937 &rng, int64_t depth, int64_t rows, int64_t xRows) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  Gemm g{depth, rows, xRows, {}, {}};
  g.x.resize(size_t(depth * xRows));
  g.w.resize(size_t(depth * rows));
  for (float &v : g.x)
    v = value(rng);
  for (float &v : g.w)
    v = value(rng);
  return g;
}

void dense(halide_buffer_t &buffer, halide_dimension_t *dims, void *host,
           std::vector<int64_t> extents, std::vector<int64_t> mins) {
  buffer.host = static_cast<uint8_t *>(host);
  buffer.type = {halide_type_float, 32, 1};
  buffer.dimensions = int(extents.size());
  buffer.dim = dims;
  int64_t stride = 1;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    dims[i].min = int32_t(mins[i]);
    dims[i].extent = int32_t(extents[i]);
    dims[i].stride = int32_t(stride);
    dims[i].flags = 0;
    stride *= extents[i];
  }
}

/// Runs `isa` for outputs [nMin, nMin + nExtent) and rows [mMin, mMin +
/// mExtent); x's buffer holds only the tiles of rows that exist of those
/// (as Halide passes the region the bounds query asked for), packed as the
/// contract says, with NaNs where K or M ends (never to be read).
std::vector<float> run(const FloatIsa &isa, const Gemm &g, int64_t nMin,
                       int64_t nExtent, int64_t mMin, int64_t mExtent) {
  halide_dimension_t xDims[4], wDims[3], outDims[2];
  halide_buffer_t x{}, w{}, out{};
  const int64_t R = isa.rows, chunks = (g.depth + 15) / 16;
  const int64_t tiles = (g.xRows + R - 1) / R;
  const int64_t tFirst = std::min(mMin / R, tiles - 1);
  const int64_t tEnd = std::max(std::min((mMin + mExtent + R - 1) / R, tiles),
                                tFirst + 1);
  std::vector<float> packed(size_t(16 * R * chunks * (tEnd - tFirst)), NAN);
  for (int64_t t = tFirst; t < tEnd; ++t)
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t i = 0; i < 16; ++i) {
          const int64_t k = 16 * c + i, m = R * t + r;
          if (k < g.depth && m < g.xRows)
            packed[size_t(i + 16 * (r + R * (c + chunks * (t - tFirst))))] =
                g.x[size_t(m * g.depth + k)];
        }
  dense(x, xDims, packed.data(), {16, R, chunks, tEnd - tFirst},
        {0, 0, 0, tFirst});
  std::vector<float> stored = g.panels();
  dense(w, wDims, stored.data(), {16, g.depth, g.rows / 16}, {0, 0, 0});
  std::vector<float> result(size_t(nExtent * mExtent), -7.0f);
  dense(out, outDims, result.data(), {nExtent, mExtent}, {nMin, mMin});
  EXPECT_EQ(isa.fn(&x, &w, int32_t(g.depth), int32_t(g.rows),
                   int32_t(g.xRows), &out),
            0);
  return result;
}

void expectMatches(const FloatIsa &isa, const Gemm &g, int64_t nMin,
                   int64_t nExtent, int64_t mMin, int64_t mExtent) {
  const std::vector<float> out = run(isa, g, nMin, nExtent, mMin, mExtent);
  const double eps = std::ldexp(1.0, -24);
  for (int64_t m = 0; m < mExtent; ++m)
    for (int64_t n = 0; n < nExtent; ++n) {
      const float got = out[size_t(n + m * nExtent)];
      const int64_t row = mMin + m, output = nMin + n;
      const std::string where = std::string(isa.name) + " K=" +
                                std::to_string(g.depth) + " n=" +
                                std::to_string(output) + " m=" +
                                std::to_string(row);
      if (output >= g.rows || row >= g.xRows) {
        EXPECT_EQ(got, 0.0f) << where << ": past N or M";
        continue;
      }
      double want = 0, magnitude = 0;
      bool finite = true;
      for (int64_t k = 0; k < g.depth; ++k) {
        const double product = double(g.x[size_t(row * g.depth + k)]) *
                               double(g.w[size_t(output * g.depth + k)]);
        finite = finite && std::isfinite(product);
        want += product;
        magnitude += std::fabs(product);
      }
      if (!finite || !std::isfinite(want)) {
        EXPECT_FALSE(std::isfinite(got)) << where << ": got " << got;
        continue;
      }
      const double k = double(g.depth);
      EXPECT_NEAR(double(got), want, k * eps / (1 - k * eps) * magnitude + 1e-30)
          << where;
    }
}

class FloatMicrokernel : public ::testing::TestWithParam<FloatIsa> {
protected:
  void SetUp() override {
    if (!GetParam().runs())
      GTEST_SKIP() << "this CPU lacks " << GetParam().name;
  }
};

// K: 1, a chunk's tail, whole chunks, a depth block and its tails; rows of
// x: 1 to 27 (tiles of 6 and every count left);
// tasks of 1 to 5 panels, starting past 0, one past N.
TEST_P(FloatMicrokernel, OddShapes) {
  std::mt19937 rng(29);
  for (int64_t depth : {1, 15, 16, 17, 255, 256, 257, 600})
    for (int64_t m : {1, 2, 5, 6, 7, 11, 12, 13, 27}) {
      Gemm g = randomGemm(rng, depth, 80, m);
      for (auto [nMin, nExtent] : std::vector<std::pair<int64_t, int64_t>>{
               {0, 16}, {0, 32}, {16, 48}, {0, 80}, {64, 32}, {48, 16}})
        expectMatches(GetParam(), g, nMin, nExtent, 0, m);
      // A task of rows from the second tile on.
      const int64_t R = GetParam().rows;
      if (m > R)
        expectMatches(GetParam(), g, 32, 32, R, m - R);
    }
}

// A task whose rows run past M (Halide's last task of rows): those rows'
// outputs are 0, and x is read only where it exists.
TEST_P(FloatMicrokernel, RowsPastM) {
  std::mt19937 rng(31);
  const int64_t R = GetParam().rows;
  Gemm g = randomGemm(rng, 100, 64, 2 * R + 3);
  expectMatches(GetParam(), g, 0, 64, R, 3 * R);
  expectMatches(GetParam(), g, 32, 48, 2 * R, 5);
  expectMatches(GetParam(), g, 0, 32, 3 * R, R); // every row past M
}

// A NaN or an infinity in x or W makes the outputs it meets non-finite, and
// only those.
TEST_P(FloatMicrokernel, NonFiniteValues) {
  std::mt19937 rng(37);
  Gemm g = randomGemm(rng, 300, 48, 14);
  g.x[size_t(3 * 300 + 7)] = NAN;       // row 3
  g.x[size_t(9 * 300 + 299)] = INFINITY; // row 9, the last step
  g.at(20, 0) = -INFINITY;               // output 20
  g.at(41, 150) = NAN;                   // output 41
  for (int64_t m = 0; m < 14; ++m)
    g.x[size_t(m * 300 + 10)] = 0.0f; // 0 · x = 0 where x is finite
  g.at(5, 10) = INFINITY;             // ... but 0 · inf is a NaN
  expectMatches(GetParam(), g, 0, 48, 0, 14);
}

// As Halide asks: out's host null (x packed by the pipeline: a Func).
TEST_P(FloatMicrokernel, BoundsQuery) {
  halide_dimension_t xDims[4], wDims[3], outDims[2];
  halide_buffer_t x{}, w{}, out{};
  std::vector<float> inputs(64 * 300);
  const int R = GetParam().rows;
  dense(x, xDims, nullptr, {1, 1, 1, 1}, {0, 0, 0, 0});
  dense(w, wDims, inputs.data(), {16, 300, 4}, {0, 0, 0});
  dense(out, outDims, nullptr, {48, 5 * R}, {32, R});
  // N = 64, M = 3R + 1: outputs 32 .. 79 need panels 2 and 3 (none past
  // N), rows R .. 6R - 1 need x's tiles 1 .. 3 (the last one row, none
  // past M), each 19 chunks of 16 steps.
  ASSERT_EQ(GetParam().fn(&x, &w, 300, 64, 3 * R + 1, &out), 0);
  EXPECT_EQ(xDims[0].min, 0);
  EXPECT_EQ(xDims[0].extent, 16);
  EXPECT_EQ(xDims[1].min, 0);
  EXPECT_EQ(xDims[1].extent, R);
  EXPECT_EQ(xDims[2].min, 0);
  EXPECT_EQ(xDims[2].extent, 19);
  EXPECT_EQ(xDims[3].min, 1);
  EXPECT_EQ(xDims[3].extent, 3);
  EXPECT_EQ(wDims[0].min, 0);
  EXPECT_EQ(wDims[0].extent, 16);
  EXPECT_EQ(wDims[1].min, 0);
  EXPECT_EQ(wDims[1].extent, 300);
  EXPECT_EQ(wDims[2].min, 2);
  EXPECT_EQ(wDims[2].extent, 2);
}

INSTANTIATE_TEST_SUITE_P(Isas, FloatMicrokernel, ::testing::ValuesIn(kFloatIsas),
                         [](const ::testing::TestParamInfo<FloatIsa> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
