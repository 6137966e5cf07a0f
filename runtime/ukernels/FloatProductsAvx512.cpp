//===- FloatProductsAvx512.cpp - The f32 microkernel, AVX-512 --------------===//
//
// FloatPanels.h with 512-bit vectors (AVX512F; FloatVecAvx512.h's 12 x 2
// tiles), compiled with -mavx512f (runtime/CMakeLists.txt): the
// x86-64-avx512 target's f32 microkernel.
//
// Measured: docs/performance.md, "Microkernels (f32)".
//
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 intrinsics initialise their undefined vectors from
// themselves, which -Wmaybe-uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "runtime/ukernels/FloatPanels.h"
#include "runtime/ukernels/FloatRows.h"
#include "runtime/ukernels/FloatVecAvx512.h"
#include "runtime/ukernels/Microkernels.h"

namespace tfmc::runtime::ukernels {

int floatPanelProductsAvx512(halide_buffer_t *x, halide_buffer_t *w,
                             int32_t depth, int32_t rows, int32_t xRows,
                             halide_buffer_t *out) {
  return floatPanelProducts<Avx512F>(x, w, depth, rows, xRows, out);
}

int floatRowProductsAvx512(halide_buffer_t *x, halide_buffer_t *w, int32_t depth,
                          int32_t rows, halide_buffer_t *out) {
  return floatRowProducts<Avx512F>(x, w, depth, rows, out);
}

} // namespace tfmc::runtime::ukernels
