//===- WidenedPanels.h - Narrow weights times many rows of f32 x -*- C++ -*-===//
//
// support/Microkernels.h's tfmc_uk_qkfp and tfmc_uk_q8fp microkernels: W
// in llama.cpp's K-quant super-blocks (Q4_K, Q5_K, Q6_K), or in tfmc's
// int8 blocks or int4 (Q4_0) blocks, as the file stores them, times many
// rows of f32 x (prefill and encoders with f32 activations, the default),
// written once over a vector policy (FloatPanels.h's): each file that
// includes it (WidenedPanelsAvx2.cpp, WidenedPanelsAvx512.cpp) compiles it
// with -ffp-contract=off and its instruction set (runtime/CMakeLists.txt).
// The f32 microkernel's register tiles over panels that this code widens
// (with AVX2 + F16C, eight rows at a time) from the blocks as it goes:
//
//   for each depth block of 256 steps of K (a K-quant's super-block column):
//     for each tile of outputs of the task (16 with AVX2, 32 with AVX-512):
//       widen each 16 rows into an f32 panel [256][16] (16 KiB: they stay
//       in L1), eight rows at a time transposed, each value as the Halide
//       forms and ggml compute it: K-quants f32(d · sc) · q − f32(dmin · m)
//       (Q6_K f32(d · sc) · (q − 32)), a multiply and then a subtraction,
//       never fused; int8 q · d, int4 (q − 8) · d, a block scale that is an
//       infinity or a NaN an infinity of its sign (Common.cpp's scaleFunc)
//       for each tile of R rows of x (packed, from L2):
//         the R x (16 or 32) tile over the panels, adding to out
//
// So every value of W is widened once per call, and the products are one
// f32 sum per output over k in order, by fused multiply-adds, as the f32
// microkernel's: only the order differs from the Halide forms' (which
// widen W into panels a group at a time). The last 16 outputs of a task
// that ends inside them accumulate in a scratch panel of out.
//
// Measured: the including files' headers.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_WIDENEDPANELS_H
#define TFMC_RUNTIME_UKERNELS_WIDENEDPANELS_H

#include "runtime/ukernels/FloatPanels.h"
#include "runtime/ukernels/IntegerProducts.h"
#include "runtime/ukernels/KQuants.h"
#include "runtime/ukernels/Scratch.h"

#include <algorithm>

namespace tfmc::runtime::ukernels {
namespace {


/// r[i] = column i of the 8 x 8 matrix whose rows are r[0 .. 7].
inline void transpose8(__m256 (&r)[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/// A super-block of zeros: the rows of a panel past N (every value 0).
alignas(32) constexpr uint8_t kZeroBlock[format::kQ6KBlockBytes] = {};

/// Rows [n, n + live) of W's super-block column `b` widened into `panel`
/// ([256][16]: value k of row n + j at 16k + j), each value as ggml's
/// dequantize_row_q*_K computes it: f32(d · sc) · q − f32(dmin · m) (a
/// multiply, then a subtraction: this file is compiled without
/// contraction), Q6_K f32(d · sc) · (q − 32). Rows past `live` read a
/// block of zeros. Eight rows at a time: their 8 values of each piece of
/// a group transposed into 8 stores of the panel.
template <int32_t Type>
void widenPanel(const uint8_t *w, int64_t wRowStride, int64_t b, int64_t live,
                float *panel) {
  constexpr int64_t B = kQuantBlockBytes(Type);
  constexpr bool kQ6 = Type == kTypeQ6K;
  for (int j0 = 0; j0 < kFloatPanel; j0 += 8) {
    const uint8_t *block[8];
    // f32(d · sc) by sub-block (Q6_K: 16 of 16 values), f32(dmin · m).
    alignas(32) float scale[8][16], minimum[8][8];
    for (int r = 0; r < 8; ++r) {
      block[r] = j0 + r < live ? w + (j0 + r) * wRowStride + b * B : kZeroBlock;
      if constexpr (kQ6) {
        q6kScales(block[r], scale[r]);
      } else {
        __m256 scales, mins;
        scalesAndMins(block[r], scales, mins);
        _mm256_store_ps(scale[r], scales);
        _mm256_store_ps(minimum[r], mins);
      }
    }
    eachGroup([&](auto group) {
      constexpr int G = decltype(group)::value;
      __m256i q[8];
      for (int r = 0; r < 8; ++r)
        q[r] = quants<Type, G>(block[r]);
      auto piece = [&](auto p) {
        constexpr int P = decltype(p)::value;
        __m256 v[8];
        for (int r = 0; r < 8; ++r) {
          const __m256 values = quantsAsFloat<Type, P>(q[r]);
          if constexpr (kQ6)
            v[r] = _mm256_mul_ps(_mm256_set1_ps(scale[r][2 * G + P / 2]), values);
          else
            v[r] = _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(scale[r][G]), values),
                                 _mm256_set1_ps(minimum[r][G]));
        }
        transpose8(v);
        float *to = panel + kFloatPanel * (32 * G + 8 * P) + j0;
        for (int i = 0; i < 8; ++i)
          _mm256_storeu_ps(to + kFloatPanel * i, v[i]);
      };
      piece(std::integral_constant<int, 0>{});
      piece(std::integral_constant<int, 1>{});
      piece(std::integral_constant<int, 2>{});
      piece(std::integral_constant<int, 3>{});
    });
  }
}

/// Rows [n, n + live) of int8 blocks of `group` values (a multiple of 8)
/// or, with `int4`, of Q4_0 blocks (support/WeightFormat.h), steps [k0, k0
/// + kc) widened into `panel` ([kc][16]: value k of row n + j at 16(k −
/// k0) + j): q · d and (q − 8) · d. Rows past `live` repeat the last live
/// one (a part panel's outputs past it are never kept); values past K, up
/// to a multiple of 8, are the block's padding (never read).
void widenBlockPanel(const uint8_t *w, int64_t wRowStride, int64_t k0,
                     int64_t kc, int64_t live, int64_t group, bool int4,
                     float *panel) {
  const int64_t values = int4 ? format::kInt4BlockValues : group;
  const int64_t blockBytes =
      int4 ? format::kInt4BlockBytes : format::int8BlockBytes(group);
  for (int j0 = 0; j0 < kFloatPanel; j0 += 8) {
    const uint8_t *row[8];
    for (int r = 0; r < 8; ++r)
      row[r] = w + std::min<int64_t>(j0 + r, live - 1) * wRowStride;
    for (int64_t k = k0; k < k0 + kc; k += 8) {
      const int64_t g = k / values, e = k % values;
      __m256 v[8];
      for (int r = 0; r < 8; ++r) {
        const uint8_t *block = row[r] + g * blockBytes;
        uint16_t bits;
        std::memcpy(&bits, block, 2);
        if ((bits & 0x7c00) == 0x7c00)
          bits &= 0xfc00; // an infinity or a NaN: an infinity of its sign
        const __m256 scale = _mm256_set1_ps(_cvtsh_ss(bits));
        const uint8_t *q = block + format::kBlockScaleBytes;
        __m256i integers;
        if (int4) {
          // Elements 0 .. 15 are the low nibbles, 16 .. 31 the high ones.
          __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(q + e % 16));
          if (e >= 16)
            bytes = _mm_srli_epi16(bytes, 4);
          bytes = _mm_and_si128(bytes, _mm_set1_epi8(0x0f));
          integers = _mm256_sub_epi32(_mm256_cvtepu8_epi32(bytes),
                                      _mm256_set1_epi32(format::kInt4Zero));
        } else {
          integers = _mm256_cvtepi8_epi32(
              _mm_loadl_epi64(reinterpret_cast<const __m128i *>(q + e)));
        }
        v[r] = _mm256_mul_ps(_mm256_cvtepi32_ps(integers), scale);
      }
      transpose8(v);
      float *to = panel + kFloatPanel * (k - k0) + j0;
      for (int i = 0; i < 8; ++i)
        _mm256_storeu_ps(to + kFloatPanel * i, v[i]);
    }
  }
}

/// The products of a task: for each depth block and each P = Vec::kVectors
/// · Vec::kLanes / 16 panels of outputs (AVX2 one, AVX-512 two), widen(n,
/// k0, kc, rows, panel) fills each panel of outputs [n, n + rows) and steps
/// [k0, k0 + kc), and the f32 tiles run over them.
template <class Vec, class Widen>
void panelProducts(const FloatArgs &base, int64_t live, int64_t mLive,
                   float *partial, Widen widen) {
  constexpr int perPanel = kFloatPanel / Vec::kLanes;
  constexpr int P = Vec::kVectors / perPanel;
  static_assert(P * perPanel == Vec::kVectors, "a tile is whole panels");
  constexpr int64_t chunkStride = Vec::kRows * kFloatChunk;
  constexpr int64_t panelFloats = Vec::kDepthBlock * kFloatPanel;
  // P x 16 KiB, reused by the thread's every call (off the stack, whose
  // size a Halide thread does not promise).
  thread_local Scratch panelMemory;
  panelMemory.reserve(size_t(P * panelFloats) * sizeof(float));
  float *panels = panelMemory.floats();
  for (int64_t k0 = 0; k0 < base.depth; k0 += Vec::kDepthBlock) {
    // The depth block as a value GCC cannot see (a constant one made it
    // unroll the tile's loops and warn about their never-run tails).
    int64_t kc = std::min<int64_t>(Vec::kDepthBlock, base.depth - k0);
    asm("" : "+r"(kc));
    FloatArgs a = base;
    a.x = base.x + k0 / kFloatChunk * chunkStride;
    a.panelStride = panelFloats;
    int64_t n = 0;
    // Whole tiles of P panels.
    for (; n + P * kFloatPanel <= live; n += P * kFloatPanel) {
      for (int p = 0; p < P; ++p)
        widen(n + p * kFloatPanel, k0, kc, kFloatPanel, panels + p * panelFloats);
      a.w = panels;
      a.out = base.out + n;
      forRowTiles<Vec::kRows>(mLive, [&](auto tileRows, int64_t m) {
        tile<Vec, decltype(tileRows)::value, Vec::kVectors>(a, 0, m, 0, kc, k0 == 0,
                                                            NextBlock{});
      });
    }
    // The panels left, one at a time: a whole one into out, the last part
    // of one into `partial` ([m][16]).
    for (; n < live; n += kFloatPanel) {
      const int64_t rows = std::min<int64_t>(kFloatPanel, live - n);
      widen(n, k0, kc, rows, panels);
      a.w = panels;
      if (rows == kFloatPanel) {
        a.out = base.out + n;
      } else {
        a.out = partial;
        a.outRowStride = kFloatPanel;
      }
      forRowTiles<Vec::kRows>(mLive, [&](auto tileRows, int64_t m) {
        tile<Vec, decltype(tileRows)::value, perPanel>(a, 0, m, 0, kc, k0 == 0,
                                                     NextBlock{});
      });
      a.outRowStride = base.outRowStride;
    }
  }
}

/// The convention both microkernels share: Halide's bounds query (x's
/// tiles of rows, W's rows of `rowBytes`), the buffers' checks, then
/// products(a, w, wRowStride, live, mLive, partial) for the task's first
/// row of W, the last part panel's outputs and zeros past N and M.
template <class Vec, class Products>
int widenedPanelCall(halide_buffer_t *x, halide_buffer_t *w, int64_t depth,
                     int64_t rows, int64_t xRows, int64_t rowBytes,
                     halide_buffer_t *out, Products products) {
  const int64_t nExtent = out->dim[0].extent;
  const int64_t mMin = out->dim[1].min, mExtent = out->dim[1].extent;
  const TaskRows task = taskRows(out, rows);
  constexpr int64_t R = Vec::kRows;
  // Halide's bounds query: out's host is null.
  if (out->host == nullptr) {
    PackedTiles(R, mMin, mExtent, xRows).askFor(x, R, depth);
    askForW(w, rowBytes, task.first, task.end);
    return 0;
  }
  // Whole tiles of rows of a dense packed x (LinearMicrokernel.cpp).
  if (mMin % R != 0 || x->dim[0].min != 0 || x->dim[1].min != 0 ||
      x->dim[2].min != 0 || x->dim[0].stride != 1 ||
      x->dim[1].stride != kFloatChunk || x->dim[2].stride != R * kFloatChunk ||
      out->dim[0].stride != 1)
    return -1;
  const int64_t mLive = std::clamp<int64_t>(xRows - mMin, 0, mExtent);
  FloatArgs a{};
  a.tileStride = x->dim[3].stride;
  a.x = reinterpret_cast<const float *>(x->host) +
        (mMin / R - x->dim[3].min) * a.tileStride;
  a.panelStride = 0; // one panel at a time
  a.depth = depth;
  a.out = reinterpret_cast<float *>(out->host);
  a.outRowStride = out->dim[1].stride;
  const int64_t live = task.live;
  if (live > 0 && mLive > 0) {
    thread_local Scratch partial;
    partial.reserve(size_t(mLive) * kFloatPanel * sizeof(float));
    products(a, rowOfW(w, out->dim[0].min), w->dim[1].stride, live, mLive,
             partial.floats());
    // The last panel's live outputs, from `partial`.
    const int64_t whole = live / kFloatPanel * kFloatPanel;
    if (whole < live)
      for (int64_t m = 0; m < mLive; ++m)
        std::copy(partial.floats() + m * kFloatPanel,
                  partial.floats() + m * kFloatPanel + (live - whole),
                  a.out + m * a.outRowStride + whole);
  }
  // Outputs past N, rows past M: 0.
  for (int64_t m = 0; m < mExtent; ++m) {
    const int64_t from = m < mLive && live > 0 ? live : 0;
    std::fill(a.out + m * a.outRowStride + from,
              a.out + m * a.outRowStride + nExtent, 0.0f);
  }
  return 0;
}

template <class Vec, int32_t Type>
void kQuantPanels(const FloatArgs &a, const uint8_t *w, int64_t wRowStride,
                  int64_t live, int64_t mLive, float *partial) {
  static_assert(Vec::kDepthBlock == kSuperBlockValues,
                "a depth block is one super-block column");
  panelProducts<Vec>(a, live, mLive, partial,
                [&](int64_t n, int64_t k0, int64_t, int64_t rows, float *panel) {
                  widenPanel<Type>(w + n * wRowStride, wRowStride,
                                   k0 / kSuperBlockValues, rows, panel);
                });
}

/// support/Microkernels.h's tfmc_uk_qkfp_* over Vec's tiles.
template <class Vec>
int kQuantFloatPanelProducts(halide_buffer_t *x, halide_buffer_t *w,
                             int32_t depth, int32_t rows, int32_t xRows,
                             int32_t type, halide_buffer_t *out) {
  const int64_t blockBytes = kQuantBlockBytes(type);
  if (blockBytes == 0 || depth <= 0 || depth % kSuperBlockValues != 0)
    return -1;
  const int64_t rowBytes = depth / kSuperBlockValues * blockBytes;
  return widenedPanelCall<Vec>(
      x, w, depth, rows, xRows, rowBytes, out,
      [&](const FloatArgs &a, const uint8_t *first, int64_t wRowStride,
          int64_t live, int64_t mLive, float *partial) {
        if (type == kTypeQ4K)
          kQuantPanels<Vec, kTypeQ4K>(a, first, wRowStride, live, mLive, partial);
        else if (type == kTypeQ5K)
          kQuantPanels<Vec, kTypeQ5K>(a, first, wRowStride, live, mLive, partial);
        else
          kQuantPanels<Vec, kTypeQ6K>(a, first, wRowStride, live, mLive, partial);
      });
}

/// support/Microkernels.h's tfmc_uk_q8fp_* over Vec's tiles.
template <class Vec>
int blockFloatPanelProducts(halide_buffer_t *x, halide_buffer_t *w,
                            int32_t depth, int32_t group, int32_t rows,
                            int32_t xRows, int32_t int4, halide_buffer_t *out) {
  if (depth <= 0 || (int4 == 0 && (group <= 0 || group % 8 != 0)))
    return -1;
  const int64_t values = int4 ? format::kInt4BlockValues : group;
  const int64_t rowBytes =
      format::blocksPerRow(depth, values) *
      (int4 ? format::kInt4BlockBytes : format::int8BlockBytes(group));
  return widenedPanelCall<Vec>(
      x, w, depth, rows, xRows, rowBytes, out,
      [&](const FloatArgs &a, const uint8_t *first, int64_t wRowStride,
          int64_t live, int64_t mLive, float *partial) {
        panelProducts<Vec>(a, live, mLive, partial,
                      [&](int64_t n, int64_t k0, int64_t kc, int64_t rowsLive,
                          float *panel) {
                        widenBlockPanel(first + n * wRowStride, wRowStride, k0,
                                        kc, rowsLive, group, int4 != 0, panel);
                      });
      });
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_WIDENEDPANELS_H
