//===- PeakVnni.cpp - Peaks.h's vpdpbusd probe ----------------------------===//
//
// Compiled with -mavx512f -mavx512vnni (runtime/CMakeLists.txt): call it
// only where the CPU has AVX512-VNNI. Each chain is its own accumulator,
// so that no two are the same expression.
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

double int8PeakVnni(int64_t iterations) {
  __m512i acc[kChains];
  for (int i = 0; i < kChains; ++i)
    acc[i] = _mm512_set1_epi32(i);
  const __m512i x = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-5);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < iterations; ++step) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i)
      acc[i] = _mm512_dpbusd_epi32(acc[i], x, w);
  }
  const double elapsed = seconds(start);
  __m512i sum = acc[0];
  for (int i = 1; i < kChains; ++i)
    sum = _mm512_add_epi32(sum, acc[i]);
  volatile int sink = _mm512_reduce_add_epi32(sum);
  (void)sink;
  return double(iterations) * kChains * 64 * 2 / elapsed;
}

} // namespace tfmc::runtime::ukernels
