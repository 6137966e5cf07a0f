//===- FloatProductsAvx2.cpp - The f32 microkernel, AVX2 -------------------===//
//
// FloatPanels.h with 256-bit vectors (AVX2 + FMA), compiled with -mavx2
// -mfma (runtime/CMakeLists.txt): the x86-64-avx2 target's f32
// microkernel. Tiles of 6 rows x 2 vectors (one panel: 12 accumulators of
// the 16 ymm registers), depth blocks of 256 steps (a tile's W block,
// 16 KiB, stays in L1).
//
// Measured (2-core AMD EPYC Zen 5 running the x86-64-avx2 target; GPT-2
// small, `NAME bench --entry prefill --seq 128 --threads 2`, interleaved
// pairs): 128-161 ms against 137-186 ms for Halide's packed form; its
// 768 x 768 linears 0.79-1.03 against 0.87-1.11 ms.
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/FloatPanels.h"
#include "runtime/ukernels/Microkernels.h"

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
};

} // namespace

int floatPanelProductsAvx2(halide_buffer_t *x, halide_buffer_t *w,
                           int32_t depth, int32_t rows, int32_t xRows,
                           halide_buffer_t *out) {
  return floatPanelProducts<Avx2F>(x, w, depth, rows, xRows, out);
}

} // namespace tfmc::runtime::ukernels
