//===- KQuantMicrokernelsTest.cpp - The K-quant microkernel against ggml's values -===//
//
// support/Microkernels.h's tfmc_uk_qk microkernel (runtime/ukernels/
// KQuantProductsAvx2.cpp) and its f32-activation twins tfmc_uk_qkf
// (KQuantFloatAvx2.cpp: the Float* tests, x = q · d_x rounded to f32 and
// the reference Σ W · x in double) and tfmc_uk_qkfp (WidenedPanelsAvx2.cpp:
// the Panels* tests, x packed in tiles of 6 rows; tasks of 1 to 37
// outputs, whole panels of 16 and parts of them, rows of x past M), called
// as Halide calls them (halide_buffer_t),
// against a reference written here from the layouts: each weight's value
// as ggml's dequantize_row_q*_K computes it in f32 (runtime/core/
// GgmlBlocks.cpp does the same), times x's q and d_x, summed in double.
// The tolerance is 1e-5 of the sum of the contract's terms' magnitudes
// (Q4_K and Q5_K: |d·sc·q| and |dmin·m| apart, as the kernel sums them),
// for f32 summation in another order.
//
// Q4_K, Q5_K and Q6_K over K = 256, 512 and 2816 (11 super-blocks); 1 to
// 17 rows of x; 1 to 9 outputs, and up to 75 from 4 rows of x (the panel
// form's vectors of 8), tasks that start past 0 and run past N (whose
// outputs must be 0) or lie wholly past it; random bytes for the
// blocks with d and dmin of 0, subnormal, negative and 60000; all-zero
// sub-blocks and super-blocks, blocks of 0xff (every quant and scale at
// its largest) against x of 127, -127 and -128; x rows of zeros; infinite
// and NaN scales (no crash, no other output touched); strided x; the
// bounds query; types the kernel refuses; the C names. W's and x's
// regions end at an inaccessible page, so that a read past the rows asked
// for faults. Skipped on a CPU without AVX2, FMA and F16C
// (test/E2E/cpu/microkernels-qemu.test runs it under qemu as a Haswell).
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/Microkernels.h"
#include "support/Microkernels.h"

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

extern "C" int tfmc_uk_qk_v1_avx2(halide_buffer_t *, halide_buffer_t *,
                                  halide_buffer_t *, int32_t, int32_t, int32_t,
                                  halide_buffer_t *);
extern "C" int tfmc_uk_qk_v1_avx512(halide_buffer_t *, halide_buffer_t *,
                                    halide_buffer_t *, int32_t, int32_t,
                                    int32_t, halide_buffer_t *);
extern "C" int tfmc_uk_qkf_v1_avx2(halide_buffer_t *, halide_buffer_t *, int32_t,
                                   int32_t, int32_t, halide_buffer_t *);
extern "C" int tfmc_uk_qkf_v1_avx512(halide_buffer_t *, halide_buffer_t *,
                                     int32_t, int32_t, int32_t,
                                     halide_buffer_t *);
extern "C" int tfmc_uk_qkfp_v1_avx512(halide_buffer_t *, halide_buffer_t *,
                                      int32_t, int32_t, int32_t, int32_t,
                                      halide_buffer_t *);
extern "C" int tfmc_uk_qkfp_v1_avx2(halide_buffer_t *, halide_buffer_t *,
                                    int32_t, int32_t, int32_t, int32_t,
                                    halide_buffer_t *);

using namespace tfmc::runtime::ukernels;

namespace {

constexpr int kQ4K = 12, kQ5K = 13, kQ6K = 14;

int64_t blockBytes(int type) {
  return type == kQ4K ? 144 : type == kQ5K ? 176 : 210;
}

/// The offset of d in a block (Q6_K's is last; Q4_K's and Q5_K's dmin is
/// at 2).
int64_t dOffset(int type) { return type == kQ6K ? 208 : 0; }

std::string typeName(int type) {
  return type == kQ4K ? "Q4_K" : type == kQ5K ? "Q5_K" : "Q6_K";
}

/// A finite IEEE half, exactly.
float fromHalf(uint16_t half) {
  const float sign = half & 0x8000 ? -1.0f : 1.0f;
  const int exponent = (half >> 10) & 31, mantissa = half & 1023;
  if (exponent == 0)
    return sign * std::ldexp(float(mantissa), -24);
  return sign * std::ldexp(float(1024 + mantissa), exponent - 25);
}

float halfAt(const uint8_t *bytes) {
  return fromHalf(uint16_t(bytes[0] | bytes[1] << 8));
}

void setHalf(uint8_t *bytes, uint16_t half) {
  bytes[0] = uint8_t(half);
  bytes[1] = uint8_t(half >> 8);
}

/// ggml's get_scale_min_k4, as ggml-quants.c writes it.
void scaleMin(int j, const uint8_t *q, int &sc, int &m) {
  if (j < 4) {
    sc = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

/// One super-block's 256 values as dequantize_row_q*_K computes them, and
/// the magnitudes of each value's terms in the kernel's sums.
void dequantize(int type, const uint8_t *block, float *values, double *magnitudes) {
  if (type == kQ6K) {
    const uint8_t *ql = block, *qh = block + 128;
    const auto *scales = reinterpret_cast<const int8_t *>(block + 192);
    const float d = halfAt(block + 208);
    for (int h = 0; h < 2; ++h)
      for (int c = 0; c < 4; ++c)
        for (int l = 0; l < 32; ++l) {
          const uint8_t low = ql[64 * h + 32 * (c % 2) + l];
          const int q = (c < 2 ? low & 15 : low >> 4) |
                        ((qh[32 * h + l] >> (2 * c)) & 3) << 4;
          const float scale = d * float(scales[8 * h + 2 * c + l / 16]);
          const int i = 128 * h + 32 * c + l;
          values[i] = scale * float(q - 32);
          magnitudes[i] = std::fabs(double(values[i]));
        }
    return;
  }
  const float d = halfAt(block), dmin = halfAt(block + 2);
  const uint8_t *scales = block + 4;
  const uint8_t *qh = block + 16;
  const uint8_t *qs = block + (type == kQ4K ? 16 : 48);
  for (int s = 0; s < 8; ++s) {
    int sc, m;
    scaleMin(s, scales, sc, m);
    const float ws = d * float(sc), wm = dmin * float(m);
    for (int l = 0; l < 32; ++l) {
      const uint8_t byte = qs[32 * (s / 2) + l];
      int q = s % 2 == 0 ? byte & 15 : byte >> 4;
      if (type == kQ5K)
        q += (qh[l] >> s) & 1 ? 16 : 0;
      values[32 * s + l] = ws * float(q) - wm;
      magnitudes[32 * s + l] = std::fabs(double(ws) * q) + std::fabs(double(wm));
    }
  }
}

struct KProblem {
  int type = kQ4K;
  int64_t depth = 0, rows = 0, m = 1;
  std::vector<int8_t> xq;    // (32, groups, m)
  std::vector<float> xScale; // (groups, m)
  std::vector<uint8_t> w;    // (rowBytes, rows)
  int64_t groups() const { return depth / 32; }
  int64_t superBlocks() const { return depth / 256; }
  int64_t rowBytes() const { return superBlocks() * blockBytes(type); }
  uint8_t *block(int64_t n, int64_t b) {
    return &w[n * rowBytes() + b * blockBytes(type)];
  }
  int8_t &x(int64_t k, int64_t row) {
    return xq[k + row * depth];
  }
  float &dx(int64_t g, int64_t row) { return xScale[g + row * groups()]; }
};

/// A normal half of either sign, about 2^-10 .. 2^-4.
uint16_t moderateHalf(std::mt19937 &rng) {
  return uint16_t((rng() & 1) << 15 | (5 + rng() % 7) << 10 | (rng() & 1023));
}

KProblem randomProblem(std::mt19937 &rng, int type, int64_t depth,
                       int64_t rows, int64_t m) {
  KProblem p;
  p.type = type;
  p.depth = depth;
  p.rows = rows;
  p.m = m;
  p.w.resize(size_t(p.rowBytes() * rows));
  for (uint8_t &byte : p.w)
    byte = uint8_t(rng());
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t b = 0; b < p.superBlocks(); ++b) {
      uint8_t *block = p.block(n, b);
      setHalf(block + dOffset(type), moderateHalf(rng));
      if (type != kQ6K)
        setHalf(block + 2, moderateHalf(rng));
    }
  p.xq.resize(size_t(depth * m));
  p.xScale.resize(size_t(p.groups() * m));
  std::uniform_real_distribution<float> unit(0.001f, 1.0f);
  for (int64_t row = 0; row < m; ++row)
    for (int64_t g = 0; g < p.groups(); ++g) {
      // Every seventh group of x all zero (d = 0, as quantiseRows gives it).
      const bool zero = (row + g) % 7 == 3;
      p.dx(g, row) = zero ? 0.0f : unit(rng) / 127;
      for (int64_t j = 0; j < 32; ++j)
        p.x(32 * g + j, row) = zero ? 0 : int8_t(rng());
    }
  return p;
}

/// Bytes whose end is followed by an inaccessible page: a read past them
/// faults (prefetches do not).
class GuardedBytes {
public:
  explicit GuardedBytes(std::size_t bytes) {
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    size = (bytes + page - 1) / page * page + page;
    base = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(base, MAP_FAILED);
    EXPECT_EQ(mprotect(static_cast<uint8_t *>(base) + size - page, page, PROT_NONE), 0);
    data = static_cast<uint8_t *>(base) + (size - page - bytes);
  }
  GuardedBytes(const GuardedBytes &) = delete;
  GuardedBytes &operator=(const GuardedBytes &) = delete;
  ~GuardedBytes() { munmap(base, size); }
  uint8_t *data = nullptr;

private:
  void *base = nullptr;
  std::size_t size = 0;
};

void describe(halide_buffer_t &buffer, halide_dimension_t *dims, void *host,
              halide_type_t type, std::vector<int64_t> extents,
              std::vector<int64_t> mins, std::vector<int64_t> strides) {
  buffer.host = static_cast<uint8_t *>(host);
  buffer.type = type;
  buffer.dimensions = int(extents.size());
  buffer.dim = dims;
  for (std::size_t i = 0; i < extents.size(); ++i)
    dims[i] = {int32_t(mins[i]), int32_t(extents[i]), int32_t(strides[i]), 0};
}

/// x's layout in a call: strides of x_q's groups and rows and of
/// x_scale's groups and rows (0: dense).
struct XLayout {
  int64_t groupStride = 32, rowStride = 0, scaleStride = 1, scaleRowStride = 0;
};

/// Runs `fn` for outputs [nMin, nMin + nExtent) and rows [mMin, mMin +
/// mExtent) of x, with W's rows and x's rows exactly the region the bounds
/// query asks for, and returns out (n fastest), first filled with -1.
std::vector<float> run(KQuantProductsFn fn, KProblem &p, int64_t nMin,
                       int64_t nExtent, int64_t mMin, int64_t mExtent,
                       XLayout layout = {}) {
  const int64_t groups = p.groups();
  const int64_t xRow = layout.rowStride ? layout.rowStride : layout.groupStride * groups;
  const int64_t sRow = layout.scaleRowStride ? layout.scaleRowStride
                                             : layout.scaleStride * groups;
  GuardedBytes xq(size_t(xRow * mExtent));
  std::vector<float> scales(size_t(sRow * mExtent), NAN);
  std::memset(xq.data, 0x5a, size_t(xRow * mExtent));
  for (int64_t row = 0; row < mExtent; ++row)
    for (int64_t g = 0; g < groups; ++g) {
      std::memcpy(xq.data + g * layout.groupStride + row * xRow,
                  &p.x(32 * g, mMin + row), 32);
      scales[size_t(g * layout.scaleStride + row * sRow)] = p.dx(g, mMin + row);
    }
  const int64_t wFirst = std::min(nMin, p.rows - 1);
  const int64_t wEnd = std::max(std::min(nMin + nExtent, p.rows), wFirst + 1);
  GuardedBytes w(size_t(p.rowBytes() * (wEnd - wFirst)));
  std::memcpy(w.data, p.block(wFirst, 0), size_t(p.rowBytes() * (wEnd - wFirst)));
  std::vector<float> out(size_t(nExtent * mExtent), -1.0f);
  halide_dimension_t xDims[3], sDims[2], wDims[2], outDims[2];
  halide_buffer_t xBuffer{}, sBuffer{}, wBuffer{}, outBuffer{};
  describe(xBuffer, xDims, xq.data, {halide_type_int, 8, 1}, {32, groups, mExtent},
           {0, 0, mMin}, {1, layout.groupStride, xRow});
  describe(sBuffer, sDims, scales.data(), {halide_type_float, 32, 1},
           {groups, mExtent}, {0, mMin}, {layout.scaleStride, sRow});
  describe(wBuffer, wDims, w.data, {halide_type_uint, 8, 1},
           {p.rowBytes(), wEnd - wFirst}, {0, wFirst}, {1, p.rowBytes()});
  describe(outBuffer, outDims, out.data(), {halide_type_float, 32, 1},
           {nExtent, mExtent}, {nMin, mMin}, {1, nExtent});
  EXPECT_EQ(fn(&xBuffer, &sBuffer, &wBuffer, int32_t(p.depth), int32_t(p.rows),
               p.type, &outBuffer),
            0);
  return out;
}

/// The reference and its tolerance for every output and row of x.
struct Reference {
  std::vector<double> value, tolerance; // (rows, m)
};

Reference reference(KProblem &p) {
  Reference ref;
  ref.value.assign(size_t(p.rows * p.m), 0.0);
  ref.tolerance.assign(size_t(p.rows * p.m), 0.0);
  std::vector<float> values(size_t(p.depth));
  std::vector<double> magnitudes(size_t(p.depth));
  for (int64_t n = 0; n < p.rows; ++n) {
    for (int64_t b = 0; b < p.superBlocks(); ++b)
      dequantize(p.type, p.block(n, b), &values[size_t(256 * b)],
                 &magnitudes[size_t(256 * b)]);
    for (int64_t row = 0; row < p.m; ++row) {
      double sum = 0, magnitude = 0;
      for (int64_t g = 0; g < p.groups(); ++g) {
        double group = 0, groupMagnitude = 0;
        for (int64_t k = 32 * g; k < 32 * g + 32; ++k) {
          group += double(values[size_t(k)]) * p.x(k, row);
          groupMagnitude += magnitudes[size_t(k)] * std::abs(p.x(k, row));
        }
        sum += double(p.dx(g, row)) * group;
        magnitude += std::fabs(double(p.dx(g, row))) * groupMagnitude;
      }
      ref.value[size_t(n + row * p.rows)] = sum;
      ref.tolerance[size_t(n + row * p.rows)] = 1e-5 * magnitude + 1e-30;
    }
  }
  return ref;
}

/// `out` (n fastest) of a task [nMin, nMin + nExtent) x [mMin, mMin +
/// mExtent) against the reference; outputs past N must be 0.
void expectOutputs(const std::vector<float> &out, KProblem &p,
                   const Reference &ref, int64_t nMin, int64_t nExtent,
                   int64_t mMin, int64_t mExtent, const std::string &what) {
  for (int64_t m = 0; m < mExtent; ++m)
    for (int64_t n = 0; n < nExtent; ++n) {
      const float got = out[size_t(n + m * nExtent)];
      const std::string where = what + typeName(p.type) + " K=" +
                                std::to_string(p.depth) + " task n " +
                                std::to_string(nMin) + "+" +
                                std::to_string(nExtent) + " m " +
                                std::to_string(mMin) + "+" +
                                std::to_string(mExtent) + ": n=" +
                                std::to_string(nMin + n) + " m=" +
                                std::to_string(mMin + m);
      if (nMin + n >= p.rows) {
        EXPECT_EQ(got, 0.0f) << where << ": an output past N";
        continue;
      }
      const size_t i = size_t(nMin + n + (mMin + m) * p.rows);
      EXPECT_NEAR(double(got), ref.value[i], ref.tolerance[i]) << where;
    }
}

void expectMatches(KQuantProductsFn fn, KProblem &p, const Reference &ref,
                   int64_t nMin, int64_t nExtent, int64_t mMin, int64_t mExtent,
                   XLayout layout = {}) {
  expectOutputs(run(fn, p, nMin, nExtent, mMin, mExtent, layout), p, ref, nMin,
                nExtent, mMin, mExtent, "");
}

class KQuantMicrokernel : public ::testing::Test {
protected:
  void SetUp() override {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
        !__builtin_cpu_supports("f16c"))
      GTEST_SKIP() << "this CPU lacks AVX2, FMA or F16C";
  }
};

/// Every shape the tiles leave over, for one type.
void oddShapes(int type, unsigned seed) {
  std::mt19937 rng(seed);
  for (int64_t depth : {256, 512, 2816})
    for (int64_t m : {1, 2, 3, 4, 5, 8, 17}) {
      KProblem p = randomProblem(rng, type, depth, 9, m);
      const Reference ref = reference(p);
      for (int64_t extent = 1; extent <= 9; ++extent)
        expectMatches(kQuantProductsAvx2, p, ref, 0, extent, 0, m);
      expectMatches(kQuantProductsAvx2, p, ref, 5, 7, 0, m); // past N
      expectMatches(kQuantProductsAvx2, p, ref, 9, 4, 0, m); // wholly past
      if (m > 2)
        expectMatches(kQuantProductsAvx2, p, ref, 3, 5, 1, m - 2);
      // Each row of x alone (the decode tiles), from a later row.
      expectMatches(kQuantProductsAvx2, p, ref, 1, 8, m - 1, 1);
    }
}

TEST_F(KQuantMicrokernel, Q4KOddShapes) { oddShapes(kQ4K, 1); }
TEST_F(KQuantMicrokernel, Q5KOddShapes) { oddShapes(kQ5K, 2); }
TEST_F(KQuantMicrokernel, Q6KOddShapes) { oddShapes(kQ6K, 3); }

// From 4 rows of x (the panel form, 8 outputs a vector): tasks of whole
// tiles of vectors and leftover ones, a last vector partly past `live`, a
// task starting inside a vector, and one past N.
TEST_F(KQuantMicrokernel, ManyOutputs) {
  std::mt19937 rng(9);
  for (int type : {kQ4K, kQ5K, kQ6K})
    for (int64_t m : {4, 6, 9}) {
      KProblem p = randomProblem(rng, type, 512, 75, m);
      const Reference ref = reference(p);
      for (auto [nMin, nExtent] : std::vector<std::pair<int64_t, int64_t>>{
               {0, 75}, {0, 16}, {0, 32}, {0, 33}, {16, 24}, {3, 45}, {40, 40}})
        expectMatches(kQuantProductsAvx2, p, ref, nMin, nExtent, 0, m);
      expectMatches(kQuantProductsAvx2, p, ref, 5, 31, 1, m - 1);
    }
}

// Each row of W with d and dmin at an edge of f16 in every super-block (so
// that its tolerance is its own), blocks of zeros and of 0xff, sub-blocks
// of zero quants; rows of x of zeros, of 127, of -128, of -127 and 127, and
// random with -128.
TEST_F(KQuantMicrokernel, EdgeValues) {
  std::mt19937 rng(4);
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    KProblem p = randomProblem(rng, type, 512, 9, 7);
    const struct {
      uint16_t d, dmin;
    } halves[] = {{0x0000, 0x2a00},  // d zero: the mins alone
                  {0x0001, 0x0001},  // the smallest subnormals
                  {0x03ff, 0x8200},  // the largest subnormal, a negative one
                  {0x7b53, 0x7b53},  // 60000
                  {0xb800, 0xc000},  // negative
                  {0x3400, 0x0000}}; // dmin zero
    for (int64_t n = 0; n < 6; ++n)
      for (int64_t b = 0; b < p.superBlocks(); ++b) {
        setHalf(p.block(n, b) + dOffset(type), halves[n].d);
        if (type != kQ6K)
          setHalf(p.block(n, b) + 2, halves[n].dmin);
      }
    // Row 6: every quant and scale at its largest (Q6_K's scales -1).
    for (int64_t b = 0; b < p.superBlocks(); ++b) {
      std::memset(p.block(6, b), 0xff, size_t(blockBytes(type)));
      setHalf(p.block(6, b) + dOffset(type), 0x2c00);
      if (type != kQ6K)
        setHalf(p.block(6, b) + 2, 0x2400);
    }
    // Row 7: super-block 0 all zero bytes; super-block 1's sub-blocks 1
    // and 6 (Q6_K: groups 1 and 6) of zero quants.
    std::memset(p.block(7, 0), 0, size_t(blockBytes(type)));
    uint8_t *block = p.block(7, 1);
    for (int s : {1, 6})
      for (int l = 0; l < 32; ++l) {
        if (type == kQ6K) {
          const int h = s / 4, c = s % 4;
          block[64 * h + 32 * (c % 2) + l] &= c < 2 ? 0xf0 : 0x0f;
          block[128 + 32 * h + l] &= uint8_t(~(3 << (2 * c)));
        } else {
          block[(type == kQ4K ? 16 : 48) + 32 * (s / 2) + l] &= s % 2 ? 0x0f : 0xf0;
          if (type == kQ5K)
            block[16 + l] &= uint8_t(~(1 << s));
        }
      }
    // Row 8 stays random. Rows of x: 0 zeros (d_x 0), 1 all 127, 2 all
    // -128, 3 -127 and 127 alternating, 4 zeros with d_x not 0, 5 random
    // with -128 every fifth value, 6 random.
    for (int64_t k = 0; k < p.depth; ++k) {
      p.x(k, 0) = 0;
      p.x(k, 1) = 127;
      p.x(k, 2) = -128;
      p.x(k, 3) = k % 2 ? 127 : -127;
      p.x(k, 4) = 0;
      if (k % 5 == 0)
        p.x(k, 5) = -128;
    }
    for (int64_t g = 0; g < p.groups(); ++g) {
      p.dx(g, 0) = 0.0f;
      for (int64_t row = 1; row < 6; ++row)
        p.dx(g, row) = 0.003f * float(1 + (g + row) % 5);
    }
    const Reference ref = reference(p);
    expectMatches(kQuantProductsAvx2, p, ref, 0, 9, 0, 7);
    for (int64_t row = 0; row < 7; ++row)
      expectMatches(kQuantProductsAvx2, p, ref, 0, 9, row, 1);
  }
}

// An infinite or NaN d or dmin (which the loader refuses) is no crash, and
// stays in its own output: the other rows' are as ever.
TEST_F(KQuantMicrokernel, NonFiniteScalesStayInTheirRow) {
  std::mt19937 rng(10);
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    KProblem p = randomProblem(rng, type, 512, 12, 5);
    const Reference ref = reference(p);
    setHalf(p.block(1, 0) + dOffset(type), 0x7c00); // +inf
    setHalf(p.block(6, 1) + dOffset(type), 0x7e00); // NaN
    if (type != kQ6K)
      setHalf(p.block(9, 1) + 2, 0xfc00);           // dmin -inf
    for (int64_t m : {1, 5}) {
      const std::vector<float> out = run(kQuantProductsAvx2, p, 0, 12, 0, m);
      for (int64_t row = 0; row < m; ++row)
        for (int64_t n = 0; n < 12; ++n) {
          if (n == 1 || n == 6 || (n == 9 && type != kQ6K))
            continue;
          const size_t i = size_t(n + row * p.rows);
          EXPECT_NEAR(double(out[size_t(n + row * 12)]), ref.value[i],
                      ref.tolerance[i])
              << typeName(type) << " n=" << n << " m=" << row << " of " << m;
        }
    }
  }
}

// x_q's groups and rows, and x_scale's, not dense.
TEST_F(KQuantMicrokernel, StridedX) {
  std::mt19937 rng(5);
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    KProblem p = randomProblem(rng, type, 768, 7, 6);
    const Reference ref = reference(p);
    const XLayout layout{40, 40 * 24 + 8, 3, 3 * 24 + 1};
    for (int64_t m : {1, 6})
      expectMatches(kQuantProductsAvx2, p, ref, 0, 7, 0, m, layout);
  }
}

TEST_F(KQuantMicrokernel, BoundsQuery) {
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    halide_dimension_t xDims[3], sDims[2], wDims[2], outDims[2];
    halide_buffer_t xq{}, scale{}, w{}, out{};
    describe(xq, xDims, nullptr, {halide_type_int, 8, 1}, {1, 1, 1}, {0, 0, 0},
             {1, 1, 1});
    describe(scale, sDims, nullptr, {halide_type_float, 32, 1}, {1, 1}, {0, 0},
             {1, 1});
    describe(w, wDims, nullptr, {halide_type_uint, 8, 1}, {1, 1}, {0, 0}, {1, 1});
    std::vector<float> values(8 * 3);
    describe(out, outDims, values.data(), {halide_type_float, 32, 1}, {8, 3},
             {6, 2}, {1, 8});
    ASSERT_EQ(kQuantProductsAvx2(&xq, &scale, &w, 768, 10, type, &out), 0);
    // x: 24 groups of 32, rows 2 .. 4; W: rows 6 .. 9 (none past N), whole.
    EXPECT_EQ(xDims[0].min, 0);
    EXPECT_EQ(xDims[0].extent, 32);
    EXPECT_EQ(xDims[1].min, 0);
    EXPECT_EQ(xDims[1].extent, 24);
    EXPECT_EQ(xDims[2].min, 2);
    EXPECT_EQ(xDims[2].extent, 3);
    EXPECT_EQ(sDims[0].min, 0);
    EXPECT_EQ(sDims[0].extent, 24);
    EXPECT_EQ(sDims[1].min, 2);
    EXPECT_EQ(sDims[1].extent, 3);
    EXPECT_EQ(wDims[0].min, 0);
    EXPECT_EQ(wDims[0].extent, 3 * blockBytes(type)) << typeName(type);
    EXPECT_EQ(wDims[1].min, 6);
    EXPECT_EQ(wDims[1].extent, 4);
    // A task wholly past N asks for W's last row (a region is never empty).
    outDims[0].min = 12;
    ASSERT_EQ(kQuantProductsAvx2(&xq, &scale, &w, 768, 10, type, &out), 0);
    EXPECT_EQ(wDims[1].min, 9);
    EXPECT_EQ(wDims[1].extent, 1);
  }
}

// Other ggml types (Q4_0, Q8_0, Q8_K, Q3_K) and depths not a multiple of
// 256 are refused, in the bounds query and in a call.
TEST_F(KQuantMicrokernel, RefusesOtherTypesAndDepths) {
  std::mt19937 rng(6);
  KProblem p = randomProblem(rng, kQ4K, 256, 2, 1);
  for (auto [type, depth] : std::vector<std::pair<int, int>>{
           {2, 256}, {8, 256}, {15, 256}, {11, 256}, {kQ4K, 288}, {kQ6K, 0}}) {
    halide_dimension_t xDims[3], sDims[2], wDims[2], outDims[2];
    halide_buffer_t xq{}, scale{}, w{}, out{};
    float value = -1.0f;
    describe(xq, xDims, nullptr, {halide_type_int, 8, 1}, {1, 1, 1}, {0, 0, 0},
             {1, 1, 1});
    describe(scale, sDims, p.xScale.data(), {halide_type_float, 32, 1}, {1, 1},
             {0, 0}, {1, 1});
    describe(w, wDims, p.w.data(), {halide_type_uint, 8, 1}, {1, 1}, {0, 0},
             {1, 1});
    describe(out, outDims, &value, {halide_type_float, 32, 1}, {1, 1}, {0, 0},
             {1, 1});
    EXPECT_NE(kQuantProductsAvx2(&xq, &scale, &w, depth, 2, type, &out), 0)
        << "bounds query, type " << type << " depth " << depth;
    xq.host = reinterpret_cast<uint8_t *>(p.xq.data());
    EXPECT_NE(kQuantProductsAvx2(&xq, &scale, &w, depth, 2, type, &out), 0)
        << "type " << type << " depth " << depth;
    EXPECT_EQ(value, -1.0f);
  }
}

// support/Microkernels.h's names: both run the AVX2 code.
TEST_F(KQuantMicrokernel, CNames) {
  std::mt19937 rng(8);
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    KProblem p = randomProblem(rng, type, 512, 6, 5);
    const Reference ref = reference(p);
    for (KQuantProductsFn fn : {tfmc_uk_qk_v1_avx2, tfmc_uk_qk_v1_avx512}) {
      expectMatches(fn, p, ref, 0, 6, 0, 5);
      expectMatches(fn, p, ref, 2, 6, 4, 1);
    }
  }
}


// --- f32 activations (tfmc_uk_qkf, runtime/ukernels/KQuantFloatAvx2.cpp) ---

/// x in f32 for a problem: its q · d_x, rounded to f32 (so that rows of
/// zeros, -128 and 127 carry over), read from rows [0, m).
std::vector<float> floatX(KProblem &p) {
  std::vector<float> x(size_t(p.depth * p.m));
  for (int64_t row = 0; row < p.m; ++row)
    for (int64_t k = 0; k < p.depth; ++k)
      x[size_t(k + row * p.depth)] = float(p.x(k, row)) * p.dx(k / 32, row);
  return x;
}

/// Σ_k W(n, k) · x(k, m) in double, W's values ggml's; the tolerance 1e-5
/// of the sum of |terms| (Q4_K, Q5_K: d·sc·q and dmin·m apart, as the
/// kernel sums them).
Reference floatReference(KProblem &p, const std::vector<float> &x) {
  Reference ref;
  ref.value.assign(size_t(p.rows * p.m), 0.0);
  ref.tolerance.assign(size_t(p.rows * p.m), 0.0);
  std::vector<float> values(size_t(p.depth));
  std::vector<double> magnitudes(size_t(p.depth));
  for (int64_t n = 0; n < p.rows; ++n) {
    for (int64_t b = 0; b < p.superBlocks(); ++b)
      dequantize(p.type, p.block(n, b), &values[size_t(256 * b)],
                 &magnitudes[size_t(256 * b)]);
    for (int64_t row = 0; row < p.m; ++row) {
      double sum = 0, magnitude = 0;
      for (int64_t k = 0; k < p.depth; ++k) {
        const double xk = x[size_t(k + row * p.depth)];
        sum += double(values[size_t(k)]) * xk;
        magnitude += magnitudes[size_t(k)] * std::fabs(xk);
      }
      ref.value[size_t(n + row * p.rows)] = sum;
      ref.tolerance[size_t(n + row * p.rows)] = 1e-5 * magnitude + 1e-30;
    }
  }
  return ref;
}

/// run()'s f32 twin: x's rows [mMin, mMin + mExtent) with `rowStride`
/// floats between rows (0: K), ending at an inaccessible page.
std::vector<float> runFloat(KQuantFloatProductsFn fn, KProblem &p,
                            const std::vector<float> &x, int64_t nMin,
                            int64_t nExtent, int64_t mMin, int64_t mExtent,
                            int64_t rowStride = 0) {
  const int64_t xRow = rowStride ? rowStride : p.depth;
  GuardedBytes xBytes(size_t(xRow * (mExtent - 1) + p.depth) * sizeof(float));
  auto *xs = reinterpret_cast<float *>(xBytes.data);
  for (int64_t row = 0; row < mExtent; ++row)
    std::memcpy(xs + row * xRow, &x[size_t((mMin + row) * p.depth)],
                size_t(p.depth) * sizeof(float));
  const int64_t wFirst = std::min(nMin, p.rows - 1);
  const int64_t wEnd = std::max(std::min(nMin + nExtent, p.rows), wFirst + 1);
  GuardedBytes w(size_t(p.rowBytes() * (wEnd - wFirst)));
  std::memcpy(w.data, p.block(wFirst, 0), size_t(p.rowBytes() * (wEnd - wFirst)));
  std::vector<float> out(size_t(nExtent * mExtent), -1.0f);
  halide_dimension_t xDims[2], wDims[2], outDims[2];
  halide_buffer_t xBuffer{}, wBuffer{}, outBuffer{};
  describe(xBuffer, xDims, xs, {halide_type_float, 32, 1}, {p.depth, mExtent},
           {0, mMin}, {1, xRow});
  describe(wBuffer, wDims, w.data, {halide_type_uint, 8, 1},
           {p.rowBytes(), wEnd - wFirst}, {0, wFirst}, {1, p.rowBytes()});
  describe(outBuffer, outDims, out.data(), {halide_type_float, 32, 1},
           {nExtent, mExtent}, {nMin, mMin}, {1, nExtent});
  EXPECT_EQ(fn(&xBuffer, &wBuffer, int32_t(p.depth), int32_t(p.rows), p.type,
               &outBuffer),
            0);
  return out;
}

void expectFloatMatches(KQuantFloatProductsFn fn, KProblem &p,
                        const std::vector<float> &x, const Reference &ref,
                        int64_t nMin, int64_t nExtent, int64_t mMin,
                        int64_t mExtent, int64_t rowStride = 0) {
  expectOutputs(runFloat(fn, p, x, nMin, nExtent, mMin, mExtent, rowStride), p,
                ref, nMin, nExtent, mMin, mExtent, "f32 x, ");
}

void floatOddShapes(int type, unsigned seed) {
  std::mt19937 rng(seed);
  for (int64_t depth : {256, 512, 2816})
    for (int64_t m : {1, 2, 3, 4, 5, 8, 17}) {
      KProblem p = randomProblem(rng, type, depth, 9, m);
      const std::vector<float> x = floatX(p);
      const Reference ref = floatReference(p, x);
      for (int64_t extent = 1; extent <= 9; ++extent)
        expectFloatMatches(kQuantFloatProductsAvx2, p, x, ref, 0, extent, 0, m);
      expectFloatMatches(kQuantFloatProductsAvx2, p, x, ref, 5, 7, 0, m);
      expectFloatMatches(kQuantFloatProductsAvx2, p, x, ref, 9, 4, 0, m);
      if (m > 2)
        expectFloatMatches(kQuantFloatProductsAvx2, p, x, ref, 3, 5, 1, m - 2);
      expectFloatMatches(kQuantFloatProductsAvx2, p, x, ref, 1, 8, m - 1, 1);
    }
}

TEST_F(KQuantMicrokernel, FloatQ4KOddShapes) { floatOddShapes(kQ4K, 11); }
TEST_F(KQuantMicrokernel, FloatQ5KOddShapes) { floatOddShapes(kQ5K, 12); }
TEST_F(KQuantMicrokernel, FloatQ6KOddShapes) { floatOddShapes(kQ6K, 13); }

/// A problem of K = 512 with d and dmin at the edges of f16 (rows 0 .. 4),
/// blocks of 0xff (row 5), a zero super-block (row 6), and x's rows 0 .. 2
/// zeros, 127 and ±127/-128 with large scales.
KProblem edgeProblem(std::mt19937 &rng, int type, int64_t rows, int64_t m) {
  KProblem p = randomProblem(rng, type, 512, rows, m);
  const uint16_t halves[] = {0x0000, 0x0001, 0x83ff, 0x7b53, 0xb800};
  for (int64_t n = 0; n < 5; ++n)
    for (int64_t b = 0; b < p.superBlocks(); ++b) {
      setHalf(p.block(n, b) + dOffset(type), halves[n]);
      if (type != kQ6K)
        setHalf(p.block(n, b) + 2, halves[4 - n]);
    }
  for (int64_t b = 0; b < p.superBlocks(); ++b) {
    std::memset(p.block(5, b), 0xff, size_t(blockBytes(type)));
    setHalf(p.block(5, b) + dOffset(type), 0x2c00);
    if (type != kQ6K)
      setHalf(p.block(5, b) + 2, 0x2400);
  }
  std::memset(p.block(6, 1), 0, size_t(blockBytes(type)));
  for (int64_t k = 0; k < p.depth; ++k) {
    p.x(k, 0) = 0;
    p.x(k, 1) = 127;
    p.x(k, 2) = k % 2 ? 127 : -128;
  }
  for (int64_t g = 0; g < p.groups(); ++g)
    for (int64_t row = 1; row < 3; ++row)
      p.dx(g, row) = 300.0f * float(1 + (g + row) % 5);
  return p;
}

// d and dmin at the edges of f16, blocks of 0xff, zero super-blocks and
// sub-blocks, x of zeros and of large values of both signs; x's rows
// strided.
TEST_F(KQuantMicrokernel, FloatEdgeValuesAndStridedX) {
  std::mt19937 rng(14);
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    KProblem p = edgeProblem(rng, type, 8, 5);
    const std::vector<float> x = floatX(p);
    const Reference ref = floatReference(p, x);
    expectFloatMatches(kQuantFloatProductsAvx2, p, x, ref, 0, 8, 0, 5);
    expectFloatMatches(kQuantFloatProductsAvx2, p, x, ref, 0, 8, 0, 5, 512 + 24);
    for (int64_t row = 0; row < 5; ++row)
      expectFloatMatches(kQuantFloatProductsAvx2, p, x, ref, 0, 8, row, 1, 1000);
  }
}

TEST_F(KQuantMicrokernel, FloatBoundsQueryAndRefusals) {
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    halide_dimension_t xDims[2], wDims[2], outDims[2];
    halide_buffer_t x{}, w{}, out{};
    float input = 0.0f;
    // x is a pipeline input: its host is not null in a bounds query, out's is.
    describe(x, xDims, &input, {halide_type_float, 32, 1}, {1, 1}, {0, 0}, {1, 1});
    describe(w, wDims, nullptr, {halide_type_uint, 8, 1}, {1, 1}, {0, 0}, {1, 1});
    describe(out, outDims, nullptr, {halide_type_float, 32, 1}, {8, 3}, {6, 2},
             {1, 8});
    ASSERT_EQ(kQuantFloatProductsAvx2(&x, &w, 768, 10, type, &out), 0);
    EXPECT_EQ(xDims[0].min, 0);
    EXPECT_EQ(xDims[0].extent, 768);
    EXPECT_EQ(xDims[1].min, 2);
    EXPECT_EQ(xDims[1].extent, 3);
    EXPECT_EQ(wDims[0].min, 0);
    EXPECT_EQ(wDims[0].extent, 3 * blockBytes(type)) << typeName(type);
    EXPECT_EQ(wDims[1].min, 6);
    EXPECT_EQ(wDims[1].extent, 4);
    outDims[0].min = 12; // wholly past N: W's last row
    ASSERT_EQ(kQuantFloatProductsAvx2(&x, &w, 768, 10, type, &out), 0);
    EXPECT_EQ(wDims[1].min, 9);
    EXPECT_EQ(wDims[1].extent, 1);
  }
  for (auto [type, depth] : std::vector<std::pair<int, int>>{
           {2, 256}, {8, 256}, {11, 256}, {kQ4K, 288}, {kQ6K, 0}}) {
    halide_dimension_t xDims[2], wDims[2], outDims[2];
    halide_buffer_t x{}, w{}, out{};
    float input = 0.0f, value = -1.0f;
    uint8_t byte = 0;
    describe(x, xDims, &input, {halide_type_float, 32, 1}, {1, 1}, {0, 0}, {1, 1});
    describe(w, wDims, &byte, {halide_type_uint, 8, 1}, {1, 1}, {0, 0}, {1, 1});
    describe(out, outDims, &value, {halide_type_float, 32, 1}, {1, 1}, {0, 0},
             {1, 1});
    EXPECT_NE(kQuantFloatProductsAvx2(&x, &w, depth, 2, type, &out), 0)
        << "type " << type << " depth " << depth;
    EXPECT_EQ(value, -1.0f);
  }
}

TEST_F(KQuantMicrokernel, FloatCNames) {
  std::mt19937 rng(15);
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    KProblem p = randomProblem(rng, type, 512, 6, 5);
    const std::vector<float> x = floatX(p);
    const Reference ref = floatReference(p, x);
    for (KQuantFloatProductsFn fn : {tfmc_uk_qkf_v1_avx2, tfmc_uk_qkf_v1_avx512}) {
      expectFloatMatches(fn, p, x, ref, 0, 6, 0, 5);
      expectFloatMatches(fn, p, x, ref, 2, 6, 4, 1);
    }
  }
}

// --- many rows of f32 x (tfmc_uk_qkfp, runtime/ukernels/WidenedPanelsAvx2.cpp) ---

/// One instruction set's form: its function and the rows of its tiles of
/// packed x (support/Microkernels.h's widenedPanelTile).
struct PanelsForm {
  KQuantFloatPanelProductsFn fn;
  int64_t tileRows;
};
const PanelsForm kPanelsAvx2{kQuantFloatPanelProductsAvx2,
                             tfmc::format::widenedPanelTile("avx2").rows};
const PanelsForm kPanelsAvx512{kQuantFloatPanelProductsAvx512,
                               tfmc::format::widenedPanelTile("avx512").rows};

/// runFloat()'s twin for the panels form: out's rows [mMin, mMin +
/// mExtent) (mMin a multiple of R), x's rows [0, m) packed as Halide packs
/// them (x_packed(i, r, c, t) = x(16c + i, Rt + r), rows past m clamped to
/// the last), only the tiles the bounds query asks for, ending at an
/// inaccessible page.
std::vector<float> runPanels(const PanelsForm &form, KProblem &p,
                             const std::vector<float> &x, int64_t nMin,
                             int64_t nExtent, int64_t mMin, int64_t mExtent) {
  const KQuantFloatPanelProductsFn fn = form.fn;
  const int64_t kPanelTileRows = form.tileRows;
  const int64_t chunks = p.depth / 16;
  halide_dimension_t xDims[4], wDims[2], outDims[2];
  halide_buffer_t xBuffer{}, wBuffer{}, outBuffer{};
  describe(xBuffer, xDims, nullptr, {halide_type_float, 32, 1}, {1, 1, 1, 1},
           {0, 0, 0, 0}, {1, 1, 1, 1});
  describe(wBuffer, wDims, nullptr, {halide_type_uint, 8, 1}, {1, 1}, {0, 0},
           {1, 1});
  describe(outBuffer, outDims, nullptr, {halide_type_float, 32, 1},
           {nExtent, mExtent}, {nMin, mMin}, {1, nExtent});
  EXPECT_EQ(fn(&xBuffer, &wBuffer, int32_t(p.depth), int32_t(p.rows),
               int32_t(p.m), p.type, &outBuffer),
            0);
  EXPECT_EQ(xDims[0].extent, 16);
  EXPECT_EQ(xDims[1].extent, kPanelTileRows);
  EXPECT_EQ(xDims[2].extent, chunks);
  const int64_t tFirst = xDims[3].min, tiles = xDims[3].extent;
  const int64_t tileFloats = chunks * kPanelTileRows * 16;
  GuardedBytes xBytes(size_t(tiles * tileFloats) * sizeof(float));
  auto *xs = reinterpret_cast<float *>(xBytes.data);
  for (int64_t t = 0; t < tiles; ++t)
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t r = 0; r < kPanelTileRows; ++r)
        for (int64_t i = 0; i < 16; ++i) {
          const int64_t row = std::min((tFirst + t) * kPanelTileRows + r, p.m - 1);
          xs[((t * chunks + c) * kPanelTileRows + r) * 16 + i] =
              x[size_t(16 * c + i + row * p.depth)];
        }
  const int64_t wFirst = wDims[1].min, wRows = wDims[1].extent;
  EXPECT_EQ(wDims[0].extent, p.rowBytes());
  GuardedBytes w(size_t(p.rowBytes() * wRows));
  std::memcpy(w.data, p.block(wFirst, 0), size_t(p.rowBytes() * wRows));
  std::vector<float> out(size_t(nExtent * mExtent), -1.0f);
  describe(xBuffer, xDims, xs, {halide_type_float, 32, 1},
           {16, kPanelTileRows, chunks, tiles}, {0, 0, 0, tFirst},
           {1, 16, 16 * kPanelTileRows, tileFloats});
  describe(wBuffer, wDims, w.data, {halide_type_uint, 8, 1},
           {p.rowBytes(), wRows}, {0, wFirst}, {1, p.rowBytes()});
  describe(outBuffer, outDims, out.data(), {halide_type_float, 32, 1},
           {nExtent, mExtent}, {nMin, mMin}, {1, nExtent});
  EXPECT_EQ(fn(&xBuffer, &wBuffer, int32_t(p.depth), int32_t(p.rows),
               int32_t(p.m), p.type, &outBuffer),
            0);
  return out;
}

/// Outputs of rows past M must be 0 too.
void expectPanelsMatch(const PanelsForm &form, KProblem &p,
                       const std::vector<float> &x, const Reference &ref,
                       int64_t nMin, int64_t nExtent, int64_t mMin,
                       int64_t mExtent) {
  const std::vector<float> out = runPanels(form, p, x, nMin, nExtent, mMin, mExtent);
  const int64_t live = std::clamp<int64_t>(p.m - mMin, 0, mExtent);
  expectOutputs(std::vector<float>(out.begin(), out.begin() + live * nExtent), p,
                ref, nMin, nExtent, mMin, live, "panels, ");
  for (int64_t i = live * nExtent; i < nExtent * mExtent; ++i)
    EXPECT_EQ(out[size_t(i)], 0.0f) << "a row past M, n " << nMin + i % nExtent;
}

void panelsOddShapes(const PanelsForm &form, int type, unsigned seed) {
  std::mt19937 rng(seed);
  const int64_t R = form.tileRows;
  for (int64_t depth : {256, 512, 2816})
    for (int64_t m : {1, 2, 5, 6, 7, 12, 13, 17, 25}) {
      KProblem p = randomProblem(rng, type, depth, 37, m);
      const std::vector<float> x = floatX(p);
      const Reference ref = floatReference(p, x);
      // Tasks of whole tiles of outputs (16 or 32), a panel and part of
      // one, parts alone.
      for (int64_t extent : {1, 3, 15, 16, 17, 32, 33, 37})
        expectPanelsMatch(form, p, x, ref, 0, extent, 0, m);
      expectPanelsMatch(form, p, x, ref, 5, 20, 0, m);
      expectPanelsMatch(form, p, x, ref, 32, 16, 0, m);
      expectPanelsMatch(form, p, x, ref, 40, 8, 0, m);
      if (m > R)
        expectPanelsMatch(form, p, x, ref, 16, 16, R, m - R);
      expectPanelsMatch(form, p, x, ref, 0, 16, 0, m + 4);
    }
}

TEST_F(KQuantMicrokernel, PanelsQ4KOddShapes) { panelsOddShapes(kPanelsAvx2, kQ4K, 21); }
TEST_F(KQuantMicrokernel, PanelsQ5KOddShapes) { panelsOddShapes(kPanelsAvx2, kQ5K, 22); }
TEST_F(KQuantMicrokernel, PanelsQ6KOddShapes) { panelsOddShapes(kPanelsAvx2, kQ6K, 23); }

// x86-64-avx512's form (WidenedPanelsAvx512.cpp: 12 x 2 zmm tiles, two
// panels a tile), where the CPU has AVX-512F.
class KQuantMicrokernel512 : public ::testing::Test {
protected:
  void SetUp() override {
    if (!cpuHasAvx512())
      GTEST_SKIP() << "this CPU lacks AVX-512";
  }
};
TEST_F(KQuantMicrokernel512, PanelsQ4KOddShapes) { panelsOddShapes(kPanelsAvx512, kQ4K, 31); }
TEST_F(KQuantMicrokernel512, PanelsQ5KOddShapes) { panelsOddShapes(kPanelsAvx512, kQ5K, 32); }
TEST_F(KQuantMicrokernel512, PanelsQ6KOddShapes) { panelsOddShapes(kPanelsAvx512, kQ6K, 33); }
TEST_F(KQuantMicrokernel512, PanelsEdgeValuesAndCName) {
  std::mt19937 rng(34);
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    KProblem p = edgeProblem(rng, type, 40, 15);
    const std::vector<float> x = floatX(p);
    const Reference ref = floatReference(p, x);
    for (const PanelsForm &form :
         {kPanelsAvx512, PanelsForm{tfmc_uk_qkfp_v1_avx512, kPanelsAvx512.tileRows}}) {
      expectPanelsMatch(form, p, x, ref, 0, 40, 0, 15);
      expectPanelsMatch(form, p, x, ref, 4, 33, 12, 3);
    }
  }
}

// The edge values of FloatEdgeValuesAndStridedX, many rows; the C names;
// refusals.
TEST_F(KQuantMicrokernel, PanelsEdgeValuesCNamesAndRefusals) {
  std::mt19937 rng(24);
  for (int type : {kQ4K, kQ5K, kQ6K}) {
    KProblem p = edgeProblem(rng, type, 20, 9);
    const std::vector<float> x = floatX(p);
    const Reference ref = floatReference(p, x);
    for (const PanelsForm &form :
         {kPanelsAvx2, PanelsForm{tfmc_uk_qkfp_v1_avx2, kPanelsAvx2.tileRows}}) {
      expectPanelsMatch(form, p, x, ref, 0, 20, 0, 9);
      expectPanelsMatch(form, p, x, ref, 4, 16, 6, 3);
    }
  }
  for (auto [type, depth] : std::vector<std::pair<int, int>>{
           {2, 256}, {8, 256}, {11, 256}, {kQ4K, 288}, {kQ6K, 0}}) {
    halide_dimension_t xDims[4], wDims[2], outDims[2];
    halide_buffer_t x{}, w{}, out{};
    float input = 0.0f, value = -1.0f;
    uint8_t byte = 0;
    describe(x, xDims, &input, {halide_type_float, 32, 1}, {1, 1, 1, 1},
             {0, 0, 0, 0}, {1, 1, 1, 1});
    describe(w, wDims, &byte, {halide_type_uint, 8, 1}, {1, 1}, {0, 0}, {1, 1});
    describe(out, outDims, &value, {halide_type_float, 32, 1}, {1, 1}, {0, 0},
             {1, 1});
    EXPECT_NE(kQuantFloatPanelProductsAvx2(&x, &w, depth, 2, 1, type, &out), 0)
        << "type " << type << " depth " << depth;
    EXPECT_EQ(value, -1.0f);
  }
}

} // namespace
