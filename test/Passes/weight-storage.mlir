// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int8" | FileCheck %s --check-prefix=INT8
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int8 group=32" | FileCheck %s --check-prefix=GROUP32
// int4 is GGUF's Q4_0 block: group 32 whatever the group option (int8's).
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int4 group=64 activations=int8" | FileCheck %s --check-prefix=INT4
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=bf16" | FileCheck %s --check-prefix=BF16
// f32 (the default) changes nothing.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage | FileCheck %s --check-prefix=F32 --implicit-check-not=storage
// Single weights' own storage (a GGUF file's tensors of another type): the
// override where the weight may be narrow, f32 included; a gated linear's
// gate and up with different overrides both take dtype's.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int4 group=32 overrides=wte=int8,qkv=f32,gate=int8,down=bf16,wpe=int8" | FileCheck %s --check-prefix=OWN
// OWN-LABEL: func.func @decoder
// OWN-DAG: tfm.weight "wte" {group = 32 : i64, storage = #tfm.storage<int8>} : tensor<10x8xf32>
// OWN-DAG: tfm.weight "qkv" : tensor<24x8xf32>
// OWN-DAG: tfm.weight "wpe" : tensor<16x8xf32>
// OWN-LABEL: func.func @gated
// OWN-DAG: tfm.weight "gate" {group = 32 : i64, storage = #tfm.storage<int4>} : tensor<16x8xf32>
// OWN-DAG: tfm.weight "up" {group = 32 : i64, storage = #tfm.storage<int4>} : tensor<16x8xf32>
// OWN-DAG: tfm.weight "down" {storage = #tfm.storage<bf16>} : tensor<8x16xf32>
// With dtype f32, overrides alone narrow their weights.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="overrides=wte=int4" | FileCheck %s --check-prefix=OWN-F32
// OWN-F32-LABEL: func.func @decoder
// OWN-F32-DAG: tfm.weight "wte" {group = 32 : i64, storage = #tfm.storage<int4>} : tensor<10x8xf32>
// OWN-F32-DAG: tfm.weight "qkv" : tensor<24x8xf32>
// RUN: not tfm-opt %s -split-input-file -tfm-weight-storage="overrides=wte=fp8" 2>&1 | FileCheck %s --check-prefix=BAD-OWN
// BAD-OWN: error: tfm-weight-storage: overrides: expected NAME=f32|bf16|int8|int4|q4_k|q5_k|q6_k, got 'wte=fp8'
// RUN: not tfm-opt %s -split-input-file -tfm-weight-storage="dtype=fp16" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: tfm-weight-storage: dtype must be f32, bf16, int8, int4, q4_k, q5_k or q6_k, got 'fp16'
// int8 activations mark every linear whose weight is int8 (all four here:
// the split Q/K/V and the tied head), nothing else.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int8 activations=int8" | FileCheck %s --check-prefix=ACT8
// RUN: not tfm-opt %s -split-input-file -tfm-weight-storage="dtype=bf16 activations=int8" 2>&1 | FileCheck %s --check-prefix=ACTBF16
// RUN: not tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int8 activations=int4" 2>&1 | FileCheck %s --check-prefix=ACTBAD
// ACTBF16: error: tfm-weight-storage: activations=int8 needs dtype=int8, int4 or a K-quant
// ACTBAD: error: tfm-weight-storage: activations must be f32, int8 or bf16, got 'int4'
// bf16 activations mark every linear whose weight is bf16, the same four
// and the gated ones; they need bf16 weights.
// RUN: tfm-opt %s -split-input-file -tfm-weight-storage="dtype=bf16 activations=bf16" | FileCheck %s --check-prefix=ACTB
// RUN: not tfm-opt %s -split-input-file -tfm-weight-storage="dtype=int8 activations=bf16" 2>&1 | FileCheck %s --check-prefix=ACTBNEEDS
// ACTBNEEDS: error: tfm-weight-storage: activations=bf16 needs dtype=bf16
// ACTB-LABEL: func.func @decoder
// ACTB-COUNT-4: tfm.linear {{.*}} {tfm.activations = "bf16"} :
// ACTB-LABEL: func.func @decode
// ACTB: tfm.linear %arg0, %0 : (tensor<?x?x8xf32>, tensor<16x8xf32>)
// ACTB: tfm.linear %arg0, %2 {tfm.activations = "bf16"} :
// ACTB-LABEL: func.func @gated
// ACTB: tfm.gated_linear {{.*}} <silu> {tfm.activations = "bf16"} :
// ACTB: tfm.linear {{.*}} residual %arg0 {tfm.activations = "bf16"} :
// ACT8-LABEL: func.func @decoder
// ACT8-COUNT-4: tfm.linear {{.*}} {tfm.activations = "int8"} :
// A linear of an f32 weight (@decode's first) and a gated linear whose
// weights stay f32 (@gated_partners) keep f32 activations.
// ACT8-LABEL: func.func @decode
// ACT8: tfm.linear %arg0, %0 : (tensor<?x?x8xf32>, tensor<16x8xf32>)
// ACT8: tfm.linear %arg0, %2 {tfm.activations = "int8"} :
// ACT8-LABEL: func.func @gated
// ACT8: tfm.gated_linear {{.*}} <silu> {tfm.activations = "int8"} :
// ACT8: tfm.linear {{.*}} residual %arg0 {tfm.activations = "int8"} :
// ACT8-LABEL: func.func @gated_partners
// ACT8: tfm.gated_linear %1, %0, %2 <silu> : (
// ACT8: tfm.linear %3, %4 {tfm.activations = "int8"} :
// ACT8: tfm.gated_linear %5, %6, %2 <silu> : (
// ACT8: tfm.linear %7, %4 {tfm.activations = "int8"} :

// A GPT-2-like layer: the embedding table is also the output head's weight
// (tied), the packed Q/K/V weight is split along rows; the learned position
// table, the norm's gain and bias and the linear's bias stay f32.
// INT8-LABEL: func.func @decoder
// INT8-DAG: tfm.weight "wte" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<10x8xf32>
// INT8-DAG: tfm.weight "wpe" : tensor<16x8xf32>
// INT8-DAG: tfm.weight "qkv" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<24x8xf32>
// INT8-DAG: tfm.weight "qkv_bias" : tensor<24xf32>
// INT8-DAG: tfm.weight "ln.weight" : tensor<8xf32>
// INT8-DAG: tfm.weight "ln.bias" : tensor<8xf32>
// GROUP32-DAG: tfm.weight "wte" {group = 32 : i64, storage = #tfm.storage<int8>} : tensor<10x8xf32>
// INT4-LABEL: func.func @decoder
// INT4-DAG: tfm.weight "wte" {group = 32 : i64, storage = #tfm.storage<int4>} : tensor<10x8xf32>
// INT4-DAG: tfm.weight "qkv" {group = 32 : i64, storage = #tfm.storage<int4>} : tensor<24x8xf32>
// INT4-DAG: tfm.weight "wpe" : tensor<16x8xf32>
// INT4-DAG: tfm.linear {{.*}} {tfm.activations = "int8"} :
// BF16-DAG: tfm.weight "wte" {storage = #tfm.storage<bf16>} : tensor<10x8xf32>
// BF16-DAG: tfm.weight "qkv" {storage = #tfm.storage<bf16>} : tensor<24x8xf32>
// BF16-DAG: tfm.weight "wpe" : tensor<16x8xf32>
// F32: tfm.weight "wte" : tensor<10x8xf32>
func.func @decoder(%ids: tensor<?x?xi64>) -> tensor<?x?x10xf32> {
  %table = tfm.weight "wte" : tensor<10x8xf32>
  %x = tfm.embedding %table[%ids] : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %pt = tfm.weight "wpe" : tensor<16x8xf32>
  %p = tfm.positions %x, %pt {kind = #tfm.positions<learned>} : tensor<?x?x8xf32>, tensor<16x8xf32>
  %g = tfm.weight "ln.weight" : tensor<8xf32>
  %b = tfm.weight "ln.bias" : tensor<8xf32>
  %n = tfm.layer_norm %p, %g, %b {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %w = tfm.weight "qkv" : tensor<24x8xf32>
  %wb = tfm.weight "qkv_bias" : tensor<24xf32>
  %parts:3 = tfm.split %w {axis = 0 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  %bparts:3 = tfm.split %wb {axis = 0 : i64} : tensor<24xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  %q = tfm.linear %n, %parts#0 bias %bparts#0 : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %k = tfm.linear %q, %parts#1 bias %bparts#1 : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %v = tfm.linear %k, %parts#2 bias %bparts#2 : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %logits = tfm.linear %v, %table : (tensor<?x?x8xf32>, tensor<10x8xf32>) -> tensor<?x?x10xf32>
  return %logits : tensor<?x?x10xf32>
}

// -----

// A weight with a use that no kernel widens (here a learned position table
// that is also a linear's weight) stays f32 in every function: the runtime
// loads one tensor per name for all entry points.
// INT8-LABEL: func.func @forward
// INT8: tfm.weight "shared" : tensor<16x8xf32>
// INT8-LABEL: func.func @decode
// INT8: tfm.weight "shared" : tensor<16x8xf32>
// INT8: tfm.weight "only_linear" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<16x8xf32>
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
  %s = tfm.add %y, %z : tensor<?x?x16xf32>
  return %s : tensor<?x?x16xf32>
}

// -----

// A Llama layer's fused FFN: the gate and up weights of tfm.gated_linear are
// widened by the kernel like a linear's; the down projection too; RMSNorm's
// gain stays f32.
// INT8-LABEL: func.func @gated
// INT8-DAG: tfm.weight "gate" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<16x8xf32>
// INT8-DAG: tfm.weight "up" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<16x8xf32>
// INT8-DAG: tfm.weight "down" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<8x16xf32>
// INT8-DAG: tfm.weight "norm.weight" : tensor<8xf32>
// GROUP32-DAG: tfm.weight "up" {group = 32 : i64, storage = #tfm.storage<int8>} : tensor<16x8xf32>
// BF16-DAG: tfm.weight "gate" {storage = #tfm.storage<bf16>} : tensor<16x8xf32>
// BF16-DAG: tfm.weight "up" {storage = #tfm.storage<bf16>} : tensor<16x8xf32>
// BF16-DAG: tfm.weight "down" {storage = #tfm.storage<bf16>} : tensor<8x16xf32>
// BF16-DAG: tfm.weight "norm.weight" : tensor<8xf32>
// F32: tfm.weight "gate" : tensor<16x8xf32>
func.func @gated(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %g = tfm.weight "norm.weight" : tensor<8xf32>
  %n = tfm.rms_norm %x, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %wg = tfm.weight "gate" : tensor<16x8xf32>
  %wu = tfm.weight "up" : tensor<16x8xf32>
  %h = tfm.gated_linear %n, %wg, %wu <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %wd = tfm.weight "down" : tensor<8x16xf32>
  %y = tfm.linear %h, %wd residual %x : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// A gated linear's kernel reads its gate and up in one storage. A gate that
// must stay f32 (it is also a learned position table) keeps its up weight
// f32; that up weight is also the up of a second gated linear, whose gate
// then stays f32 too. The down projection is narrow.
// INT8-LABEL: func.func @gated_partners
// INT8-DAG: tfm.weight "gate_and_table" : tensor<16x8xf32>
// INT8-DAG: tfm.weight "up" : tensor<16x8xf32>
// INT8-DAG: tfm.weight "gate2" : tensor<16x8xf32>
// INT8-DAG: tfm.weight "down" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<8x16xf32>
// BF16-DAG: tfm.weight "gate_and_table" : tensor<16x8xf32>
// BF16-DAG: tfm.weight "up" : tensor<16x8xf32>
// BF16-DAG: tfm.weight "gate2" : tensor<16x8xf32>
// BF16-DAG: tfm.weight "down" {storage = #tfm.storage<bf16>} : tensor<8x16xf32>
func.func @gated_partners(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %table = tfm.weight "gate_and_table" : tensor<16x8xf32>
  %p = tfm.positions %x, %table {kind = #tfm.positions<learned>} : tensor<?x?x8xf32>, tensor<16x8xf32>
  %wu = tfm.weight "up" : tensor<16x8xf32>
  %h = tfm.gated_linear %p, %table, %wu <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %wd = tfm.weight "down" : tensor<8x16xf32>
  %y = tfm.linear %h, %wd : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  %wg2 = tfm.weight "gate2" : tensor<16x8xf32>
  %h2 = tfm.gated_linear %y, %wg2, %wu <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %y2 = tfm.linear %h2, %wd : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  return %y2 : tensor<?x?x8xf32>
}
