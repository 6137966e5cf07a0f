// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int8 group=8 activations=int8" -tfm-quantise-once="target=x86-64-avx512" | FileCheck %s
// int4 quantises x in its blocks' groups of 32.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int4 activations=int8" -tfm-quantise-once="target=x86-64-avx2" | FileCheck %s --check-prefix=INT4
// f32 activations: no linear quantises, nothing to share.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int8 group=8" -tfm-quantise-once="target=x86-64-avx512" | FileCheck %s --check-prefix=NONE --implicit-check-not=tfm.quantize
// CUDA programs' linears keep their own quantisation.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int8 group=8 activations=int8" -tfm-quantise-once="target=cuda" | FileCheck %s --check-prefix=NONE --implicit-check-not=tfm.quantize
// Linears of one x in different groups (int8 gate and up, an int4 side
// projection) each keep their own quantisation.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int8 group=8 activations=int8 overrides=side=int4" -tfm-quantise-once="target=x86-64-avx512" | FileCheck %s --check-prefix=MIXED
// RUN: not tfm-opt %s -split-input-file -tfm-quantise-once="target=z80" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: {{.*}}z80
// NONE-LABEL: func.func @layer
// NONE-LABEL: func.func @gated

// A layer's q, k and v read the norm's output: one tfm.quantize of it, in
// the weights' group, whose bytes (K = 16, G = 8: 16 levels, 2 scales of 4
// bytes and the flag, 25 bytes in 4 chunks of 8) all three read. The
// output projection, x's only reader, quantises its own.
// CHECK-LABEL: func.func @layer
// CHECK: %[[N:.*]] = tfm.rms_norm
// CHECK-NEXT: %[[Q:.*]] = tfm.quantize %[[N]] {group = 8 : i64} : tensor<?x?x16xf32> -> tensor<?x?x32xi8>
// CHECK: tfm.linear %[[Q]], %{{.*}}#0 {tfm.activations = "int8"} : (tensor<?x?x32xi8>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
// CHECK: tfm.linear %[[Q]], %{{.*}}#1 {tfm.activations = "int8"}
// CHECK: tfm.linear %[[Q]], %{{.*}}#2 {tfm.activations = "int8"}
// CHECK: tfm.linear %{{.*}}, %{{.*}} {tfm.activations = "int8"} : (tensor<?x?x16xf32>, tensor<16x16xf32>)
// CHECK-NOT: tfm.quantize
// INT4-LABEL: func.func @layer
// INT4: tfm.quantize %{{.*}} {group = 32 : i64} : tensor<?x?x16xf32> -> tensor<?x?x64xi8>
// INT4-NOT: tfm.quantize
// MIXED-LABEL: func.func @layer
// MIXED: tfm.quantize %{{.*}} {group = 8 : i64}
func.func @layer(%x: tensor<?x?x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %g = tfm.weight "ln.weight" : tensor<16xf32>
  %n = tfm.rms_norm %x, %g {eps = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %w = tfm.weight "qkv" : tensor<48x16xf32>
  %parts:3 = tfm.split %w {axis = 0 : i64} : tensor<48x16xf32> -> tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
  %q = tfm.linear %n, %parts#0 : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %k = tfm.linear %n, %parts#1 : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %v = tfm.linear %n, %parts#2 : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  %wo = tfm.weight "o" : tensor<16x16xf32>
  %o = tfm.linear %v, %wo : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %q, %k, %o : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// -----

// A gated linear and a linear read one x: one quantisation for both.
// CHECK-LABEL: func.func @gated
// CHECK: %[[Q:.*]] = tfm.quantize %arg0 {group = 8 : i64} : tensor<?x?x16xf32> -> tensor<?x?x32xi8>
// CHECK: tfm.gated_linear %[[Q]], %{{.*}}, %{{.*}} <silu> {tfm.activations = "int8"} : (tensor<?x?x32xi8>,
// CHECK: tfm.linear %[[Q]], %{{.*}} {tfm.activations = "int8"} : (tensor<?x?x32xi8>,
// INT4-LABEL: func.func @gated
// INT4: tfm.quantize %arg0 {group = 32 : i64}
// MIXED-LABEL: func.func @gated
// MIXED-NOT: tfm.quantize
func.func @gated(%x: tensor<?x?x16xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x16xf32>) {
  %gate = tfm.weight "gate" : tensor<32x16xf32>
  %up = tfm.weight "up" : tensor<32x16xf32>
  %h = tfm.gated_linear %x, %gate, %up <silu> : (tensor<?x?x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  %w = tfm.weight "side" : tensor<16x16xf32>
  %s = tfm.linear %x, %w : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %h, %s : tensor<?x?x32xf32>, tensor<?x?x16xf32>
}
