//===- FloatProductsAvx2.cpp - The f32 microkernel, AVX2 -------------------===//
//
// FloatPanels.h with 256-bit vectors (AVX2 + FMA; FloatVecAvx2.h's tiles),
// compiled with -mavx2 -mfma (runtime/CMakeLists.txt): the x86-64-avx2
// target's f32 microkernel.
//
// Measured (2-core AMD EPYC Zen 5 running the x86-64-avx2 target; GPT-2
// small, `NAME bench --entry prefill --seq 128 --threads 2`, interleaved
// pairs): 128-161 ms against 137-186 ms for Halide's packed form; its
// 768 x 768 linears 0.79-1.03 against 0.87-1.11 ms.
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/FloatPanels.h"
#include "runtime/ukernels/FloatRows.h"
#include "runtime/ukernels/FloatVecAvx2.h"
#include "runtime/ukernels/Microkernels.h"

namespace tfmc::runtime::ukernels {

int floatPanelProductsAvx2(halide_buffer_t *x, halide_buffer_t *w,
                           int32_t depth, int32_t rows, int32_t xRows,
                           halide_buffer_t *out) {
  return floatPanelProducts<Avx2F>(x, w, depth, rows, xRows, out);
}

int floatRowProductsAvx2(halide_buffer_t *x, halide_buffer_t *w, int32_t depth,
                          int32_t rows, halide_buffer_t *out) {
  return floatRowProducts<Avx2F>(x, w, depth, rows, out);
}

} // namespace tfmc::runtime::ukernels
