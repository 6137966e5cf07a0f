// RUN: tfm-opt %s -split-input-file -tfm-check-kernels -verify-diagnostics
// The default pipeline stops at the check: the op that was not fused is the
// one error, and nothing after it (no tile plan, no arena slot) ran. Without
// threads, functions are checked in order and the first failure stops the
// pass (with threads a later function's error may also be printed).
// The one error (tfm-opt adds the source line and a caret, tfmc prints the
// error line alone), no note, and no IR comes out.
// RUN: not tfm-opt %s -tfm-default-pipeline="target=x86-64-avx2" --mlir-print-op-on-diagnostic=false --mlir-disable-threading > %t.out 2> %t.err
// RUN: FileCheck %s --check-prefix=PIPELINE --input-file=%t.err --implicit-check-not=error: --implicit-check-not=note:
// RUN: count 0 < %t.out
// PIPELINE: check-kernels.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'tfm.matmul' is not a kernel: the middle end could not fuse it

// A softmax over queries (axis 2) is not attention's: fusion leaves the
// chain, and the check names its first op that no kernel implements.
func.func @unfused(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32> attributes {tfm.max_len = 16 : i64} {
  // expected-error @+1 {{'tfm.matmul' is not a kernel: the middle end could not fuse it}}
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %p = tfm.softmax %s {axis = 2 : i64} : tensor<?x2x?x?xf32>
  return %p : tensor<?x2x?x?xf32>
}

// -----

// Kernels and views of memory pass the check.
func.func @kernels(%x: tensor<?x?x8xf32>) -> tensor<?x?x4xf32> attributes {tfm.max_len = 16 : i64} {
  %w = tfm.weight "w" : tensor<4x8xf32>
  %y = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %z = tfm.activation %y <relu> : tensor<?x?x4xf32>
  return %z : tensor<?x?x4xf32>
}

// -----

// The Llama family's kernels pass the check: rms_norm, rope, mul, silu,
// gated_linear, and attention over fewer K/V heads.
func.func @llama_kernels(%x: tensor<?x?x8xf32>, %k: tensor<?x?x4xf32>) -> tensor<?x?x8xf32> attributes {tfm.max_len = 16 : i64} {
  %g = tfm.weight "g" : tensor<8xf32>
  %n = tfm.rms_norm %x, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %q = tfm.rope %n {heads = 2 : i64, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  %a = tfm.attention %q, %k, %k {heads = 2 : i64, kv_heads = 1 : i64, mask = #tfm.mask<causal>, scale = 0.5 : f64} : tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  %wg = tfm.weight "wg" : tensor<16x8xf32>
  %wu = tfm.weight "wu" : tensor<16x8xf32>
  %h = tfm.gated_linear %a, %wg, %wu <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %s = tfm.activation %h <silu> : tensor<?x?x16xf32>
  %m = tfm.mul %s, %h : tensor<?x?x16xf32>
  %wd = tfm.weight "wd" : tensor<8x16xf32>
  %y = tfm.linear %m, %wd : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// repeat_heads is a step of the unfused form only: no kernel repeats heads
// (fused attention reads K/V heads in place).
func.func @repeated_heads_left(%k: tensor<?x2x?x4xf32>) -> tensor<?x4x?x4xf32> attributes {tfm.max_len = 16 : i64} {
  // expected-error @+1 {{'tfm.repeat_heads' is not a kernel: the middle end could not fuse it}}
  %r = tfm.repeat_heads %k : tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  return %r : tensor<?x4x?x4xf32>
}
