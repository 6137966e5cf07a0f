//===- GgmlBlocks.h - ggml's block types, converted at load ------*- C++ -*-===//
//
// A GGUF tensor of one of ggml's block types (TensorView::ggmlBlocks,
// GgufWeights.h) becomes what the program stores at load
// (ModelWeights.cpp), as ggml defines the blocks (ggml-common.h) and their
// values (ggml-quants.c's dequantize_row_*):
//  - dequantizeGgml: the values as f32, exactly as ggml's dequantize_row_*
//    computes them (in f32, in the same order), for the conversion to the
//    program's f32, bf16, int8 or int4;
//  - splitQ8_0: Q8_0 blocks as tfmc's int8 with a group of 32: q = qs and
//    the scale d, bytes copied, nothing rounded.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_RUNTIME_GGMLBLOCKS_H
#define TFMC_RUNTIME_GGMLBLOCKS_H

#include "runtime/core/Tensor.h"

#include <cstdint>

namespace tfmc::runtime {

/// Whether dequantizeGgml converts `ggmlType` (Q8_0, Q4_0, Q4_K, Q5_K,
/// Q6_K).
bool canDequantizeGgml(int32_t ggmlType);

/// `tensor` (a block tensor, `ggmlBlocks` one that canDequantizeGgml) as
/// tensor.numElements() f32 values, row-major, on up to `threads` threads.
void dequantizeGgml(const TensorView &tensor, float *target, int threads = 1);

/// A Q8_0 tensor of `rows` x `cols` values as tfmc int8 in groups of 32:
/// `q` rows * cols bytes, `scales` rows * cols / 32 f16 bits.
void splitQ8_0(const TensorView &tensor, int64_t rows, int64_t cols, int8_t *q,
               uint16_t *scales);

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GGMLBLOCKS_H
