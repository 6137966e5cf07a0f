//===- PeakAvx512.cpp - Peaks.h's AVX-512 f32 probe -------------------------===//
//
// Compiled with -mavx512f (runtime/CMakeLists.txt). Each chain starts
// from its own value, so that no two are the same expression.
//
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 intrinsics initialise their undefined vectors from
// themselves, which -Wmaybe-uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "runtime/ukernels/Peaks.h"

#include <immintrin.h>

#include <chrono>

namespace tfmc::runtime::ukernels {
namespace {

constexpr int kChains = 12;

double seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

double f32PeakAvx512(int64_t iterations) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm512_set1_ps(1.0f + 0.001f * float(i));
  const __m512 scale = _mm512_set1_ps(0.9999f), shift = _mm512_set1_ps(1e-4f);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < iterations; ++step) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i)
      acc[i] = _mm512_fmadd_ps(acc[i], scale, shift);
  }
  const double elapsed = seconds(start);
  __m512 sum = acc[0];
  for (int i = 1; i < kChains; ++i)
    sum = _mm512_add_ps(sum, acc[i]);
  volatile float sink = _mm512_reduce_add_ps(sum);
  (void)sink;
  return double(iterations) * kChains * 16 * 2 / elapsed;
}

} // namespace tfmc::runtime::ukernels
