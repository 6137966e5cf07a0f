// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx512-bf16 | FileCheck %s --check-prefix=PAIRS
// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx512 | FileCheck %s --check-prefix=F32FMA
//
// Linears with bf16 weights and bf16 activations (tfm.activations =
// "bf16", tfmc --activations bf16), planned as passes/Tile.cpp explains.
// With the bf16 dot product (x86-64-avx512-bf16) the pair form reads W as
// it is stored, a vector of pairs a column: one register, nothing to
// widen, for every row count. So a micro tile is f32's dot tile
// (tile.mlir: 5 x 4 at many rows on AVX-512, 1 x 8 for a row) and no
// panel is widened. Without it (x86-64-avx512) the plan is bf16 weights'
// (tile-narrow-weights.mlir): the panel for many rows, and one more
// register per column for one row (1 x c needs c + 1 + 2c <= 32 registers:
// c <= 10, the search stops at 8).
// PAIRS-LABEL: func.func @prefill
// PAIRS: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 5 : i64, micro_n = 4 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx512-bf16", tiles_per_task = 6 : i64, vector = 16 : i64, widen_panel = false}
// F32FMA-LABEL: func.func @prefill
// F32FMA: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 5 : i64, micro_n = 4 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx512", tiles_per_task = 6 : i64, vector = 16 : i64, widen_panel = true}
func.func @prefill(%x: tensor<?x?x768xf32>) -> tensor<?x?x768xf32> attributes {tfm.max_len = 1024 : i64} {
  %w = tfm.weight "w" {storage = #tfm.storage<bf16>} : tensor<768x768xf32>
  %y = tfm.linear %x, %w {tfm.activations = "bf16"} : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  return %y : tensor<?x?x768xf32>
}

// PAIRS-LABEL: func.func @decode
// PAIRS: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 8 : i64, target = "x86-64-avx512-bf16", tiles_per_task = 3 : i64, vector = 16 : i64, widen_panel = false}
// F32FMA-LABEL: func.func @decode
// F32FMA: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 8 : i64, target = "x86-64-avx512", tiles_per_task = 3 : i64, vector = 16 : i64, widen_panel = false}
func.func @decode(%x: tensor<?x1x768xf32>) -> tensor<?x1x768xf32> attributes {tfm.max_len = 1024 : i64, tfm.decode_step} {
  %w = tfm.weight "w" {storage = #tfm.storage<bf16>} : tensor<768x768xf32>
  %y = tfm.linear %x, %w {tfm.activations = "bf16"} : (tensor<?x1x768xf32>, tensor<768x768xf32>) -> tensor<?x1x768xf32>
  return %y : tensor<?x1x768xf32>
}

// A gated linear's decode step (gate and up: two accumulators and two W
// vectors a column): with pairs 1 x c needs 2c + 1 + 2c <= 32 registers,
// c <= 7; widened in registers 2c + 1 + 4c, c <= 5. Tasks: at most 8
// tiles (ceil(2048 / c) / 32 > 8 either way).
// PAIRS-LABEL: func.func @gated_decode
// PAIRS: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 7 : i64, target = "x86-64-avx512-bf16", tiles_per_task = 8 : i64, vector = 16 : i64, widen_panel = false}
// F32FMA-LABEL: func.func @gated_decode
// F32FMA: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 5 : i64, target = "x86-64-avx512", tiles_per_task = 8 : i64, vector = 16 : i64, widen_panel = false}
func.func @gated_decode(%x: tensor<?x1x768xf32>) -> tensor<?x1x2048xf32> attributes {tfm.max_len = 1024 : i64, tfm.decode_step} {
  %g = tfm.weight "gate" {storage = #tfm.storage<bf16>} : tensor<2048x768xf32>
  %u = tfm.weight "up" {storage = #tfm.storage<bf16>} : tensor<2048x768xf32>
  %h = tfm.gated_linear %x, %g, %u <silu> {tfm.activations = "bf16"} : (tensor<?x1x768xf32>, tensor<2048x768xf32>, tensor<2048x768xf32>) -> tensor<?x1x2048xf32>
  return %h : tensor<?x1x2048xf32>
}
