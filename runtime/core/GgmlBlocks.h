//===- GgmlBlocks.h - ggml's block types, converted at load ------*- C++ -*-===//
//
// A GGUF tensor of one of ggml's block types (TensorView::ggmlBlocks,
// GgufWeights.h) becomes what the program stores at load
// (ModelWeights.cpp), as ggml defines the blocks (ggml-common.h) and their
// values (ggml-quants.c's dequantize_row_*): dequantizeGgml gives the
// values as f32, exactly as ggml's dequantize_row_* computes them (in f32,
// in the same order), for the conversion to the program's f32, bf16, int8
// or int4. (Q8_0 and Q4_0 are also tfmc's int8 with groups of 32 and its
// int4, byte for byte: used in place, with no conversion.)
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

} // namespace tfmc::runtime

#endif // TFMC_RUNTIME_GGMLBLOCKS_H
