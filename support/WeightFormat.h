//===- WeightFormat.h - how low-precision weights are laid out --*- C++ -*-===//
//
// The storage formats of `tfmc --weight-dtype` that both the compiler (the
// kernels that read them, the plan's offsets) and the runtime (conversion,
// loading, the plan's checks) must agree on. Plain C++, no dependencies.
//
// int4 is GGUF's Q4_0 block, byte for byte, so that a Q4_0 tensor can be
// used in place: each row of K values is ceil(K / 32) blocks of 18 bytes,
//   bytes 0-1   d, an IEEE half (little-endian);
//   byte 2 + j  (q_j) | (q_{j+16} << 4), j = 0 .. 15, each q in 0 .. 15;
// and value j of the block is (q_j - 8) · d. A row whose K is not a
// multiple of 32 ends in a block padded with q = 8 (value 0).
//
// int8 in groups of G values (the plan's "group") is stored in blocks the
// same way, so that GGUF's Q8_0 (G = 32) is it byte for byte and is used in
// place: each row of K values is ceil(K / G) blocks of 2 + G bytes,
//   bytes 0-1   d, an IEEE half (little-endian);
//   byte 2 + j  q_j, a signed byte (-127 .. 127), j = 0 .. G - 1;
// and value j of the block is q_j · d. A row whose K is not a multiple of G
// ends in a block padded with q = 0.
//
// An f32 linear weight W [N, K] of a CPU program is stored in panels of P
// rows (the plan's "panel"; P = 16 on x86, a cache line, and P divides N):
// [N / P, K, P], element (n, k) at ((n / P) · K + k) · P + n % P. A step
// of K then reads P consecutive outputs' weights as whole vectors, the
// layout the packed GEMM used to build per call. A row split of W at whole
// panels starts at the same element offset as in the row-major layout. A
// file `convert-weights` writes for such a program holds those weights in
// panels and says so in its metadata (kLayoutMetadataKey = kPanelsLayout).
//
// An int8 or int4 linear weight whose every use multiplies int8 activations
// through a microkernel that reads them so (x86-64-avx512: the plan's
// "panel", P = kBlockPanelRows) is stored in block panels: panel p holds
// rows 16p .. 16p + 15 in as many bytes as their blocks, laid out for
// `vpdpbusd` (runtime/ukernels/IntegerPanels.h): for each group g in turn,
// G / 4 vectors of 64 bytes (int4: 4), whose bytes 4i .. 4i + 3 in vector
// s are row 16p + i's
//   int8: values 4s .. 4s + 3 of block g, each q + 128 (an unsigned byte);
//   int4: bytes 2 + 4s .. 5 + 4s of block g as stored (their low nibbles
//         are values 4s .. 4s + 3, their high ones 16 + 4s .. 19 + 4s);
// then, after every group's values, each group's 16 scales d (f16, row
// order). A row split at whole panels starts at the same byte offset as in
// the row layout. A file convert-weights writes for such a program holds
// them so (the same [rows, blocks, block bytes] shape) and says so with the
// same metadata as f32 panels.
//
// q4_k, q5_k and q6_k are llama.cpp's K-quants (ggml's block_q4_K,
// block_q5_K, block_q6_K), byte for byte, so that a GGUF file's tensors of
// those types are used in place. Each row of K values (K a multiple of 256)
// is K / 256 super-blocks:
//   q4_k (144 bytes): d, dmin (IEEE halves), scales[12], qs[128];
//   q5_k (176 bytes): d, dmin, scales[12], qh[32], qs[128];
//   q6_k (210 bytes): ql[128], qh[64], scales[16] (signed bytes), d.
// q4_k and q5_k: sub-block s (values 32s .. 32s + 31 of the super-block)
// has a 6-bit scale sc_s and minimum m_s packed in `scales`
// (kQuantScaleMin), and value 32s + l is f32(d · sc_s) · q - f32(dmin ·
// m_s), where q (0 .. 15; q5_k 0 .. 31) is the low (s even) or high (s odd)
// nibble of qs[32 (s / 2) + l], q5_k's fifth bit bit s of qh[l]. q6_k:
// value 128h + 32c + l (h = 0, 1 the half, c = 0 .. 3, l = 0 .. 31) is
// f32(d · scales[8h + 2c + l / 16]) · (q - 32), q (0 .. 63) the low (c = 0,
// 1) or high (c = 2, 3) nibble of ql[64h + 32 (c % 2) + l] and bits 2c ..
// 2c + 1 of qh[32h + l] above it. These are ggml's dequantize_row_q*_K.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_SUPPORT_WEIGHTFORMAT_H
#define TFMC_SUPPORT_WEIGHTFORMAT_H

#include <cstdint>

namespace tfmc::format {

/// Values in an int4 block (and its scale group).
constexpr int64_t kInt4BlockValues = 32;
/// Bytes of an int4 block: the f16 scale, then 16 bytes of two values each.
constexpr int64_t kInt4BlockBytes = 18;
/// Offset of an int4 or int8 block's values (after its scale).
constexpr int64_t kBlockScaleBytes = 2;
/// The value a stored nibble q stands for is (q - kInt4Zero) · d.
constexpr int kInt4Zero = 8;

/// Blocks of a row of `columns` values in groups of `group` (int8's, or
/// int4's 32), the last one padded.
constexpr int64_t blocksPerRow(int64_t columns, int64_t group) {
  return (columns + group - 1) / group;
}

/// Blocks of an int4 row of `columns` values.
constexpr int64_t int4BlocksPerRow(int64_t columns) {
  return blocksPerRow(columns, kInt4BlockValues);
}

/// A row of x quantised once for every int8-activation linear that reads it
/// (tfm.quantize, tfm-quantise-once), as bytes in chunks of G (the group):
/// for K values in groups of G, first the levels of each group in turn
/// (ceil(K / G) chunks of signed bytes, 0 past K), then each group's scale
/// d (an f32, little-endian), then one byte that is 1 when the row held a
/// NaN or an infinity (else 0), padded with zeros to a whole chunk. The
/// levels and scales are those each linear would compute itself
/// (docs/precision.md, "int8 activations").
constexpr int64_t quantisedScalesOffset(int64_t columns, int64_t group) {
  return blocksPerRow(columns, group) * group;
}
constexpr int64_t quantisedFlagOffset(int64_t columns, int64_t group) {
  return quantisedScalesOffset(columns, group) +
         4 * blocksPerRow(columns, group);
}
constexpr int64_t quantisedRowBytes(int64_t columns, int64_t group) {
  return (quantisedFlagOffset(columns, group) + group) / group * group;
}

/// The safetensors metadata entry of a file whose f32 linear weights are in
/// panels, [rows / P, cols, P] (written by `NAME convert-weights`).
constexpr const char *kLayoutMetadataKey = "tfmc.weight_layout";
constexpr const char *kPanelsLayout = "panels";

/// Rows of an int8 or int4 weight's block panel.
constexpr int64_t kBlockPanelRows = 16;
/// Bytes of one row's values in a block panel's vector (four values).
constexpr int64_t kBlockPanelLaneBytes = 4;

/// Bytes of an int4 row of `columns` values.
constexpr int64_t int4RowBytes(int64_t columns) {
  return int4BlocksPerRow(columns) * kInt4BlockBytes;
}

/// Bytes of an int8 block of `group` values: its f16 scale, then the values.
constexpr int64_t int8BlockBytes(int64_t group) {
  return kBlockScaleBytes + group;
}

/// Bytes of an int8 row of `columns` values in groups of `group`.
constexpr int64_t int8RowBytes(int64_t columns, int64_t group) {
  return blocksPerRow(columns, group) * int8BlockBytes(group);
}

/// Values in a K-quant super-block.
constexpr int64_t kKQuantBlockValues = 256;
/// Bytes of a q4_k, q5_k and q6_k super-block.
constexpr int64_t kQ4KBlockBytes = 144;
constexpr int64_t kQ5KBlockBytes = 176;
constexpr int64_t kQ6KBlockBytes = 210;
/// Bytes of a super-block of ggml type `ggmlType` (kGgmlQ4K, kGgmlQ5K,
/// kGgmlQ6K, below), or 0 for another type.
constexpr int64_t kQuantBlockBytes(int ggmlType);
/// Where a super-block's parts start (bytes from its first).
constexpr int64_t kKQuantScalesOffset = 4;   // q4_k, q5_k: after d, dmin
constexpr int64_t kQ4KValuesOffset = 16;     // qs
constexpr int64_t kQ5KHighBitsOffset = 16;   // qh
constexpr int64_t kQ5KValuesOffset = 48;     // qs
constexpr int64_t kQ6KHighBitsOffset = 128;  // qh
constexpr int64_t kQ6KScalesOffset = 192;    // scales
constexpr int64_t kQ6KScaleOffset = 208;     // d
/// ggml's type numbers of the K-quants (a GGUF tensor's type, and the
/// microkernel's `type` argument, support/Microkernels.h).
constexpr int kGgmlQ4K = 12, kGgmlQ5K = 13, kGgmlQ6K = 14;

constexpr int64_t kQuantBlockBytes(int ggmlType) {
  return ggmlType == kGgmlQ4K   ? kQ4KBlockBytes
         : ggmlType == kGgmlQ5K ? kQ5KBlockBytes
         : ggmlType == kGgmlQ6K ? kQ6KBlockBytes
                                : 0;
}

/// Sub-block `s` (0 .. 7) of a q4_k or q5_k super-block: its 6-bit scale
/// and minimum from the 12 bytes `scales` (ggml's get_scale_min_k4).
inline void kQuantScaleMin(int s, const uint8_t *scales, int &scale,
                           int &minimum) {
  if (s < 4) {
    scale = scales[s] & 63;
    minimum = scales[s + 4] & 63;
  } else {
    scale = (scales[s + 4] & 0xF) | ((scales[s - 4] >> 6) << 4);
    minimum = (scales[s + 4] >> 4) | ((scales[s] >> 6) << 4);
  }
}

} // namespace tfmc::format

#endif // TFMC_SUPPORT_WEIGHTFORMAT_H
