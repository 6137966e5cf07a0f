//===- KQuantProductsAvx2.cpp - K-quant weights times int8 x, AVX2 ---------===//
//
// support/Microkernels.h's tfmc_uk_qk microkernel: W in llama.cpp's
// K-quant super-blocks (Q4_K, Q5_K, Q6_K; KQuants.h) as the file stores
// them, times x quantised per row in groups of 32, with vpmaddubsw (W's
// unsigned quants, x's signed q) and vpmaddwd, compiled with -mavx2 -mfma
// -mf16c (runtime/CMakeLists.txt). Per call, x is copied dense into
// scratch with d_x and, for Q4_K and Q5_K, f32(d_x · Σq_x) per group (the
// min term's factor), whatever x's strides.
//
// Fewer than 4 rows of x (decode) run the rows form: a tile of R rows of W
// as stored by C rows of x, 8-lane f32 accumulators over all of K; per
// super-block and row of W the scales are decoded once (F16C), per group
// its 32 quants once for all C rows of x. Per group, row n and row m:
//   - Q4_K, Q5_K: Σ q_w·q_x (vpmaddubsw, then vpmaddwd by ones: pairs of
//     at most 2·31·128, no saturation) in 8 int32 lanes, converted, times
//     f32(d · sc_g) · d_x(g, m), broadcast; the min term, f32(dmin · m_g)
//     times f32(d_x · Σq_x), one multiply-add per super-block for all 8
//     groups;
//   - Q6_K: Σ (q_w - 32)·q_x exactly, vpmaddubsw's pairs of q_w (0 .. 63)
//     less those of 32·q_x (neither saturates: 2·63·128 < 2^15, and the
//     difference is a pair of (q_w - 32)·q_x), then vpmaddwd by the two
//     16-value sub-blocks' int8 scales (lanes 0 .. 3 the first), converted,
//     times f32(d · d_x). The integer scale is exact: f32(d · sc_t) is
//     exact (11 by 8 bits), so f32(d · sc_t) · Σ is d · (sc_t · Σ) in reals.
// Later rows of W are prefetched, as IntegerProducts.h does (without it
// half the bandwidth below). From 4 rows of x, the panel form (below).
//
// Measured on this machine, an AVX2-only AMD EPYC (Zen 3, 2 cores under
// KVM; one thread reads 23 GB/s with a plain AVX2 loop), the code alone on
// one thread, a 2048 x 5632 weight (K 2048, N 5632), means of 5 runs (best
// in brackets), against the Q4_0 rows microkernel (integerProductsAvx2
// with int4 = 1: IntegerPanels256.h's panels from 4 rows) on the same shape:
//   - one row of x, 8 weights cycled (W from memory), GB/s of W: Q4_K 14.4
//     (15.9), Q5_K 14.7 (16.3), Q6_K 14.7 (15.4), Q4_0 8.6; one weight (6.5
//     MB of Q4_K, from L3): Q4_K 17.5, Q5_K 17.5, Q6_K 17.8, Q4_0 9.2;
//   - 128 rows of x, GMAC/s: Q4_K 94 (97), Q5_K 74 (76), Q6_K 68 (69), Q4_0
//     68 (70). The rows form alone reached Q4_K 36-43, Q5_K 35-38, Q6_K
//     31-33.
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/IntegerProducts.h"
#include "runtime/ukernels/KQuants.h"
#include "runtime/ukernels/Microkernels.h"
#include "runtime/ukernels/RowTiles.h"
#include "runtime/ukernels/Scratch.h"

#include <utility>

namespace tfmc::runtime::ukernels {
namespace {

/// A call's arguments: IntegerArgs's x, out and W (argumentsOf), and x's
/// scales and scaled sums in scratch.
struct KQuantArgs {
  IntegerArgs a;
  const float *dx;     // d_x(g, m) at g + m · groups (m from out's first row)
  const float *dxSums; // f32(d_x(g, m) · Σ_k q_x(k, g, m)), likewise (Q4_K, Q5_K)
  const int8_t *x;     // x_q(k, m) at k + m · K: dense, whatever x_q's strides
  int64_t superBlocks;
};

/// The rows form's tiles, rows of W by rows of x: one row of x (decode)
/// by kDecodeOutputs, chosen on the Zen 3 among 2, 3, 4, 6 and 8 (the
/// header's shape, W from L3, means of 5: Q4_K 4 at 17.5 GB/s against 16.0
/// for 2; Q5_K 3 17.6 against 16.6 for 4; Q6_K 2 17.7 against 16.4 for 4,
/// and streaming 15.2 against 12.5); 2 or 3 rows of x by kTileOutputs.
template <int32_t Type>
constexpr int kDecodeOutputs = Type == kTypeQ4K ? 4 : Type == kTypeQ5K ? 3 : 2;
constexpr int kTileOutputs = 2;
/// Calls of this many rows of x or more run the panel form (the header's
/// shape on the Zen 3, GMAC/s, panels against rows: 4 rows Q4_K 54
/// against 37, Q5_K 42 against 33, Q6_K 33 against 29; 3 rows 39 against
/// 41, 35 against 38, 25 against 31).
constexpr int kPanelRows = 4;
/// The panel form's tile: 4 rows of x by 2 vectors of 8 outputs (Q5_K: 1,
/// whose two i16 runs a group need more registers), the outputs repacked
/// at a time. Chosen on the Zen 3 among 1-6 rows by 1-4 vectors (256
/// outputs by 128 rows in cache, the best of 3 runs, ns per group, output
/// and row): Q4_K 4 x 2 0.33 against 0.35 for 3 x 3, 0.38 for 2 x 4; Q5_K
/// 4 x 1 0.41 against 0.44-0.46 for 3 x 2 and 4 x 2; Q6_K 4 x 2, 3 x 2 and
/// 3 x 3 0.43, 2 x 4 0.50.
constexpr int kPanelTileRows = 4;
template <int32_t Type>
constexpr int kPanelTileVectors = Type == kTypeQ5K ? 1 : 2;

template <int32_t Type>
constexpr int64_t kBlockBytes = kQuantBlockBytes(Type);

/// Q6_K's 16 int8 scales as i16 with the low (`pairs` 0x00) or high (0x11)
/// eight in both 128-bit halves; group G's vpmaddwd operand is then one
/// vpshufb away (q6Scales).
inline __m256i q6ScaleHalf(const uint8_t *block, int pairs) {
  const __m256i all = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + kQ6Scales)));
  return pairs == 0 ? _mm256_permute2x128_si256(all, all, 0x00)
                    : _mm256_permute2x128_si256(all, all, 0x11);
}

/// Group G's sub-block scales, sc_2G in the low 8 i16 lanes and sc_2G+1 in
/// the high 8, from q6ScaleHalf(G < 4 ? 0x00 : 0x11).
template <int G> inline __m256i q6Scales(__m256i half) {
  constexpr int j = G % 4; // the i16 pair 2j, 2j + 1 of the half
  const __m128i first = _mm_set1_epi16(short((4 * j + 1) << 8 | 4 * j));
  const __m128i second = _mm_set1_epi16(short((4 * j + 3) << 8 | (4 * j + 2)));
  return _mm256_shuffle_epi8(half, _mm256_set_m128i(second, first));
}

/// Outputs [n, n + R) by rows [m, m + C) of x, over all of K.
template <int32_t Type, int R, int C>
void tile(const KQuantArgs &k, int64_t n, int64_t m) {
  constexpr bool kQ6 = Type == kTypeQ6K;
  constexpr int64_t B = kBlockBytes<Type>;
  const IntegerArgs &a = k.a;
  __m256 acc[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      acc[r][c] = _mm256_setzero_ps();
  const uint8_t *rows[R];
  for (int r = 0; r < R; ++r)
    rows[r] = a.w + (n + r) * a.wRowStride;
  const int8_t *x[C];
  const float *dx[C], *dxSums[C];
  for (int c = 0; c < C; ++c) {
    x[c] = k.x + (m + c) * a.groups * 32;
    dx[c] = k.dx + (m + c) * a.groups;
    dxSums[c] = k.dxSums + (m + c) * a.groups;
  }
  // A later tile's rows at this super-block (rowsAhead: the same distance
  // as the Q4_0 rows code's), every line of it.
  const int64_t ahead = rowsAhead(R, a.wRowStride) * a.wRowStride;
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i thirtyTwo = _mm256_set1_epi8(32);
  for (int64_t b = 0; b < k.superBlocks; ++b) {
    const uint8_t *block[R];
    for (int r = 0; r < R; ++r) {
      block[r] = rows[r] + b * B;
      const char *next = reinterpret_cast<const char *>(block[r] + ahead);
      for (int64_t line = 0; line < B; line += 64)
        _mm_prefetch(next + line, _MM_HINT_T0);
      _mm_prefetch(next + B - 1, _MM_HINT_T0);
    }
    // Each group's f32 factor, per row of W and of x: f32(d · sc_g) · d_x
    // (Q6_K: d · d_x), broadcast per group from here.
    alignas(32) float factor[R][C][kSuperBlockGroups];
    __m256i q6Half[R][2];
    for (int r = 0; r < R; ++r) {
      __m256 scales, mins;
      if constexpr (kQ6) {
        uint16_t d;
        std::memcpy(&d, block[r] + kQ6Scale, 2);
        scales = _mm256_set1_ps(_cvtsh_ss(d));
        q6Half[r][0] = q6ScaleHalf(block[r], 0x00);
        q6Half[r][1] = q6ScaleHalf(block[r], 0x11);
      } else {
        scalesAndMins(block[r], scales, mins);
      }
      for (int c = 0; c < C; ++c) {
        _mm256_store_ps(factor[r][c],
                        _mm256_mul_ps(scales, _mm256_loadu_ps(dx[c] + 8 * b)));
        if constexpr (!kQ6)
          acc[r][c] = _mm256_fnmadd_ps(mins, _mm256_loadu_ps(dxSums[c] + 8 * b),
                                       acc[r][c]);
      }
    }
    // Broadcast from memory (a load): left to itself, GCC keeps the
    // factors in registers and broadcasts each with two shuffles.
    asm("" : "+m"(factor));
    eachGroup([&](auto group) {
      constexpr int G = decltype(group)::value;
      __m256i q[R], scale16[R];
      for (int r = 0; r < R; ++r) {
        q[r] = quants<Type, G>(block[r]);
        if constexpr (kQ6)
          scale16[r] = q6Scales<G>(q6Half[r][G / 4]);
      }
      for (int c = 0; c < C; ++c) {
        const __m256i xv = load256(x[c] + 256 * b + 32 * G);
        [[maybe_unused]] __m256i offset;
        if constexpr (kQ6)
          offset = _mm256_maddubs_epi16(thirtyTwo, xv);
        for (int r = 0; r < R; ++r) {
          const __m256i pairs = _mm256_maddubs_epi16(q[r], xv);
          __m256i sums;
          if constexpr (kQ6)
            sums = _mm256_madd_epi16(_mm256_sub_epi16(pairs, offset), scale16[r]);
          else
            sums = _mm256_madd_epi16(pairs, ones);
          acc[r][c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums),
                                      _mm256_set1_ps(factor[r][c][G]),
                                      acc[r][c]);
        }
      }
    });
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c)
      a.out[(n + r) + (m + c) * a.outRowStride] = sumLanes(acc[r][c]);
}

// --- The panel form (from kPanelRows rows of x) ---------------------------
//
// The rows form's tile reduces each group's 8 lanes to one output, so every
// group costs a conversion, a broadcast and a multiply-add per output and
// row of x. From 4 rows of x a call instead repacks 8 rows of W at a time
// into records whose vectors hold one output per 32-bit lane, as the Q4_0
// block panels do (IntegerPanels256.h): a super-block's record is, per
// group g and step s, [8 outputs][values 4s .. 4s + 3 of group g] as u8
// (Q6_K: q - 32 as i8), then its scales by output. A tile multiplies each
// step by a broadcast of 4 values of x, adds steps in i16 and widens once
// per group; a group then costs one conversion and multiply-add per 8
// outputs.
//   - Q4_K: 8 steps in i16 (at most 8 · 2 · 15 · 128 = 30720);
//   - Q5_K: 4 steps at a time (4 · 2 · 31 · 128 = 31744);
//   - Q6_K: x + 128 (u8) as the unsigned operand and q - 32 (i8) as the
//     signed (pairs of at most 2 · 255 · 32; two steps 32640), two steps
//     at a time widened by vpmaddwd with the sub-block's scale in both i16
//     of each lane, less the record's 128 · Σ_t sc_t · Σ(q - 32) per group:
//     exactly Σ_t sc_t · Σ q_x · (q - 32) (every partial sum below 2^26).
// The records of 8 · kPanelTileVectors outputs are packed once per call
// (W is read once) and every row of x runs over them from cache.

/// A record's bytes: the quants, then the scales (Q4_K, Q5_K: PanelScales;
/// Q6_K: PanelScalesQ6).
constexpr int64_t kRecordQuants = 2048;
constexpr int64_t kRecordBytes = kRecordQuants + 1024;

struct PanelScales {
  float scales[kSuperBlockGroups][8]; // f32(d · sc_g) by output
  float mins[kSuperBlockGroups][8];   // f32(dmin · m_g)
};
struct PanelScalesQ6 {
  int16_t scales[16][16];                  // sc_t, twice per output
  float d[8];                              // d by output
  int32_t corrections[kSuperBlockGroups][8]; // 128 · Σ_t sc_t · Σ (q - 32)
};
static_assert(sizeof(PanelScalesQ6) <= kRecordBytes - kRecordQuants, "record");

/// Dword s of each of 8 vectors (rows) into vector s, in place.
inline void transpose8x8(__m256i (&v)[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(v[i], v[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(v[i], v[i + 1]);
  }
  for (int i = 0; i < 8; i += 4)
    for (int j = 0; j < 2; ++j) {
      u[i + j] = _mm256_unpacklo_epi64(t[i + j], t[i + j + 2]);
      u[i + j + 2] = _mm256_unpackhi_epi64(t[i + j], t[i + j + 2]);
    }
  // u[i] (i < 4): dwords {i', i' + 4} of rows 0 .. 3, with i' = 0, 2, 1, 3.
  const int order[4] = {0, 2, 1, 3};
  for (int i = 0; i < 4; ++i) {
    v[order[i]] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
    v[order[i] + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
  }
}

/// Super-block b of W's rows `rows` (8) as a record at `record`.
template <int32_t Type>
void packRecord(const uint8_t *const *rows, int64_t b, uint8_t *record) {
  constexpr int64_t B = kBlockBytes<Type>;
  const uint8_t *block[8];
  for (int i = 0; i < 8; ++i)
    block[i] = rows[i] + b * B;
  auto *q6 = reinterpret_cast<PanelScalesQ6 *>(record + kRecordQuants);
  if constexpr (Type == kTypeQ6K) {
    // Each row's 16 scales as i16, each twice in a dword (unpacking with
    // itself: dwords t = 0 .. 3 | 8 .. 11, and 4 .. 7 | 12 .. 15), then
    // transposed to [t][output].
    __m256i low[8], high[8];
    uint16_t d[8];
    for (int i = 0; i < 8; ++i) {
      const __m256i sc = _mm256_cvtepi8_epi16(
          _mm_loadu_si128(reinterpret_cast<const __m128i *>(block[i] + kQ6Scales)));
      low[i] = _mm256_unpacklo_epi16(sc, sc);
      high[i] = _mm256_unpackhi_epi16(sc, sc);
      std::memcpy(&d[i], block[i] + kQ6Scale, 2);
    }
    transpose8x8(low);
    transpose8x8(high);
    for (int s = 0; s < 8; ++s) {
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(q6->scales[s < 4 ? s : s + 4]),
                          low[s]);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(q6->scales[s < 4 ? s + 4 : s + 8]),
                          high[s]);
    }
    _mm256_storeu_ps(q6->d, _mm256_cvtph_ps(_mm_loadu_si128(
                                reinterpret_cast<const __m128i *>(d))));
  } else {
    __m256i scales[8], mins[8];
    for (int i = 0; i < 8; ++i) {
      __m256 sc, m;
      scalesAndMins(block[i], sc, m);
      scales[i] = _mm256_castps_si256(sc);
      mins[i] = _mm256_castps_si256(m);
    }
    transpose8x8(scales);
    transpose8x8(mins);
    auto *out = reinterpret_cast<PanelScales *>(record + kRecordQuants);
    for (int g = 0; g < kSuperBlockGroups; ++g) {
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out->scales[g]), scales[g]);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out->mins[g]), mins[g]);
    }
  }
  eachGroup([&](auto group) {
    constexpr int G = decltype(group)::value;
    __m256i v[8];
    for (int i = 0; i < 8; ++i) {
      v[i] = quants<Type, G>(block[i]);
      if constexpr (Type == kTypeQ6K)
        v[i] = _mm256_sub_epi8(v[i], _mm256_set1_epi8(32));
    }
    transpose8x8(v);
    for (int s = 0; s < 8; ++s)
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(record + 256 * G + 32 * s), v[s]);
    if constexpr (Type == kTypeQ6K) {
      // 128 · Σ_t sc_t · Σ (q - 32) by output: each sub-block's 4 steps
      // summed in i16 (at most 16 · 32), times its scales.
      const __m256i ones = _mm256_set1_epi8(1);
      __m256i total = _mm256_setzero_si256();
      for (int t = 0; t < 2; ++t) {
        __m256i sums = _mm256_maddubs_epi16(ones, v[4 * t]);
        for (int s = 4 * t + 1; s < 4 * t + 4; ++s)
          sums = _mm256_add_epi16(sums, _mm256_maddubs_epi16(ones, v[s]));
        total = _mm256_add_epi32(
            total, _mm256_madd_epi16(sums, load256(q6->scales[2 * G + t])));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(q6->corrections[G]),
                          _mm256_slli_epi32(total, 7));
    }
  });
}

/// 4 values of x in every 32-bit lane.
inline __m256i broadcastFour(const int8_t *x) {
  int32_t four;
  std::memcpy(&four, x, 4);
  return _mm256_set1_epi32(four);
}

/// Rows [m, m + R) of x by V vectors of records (vector v's at records +
/// v · superBlocks · kRecordBytes), outputs n0 + 8v .. n0 + 8v + 7 of
/// which the first `held` from n0 are stored.
template <int32_t Type, int R, int V>
void panelTile(const KQuantArgs &k, const uint8_t *records, int64_t m,
               int64_t n0, int64_t held) {
  constexpr bool kQ6 = Type == kTypeQ6K;
  const IntegerArgs &a = k.a;
  __m256 acc[R][V];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v)
      acc[r][v] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i flip = _mm256_set1_epi8(char(0x80));
  for (int64_t b = 0; b < k.superBlocks; ++b) {
    const uint8_t *record[V];
    for (int v = 0; v < V; ++v)
      record[v] = records + (v * k.superBlocks + b) * kRecordBytes;
    const auto scales = [&](int v) {
      return reinterpret_cast<const PanelScales *>(record[v] + kRecordQuants);
    };
    const auto scalesQ6 = [&](int v) {
      return reinterpret_cast<const PanelScalesQ6 *>(record[v] + kRecordQuants);
    };
    for (int g = 0; g < kSuperBlockGroups; ++g) {
      const int64_t group = 8 * b + g;
      const int8_t *x[R];
      for (int r = 0; r < R; ++r)
        x[r] = k.x + ((m + r) * a.groups + group) * 32;
      auto step = [&](int v, int s) { return load256(record[v] + 256 * g + 32 * s); };
      __m256i sums[R][V];
      if constexpr (kQ6) {
        // Steps 2h and 2h + 1 (sub-block 2g + h / 2) in i16, then widened
        // times the sub-block's scale.
        for (int h = 0; h < 4; ++h) {
          __m256i w0[V], w1[V];
          for (int v = 0; v < V; ++v) {
            w0[v] = step(v, 2 * h);
            w1[v] = step(v, 2 * h + 1);
          }
          for (int r = 0; r < R; ++r) {
            const __m256i x0 = _mm256_xor_si256(broadcastFour(x[r] + 8 * h), flip);
            const __m256i x1 = _mm256_xor_si256(broadcastFour(x[r] + 8 * h + 4), flip);
            for (int v = 0; v < V; ++v) {
              const __m256i pairs = _mm256_add_epi16(_mm256_maddubs_epi16(x0, w0[v]),
                                                     _mm256_maddubs_epi16(x1, w1[v]));
              const __m256i scaled = _mm256_madd_epi16(
                  pairs, load256(scalesQ6(v)->scales[2 * g + h / 2]));
              sums[r][v] = h == 0 ? scaled : _mm256_add_epi32(sums[r][v], scaled);
            }
          }
        }
        for (int v = 0; v < V; ++v) {
          const __m256i correction = load256(scalesQ6(v)->corrections[g]);
          for (int r = 0; r < R; ++r)
            sums[r][v] = _mm256_sub_epi32(sums[r][v], correction);
        }
      } else {
        // Q4_K: one run of 8 steps in i16; Q5_K: two of 4.
        constexpr int kRun = Type == kTypeQ4K ? 8 : 4;
        for (int run = 0; run < 8; run += kRun) {
          __m256i narrow[R][V];
          for (int s = run; s < run + kRun; ++s) {
            __m256i w[V];
            for (int v = 0; v < V; ++v)
              w[v] = step(v, s);
            for (int r = 0; r < R; ++r) {
              const __m256i xb = broadcastFour(x[r] + 4 * s);
              for (int v = 0; v < V; ++v) {
                const __m256i pairs = _mm256_maddubs_epi16(w[v], xb);
                narrow[r][v] = s == run ? pairs : _mm256_add_epi16(narrow[r][v], pairs);
              }
            }
          }
          for (int r = 0; r < R; ++r)
            for (int v = 0; v < V; ++v) {
              const __m256i wide = _mm256_madd_epi16(narrow[r][v], ones);
              sums[r][v] = run == 0 ? wide : _mm256_add_epi32(sums[r][v], wide);
            }
        }
      }
      for (int r = 0; r < R; ++r) {
        const __m256 dx = _mm256_set1_ps(k.dx[(m + r) * a.groups + group]);
        for (int v = 0; v < V; ++v) {
          const __m256 factor = _mm256_mul_ps(
              _mm256_loadu_ps(kQ6 ? scalesQ6(v)->d : scales(v)->scales[g]), dx);
          acc[r][v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[r][v]), factor, acc[r][v]);
        }
        if constexpr (!kQ6) {
          const __m256 dxSum = _mm256_set1_ps(k.dxSums[(m + r) * a.groups + group]);
          for (int v = 0; v < V; ++v)
            acc[r][v] = _mm256_fnmadd_ps(_mm256_loadu_ps(scales(v)->mins[g]), dxSum,
                                         acc[r][v]);
        }
      }
    }
  }
  for (int v = 0; v < V; ++v) {
    const int64_t count = std::clamp<int64_t>(held - 8 * v, 0, 8);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(int32_t(count)),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int r = 0; r < R; ++r) {
      float *out = a.out + n0 + 8 * v + (m + r) * a.outRowStride;
      if (count == 8)
        _mm256_storeu_ps(out, acc[r][v]);
      else if (count > 0)
        _mm256_maskstore_ps(out, mask, acc[r][v]);
    }
  }
}

/// Every row of x against outputs [0, live): 8 · kPanelTileVectors rows of
/// W at a time repacked (a last output repeated past `live`: W's rows past
/// N are never read), then every row of x over them.
template <int32_t Type>
void panelProducts(const KQuantArgs &k, int64_t live, int64_t mExtent) {
  constexpr int V = kPanelTileVectors<Type>;
  thread_local Scratch scratch;
  const int64_t vectorBytes = k.superBlocks * kRecordBytes;
  scratch.reserve(size_t(V * vectorBytes));
  uint8_t *records = scratch.bytes();
  for (int64_t n0 = 0; n0 < live; n0 += 8 * V) {
    const int64_t count = std::min<int64_t>(8 * V, live - n0);
    const int64_t vectors = (count + 7) / 8;
    for (int64_t v = 0; v < vectors; ++v) {
      const uint8_t *rows[8];
      for (int i = 0; i < 8; ++i)
        rows[i] = k.a.w +
                  (n0 + std::min<int64_t>(8 * v + i, count - 1)) * k.a.wRowStride;
      for (int64_t b = 0; b < k.superBlocks; ++b)
        packRecord<Type>(rows, b, records + v * vectorBytes + b * kRecordBytes);
    }
    if (vectors == V) {
      forRowTiles<kPanelTileRows>(mExtent, [&](auto rows, int64_t m) {
        panelTile<Type, decltype(rows)::value, V>(k, records, m, n0, count);
      });
      continue;
    }
    for (int64_t v = 0; v < vectors; ++v)
      forRowTiles<kPanelTileRows>(mExtent, [&](auto rows, int64_t m) {
        panelTile<Type, decltype(rows)::value, 1>(k, records + v * vectorBytes, m,
                                                  n0 + 8 * v, count - 8 * v);
      });
  }
}

/// Rows [0, mExtent) of x, dense: x_q into `x`, d_x into `dx` and, with
/// `sums`, f32(d_x · Σq_x) per group into `dxSums`.
void prepareX(const IntegerArgs &a, int64_t mExtent, bool sums, int8_t *x,
              float *dx, float *dxSums) {
  const __m256i ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
  for (int64_t m = 0; m < mExtent; ++m)
    for (int64_t g = 0; g < a.groups; ++g) {
      const float d = a.xScale[g * a.sGroupStride + m * a.sRowStride];
      dx[g + m * a.groups] = d;
      const __m256i xv = load256(a.xq + g * a.xGroupStride + m * a.xRowStride);
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(x + 32 * (g + m * a.groups)), xv);
      if (!sums)
        continue;
      const __m256i total =
          _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, xv), ones16);
      __m128i s = _mm_add_epi32(_mm256_castsi256_si128(total),
                                _mm256_extracti128_si256(total, 1));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
      s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
      dxSums[g + m * a.groups] = d * float(_mm_cvtsi128_si32(s));
    }
}

/// Every row of x against outputs [0, live).
template <int32_t Type>
void products(const KQuantArgs &k, int64_t live, int64_t mExtent) {
  if (mExtent >= kPanelRows)
    return panelProducts<Type>(k, live, mExtent);
  int64_t n = 0;
  if (mExtent == 1) {
    for (; n + kDecodeOutputs<Type> <= live; n += kDecodeOutputs<Type>)
      tile<Type, kDecodeOutputs<Type>, 1>(k, n, 0);
  } else {
    for (; n + kTileOutputs <= live; n += kTileOutputs)
      forRowTiles<3>(mExtent, [&](auto c, int64_t m) {
        tile<Type, kTileOutputs, decltype(c)::value>(k, n, m);
      });
  }
  for (; n < live; ++n)
    forRowTiles<3>(mExtent, [&](auto c, int64_t m) {
      tile<Type, 1, decltype(c)::value>(k, n, m);
    });
}

} // namespace

int kQuantProductsAvx2(halide_buffer_t *xq, halide_buffer_t *xScale,
                       halide_buffer_t *w, int32_t depth, int32_t rows,
                       int32_t type, halide_buffer_t *out) {
  const int64_t blockBytes = kQuantBlockBytes(type);
  if (blockBytes == 0 || depth <= 0 || depth % kSuperBlockValues != 0)
    return -1;
  const int64_t superBlocks = depth / kSuperBlockValues;
  const int64_t groups = superBlocks * kSuperBlockGroups;
  const int64_t nMin = out->dim[0].min, nExtent = out->dim[0].extent;
  const int64_t mMin = out->dim[1].min, mExtent = out->dim[1].extent;
  const TaskRows task = taskRows(out, rows);
  // Halide's bounds query: out's and x's scales' hosts are null (x's
  // levels, were they a pipeline input, would have one even then).
  if (out->host == nullptr || xScale->host == nullptr) {
    askForX(xq, xScale, 32, groups, mMin, mExtent);
    askForW(w, superBlocks * blockBytes, task.first, task.end);
    return 0;
  }
  IntegerArgs a = argumentsOf(xq, xScale, out, 32, groups, blockBytes, 0);
  a.wRowStride = w->dim[1].stride;
  a.w = rowOfW(w, nMin);
  const int64_t live = task.live;
  if (live > 0 && mExtent > 0) {
    // x dense in scratch: 32 bytes and two floats per group and row.
    thread_local Scratch scratch;
    scratch.reserve(size_t(40 * groups * mExtent));
    float *dx = scratch.floats(), *dxSums = dx + groups * mExtent;
    auto *x = reinterpret_cast<int8_t *>(dxSums + groups * mExtent);
    prepareX(a, mExtent, type != kTypeQ6K, x, dx, dxSums);
    const KQuantArgs k{a, dx, dxSums, x, superBlocks};
    if (type == kTypeQ4K)
      products<kTypeQ4K>(k, live, mExtent);
    else if (type == kTypeQ5K)
      products<kTypeQ5K>(k, live, mExtent);
    else
      products<kTypeQ6K>(k, live, mExtent);
  }
  zeroPastN(a, live, nExtent, mExtent);
  return 0;
}

} // namespace tfmc::runtime::ukernels
