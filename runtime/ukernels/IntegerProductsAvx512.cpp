//===- IntegerProductsAvx512.cpp - Block panels without VNNI ---------------===//
//
// IntegerPanels.h's microkernel over W in block panels for a CPU with the
// x86-64-avx512 target's features but no AVX512-VNNI (Skylake-X), whose
// program lays its weights out so all the same: vpdpbusd's sums of 4
// products of an unsigned and a signed byte, exactly, from vpmaddubsw on
// the unsigned operand's two nibbles (each pair of products at most
// 2 · 15 · 128 in magnitude: no saturation) and vpmaddwd by 1 and by 16.
// Correct first: about half the VNNI code's products a cycle, measured on
// no such CPU yet (Microkernels.cpp calls it only there).
//
//===----------------------------------------------------------------------===//

// GCC 12's AVX-512 intrinsics initialise their undefined vectors from
// themselves (`__m512 __Y = __Y;`), which -Wmaybe-uninitialized reports at
// every inlined use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "runtime/ukernels/IntegerPanels.h"
#include "runtime/ukernels/Microkernels.h"

namespace tfmc::runtime::ukernels {
namespace {

struct Avx512Bw {
  static __m512i dot512(__m512i acc, __m512i a, __m512i b) {
    const __m512i low = _mm512_set1_epi8(0x0f);
    const __m512i lo = _mm512_maddubs_epi16(_mm512_and_si512(a, low), b);
    const __m512i hi =
        _mm512_maddubs_epi16(_mm512_and_si512(_mm512_srli_epi16(a, 4), low), b);
    return _mm512_add_epi32(
        acc, _mm512_add_epi32(_mm512_madd_epi16(lo, _mm512_set1_epi16(1)),
                              _mm512_madd_epi16(hi, _mm512_set1_epi16(16))));
  }
};

} // namespace

int integerPanelProductsAvx512(halide_buffer_t *xq, halide_buffer_t *xScale,
                               halide_buffer_t *w, int32_t depth, int32_t group,
                               int32_t rows, int32_t int4, halide_buffer_t *out) {
  return integerPanelProducts<Avx512Bw>(xq, xScale, w, depth, group, rows, int4,
                                        out);
}

} // namespace tfmc::runtime::ukernels
