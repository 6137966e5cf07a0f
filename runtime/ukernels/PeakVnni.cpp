//===- PeakVnni.cpp - Peaks.h's vpdpbusd probe ----------------------------===//
//
// Compiled with -mavx512f -mavx512vnni (runtime/CMakeLists.txt): call it
// only where the CPU has AVX512-VNNI.
//
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 intrinsics initialise their undefined vectors from
// themselves, which -Wmaybe-uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "runtime/ukernels/PeakChains.h"
#include "runtime/ukernels/Peaks.h"

#include <immintrin.h>

namespace tfmc::runtime::ukernels {

double int8PeakVnni(int64_t iterations) {
  const __m512i x = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-5);
  return chainRate<__m512i>(
      iterations, 64 * 2, [](int i) { return _mm512_set1_epi32(i); },
      [&](__m512i acc) { return _mm512_dpbusd_epi32(acc, x, w); });
}

} // namespace tfmc::runtime::ukernels
