//===- VnniDot.h - IntegerProducts.h's policy for AVX512-VNNI ---*- C++ -*-===//
//
// vpdpbusd (AVX512-VNNI with AVX512VL) as IntegerProducts.h's and
// IntegerPanels.h's integer dot product: the policy of
// IntegerProductsVnni.cpp and of the AMX form's rows that are not a whole
// tile (IntegerPanelsAmx.cpp). Files that include it are compiled with
// those features (runtime/CMakeLists.txt); internal linkage, as the other
// headers.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_VNNIDOT_H
#define TFMC_RUNTIME_UKERNELS_VNNIDOT_H

#include "support/Microkernels.h"

#include <immintrin.h>

namespace tfmc::runtime::ukernels {
namespace {

struct Vnni {
  static constexpr int kRows = 4;
  static constexpr int kCols = 2;
  // int4: two blocks a 512-bit vector (wideInt4Tile).
  static constexpr bool kWide = true;
  // Calls of this many rows of x or more run the panel form
  // (IntegerPanels.h).
  static constexpr int kPanelRows = format::kMicrokernelPanelRows;
  static __m512i dot512(__m512i acc, __m512i a, __m512i b) {
    // vpdpbusd through asm with acc tied to the result: GCC 12 copies each
    // accumulator of _mm512_dpbusd_epi32 into a new register and back
    // around every use (24 moves a step of the panel form's 6 x 2 tile, to
    // 12 dot products: 1.1 of them a cycle, where the CPU runs 2).
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
    return acc;
  }
  static __m256i dot(__m256i acc, __m256i a, __m256i b) {
    return _mm256_dpbusd_epi32(acc, a, b);
  }
};

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_VNNIDOT_H
