// RUN: tfm-opt %s | tfm-opt | FileCheck %s
// RUN: tfm-opt %s --mlir-print-op-generic | tfm-opt | FileCheck %s
// Every tfm op parses, prints, and parses again to the same thing, in both
// the custom and the generic form.

// CHECK-LABEL: func.func @k_quant_weights
func.func @k_quant_weights() -> (tensor<4x256xf32>, tensor<4x512xf32>, tensor<4x256xf32>) {
  // CHECK: tfm.weight "a" {storage = #tfm.storage<q4_k>} : tensor<4x256xf32>
  %a = tfm.weight "a" {storage = #tfm.storage<q4_k>} : tensor<4x256xf32>
  // CHECK: tfm.weight "b" {storage = #tfm.storage<q5_k>} : tensor<4x512xf32>
  %b = tfm.weight "b" {storage = #tfm.storage<q5_k>} : tensor<4x512xf32>
  // CHECK: tfm.weight "c" {storage = #tfm.storage<q6_k>} : tensor<4x256xf32>
  %c = tfm.weight "c" {storage = #tfm.storage<q6_k>} : tensor<4x256xf32>
  return %a, %b, %c : tensor<4x256xf32>, tensor<4x512xf32>, tensor<4x256xf32>
}

// CHECK-LABEL: func.func @embed_and_positions
func.func @embed_and_positions(%ids: tensor<?x?xi64>) -> tensor<?x?x8xf32> {
  // CHECK: %[[T:.*]] = tfm.weight "src_embed.weight" {group = 32 : i64, storage = #tfm.storage<int8>} : tensor<10x8xf32>
  %table = tfm.weight "src_embed.weight" {group = 32 : i64, storage = #tfm.storage<int8>} : tensor<10x8xf32>
  // CHECK: tfm.embedding %[[T]][%{{.*}}] : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %x = tfm.embedding %table[%ids] : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  // CHECK: tfm.scale %{{.*}} by 2.8284271247461903 : tensor<?x?x8xf32>
  %s = tfm.scale %x by 2.8284271247461903 : tensor<?x?x8xf32>
  // CHECK: tfm.softcap %{{.*}} at 3.000000e+01 : tensor<?x?x8xf32>
  %sc = tfm.softcap %x at 30.0 : tensor<?x?x8xf32>
  // CHECK: tfm.positions %{{.*}} {kind = #tfm.positions<sinusoidal>} : tensor<?x?x8xf32>
  %p = tfm.positions %s {kind = #tfm.positions<sinusoidal>} : tensor<?x?x8xf32>
  %pt = tfm.weight "src_pos.weight" : tensor<16x8xf32>
  // CHECK: tfm.positions %{{.*}}, %{{.*}} {kind = #tfm.positions<learned>} : tensor<?x?x8xf32>, tensor<16x8xf32>
  %l = tfm.positions %p, %pt {kind = #tfm.positions<learned>} : tensor<?x?x8xf32>, tensor<16x8xf32>
  return %l : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @attention_step_by_step
func.func @attention_step_by_step(%x: tensor<?x?x8xf32>, %mask: tensor<?x?xi64>) -> tensor<?x?x8xf32> {
  %w = tfm.weight "w" : tensor<24x8xf32>
  %b = tfm.weight "b" : tensor<24xf32>
  // CHECK: tfm.split %{{.*}} {axis = 0 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  %wq, %wk, %wv = tfm.split %w {axis = 0 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  %bq, %bk, %bv = tfm.split %b {axis = 0 : i64} : tensor<24xf32> -> tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
  // CHECK: tfm.linear %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %q = tfm.linear %x, %wq bias %bq : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  // CHECK: tfm.linear %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = tfm.linear %x, %wk : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  // CHECK: tfm.split_heads %{{.*}} : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %qh = tfm.split_heads %q : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %kh = tfm.split_heads %k : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  // CHECK: tfm.matmul %{{.*}}, %{{.*}} {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %s = tfm.matmul %qh, %kh {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  // CHECK: tfm.causal_mask %{{.*}} : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %c = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  // CHECK: tfm.window_mask %{{.*}} {size = 3 : i64} : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %wm = tfm.window_mask %x {size = 3 : i64} : tensor<?x?x8xf32> -> tensor<?x?xi1>
  // CHECK: tfm.padding_mask %{{.*}} : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %p = tfm.padding_mask %mask : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  // CHECK: tfm.mask_and %{{.*}}, %{{.*}} : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %cp = tfm.mask_and %c, %p : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  // CHECK: tfm.apply_mask %{{.*}}, %{{.*}} : tensor<?x2x?x?xf32>, tensor<?x1x?x?xi1>
  %m = tfm.apply_mask %s, %cp : tensor<?x2x?x?xf32>, tensor<?x1x?x?xi1>
  %m2 = tfm.apply_mask %m, %wm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  // CHECK: tfm.softmax %{{.*}} {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %sm = tfm.softmax %m2 {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %sm, %qh : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  // CHECK: tfm.merge_heads %{{.*}} : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  %mh = tfm.merge_heads %o : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  return %mh : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @additive_mask
func.func @additive_mask(%s: tensor<1x2x3x3xf32>, %bias: tensor<3x3xf32>) -> tensor<1x2x3x3xf32> {
  // CHECK: tfm.apply_mask %{{.*}}, %{{.*}} : tensor<1x2x3x3xf32>, tensor<3x3xf32>
  %m = tfm.apply_mask %s, %bias : tensor<1x2x3x3xf32>, tensor<3x3xf32>
  return %m : tensor<1x2x3x3xf32>
}

// CHECK-LABEL: func.func @norm_ffn
func.func @norm_ffn(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %g = tfm.weight "g" : tensor<8xf32>
  // CHECK: tfm.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %n = tfm.layer_norm %x, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  // CHECK: tfm.activation %{{.*}} <gelu_tanh> : tensor<?x?x8xf32>
  %a = tfm.activation %n <gelu_tanh> : tensor<?x?x8xf32>
  // CHECK: tfm.activation %{{.*}} <relu>
  %r = tfm.activation %a <relu> : tensor<?x?x8xf32>
  // CHECK: tfm.add %{{.*}}, %{{.*}} : tensor<?x?x8xf32>
  %s = tfm.add %r, %x : tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @fused_attention
func.func @fused_attention(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  // CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}}, key_padding %{{.*}} {mask = #tfm.mask<causal, padding>, scale = 5.000000e-01 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi64> -> tensor<?x2x?x4xf32>
  %a = tfm.attention %q, %k, %v, key_padding %kp {mask = #tfm.mask<causal, padding>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi64> -> tensor<?x2x?x4xf32>
  // CHECK: tfm.attention {{.*}} {mask = #tfm.mask<none>, scale = 5.000000e-01 : f64}
  %b = tfm.attention %a, %k, %v {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  // CHECK: tfm.attention {{.*}} {mask = #tfm.mask<causal, window(16)>, scale = 5.000000e-01 : f64}
  %c = tfm.attention %b, %k, %v {mask = #tfm.mask<causal, window(16)>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %c : tensor<?x2x?x4xf32>
}

// CHECK-LABEL: func.func @fused_forms
func.func @fused_forms(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>, %w2: tensor<8x16xf32>, %kp: tensor<?x?xi64>) -> tensor<?x?x8xf32> {
  // CHECK: tfm.linear %{{.*}}, %{{.*}} bias %{{.*}} {activation = #tfm.activation<gelu>}
  %h = tfm.linear %x, %w bias %b {activation = #tfm.activation<gelu>} : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  // CHECK: tfm.linear %{{.*}}, %{{.*}} residual %{{.*}} : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %y = tfm.linear %h, %w2 residual %x : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %g = tfm.weight "g" : tensor<8xf32>
  // CHECK: tfm.layer_norm %{{.*}} residual %{{.*}}, %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f64}
  %n = tfm.layer_norm %y residual %x, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  // CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}}, key_padding %{{.*}} {heads = 2 : i64, mask = #tfm.mask<causal, padding>, scale = 5.000000e-01 : f64} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %a = tfm.attention %n, %n, %n, key_padding %kp {heads = 2 : i64, mask = #tfm.mask<causal, padding>, scale = 0.5 : f64} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// A Hugging Face checkpoint's parameter: other names to try, and Conv1D's
// [in, out] layout (the file holds the transpose of the result).
// CHECK-LABEL: func.func @imported_weights
func.func @imported_weights() -> (tensor<24x8xf32>, tensor<24xf32>) {
  // CHECK: tfm.weight "h.0.attn.c_attn.weight" {alt_names = ["transformer.h.0.attn.c_attn.weight"], transposed} : tensor<24x8xf32>
  %w = tfm.weight "h.0.attn.c_attn.weight" {alt_names = ["transformer.h.0.attn.c_attn.weight"], transposed} : tensor<24x8xf32>
  // CHECK: tfm.weight "h.0.attn.c_attn.bias" {alt_names = ["transformer.h.0.attn.c_attn.bias", "x.bias"]} : tensor<24xf32>
  %b = tfm.weight "h.0.attn.c_attn.bias" {alt_names = ["transformer.h.0.attn.c_attn.bias", "x.bias"]} : tensor<24xf32>
  return %w, %b : tensor<24x8xf32>, tensor<24xf32>
}

// A prefill's last position, before its final norm and output projection.
// CHECK-LABEL: func.func @last_position
func.func @last_position(%x: tensor<?x?x8xf32>, %s: tensor<2x5x8xf32>) -> (tensor<?x1x8xf32>, tensor<2x1x8xf32>) {
  // CHECK: tfm.last_position %{{.*}} : tensor<?x?x8xf32> -> tensor<?x1x8xf32>
  %l = tfm.last_position %x : tensor<?x?x8xf32> -> tensor<?x1x8xf32>
  // CHECK: tfm.last_position %{{.*}} : tensor<2x5x8xf32> -> tensor<2x1x8xf32>
  %m = tfm.last_position %s : tensor<2x5x8xf32> -> tensor<2x1x8xf32>
  return %l, %m : tensor<?x1x8xf32>, tensor<2x1x8xf32>
}

// The Llama family's ops: RMSNorm, rotary positions, grouped-query heads,
// the gated feed-forward, and a decode step's masks and attention.
// CHECK-LABEL: func.func @llama_ops
func.func @llama_ops(%x: tensor<?x?x8xf32>, %r: tensor<?x?x8xf32>, %kp: tensor<?x?xi64>) -> (tensor<?x?x8xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x2x?x4xf32>, tensor<?x?x8xf32>, tensor<?x?xi1>) {
  %g = tfm.weight "g" : tensor<8xf32>
  // CHECK: tfm.rms_norm %{{.*}}, %{{.*}} {eps = 9.9999999999999995E-7 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %n = tfm.rms_norm %x, %g {eps = 1.0e-6 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  // CHECK: tfm.rms_norm %{{.*}} residual %{{.*}}, %{{.*}} {eps = 1.000000e-05 : f64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %n2 = tfm.rms_norm %n residual %r, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>

  // Q, K and V rows of unequal sizes (2 query heads, 1 K/V head of 4).
  %w = tfm.weight "w" : tensor<16x8xf32>
  // CHECK: tfm.split %{{.*}} {axis = 0 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  %wq, %wk, %wv = tfm.split %w {axis = 0 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
  %q = tfm.linear %n2, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = tfm.linear %n2, %wk : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  %v = tfm.linear %n2, %wv : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  // CHECK: tfm.rope %{{.*}} {heads = 2 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x8xf32>
  %qr = tfm.rope %q {heads = 2 : i64, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  // CHECK: tfm.rope %{{.*}} {from_cache, heads = 1 : i64, theta = 5.000000e+05 : f64} : tensor<?x?x4xf32>
  %kr = tfm.rope %k {from_cache, heads = 1 : i64, theta = 5.0e5 : f64} : tensor<?x?x4xf32>
  // CHECK: tfm.rope %{{.*}} {heads = 2 : i64, scaling = #tfm.rope_scaling<linear, factor = 4.000000e+00>, theta = 1.000000e+04 : f64} : tensor<?x?x8xf32>
  %ql = tfm.rope %q {heads = 2 : i64, scaling = #tfm.rope_scaling<linear, factor = 4.0>, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  // CHECK: tfm.rope %{{.*}} {heads = 2 : i64, scaling = #tfm.rope_scaling<llama3, factor = 3.200000e+01, low_freq_factor = 1.000000e+00, high_freq_factor = 4.000000e+00, original_max_len = 8192>, theta = 5.000000e+05 : f64} : tensor<?x?x8xf32>
  %q3 = tfm.rope %q {heads = 2 : i64, scaling = #tfm.rope_scaling<llama3, factor = 32.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_len = 8192>, theta = 5.0e5 : f64} : tensor<?x?x8xf32>
  // CHECK: tfm.rope %{{.*}} {heads = 2 : i64, scaling = #tfm.rope_scaling<longrope, attention_factor = 1.1902380714238083, factors = [1.000000e+00, 1.0800000429153442]>, theta = 1.000000e+04 : f64} : tensor<?x?x8xf32>
  %qp = tfm.rope %q {heads = 2 : i64, scaling = #tfm.rope_scaling<longrope, attention_factor = 1.1902380714238083, factors = [1.0, 1.0800000429153442]>, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  %kh = tfm.split_heads %kr : tensor<?x?x4xf32> -> tensor<?x1x?x4xf32>
  // CHECK: tfm.repeat_heads %{{.*}} : tensor<?x1x?x4xf32> -> tensor<?x2x?x4xf32>
  %kk = tfm.repeat_heads %kh : tensor<?x1x?x4xf32> -> tensor<?x2x?x4xf32>

  // CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}}, key_padding %{{.*}} {heads = 2 : i64, kv_heads = 1 : i64, mask = #tfm.mask<causal, padding>, scale = 5.000000e-01 : f64} : tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %a = tfm.attention %qr, %kr, %v, key_padding %kp {heads = 2 : i64, kv_heads = 1 : i64, mask = #tfm.mask<causal, padding>, scale = 0.5 : f64} : tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  // CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}} {from_cache, heads = 2 : i64, kv_heads = 1 : i64, mask = #tfm.mask<causal, window(4)>, scale = 5.000000e-01 : f64}
  %d = tfm.attention %a, %kr, %v {from_cache, heads = 2 : i64, kv_heads = 1 : i64, mask = #tfm.mask<causal, window(4)>, scale = 0.5 : f64} : tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32> -> tensor<?x?x8xf32>
  // CHECK: tfm.window_mask %{{.*}} {from_cache, size = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %wm = tfm.window_mask %x {from_cache, size = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x?xi1>

  // The gated feed-forward, unfused and fused.
  %wg = tfm.weight "wg" : tensor<16x8xf32>
  %wu = tfm.weight "wu" : tensor<16x8xf32>
  %bg = tfm.weight "bg" : tensor<16xf32>
  %bu = tfm.weight "bu" : tensor<16xf32>
  %gl = tfm.linear %d, %wg : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %ul = tfm.linear %d, %wu : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  // CHECK: tfm.activation %{{.*}} <silu> : tensor<?x?x16xf32>
  %ga = tfm.activation %gl <silu> : tensor<?x?x16xf32>
  // CHECK: tfm.mul %{{.*}}, %{{.*}} : tensor<?x?x16xf32>
  %h = tfm.mul %ga, %ul : tensor<?x?x16xf32>
  // CHECK: tfm.gated_linear %{{.*}}, %{{.*}}, %{{.*}} <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %f = tfm.gated_linear %d, %wg, %wu <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  // CHECK: tfm.gated_linear %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}}, %{{.*}} <gelu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %fb = tfm.gated_linear %d, %wg, %wu bias %bg, %bu <gelu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  // CHECK: tfm.linear %{{.*}}, %{{.*}} {activation = #tfm.activation<silu>}
  %s = tfm.linear %d, %wg {activation = #tfm.activation<silu>} : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %fs = tfm.add %f, %fb : tensor<?x?x16xf32>
  %ft = tfm.add %fs, %s : tensor<?x?x16xf32>
  return %d, %h, %ft, %kk, %n2, %wm : tensor<?x?x8xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x2x?x4xf32>, tensor<?x?x8xf32>, tensor<?x?xi1>
}

// Grouped-query attention in the [B, H, S, D] layout: K and V's heads
// dimension is the K/V head count.
// CHECK-LABEL: func.func @grouped_split_layout
func.func @grouped_split_layout(%q: tensor<?x4x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x4x?x4xf32> {
  // CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}} {from_cache, mask = #tfm.mask<causal>, scale = 5.000000e-01 : f64} : tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  %a = tfm.attention %q, %k, %v {from_cache, mask = #tfm.mask<causal>, scale = 0.5 : f64} : tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  return %a : tensor<?x4x?x4xf32>
}

// CHECK-LABEL: func.func @quantize
func.func @quantize(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  // CHECK: %[[Q:.*]] = tfm.quantize %{{.*}} {group = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x?x20xi8>
  %q = tfm.quantize %x {group = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x?x20xi8>
  // CHECK: tfm.linear %[[Q]], %{{.*}} {tfm.activations = "int8"} : (tensor<?x?x20xi8>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %y = tfm.linear %q, %w {tfm.activations = "int8"} : (tensor<?x?x20xi8>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
