//===- IntegerProductsVnni.cpp - The integer microkernel, AVX512-VNNI ------===//
//
// IntegerProducts.h with vpdpbusd (AVX512-VNNI with AVX512VL; int8 on
// 256-bit vectors, int4 on 512-bit ones, two blocks a vector), compiled
// with those features (runtime/CMakeLists.txt): the
// x86-64-avx512 target's microkernel on a CPU that has them (Zen 4 and 5,
// Ice Lake and later; Microkernels.cpp chooses). 32 vector registers: tiles
// of 4 outputs by 2 rows of x.
//
// Measured (TinyLlama-shaped decode step, `NAME bench --entry decode_step`,
// Zen 5, interleaved with the Halide form's program; docs/performance.md,
// Kernels): int8a8 1 thread 35.3-36.4 ms against 53.1-56.5, 2 threads
// 29.5-30.1 against 38.1-39.6; int4a8 1 thread 41.4-42.4 against
// 74.2-75.2, 2 threads 28.7-31.1 against 47.3-51.6.
//
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 intrinsics initialise their undefined vectors from
// themselves (`__m512 __Y = __Y;`), which -Wmaybe-uninitialized reports at
// every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "runtime/ukernels/IntegerPanels.h"
#include "runtime/ukernels/Microkernels.h"
#include "runtime/ukernels/VnniDot.h"

namespace tfmc::runtime::ukernels {

int integerProductsVnni(halide_buffer_t *xq, halide_buffer_t *xScale,
                        halide_buffer_t *w, int32_t depth, int32_t group,
                        int32_t rows, int32_t int4, halide_buffer_t *out) {
  return integerProducts<Vnni>(xq, xScale, w, depth, group, rows, int4, out);
}

int integerPanelProductsVnni(halide_buffer_t *xq, halide_buffer_t *xScale,
                             halide_buffer_t *w, int32_t depth, int32_t group,
                             int32_t rows, int32_t int4, halide_buffer_t *out) {
  return integerPanelProducts<Vnni>(xq, xScale, w, depth, group, rows, int4, out);
}

} // namespace tfmc::runtime::ukernels
