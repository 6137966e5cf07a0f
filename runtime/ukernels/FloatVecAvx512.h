//===- FloatVecAvx512.h - FloatPanels.h's vector policy for AVX-512 -*- C++ -*-===//
//
// 512-bit vectors (AVX512F) for FloatPanels.h's f32 tiles: 12 rows x 2
// vectors (two panels: 24 accumulators of the 32 zmm registers), depth
// blocks of 128 steps (a tile's W block, 16 KiB, and x's 6 KiB stay in a
// 32 KiB L1; 256 measured the same on a 48 KiB one): the
// x86-64-avx512 target's f32 microkernel (FloatProductsAvx512.cpp), whose
// flags include -mavx512f (runtime/CMakeLists.txt); internal linkage, as
// the other headers.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_FLOATVECAVX512_H
#define TFMC_RUNTIME_UKERNELS_FLOATVECAVX512_H

#include "support/Microkernels.h"

#include <immintrin.h>

#include <cstdint>

namespace tfmc::runtime::ukernels {
namespace {

struct Avx512F {
  using V = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kRows = format::kFloatTileAvx512.rows;
  static constexpr int kVectors = format::kFloatTileAvx512.vectors;
  static constexpr int64_t kDepthBlock = format::kFloatTileAvx512.depthBlock;
  static V zero() { return _mm512_setzero_ps(); }
  static V load(const float *p) { return _mm512_loadu_ps(p); }
  static V loadu(const float *p) { return _mm512_loadu_ps(p); }
  static V broadcast(const float *p) { return _mm512_set1_ps(*p); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static void storeu(float *p, V v) { _mm512_storeu_ps(p, v); }
  static float sum(V v) { return _mm512_reduce_add_ps(v); }
};

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_FLOATVECAVX512_H
