// A packed plan that asks for the f32 microkernel with a tile other than the
// target's (x86-64-avx512's is 12 x 2, depth blocks of 128: support/
// Microkernels.h; this plan has x86-64-avx2's) is refused at the op, never
// compiled into a call that reads x packed in other tiles.
// RUN: tfmc-codegen %s --target x86-64-avx512 --verify-diagnostics

module @no_f32_microkernel {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x16xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 1024 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx512", unroll = 1 : i64, vector = 16 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %w = tfm.weight "w" {panel = 16 : i64} : tensor<16x8xf32>
  // expected-error @+1 {{tile plan's f32 microkernel tile (micro_m 6, micro_n 2, block_m 6, block_k 256) is not the one of target 'x86-64-avx512' (12, 2, 12, 128)}}
  %y = tfm.linear %e, %w {tfm.arena = array<i64: 512, 512>, tfm.tile = {block_k = 256 : i64, block_m = 6 : i64, dot_block_m = 128 : i64, dot_micro_m = 4 : i64, dot_micro_n = 1 : i64, dot_tiles_per_task = 1 : i64, dot_widen_panel = false, kind = "packed_gemm", micro_m = 6 : i64, micro_n = 2 : i64, microkernel = true, small_rows = 32 : i64, target = "x86-64-avx512", task_m = 510 : i64, task_n = 32 : i64, vector = 16 : i64}} : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
}
