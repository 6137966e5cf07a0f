//===- WidenedPanelsAvx2.cpp - Narrow weights times many rows of f32 x ----===//
//
// WidenedPanels.h over FloatVecAvx2.h's 6 x 2 ymm tiles (one panel of 16
// outputs), compiled with -mavx2 -mfma -mf16c and -ffp-contract=off
// (runtime/CMakeLists.txt): x86-64-avx2's tfmc_uk_qkfp and tfmc_uk_q8fp.
//
// Measured on an AVX2-only AMD EPYC (Zen 3, 2 cores), TinyLlama's shape,
// `NAME bench --entry prefill --seq 128 --threads 2` (medians of 3,
// interleaved rounds): from a Q4_K_M file 1672-1890 ms against 2874-3174
// for the Halide form, the linears at 68-70 % of the FMA peak that bench
// measures (187 GFLOP/s), Q6_K's as Q4_K's (widening a panel row by row
// and storing its values one at a time instead of transposing eight rows
// took 1890-2106 ms); int4 and int8: docs/performance.md.
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/WidenedPanels.h"
#include "runtime/ukernels/FloatVecAvx2.h"
#include "runtime/ukernels/Microkernels.h"

namespace tfmc::runtime::ukernels {

int kQuantFloatPanelProductsAvx2(halide_buffer_t *x, halide_buffer_t *w,
                                 int32_t depth, int32_t rows, int32_t xRows,
                                 int32_t type, halide_buffer_t *out) {
  return kQuantFloatPanelProducts<Avx2F>(x, w, depth, rows, xRows, type, out);
}

int blockFloatPanelProductsAvx2(halide_buffer_t *x, halide_buffer_t *w,
                                int32_t depth, int32_t group, int32_t rows,
                                int32_t xRows, int32_t int4,
                                halide_buffer_t *out) {
  return blockFloatPanelProducts<Avx2F>(x, w, depth, group, rows, xRows, int4,
                                        out);
}

} // namespace tfmc::runtime::ukernels
