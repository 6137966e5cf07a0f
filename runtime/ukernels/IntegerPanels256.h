//===- IntegerPanels256.h - Block panels with 256-bit vectors -*- C++ -*-===//
//
// The microkernel over W in block panels (BlockPanels.h; the tfmc_uk_q8p_
// names) with AVX2's vpmaddubsw and vpmaddwd, for IntegerProductsAvx2.cpp
// (compiled with -mavx2 -mfma -mf16c): the x86-64-avx2 target's. A 64-byte
// step of a panel is two vectors of [8 outputs][4 values]; a tile is R
// rows of x by V such vectors, its R·V f32 sums and R·V group sums in
// registers:
//
//   - int4: the nibbles split in registers (low: values 4s .. 4s + 3 of
//     each output, high: 16 on), each multiplied by its broadcast of 4
//     levels of x (vpmaddubsw: pairs of at most 2 · 15 · 128, no
//     saturation), a group's 8 pair sums added in i16 (at most 30720),
//     then widened by one vpmaddwd by ones, less 8·Σq;
//   - int8: llama.cpp's Q8_0 product, |w| · (q with w's sign) (|q| <= 127:
//     pairs of at most 2 · 128 · 127), widened at every step.
//
// Then, per output and group, one f32 multiply-add by f32(d_x · d_w), as
// the 512-bit form (IntegerPanels.h) and support/Microkernels.h's contract.
//
// Measured on a 2-core AMD EPYC, Zen 3 (AVX2 only), against the rows'
// microkernel that the x86-64-avx2 target ran before (IntegerProductsAvx2.cpp,
// W in rows; the TinyLlama-shaped programs of `make bench`, `NAME bench`,
// interleaved): int4a8 prefill 128 900-924 against 2545-2560 ms (2
// threads), a decode step 29-31 against 54-55 ms (2 threads), 42-45
// against 80-84 (1 thread); int8a8 prefill 1278 against 2391 ms, a decode
// step 50 against 55 ms. The code alone (one thread, 2048 x 5632): int4
// 70 GMAC/s at 128 rows (vpmaddubsw-bound: 2 a cycle on Zen 3), 14.6 GB/s
// of W at one row (the thread's read bandwidth: 19); int8 51 GMAC/s and
// 19 GB/s. The tiles below were chosen there (int4 2 x 4 at 68-70 GMAC/s
// against 63-65 for 4 x 1 or 6 x 1; int8 4 x 2 at 52-54 against 47-50).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_INTEGERPANELS256_H
#define TFMC_RUNTIME_UKERNELS_INTEGERPANELS256_H

#include "runtime/ukernels/BlockPanels.h"
#include "runtime/ukernels/Scratch.h"

namespace tfmc::runtime::ukernels {
namespace {

/// The tiles, rows of x by vectors of 8 outputs (chosen on a Zen 3 among
/// 1-6 rows by 1-4 vectors; the header's figures): one row (a decode step)
/// by 4 vectors (int4 and int8 alike within noise against 2, 6 and 8);
/// more rows 2 x 4 (int4) and 4 x 2 (int8).
constexpr int kDecodeVectors = 4;
constexpr int kInt4TileRows = 2, kInt4TileVectors = 4;
constexpr int kInt8TileRows = 4, kInt8TileVectors = 2;

/// Bytes ahead of a group that a decode step's tile prefetches.
constexpr int64_t kPrefetchBytes = 4096;

/// The 8 f16 scales at `bytes`, widened (finiteOrInfinite).
inline __m256 widenEight(const uint8_t *bytes) {
  return _mm256_cvtph_ps(
      finiteOrInfinite(_mm_loadu_si128(reinterpret_cast<const __m128i *>(bytes))));
}

/// 4 levels of x in every 32-bit lane.
inline __m256i broadcastFour(const int8_t *x) {
  int32_t four;
  std::memcpy(&four, x, 4);
  return _mm256_set1_epi32(four);
}

/// Rows [m, m + R) of x by V vectors of outputs from the task's n0 (vector
/// v: outputs n0 + 8v .. n0 + 8v + 7, half v % 2 of a panel), the first
/// `live` of them stored.
template <int R, int V>
void panelTile(const IntegerArgs &a, const PanelArgs &w, const int32_t *offsets,
               int64_t m, int64_t n0, int64_t live) {
  __m256 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      acc[r][v] = _mm256_setzero_ps();
  // Vector v's panel and its half of each 64-byte step and of each
  // group's 16 scales.
  const uint8_t *vec[V];
  int half[V];
  for (int v = 0; v < V; ++v) {
    const int64_t q = n0 / 8 + v;
    half[v] = int(q % 2);
    vec[v] = w.w + (q / 2) * w.panelBytes + 32 * half[v];
  }
  const __m256i low = _mm256_set1_epi8(0x0f);
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i flip = _mm256_set1_epi8(char(0x80));
  for (int64_t g = 0; g < a.groups; ++g) {
    // The first tile of rows streams the panels: a few KiB ahead, as the
    // 512-bit form.
    if (m == 0)
      for (int v = 0; v < V; ++v) {
        if (v > 0 && half[v] == 1)
          continue; // the panel of vector v - 1
        const char *ahead = reinterpret_cast<const char *>(
            vec[v] + g * w.groupBytes + kPrefetchBytes);
        for (int64_t line = 0; line < w.groupBytes; line += 64)
          _mm_prefetch(ahead + line, _MM_HINT_T0);
        if (g % 2 == 0)
          _mm_prefetch(reinterpret_cast<const char *>(
                           vec[v] + w.scalesAt + g * 32 + kPrefetchBytes / 8),
                       _MM_HINT_T0);
      }
    const int8_t *x[R];
    for (int r = 0; r < R; ++r)
      x[r] = a.xq + g * a.xGroupStride + (m + r) * a.xRowStride;
    __m256i sums[R][V];
    if (a.int4) {
      for (int s = 0; s < 4; ++s) {
        __m256i lo[V], hi[V];
        for (int v = 0; v < V; ++v) {
          const __m256i bytes = _mm256_loadu_si256(
              reinterpret_cast<const __m256i *>(vec[v] + g * w.groupBytes + 64 * s));
          lo[v] = _mm256_and_si256(bytes, low);
          hi[v] = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low);
        }
        for (int r = 0; r < R; ++r) {
          const __m256i xlo = broadcastFour(x[r] + 4 * s);
          const __m256i xhi = broadcastFour(x[r] + 16 + 4 * s);
          for (int v = 0; v < V; ++v) {
            const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(lo[v], xlo),
                                                   _mm256_maddubs_epi16(hi[v], xhi));
            sums[r][v] = s == 0 ? pairs : _mm256_add_epi16(sums[r][v], pairs);
          }
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m256i offset = _mm256_set1_epi32(offsets[(m + r) * a.groups + g]);
        for (int v = 0; v < V; ++v)
          sums[r][v] = _mm256_sub_epi32(_mm256_madd_epi16(sums[r][v], ones), offset);
      }
    } else {
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v)
          sums[r][v] = _mm256_setzero_si256();
      for (int64_t s = 0; s < a.group / 4; ++s) {
        __m256i signs[V], magnitude[V];
        for (int v = 0; v < V; ++v) {
          signs[v] = _mm256_xor_si256(
              _mm256_loadu_si256(reinterpret_cast<const __m256i *>(
                  vec[v] + g * w.groupBytes + 64 * s)),
              flip);
          magnitude[v] = _mm256_abs_epi8(signs[v]);
        }
        for (int r = 0; r < R; ++r) {
          const __m256i xb = broadcastFour(x[r] + 4 * s);
          for (int v = 0; v < V; ++v)
            sums[r][v] = _mm256_add_epi32(
                sums[r][v],
                _mm256_madd_epi16(
                    _mm256_maddubs_epi16(magnitude[v], _mm256_sign_epi8(xb, signs[v])),
                    ones));
        }
      }
    }
    __m256 dw[V];
    for (int v = 0; v < V; ++v)
      dw[v] = widenEight(vec[v] - 32 * half[v] + w.scalesAt + g * 32 + 16 * half[v]);
    for (int r = 0; r < R; ++r) {
      const __m256 dx =
          _mm256_set1_ps(a.xScale[g * a.sGroupStride + (m + r) * a.sRowStride]);
      for (int v = 0; v < V; ++v)
        acc[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[r][v]),
                                    _mm256_mul_ps(dw[v], dx), acc[r][v]);
    }
  }
  for (int v = 0; v < V; ++v) {
    const int64_t held = std::clamp<int64_t>(live - 8 * v, 0, 8);
    if (held == 0)
      break;
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(held)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int r = 0; r < R; ++r) {
      float *out = a.out + n0 + 8 * v + (m + r) * a.outRowStride;
      if (held == 8)
        _mm256_storeu_ps(out, acc[r][v]);
      else
        _mm256_maskstore_ps(out, mask, acc[r][v]);
    }
  }
}

/// Every row of x by V vectors of outputs at a time, in tiles of
/// TileRows rows.
template <int TileRows, int V>
void panelTiles(const IntegerArgs &a, const PanelArgs &w, const int32_t *offsets,
               int64_t mExtent, int64_t live) {
  int64_t n0 = 0;
  for (; n0 + 8 * V <= live; n0 += 8 * V)
    forRowTiles<TileRows>(mExtent, [&](auto rows, int64_t m) {
      panelTile<decltype(rows)::value, V>(a, w, offsets, m, n0, live - n0);
    });
  // The last outputs, a vector at a time (a task that is not a whole
  // number of tiles' outputs).
  for (; n0 < live; n0 += 8)
    forRowTiles<TileRows>(mExtent, [&](auto rows, int64_t m) {
      panelTile<decltype(rows)::value, 1>(a, w, offsets, m, n0, live - n0);
    });
}

/// BlockPanels.h's form with 256-bit vectors (int8 needs no Σq: the sign
/// trick multiplies w itself).
struct Panels256 {
  // int8 by llama.cpp's sign trick: none.
  static constexpr bool offsets(bool int4) { return int4; }
  static void rows(const IntegerArgs &a, const PanelArgs &w,
                   const int32_t *offsets, int64_t mExtent, int64_t live) {
    if (mExtent == 1)
      return panelTiles<1, kDecodeVectors>(a, w, offsets, mExtent, live);
    if (a.int4)
      return panelTiles<kInt4TileRows, kInt4TileVectors>(a, w, offsets, mExtent, live);
    panelTiles<kInt8TileRows, kInt8TileVectors>(a, w, offsets, mExtent, live);
  }
};

/// W's rows [n0, n0 + count) (count <= 32, the rest repeating the last),
/// as stored in rows, into two block panels at `panels` (`panelBytes`
/// apart, BlockPanels.h's layout), 8 rows at a time: each 16 bytes of
/// their blocks' values transposed in registers into four steps of
/// [8 outputs][4 bytes] (int8: w + 128).
inline void packPanels(const IntegerArgs &a, int64_t n0, int64_t count,
                       uint8_t *panels, int64_t panelBytes) {
  const int64_t valueBytes = a.blockBytes - 2;
  const int64_t groupBytes = 16 * valueBytes, scalesAt = a.groups * groupBytes;
  const __m256i flip = _mm256_set1_epi8(a.int4 ? 0 : char(0x80));
  for (int64_t eight = 0; eight < 4; ++eight) {
    const uint8_t *rows[8];
    for (int i = 0; i < 8; ++i)
      rows[i] = a.w + (n0 + std::min<int64_t>(8 * eight + i, count - 1)) * a.wRowStride;
    uint8_t *panel = panels + (eight / 2) * panelBytes + 32 * (eight % 2);
    uint8_t *scales = panels + (eight / 2) * panelBytes + scalesAt + 16 * (eight % 2);
    for (int64_t g = 0; g < a.groups; ++g) {
      for (int i = 0; i < 8; ++i)
        std::memcpy(scales + g * 32 + 2 * i, rows[i] + g * a.blockBytes, 2);
      for (int64_t c = 0; c < valueBytes / 16; ++c) {
        const int64_t at = g * a.blockBytes + 2 + 16 * c;
        auto pair = [&](int i) {
          return _mm256_xor_si256(
              _mm256_inserti128_si256(
                  _mm256_castsi128_si256(_mm_loadu_si128(
                      reinterpret_cast<const __m128i *>(rows[i] + at))),
                  _mm_loadu_si128(reinterpret_cast<const __m128i *>(rows[i + 4] + at)),
                  1),
              flip);
        };
        // Rows i and i + 4 in a vector's halves; dwords d of rows 0 .. 3
        // (and 4 .. 7) gathered by two rounds of unpacking.
        const __m256i r04 = pair(0), r15 = pair(1), r26 = pair(2), r37 = pair(3);
        const __m256i lo01 = _mm256_unpacklo_epi32(r04, r15);
        const __m256i hi01 = _mm256_unpackhi_epi32(r04, r15);
        const __m256i lo23 = _mm256_unpacklo_epi32(r26, r37);
        const __m256i hi23 = _mm256_unpackhi_epi32(r26, r37);
        const __m256i step[4] = {
            _mm256_unpacklo_epi64(lo01, lo23), _mm256_unpackhi_epi64(lo01, lo23),
            _mm256_unpacklo_epi64(hi01, hi23), _mm256_unpackhi_epi64(hi01, hi23)};
        for (int s = 0; s < 4; ++s)
          _mm256_storeu_si256(reinterpret_cast<__m256i *>(panel + g * groupBytes +
                                                          (4 * c + s) * 64),
                              step[s]);
      }
    }
  }
}

/// Every row of x against outputs [0, live) of a W stored in rows: 32
/// outputs at a time repacked into block panels, then the panels' tiles.
inline void repackedPanelRows(const IntegerArgs &a, int64_t live, int64_t mExtent) {
  thread_local Scratch panels;
  PanelArgs w;
  w.panelBytes = 16 * a.groups * a.blockBytes;
  w.groupBytes = 16 * (a.blockBytes - 2);
  w.scalesAt = a.groups * w.groupBytes;
  panels.reserve(size_t(2 * w.panelBytes));
  w.w = panels.bytes();
  const int32_t *offsets = a.int4 ? groupOffsets(a, mExtent) : nullptr;
  for (int64_t n0 = 0; n0 < live; n0 += 32) {
    const int64_t count = std::min<int64_t>(32, live - n0);
    packPanels(a, n0, count, panels.bytes(), w.panelBytes);
    // The panels' outputs from 0, stored from the task's n0.
    IntegerArgs at = a;
    at.out = a.out + n0;
    Panels256::rows(at, w, offsets, mExtent, count);
  }
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_INTEGERPANELS256_H
