//===- FloatRows.h - f32 products of a few rows of x over W in rows -*- C++ -*-===//
//
// support/Microkernels.h's tfmc_uk_f32r microkernel: a task's outputs
// out(n, m) = Σ_k x(k, m) · W(n, k) for the rows of a decode step (one per
// sequence), over an f32 W stored in rows ([N, K] row-major: a tied
// embedding that is also the output head, or any f32 weight the panel
// layout does not take). Written once over a vector policy `Vec` (its
// lanes, loads, FMA and lane sum; FloatVecAvx2.h, FloatVecAvx512.h); each
// file that includes this header compiles it for its own instruction set,
// so everything here has internal linkage.
//
// The tile: kOutputs rows of W by up to kTileRows rows of x, a vector
// accumulator each over all of K (each step loads one vector of every row
// of W and of x: 16 FMAs for 10 loads with 512-bit vectors), then each
// accumulator's lanes summed. Every row of x meets a tile's rows of W while
// they are in L1, so a call reads W from memory once whatever the batch;
// with 256-bit vectors (16 registers) a batch of 8 runs two tiles of 4
// rows over the same rows of W. One row of x (batch 1) runs tiles of
// kDecodeOutputs rows of W.
//
// W streams from memory, and in the Halide dot form of a batch of 8 its
// loads did not overlap the FMAs: GPT-2 small's tied 50257 x 768 head took
// 9.5 ms a step at batch 8 against 6.0 at batch 1 (Sapphire Rapids, 2
// threads). The hardware prefetchers do not run far enough ahead of a
// stream consumed this slowly, so each step prefetches the line kAhead
// bytes further along each row of W into L2 (prefetcht1; W's rows are
// contiguous, so that is a later tile's rows). Measured at batch 8 in a
// standalone loop: 10.4 ms without, 9.0 with prefetcht0 1 KiB ahead, 7.3
// 6 KiB ahead, 6.3 with prefetcht1 24 KiB ahead. In the program (GPT-2
// small's tied head over huge pages, Sapphire Rapids, 2 threads, `NAME
// bench --entry decode_step --seq 128`): batch 8 6.1-6.2 ms against the
// Halide dot form's 8.35-8.38, batch 1 4.7-5.0 against 5.31-5.32;
// docs/performance.md ("The tied head").
//
// Numbers: each output is an f32 sum of the products in another order
// than the Halide form's (lanes, then the lane sum, then the steps of K
// that a vector leaves over); no f32 contract fixes it. Outputs at or past
// N (`rows`) are 0.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_FLOATROWS_H
#define TFMC_RUNTIME_UKERNELS_FLOATROWS_H

#include "runtime/ukernels/IntegerProducts.h"
#include "runtime/ukernels/RowTiles.h"

#include <HalideRuntime.h>
#include <immintrin.h>

#include <cstdint>

namespace tfmc::runtime::ukernels {
namespace {

/// Rows of W a tile of several rows of x, and of one row of x.
constexpr int kRowTileOutputs = 2;
constexpr int kRowDecodeOutputs = 4;
/// How far ahead along W each step prefetches (bytes).
constexpr int64_t kRowAhead = 24 * 1024;

/// A call's operands as plain pointers and strides (floats).
struct FloatRowArgs {
  const float *x;     // x(k, m) at k + m · xRowStride (m from out's first row)
  int64_t xRowStride;
  const float *w;     // W(n, k) at k + n · wRowStride (n from out's first)
  int64_t wRowStride;
  int64_t depth;
  float *out;         // out(n, m) at n + m · outRowStride
  int64_t outRowStride;
};

/// Outputs [n, n + R) by rows [m, m + C) of x, over all of K.
template <class Vec, int R, int C>
void rowTile(const FloatRowArgs &a, int64_t n, int64_t m) {
  using V = typename Vec::V;
  constexpr int L = Vec::kLanes;
  V acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      acc[r][c] = Vec::zero();
  const float *w[R];
  for (int r = 0; r < R; ++r)
    w[r] = a.w + (n + r) * a.wRowStride;
  const float *x[C];
  for (int c = 0; c < C; ++c)
    x[c] = a.x + (m + c) * a.xRowStride;
  constexpr int64_t ahead = kRowAhead / int64_t(sizeof(float));
  const int64_t whole = a.depth / L * L;
  for (int64_t k = 0; k < whole; k += L) {
    V wv[R];
    for (int r = 0; r < R; ++r) {
      wv[r] = Vec::loadu(w[r] + k);
      if (k % 16 == 0) // one prefetch a 64-byte line
        _mm_prefetch(reinterpret_cast<const char *>(w[r] + k + ahead),
                     _MM_HINT_T1);
    }
    for (int c = 0; c < C; ++c) {
      const V xv = Vec::loadu(x[c] + k);
      for (int r = 0; r < R; ++r)
        acc[r][c] = Vec::fma(xv, wv[r], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      float sum = Vec::sum(acc[r][c]);
      for (int64_t k = whole; k < a.depth; ++k)
        sum += x[c][k] * w[r][k];
      a.out[(n + r) + (m + c) * a.outRowStride] = sum;
    }
}

/// Outputs [0, live) for rows [0, mExtent) of x.
template <class Vec>
void rowProducts(const FloatRowArgs &a, int64_t live, int64_t mExtent) {
  constexpr int kTileRows = Vec::kLanes >= 16 ? 8 : 4;
  int64_t n = 0;
  if (mExtent == 1) {
    for (; n + kRowDecodeOutputs <= live; n += kRowDecodeOutputs)
      rowTile<Vec, kRowDecodeOutputs, 1>(a, n, 0);
    for (; n < live; ++n)
      rowTile<Vec, 1, 1>(a, n, 0);
    return;
  }
  for (; n + kRowTileOutputs <= live; n += kRowTileOutputs)
    forRowTiles<kTileRows>(mExtent, [&](auto c, int64_t m) {
      rowTile<Vec, kRowTileOutputs, decltype(c)::value>(a, n, m);
    });
  for (; n < live; ++n)
    forRowTiles<kTileRows>(mExtent, [&](auto c, int64_t m) {
      rowTile<Vec, 1, decltype(c)::value>(a, n, m);
    });
}

/// The contract's entry point (support/Microkernels.h) over `Vec`.
template <class Vec>
int floatRowProducts(halide_buffer_t *x, halide_buffer_t *w, int32_t depth,
                     int32_t rows, halide_buffer_t *out) {
  if (depth <= 0 || rows <= 0)
    return -1;
  const int64_t nMin = out->dim[0].min, nExtent = out->dim[0].extent;
  const int64_t mMin = out->dim[1].min, mExtent = out->dim[1].extent;
  const TaskRows task = taskRows(out, rows);
  // A bounds query: out's host is null.
  if (out->host == nullptr) {
    askForFloatRows(x, depth, mMin, mExtent);
    askForFloatRows(w, depth, task.first, task.end - task.first);
    return 0;
  }
  FloatRowArgs a{};
  a.xRowStride = x->dim[1].stride;
  a.x = floatRow(x, mMin);
  a.wRowStride = w->dim[1].stride;
  a.w = floatRow(w, nMin);
  a.depth = depth;
  a.outRowStride = out->dim[1].stride;
  a.out = reinterpret_cast<float *>(out->host);
  if (task.live > 0 && mExtent > 0)
    rowProducts<Vec>(a, task.live, mExtent);
  zeroPastN(a.out, a.outRowStride, task.live, nExtent, mExtent);
  return 0;
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_FLOATROWS_H
