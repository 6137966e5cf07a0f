//===- GgmlBlocks.h - ggml's block types, converted at load ------*- C++ -*-===//
//
// A GGUF tensor of one of ggml's block types (TensorView::ggmlBlocks,
// GgufWeights.h) becomes what the program stores at load
// (ModelWeights.cpp), as ggml defines the blocks (ggml-common.h) and their
// values (ggml-quants.c's dequantize_row_*): dequantizeGgml gives the
// values as f32, exactly as ggml's dequantize_row_* computes them (in f32,
// in the same order), for the conversion to the program's f32, bf16, int8
// or int4. (Q8_0 and Q4_0 are also tfmc's int8 with groups of 32 and its
// int4, byte for byte: used in place, with no conversion. Q5_0's and
// IQ4_NL's values are int8 with groups of 32 too, each block's d times a
// small integer: transcodeGgmlToInt8 rewrites their blocks as such, exactly.)
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_GGMLBLOCKS_H
#define TFMC_RUNTIME_GGMLBLOCKS_H

#include "runtime/core/Tensor.h"

#include <cstdint>

namespace tfmc::runtime {

/// Whether dequantizeGgml converts `ggmlType` (Q8_0, Q4_0, Q5_0, IQ4_NL,
/// Q4_K, Q5_K, Q6_K).
bool canDequantizeGgml(int32_t ggmlType);

/// `tensor` (a block tensor, `ggmlBlocks` one that canDequantizeGgml) as
/// tensor.numElements() f32 values, row-major, on up to `threads` threads.
void dequantizeGgml(const TensorView &tensor, float *target, int threads = 1);

/// Whether transcodeGgmlToInt8 takes `ggmlType`: Q5_0 and IQ4_NL.
bool transcodesToInt8(int32_t ggmlType);

/// `tensor` (`ggmlBlocks` Q5_0 or IQ4_NL, blocks of 32 values along each
/// row) as tfmc's int8 with groups of 32 (support/WeightFormat.h; Q8_0's
/// block: an f16 d, then 32 int8 q), block for block, written to `target`
/// (tensor.numElements() / 32 * 34 bytes), on up to `threads` threads.
/// Exact: each block keeps its d as it is (the same f16 bits, a NaN or an
/// infinity included) and value j's q is the integer ggml multiplies d by,
///   Q5_0:   q_j = (the low nibble of qs[j] for j < 16, the high nibble of
///           qs[j - 16] for j >= 16, bit j of qh as the fifth bit) - 16,
///           in -16 .. 15;
///   IQ4_NL: q_j = kvalues_iq4nl[the same nibble] (-127 .. 113);
/// so that q_j · d is bit for bit the f32 value dequantizeGgml gives (ggml's
/// dequantize_row_q5_0 and dequantize_row_iq4_nl compute that product too).
void transcodeGgmlToInt8(const TensorView &tensor, uint8_t *target,
                         int threads = 1);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GGMLBLOCKS_H
