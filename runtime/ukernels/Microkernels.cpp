//===- Microkernels.cpp - The microkernels' C names for AVX-512 ------------===//
//
// Compiled for the baseline x86-64 (as the rest of the runtime): the
// x86-64-avx512 target's names choose, once per process, the code this CPU
// runs best. The target needs AVX512F/CD/BW/DQ/VL, not VNNI (Skylake-X has
// none): vpdpbusd where the CPU has it, else the AVX2 code.
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/Microkernels.h"

namespace tfmc::runtime::ukernels {

bool cpuHasVnni() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vnni") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("avx2");
}

} // namespace tfmc::runtime::ukernels

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
