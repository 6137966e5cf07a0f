//===- IntegerPanelsAmx.cpp - The block-panel microkernel, AMX-INT8 --------===//
//
// support/Microkernels.h's tfmc_uk_q8p_* over W in block panels with Intel
// AMX (tdpbssd on 16 x 64-byte tile registers): the x86-64-avx512 target's
// form on a CPU that has AMX-INT8 and whose kernel lets the process use
// the tile data (Sapphire Rapids and later Xeons; Microkernels.cpp
// chooses). Compiled with AMX-TILE, AMX-INT8 and AVX512-VNNI
// (runtime/CMakeLists.txt).
//
// Per call, each of the task's panels is made into AMX's B operand once:
// for each chunk of 64 values of a group (groups of a multiple of 64) or
// 32 (the others), a tile of 16 or 8 rows of [16 outputs][4 values] as
// signed bytes (int8: the stored w + 128 less 128; int4: each nibble less
// 8, the low nibbles values 0 .. 15 of the block, the high ones 16 .. 31),
// the panels' layout already. Then for each panel and each 16 rows of x:
//
//   per group: C = Σ over its chunks of tdpbssd(A, B), A the 16 rows'
//   levels of x in the chunk (read in place, a row xRowStride apart); C
//   (16 x 16 int32, exact) stored to L1; per row one f32 fused
//   multiply-add of f32(C) by f32(d_x · d_w) into the row's 16 sums.
//
// What bounds it (this Xeon; a loop of the tile alone): a tdpbssd takes 16
// cycles whether its chunk is 32 or 64, a tilestored about as long, and
// while they run the vector units' adds do not overlap them (a group's
// 48 adds and the tile's instructions cost their sum, 17 ns a group of a
// panel and 16 rows); so about 0.5 T multiply-adds a second a core for
// groups of 32, an eighth of tdpbssd's peak, which per-group scales
// (f32(C) then an f32 multiply-add for every 16 sums) keep out of reach.
//
// The numbers are IntegerPanels.h's: the same exact int32 group sums, the
// same f32(d_x · d_w), the groups added in order by one fused multiply-add
// each, so its outputs are the VNNI form's bit for bit. Rows of x that are
// not a whole tile of 16 (and calls of fewer) run that VNNI form.
//
// Measured: docs/performance.md, "AMX".
//
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 intrinsics initialise their undefined vectors from
// themselves (`__m512 __Y = __Y;`), which -Wmaybe-uninitialized and
// -Wuninitialized report at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "runtime/ukernels/AmxTiles.h"
#include "runtime/ukernels/IntegerPanels.h"
#include "runtime/ukernels/Microkernels.h"
#include "runtime/ukernels/VnniDot.h"

namespace tfmc::runtime::ukernels {
namespace {

constexpr int kAmxRows = 16;    // rows of x a tile (A's and C's rows)
// Values of K a tdpbssd: 64 (A's rows 64 bytes, B 16 rows of 64 bytes)
// where groups are whole 64s, else 32 (a group of int4, or of 32 int8):
// a tdpbssd takes as long for 32 as for 64 (16 cycles on this Xeon).
inline int64_t chunkOf(int64_t group) { return group % 64 == 0 ? 64 : 32; }
/// B's bytes of a chunk of `chunk` values: chunk / 4 rows of 64 bytes.
constexpr int64_t chunkBytes(int64_t chunk) { return chunk / 4 * 64; }

/// tmm0, tmm1: C (16 x 16 int32), two groups in flight; tmm2, tmm3: A (16
/// rows x `chunk` levels); tmm4, tmm5: B (chunk / 4 rows x 64 bytes).
TileConfig tileConfig(int64_t chunk) {
  TileConfig c;
  for (int t : {0, 1})
    c.set(t, kAmxRows, 64);
  for (int t : {2, 3})
    c.set(t, kAmxRows, int(chunk));
  for (int t : {4, 5})
    c.set(t, int(chunk / 4), 64);
  return c;
}

/// Panel p of the task as tdpbssd's B, in K's order (its chunk c at b + c ·
/// chunkBytes),
/// and its d_w widened, group g's at scales + 16 g.
void prepareB(const IntegerArgs &a, const PanelArgs &w, int64_t p, int8_t *b,
              float *scales) {
  const uint8_t *panel = w.w + p * w.panelBytes;
  if (a.int4) {
    // A group is one chunk: 4 steps of stored nibble bytes, byte j of a
    // row holding values j and j + 16.
    const __m512i low = _mm512_set1_epi8(0x0f);
    const __m512i eight = _mm512_set1_epi8(8);
    for (int64_t g = 0; g < a.groups; ++g)
      for (int s = 0; s < 4; ++s) {
        const __m512i v = _mm512_loadu_si512(panel + g * w.groupBytes + 64 * s);
        int8_t *chunk = b + g * chunkBytes(32);
        _mm512_store_si512(chunk + 64 * s,
                           _mm512_sub_epi8(_mm512_and_si512(v, low), eight));
        _mm512_store_si512(
            chunk + 64 * (4 + s),
            _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), low), eight));
      }
  } else {
    // Steps in K's order already; w + 128 back to w.
    const __m512i flip = _mm512_set1_epi8(char(0x80));
    for (int64_t i = 0; i < a.groups * w.groupBytes; i += 64)
      _mm512_store_si512(b + i, _mm512_xor_si512(_mm512_loadu_si512(panel + i), flip));
  }
  for (int64_t g = 0; g < a.groups; ++g)
    _mm512_store_ps(scales + 16 * g, widenPanelScales(panel + w.scalesAt + g * 32));
}

/// f32(C) of one group (its 16 x 16 sums at `c`) by f32(d_x · d_w) into
/// the 16 rows' sums.
inline void addGroup(__m512 (&acc)[kAmxRows], const int32_t *c, __m512 dw,
                     const float *dx, int64_t dxStride) {
#pragma GCC unroll 16
  for (int r = 0; r < kAmxRows; ++r)
    acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * r)),
                             _mm512_mul_ps(dw, _mm512_set1_ps(dx[r * dxStride])),
                             acc[r]);
}

/// Rows [m, m + 16) of x by one prepared panel (its first `held` outputs
/// stored at the task's output 16p), in chunks of Chunk values (chunkOf: a
/// constant, so that the chunk loop and its addresses fold).
template <int Chunk>
void amxTile(const IntegerArgs &a, const int8_t *b, const float *dw, int64_t p,
             int64_t m, int64_t held) {
  constexpr int64_t chunk = Chunk, bytes = chunkBytes(Chunk);
  const int64_t perGroup = a.group / chunk;
  const int8_t *x = a.xq + m * a.xRowStride;
  const float *dx = a.xScale + m * a.sRowStride;
  // Groups in pairs, software-pipelined: the tile unit multiplies pair q
  // (tmm0 and tmm1) while the vector units add pair q - 1's sums, stored
  // one pair earlier (adding a pair right after its tdpbssd waited out the
  // instruction's latency: a third of the tile's time stalled there).
  alignas(64) int32_t c[2][2][kAmxRows * 16];
  __m512 acc[kAmxRows];
  for (auto &v : acc)
    v = _mm512_setzero_ps();
  // Group g's sums into tile C through A in tmm A and B in tmm B (the
  // intrinsics spell the registers' numbers into their assembly: literals
  // only).
#define TFMC_AMX_GROUP(C, A, B, g)                                             \
  do {                                                                         \
    _tile_zero(C);                                                             \
    for (int64_t j = 0; j < perGroup; ++j) {                                   \
      _tile_loadd(A, x + (g) * a.xGroupStride + j * chunk, a.xRowStride);      \
      _tile_loadd(B, b + ((g) * perGroup + j) * bytes, 64);                    \
      _tile_dpbssd(C, A, B);                                                   \
    }                                                                          \
  } while (0)
  auto add = [&](int64_t g, const int32_t *sums) {
    addGroup(acc, sums, _mm512_load_ps(dw + 16 * g), dx + g * a.sGroupStride,
             a.sRowStride);
  };
  const int64_t pairs = (a.groups + 1) / 2;
  for (int64_t q = 0; q < pairs; ++q) {
    const int64_t g = 2 * q;
    const bool second = g + 1 < a.groups;
    TFMC_AMX_GROUP(0, 2, 4, g);
    if (second)
      TFMC_AMX_GROUP(1, 3, 5, g + 1);
    if (q > 0) {
      add(g - 2, c[(q - 1) % 2][0]);
      add(g - 1, c[(q - 1) % 2][1]);
    }
    _tile_stored(0, c[q % 2][0], 64);
    if (second)
      _tile_stored(1, c[q % 2][1], 64);
  }
#undef TFMC_AMX_GROUP
  const int64_t last = 2 * (pairs - 1);
  add(last, c[(pairs - 1) % 2][0]);
  if (last + 1 < a.groups)
    add(last + 1, c[(pairs - 1) % 2][1]);
  const __mmask16 mask = __mmask16((1u << held) - 1);
  for (int r = 0; r < kAmxRows; ++r)
    _mm512_mask_storeu_ps(a.out + 16 * p + (m + r) * a.outRowStride, mask, acc[r]);
}

/// The form over block panels (BlockPanels.h) with AMX: whole tiles of 16
/// rows of x by tdpbssd, a panel prepared at a time (its 16 · K bytes stay
/// in L1 or L2 over every tile of rows), the rows left by IntegerPanels.h's
/// VNNI form with their own c·Σq.
struct PanelsAmx {
  // The VNNI form of the rows left computes its own.
  static constexpr bool offsets(bool) { return false; }
  static void rows(const IntegerArgs &a, const PanelArgs &panel,
                   const int32_t *, int64_t mExtent, int64_t live) {
    const int64_t tiled = mExtent / kAmxRows * kAmxRows;
    if (tiled > 0) {
      thread_local Scratch b, scales;
      b.reserve(size_t(a.groups * a.group * 16));
      scales.reserve(size_t(a.groups * 16) * sizeof(float));
      const int64_t share = (panel.panelBytes / (tiled / kAmxRows) + 63) / 64 * 64;
      static const TileConfig configs[2] = {tileConfig(32), tileConfig(64)};
      const TileConfig &config = configs[chunkOf(a.group) == 64];
      _tile_loadconfig(&config);
      for (int64_t p = 0; p * 16 < live; ++p) {
        prepareB(a, panel, p, reinterpret_cast<int8_t *>(b.bytes()), scales.floats());
        // tileloadd's assembly claims no memory: B's stores land first.
        __asm__ volatile("" ::: "memory");
        // The next panel's bytes, a share before each tile of rows (read
        // first by prepareB, from memory, they stalled it).
        const bool next = (p + 1) * 16 < live;
        for (int64_t m = 0; m < tiled; m += kAmxRows) {
          if (next) {
            const char *ahead = reinterpret_cast<const char *>(
                panel.w + (p + 1) * panel.panelBytes + (m / kAmxRows) * share);
            for (int64_t line = 0; line < share; line += 64)
              _mm_prefetch(ahead + line, _MM_HINT_T1);
          }
          (chunkOf(a.group) == 64 ? amxTile<64> : amxTile<32>)(
              a, reinterpret_cast<const int8_t *>(b.bytes()), scales.floats(), p, m,
              std::min<int64_t>(16, live - 16 * p));
        }
      }
      // The tile registers' state is saved and restored with the thread's
      // (a larger context switch) until released.
      _tile_release();
    }
    if (tiled == mExtent)
      return;
    IntegerArgs rest = a;
    rest.xq += tiled * a.xRowStride;
    rest.xScale += tiled * a.sRowStride;
    rest.out += tiled * a.outRowStride;
    Panels512<Vnni>::rows(rest, panel, groupOffsets(rest, mExtent - tiled),
                          mExtent - tiled, live);
  }
};

} // namespace

int integerPanelProductsAmx(halide_buffer_t *xq, halide_buffer_t *xScale,
                            halide_buffer_t *w, int32_t depth, int32_t group,
                            int32_t rows, int32_t int4, halide_buffer_t *out) {
  return blockPanelProducts<PanelsAmx>(xq, xScale, w, depth, group, rows, int4,
                                       out);
}

} // namespace tfmc::runtime::ukernels
