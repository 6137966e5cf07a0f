//===- PeakAvx2.cpp - Peaks.h's AVX2 probes --------------------------------===//
//
// Compiled with -mavx2 -mfma (runtime/CMakeLists.txt).
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/PeakChains.h"
#include "runtime/ukernels/Peaks.h"

#include <immintrin.h>

namespace tfmc::runtime::ukernels {

double f32PeakAvx2(int64_t iterations) {
  const __m256 scale = _mm256_set1_ps(0.9999f), shift = _mm256_set1_ps(1e-4f);
  return chainRate<__m256>(
      iterations, 8 * 2,
      [](int i) { return _mm256_set1_ps(1.0f + 0.001f * float(i)); },
      [&](__m256 acc) { return _mm256_fmadd_ps(acc, scale, shift); });
}

double int8PeakAvx2(int64_t iterations) {
  // Four independent products per step, each from an x that the compiler
  // must treat as new every step (so that it hoists nothing), into four
  // accumulators, named one by one: with arrays, or with six of each, GCC
  // kept some on the stack (16 ymm registers).
  __m256i a0 = _mm256_set1_epi32(0), a1 = _mm256_set1_epi32(1),
          a2 = _mm256_set1_epi32(2), a3 = _mm256_set1_epi32(3);
  __m256i x0 = _mm256_set1_epi8(3), x1 = _mm256_set1_epi8(4),
          x2 = _mm256_set1_epi8(5), x3 = _mm256_set1_epi8(6);
  const __m256i w = _mm256_set1_epi8(-5), ones = _mm256_set1_epi16(1);
  auto dot = [&](__m256i acc, __m256i x) {
    return _mm256_add_epi32(acc,
                            _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), ones));
  };
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < iterations; ++step) {
    __asm__("" : "+x"(x0), "+x"(x1), "+x"(x2), "+x"(x3));
    a0 = dot(a0, x0);
    a1 = dot(a1, x1);
    a2 = dot(a2, x2);
    a3 = dot(a3, x3);
  }
  const double elapsed = secondsSince(start);
  const __m256i sum =
      _mm256_add_epi32(_mm256_add_epi32(a0, a1), _mm256_add_epi32(a2, a3));
  volatile int sink = _mm256_extract_epi32(sum, 0);
  (void)sink;
  return double(iterations) * 4 * 32 * 2 / elapsed;
}

} // namespace tfmc::runtime::ukernels
