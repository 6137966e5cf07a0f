//===- FloatVecAvx2.h - FloatPanels.h's vector policy for AVX2 --*- C++ -*-===//
//
// 256-bit vectors (AVX2 + FMA) for FloatPanels.h's f32 tiles: 6 rows x 2
// vectors (one panel: 12 accumulators of the 16 ymm registers), depth
// blocks of 256 steps (a tile's W block, 16 KiB, stays in L1): the f32
// microkernel's (FloatProductsAvx2.cpp) and the K-quant panels'
// (WidenedPanelsAvx2.cpp). Files that include it are compiled with -mavx2
// -mfma (runtime/CMakeLists.txt); internal linkage, as the other headers.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_FLOATVECAVX2_H
#define TFMC_RUNTIME_UKERNELS_FLOATVECAVX2_H

#include "support/Microkernels.h"

#include <immintrin.h>

#include <cstdint>

namespace tfmc::runtime::ukernels {
namespace {

struct Avx2F {
  using V = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kRows = format::kFloatTileAvx2.rows;
  static constexpr int kVectors = format::kFloatTileAvx2.vectors;
  static constexpr int64_t kDepthBlock = format::kFloatTileAvx2.depthBlock;
  static V zero() { return _mm256_setzero_ps(); }
  static V load(const float *p) { return _mm256_loadu_ps(p); }
  static V loadu(const float *p) { return _mm256_loadu_ps(p); }
  static V broadcast(const float *p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static void storeu(float *p, V v) { _mm256_storeu_ps(p, v); }
  static float sum(V v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
};

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_FLOATVECAVX2_H
