//===- GgmlBlocks.cpp - ggml's block types, converted at load -------------===//
//
// The blocks, as ggml-common.h declares them (little-endian, packed):
//   block_q8_0 { f16 d; int8 qs[32]; }                       34 bytes, 32 values
//   block_q4_0 { f16 d; uint8 qs[16]; }                      18 bytes, 32 values
//   block_q5_0 { f16 d; uint8 qh[4], qs[16]; }               22 bytes, 32 values
//   block_iq4_nl { f16 d; uint8 qs[16]; }                    18 bytes, 32 values
//   block_q4_K { f16 d, dmin; uint8 scales[12], qs[128]; }   144 bytes, 256 values
//   block_q5_K { f16 d, dmin; uint8 scales[12], qh[32], qs[128]; } 176 bytes
//   block_q6_K { uint8 ql[128], qh[64]; int8 scales[16]; f16 d; } 210 bytes
//
//===----------------------------------------------------------------------===//

#include "runtime/core/GgmlBlocks.h"
#include "runtime/core/WeightConvert.h"
#include "support/Gguf.h"
#include "support/WeightFormat.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace tfmc::runtime {
namespace {

using support::GgmlType;

uint16_t halfAt(const uint8_t *bytes) {
  return static_cast<uint16_t>(bytes[0] | (bytes[1] << 8));
}

/// ggml's get_scale_min_k4 (support/WeightFormat.h's kQuantScaleMin).
void scaleMinK4(int j, const uint8_t *q, uint8_t &scale, uint8_t &min) {
  int sc = 0, m = 0;
  format::kQuantScaleMin(j, q, sc, m);
  scale = static_cast<uint8_t>(sc);
  min = static_cast<uint8_t>(m);
}

void dequantizeQ8_0(const uint8_t *block, float *y) {
  const float d = f16ToFloat(halfAt(block));
  const auto *qs = reinterpret_cast<const int8_t *>(block + 2);
  for (int j = 0; j < 32; ++j)
    y[j] = qs[j] * d;
}

void dequantizeQ4_0(const uint8_t *block, float *y) {
  const float d = f16ToFloat(halfAt(block));
  const uint8_t *qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = ((qs[j] & 0x0F) - 8) * d;
    y[j + 16] = ((qs[j] >> 4) - 8) * d;
  }
}

/// Q5_0's integers, value j = d · q_j (ggml's dequantize_row_q5_0): the
/// low nibbles of qs are values 0 .. 15, the high ones 16 .. 31, and bit j
/// of qh (a little-endian uint32) is value j's fifth bit; q_j is that
/// 5-bit number less 16.
void decodeQ5_0(const uint8_t *block, int8_t *q) {
  const uint32_t qh = static_cast<uint32_t>(block[2]) |
                      static_cast<uint32_t>(block[3]) << 8 |
                      static_cast<uint32_t>(block[4]) << 16 |
                      static_cast<uint32_t>(block[5]) << 24;
  const uint8_t *qs = block + 6;
  for (int j = 0; j < 16; ++j) {
    const int low = (qs[j] & 0x0F) | ((qh >> j) & 1) << 4;
    const int high = (qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4;
    q[j] = static_cast<int8_t>(low - 16);
    q[j + 16] = static_cast<int8_t>(high - 16);
  }
}

/// ggml's kvalues_iq4nl (ggml-common.h): IQ4_NL's 16 levels.
constexpr int8_t kIq4NlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};

/// IQ4_NL's integers, value j = d · q_j (ggml's dequantize_row_iq4_nl): the
/// level of the low nibble of qs[j] for j < 16, of the high nibble of
/// qs[j - 16] for j >= 16.
void decodeIq4Nl(const uint8_t *block, int8_t *q) {
  const uint8_t *qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    q[j] = kIq4NlValues[qs[j] & 0x0F];
    q[j + 16] = kIq4NlValues[qs[j] >> 4];
  }
}

template <void (*decode)(const uint8_t *, int8_t *)>
void dequantizeInt8Like(const uint8_t *block, float *y) {
  const float d = f16ToFloat(halfAt(block));
  int8_t q[32];
  decode(block, q);
  for (int j = 0; j < 32; ++j)
    y[j] = q[j] * d;
}

void dequantizeQ4_K(const uint8_t *block, float *y) {
  const float d = f16ToFloat(halfAt(block));
  const float min = f16ToFloat(halfAt(block + 2));
  const uint8_t *scales = block + 4;
  const uint8_t *q = block + 16;
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, q += 32) {
    uint8_t sc, m;
    scaleMinK4(is + 0, scales, sc, m);
    const float d1 = d * sc, m1 = min * m;
    scaleMinK4(is + 1, scales, sc, m);
    const float d2 = d * sc, m2 = min * m;
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * (q[l] & 0xF) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * (q[l] >> 4) - m2;
  }
}

void dequantizeQ5_K(const uint8_t *block, float *y) {
  const float d = f16ToFloat(halfAt(block));
  const float min = f16ToFloat(halfAt(block + 2));
  const uint8_t *scales = block + 4;
  const uint8_t *qh = block + 16;
  const uint8_t *ql = block + 48;
  uint8_t u1 = 1, u2 = 2;
  for (int j = 0, is = 0; j < 256; j += 64, is += 2, ql += 32) {
    uint8_t sc, m;
    scaleMinK4(is + 0, scales, sc, m);
    const float d1 = d * sc, m1 = min * m;
    scaleMinK4(is + 1, scales, sc, m);
    const float d2 = d * sc, m2 = min * m;
    for (int l = 0; l < 32; ++l)
      *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
    for (int l = 0; l < 32; ++l)
      *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
    u1 <<= 2;
    u2 <<= 2;
  }
}

void dequantizeQ6_K(const uint8_t *block, float *y) {
  const uint8_t *ql = block;
  const uint8_t *qh = block + 128;
  const auto *sc = reinterpret_cast<const int8_t *>(block + 192);
  const float d = f16ToFloat(halfAt(block + 208));
  for (int n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = static_cast<int8_t>((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = static_cast<int8_t>((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l + 0] = d * sc[is + 0] * q1;
      y[l + 32] = d * sc[is + 2] * q2;
      y[l + 64] = d * sc[is + 4] * q3;
      y[l + 96] = d * sc[is + 6] * q4;
    }
  }
}

using BlockFunction = void (*)(const uint8_t *, float *);

BlockFunction blockFunction(int32_t type) {
  switch (static_cast<GgmlType>(type)) {
  case GgmlType::Q8_0: return dequantizeQ8_0;
  case GgmlType::Q4_0: return dequantizeQ4_0;
  case GgmlType::Q5_0: return dequantizeInt8Like<decodeQ5_0>;
  case GgmlType::IQ4_NL: return dequantizeInt8Like<decodeIq4Nl>;
  case GgmlType::Q4_K: return dequantizeQ4_K;
  case GgmlType::Q5_K: return dequantizeQ5_K;
  case GgmlType::Q6_K: return dequantizeQ6_K;
  default: return nullptr;
  }
}

using DecodeFunction = void (*)(const uint8_t *, int8_t *);

DecodeFunction decodeFunction(int32_t type) {
  switch (static_cast<GgmlType>(type)) {
  case GgmlType::Q5_0: return decodeQ5_0;
  case GgmlType::IQ4_NL: return decodeIq4Nl;
  default: return nullptr;
  }
}

/// run(begin, end) over [0, blocks): small tensors (`values` below 2^20) on
/// this thread, large ones split in contiguous chunks over up to `threads`.
template <typename Run>
void forBlocks(int64_t blocks, int64_t values, int threads, Run run) {
  const int64_t workers =
      std::clamp<int64_t>(values / (1 << 20), 1, std::max(threads, 1));
  if (workers == 1) {
    run(int64_t(0), blocks);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w)
    pool.emplace_back(run, blocks * w / workers, blocks * (w + 1) / workers);
  for (std::thread &thread : pool)
    thread.join();
}

} // namespace

bool canDequantizeGgml(int32_t type) { return blockFunction(type) != nullptr; }

void dequantizeGgml(const TensorView &tensor, float *target, int threads) {
  BlockFunction convert = blockFunction(tensor.ggmlBlocks);
  const support::GgmlTypeInfo &info =
      support::ggmlTypeInfo(static_cast<GgmlType>(tensor.ggmlBlocks));
  const int64_t blocks = tensor.numElements() / info.blockValues;
  const auto *bytes = static_cast<const uint8_t *>(tensor.data);
  forBlocks(blocks, tensor.numElements(), threads,
            [&](int64_t begin, int64_t end) {
              for (int64_t b = begin; b < end; ++b)
                convert(bytes + b * info.blockBytes,
                        target + b * info.blockValues);
            });
}

bool transcodesToInt8(int32_t type) { return decodeFunction(type) != nullptr; }

void transcodeGgmlToInt8(const TensorView &tensor, uint8_t *target,
                         int threads) {
  DecodeFunction decode = decodeFunction(tensor.ggmlBlocks);
  const support::GgmlTypeInfo &info =
      support::ggmlTypeInfo(static_cast<GgmlType>(tensor.ggmlBlocks));
  constexpr int64_t kGroup = 32;
  constexpr int64_t kOut = format::int8BlockBytes(kGroup);
  const int64_t blocks = tensor.numElements() / kGroup;
  const auto *bytes = static_cast<const uint8_t *>(tensor.data);
  forBlocks(blocks, tensor.numElements(), threads,
            [&](int64_t begin, int64_t end) {
              for (int64_t b = begin; b < end; ++b) {
                const uint8_t *block = bytes + b * info.blockBytes;
                uint8_t *out = target + b * kOut;
                out[0] = block[0]; // d: the same f16, bit for bit
                out[1] = block[1];
                decode(block, reinterpret_cast<int8_t *>(out + 2));
              }
            });
}

} // namespace tfmc::runtime
