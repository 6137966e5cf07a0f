// RUN: tfm-opt %s -split-input-file -tfm-check-kernels -verify-diagnostics
// The default pipeline stops at the check: the op that was not fused is the
// one error, and nothing after it (no tile plan, no arena slot) ran.
// The one error (tfm-opt adds the source line and a caret, tfmc prints the
// error line alone), no note, and no IR comes out.
// RUN: not tfm-opt %s -tfm-default-pipeline="target=x86-64-avx2" --mlir-print-op-on-diagnostic=false > %t.out 2> %t.err
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
