//===- PeakAvx512.cpp - Peaks.h's AVX-512 f32 probe ------------------------===//
//
// Compiled with -mavx512f (runtime/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 intrinsics initialise their undefined vectors from
// themselves, which -Wmaybe-uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "runtime/ukernels/PeakChains.h"
#include "runtime/ukernels/Peaks.h"

#include <immintrin.h>

namespace tfmc::runtime::ukernels {

double f32PeakAvx512(int64_t iterations) {
  const __m512 scale = _mm512_set1_ps(0.9999f), shift = _mm512_set1_ps(1e-4f);
  return chainRate<__m512>(
      iterations, 16 * 2,
      [](int i) { return _mm512_set1_ps(1.0f + 0.001f * float(i)); },
      [&](__m512 acc) { return _mm512_fmadd_ps(acc, scale, shift); });
}

} // namespace tfmc::runtime::ukernels
