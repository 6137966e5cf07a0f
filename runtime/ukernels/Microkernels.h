//===- Microkernels.h - The microkernels of each instruction set -*- C++ -*-===//
//
// The implementations behind support/Microkernels.h's C names, by
// instruction set, for the names' definitions (Microkernels.cpp) and the
// unit tests, which call each one a CPU can run against a scalar reference.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_MICROKERNELS_H
#define TFMC_RUNTIME_UKERNELS_MICROKERNELS_H

#include <HalideRuntime.h>

#include <cstdint>

namespace tfmc::runtime::ukernels {

using IntegerProductsFn = int (*)(halide_buffer_t *xq, halide_buffer_t *xScale,
                                  halide_buffer_t *w, int32_t depth,
                                  int32_t group, int32_t rows, int32_t int4,
                                  halide_buffer_t *out);

/// AVX2 + FMA + F16C.
int integerProductsAvx2(halide_buffer_t *xq, halide_buffer_t *xScale,
                        halide_buffer_t *w, int32_t depth, int32_t group,
                        int32_t rows, int32_t int4, halide_buffer_t *out);
/// The above + AVX512F, AVX512VL, AVX512BW, AVX512DQ and AVX512-VNNI.
int integerProductsVnni(halide_buffer_t *xq, halide_buffer_t *xScale,
                        halide_buffer_t *w, int32_t depth, int32_t group,
                        int32_t rows, int32_t int4, halide_buffer_t *out);

/// Over W in block panels (support/WeightFormat.h; the tfmc_uk_q8p_ names):
/// AVX2 + FMA + F16C (256-bit vectors, IntegerPanels256.h); AVX512-VNNI
/// as integerProductsVnni; AVX512F/VL/BW/DQ without VNNI (its dot products
/// as two vpmaddubsw on the nibbles of the unsigned operand).
int integerPanelProductsAvx2(halide_buffer_t *xq, halide_buffer_t *xScale,
                             halide_buffer_t *w, int32_t depth, int32_t group,
                             int32_t rows, int32_t int4, halide_buffer_t *out);
int integerPanelProductsVnni(halide_buffer_t *xq, halide_buffer_t *xScale,
                             halide_buffer_t *w, int32_t depth, int32_t group,
                             int32_t rows, int32_t int4, halide_buffer_t *out);
int integerPanelProductsAmx(halide_buffer_t *xq, halide_buffer_t *xScale,
                            halide_buffer_t *w, int32_t depth, int32_t group,
                            int32_t rows, int32_t int4, halide_buffer_t *out);
int integerPanelProductsAvx512(halide_buffer_t *xq, halide_buffer_t *xScale,
                               halide_buffer_t *w, int32_t depth, int32_t group,
                               int32_t rows, int32_t int4, halide_buffer_t *out);

/// Over W in llama.cpp's K-quant super-blocks (support/Microkernels.h's
/// tfmc_uk_qk_ names; KQuantProductsAvx2.cpp): `type` is ggml's (12 Q4_K,
/// 13 Q5_K, 14 Q6_K); another, or a depth not a multiple of 256, returns
/// nonzero. AVX2 + FMA + F16C; the avx512 name runs the same code.
using KQuantProductsFn = int (*)(halide_buffer_t *xq, halide_buffer_t *xScale,
                                 halide_buffer_t *w, int32_t depth,
                                 int32_t rows, int32_t type,
                                 halide_buffer_t *out);
int kQuantProductsAvx2(halide_buffer_t *xq, halide_buffer_t *xScale,
                       halide_buffer_t *w, int32_t depth, int32_t rows,
                       int32_t type, halide_buffer_t *out);
/// The same super-blocks times f32 x (the tfmc_uk_qkf_ names;
/// KQuantFloatAvx2.cpp), AVX2 + FMA + F16C.
using KQuantFloatProductsFn = int (*)(halide_buffer_t *x, halide_buffer_t *w,
                                      int32_t depth, int32_t rows,
                                      int32_t type, halide_buffer_t *out);
int kQuantFloatProductsAvx2(halide_buffer_t *x, halide_buffer_t *w,
                            int32_t depth, int32_t rows, int32_t type,
                            halide_buffer_t *out);

/// The same super-blocks times many rows of packed f32 x (the tfmc_uk_qkfp_
/// names; WidenedPanels.h): AVX2 + FMA + F16C, or with AVX512F.
using KQuantFloatPanelProductsFn = int (*)(halide_buffer_t *x,
                                           halide_buffer_t *w, int32_t depth,
                                           int32_t rows, int32_t xRows,
                                           int32_t type, halide_buffer_t *out);
int kQuantFloatPanelProductsAvx2(halide_buffer_t *x, halide_buffer_t *w,
                                 int32_t depth, int32_t rows, int32_t xRows,
                                 int32_t type, halide_buffer_t *out);

/// int8 or int4 W in rows times many rows of packed f32 x (the tfmc_uk_q8fp_
/// names; WidenedPanels.h): AVX2 + FMA + F16C, or with AVX512F.
using BlockFloatPanelProductsFn = int (*)(halide_buffer_t *x,
                                          halide_buffer_t *w, int32_t depth,
                                          int32_t group, int32_t rows,
                                          int32_t xRows, int32_t int4,
                                          halide_buffer_t *out);
int blockFloatPanelProductsAvx2(halide_buffer_t *x, halide_buffer_t *w,
                                int32_t depth, int32_t group, int32_t rows,
                                int32_t xRows, int32_t int4,
                                halide_buffer_t *out);
int kQuantFloatPanelProductsAvx512(halide_buffer_t *x, halide_buffer_t *w,
                                   int32_t depth, int32_t rows, int32_t xRows,
                                   int32_t type, halide_buffer_t *out);
int blockFloatPanelProductsAvx512(halide_buffer_t *x, halide_buffer_t *w,
                                  int32_t depth, int32_t group, int32_t rows,
                                  int32_t xRows, int32_t int4,
                                  halide_buffer_t *out);

/// The f32 microkernel over W in panels (FloatPanels.h; the tfmc_uk_f32p_
/// names), AVX2 + FMA.
using FloatPanelProductsFn = int (*)(halide_buffer_t *x, halide_buffer_t *w,
                                     int32_t depth, int32_t rows,
                                     int32_t xRows, halide_buffer_t *out);
int floatPanelProductsAvx2(halide_buffer_t *x, halide_buffer_t *w,
                           int32_t depth, int32_t rows, int32_t xRows,
                           halide_buffer_t *out);
int floatPanelProductsAvx512(halide_buffer_t *x, halide_buffer_t *w,
                             int32_t depth, int32_t rows, int32_t xRows,
                             halide_buffer_t *out);

/// The f32 microkernel over W in rows (FloatRows.h; the tfmc_uk_f32r_
/// names), AVX2 + FMA and AVX-512.
using FloatRowProductsFn = int (*)(halide_buffer_t *x, halide_buffer_t *w,
                                   int32_t depth, int32_t rows,
                                   halide_buffer_t *out);
int floatRowProductsAvx2(halide_buffer_t *x, halide_buffer_t *w, int32_t depth,
                         int32_t rows, halide_buffer_t *out);
int floatRowProductsAvx512(halide_buffer_t *x, halide_buffer_t *w,
                           int32_t depth, int32_t rows, halide_buffer_t *out);

/// Whether this CPU (and its OS) runs integerProductsVnni.
bool cpuHasVnni();
/// Whether it runs integerPanelProductsAvx512.
bool cpuHasAvx512();
/// AMX-INT8 (with AVX512-VNNI) and the kernel's leave to use the tile data,
/// asked for once per process (Linux's ARCH_REQ_XCOMP_PERM).
bool cpuHasAmx();

} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_MICROKERNELS_H
