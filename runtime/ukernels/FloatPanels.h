//===- FloatPanels.h - f32 products of many rows of x over W in panels -*- C++ -*-===//
//
// support/Microkernels.h's f32 microkernel (tfmc_uk_f32p_*): a task's
// outputs out(n, m) = Σ_k x(k, m) · W(n, k) for many rows of x (prefill,
// encoders), over an f32 W stored in panels of 16 rows (support/
// WeightFormat.h: [N / 16, K, 16], each step of K one 64-byte line of 16
// outputs). Written once over a vector policy `Vec` (its lanes, tile and
// loads; FloatProductsAvx2.cpp's has 8 lanes); each file that includes
// this header compiles it for its own instruction set, so everything here
// has internal linkage.
//
// The classic register tile: kRows rows of x by kVectors vectors of
// outputs, whose kRows · kVectors accumulators stay in registers over a
// block of kDepthBlock steps of K; each step loads kVectors vectors of W
// (the panels as stored) and broadcasts one value of x per row. The loops
// around it (BLIS's order):
//
//   for each depth block of kDepthBlock:
//     for each kVectors vectors of outputs:     their W block (kDepthBlock
//                                               lines a panel) stays in L1
//       for each kRows rows:                    x's packed tile from L2
//         the tile, adding to out (the first block starts at 0), and a
//         share of the next W block's lines prefetched (NextBlock)
//
// x comes packed (Halide packs it once per call, LinearMicrokernel.cpp): in
// tiles of kRows rows, each in chunks of 16 steps of K, [tile][chunk][row
// of the tile][16 values], so that the tile's broadcasts come from one run
// of kRows · 64 bytes per chunk. Read in place, kRows rows of x whose
// stride is a multiple of 4 KiB (K = 1024, 2048, 3072...) share one L1 set
// and evicted each other: a tile ran at half speed there; packed per task
// instead, the copies cost ~10 % of GPT-2's 768 x 768 products.
//
// Numbers: each output is one f32 sum over k in order, by fused
// multiply-adds (the Halide forms sum in another order; no f32 contract
// fixes it). Outputs at or past N (`rows`) and rows at or past M
// (`xRows`) are 0.
//
// Measured: FloatProductsAvx2.cpp's and FloatProductsAvx512.cpp's headers
// and docs/performance.md ("Microkernels (f32)").
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_FLOATPANELS_H
#define TFMC_RUNTIME_UKERNELS_FLOATPANELS_H

#include "runtime/ukernels/RowTiles.h"
#include "support/Microkernels.h"

#include <HalideRuntime.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace tfmc::runtime::ukernels {
namespace {

constexpr int kFloatPanel = 16;  // outputs a panel (support/WeightFormat.h)
constexpr int kFloatChunk = 16;  // steps of K a chunk of packed x

/// A call's operands as plain pointers and strides (floats).
struct FloatArgs {
  const float *x;      // x packed (support/Microkernels.h): the task's first
                       // tile of rows at x, tiles tileStride apart, each
                       // [chunk][kRows][16]
  int64_t tileStride;
  const float *w;      // the task's first panel: W(n, k) at
                       // (n / 16)·panelStride + 16·k + n % 16
  int64_t panelStride;
  int64_t depth;
  float *out;          // out(n, m) at n + m·outRowStride, both from 0
  int64_t outRowStride;
};

/// Keeps `v` in a register: GCC otherwise folds a vector's load (or
/// broadcast) into every FMA that uses it, so that a step of an R x V tile
/// loaded each W vector R times and each value of x V times (measured with
/// 512-bit vectors on a Zen 5: 60 % of the FMA peak, bound by the loads,
/// against 89 % with one load each).
template <class T> inline void inRegister(T &v) { __asm__("" : "+v"(v)); }

/// One step of K of an R x V tile: V vectors of W at `w` (vector j at panel
/// j / vectorsPerPanel), one broadcast of x per row from `x` (16 apart).
template <class Vec, int R, int V>
inline void tileStep(typename Vec::V (&acc)[R][V], const float *x,
                     const float *w, int64_t panelStride) {
  constexpr int perPanel = kFloatPanel / Vec::kLanes;
  typename Vec::V b[V];
#pragma GCC unroll 8
  for (int j = 0; j < V; ++j) {
    b[j] = Vec::load(w + (j / perPanel) * panelStride + (j % perPanel) * Vec::kLanes);
    inRegister(b[j]);
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    typename Vec::V xi = Vec::broadcast(x + i * kFloatChunk);
    if constexpr (V > 1)
      inRegister(xi);
#pragma GCC unroll 8
    for (int j = 0; j < V; ++j)
      acc[i][j] = Vec::fma(xi, b[j], acc[i][j]);
  }
}

/// Steps of K between two prefetched lines of the next W block.
constexpr int kPrefetchEvery = 4;

/// A tile's share of the lines (one step of K of a panel, 64 bytes) of the
/// W block that the next tile of outputs multiplies, so that it can ask
/// for them while it computes: `count` lines from `line`, the first
/// `untilPanelEnd` in one panel, the rest `panelJump` floats further on, in
/// the next (a block is at most 2 panels wide).
struct NextBlock {
  const float *line = nullptr;
  int64_t untilPanelEnd = 0, panelJump = 0, count = 0;
  void prefetch(int64_t i) const {
    _mm_prefetch(reinterpret_cast<const char *>(
                     line + kFloatPanel * i + (i < untilPanelEnd ? 0 : panelJump)),
                 _MM_HINT_T0);
  }
};

/// Outputs [n0, n0 + V·lanes) of rows [m0, m0 + R) (R <= kRows: the first
/// R rows of a tile of packed x) over steps [k0, k0 + kc), added to out
/// unless `first`; every kPrefetchEvery steps of whole chunks, one line of
/// `next`'s share.
template <class Vec, int R, int V>
void tile(const FloatArgs &a, int64_t n0, int64_t m0, int64_t k0, int64_t kc,
          bool first, const NextBlock &next) {
  using T = typename Vec::V;
  constexpr int64_t chunkStride = Vec::kRows * kFloatChunk;
  T acc[R][V];
  float *out = a.out + m0 * a.outRowStride + n0;
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < V; ++j)
      acc[i][j] = first ? Vec::zero() : Vec::loadu(out + i * a.outRowStride + j * Vec::kLanes);
  const float *x = a.x + (m0 / Vec::kRows) * a.tileStride + (k0 / kFloatChunk) * chunkStride;
  const float *w = a.w + (n0 / kFloatPanel) * a.panelStride + kFloatPanel * k0;
  int64_t k = 0;
  for (; k + kFloatChunk <= kc; k += kFloatChunk) {
#pragma GCC unroll 16
    for (int s = 0; s < kFloatChunk; ++s) {
      if (s % kPrefetchEvery == 0 && (k + s) / kPrefetchEvery < next.count)
        next.prefetch((k + s) / kPrefetchEvery);
      tileStep<Vec, R, V>(acc, x + s, w + kFloatPanel * s, a.panelStride);
    }
    x += chunkStride;
    w += kFloatPanel * kFloatChunk;
  }
  for (int s = 0; k < kc; ++k, ++s)
    tileStep<Vec, R, V>(acc, x + s, w + kFloatPanel * s, a.panelStride);
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < V; ++j)
      Vec::storeu(out + i * a.outRowStride + j * Vec::kLanes, acc[i][j]);
}

/// The task's outputs [0, nLive) of rows [0, mLive), nLive a multiple of 16.
template <class Vec>
void floatPanelRows(const FloatArgs &a, int64_t nLive, int64_t mLive) {
  constexpr int V = Vec::kVectors;
  constexpr int perPanel = kFloatPanel / Vec::kLanes;
  static_assert(V % perPanel == 0, "a tile is whole panels");
  static_assert(Vec::kDepthBlock % kFloatChunk == 0, "blocks of whole chunks");
  constexpr int64_t tileOutputs = V * Vec::kLanes;
  constexpr int tilePanels = V / perPanel;
  static_assert(tilePanels <= 2, "NextBlock crosses one panel at most");
  for (int64_t k0 = 0; k0 < a.depth; k0 += Vec::kDepthBlock) {
    const int64_t kc = std::min<int64_t>(Vec::kDepthBlock, a.depth - k0);
    int64_t n = 0;
    for (; n + tileOutputs <= nLive; n += tileOutputs) {
      // The next W block (the next tile of outputs, or the first at the
      // next depth block), a share per tile of rows: W comes from memory
      // once per GEMM, and the first tile of rows of each block waited for
      // it (the microkernel alone, one thread, M = 128, N = K = 768 on a
      // Sapphire Rapids, aligned buffers: 158-165 GFLOP/s with W from
      // memory, 175-187 with a line every 4 steps, 184-200 with W in cache;
      // every step or 2, 8 steps, or a whole block by the first tile gave
      // less).
      int64_t nextN = n + tileOutputs, nextK = k0;
      if (nextN + tileOutputs > nLive) {
        nextN = 0;
        nextK = k0 + Vec::kDepthBlock;
      }
      const int64_t steps = std::clamp<int64_t>(a.depth - nextK, 0, Vec::kDepthBlock);
      const int64_t lines = tilePanels * steps;
      const int64_t share = (kc + kPrefetchEvery - 1) / kPrefetchEvery;
      int64_t first = 0;
      forRowTiles<Vec::kRows>(mLive, [&](auto rows, int64_t m) {
        NextBlock next;
        next.count = std::clamp<int64_t>(lines - first, 0, share);
        if (next.count > 0) {
          const int64_t panel = first / steps, within = first % steps;
          next.line = a.w + (nextN / kFloatPanel + panel) * a.panelStride +
                      kFloatPanel * (nextK + within);
          next.untilPanelEnd = steps - within;
          next.panelJump = a.panelStride - kFloatPanel * steps;
        }
        tile<Vec, decltype(rows)::value, V>(a, n, m, k0, kc, k0 == 0, next);
        first += share;
      });
    }
    // The panels left (fewer than a tile's), one at a time.
    for (; n < nLive; n += kFloatPanel)
      forRowTiles<Vec::kRows>(mLive, [&](auto rows, int64_t m) {
        tile<Vec, decltype(rows)::value, perPanel>(a, n, m, k0, kc, k0 == 0,
                                                   NextBlock{});
      });
  }
}

/// Tiles [first, end) of R rows of packed x that a task's rows [mMin, mMin
/// + mExtent) are in and that exist of M = xRows (a task past M still
/// names one, so that every region is valid); `askFor` sets x's region
/// to them in a bounds query (chunks of 16 steps of `depth`).
struct PackedTiles {
  int64_t first, end;
  PackedTiles(int64_t R, int64_t mMin, int64_t mExtent, int64_t xRows) {
    const int64_t tiles = (xRows + R - 1) / R;
    first = std::min<int64_t>(mMin / R, tiles - 1);
    end = std::max<int64_t>(std::min<int64_t>((mMin + mExtent + R - 1) / R, tiles),
                            first + 1);
  }
  void askFor(halide_buffer_t *x, int64_t R, int64_t depth) const {
    const int32_t extents[4] = {kFloatChunk, int32_t(R),
                                int32_t((depth + kFloatChunk - 1) / kFloatChunk),
                                int32_t(end - first)};
    for (int d = 0; d < 4; ++d) {
      x->dim[d].min = d == 3 ? int32_t(first) : 0;
      x->dim[d].extent = extents[d];
    }
  }
};

/// The microkernel (support/Microkernels.h's tfmc_uk_f32p_*), for one
/// instruction set.
template <class Vec>
int floatPanelProducts(halide_buffer_t *x, halide_buffer_t *w, int32_t depth,
                       int32_t rows, int32_t xRows, halide_buffer_t *out) {
  const int64_t nMin = out->dim[0].min, nExtent = out->dim[0].extent;
  const int64_t mMin = out->dim[1].min, mExtent = out->dim[1].extent;
  const int64_t panels = (int64_t(rows) + kFloatPanel - 1) / kFloatPanel;
  // What the outputs need: W's panels and x's rows that exist (a task past
  // N or M still names one, so that every region is valid).
  const int64_t pFirst = std::min<int64_t>(nMin / kFloatPanel, panels - 1);
  const int64_t pEnd = std::max<int64_t>(
      std::min<int64_t>((nMin + nExtent + kFloatPanel - 1) / kFloatPanel, panels),
      pFirst + 1);
  constexpr int64_t R = Vec::kRows;
  const PackedTiles tiles(R, mMin, mExtent, xRows);
  // Halide's bounds query: out's host is null.
  if (out->host == nullptr) {
    tiles.askFor(x, R, depth);
    w->dim[0].min = 0;
    w->dim[0].extent = kFloatPanel;
    w->dim[1].min = 0;
    w->dim[1].extent = depth;
    w->dim[2].min = int32_t(pFirst);
    w->dim[2].extent = int32_t(pEnd - pFirst);
    return 0;
  }
  // Halide's tasks are whole panels and whole tiles of rows of dense
  // buffers (LinearMicrokernel.cpp).
  if (nMin % kFloatPanel != 0 || mMin % R != 0 || x->dim[0].min != 0 ||
      x->dim[1].min != 0 || x->dim[2].min != 0 || x->dim[0].stride != 1 ||
      x->dim[1].stride != kFloatChunk || x->dim[2].stride != R * kFloatChunk ||
      w->dim[0].stride != 1 || w->dim[1].stride != kFloatPanel ||
      out->dim[0].stride != 1)
    return -1;
  const int64_t nLive = std::clamp<int64_t>(rows - nMin, 0, nExtent);
  const int64_t mLive = std::clamp<int64_t>(xRows - mMin, 0, mExtent);
  FloatArgs a;
  a.tileStride = x->dim[3].stride;
  a.x = reinterpret_cast<const float *>(x->host) +
        (mMin / R - x->dim[3].min) * a.tileStride;
  a.panelStride = w->dim[2].stride;
  a.w = reinterpret_cast<const float *>(w->host) - w->dim[0].min -
        w->dim[1].min * kFloatPanel +
        (nMin / kFloatPanel - w->dim[2].min) * a.panelStride;
  a.depth = depth;
  a.out = reinterpret_cast<float *>(out->host);
  a.outRowStride = out->dim[1].stride;
  if (nLive > 0 && mLive > 0)
    floatPanelRows<Vec>(a, nLive, mLive);
  // Outputs past N, rows past M: 0.
  for (int64_t m = 0; m < mExtent; ++m) {
    const int64_t from = m < mLive ? nLive : 0;
    std::fill(a.out + m * a.outRowStride + from,
              a.out + m * a.outRowStride + nExtent, 0.0f);
  }
  return 0;
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_FLOATPANELS_H
