//===- FloatMicrokernelsTest.cpp - The f32 microkernels against a reference ===//
//
// Each f32 microkernel over W in panels (runtime/ukernels/FloatPanels.h,
// support/Microkernels.h's tfmc_uk_f32p_*) that this CPU runs, called as
// Halide calls it (halide_buffer_t), against sums in double with the bound
// of an f32 sum of K products in any order (γ_K · Σ|x·w|). Odd shapes: K of
// 1 to 600 (a chunk of 16 and a depth block of 256 each with a tail), 1 to
// 27 rows (tiles of 6 and every row count left over), tasks of one
// to five panels that start past 0 and run past N, rows past M; NaN and
// infinite values of x and W. The FloatRowMicrokernel tests do the same
// for tfmc_uk_f32r (W in rows, runtime/ukernels/FloatRows.h). The BlockPanels tests do the same for
// tfmc_uk_q8fp (int8 and int4 W widened into panels, WidenedPanelsAvx2.cpp)
// against the blocks' values. A code the CPU lacks is skipped
// (test/E2E/cpu/microkernels-qemu.test runs the AVX2 one as a Haswell).
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/Microkernels.h"
#include "support/Microkernels.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

extern "C" int tfmc_uk_q8fp_v1_avx512(halide_buffer_t *, halide_buffer_t *,
                                      int32_t, int32_t, int32_t, int32_t, int32_t,
                                      halide_buffer_t *);
extern "C" int tfmc_uk_q8fp_v1_avx2(halide_buffer_t *, halide_buffer_t *,
                                    int32_t, int32_t, int32_t, int32_t, int32_t,
                                    halide_buffer_t *);

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
    {"avx2", floatPanelProductsAvx2, cpuRunsAvx2, tfmc::format::kFloatTileAvx2.rows},
    {"avx512", floatPanelProductsAvx512, cpuHasAvx512,
     tfmc::format::kFloatTileAvx512.rows}};

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

/// x's tiles of rows [mMin, mMin + mExtent) that exist, packed as the
/// contract says, with NaNs where K or M ends (never to be read): as
/// Halide passes the region the bounds query asked for. Sets `first` to
/// the first tile.
std::vector<float> packX(int64_t R, const Gemm &g, int64_t mMin,
                         int64_t mExtent, int64_t &first) {
  const int64_t chunks = (g.depth + 15) / 16;
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
  first = tFirst;
  return packed;
}

/// Runs `isa` for outputs [nMin, nMin + nExtent) and rows [mMin, mMin +
/// mExtent), x packed by packX.
std::vector<float> run(const FloatIsa &isa, const Gemm &g, int64_t nMin,
                       int64_t nExtent, int64_t mMin, int64_t mExtent) {
  halide_dimension_t xDims[4], wDims[3], outDims[2];
  halide_buffer_t x{}, w{}, out{};
  const int64_t R = isa.rows, chunks = (g.depth + 15) / 16;
  int64_t tFirst = 0;
  std::vector<float> packed = packX(R, g, mMin, mExtent, tFirst);
  dense(x, xDims, packed.data(), {16, R, chunks, int64_t(packed.size()) / (16 * R * chunks)},
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

/// `out` of a task against sums in double with the bound of an f32 sum of
/// K products in any order; outputs past N or M must be 0.
void expectOutputs(const std::string &name, const Gemm &g,
                   const std::vector<float> &out, int64_t nMin,
                   int64_t nExtent, int64_t mMin, int64_t mExtent) {
  const double eps = std::ldexp(1.0, -24);
  for (int64_t m = 0; m < mExtent; ++m)
    for (int64_t n = 0; n < nExtent; ++n) {
      const float got = out[size_t(n + m * nExtent)];
      const int64_t row = mMin + m, output = nMin + n;
      const std::string where = name + " K=" +
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
        // An infinity (no product of the other sign, no 0 · inf): that one,
        // whatever the order; else a NaN or an infinity.
        if (std::isinf(want))
          EXPECT_EQ(double(got), want) << where;
        else
          EXPECT_FALSE(std::isfinite(got)) << where << ": got " << got;
        continue;
      }
      const double k = double(g.depth);
      EXPECT_NEAR(double(got), want, k * eps / (1 - k * eps) * magnitude + 1e-30)
          << where;
    }
}

void expectMatches(const FloatIsa &isa, const Gemm &g, int64_t nMin,
                   int64_t nExtent, int64_t mMin, int64_t mExtent) {
  expectOutputs(isa.name, g, run(isa, g, nMin, nExtent, mMin, mExtent), nMin,
                nExtent, mMin, mExtent);
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

// The f32 microkernels over W in rows (runtime/ukernels/FloatRows.h,
// tfmc_uk_f32r_*): x (K, M) and W (K, N) as they are.

struct FloatRowIsa {
  const char *name;
  FloatRowProductsFn fn;
  bool (*runs)();
};

const FloatRowIsa kFloatRowIsas[] = {
    {"avx2", floatRowProductsAvx2, cpuRunsAvx2},
    {"avx512", floatRowProductsAvx512, cpuHasAvx512}};

/// Runs `isa` for outputs [nMin, nMin + nExtent) and rows [mMin, mMin +
/// mExtent) of x, whose buffer holds rows [mMin, M) only (as Halide
/// passes the region the bounds query asked for).
std::vector<float> runRows(const FloatRowIsa &isa, const Gemm &g, int64_t nMin,
                           int64_t nExtent, int64_t mMin, int64_t mExtent) {
  halide_dimension_t xDims[2], wDims[2], outDims[2];
  halide_buffer_t x{}, w{}, out{};
  std::vector<float> rows(g.x.begin() + mMin * g.depth, g.x.end());
  dense(x, xDims, rows.data(), {g.depth, g.xRows - mMin}, {0, mMin});
  std::vector<float> stored = g.w;
  dense(w, wDims, stored.data(), {g.depth, g.rows}, {0, 0});
  std::vector<float> result(size_t(nExtent * mExtent), -7.0f);
  dense(out, outDims, result.data(), {nExtent, mExtent}, {nMin, mMin});
  EXPECT_EQ(isa.fn(&x, &w, int32_t(g.depth), int32_t(g.rows), &out), 0);
  return result;
}

class FloatRowMicrokernel : public ::testing::TestWithParam<FloatRowIsa> {
protected:
  void SetUp() override {
    if (!GetParam().runs())
      GTEST_SKIP() << "this CPU lacks " << GetParam().name;
  }
  void expectMatches(const Gemm &g, int64_t nMin, int64_t nExtent,
                     int64_t mMin, int64_t mExtent) {
    expectOutputs(GetParam().name, g,
                  runRows(GetParam(), g, nMin, nExtent, mMin, mExtent), nMin,
                  nExtent, mMin, mExtent);
  }
};

// K: 1, below, at and past a vector of 8 or 16 lanes, and longer ones with
// tails; rows of x 1 to 17 (tiles of 8 or 4 rows and every count left;
// one row runs tiles of 4 outputs); tasks starting anywhere, of one output
// to all 37, odd and even counts (tiles of 2 outputs and the one left),
// one running past N; a task of rows from row 3 on.
TEST_P(FloatRowMicrokernel, OddShapes) {
  std::mt19937 rng(41);
  for (int64_t depth : {1, 7, 8, 9, 15, 16, 17, 100, 257})
    for (int64_t m = 1; m <= 17; ++m) {
      Gemm g = randomGemm(rng, depth, 37, m);
      for (auto [nMin, nExtent] : std::vector<std::pair<int64_t, int64_t>>{
               {0, 37}, {0, 4}, {5, 13}, {3, 3}, {36, 1}, {30, 12}})
        expectMatches(g, nMin, nExtent, 0, m);
      if (m > 3)
        expectMatches(g, 1, 36, 3, m - 3);
    }
}

// A NaN or an infinity in x or W makes the outputs it meets non-finite, and
// only those.
TEST_P(FloatRowMicrokernel, NonFiniteValues) {
  std::mt19937 rng(43);
  Gemm g = randomGemm(rng, 70, 21, 9);
  g.x[size_t(3 * 70 + 7)] = NAN;        // row 3
  g.x[size_t(8 * 70 + 69)] = INFINITY;  // row 8, K's tail
  g.at(20, 0) = -INFINITY;              // output 20 (the odd one left)
  g.at(11, 35) = NAN;                   // output 11
  for (int64_t m = 0; m < 9; ++m)
    g.x[size_t(m * 70 + 10)] = 0.0f; // 0 · x = 0 where x is finite
  g.at(5, 10) = INFINITY;            // ... but 0 · inf is a NaN
  expectMatches(g, 0, 21, 0, 9);
  Gemm one = g;
  one.xRows = 1;
  one.x.resize(70);
  one.x[7] = NAN; // the one-row tiles
  expectMatches(one, 0, 21, 0, 1);
}

// As Halide asks: out's host null. Outputs 30 .. 41 of N = 37 need W's rows
// 30 .. 36; rows 2 .. 6 of x all of K.
TEST_P(FloatRowMicrokernel, BoundsQuery) {
  halide_dimension_t xDims[2], wDims[2], outDims[2];
  halide_buffer_t x{}, w{}, out{};
  dense(x, xDims, nullptr, {1, 1}, {0, 0});
  dense(w, wDims, nullptr, {1, 1}, {0, 0});
  dense(out, outDims, nullptr, {12, 5}, {30, 2});
  ASSERT_EQ(GetParam().fn(&x, &w, 100, 37, &out), 0);
  EXPECT_EQ(xDims[0].min, 0);
  EXPECT_EQ(xDims[0].extent, 100);
  EXPECT_EQ(xDims[1].min, 2);
  EXPECT_EQ(xDims[1].extent, 5);
  EXPECT_EQ(wDims[0].min, 0);
  EXPECT_EQ(wDims[0].extent, 100);
  EXPECT_EQ(wDims[1].min, 30);
  EXPECT_EQ(wDims[1].extent, 7);
}

INSTANTIATE_TEST_SUITE_P(Isas, FloatRowMicrokernel,
                         ::testing::ValuesIn(kFloatRowIsas),
                         [](const ::testing::TestParamInfo<FloatRowIsa> &info) {
                           return std::string(info.param.name);
                         });

// --- int8 and int4 W widened into panels (tfmc_uk_q8fp, WidenedPanelsAvx2.cpp) ---

float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31, exponent = (h >> 10) & 31,
                 mantissa = h & 1023;
  float magnitude = exponent == 0    ? std::ldexp(float(mantissa), -24)
                    : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                     : std::ldexp(float(mantissa | 1024), int(exponent) - 25);
  return sign ? -magnitude : magnitude;
}

/// W as int8 blocks of `group` values or int4 (Q4_0) blocks, row-major
/// (support/WeightFormat.h), with g.w their values: q · d, (q − 8) · d,
/// a scale that is an infinity or a NaN an infinity of its sign.
struct Blocks {
  int64_t group = 32;
  bool int4 = false;
  std::vector<uint8_t> bytes;
  int64_t values() const { return int4 ? 32 : group; }
  int64_t blockBytes() const { return int4 ? 18 : 2 + group; }
  int64_t rowBytes(int64_t depth) const {
    return (depth + values() - 1) / values() * blockBytes();
  }
};

/// Random blocks (scales about 2^-8 .. 2^-3 of either sign, every fifth
/// block's scale 0) for g's rows, g.w set to their values.
Blocks randomBlocks(std::mt19937 &rng, Gemm &g, int64_t group, bool int4) {
  Blocks b;
  b.group = group;
  b.int4 = int4;
  const int64_t perRow = b.rowBytes(g.depth) / b.blockBytes();
  b.bytes.assign(size_t(b.rowBytes(g.depth) * g.rows), 0);
  for (int64_t n = 0; n < g.rows; ++n)
    for (int64_t blk = 0; blk < perRow; ++blk) {
      uint8_t *block = &b.bytes[size_t(n * b.rowBytes(g.depth) + blk * b.blockBytes())];
      const uint16_t d = (n + blk) % 5 == 4
                             ? 0
                             : uint16_t((rng() & 1) << 15 | (7 + rng() % 5) << 10 | (rng() & 1023));
      block[0] = uint8_t(d & 0xff);
      block[1] = uint8_t(d >> 8);
      for (int64_t j = 0; j < b.blockBytes() - 2; ++j)
        block[2 + j] = uint8_t(rng());
    }
  return b;
}

/// g.w from the blocks (values past K are padding: not in g.w).
void valuesOf(const Blocks &b, Gemm &g) {
  for (int64_t n = 0; n < g.rows; ++n)
    for (int64_t k = 0; k < g.depth; ++k) {
      const uint8_t *block = &b.bytes[size_t(n * b.rowBytes(g.depth) +
                                             k / b.values() * b.blockBytes())];
      uint16_t d = uint16_t(block[0] | block[1] << 8);
      if ((d & 0x7c00) == 0x7c00)
        d &= 0xfc00;
      const int64_t e = k % b.values();
      const int q = b.int4 ? ((e < 16 ? block[2 + e] : block[2 + e - 16] >> 4) & 15) - 8
                           : int(int8_t(block[2 + e]));
      g.at(n, k) = float(q) * halfToFloat(d);
    }
}

/// `bytes` copied to memory that an inaccessible page follows: a read past
/// them faults.
class Guarded {
public:
  explicit Guarded(const std::vector<uint8_t> &bytes) {
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    size = (bytes.size() + page - 1) / page * page + page;
    base = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(base, MAP_FAILED);
    EXPECT_EQ(mprotect(static_cast<uint8_t *>(base) + size - page, page, PROT_NONE), 0);
    data = static_cast<uint8_t *>(base) + (size - page - bytes.size());
    std::copy(bytes.begin(), bytes.end(), data);
  }
  Guarded(const Guarded &) = delete;
  Guarded &operator=(const Guarded &) = delete;
  ~Guarded() { munmap(base, size); }
  uint8_t *data = nullptr;

private:
  void *base = nullptr;
  std::size_t size = 0;
};

/// runBlocks for outputs [nMin, nMin + nExtent) and rows [mMin, mMin +
/// mExtent): W's rows as the bounds query asks for them, ending at an
/// inaccessible page.
/// One instruction set's form: its function and the rows of its tiles of
/// packed x (support/Microkernels.h's widenedPanelTile).
struct BlockForm {
  BlockFloatPanelProductsFn fn;
  int64_t tileRows;
};
const BlockForm kBlocksAvx2{blockFloatPanelProductsAvx2,
                            tfmc::format::widenedPanelTile("avx2").rows};
const BlockForm kBlocksAvx512{blockFloatPanelProductsAvx512,
                              tfmc::format::widenedPanelTile("avx512").rows};

std::vector<float> runBlocks(const BlockForm &form, const Gemm &g,
                             const Blocks &b, int64_t nMin, int64_t nExtent,
                             int64_t mMin, int64_t mExtent) {
  const BlockFloatPanelProductsFn fn = form.fn;
  const int64_t R = form.tileRows, chunks = (g.depth + 15) / 16;
  halide_dimension_t xDims[4], wDims[2], outDims[2];
  halide_buffer_t x{}, w{}, out{};
  dense(x, xDims, nullptr, {1, 1, 1, 1}, {0, 0, 0, 0});
  dense(w, wDims, nullptr, {1, 1}, {0, 0});
  dense(out, outDims, nullptr, {nExtent, mExtent}, {nMin, mMin});
  EXPECT_EQ(fn(&x, &w, int32_t(g.depth), int32_t(b.group), int32_t(g.rows),
               int32_t(g.xRows), b.int4, &out),
            0);
  EXPECT_EQ(wDims[0].extent, b.rowBytes(g.depth));
  int64_t tFirst = 0;
  std::vector<float> packed = packX(R, g, mMin, mExtent, tFirst);
  EXPECT_EQ(xDims[3].min, tFirst);
  EXPECT_EQ(xDims[3].extent * 16 * R * chunks, int64_t(packed.size()));
  dense(x, xDims, packed.data(),
        {16, R, chunks, int64_t(packed.size()) / (16 * R * chunks)},
        {0, 0, 0, tFirst});
  const int64_t first = wDims[1].min, wRows = wDims[1].extent;
  Guarded rows(std::vector<uint8_t>(
      b.bytes.begin() + first * b.rowBytes(g.depth),
      b.bytes.begin() + (first + wRows) * b.rowBytes(g.depth)));
  w.host = rows.data;
  w.type = {halide_type_uint, 8, 1};
  wDims[0] = {0, int32_t(b.rowBytes(g.depth)), 1, 0};
  wDims[1] = {int32_t(first), int32_t(wRows), int32_t(b.rowBytes(g.depth)), 0};
  std::vector<float> result(size_t(nExtent * mExtent), -7.0f);
  dense(out, outDims, result.data(), {nExtent, mExtent}, {nMin, mMin});
  EXPECT_EQ(fn(&x, &w, int32_t(g.depth), int32_t(b.group), int32_t(g.rows),
               int32_t(g.xRows), b.int4, &out),
            0);
  return result;
}

class BlockPanels : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cpuRunsAvx2() || !__builtin_cpu_supports("f16c"))
      GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  }
};

// x86-64-avx512's form (WidenedPanelsAvx512.cpp: 12 x 2 zmm tiles, two
// panels a tile), where the CPU has AVX-512F.
class BlockPanels512 : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cpuHasAvx512())
      GTEST_SKIP() << "this CPU lacks AVX-512";
  }
};

// int8 in groups of 32, 64 and 8, int4: K with a short last block and
// depth blocks with tails; 1 to 25 rows of x; tasks of 1 to 37 outputs
// (whole tiles of 16 or 32, panels and parts of them), past 0, past N,
// from the second tile of rows, past M.
void blockOddShapes(const BlockForm &form, unsigned seed) {
  std::mt19937 rng(seed);
  const int64_t R = form.tileRows;
  for (auto [group, int4] : std::vector<std::pair<int64_t, bool>>{
           {32, false}, {64, false}, {8, false}, {32, true}})
    for (int64_t depth : {8, 40, 256, 300, 520})
      for (int64_t m : {1, 6, 7, 13, 25}) {
        Gemm g = randomGemm(rng, depth, 37, m);
        Blocks b = randomBlocks(rng, g, group, int4);
        valuesOf(b, g);
        const std::string name = std::string(int4 ? "int4" : "int8 g") +
                                 (int4 ? "" : std::to_string(group));
        for (auto [nMin, nExtent] : std::vector<std::pair<int64_t, int64_t>>{
                 {0, 1}, {0, 16}, {0, 17}, {0, 33}, {0, 37}, {5, 20}, {32, 16}, {40, 8}})
          expectOutputs(name, g, runBlocks(form, g, b, nMin, nExtent, 0, m),
                        nMin, nExtent, 0, m);
        if (m > R)
          expectOutputs(name, g, runBlocks(form, g, b, 16, 21, R, m - R), 16, 21,
                        R, m - R);
        expectOutputs(name, g, runBlocks(form, g, b, 0, 16, 0, m + 5), 0, 16, 0,
                      m + 5);
      }
}

TEST_F(BlockPanels, OddShapes) { blockOddShapes(kBlocksAvx2, 41); }
TEST_F(BlockPanels512, OddShapes) { blockOddShapes(kBlocksAvx512, 45); }

// Scales that are infinities or NaNs (an infinity of their sign, so 0 · it
// is a NaN only where q is 0), subnormal scales, the C names; refusals.
TEST_F(BlockPanels, EdgeScalesCNamesAndRefusals) {
  std::mt19937 rng(43);
  for (bool int4 : {false, true}) {
    Gemm g = randomGemm(rng, 96, 20, 9);
    Blocks b = randomBlocks(rng, g, 32, int4);
    const uint16_t scales[] = {0x7c00, 0xfc00, 0x7e01, 0x0001, 0x83ff};
    for (int64_t n = 0; n < 5; ++n) {
      b.bytes[size_t(n * b.rowBytes(96) + b.blockBytes())] = uint8_t(scales[n] & 0xff);
      b.bytes[size_t(n * b.rowBytes(96) + b.blockBytes() + 1)] = uint8_t(scales[n] >> 8);
    }
    // Row 2's NaN-scaled block all positive levels, x's row 0 positive:
    // output (2, 0) is +inf exactly (a NaN kept as a NaN would give NaN).
    uint8_t *nan = &b.bytes[size_t(2 * b.rowBytes(96) + b.blockBytes() + 2)];
    for (int64_t j = 0; j < b.blockBytes() - 2; ++j)
      nan[j] = int4 ? 0x9a : uint8_t(1 + j);
    for (int64_t k = 0; k < 96; ++k)
      g.x[size_t(k)] = std::fabs(g.x[size_t(k)]) + 0.01f;
    valuesOf(b, g);
    for (const BlockForm &form :
         {kBlocksAvx2, BlockForm{tfmc_uk_q8fp_v1_avx2, kBlocksAvx2.tileRows}}) {
      expectOutputs("edge", g, runBlocks(form, g, b, 0, 20, 0, 9), 0, 20, 0, 9);
      expectOutputs("edge", g, runBlocks(form, g, b, 3, 16, 6, 3), 3, 16, 6, 3);
    }
    if (cpuHasAvx512())
      for (const BlockForm &form :
           {kBlocksAvx512, BlockForm{tfmc_uk_q8fp_v1_avx512, kBlocksAvx512.tileRows}}) {
        expectOutputs("edge 512", g, runBlocks(form, g, b, 0, 20, 0, 9), 0, 20, 0, 9);
        expectOutputs("edge 512", g, runBlocks(form, g, b, 16, 4, 0, 9), 16, 4, 0, 9);
      }
  }
  for (auto [group, depth] : std::vector<std::pair<int, int>>{{12, 256}, {0, 256}, {32, 0}}) {
    halide_dimension_t xDims[4], wDims[2], outDims[2];
    halide_buffer_t x{}, w{}, out{};
    float input = 0.0f, value = -1.0f;
    dense(x, xDims, &input, {1, 1, 1, 1}, {0, 0, 0, 0});
    dense(w, wDims, &input, {1, 1}, {0, 0});
    dense(out, outDims, &value, {1, 1}, {0, 0});
    EXPECT_NE(blockFloatPanelProductsAvx2(&x, &w, depth, group, 2, 1, 0, &out), 0)
        << "group " << group << " depth " << depth;
    EXPECT_EQ(value, -1.0f);
  }
}

} // namespace
