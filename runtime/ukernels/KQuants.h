//===- KQuants.h - llama.cpp's K-quant super-blocks, for the microkernels -*- C++ -*-===//
//
// What every K-quant microkernel (support/Microkernels.h's tfmc_uk_qk_*,
// tfmc_uk_qkf_* and tfmc_uk_qkfp_*) needs to know of ggml's super-blocks: the type
// numbers, the block sizes and offsets, the 6-bit scales and mins of Q4_K
// and Q5_K unpacked all at once (plain C++), and, with AVX2 and F16C, a
// group's 32 quants (and 8 of them as f32) and a super-block's f32 scales
// and mins in vectors (Q6_K's 16 scales in memory).
// The layouts are those that runtime/core/GgmlBlocks.cpp dequantises
// (support/WeightFormat.h describes them); a super-block is 256 values, 8
// groups of 32 (x's groups). A file that includes this is compiled with
// -mavx2 -mfma -mf16c (runtime/CMakeLists.txt); everything here has
// internal linkage, as the other headers here.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_UKERNELS_KQUANTS_H
#define TFMC_RUNTIME_UKERNELS_KQUANTS_H

#include "support/WeightFormat.h"

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <utility>

namespace tfmc::runtime::ukernels {
namespace {

/// ggml's type numbers, the microkernel's `type` argument, and the
/// super-blocks' sizes and offsets: support/WeightFormat.h's, under the
/// names the microkernels use.
constexpr int32_t kTypeQ4K = format::kGgmlQ4K;
constexpr int32_t kTypeQ5K = format::kGgmlQ5K;
constexpr int32_t kTypeQ6K = format::kGgmlQ6K;

/// Values of a super-block, and x's groups of 32 in one.
constexpr int64_t kSuperBlockValues = format::kKQuantBlockValues;
constexpr int kSuperBlockGroups = 8;

/// Bytes of a super-block of `type`, or 0 for a type that is not a
/// K-quant the microkernel takes.
using format::kQuantBlockBytes;

/// Offsets in a block: Q4_K {f16 d, dmin; scales[12]; qs[128]}, Q5_K {d,
/// dmin; scales[12]; qh[32]; qs[128]}, Q6_K {ql[128]; qh[64]; int8
/// scales[16]; f16 d} (d last).
constexpr int64_t kQ45Scales = format::kKQuantScalesOffset;
constexpr int64_t kQ4Nibbles = format::kQ4KValuesOffset;
constexpr int64_t kQ5HighBits = format::kQ5KHighBitsOffset;
constexpr int64_t kQ5Nibbles = format::kQ5KValuesOffset;
constexpr int64_t kQ6HighBits = format::kQ6KHighBitsOffset;
constexpr int64_t kQ6Scales = format::kQ6KScalesOffset;
constexpr int64_t kQ6Scale = format::kQ6KScaleOffset;

/// Q4_K's or Q5_K's 12 scale bytes as sub-block s's 6-bit scale in byte s
/// of `scales` and its min in byte s of `mins` (s = 0 .. 7): ggml's
/// get_scale_min_k4 for every s at once, on 32-bit words. Bytes 0 .. 3
/// hold scales 0 .. 3 and 4 .. 7 mins 0 .. 3 in their low 6 bits; bytes
/// 8 .. 11 the low 4 bits of scales 4 .. 7 (low nibble) and mins 4 .. 7
/// (high nibble), whose top 2 bits are the top bits of bytes 0 .. 3 and
/// 4 .. 7. A shift of a whole word moves a neighbour's bits only into bits
/// that the masks then clear.
inline void unpackScalesAndMins(const uint8_t *bytes, uint64_t &scales,
                                uint64_t &mins) {
  uint32_t low, middle, high;
  std::memcpy(&low, bytes, 4);
  std::memcpy(&middle, bytes + 4, 4);
  std::memcpy(&high, bytes + 8, 4);
  const uint32_t six = 0x3f3f3f3f, four = 0x0f0f0f0f, top = 0x30303030;
  const uint32_t scalesHigh = (high & four) | ((low >> 2) & top);
  const uint32_t minsHigh = ((high >> 4) & four) | ((middle >> 2) & top);
  scales = uint64_t(low & six) | uint64_t(scalesHigh) << 32;
  mins = uint64_t(middle & six) | uint64_t(minsHigh) << 32;
}

// --- AVX2 + F16C (the files that include this are compiled for them) ----

/// 32 bytes at `p`, unaligned.
inline __m256i load256(const void *p) {
  return _mm256_loadu_si256(static_cast<const __m256i *>(p));
}

/// f(std::integral_constant<int, g>) for g = 0 .. 7: each group's shifts
/// and offsets are constants.
template <class F, int... G>
inline void eachGroup(F &&f, std::integer_sequence<int, G...>) {
  (f(std::integral_constant<int, G>{}), ...);
}
template <class F> inline void eachGroup(F &&f) {
  eachGroup(f, std::make_integer_sequence<int, kSuperBlockGroups>{});
}

/// Group G's 32 quants of a super-block as u8, in x's element order: Q4_K
/// 0 .. 15, Q5_K 0 .. 31, Q6_K 0 .. 63 (not yet less 32).
template <int32_t Type, int G>
inline __m256i quants(const uint8_t *block) {
  const __m256i nibble = _mm256_set1_epi8(0x0f);
  if constexpr (Type == kTypeQ6K) {
    // Group G is quarter c of half h: the low (c = 0, 1) or high (c = 2,
    // 3) nibbles of ql[64h + 32 (c % 2) ..], and bits 2c, 2c + 1 of
    // qh[32h ..] above them (16-bit shifts: the mask keeps only bits that
    // came from the same byte).
    constexpr int h = G / 4, c = G % 4;
    const __m256i ql = load256(block + 64 * h + 32 * (c % 2));
    const __m256i qh = load256(block + kQ6HighBits + 32 * h);
    const __m256i low = c < 2 ? _mm256_and_si256(ql, nibble)
                              : _mm256_and_si256(_mm256_srli_epi16(ql, 4), nibble);
    __m256i high;
    if constexpr (c == 0)
      high = _mm256_slli_epi16(qh, 4);
    else if constexpr (c == 1)
      high = _mm256_slli_epi16(qh, 2);
    else if constexpr (c == 2)
      high = qh;
    else
      high = _mm256_srli_epi16(qh, 2);
    return _mm256_or_si256(low, _mm256_and_si256(high, _mm256_set1_epi8(0x30)));
  } else {
    // Sub-block G: the low (G even) or high nibbles of qs[32 (G / 2) ..];
    // Q5_K's fifth bit is bit G of qh[..], moved to bit 4.
    constexpr int64_t nibbles = Type == kTypeQ4K ? kQ4Nibbles : kQ5Nibbles;
    const __m256i qs = load256(block + nibbles + 32 * (G / 2));
    const __m256i low = G % 2 == 0
                            ? _mm256_and_si256(qs, nibble)
                            : _mm256_and_si256(_mm256_srli_epi16(qs, 4), nibble);
    if constexpr (Type == kTypeQ4K)
      return low;
    const __m256i qh = load256(block + kQ5HighBits);
    __m256i high;
    if constexpr (G < 4)
      high = _mm256_slli_epi16(qh, 4 - G);
    else if constexpr (G == 4)
      high = qh;
    else
      high = _mm256_srli_epi16(qh, G - 4);
    return _mm256_or_si256(low, _mm256_and_si256(high, _mm256_set1_epi8(0x10)));
  }
}

/// The 8 u8 quants of `q` starting at byte 8·P, as f32 (Q6_K: less 32).
template <int32_t Type, int P> inline __m256 quantsAsFloat(__m256i q) {
  const __m128i half = P < 2 ? _mm256_castsi256_si128(q)
                             : _mm256_extracti128_si256(q, 1);
  const __m128i bytes = P % 2 == 0 ? half : _mm_srli_si128(half, 8);
  __m256i values = _mm256_cvtepu8_epi32(bytes);
  if constexpr (Type == kTypeQ6K)
    values = _mm256_sub_epi32(values, _mm256_set1_epi32(32));
  return _mm256_cvtepi32_ps(values);
}

/// Q6_K's f32(d · sc_t) for its 16 sub-blocks of 16 values, into `scale`
/// (32-byte aligned).
inline void q6kScales(const uint8_t *block, float *scale) {
  uint16_t d;
  std::memcpy(&d, block + kQ6Scale, 2);
  const __m256 dv = _mm256_set1_ps(_cvtsh_ss(d));
  const __m128i sc =
      _mm_loadu_si128(reinterpret_cast<const __m128i *>(block + kQ6Scales));
  _mm256_store_ps(scale, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
  _mm256_store_ps(scale + 8, _mm256_mul_ps(dv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                   _mm_srli_si128(sc, 8)))));
}

/// Q4_K's or Q5_K's f32(d · sc_s) and f32(dmin · m_s), s = 0 .. 7 in lanes.
inline void scalesAndMins(const uint8_t *block, __m256 &scales, __m256 &mins) {
  uint32_t halves;
  std::memcpy(&halves, block, 4);
  const __m128 both = _mm_cvtph_ps(_mm_cvtsi32_si128(int(halves)));
  uint64_t sc, m;
  unpackScalesAndMins(block + kQ45Scales, sc, m);
  const auto widen = [](uint64_t bytes) {
    return _mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes))));
  };
  scales = _mm256_mul_ps(widen(sc), _mm256_broadcastss_ps(both));
  mins = _mm256_mul_ps(widen(m),
                       _mm256_broadcastss_ps(_mm_movehdup_ps(both)));
}

} // namespace
} // namespace tfmc::runtime::ukernels

#endif // TFMC_RUNTIME_UKERNELS_KQUANTS_H
