//===- WidenedPanelsAvx512.cpp - Narrow weights times many rows of f32 x --===//
//
// WidenedPanels.h over 12 x 2 zmm tiles (two panels of 16 outputs a tile,
// depth blocks of 256: a K-quant's super-block column), compiled with
// -mavx2 -mfma -mf16c -mavx512f and -ffp-contract=off
// (runtime/CMakeLists.txt): x86-64-avx512's tfmc_uk_qkfp and tfmc_uk_q8fp.
// The widening is WidenedPanels.h's AVX2 code; the tiles are 512-bit.
//
// Measured: docs/performance.md, "Narrow weights, many rows of f32 x".
//
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 intrinsics initialise their undefined vectors from
// themselves, which -Wmaybe-uninitialized and -Wuninitialized report at
// every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "runtime/ukernels/WidenedPanels.h"
#include "runtime/ukernels/FloatVecAvx512.h"
#include "runtime/ukernels/Microkernels.h"

namespace tfmc::runtime::ukernels {
namespace {

/// FloatVecAvx512.h's vectors with support/Microkernels.h's widened tile
/// (kWidenedTileAvx512: the depth block a super-block column).
struct Avx512Widened : Avx512F {
  static constexpr int kRows = format::kWidenedTileAvx512.rows;
  static constexpr int kVectors = format::kWidenedTileAvx512.vectors;
  static constexpr int64_t kDepthBlock = format::kWidenedTileAvx512.depthBlock;
};

} // namespace

int kQuantFloatPanelProductsAvx512(halide_buffer_t *x, halide_buffer_t *w,
                                   int32_t depth, int32_t rows, int32_t xRows,
                                   int32_t type, halide_buffer_t *out) {
  return kQuantFloatPanelProducts<Avx512Widened>(x, w, depth, rows, xRows, type,
                                                 out);
}

int blockFloatPanelProductsAvx512(halide_buffer_t *x, halide_buffer_t *w,
                                  int32_t depth, int32_t group, int32_t rows,
                                  int32_t xRows, int32_t int4,
                                  halide_buffer_t *out) {
  return blockFloatPanelProducts<Avx512Widened>(x, w, depth, group, rows, xRows,
                                                int4, out);
}

} // namespace tfmc::runtime::ukernels
