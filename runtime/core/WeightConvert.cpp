//===- WeightConvert.cpp - f32 weights to bf16, int8 or int4 --------------===//
//
// Conversion is on the start-up path of every low-precision program that
// loads an f32 file, so the inner loops are written for the compiler to
// vectorise (no branches on the data, integer bit tricks instead of library
// calls) and large tensors are split over a few threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/WeightConvert.h"
#include "support/WeightFormat.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

namespace tfmc::runtime {
namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// Below this many elements a tensor is converted on the calling thread:
/// starting a thread costs more than it saves.
constexpr int64_t kParallelElements = int64_t(1) << 18;

/// Runs `body(part, begin, end)` over [0, count) split into `threads`
/// contiguous parts, part 0 on the calling thread (and any part whose
/// thread cannot start). One part when the work is small.
template <typename Body>
void splitWork(int64_t count, int64_t elementsPerItem, int threads,
               Body body) {
  const int parts = static_cast<int>(std::min<int64_t>(
      std::max(threads, 1), std::max<int64_t>(count, 1)));
  if (parts <= 1 || count * elementsPerItem < kParallelElements) {
    body(0, int64_t(0), count);
    return;
  }
  auto bound = [&](int part) { return count * part / parts; };
  std::vector<std::thread> workers;
  int started = 1;
  for (; started < parts; ++started) {
    try {
      workers.emplace_back(body, started, bound(started),
                           bound(started + 1));
    } catch (const std::system_error &) {
      break;
    }
  }
  body(0, int64_t(0), bound(1));
  for (int part = started; part < parts; ++part)
    body(part, bound(part), bound(part + 1));
  for (std::thread &worker : workers)
    worker.join();
}

/// One row of quantizeInt8, into `out`'s format::int8RowBytes(cols, group)
/// bytes of blocks. Returns false with `problem` set.
bool quantizeRow(const float *row, int64_t cols, int64_t group, int64_t r,
                 uint8_t *out, QuantizeProblem &problem) {
  const int64_t blockBytes = format::int8BlockBytes(group);
  for (int64_t start = 0; start < cols; start += group, out += blockBytes) {
    const int64_t end = std::min(start + group, cols);
    // The values, after the scale; a short last block is padded with 0.
    int8_t *q = reinterpret_cast<int8_t *>(out + format::kBlockScaleBytes);
    std::fill(q + (end - start), q + group, int8_t(0));
    // |w| as integer bits orders like |w| for finite values, and infinity
    // and NaN come above every finite value: one integer max finds both
    // the largest magnitude and any value that cannot be quantised.
    uint32_t largest = 0;
    for (int64_t c = start; c < end; ++c)
      largest = std::max(largest, bitsOf(row[c]) & 0x7fffffffu);
    if (largest >= 0x7f800000u) {
      int64_t c = start;
      while (c < end && std::isfinite(row[c]))
        ++c;
      problem.what = fmt::format("{} at [{}, {}]",
                                 std::isnan(row[c]) ? "a NaN" : "an infinity",
                                 r, c);
      return false;
    }
    const float maxAbs = floatOf(largest);
    const uint16_t scale = floatToF16(maxAbs / 127.0f);
    if ((scale & 0x7fffu) == 0x7c00u) {
      problem.what = fmt::format("row {} columns {}..{}: max |w| = {} gives "
                                 "a scale max |w| / 127 beyond f16's 65504",
                                 r, start, end - 1, maxAbs);
      return false;
    }
    out[0] = static_cast<uint8_t>(scale & 0xff);
    out[1] = static_cast<uint8_t>(scale >> 8);
    const float step = f16ToFloat(scale);
    if (step == 0.0f) {
      std::fill(q, q + (end - start), int8_t(0));
      continue;
    }
    // Adding and subtracting 1.5 * 2^23 rounds a float below 2^22 in
    // magnitude to an integer, to nearest even (the default rounding mode),
    // without a library call. |w| / step is at most about 190 (127 times
    // the worst relative rounding of a subnormal f16 scale, 1.5), so it
    // applies before the clamp, which is done on integers: float compares
    // would keep GCC from vectorising the loop.
    constexpr float kRound = 12582912.0f;
    for (int64_t c = start; c < end; ++c) {
      const float rounded = (row[c] / step + kRound) - kRound;
      const int32_t value = static_cast<int32_t>(rounded);
      q[c - start] = static_cast<int8_t>(std::min(std::max(value, -127), 127));
    }
  }
  return true;
}

/// One row of quantizeInt4 (the ggml reference's rounding, WeightConvert.h).
/// Returns false with `problem` set.
bool quantizeInt4Row(const float *row, int64_t cols, int64_t r, uint8_t *out,
                     QuantizeProblem &problem) {
  constexpr int64_t kBlock = format::kInt4BlockValues;
  float block[kBlock];
  for (int64_t start = 0; start < cols; start += kBlock) {
    const int64_t count = std::min(kBlock, cols - start);
    std::copy(row + start, row + start + count, block);
    std::fill(block + count, block + kBlock, 0.0f);
    float largest = 0.0f, max = 0.0f;
    for (int64_t j = 0; j < kBlock; ++j) {
      if (!std::isfinite(block[j])) {
        problem.what = fmt::format("{} at [{}, {}]",
                                   std::isnan(block[j]) ? "a NaN" : "an infinity",
                                   r, start + j);
        return false;
      }
      if (largest < std::fabs(block[j])) {
        largest = std::fabs(block[j]);
        max = block[j];
      }
    }
    const float d = max / -8.0f;
    // 1 / d overflows for |max| below about 2^-125, where ggml's cast of
    // an infinity is undefined; every value of such a block is 0 anyway
    // (f16(d) is 0), so it gets the levels of a block of zeros.
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    const float id = std::isfinite(inverse) ? inverse : 0.0f;
    const uint16_t scale = floatToF16(d);
    if ((scale & 0x7fffu) == 0x7c00u) {
      problem.what = fmt::format("row {} columns {}..{}: max |w| = {} gives "
                                 "a scale max |w| / 8 beyond f16's 65504",
                                 r, start, start + count - 1, largest);
      return false;
    }
    out[0] = static_cast<uint8_t>(scale & 0xffu);
    out[1] = static_cast<uint8_t>(scale >> 8);
    // w · id lies in [-8, 8] (|w| <= |max|), so w · id + 8.5 is positive
    // and the conversion truncates it as ggml's (int8_t) cast does.
    auto level = [&](float w) {
      return std::min(15, static_cast<int>(w * id + 8.5f));
    };
    for (int64_t j = 0; j < kBlock / 2; ++j)
      out[format::kBlockScaleBytes + j] = static_cast<uint8_t>(
          level(block[j]) | (level(block[j + kBlock / 2]) << 4));
    out += format::kInt4BlockBytes;
  }
  return true;
}

// ---------------------------------------------------------------------------
// K-quants, as ggml's reference quantisers make them (quantize_row_q4_K_ref,
// quantize_row_q5_K_ref, quantize_row_q6_K_ref in ggml-quants.c). Every
// expression keeps the reference's f32 operations and their order, so the
// bytes are the reference's; runtime/CMakeLists.txt compiles this file
// with -ffp-contract=off, so that no multiply-add is ever fused.
// ---------------------------------------------------------------------------

/// ggml's nearest_int: round to nearest, ties to even, by adding 1.5 · 2^23.
/// Exact for |value| <= 2^22 - 1, which every call's value is for finite
/// weights; beyond it (where the reference asserts) the value is clamped
/// first, so the result is still the nearest in-range integer's clamp.
int nearestInt(float value) {
  value = std::min(std::max(value, -4194303.0f), 4194303.0f);
  const uint32_t bits = bitsOf(value + 12582912.0f);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

/// ggml's GROUP_MAX_EPS: a group whose largest |x| is below it is all zero.
constexpr float kGroupMaxEps = 1e-15f;

/// ggml's make_qkx2_quants(n = 32, nmax, x, weights, L, &the_min, Laux,
/// rmin, rdelta, nstep, use_mad = false): levels L in [0, nmax] and the
/// returned scale and `theMin` (the negated minimum, >= 0) with the least
/// weighted squared error over nstep + 1 candidate scales.
float affineLevels(const float *x, const float *weights, int nmax, float rmin,
                   float rdelta, int nstep, uint8_t *L, float &theMin) {
  constexpr int n = 32;
  float min = x[0], max = x[0];
  float sumW = weights[0];
  float sumX = sumW * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min)
      min = x[i];
    if (x[i] > max)
      max = x[i];
    const float w = weights[i];
    sumW += w;
    sumX += w * x[i];
  }
  if (min > 0)
    min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t(0));
    theMin = -min;
    return 0.0f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float bestError = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearestInt(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    const float diff = scale * L[i] + min - x[i];
    bestError += weights[i] * (diff * diff);
  }
  uint8_t aux[n];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sumL = 0, sumL2 = 0, sumXL = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, nearestInt(iscale * (x[i] - min))));
      aux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sumL += w * l;
      sumL2 += w * l * l;
      sumXL += w * l * x[i];
    }
    const float D = sumW * sumL2 - sumL * sumL;
    if (D > 0) {
      float thisScale = (sumW * sumXL - sumX * sumL) / D;
      float thisMin = (sumL2 * sumX - sumL * sumXL) / D;
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = sumXL / sumL2;
      }
      float error = 0;
      for (int i = 0; i < n; ++i) {
        const float diff = thisScale * aux[i] + thisMin - x[i];
        error += weights[i] * (diff * diff);
      }
      if (error < bestError) {
        std::copy(aux, aux + n, L);
        bestError = error;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  theMin = -min;
  return scale;
}

/// ggml's make_qx_quants(n = 16, nmax = 32, x, L, rmse_type = 1, NULL):
/// levels L in [0, 63] (value L - 32) and the scale with the least
/// x²-weighted squared error over 19 candidate scales.
float symmetricLevels(const float *x, uint8_t *L) {
  constexpr int n = 16, nmax = 32;
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, uint8_t(0));
    return 0.0f;
  }
  auto level = [&](float iscale, int i) {
    return std::max(-nmax, std::min(nmax - 1, nearestInt(iscale * x[i])));
  };
  float iscale = -nmax / max;
  float sumLX = 0, sumL2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, i);
    L[i] = static_cast<uint8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumLX += w * x[i] * l;
    sumL2 += w * l * l;
  }
  float scale = sumL2 != 0 ? sumLX / sumL2 : 0.0f;
  float best = scale * sumLX;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0)
      continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumLX = sumL2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale, i);
      const float w = x[i] * x[i];
      sumLX += w * x[i] * l;
      sumL2 += w * l * l;
    }
    if (sumL2 > 0 && sumLX * sumLX > best * sumL2) {
      for (int i = 0; i < n; ++i)
        L[i] = static_cast<uint8_t>(level(iscale, i) + nmax);
      scale = sumLX / sumL2;
      best = scale * sumLX;
    }
  }
  return scale;
}

void storeHalf(uint8_t *out, uint16_t half) {
  out[0] = static_cast<uint8_t>(half & 0xffu);
  out[1] = static_cast<uint8_t>(half >> 8);
}

/// An f16 scale that is infinite (the super-block's values too large).
bool overflows(uint16_t half) { return (half & 0x7fffu) == 0x7c00u; }

/// One q4_k (bits 4) or q5_k (bits 5) super-block of `x`'s 256 values.
/// False where a scale overflows f16.
bool affineSuperBlock(const float *x, int bits, uint8_t *out) {
  constexpr int kSub = 8;
  const int nmax = (1 << bits) - 1;
  uint8_t L[format::kKQuantBlockValues];
  float scales[kSub], mins[kSub], weights[32];
  float maxScale = 0, maxMin = 0;
  for (int j = 0; j < kSub; ++j) {
    const float *xs = x + 32 * j;
    float sumX2 = 0;
    for (int l = 0; l < 32; ++l)
      sumX2 += xs[l] * xs[l];
    const float average = std::sqrt(sumX2 / 32);
    for (int l = 0; l < 32; ++l)
      weights[l] = average + std::fabs(xs[l]);
    scales[j] = bits == 4
                    ? affineLevels(xs, weights, nmax, -1.0f, 0.1f, 20, L + 32 * j, mins[j])
                    : affineLevels(xs, weights, nmax, -0.5f, 0.1f, 15, L + 32 * j, mins[j]);
    maxScale = std::max(maxScale, scales[j]);
    maxMin = std::max(maxMin, mins[j]);
  }
  const float inverseScale = maxScale > 0 ? 63.0f / maxScale : 0.0f;
  const float inverseMin = maxMin > 0 ? 63.0f / maxMin : 0.0f;
  uint8_t *packed = out + format::kKQuantScalesOffset;
  std::fill(packed, packed + 12, uint8_t(0));
  for (int j = 0; j < kSub; ++j) {
    // The reference stores nearest_int into a uint8_t before its MIN.
    const uint8_t ls = std::min<uint8_t>(
        63, static_cast<uint8_t>(nearestInt(inverseScale * scales[j])));
    const uint8_t lm = std::min<uint8_t>(
        63, static_cast<uint8_t>(nearestInt(inverseMin * mins[j])));
    if (j < 4) {
      packed[j] = ls;
      packed[j + 4] = lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  const uint16_t d = floatToF16(maxScale / 63.0f);
  const uint16_t dmin = floatToF16(maxMin / 63.0f);
  if (overflows(d) || overflows(dmin))
    return false;
  storeHalf(out, d);
  storeHalf(out + 2, dmin);
  for (int j = 0; j < kSub; ++j) {
    int sc = 0, m = 0;
    format::kQuantScaleMin(j, packed, sc, m);
    const float step = f16ToFloat(d) * sc;
    if (step == 0.0f)
      continue; // the levels of make_qkx2_quants stay
    const float dm = f16ToFloat(dmin) * m;
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] = static_cast<uint8_t>(
          std::max(0, std::min(nmax, nearestInt((x[32 * j + i] + dm) / step))));
  }
  // Sub-blocks 2k and 2k + 1 share 32 bytes: low and high nibbles; q5_k's
  // fifth bits: bit j of qh[i] is value i of sub-block j.
  uint8_t *qs = out + (bits == 4 ? format::kQ4KValuesOffset : format::kQ5KValuesOffset);
  if (bits == 5)
    std::fill(out + format::kQ5KHighBitsOffset,
              out + format::kQ5KHighBitsOffset + 32, uint8_t(0));
  for (int k = 0; k < kSub / 2; ++k)
    for (int i = 0; i < 32; ++i) {
      const uint8_t low = L[64 * k + i], high = L[64 * k + 32 + i];
      qs[32 * k + i] = static_cast<uint8_t>((low & 0xF) | ((high & 0xF) << 4));
      if (bits == 5)
        out[format::kQ5KHighBitsOffset + i] |= static_cast<uint8_t>(
            ((low >> 4) << (2 * k)) | ((high >> 4) << (2 * k + 1)));
    }
  return true;
}

/// One q6_k super-block of `x`'s 256 values. False where d overflows f16.
bool symmetricSuperBlock(const float *x, uint8_t *out) {
  constexpr int kSub = 16;
  uint8_t L[format::kKQuantBlockValues];
  float scales[kSub];
  float maxScale = 0, maxAbsScale = 0;
  for (int j = 0; j < kSub; ++j) {
    scales[j] = symmetricLevels(x + 16 * j, L + 16 * j);
    const float absScale = std::fabs(scales[j]);
    if (absScale > maxAbsScale) {
      maxAbsScale = absScale;
      maxScale = scales[j];
    }
  }
  if (maxAbsScale < kGroupMaxEps) {
    std::fill(out, out + format::kQ6KBlockBytes, uint8_t(0));
    return true;
  }
  const float iscale = -128.0f / maxScale;
  const uint16_t d = floatToF16(1 / iscale);
  if (overflows(d))
    return false;
  storeHalf(out + format::kQ6KScaleOffset, d);
  auto *subScales = reinterpret_cast<int8_t *>(out + format::kQ6KScalesOffset);
  for (int j = 0; j < kSub; ++j)
    subScales[j] = static_cast<int8_t>(std::min(127, nearestInt(iscale * scales[j])));
  for (int j = 0; j < kSub; ++j) {
    const float step = f16ToFloat(d) * subScales[j];
    if (step == 0.0f)
      continue;
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = static_cast<uint8_t>(
          std::max(-32, std::min(31, nearestInt(x[16 * j + i] / step))) + 32);
  }
  // Each half of 128 values: ql[64h + l] holds values l (low nibble) and
  // l + 64 (high), ql[64h + 32 + l] values l + 32 and l + 96; qh[32h + l]
  // their two high bits, in that order from bit 0.
  uint8_t *ql = out, *qh = out + format::kQ6KHighBitsOffset;
  for (int h = 0; h < 2; ++h, ql += 64, qh += 32)
    for (int l = 0; l < 32; ++l) {
      const uint8_t *q = L + 128 * h + l;
      ql[l] = static_cast<uint8_t>((q[0] & 0xF) | ((q[64] & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q[32] & 0xF) | ((q[96] & 0xF) << 4));
      qh[l] = static_cast<uint8_t>((q[0] >> 4) | ((q[32] >> 4) << 2) |
                                   ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6));
    }
  return true;
}

/// One row of quantizeKQuant. Returns false with `problem` set.
bool quantizeKQuantRow(const float *row, int64_t cols, int ggmlType, int64_t r,
                       uint8_t *out, QuantizeProblem &problem) {
  for (int64_t c = 0; c < cols; ++c)
    if (!std::isfinite(row[c])) {
      problem.what = fmt::format("{} at [{}, {}]",
                                 std::isnan(row[c]) ? "a NaN" : "an infinity", r, c);
      return false;
    }
  constexpr int64_t kValues = format::kKQuantBlockValues;
  // Far beyond any f16 scale's reach; refused before a difference of two
  // such values could overflow f32 in the scale search.
  constexpr float kBeyondF16Scales = 1e30f;
  const int64_t blockBytes = format::kQuantBlockBytes(ggmlType);
  for (int64_t start = 0; start < cols; start += kValues, out += blockBytes) {
    bool fits = std::all_of(row + start, row + start + kValues, [](float w) {
      return std::fabs(w) < kBeyondF16Scales;
    });
    fits = fits && (ggmlType == format::kGgmlQ6K
                          ? symmetricSuperBlock(row + start, out)
                          : affineSuperBlock(row + start,
                                             ggmlType == format::kGgmlQ4K ? 4 : 5, out));
    if (!fits) {
      float largest = 0;
      for (int64_t c = start; c < start + kValues; ++c)
        largest = std::max(largest, std::fabs(row[c]));
      problem.what = fmt::format("row {} columns {}..{}: max |w| = {} gives a "
                                 "super-block scale beyond f16's 65504",
                                 r, start, start + kValues - 1, largest);
      return false;
    }
  }
  return true;
}

/// Runs `row(r, problem)` over `rows` rows on up to `threads` threads;
/// false with `problem` set to the first refusal in row order.
template <typename RowFn>
bool forEachRow(int64_t rows, int64_t cols, int threads,
                QuantizeProblem &problem, RowFn row) {
  // Each part reports its first problem; the first part's first is the
  // tensor's first in row order.
  int parts = std::max(threads, 1);
  std::vector<int64_t> badRow(static_cast<std::size_t>(parts), rows);
  std::vector<QuantizeProblem> problems(static_cast<std::size_t>(parts));
  splitWork(rows, cols, parts, [&](int part, int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      if (!row(r, problems[part])) {
        badRow[part] = r;
        return;
      }
  });
  std::size_t first = static_cast<std::size_t>(
      std::min_element(badRow.begin(), badRow.end()) - badRow.begin());
  if (badRow[first] == rows)
    return true;
  problem = problems[first];
  return false;
}

} // namespace

uint16_t floatToBf16(float value) {
  const uint32_t bits = bitsOf(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it a quiet NaN
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t lsb = (bits >> 16) & 1u;
  return static_cast<uint16_t>((bits + 0x7fffu + lsb) >> 16);
}

float bf16ToFloat(uint16_t bits) { return floatOf(uint32_t(bits) << 16); }

uint16_t floatToF16(float value) {
  uint32_t bits = bitsOf(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  bits &= 0x7fffffffu;
  if (bits > 0x7f800000u)
    return sign | 0x7e00u;
  // 65520 is halfway between f16's largest finite value (65504, odd
  // mantissa) and 65536: ties to even round it, and all above, to infinity.
  if (bits >= 0x477ff000u)
    return sign | 0x7c00u;
  if (bits >= 0x38800000u) { // normal in f16 (>= 2^-14)
    // Rebias the exponent (127 - 15) and round away 13 mantissa bits; a
    // carry moves into the exponent as it should.
    uint32_t rebased = bits - 0x38000000u;
    rebased += 0x0fffu + ((rebased >> 13) & 1u);
    return sign | static_cast<uint16_t>(rebased >> 13);
  }
  // Subnormal (or zero): a multiple of 2^-24. Scaling by 2^24 is exact, and
  // nearbyint rounds to nearest even; 1024 is the smallest normal's bits.
  const float units = std::nearbyint(floatOf(bits) * 0x1p24f);
  return sign | static_cast<uint16_t>(units);
}

float f16ToFloat(uint16_t half) {
  // Without branches, so that widenF16's loop vectorises. A normal half
  // moves its exponent from bias 15 to bias 127 (+112 << 10, then << 13);
  // a subnormal is mantissa * 2^-24, exact as an int-to-float conversion
  // and a power-of-two scale (the result is a normal f32, so no denormal
  // arithmetic, whatever the FTZ/DAZ flags); exponent 31 keeps the payload.
  // Signed 32-bit lanes throughout: SSE2 compares only signed integers.
  const int32_t sign = int32_t(half & 0x8000) << 16;
  const int32_t magnitude = half & 0x7fff;
  const int32_t normal = (magnitude + (112 << 10)) << 13;
  const int32_t special = 0x7f800000 | ((magnitude & 0x3ff) << 13);
  const int32_t subnormal = static_cast<int32_t>(
      bitsOf(static_cast<float>(magnitude) * 0x1p-24f));
  // All-ones masks rather than ?:, which GCC leaves as branches here.
  const int32_t isSubnormal = -static_cast<int32_t>(magnitude < 0x400);
  const int32_t isSpecial = -static_cast<int32_t>(magnitude >= 0x7c00);
  const int32_t bits = (subnormal & isSubnormal) | (special & isSpecial) |
                       (normal & ~(isSubnormal | isSpecial));
  return floatOf(static_cast<uint32_t>(sign | bits));
}

void widenBf16(const void *source, int64_t count, float *target,
               int threads) {
  const auto *bytes = static_cast<const unsigned char *>(source);
  splitWork(count, 1, threads, [=](int, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint16_t bits;
      std::memcpy(&bits, bytes + 2 * i, sizeof bits); // little-endian host
      target[i] = bf16ToFloat(bits);
    }
  });
}

void widenF16(const void *source, int64_t count, float *target, int threads) {
  const auto *bytes = static_cast<const unsigned char *>(source);
  splitWork(count, 1, threads, [=](int, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint16_t bits;
      std::memcpy(&bits, bytes + 2 * i, sizeof bits);
      target[i] = f16ToFloat(bits);
    }
  });
}

void convertToBf16(const float *source, int64_t count, uint16_t *target,
                   int threads) {
  splitWork(count, 1, threads, [=](int, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t bits = bitsOf(source[i]);
      const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
      const uint32_t quiet = (bits >> 16) | 0x0040u;
      target[i] = static_cast<uint16_t>(
          (bits & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
    }
  });
}

void layOutPanels(const void *source, int64_t rows, int64_t cols,
                  int64_t panel, bool transposed, float *target,
                  int threads) {
  const auto *bytes = static_cast<const unsigned char *>(source);
  splitWork(rows / panel, panel * cols, threads,
            [=](int, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      float *out = target + p * cols * panel;
      if (transposed) {
        // Row k of the file holds this panel's values of column k side by
        // side.
        for (int64_t k = 0; k < cols; ++k)
          std::memcpy(out + k * panel,
                      bytes + (k * rows + p * panel) * sizeof(float),
                      static_cast<std::size_t>(panel) * sizeof(float));
        continue;
      }
      // A panel x K transpose: written in order, each step of k reading
      // the same column of the panel's rows (panel streams).
      const unsigned char *first = bytes + p * panel * cols * sizeof(float);
      for (int64_t k = 0; k < cols; ++k)
        for (int64_t j = 0; j < panel; ++j)
          std::memcpy(out + k * panel + j,
                      first + (j * cols + k) * sizeof(float), sizeof(float));
    }
  });
}

namespace {

/// Where byte `b` of block g's values (b from 0; int4: the stored nibble
/// bytes) of row i of a block panel goes, from the panel's start, and
/// where its scale goes: support/WeightFormat.h's layout.
struct BlockPanelLayout {
  int64_t groups, group, blockBytes;
  bool int4;
  int64_t valueBytes() const { return blockBytes - format::kBlockScaleBytes; }
  int64_t groupBytes() const {
    return valueBytes() * format::kBlockPanelRows;
  }
  int64_t value(int64_t g, int64_t i, int64_t b) const {
    const int64_t s = b / format::kBlockPanelLaneBytes;
    return g * groupBytes() +
           (s * format::kBlockPanelRows + i) * format::kBlockPanelLaneBytes +
           b % format::kBlockPanelLaneBytes;
  }
  int64_t scale(int64_t g, int64_t i) const {
    return groups * groupBytes() +
           (g * format::kBlockPanelRows + i) * format::kBlockScaleBytes;
  }
};

/// Copies each row's blocks between the row layout and a panel's, one way
/// or the other; int8 values are flipped between q and q + 128.
void moveBlockPanels(const uint8_t *from, int64_t rows, int64_t rowBytes,
                     int64_t group, bool int4, uint8_t *to, bool toPanels,
                     int threads) {
  const int64_t blockBytes = int4 ? format::kInt4BlockBytes
                                  : format::int8BlockBytes(group);
  const BlockPanelLayout layout{rowBytes / blockBytes, group, blockBytes, int4};
  const int64_t panelBytes = format::kBlockPanelRows * rowBytes;
  const uint8_t flip = int4 ? 0 : 0x80;
  splitWork(rows / format::kBlockPanelRows, panelBytes, threads,
            [=](int, int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      for (int64_t i = 0; i < format::kBlockPanelRows; ++i) {
        const int64_t rowStart = (p * format::kBlockPanelRows + i) * rowBytes;
        const int64_t panelStart = p * panelBytes;
        for (int64_t g = 0; g < layout.groups; ++g) {
          const int64_t block = rowStart + g * blockBytes;
          const int64_t scale = panelStart + layout.scale(g, i);
          for (int64_t b = 0; b < format::kBlockScaleBytes; ++b) {
            if (toPanels)
              to[scale + b] = from[block + b];
            else
              to[block + b] = from[scale + b];
          }
          // Four bytes (one lane of a vector) at a time.
          const uint32_t flips = 0x01010101u * flip;
          for (int64_t b = 0; b < layout.valueBytes();
               b += format::kBlockPanelLaneBytes) {
            const int64_t value = panelStart + layout.value(g, i, b);
            const int64_t stored = block + format::kBlockScaleBytes + b;
            uint32_t lane;
            std::memcpy(&lane, from + (toPanels ? stored : value), 4);
            lane ^= flips;
            std::memcpy(to + (toPanels ? value : stored), &lane, 4);
          }
        }
      }
  });
}

} // namespace

void layOutBlockPanels(const uint8_t *rowsOfBlocks, int64_t rows,
                       int64_t rowBytes, int64_t group, bool int4,
                       uint8_t *panels, int threads) {
  moveBlockPanels(rowsOfBlocks, rows, rowBytes, group, int4, panels, true,
                  threads);
}

void blockPanelsToRows(const uint8_t *panels, int64_t rows, int64_t rowBytes,
                       int64_t group, bool int4, uint8_t *rowsOfBlocks,
                       int threads) {
  moveBlockPanels(panels, rows, rowBytes, group, int4, rowsOfBlocks, false,
                  threads);
}

bool quantizeInt8(const float *source, int64_t rows, int64_t cols,
                  int64_t group, uint8_t *blocks, QuantizeProblem &problem,
                  int threads) {
  const int64_t rowBytes = format::int8RowBytes(cols, group);
  return forEachRow(rows, cols, threads, problem,
                    [&](int64_t r, QuantizeProblem &rowProblem) {
                      return quantizeRow(source + r * cols, cols, group, r,
                                         blocks + r * rowBytes, rowProblem);
                    });
}

bool quantizeInt4(const float *source, int64_t rows, int64_t cols,
                  uint8_t *blocks, QuantizeProblem &problem, int threads) {
  const int64_t rowBytes = format::int4RowBytes(cols);
  return forEachRow(rows, cols, threads, problem,
                    [&](int64_t r, QuantizeProblem &rowProblem) {
                      return quantizeInt4Row(source + r * cols, cols, r,
                                             blocks + r * rowBytes, rowProblem);
                    });
}

bool quantizeKQuant(const float *source, int64_t rows, int64_t cols,
                    int ggmlType, uint8_t *blocks, QuantizeProblem &problem,
                    int threads) {
  const int64_t blockBytes = format::kQuantBlockBytes(ggmlType);
  const int64_t rowBytes = cols / format::kKQuantBlockValues * blockBytes;
  return forEachRow(rows, cols, threads, problem,
                    [&](int64_t r, QuantizeProblem &rowProblem) {
                      return quantizeKQuantRow(source + r * cols, cols, ggmlType,
                                               r, blocks + r * rowBytes,
                                               rowProblem);
                    });
}

} // namespace tfmc::runtime
