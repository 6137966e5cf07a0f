//===- IntegerPanels.h - Integer products of many rows of x -----*- C++ -*-===//
//
// IntegerProducts.h's form for many rows of x (prefill, encoders, batches
// of Isa::kPanelRows rows or more), with 512-bit vpdpbusd. The decode form
// reads each W vector once per row pair, unpacking it again for each; here
// the task's rows of W are repacked once per call, 32 outputs at a time,
// into a panel that vpdpbusd reads as it is, and every row of x runs over
// that panel:
//
//   - the panel: for each group and each 4 values of its depth, two vectors
//     of [16 outputs][4 values] as unsigned bytes w' (int4: the stored
//     nibble, w + 8; int8: w + 128), and the group's 32 d_w widened to f32
//     (Common.cpp's scaleFunc: an infinity or a NaN is an infinity of its
//     sign);
//   - a tile of R <= 6 rows of x by the panel's 32 outputs: per group, 2R
//     int32 sums started at -c·Σq (c = 8 or 128, Σq the row's group sum of
//     its levels, computed once per call), to which each step adds the
//     products of one broadcast of 4 levels of x with the panel's two
//     vectors; then, per output, one f32 multiply-add by f32(d_x · d_w)
//     into 2R f32 sums over the groups.
//
// The numbers are the contract's (support/Microkernels.h): exact int32
// group sums (Σ q·w' − c·Σq = Σ q·w), f32(d_x · d_w), and the groups added
// in order by one fused multiply-add each.
//
// Weights stored in block panels (support/WeightFormat.h) are read by the
// second half of this file (integerPanelProducts) at every row count.
//
// Measured (TinyLlama shape, `NAME bench`, 2-core Xeon with AVX512-VNNI,
// 2 threads; docs/performance.md, Kernels): a 128-token forward int4a8
// 1537-1585 ms with dequantised f32 panels, 446-472 ms with these; int8a8
// 1847 against 405-434 ms; a decode step of int4a8 in block panels 27.3-
// 28.5 ms against 38.8-39.4 ms for the rows' microkernel.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_INTEGERPANELS_H
#define TFMC_RUNTIME_UKERNELS_INTEGERPANELS_H

#include "runtime/ukernels/BlockPanels.h"
#include "runtime/ukernels/IntegerProducts.h"
#include "runtime/ukernels/Scratch.h"
#include "support/Microkernels.h"

#include <cstdlib>
#include <new>
#include <vector>

namespace tfmc::runtime::ukernels {
namespace {

constexpr int kPanelOutputs = format::kMicrokernelPanelOutputs;
static_assert(kPanelOutputs == 32, "two 16-lane vectors a panel step");
constexpr int kPanelStepBytes = 4 * kPanelOutputs;
constexpr int kPanelTileRows = 6;
/// Rows of x a tile over stored panels (storedPanelRows) takes: 8, so that
/// a batch of 8 (a decode step) streams each pair of panels from memory
/// once; its 16 f32 sums over the groups then live in memory, touched once
/// a group. TinyLlama-shaped decode step at batch 8 of a --max-batch 8
/// program, 2 threads, Sapphire Rapids, against 6 + 2 rows: int8a8
/// 67.4-67.5 -> 59.7-59.8 ms, int4a8 50.9-51.2 -> 46.6-49.4; with AMX off
/// (the VNNI form at every row count, as a CPU without AMX runs it) the
/// 128-token prefills the same within noise (TinyLlama int8a8 353-381 and
/// 366-370 ms, GPT-2 small int8a8 49.3-50.4 and 47.5-48.0).
constexpr int kStoredTileRows = 8;

/// 16 f16 scales widened (finiteOrInfinite).
inline __m512 widenHalves(__m256i bits) {
  return _mm512_cvtph_ps(finiteOrInfinite(bits));
}

/// Dwords [4c, 4c + 4) of 16 rows of bytes (rows[i] + offset), transposed:
/// out[s] holds dword 4c + s of row i in lane i.
inline void transpose16x4(const uint8_t *const *rows, int64_t offset,
                          __m512i (&out)[4]) {
  auto row = [&](int i) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(rows[i] + offset));
  };
  // (The lane indices are spelled out: an unoptimised build does not fold
  // a loop's index into the immediate vinserti32x4 needs.)
  __m512i quarter[4];
  for (int q = 0; q < 4; ++q) {
    __m512i z = _mm512_castsi128_si512(row(4 * q));
    z = _mm512_inserti32x4(z, row(4 * q + 1), 1);
    z = _mm512_inserti32x4(z, row(4 * q + 2), 2);
    quarter[q] = _mm512_inserti32x4(z, row(4 * q + 3), 3);
  }
  // Lanes 0 .. 7 from quarters 0 and 1, 8 .. 15 from 2 and 3: dword s of
  // each of their 8 rows (vpermt2d indexes both sources, 0 .. 31).
  for (int s = 0; s < 4; ++s) {
    const __m512i pick = _mm512_set_epi32(28 + s, 24 + s, 20 + s, 16 + s, 12 + s,
                                          8 + s, 4 + s, s, 28 + s, 24 + s,
                                          20 + s, 16 + s, 12 + s, 8 + s, 4 + s, s);
    out[s] = _mm512_mask_blend_epi32(
        __mmask16(0xff00), _mm512_permutex2var_epi32(quarter[0], pick, quarter[1]),
        _mm512_permutex2var_epi32(quarter[2], pick, quarter[3]));
  }
}

/// Outputs [n0, n0 + count) of the task, count <= 32, into `values` and
/// `scales` (the panel's other outputs repeat its last row, with d_w 0:
/// they are never stored). 16 rows at a time, 16 bytes of each block at a
/// time, transposed in registers.
inline void packPanel(const IntegerArgs &a, int64_t n0, int64_t count,
                      uint8_t *values, float *scales) {
  const int64_t steps = a.group / 4;
  const __m512i low = _mm512_set1_epi8(0x0f);
  const __m512i flip = _mm512_set1_epi8(char(0x80));
  for (int half = 0; half < 2; ++half) {
    // The half's outputs that hold rows of W (the others get d_w 0).
    const int64_t held = std::clamp<int64_t>(count - 16 * half, 0, 16);
    const __mmask16 live = __mmask16((1u << held) - 1);
    const uint8_t *rows[16];
    for (int i = 0; i < 16; ++i)
      rows[i] = a.w + (n0 + std::min<int64_t>(16 * half + i, count - 1)) * a.wRowStride;
    for (int64_t g = 0; g < a.groups; ++g) {
      // Each row's blocks a few lines ahead: 16 rows read side by side are
      // more streams than the hardware prefetcher follows (a decode step
      // of 8 rows read its W at a third of the bandwidth without this).
      for (int i = 0; i < 16; ++i)
        _mm_prefetch(reinterpret_cast<const char *>(rows[i] + (g + 8) * a.blockBytes),
                     _MM_HINT_T0);
      // The 16 rows' f16 d_w in one vector.
      alignas(32) uint16_t halves[16];
      for (int i = 0; i < 16; ++i)
        std::memcpy(&halves[i], rows[i] + g * a.blockBytes, 2);
      _mm512_storeu_ps(
          scales + g * kPanelOutputs + 16 * half,
          _mm512_maskz_mov_ps(live, widenHalves(_mm256_load_si256(
                                        reinterpret_cast<const __m256i *>(halves)))));
      uint8_t *group = values + g * steps * kPanelStepBytes + 64 * half;
      __m512i quads[4];
      if (a.int4) {
        // Byte j of a block holds values j (low nibble) and j + 16 (high).
        transpose16x4(rows, g * a.blockBytes + 2, quads);
        for (int s = 0; s < 4; ++s) {
          _mm512_storeu_si512(group + s * kPanelStepBytes,
                              _mm512_and_si512(quads[s], low));
          _mm512_storeu_si512(group + (4 + s) * kPanelStepBytes,
                              _mm512_and_si512(_mm512_srli_epi16(quads[s], 4), low));
        }
        continue;
      }
      for (int64_t c = 0; c < a.group / 16; ++c) {
        transpose16x4(rows, g * a.blockBytes + 2 + 16 * c, quads);
        for (int s = 0; s < 4; ++s)
          _mm512_storeu_si512(group + (4 * c + s) * kPanelStepBytes,
                              _mm512_xor_si512(quads[s], flip));
      }
    }
  }
}

/// Rows [m, m + R) of x by the panel's outputs; the first `live` of them
/// (from the task's output n0) are stored.
template <class Isa, int R>
void panelTile(const IntegerArgs &a, const uint8_t *values,
               const float *scales, const int32_t *offsets, int64_t m,
               int64_t n0, int64_t live) {
  const int64_t steps = a.group / 4;
  __m512 acc[R][2];
  for (int r = 0; r < R; ++r)
    acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t g = 0; g < a.groups; ++g) {
    __m512i sums[R][2];
    const int8_t *x[R];
    for (int r = 0; r < R; ++r) {
      sums[r][0] = sums[r][1] =
          _mm512_set1_epi32(-offsets[(m + r) * a.groups + g]);
      x[r] = a.xq + g * a.xGroupStride + (m + r) * a.xRowStride;
    }
    const uint8_t *step = values + g * steps * kPanelStepBytes;
    for (int64_t s = 0; s < steps; ++s, step += kPanelStepBytes) {
      const __m512i w0 = _mm512_loadu_si512(step);
      const __m512i w1 = _mm512_loadu_si512(step + 64);
      for (int r = 0; r < R; ++r) {
        int32_t four;
        std::memcpy(&four, x[r] + 4 * s, 4);
        const __m512i xb = _mm512_set1_epi32(four);
        sums[r][0] = Isa::dot512(sums[r][0], w0, xb);
        sums[r][1] = Isa::dot512(sums[r][1], w1, xb);
      }
    }
    const __m512 dw0 = _mm512_loadu_ps(scales + g * kPanelOutputs);
    const __m512 dw1 = _mm512_loadu_ps(scales + g * kPanelOutputs + 16);
    for (int r = 0; r < R; ++r) {
      const __m512 dx =
          _mm512_set1_ps(a.xScale[g * a.sGroupStride + (m + r) * a.sRowStride]);
      acc[r][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r][0]),
                                  _mm512_mul_ps(dw0, dx), acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r][1]),
                                  _mm512_mul_ps(dw1, dx), acc[r][1]);
    }
  }
  const int64_t first = std::min<int64_t>(live, 16);
  const __mmask16 low = __mmask16((1u << first) - 1);
  const __mmask16 high = __mmask16((1u << (std::min<int64_t>(live, 32) - first)) - 1);
  for (int r = 0; r < R; ++r) {
    float *out = a.out + n0 + (m + r) * a.outRowStride;
    _mm512_mask_storeu_ps(out, low, acc[r][0]);
    _mm512_mask_storeu_ps(out + 16, high, acc[r][1]);
  }
}

/// Every row of x against outputs [0, live) of the task, a panel at a time.
template <class Isa>
void panelRows(const IntegerArgs &a, int64_t live, int64_t mExtent) {
  const int32_t *offsets = groupOffsets(a, mExtent);
  // The panel, on whole cache lines: its 64-byte stores and loads split
  // none (a vector's 16-byte alignment cost a third of a packing's time).
  thread_local Scratch values;
  thread_local Scratch scales;
  values.reserve(size_t(a.groups * (a.group / 4) * kPanelStepBytes));
  scales.reserve(size_t(a.groups * kPanelOutputs) * sizeof(float));
  for (int64_t n0 = 0; n0 < live; n0 += kPanelOutputs) {
    const int64_t count = std::min<int64_t>(kPanelOutputs, live - n0);
    packPanel(a, n0, count, values.bytes(), scales.floats());
    forRowTiles<kPanelTileRows>(mExtent, [&](auto rows, int64_t m) {
      panelTile<Isa, decltype(rows)::value>(a, values.bytes(), scales.floats(),
                                            offsets, m, n0, count);
    });
  }
}

// --- Weights stored in block panels (support/WeightFormat.h) ---------------
//
// The same tile (of up to kStoredTileRows rows) over a W that the loader
// (or convert-weights) already laid out in panels of 16 rows: nothing is
// repacked per call. int8 panels hold
// q + 128 as the per-call panels do; int4 panels hold the stored nibble
// bytes, split in registers (a vector's low nibbles are 4 values of each
// row, its high nibbles the 4 values 16 on), so that a decode step reads
// 18 bytes per block as Q4_0 does. Any number of rows of x, 1 upwards.

/// The 16 f16 scales at `bytes`, widened (widenHalves).
inline __m512 widenPanelScales(const uint8_t *bytes) {
  return widenHalves(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(bytes)));
}

/// Bytes of a panel's values ahead of its group that storedPanelTile
/// prefetches (TinyLlama-shaped int4 decode step, 2 threads, Xeon: 32.3 ms
/// without; 4 KiB ahead 27.6-28.5 ms, 2 KiB 29.7-32.0, 1 KiB 27.8-33.7).
constexpr int64_t kPrefetchBytes = 4096;

/// Rows [m, m + R) of x by P panels (16 P outputs from the task's n0), the
/// first `live` of them stored.
template <class Isa, int R, int P>
void storedPanelTile(const IntegerArgs &a, const PanelArgs &w,
                     const int32_t *offsets, int64_t m, int64_t n0,
                     int64_t live) {
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p)
      acc[r][p] = _mm512_setzero_ps();
  const uint8_t *panel[P];
  for (int p = 0; p < P; ++p)
    panel[p] = w.w + (n0 / 16 + p) * w.panelBytes;
  const __m512i low = _mm512_set1_epi8(0x0f);
  for (int64_t g = 0; g < a.groups; ++g) {
    // A few groups ahead, each panel's values and scales (a decode step's
    // tiles stream W once, load-latency bound without); only in the first
    // tile of rows, after which the panels are in cache (prefetching them
    // again for every tile cost a 128-token prefill 5 %).
    for (int p = 0; p < P && m == 0; ++p) {
      const char *ahead = reinterpret_cast<const char *>(
          panel[p] + g * w.groupBytes + kPrefetchBytes);
      for (int64_t line = 0; line < w.groupBytes; line += 64)
        _mm_prefetch(ahead + line, _MM_HINT_T0);
      if (g % 2 == 0)
        _mm_prefetch(reinterpret_cast<const char *>(
                         panel[p] + w.scalesAt + g * 32 + kPrefetchBytes / 8),
                     _MM_HINT_T0);
    }
    __m512i sums[R][P];
    const int8_t *x[R];
    for (int r = 0; r < R; ++r) {
      for (int p = 0; p < P; ++p)
        sums[r][p] = _mm512_set1_epi32(-offsets[(m + r) * a.groups + g]);
      x[r] = a.xq + g * a.xGroupStride + (m + r) * a.xRowStride;
    }
    if (a.int4) {
      for (int s = 0; s < 4; ++s) {
        __m512i lo[P], hi[P];
        for (int p = 0; p < P; ++p) {
          const __m512i v = _mm512_loadu_si512(panel[p] + g * w.groupBytes + 64 * s);
          lo[p] = _mm512_and_si512(v, low);
          hi[p] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
        for (int r = 0; r < R; ++r) {
          int32_t first, second;
          std::memcpy(&first, x[r] + 4 * s, 4);
          std::memcpy(&second, x[r] + 16 + 4 * s, 4);
          const __m512i xlo = _mm512_set1_epi32(first);
          const __m512i xhi = _mm512_set1_epi32(second);
          for (int p = 0; p < P; ++p)
            sums[r][p] = Isa::dot512(Isa::dot512(sums[r][p], lo[p], xlo), hi[p], xhi);
        }
      }
    } else {
      const int64_t steps = a.group / 4;
      for (int64_t s = 0; s < steps; ++s) {
        __m512i v[P];
        for (int p = 0; p < P; ++p)
          v[p] = _mm512_loadu_si512(panel[p] + g * w.groupBytes + 64 * s);
        for (int r = 0; r < R; ++r) {
          int32_t four;
          std::memcpy(&four, x[r] + 4 * s, 4);
          const __m512i xb = _mm512_set1_epi32(four);
          for (int p = 0; p < P; ++p)
            sums[r][p] = Isa::dot512(sums[r][p], v[p], xb);
        }
      }
    }
    __m512 dw[P];
    for (int p = 0; p < P; ++p)
      dw[p] = widenPanelScales(panel[p] + w.scalesAt + g * 32);
    for (int r = 0; r < R; ++r) {
      const __m512 dx =
          _mm512_set1_ps(a.xScale[g * a.sGroupStride + (m + r) * a.sRowStride]);
      for (int p = 0; p < P; ++p)
        acc[r][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r][p]),
                                    _mm512_mul_ps(dw[p], dx), acc[r][p]);
    }
  }
  for (int p = 0; p < P; ++p) {
    const int64_t held = std::clamp<int64_t>(live - 16 * p, 0, 16);
    const __mmask16 mask = __mmask16((1u << held) - 1);
    for (int r = 0; r < R; ++r)
      _mm512_mask_storeu_ps(a.out + n0 + 16 * p + (m + r) * a.outRowStride, mask,
                            acc[r][p]);
  }
}

/// Rows of x in tiles of up to kPanelTileRows by P panels from n0.
template <class Isa, int P>
void storedPanelRows(const IntegerArgs &a, const PanelArgs &w,
                     const int32_t *offsets, int64_t mExtent, int64_t n0,
                     int64_t live) {
  forRowTiles<kStoredTileRows>(mExtent, [&](auto rows, int64_t m) {
    storedPanelTile<Isa, decltype(rows)::value, P>(a, w, offsets, m, n0, live);
  });
}

/// Rows of x from which an int4 call splits each pair of stored panels'
/// nibbles once, into the per-call panels of panelRows, rather than in
/// every tile of rows (a 128-token TinyLlama-shaped prefill: 5 % slower
/// splitting per tile).
constexpr int64_t kSplitOnceRows = 2 * kPanelTileRows;

/// Every row of x against outputs [0, live) (whole panels), an int4 W's
/// stored panels split two at a time into panelTile's layout.
template <class Isa>
void splitPanelRows(const IntegerArgs &a, const PanelArgs &w,
                    const int32_t *offsets, int64_t mExtent, int64_t live) {
  thread_local Scratch values;
  thread_local Scratch scales;
  values.reserve(size_t(a.groups * 8 * kPanelStepBytes));
  scales.reserve(size_t(a.groups * kPanelOutputs) * sizeof(float));
  const __m512i low = _mm512_set1_epi8(0x0f);
  for (int64_t n0 = 0; n0 < live; n0 += kPanelOutputs) {
    const int64_t count = std::min<int64_t>(kPanelOutputs, live - n0);
    // The second panel of a last, single one repeats the first (never
    // stored).
    const uint8_t *panel[2] = {w.w + (n0 / 16) * w.panelBytes,
                               w.w + ((n0 + (count > 16 ? 16 : 0)) / 16) * w.panelBytes};
    for (int64_t g = 0; g < a.groups; ++g) {
      uint8_t *out = values.bytes() + g * 8 * kPanelStepBytes;
      for (int h = 0; h < 2; ++h) {
        for (int s = 0; s < 4; ++s) {
          const __m512i v = _mm512_loadu_si512(panel[h] + g * w.groupBytes + 64 * s);
          _mm512_store_si512(out + s * kPanelStepBytes + 64 * h,
                             _mm512_and_si512(v, low));
          _mm512_store_si512(out + (4 + s) * kPanelStepBytes + 64 * h,
                             _mm512_and_si512(_mm512_srli_epi16(v, 4), low));
        }
        _mm512_store_ps(scales.floats() + g * kPanelOutputs + 16 * h,
                        widenPanelScales(panel[h] + w.scalesAt + g * 32));
      }
    }
    forRowTiles<kPanelTileRows>(mExtent, [&](auto rows, int64_t m) {
      panelTile<Isa, decltype(rows)::value>(a, values.bytes(), scales.floats(),
                                            offsets, m, n0, count);
    });
  }
}

/// The form over block panels (BlockPanels.h) with 512-bit vectors: an
/// int4 W's panels split once per call from kSplitOnceRows rows of x.
template <class Isa>
struct Panels512 {
  // vpdpbusd multiplies w + 128 as unsigned bytes: int8 too.
  static constexpr bool offsets(bool) { return true; }
  static void rows(const IntegerArgs &a, const PanelArgs &panel,
                   const int32_t *offsets, int64_t mExtent, int64_t live) {
    if (a.int4 && mExtent >= kSplitOnceRows)
      return splitPanelRows<Isa>(a, panel, offsets, mExtent, live);
    int64_t n0 = 0;
    for (; n0 + 32 <= live; n0 += 32)
      storedPanelRows<Isa, 2>(a, panel, offsets, mExtent, n0, live - n0);
    if (n0 < live)
      storedPanelRows<Isa, 1>(a, panel, offsets, mExtent, n0, live - n0);
  }
};

/// The microkernel over block panels (support/Microkernels.h's
/// tfmc_uk_q8p_*) with 512-bit vectors.
template <class Isa>
int integerPanelProducts(halide_buffer_t *xq, halide_buffer_t *xScale,
                         halide_buffer_t *w, int32_t depth, int32_t group,
                         int32_t rows, int32_t int4, halide_buffer_t *out) {
  return blockPanelProducts<Panels512<Isa>>(xq, xScale, w, depth, group, rows,
                                            int4, out);
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_INTEGERPANELS_H
