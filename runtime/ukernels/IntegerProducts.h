//===- IntegerProducts.h - The integer-product microkernel, per ISA -*- C++ -*-===//
//
// support/Microkernels.h's integer-product microkernel, written once over an
// instruction-set policy `Isa` that supplies the one operation that differs:
//
//   Isa::dot(acc, a, b)  acc + the sums of 4 adjacent products a·b, a 32 u8
//                        and b 32 i8 values, in 8 int32 lanes
//
// (vpdpbusd with AVX512-VNNI; vpmaddubsw then vpmaddwd by ones with AVX2,
// whose i16 pairs cannot saturate here: |a| <= 128 and |b| <= 127, or a
// nibble <= 15). Each file that includes this header compiles it for its
// own instruction set (runtime/CMakeLists.txt), so everything here has
// internal linkage: one TU's AVX2 copy never stands in for another's.
//
// The tile: kRows outputs n (rows of W) by up to kCols rows m of x, whose
// f32 accumulators (8 lanes each) stay in registers over all of K. Per
// group g and output pair (n, m): the exact int32 sums of the group's
// products in 8 lanes, converted, then one multiply-add by f32(d_x · d_w),
// as the Halide form's partial sums; the lanes are added at the end.
//   - int8 W: products of signed bytes through the unsigned × signed dot as
//     llama.cpp's Q8_0 kernels do it: |w| · (q with w's sign);
//   - int4 W: the nibbles w' = w + 8 (0 .. 15) as the unsigned operand,
//     Σ q·w = Σ q·w' − 8·Σ q, the second sum once per group and row of x.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_INTEGERPRODUCTS_H
#define TFMC_RUNTIME_UKERNELS_INTEGERPRODUCTS_H

#include <HalideRuntime.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace tfmc::runtime::ukernels {
namespace {

/// The arguments of one call, as plain pointers and strides (elements).
struct IntegerArgs {
  const int8_t *xq;     // x_q(j, g, m) at j + g·xGroupStride + m·xRowStride
  int64_t xGroupStride, xRowStride;
  const float *xScale;  // x_scale(g, m) at g·sGroupStride + m·sRowStride
  int64_t sGroupStride, sRowStride;
  const uint8_t *w;     // row n's blocks at n·wRowStride bytes
  int64_t wRowStride;
  int64_t groups, group, blockBytes;
  bool int4;
  float *out;           // out(n, m) at n + m·outRowStride (n, m from 0)
  int64_t outRowStride;
};

/// f16 values with every infinity or NaN made an infinity of its sign (its
/// mantissa cleared), as Common.cpp's scaleFunc widens a block scale: what
/// every microkernel converts with vcvtph2ps.
inline __m128i finiteOrInfinite(__m128i bits) {
  const __m128i exponent = _mm_set1_epi16(0x7c00);
  const __m128i special = _mm_cmpeq_epi16(_mm_and_si128(bits, exponent), exponent);
  return _mm_andnot_si128(_mm_and_si128(special, _mm_set1_epi16(0x03ff)), bits);
}
inline __m256i finiteOrInfinite(__m256i bits) {
  const __m256i exponent = _mm256_set1_epi16(0x7c00);
  const __m256i special =
      _mm256_cmpeq_epi16(_mm256_and_si256(bits, exponent), exponent);
  return _mm256_andnot_si256(_mm256_and_si256(special, _mm256_set1_epi16(0x03ff)),
                             bits);
}

/// The f16 scales of block g of up to 4 rows (`stride` bytes apart from
/// `base`, at `offset` in each), widened to f32 in one vcvtph2ps
/// (finiteOrInfinite).
template <int R>
inline __m128 widenScales(const uint8_t *base, int64_t stride, int64_t offset) {
  static_assert(R <= 4, "four scales a vector");
  uint16_t halves[4] = {0, 0, 0, 0};
  for (int r = 0; r < R; ++r)
    std::memcpy(&halves[r], base + r * stride + offset, 2);
  const __m128i bits = _mm_set_epi16(0, 0, 0, 0, short(halves[3]), short(halves[2]),
                                     short(halves[1]), short(halves[0]));
  return _mm_cvtph_ps(finiteOrInfinite(bits));
}

inline float sumLanes(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/// int4: block g's 32 nibbles in element order (low nibbles are elements
/// 0 .. 15, high nibbles 16 .. 31), as u8.
inline __m256i nibbles(const uint8_t *block) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + 2));
  const __m128i low = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(bytes, 4), low),
                          _mm_and_si128(bytes, low));
}

/// How far ahead the tiles prefetch W's rows (a task's rows are one
/// stream; one tile ahead, R rows, left the tied 50257-wide int4 head of a
/// GPT-2 decode step at 52-63 % of the read roof, 4 KiB 67-73 %, 8 KiB no
/// better): whole tiles of R rows of `rowBytes`.
inline int64_t rowsAhead(int rows, int64_t rowBytes) {
  return std::max<int64_t>(1, 4096 / (rows * rowBytes)) * rows;
}

/// Group g of outputs [n, n + R) (W's rows `rows`) by rows [m, m + C) of
/// x, into the f32 accumulators `acc` (8 lanes each).
template <class Isa, int R, int C>
inline void oneGroup(const IntegerArgs &a, const uint8_t *const *rows,
                     int64_t g, int64_t m, __m256 (&acc)[R][C]) {
  // A later tile's rows (rowsAhead), at this tile's block: the hardware
  // prefetcher alone left a decode step load-latency bound (as the Halide
  // form's prefetchNextTile found). Prefetching never faults.
  const int64_t ahead = rowsAhead(R, a.wRowStride);
  for (int r = 0; r < R; ++r) {
    // The block's last byte: blocks of at most 64 bytes touch every line
    // that way; a longer one has its first line prefetched too.
    const char *next = reinterpret_cast<const char *>(
        rows[r] + ahead * a.wRowStride + g * a.blockBytes);
    _mm_prefetch(next + a.blockBytes - 1, _MM_HINT_T0);
    if (a.blockBytes > 64)
      _mm_prefetch(next, _MM_HINT_T0);
  }
  const int8_t *x[C];
  float dx[C];
  for (int c = 0; c < C; ++c) {
    x[c] = a.xq + g * a.xGroupStride + (m + c) * a.xRowStride;
    dx[c] = a.xScale[g * a.sGroupStride + (m + c) * a.sRowStride];
  }
  __m256i sums[R][C];
  if (a.int4) {
    __m256i xv[C], offset[C];
    for (int c = 0; c < C; ++c) {
      xv[c] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x[c]));
      offset[c] = Isa::dot(_mm256_setzero_si256(), _mm256_set1_epi8(8), xv[c]);
    }
    for (int r = 0; r < R; ++r) {
      const __m256i wv = nibbles(rows[r] + g * a.blockBytes);
      for (int c = 0; c < C; ++c)
        sums[r][c] = _mm256_sub_epi32(
            Isa::dot(_mm256_setzero_si256(), wv, xv[c]), offset[c]);
    }
  } else {
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c)
        sums[r][c] = _mm256_setzero_si256();
    for (int64_t k = 0; k < a.group / 32; ++k)
      for (int r = 0; r < R; ++r) {
        const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(
            rows[r] + g * a.blockBytes + 2 + 32 * k));
        const __m256i magnitude = _mm256_abs_epi8(wv);
        for (int c = 0; c < C; ++c) {
          const __m256i xv = _mm256_loadu_si256(
              reinterpret_cast<const __m256i *>(x[c] + 32 * k));
          sums[r][c] = Isa::dot(sums[r][c], magnitude, _mm256_sign_epi8(xv, wv));
        }
      }
  }
  const __m128 dw = widenScales<R>(rows[0], a.wRowStride, g * a.blockBytes);
  for (int c = 0; c < C; ++c) {
    alignas(16) float scales[4];
    _mm_store_ps(scales, _mm_mul_ps(dw, _mm_set1_ps(dx[c])));
    for (int r = 0; r < R; ++r)
      acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[r][c]),
                                  _mm256_broadcast_ss(&scales[r]), acc[r][c]);
  }
}

/// Outputs [n, n + R) by rows [m, m + C) of x.
template <class Isa, int R, int C>
void tile(const IntegerArgs &a, int64_t n, int64_t m) {
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      acc[r][c] = _mm256_setzero_ps();
  const uint8_t *rows[R];
  for (int r = 0; r < R; ++r)
    rows[r] = a.w + (n + r) * a.wRowStride;
  for (int64_t g = 0; g < a.groups; ++g)
    oneGroup<Isa, R, C>(a, rows, g, m, acc);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      a.out[(n + r) + (m + c) * a.outRowStride] = sumLanes(acc[r][c]);
}

/// tile() for int4 W with 512-bit vectors (Isa::kWide): two blocks a
/// vector. The two blocks' 16 bytes of nibbles are split into low and high
/// nibbles and put in x's element order with one vpermt2q, so that one
/// vpdpbusd takes 64 products and x is read as it is (64 bytes of x_q:
/// groups g and g + 1, whose stride is 32). Lanes 0 .. 7 hold block g's
/// sums, 8 .. 15 block g + 1's; each is scaled by its own f32(d_x · d_w).
/// An odd last block goes through oneGroup.
template <class Isa, int R, int C>
void wideInt4Tile(const IntegerArgs &a, int64_t n, int64_t m) {
  __m512 acc[R][C];
  __m256 last[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      acc[r][c] = _mm512_setzero_ps();
      last[r][c] = _mm256_setzero_ps();
    }
  // W's rows addressed from the first (an array of R pointers spilled to
  // the stack: 14.6 -> 18-19.6 GB/s on one thread of this Zen 5, 185 MB of
  // Q4_0 blocks).
  const uint8_t *rows[R];
  for (int r = 0; r < R; ++r)
    rows[r] = a.w + (n + r) * a.wRowStride;
  const uint8_t *base = rows[0];
  // Quadwords [low g, high g, low g + 1, high g + 1] from the two halves.
  const __m512i order = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
  // Lanes 0 .. 7: scale r of block g (lane r); 8 .. 15: of block g + 1
  // (lane 4 + r).
  __m512i pick[R];
  for (int r = 0; r < R; ++r)
    pick[r] = _mm512_inserti32x8(_mm512_set1_epi32(r), _mm256_set1_epi32(4 + r), 1);
  const __m256i low = _mm256_set1_epi8(0x0f);
  const int64_t ahead = rowsAhead(R, a.wRowStride);
  int64_t g = 0;
  for (; g + 1 < a.groups; g += 2) {
    for (int r = 0; r < R; ++r) {
      const char *next = reinterpret_cast<const char *>(
          base + (ahead + r) * a.wRowStride + g * a.blockBytes);
      _mm_prefetch(next + a.blockBytes - 1, _MM_HINT_T0);
      _mm_prefetch(next + 2 * a.blockBytes - 1, _MM_HINT_T0);
    }
    __m512i xv[C], offset[C];
    __m512 scales[C];
    const __m128 dw0 = widenScales<R>(base, a.wRowStride, g * a.blockBytes);
    const __m128 dw1 = widenScales<R>(base, a.wRowStride, (g + 1) * a.blockBytes);
    for (int c = 0; c < C; ++c) {
      const int8_t *x = a.xq + g * a.xGroupStride + (m + c) * a.xRowStride;
      xv[c] = _mm512_loadu_si512(x);
      offset[c] = Isa::dot512(_mm512_setzero_si512(), _mm512_set1_epi8(8), xv[c]);
      const float *d = a.xScale + g * a.sGroupStride + (m + c) * a.sRowStride;
      scales[c] = _mm512_insertf32x4(
          _mm512_castps128_ps512(_mm_mul_ps(dw0, _mm_set1_ps(d[0]))),
          _mm_mul_ps(dw1, _mm_set1_ps(d[a.sGroupStride])), 1);
    }
    for (int r = 0; r < R; ++r) {
      const uint8_t *block = base + r * a.wRowStride + g * a.blockBytes + 2;
      const __m256i bytes = _mm256_inserti128_si256(
          _mm256_castsi128_si256(
              _mm_loadu_si128(reinterpret_cast<const __m128i *>(block))),
          _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + a.blockBytes)),
          1);
      const __m512i wv = _mm512_permutex2var_epi64(
          _mm512_castsi256_si512(_mm256_and_si256(bytes, low)), order,
          _mm512_castsi256_si512(
              _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low)));
      for (int c = 0; c < C; ++c) {
        const __m512i sums = _mm512_sub_epi32(
            Isa::dot512(_mm512_setzero_si512(), wv, xv[c]), offset[c]);
        acc[r][c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums),
                                    _mm512_permutexvar_ps(pick[r], scales[c]),
                                    acc[r][c]);
      }
    }
  }
  if (g < a.groups)
    oneGroup<Isa, R, C>(a, rows, g, m, last);
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      a.out[(n + r) + (m + c) * a.outRowStride] =
          _mm512_reduce_add_ps(acc[r][c]) + sumLanes(last[r][c]);
}

/// The tile's code for these arguments: 512-bit int4 where the ISA has it
/// and x's groups are dense.
template <class Isa, int R, int C>
void anyTile(const IntegerArgs &a, int64_t n, int64_t m) {
  if constexpr (Isa::kWide)
    if (a.int4 && a.xGroupStride == 32)
      return wideInt4Tile<Isa, R, C>(a, n, m);
  tile<Isa, R, C>(a, n, m);
}

/// Rows [m, m + C) of x against outputs [n0, n1): whole tiles of Isa::kRows
/// outputs, then one output at a time.
template <class Isa, int C>
void rowsOfX(const IntegerArgs &a, int64_t n0, int64_t n1, int64_t m) {
  int64_t n = n0;
  for (; n + Isa::kRows <= n1; n += Isa::kRows)
    anyTile<Isa, Isa::kRows, C>(a, n, m);
  for (; n < n1; ++n)
    anyTile<Isa, 1, C>(a, n, m);
}

/// The bounds query's answer for x: all of its groups of rows [mMin, mMin +
/// mExtent). Levels with a host (a pipeline input, of which Halide asks
/// nothing) keep their shape.
inline void askForX(halide_buffer_t *xq, halide_buffer_t *xScale,
                    int64_t group, int64_t groups, int64_t mMin,
                    int64_t mExtent) {
  if (xq->host == nullptr) {
    xq->dim[0].min = 0;
    xq->dim[0].extent = int32_t(group);
    xq->dim[1].min = 0;
    xq->dim[1].extent = int32_t(groups);
    xq->dim[2].min = int32_t(mMin);
    xq->dim[2].extent = int32_t(mExtent);
  }
  xScale->dim[0].min = 0;
  xScale->dim[0].extent = int32_t(groups);
  xScale->dim[1].min = int32_t(mMin);
  xScale->dim[1].extent = int32_t(mExtent);
}

/// ... and for W: `bytes` of each of its units (rows or panels) [first, end).
inline void askForW(halide_buffer_t *w, int64_t bytes, int64_t first,
                    int64_t end) {
  w->dim[0].min = 0;
  w->dim[0].extent = int32_t(bytes);
  w->dim[1].min = int32_t(first);
  w->dim[1].extent = int32_t(end - first);
}

/// The bounds query's answer for an f32 x (K, M) read as it is: all of K
/// for rows [mMin, mMin + mExtent).
inline void askForFloatRows(halide_buffer_t *x, int64_t depth, int64_t mMin,
                            int64_t mExtent) {
  x->dim[0].min = 0;
  x->dim[0].extent = int32_t(depth);
  x->dim[1].min = int32_t(mMin);
  x->dim[1].extent = int32_t(mExtent);
}

/// Element (0, m) of an f32 (K, M) buffer as Halide passes it (its region
/// starting anywhere).
inline const float *floatRow(const halide_buffer_t *buffer, int64_t m) {
  return reinterpret_cast<const float *>(buffer->host) - buffer->dim[0].min +
         (m - buffer->dim[1].min) * buffer->dim[1].stride;
}

/// A call's arguments but W's, from Halide's buffers: x from the first
/// row of `out`'s region, out's outputs from its first.
inline IntegerArgs argumentsOf(halide_buffer_t *xq, halide_buffer_t *xScale,
                               halide_buffer_t *out, int64_t group,
                               int64_t groups, int64_t blockBytes,
                               int32_t int4) {
  const int64_t mMin = out->dim[1].min;
  IntegerArgs a{};
  a.xGroupStride = xq->dim[1].stride;
  a.xRowStride = xq->dim[2].stride;
  a.xq = reinterpret_cast<const int8_t *>(xq->host) +
         (0 - xq->dim[0].min) * xq->dim[0].stride +
         (0 - xq->dim[1].min) * a.xGroupStride + (mMin - xq->dim[2].min) * a.xRowStride;
  a.sGroupStride = xScale->dim[0].stride;
  a.sRowStride = xScale->dim[1].stride;
  a.xScale = reinterpret_cast<const float *>(xScale->host) +
             (0 - xScale->dim[0].min) * a.sGroupStride +
             (mMin - xScale->dim[1].min) * a.sRowStride;
  a.groups = groups;
  a.group = group;
  a.blockBytes = blockBytes;
  a.int4 = int4 != 0;
  a.outRowStride = out->dim[1].stride;
  a.out = reinterpret_cast<float *>(out->host);
  return a;
}

/// Outputs [live, nExtent) of every row: past N, 0.
inline void zeroPastN(float *out, int64_t outRowStride, int64_t live,
                      int64_t nExtent, int64_t mExtent) {
  for (int64_t m = 0; m < mExtent; ++m)
    for (int64_t n = live; n < nExtent; ++n)
      out[n + m * outRowStride] = 0.0f;
}
inline void zeroPastN(const IntegerArgs &a, int64_t live, int64_t nExtent,
                      int64_t mExtent) {
  zeroPastN(a.out, a.outRowStride, live, nExtent, mExtent);
}

/// A call's rows of W (every microkernel's): `out`'s outputs [nMin, nMin +
/// nExtent) read rows [first, end), none past N (a task wholly past it
/// asks for the last row: a region is never empty), and its first `live`
/// outputs hold rows of W.
struct TaskRows {
  int64_t first, end, live;
};
inline TaskRows taskRows(const halide_buffer_t *out, int64_t rows) {
  const int64_t nMin = out->dim[0].min, nExtent = out->dim[0].extent;
  const int64_t first = std::min<int64_t>(nMin, rows - 1);
  return {first,
          std::max<int64_t>(std::min<int64_t>(nMin + nExtent, rows), first + 1),
          std::max<int64_t>(0, std::min<int64_t>(nExtent, rows - nMin))};
}

/// The bytes of W's row `n` in a call's buffer `w` (rows of bytes).
inline const uint8_t *rowOfW(const halide_buffer_t *w, int64_t n) {
  return w->host + (n - w->dim[1].min) * w->dim[1].stride - w->dim[0].min;
}

/// Every row of x against outputs [0, live) through repacked panels of W
/// (IntegerPanels.h; declared here, defined there for the ISAs whose
/// kPanelRows is not 0).
template <class Isa>
void panelRows(const IntegerArgs &a, int64_t live, int64_t mExtent);

/// The microkernel (support/Microkernels.h), for one instruction set.
template <class Isa>
int integerProducts(halide_buffer_t *xq, halide_buffer_t *xScale,
                    halide_buffer_t *w, int32_t depth, int32_t group,
                    int32_t rows, int32_t int4, halide_buffer_t *out) {
  const int64_t groups = (int64_t(depth) + group - 1) / group;
  const int64_t nMin = out->dim[0].min, nExtent = out->dim[0].extent;
  const int64_t mMin = out->dim[1].min, mExtent = out->dim[1].extent;
  const TaskRows task = taskRows(out, rows);
  const int64_t blockBytes = int4 ? 18 : 2 + group;
  // Halide's bounds query: out's and x's scales' hosts are null (x's
  // levels, were they a pipeline input, would have one even then).
  if (out->host == nullptr || xScale->host == nullptr) {
    askForX(xq, xScale, group, groups, mMin, mExtent);
    askForW(w, groups * blockBytes, task.first, task.end);
    return 0;
  }
  IntegerArgs a = argumentsOf(xq, xScale, out, group, groups, blockBytes, int4);
  a.wRowStride = w->dim[1].stride;
  a.w = rowOfW(w, nMin);
  // Outputs [0, live) of the task hold rows of W; the rest are past N.
  const int64_t live = task.live;
  bool panels = false;
  if constexpr (Isa::kPanelRows > 0) {
    panels = mExtent >= Isa::kPanelRows;
    if (panels)
      panelRows<Isa>(a, live, mExtent);
  }
  for (int64_t m = 0; m < mExtent && !panels;) {
    if (mExtent - m >= 2 && Isa::kCols >= 2) {
      rowsOfX<Isa, (Isa::kCols >= 2 ? 2 : 1)>(a, 0, live, m);
      m += 2;
    } else {
      rowsOfX<Isa, 1>(a, 0, live, m);
      m += 1;
    }
  }
  zeroPastN(a, live, nExtent, mExtent);
  return 0;
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_INTEGERPRODUCTS_H
