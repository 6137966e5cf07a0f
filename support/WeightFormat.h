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

} // namespace tfmc::format

#endif // TFMC_SUPPORT_WEIGHTFORMAT_H
