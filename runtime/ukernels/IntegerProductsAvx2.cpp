//===- IntegerProductsAvx2.cpp - The integer microkernel, AVX2 -------------===//
//
// IntegerProducts.h with vpmaddubsw and vpmaddwd (AVX2), compiled with
// -mavx2 -mfma -mf16c (runtime/CMakeLists.txt): the x86-64-avx2 target's
// microkernel, and the x86-64-avx512 one's on a CPU without AVX512-VNNI.
//
// Measured on a Zen 5 (the code alone, one thread, 185 MB of blocks, one
// row of x): int8 in groups of 64 31.8 GB/s (at the memory's limit), int4
// 11 GB/s (compute-bound). On an AVX2-only Zen 3, against the Halide form
// (the same TinyLlama-shaped int4a8 program compiled with the target's
// integerMicrokernels emptied; docs/performance.md, Kernels): a decode
// step 77-83 against 91-115 ms on one thread, 45-57 against 50-52 on two;
// prefill 128 2521-2735 against 2591-2826 ms: no slower anywhere, but at
// 43-46 % of the read bandwidth where llama.cpp's repacked Q4_0 reads 86 %.
// So the x86-64-avx2 target now stores such weights in block panels, read
// by this file's second entry point (IntegerPanels256.h, its figures).
//
// From 4 rows of x a call over W in rows (a tied embedding table as the
// output head, a weight whose rows are not whole panels) repacks 32 of
// them at a time into two block panels and runs the panels' tiles (the
// code alone on the Zen 3, GPT-2's 50257 x 768 head, one thread: int4 at
// 8 rows 9.3-9.6 against 16.7-17.1 ms, 4 rows 6.1 against 8.4-8.6; int8
// 12.3-12.5 against 19.0-19.2 and 9.2-9.5 against 9.6-9.8; GPT-2 small
// int4a8 `--max-batch 8`, a decode step of batch 8 on 2 threads, 15.6
// against 19.0-20.2 ms, the head 4.5 against 8.4).
//
//===----------------------------------------------------------------------===//

#include "runtime/ukernels/IntegerPanels256.h"
#include "runtime/ukernels/IntegerProducts.h"
#include "runtime/ukernels/Microkernels.h"
#include "support/Microkernels.h"

namespace tfmc::runtime::ukernels {
namespace {

struct Avx2 {
  static constexpr int kRows = 4;
  static constexpr int kCols = 2;
  static constexpr bool kWide = false;
  // Calls of this many rows of x or more repack W's rows into block panels
  // (IntegerPanels256.h).
  static constexpr int kPanelRows = format::kMicrokernelPanelRows;
  static __m256i dot(__m256i acc, __m256i a, __m256i b) {
    const __m256i pairs = _mm256_maddubs_epi16(a, b);
    return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
};

template <>
void panelRows<Avx2>(const IntegerArgs &a, int64_t live, int64_t mExtent) {
  repackedPanelRows(a, live, mExtent);
}

} // namespace

int integerProductsAvx2(halide_buffer_t *xq, halide_buffer_t *xScale,
                        halide_buffer_t *w, int32_t depth, int32_t group,
                        int32_t rows, int32_t int4, halide_buffer_t *out) {
  return integerProducts<Avx2>(xq, xScale, w, depth, group, rows, int4, out);
}

int integerPanelProductsAvx2(halide_buffer_t *xq, halide_buffer_t *xScale,
                             halide_buffer_t *w, int32_t depth, int32_t group,
                             int32_t rows, int32_t int4, halide_buffer_t *out) {
  return blockPanelProducts<Panels256>(xq, xScale, w, depth, group, rows, int4,
                                       out);
}

} // namespace tfmc::runtime::ukernels
