//===- KQuantFloatAvx2.cpp - K-quant weights times f32 x, AVX2 -------------===//
//
// support/Microkernels.h's tfmc_uk_qkf microkernel: W in llama.cpp's
// K-quant super-blocks (Q4_K, Q5_K, Q6_K; support/WeightFormat.h) as the
// file stores them, times f32 x (f32 activations, the default), compiled
// with -mavx2 -mfma -mf16c (runtime/CMakeLists.txt). The Halide form
// widens each value with a dozen integer operations and reached 13-14 % of
// the read bandwidth in a decode step; this code unpacks a group's 32
// quants with a few vector operations (KQuants.h's quants, shared with the
// integer microkernel) and multiplies them as f32.
//
// Per 32-value group g (a Q4_K or Q5_K sub-block, half of a Q6_K quarter),
// row n of W and row m of x, with q the group's unsigned quants:
//   - Q4_K, Q5_K: f32(d · sc_g) · Σ x·q − f32(dmin · m_g) · Σ x, the first
//     sum by FMAs over the group's 32 products, then one FMA by the scale;
//     the second over x's group sums, computed once per call and row of x,
//     one FMA of 8 groups' minimums per super-block;
//   - Q6_K: f32(d · sc_t) · Σ_{k∈t} x·(q − 32) for each 16-value half t.
// So each value of W is ggml's dequantize_row_q*_K's (f32(d · sc) · q −
// f32(dmin · m)) in reals, and the f32 sums are taken in another order and
// grouping than the Halide form's (no f32 contract fixes them; the tests
// compare with 1e-5 of the largest logit).
//
// Calls of one row of x (decode) run tiles of 4 rows of W; more rows tiles
// of 2 rows of W by 4 of x. Later rows of W are prefetched as the integer
// microkernels do.
//
// Measured on this machine, an AVX2-only AMD EPYC (Zen 3, 2 cores, KVM), a
// Q4_K_M file of TinyLlama's widths (hidden 2048, intermediate 5632, 2
// layers, vocab 2048), `NAME bench --entry decode_step --seq 128 --threads
// 2`: see docs/gguf.md ("K-quant kernels") for the step against the Halide
// form's and against int8.
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/IntegerProducts.h"
#include "runtime/ukernels/KQuants.h"
#include "runtime/ukernels/Microkernels.h"
#include "runtime/ukernels/RowTiles.h"
#include "runtime/ukernels/Scratch.h"

#include <algorithm>

namespace tfmc::runtime::ukernels {
namespace {

struct FloatArgs {
  const float *x;     // x(k, m) at k + m · xRowStride (m from out's first row)
  int64_t xRowStride;
  const float *xSums; // Σ_{k∈g} x(k, m) at g + m · groups (Q4_K, Q5_K)
  const uint8_t *w;   // row n's super-blocks at n · wRowStride bytes
  int64_t wRowStride;
  int64_t superBlocks, groups;
  float *out;         // out(n, m) at n + m · outRowStride
  int64_t outRowStride;
};

constexpr int kDecodeOutputs = 4;
constexpr int kTileOutputs = 2;
constexpr int kTileRows = 4;

/// Outputs [n, n + R) by rows [m, m + C) of x, over all of K.
template <int32_t Type, int R, int C>
void tile(const FloatArgs &a, int64_t n, int64_t m) {
  constexpr bool kQ6 = Type == kTypeQ6K;
  constexpr int64_t B = kQuantBlockBytes(Type);
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      acc[r][c] = _mm256_setzero_ps();
  const float *x[C];
  for (int c = 0; c < C; ++c)
    x[c] = a.x + (m + c) * a.xRowStride;
  const int64_t ahead = rowsAhead(R, a.wRowStride) * a.wRowStride;
  for (int64_t b = 0; b < a.superBlocks; ++b) {
    const uint8_t *block[R];
    alignas(32) float scale[R][kQ6 ? 16 : kSuperBlockGroups];
    for (int r = 0; r < R; ++r) {
      block[r] = a.w + (n + r) * a.wRowStride + b * B;
      const char *next = reinterpret_cast<const char *>(block[r] + ahead);
      for (int64_t line = 0; line < B; line += 64)
        _mm_prefetch(next + line, _MM_HINT_T0);
      _mm_prefetch(next + B - 1, _MM_HINT_T0);
      if constexpr (kQ6) {
        q6kScales(block[r], scale[r]);
      } else {
        __m256 scales, mins;
        scalesAndMins(block[r], scales, mins);
        _mm256_store_ps(scale[r], scales);
        for (int c = 0; c < C; ++c)
          acc[r][c] = _mm256_fnmadd_ps(
              mins, _mm256_loadu_ps(a.xSums + (m + c) * a.groups + 8 * b),
              acc[r][c]);
      }
    }
    // Broadcast from memory (see KQuantProductsAvx2.cpp).
    asm("" : "+m"(scale));
    eachGroup([&](auto group) {
      constexpr int G = decltype(group)::value;
      __m256i q[R];
      for (int r = 0; r < R; ++r)
        q[r] = quants<Type, G>(block[r]);
      const int64_t k = (8 * b + G) * 32;
      for (int c = 0; c < C; ++c) {
        const __m256 x0 = _mm256_loadu_ps(x[c] + k),
                     x1 = _mm256_loadu_ps(x[c] + k + 8),
                     x2 = _mm256_loadu_ps(x[c] + k + 16),
                     x3 = _mm256_loadu_ps(x[c] + k + 24);
        for (int r = 0; r < R; ++r) {
          __m256 first = _mm256_mul_ps(x0, quantsAsFloat<Type, 0>(q[r]));
          first = _mm256_fmadd_ps(x1, quantsAsFloat<Type, 1>(q[r]), first);
          __m256 second = _mm256_mul_ps(x2, quantsAsFloat<Type, 2>(q[r]));
          second = _mm256_fmadd_ps(x3, quantsAsFloat<Type, 3>(q[r]), second);
          if constexpr (kQ6) {
            acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(scale[r][2 * G]), first,
                                        acc[r][c]);
            acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(scale[r][2 * G + 1]),
                                        second, acc[r][c]);
          } else {
            acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(scale[r][G]),
                                        _mm256_add_ps(first, second), acc[r][c]);
          }
        }
      }
    });
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      a.out[(n + r) + (m + c) * a.outRowStride] = sumLanes(acc[r][c]);
}

/// Σ x over each group of 32 of rows [0, mExtent) of x, dense.
void groupSums(const FloatArgs &a, int64_t mExtent, float *sums) {
  for (int64_t m = 0; m < mExtent; ++m)
    for (int64_t g = 0; g < a.groups; ++g) {
      const float *x = a.x + m * a.xRowStride + 32 * g;
      __m256 s = _mm256_add_ps(
          _mm256_add_ps(_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)),
          _mm256_add_ps(_mm256_loadu_ps(x + 16), _mm256_loadu_ps(x + 24)));
      sums[g + m * a.groups] = sumLanes(s);
    }
}

template <int32_t Type>
void products(const FloatArgs &a, int64_t live, int64_t mExtent) {
  if (mExtent == 1) {
    int64_t n = 0;
    for (; n + kDecodeOutputs <= live; n += kDecodeOutputs)
      tile<Type, kDecodeOutputs, 1>(a, n, 0);
    for (; n < live; ++n)
      tile<Type, 1, 1>(a, n, 0);
    return;
  }
  int64_t n = 0;
  for (; n + kTileOutputs <= live; n += kTileOutputs)
    forRowTiles<kTileRows>(mExtent, [&](auto c, int64_t m) {
      tile<Type, kTileOutputs, decltype(c)::value>(a, n, m);
    });
  for (; n < live; ++n)
    forRowTiles<kTileRows>(mExtent, [&](auto c, int64_t m) {
      tile<Type, 1, decltype(c)::value>(a, n, m);
    });
}

} // namespace

int kQuantFloatProductsAvx2(halide_buffer_t *x, halide_buffer_t *w,
                            int32_t depth, int32_t rows, int32_t type,
                            halide_buffer_t *out) {
  const int64_t blockBytes = kQuantBlockBytes(type);
  if (blockBytes == 0 || depth <= 0 || depth % kSuperBlockValues != 0)
    return -1;
  const int64_t superBlocks = depth / kSuperBlockValues;
  const int64_t nMin = out->dim[0].min, nExtent = out->dim[0].extent;
  const int64_t mMin = out->dim[1].min, mExtent = out->dim[1].extent;
  const TaskRows task = taskRows(out, rows);
  // A bounds query: out's host is null (x, an input of the pipeline, has
  // one even then).
  if (out->host == nullptr) {
    askForFloatRows(x, depth, mMin, mExtent);
    askForW(w, superBlocks * blockBytes, task.first, task.end);
    return 0;
  }
  FloatArgs a{};
  a.xRowStride = x->dim[1].stride;
  a.x = floatRow(x, mMin);
  a.wRowStride = w->dim[1].stride;
  a.w = rowOfW(w, nMin);
  a.superBlocks = superBlocks;
  a.groups = superBlocks * kSuperBlockGroups;
  a.outRowStride = out->dim[1].stride;
  a.out = reinterpret_cast<float *>(out->host);
  const int64_t live = task.live;
  if (live > 0 && mExtent > 0) {
    thread_local Scratch scratch;
    if (type != kTypeQ6K) {
      scratch.reserve(size_t(a.groups * mExtent) * sizeof(float));
      groupSums(a, mExtent, scratch.floats());
      a.xSums = scratch.floats();
    }
    if (type == kTypeQ4K)
      products<kTypeQ4K>(a, live, mExtent);
    else if (type == kTypeQ5K)
      products<kTypeQ5K>(a, live, mExtent);
    else
      products<kTypeQ6K>(a, live, mExtent);
  }
  zeroPastN(a.out, a.outRowStride, live, nExtent, mExtent);
  return 0;
}

} // namespace tfmc::runtime::ukernels
