// RUN: tfm-opt %s -split-input-file -tfm-weight-layout="target=x86-64-avx2" | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-weight-layout="target=x86-64-avx512" | FileCheck %s
// CUDA kernels read row-major weights: the pass changes nothing.
// RUN: tfm-opt %s -split-input-file -tfm-weight-layout="target=cuda" | FileCheck %s --check-prefix=CUDA --implicit-check-not=panel
// Narrow weights (tfm-weight-storage first) keep their storage's layout.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=bf16" -tfm-weight-layout="target=x86-64-avx2" | FileCheck %s --check-prefix=BF16
// RUN: not tfm-opt %s -split-input-file -tfm-weight-layout="target=z80" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: {{.*}}z80
// CUDA: tfm.weight "qkv" : tensor<48x16xf32>

// A GPT-2-like layer: the packed Q/K/V weight split at whole panels (16
// rows each) and the FFN weights get panels of 16; the embedding table,
// also the output head (tied), keeps rows; so do the positions, the norm
// and the biases.
// CHECK-LABEL: func.func @decoder
// CHECK-DAG: tfm.weight "wte" : tensor<10x16xf32>
// CHECK-DAG: tfm.weight "qkv" {panel = 16 : i64} : tensor<48x16xf32>
// CHECK-DAG: tfm.weight "qkv_bias" : tensor<48xf32>
// CHECK-DAG: tfm.weight "fc" {panel = 16 : i64} : tensor<32x16xf32>
// CHECK-DAG: tfm.weight "ln.weight" : tensor<16xf32>
// BF16-LABEL: func.func @decoder
// BF16-DAG: tfm.weight "qkv" {storage = #tfm.storage<bf16>} : tensor<48x16xf32>
// BF16-DAG: tfm.weight "fc" {storage = #tfm.storage<bf16>} : tensor<32x16xf32>
func.func @decoder(%ids: tensor<?x?xi64>) -> tensor<?x?x10xf32> {
  %table = tfm.weight "wte" : tensor<10x16xf32>
  %x = tfm.embedding %table[%ids] : tensor<10x16xf32>, tensor<?x?xi64> -> tensor<?x?x16xf32>
  %g = tfm.weight "ln.weight" : tensor<16xf32>
  %n = tfm.rms_norm %x, %g {eps = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %w = tfm.weight "qkv" : tensor<48x16xf32>
  %wb = tfm.weight "qkv_bias" : tensor<48xf32>
  %parts:3 = tfm.split %w {axis = 0 : i64} : tensor<48x16xf32> -> tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
  %bparts:3 = tfm.split %wb {axis = 0 : i64} : tensor<48xf32> -> tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  %q = tfm.linear %n, %parts#0 bias %bparts#0 : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %k = tfm.linear %q, %parts#1 bias %bparts#1 : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %v = tfm.linear %k, %parts#2 bias %bparts#2 : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %fc = tfm.weight "fc" : tensor<32x16xf32>
  %h = tfm.linear %v, %fc : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  %proj = tfm.weight "proj" : tensor<16x32xf32>
  %o = tfm.linear %h, %proj : (tensor<?x?x32xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
  %logits = tfm.linear %o, %table : (tensor<?x?x16xf32>, tensor<10x16xf32>) -> tensor<?x?x10xf32>
  return %logits : tensor<?x?x10xf32>
}

// -----

// Rows that 16 does not divide, a split whose parts are not whole panels
// (Q of 16 rows, K and V of 8: grouped-query attention), and a weight that
// is also a learned position table in another entry point stay row-major.
// CHECK-LABEL: func.func @forward
// CHECK: tfm.weight "shared" : tensor<16x8xf32>
// CHECK-LABEL: func.func @decode
// CHECK-DAG: tfm.weight "shared" : tensor<16x8xf32>
// CHECK-DAG: tfm.weight "odd" : tensor<24x8xf32>
// CHECK-DAG: tfm.weight "gqa" : tensor<32x8xf32>
// CHECK-DAG: tfm.weight "only_linear" {panel = 16 : i64} : tensor<16x8xf32>
func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %pt = tfm.weight "shared" : tensor<16x8xf32>
  %p = tfm.positions %x, %pt {kind = #tfm.positions<learned>} : tensor<?x?x8xf32>, tensor<16x8xf32>
  return %p : tensor<?x?x8xf32>
}
func.func @decode(%x: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  %w = tfm.weight "shared" : tensor<16x8xf32>
  %y = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %w2 = tfm.weight "only_linear" : tensor<16x8xf32>
  %z = tfm.linear %x, %w2 : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %w3 = tfm.weight "odd" : tensor<24x8xf32>
  %o = tfm.linear %x, %w3 : (tensor<?x?x8xf32>, tensor<24x8xf32>) -> tensor<?x?x24xf32>
  %w4 = tfm.weight "gqa" : tensor<32x8xf32>
  %parts:3 = tfm.split %w4 {axis = 0 : i64} : tensor<32x8xf32> -> tensor<16x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  %q = tfm.linear %x, %parts#0 : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %k = tfm.linear %x, %parts#1 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %s = tfm.add %y, %z : tensor<?x?x16xf32>
  %t = tfm.add %s, %q : tensor<?x?x16xf32>
  return %t : tensor<?x?x16xf32>
}

// -----

// A gated linear's gate and up share one layout: a gate that is also a
// learned position table keeps rows, and so does its up weight; the down
// projection and another gated linear's weights get panels.
// CHECK-LABEL: func.func @gated
// CHECK-DAG: tfm.weight "gate_and_table" : tensor<32x16xf32>
// CHECK-DAG: tfm.weight "up" : tensor<32x16xf32>
// CHECK-DAG: tfm.weight "down" {panel = 16 : i64} : tensor<16x32xf32>
// CHECK-DAG: tfm.weight "gate2" {panel = 16 : i64} : tensor<32x16xf32>
// CHECK-DAG: tfm.weight "up2" {panel = 16 : i64} : tensor<32x16xf32>
func.func @gated(%x: tensor<?x?x16xf32>) -> tensor<?x?x32xf32> {
  %table = tfm.weight "gate_and_table" : tensor<32x16xf32>
  %p = tfm.positions %x, %table {kind = #tfm.positions<learned>} : tensor<?x?x16xf32>, tensor<32x16xf32>
  %wu = tfm.weight "up" : tensor<32x16xf32>
  %h = tfm.gated_linear %p, %table, %wu <silu> : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  %wd = tfm.weight "down" : tensor<16x32xf32>
  %y = tfm.linear %h, %wd residual %x : (tensor<?x?x32xf32>, tensor<16x32xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  %wg2 = tfm.weight "gate2" : tensor<32x16xf32>
  %wu2 = tfm.weight "up2" : tensor<32x16xf32>
  %h2 = tfm.gated_linear %y, %wg2, %wu2 <silu> : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  return %h2 : tensor<?x?x32xf32>
}
