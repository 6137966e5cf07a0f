//===- Microkernels.cpp - The microkernels' C names ------------------------===//
//
// Compiled for the baseline x86-64 (as the rest of the runtime): every C
// name the kernels call. The x86-64-avx512 target's chooses, once per
// process, the code this CPU runs best: that target needs AVX512F/CD/BW/
// DQ/VL, not VNNI (Skylake-X has none), so vpdpbusd where the CPU has it,
// else the AVX2 code.
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/Microkernels.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tfmc::runtime::ukernels {

bool cpuHasVnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("avx2");
}

bool cpuHasAvx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("avx2");
}

bool cpuHasAmx() {
  static const bool usable = [] {
    unsigned a, b, c, d;
    // CPUID leaf 7: EDX bit 24 AMX-TILE, bit 25 AMX-INT8.
    if (!cpuHasVnni() || !__get_cpuid_count(7, 0, &a, &b, &c, &d) ||
        (d & (3u << 24)) != (3u << 24))
      return false;
    // Linux enables the tile data (XSAVE component 18) for a process only
    // once it asks (arch_prctl ARCH_REQ_XCOMP_PERM, 0x1023); a kernel
    // without AMX support refuses.
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  }();
  return usable;
}

} // namespace tfmc::runtime::ukernels

// support/Microkernels.h's names: the x86-64-avx2 target's kernels call
// the AVX2 code; the x86-64-avx512 target's the best this CPU runs.
extern "C" int tfmc_uk_q8_v1_avx2(halide_buffer_t *xq, halide_buffer_t *xScale,
                                  halide_buffer_t *w, int32_t depth,
                                  int32_t group, int32_t rows, int32_t int4,
                                  halide_buffer_t *out) {
  return tfmc::runtime::ukernels::integerProductsAvx2(xq, xScale, w, depth,
                                                      group, rows, int4, out);
}

extern "C" int tfmc_uk_q8_v1_avx512(halide_buffer_t *xq,
                                    halide_buffer_t *xScale,
                                    halide_buffer_t *w, int32_t depth,
                                    int32_t group, int32_t rows, int32_t int4,
                                    halide_buffer_t *out) {
  using namespace tfmc::runtime::ukernels;
  static const IntegerProductsFn chosen =
      cpuHasVnni() ? integerProductsVnni : integerProductsAvx2;
  return chosen(xq, xScale, w, depth, group, rows, int4, out);
}

// Over W in block panels: the x86-64-avx2 target's kernels call the AVX2
// code; the x86-64-avx512 target's AMX's tdpbssd where the CPU and the
// kernel allow it, else vpdpbusd where the CPU has it.
extern "C" int tfmc_uk_q8p_v1_avx2(halide_buffer_t *xq, halide_buffer_t *xScale,
                                   halide_buffer_t *w, int32_t depth,
                                   int32_t group, int32_t rows, int32_t int4,
                                   halide_buffer_t *out) {
  return tfmc::runtime::ukernels::integerPanelProductsAvx2(
      xq, xScale, w, depth, group, rows, int4, out);
}

extern "C" int tfmc_uk_q8p_v1_avx512(halide_buffer_t *xq,
                                     halide_buffer_t *xScale,
                                     halide_buffer_t *w, int32_t depth,
                                     int32_t group, int32_t rows, int32_t int4,
                                     halide_buffer_t *out) {
  using namespace tfmc::runtime::ukernels;
  static const IntegerProductsFn chosen =
      cpuHasAmx()    ? integerPanelProductsAmx
      : cpuHasVnni() ? integerPanelProductsVnni
                     : integerPanelProductsAvx512;
  return chosen(xq, xScale, w, depth, group, rows, int4, out);
}

// Over llama.cpp's K-quants: both targets' kernels call the AVX2 code (an
// AVX-512 CPU runs it as well as any form written for 512-bit vectors
// would, until one is measured to be faster).
extern "C" int tfmc_uk_qk_v1_avx2(halide_buffer_t *xq, halide_buffer_t *xScale,
                                  halide_buffer_t *w, int32_t depth,
                                  int32_t rows, int32_t type,
                                  halide_buffer_t *out) {
  return tfmc::runtime::ukernels::kQuantProductsAvx2(xq, xScale, w, depth,
                                                     rows, type, out);
}

extern "C" int tfmc_uk_qk_v1_avx512(halide_buffer_t *xq,
                                    halide_buffer_t *xScale,
                                    halide_buffer_t *w, int32_t depth,
                                    int32_t rows, int32_t type,
                                    halide_buffer_t *out) {
  return tfmc::runtime::ukernels::kQuantProductsAvx2(xq, xScale, w, depth,
                                                     rows, type, out);
}

// ... and times f32 x, likewise.
extern "C" int tfmc_uk_qkf_v1_avx2(halide_buffer_t *x, halide_buffer_t *w,
                                   int32_t depth, int32_t rows, int32_t type,
                                   halide_buffer_t *out) {
  return tfmc::runtime::ukernels::kQuantFloatProductsAvx2(x, w, depth, rows,
                                                          type, out);
}

extern "C" int tfmc_uk_qkf_v1_avx512(halide_buffer_t *x, halide_buffer_t *w,
                                     int32_t depth, int32_t rows, int32_t type,
                                     halide_buffer_t *out) {
  return tfmc::runtime::ukernels::kQuantFloatProductsAvx2(x, w, depth, rows,
                                                          type, out);
}

// ... and times many rows of packed f32 x: the x86-64-avx2 target's kernels
// (the f32 microkernel's tiles; support/Microkernels.h).
extern "C" int tfmc_uk_qkfp_v1_avx2(halide_buffer_t *x, halide_buffer_t *w,
                                    int32_t depth, int32_t rows, int32_t xRows,
                                    int32_t type, halide_buffer_t *out) {
  return tfmc::runtime::ukernels::kQuantFloatPanelProductsAvx2(
      x, w, depth, rows, xRows, type, out);
}

// ... x86-64-avx512's over 512-bit tiles.
extern "C" int tfmc_uk_qkfp_v1_avx512(halide_buffer_t *x, halide_buffer_t *w,
                                      int32_t depth, int32_t rows, int32_t xRows,
                                      int32_t type, halide_buffer_t *out) {
  return tfmc::runtime::ukernels::kQuantFloatPanelProductsAvx512(
      x, w, depth, rows, xRows, type, out);
}

// int8 or int4 W times many rows of packed f32 x, the same.
extern "C" int tfmc_uk_q8fp_v1_avx2(halide_buffer_t *x, halide_buffer_t *w,
                                    int32_t depth, int32_t group, int32_t rows,
                                    int32_t xRows, int32_t int4,
                                    halide_buffer_t *out) {
  return tfmc::runtime::ukernels::blockFloatPanelProductsAvx2(
      x, w, depth, group, rows, xRows, int4, out);
}

extern "C" int tfmc_uk_q8fp_v1_avx512(halide_buffer_t *x, halide_buffer_t *w,
                                      int32_t depth, int32_t group, int32_t rows,
                                      int32_t xRows, int32_t int4,
                                      halide_buffer_t *out) {
  return tfmc::runtime::ukernels::blockFloatPanelProductsAvx512(
      x, w, depth, group, rows, xRows, int4, out);
}

// The f32 microkernel over W in panels: the x86-64-avx2 target's kernels
// call it (the target requires AVX2 and FMA).
extern "C" int tfmc_uk_f32p_v1_avx2(halide_buffer_t *x, halide_buffer_t *w,
                                    int32_t depth, int32_t rows, int32_t xRows,
                                    halide_buffer_t *out) {
  return tfmc::runtime::ukernels::floatPanelProductsAvx2(x, w, depth, rows,
                                                         xRows, out);
}

// ... and x86-64-avx512's (the target requires AVX512F).
extern "C" int tfmc_uk_f32p_v1_avx512(halide_buffer_t *x, halide_buffer_t *w,
                                      int32_t depth, int32_t rows, int32_t xRows,
                                      halide_buffer_t *out) {
  return tfmc::runtime::ukernels::floatPanelProductsAvx512(x, w, depth, rows,
                                                           xRows, out);
}

// The f32 microkernel over W in rows (a decode step's rows of x): the
// x86-64-avx2 target's kernels call it ...
extern "C" int tfmc_uk_f32r_v1_avx2(halide_buffer_t *x, halide_buffer_t *w,
                                    int32_t depth, int32_t rows,
                                    halide_buffer_t *out) {
  return tfmc::runtime::ukernels::floatRowProductsAvx2(x, w, depth, rows, out);
}

// ... and x86-64-avx512's.
extern "C" int tfmc_uk_f32r_v1_avx512(halide_buffer_t *x, halide_buffer_t *w,
                                      int32_t depth, int32_t rows,
                                      halide_buffer_t *out) {
  return tfmc::runtime::ukernels::floatRowProductsAvx512(x, w, depth, rows,
                                                         out);
}
