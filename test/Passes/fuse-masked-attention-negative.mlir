// RUN: tfm-opt %s -split-input-file -tfm-fuse-masked-attention | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-fuse-masked-attention=remarks=true -verify-diagnostics | FileCheck %s
//
// Negative cases of tfm-fuse-masked-attention: chains whose fusion would
// change the result or drop a value someone reads. Each case checks that no
// tfm.attention was created and the original chain is still there (first
// RUN), and, with remarks, the exact reason the pass gives at the softmax
// (second RUN, -verify-diagnostics; the same FileCheck lines must still hold).
//
// Shapes as in fuse-masked-attention.mlir: Q, K, V [B, 2, S, 4], scores
// [B, 2, Sq, Sk], key padding masks [B, Sk], %x [B, S, 8].

// Guards: softmax over the query axis (2) is not attention over keys.
// CHECK-LABEL: func.func @softmax_over_queries
// CHECK-NOT: tfm.attention
// CHECK: tfm.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: tfm.scale
// CHECK: tfm.padding_mask %arg3
// CHECK: tfm.apply_mask
// CHECK: tfm.softmax %{{.*}} {axis = 2 : i64}
// CHECK: tfm.matmul %{{.*}}, %arg2
// CHECK-NOT: tfm.attention
func.func @softmax_over_queries(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m = tfm.apply_mask %ss, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  // expected-remark @+1 {{not fused into tfm.attention: softmax is over axis 2, not the key axis 3}}
  %p = tfm.softmax %m {axis = 2 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: a mask applied after softmax (the weights no longer sum to 1, and
// the fused kernel has no place for it) blocks fusion.
// CHECK-LABEL: func.func @mask_after_softmax
// CHECK-NOT: tfm.attention
// CHECK: tfm.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: tfm.softmax %{{.*}} {axis = 3 : i64}
// CHECK: tfm.causal_mask %arg3
// CHECK: tfm.apply_mask
// CHECK: tfm.matmul %{{.*}}, %arg2
// CHECK-NOT: tfm.attention
func.func @mask_after_softmax(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: the attention weights are not multiplied by the values (softmax(...) · V) directly}}
  %p = tfm.softmax %s {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %pm = tfm.apply_mask %p, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %o = tfm.matmul %pm, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: a negative scale between two masks: −inf · −1 = +inf, so the
// causal mask would turn into "attend only to the future".
// CHECK-LABEL: func.func @negative_scale_among_masks
// CHECK-NOT: tfm.attention
// CHECK: tfm.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: tfm.causal_mask
// CHECK: tfm.apply_mask
// CHECK: tfm.scale %{{.*}} by -1.000000e+00
// CHECK: tfm.padding_mask %arg3
// CHECK: tfm.apply_mask
// CHECK: tfm.softmax
// CHECK: tfm.matmul %{{.*}}, %arg2
// CHECK-NOT: tfm.attention
func.func @negative_scale_among_masks(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m1 = tfm.apply_mask %s, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %neg = tfm.scale %m1 by -1.0 : tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m2 = tfm.apply_mask %neg, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  // expected-remark @+1 {{not fused into tfm.attention: a scale factor of -1.000000 is not positive (it would turn a masked -inf into +inf)}}
  %p = tfm.softmax %m2 {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: a zero scale is not positive either (0 · −inf is NaN).
// CHECK-LABEL: func.func @zero_scale
// CHECK-NOT: tfm.attention
// CHECK: tfm.apply_mask
// CHECK: tfm.scale %{{.*}} by 0.000000e+00
// CHECK: tfm.softmax
// CHECK-NOT: tfm.attention
func.func @zero_scale(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m = tfm.apply_mask %s, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %z = tfm.scale %m by 0.0 : tensor<?x2x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: a scale factor of 0.000000 is not positive (it would turn a masked -inf into +inf)}}
  %p = tfm.softmax %z {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: a boolean mask over queries ([B, 1, Sq, 1], a function argument):
// the kernel's masks are over keys only, so it cannot be an attribute.
// CHECK-LABEL: func.func @query_mask
// CHECK-NOT: tfm.attention
// CHECK: tfm.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: tfm.apply_mask %{{.*}}, %arg3 : tensor<?x2x?x?xf32>, tensor<?x1x?x1xi1>
// CHECK: tfm.softmax
// CHECK: tfm.matmul %{{.*}}, %arg2
// CHECK-NOT: tfm.attention
func.func @query_mask(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %qm: tensor<?x1x?x1xi1>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %m = tfm.apply_mask %s, %qm : tensor<?x2x?x?xf32>, tensor<?x1x?x1xi1>
  // expected-remark @+1 {{not fused into tfm.attention: the mask is not made by tfm.causal_mask, tfm.window_mask, tfm.padding_mask or tfm.mask_and (a mask of another shape, e.g. over queries, has no kernel form)}}
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: an unknown mask hidden inside a tfm.mask_and (a known causal mask
// AND a mask argument) is still unknown: the causal half alone must not be
// taken for the whole.
// CHECK-LABEL: func.func @unknown_mask_in_mask_and
// CHECK-NOT: tfm.attention
// CHECK: tfm.causal_mask
// CHECK: tfm.mask_and
// CHECK: tfm.apply_mask
// CHECK: tfm.softmax
// CHECK-NOT: tfm.attention
func.func @unknown_mask_in_mask_and(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %bm: tensor<?x?xi1>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %both = tfm.mask_and %cm, %bm : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %m = tfm.apply_mask %s, %both : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  // expected-remark @+1 {{not fused into tfm.attention: the mask is not made by tfm.causal_mask, tfm.window_mask, tfm.padding_mask or tfm.mask_and (a mask of another shape, e.g. over queries, has no kernel form)}}
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: an additive f32 mask (e.g. an ALiBi-style bias from the caller)
// is not one of the kernel's mask kinds.
// CHECK-LABEL: func.func @additive_mask
// CHECK-NOT: tfm.attention
// CHECK: tfm.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: tfm.scale
// CHECK: tfm.apply_mask %{{.*}}, %arg3 : tensor<?x2x?x?xf32>, tensor<?x?xf32>
// CHECK: tfm.softmax
// CHECK: tfm.matmul %{{.*}}, %arg2
// CHECK-NOT: tfm.attention
func.func @additive_mask(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %bias: tensor<?x?xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %m = tfm.apply_mask %ss, %bias : tensor<?x2x?x?xf32>, tensor<?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: an additive (f32) mask is not one of the known mask kinds}}
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: the attention weights are returned (output_attentions): the fused
// kernel never materialises them.
// CHECK-LABEL: func.func @weights_returned
// CHECK-NOT: tfm.attention
// CHECK: tfm.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: tfm.padding_mask %arg3
// CHECK: tfm.apply_mask
// CHECK: %[[P:.*]] = tfm.softmax
// CHECK: %[[O:.*]] = tfm.matmul %[[P]], %arg2
// CHECK-NOT: tfm.attention
// CHECK: return %[[O]], %[[P]]
func.func @weights_returned(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>) {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m = tfm.apply_mask %s, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  // expected-remark @+1 {{not fused into tfm.attention: the attention weights (softmax result) have another user}}
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %p : tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>
}

// -----

// Guards: the raw scores Q·Kᵀ are returned.
// CHECK-LABEL: func.func @scores_returned
// CHECK-NOT: tfm.attention
// CHECK: %[[S:.*]] = tfm.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: tfm.scale %[[S]]
// CHECK: tfm.softmax
// CHECK: %[[O:.*]] = tfm.matmul %{{.*}}, %arg2
// CHECK-NOT: tfm.attention
// CHECK: return %[[O]], %[[S]]
func.func @scores_returned(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>) {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: the result of 'tfm.matmul' has another user}}
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %s : tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>
}

// -----

// Guards: the masked scores (an intermediate in the middle of the chain)
// are returned.
// CHECK-LABEL: func.func @masked_scores_returned
// CHECK-NOT: tfm.attention
// CHECK: tfm.matmul %arg0, %arg1 {transpose_rhs}
// CHECK: %[[M:.*]] = tfm.apply_mask
// CHECK: tfm.scale %[[M]]
// CHECK: tfm.softmax
// CHECK: %[[O:.*]] = tfm.matmul %{{.*}}, %arg2
// CHECK-NOT: tfm.attention
// CHECK: return %[[O]], %[[M]]
func.func @masked_scores_returned(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %x: tensor<?x?x8xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>) {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m = tfm.apply_mask %s, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %ss = tfm.scale %m by 0.5 : tensor<?x2x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: the result of 'tfm.apply_mask' has another user}}
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %m : tensor<?x2x?x4xf32>, tensor<?x2x?x?xf32>
}

// -----

// Guards: keys given already transposed ([B, H, D, Sk], Q·K without
// transpose_rhs): the kernel reads K as [B, H, Sk, D].
// CHECK-LABEL: func.func @keys_without_transpose_rhs
// CHECK-NOT: tfm.attention
// CHECK: tfm.matmul %arg0, %arg1 : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
// CHECK: tfm.scale
// CHECK: tfm.softmax
// CHECK: tfm.matmul %{{.*}}, %arg2
// CHECK-NOT: tfm.attention
func.func @keys_without_transpose_rhs(%q: tensor<?x2x?x4xf32>, %kt: tensor<?x2x4x?xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: the keys are not in [B, H, Sk, D] layout (Q·Kᵀ needs transpose_rhs and no transpose_lhs)}}
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: two different key padding masks: the kernel has one key_padding
// operand.
// CHECK-LABEL: func.func @two_padding_masks
// CHECK-NOT: tfm.attention
// CHECK: tfm.padding_mask %arg3
// CHECK: tfm.apply_mask
// CHECK: tfm.padding_mask %arg4
// CHECK: tfm.apply_mask
// CHECK: tfm.softmax
// CHECK-NOT: tfm.attention
func.func @two_padding_masks(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp1: tensor<?x?xi64>, %kp2: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %pm1 = tfm.padding_mask %kp1 : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m1 = tfm.apply_mask %s, %pm1 : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %pm2 = tfm.padding_mask %kp2 : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m2 = tfm.apply_mask %m1, %pm2 : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  // expected-remark @+1 {{not fused into tfm.attention: two different key padding masks apply}}
  %p = tfm.softmax %m2 {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: scores that do not come from Q·Kᵀ (a function argument, and a sum).
// CHECK-LABEL: func.func @scores_not_from_qk
// CHECK-NOT: tfm.attention
// CHECK: tfm.softmax %arg0
// CHECK: tfm.add
// CHECK: tfm.softmax
// CHECK-NOT: tfm.attention
func.func @scores_not_from_qk(%s: tensor<?x2x?x?xf32>, %v: tensor<?x2x?x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  // expected-remark @+1 {{not fused into tfm.attention: the scores are a function argument, not Q·Kᵀ}}
  %p = tfm.softmax %s {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %t = tfm.add %s, %s : tensor<?x2x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: the scores come from 'tfm.add', not from Q·Kᵀ, a scale or a mask}}
  %p2 = tfm.softmax %t {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o2 = tfm.matmul %p2, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o, %o2 : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// Guards: the weights multiplied by V from the right (V · P) or with a
// transpose are not softmax(...) · V.
// CHECK-LABEL: func.func @weights_not_lhs_of_pv
// CHECK-NOT: tfm.attention
// CHECK: tfm.softmax
// CHECK: tfm.matmul %{{.*}}, %arg2 {transpose_lhs}
// CHECK-NOT: tfm.attention
func.func @weights_not_lhs_of_pv(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: the attention weights are not multiplied by the values (softmax(...) · V) directly}}
  %p = tfm.softmax %s {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v {transpose_lhs} : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: a softmax that is not attention at all (rank 3, over a
// vocabulary) is left alone.
// CHECK-LABEL: func.func @softmax_not_attention
// CHECK-NOT: tfm.attention
// CHECK: %[[P:.*]] = tfm.softmax %arg0 {axis = 2 : i64} : tensor<?x?x10xf32>
// CHECK: return %[[P]]
func.func @softmax_not_attention(%logits: tensor<?x?x10xf32>) -> tensor<?x?x10xf32> {
  // expected-remark @+1 {{not fused into tfm.attention: the scores are not [B, H, Sq, Sk]}}
  %p = tfm.softmax %logits {axis = 2 : i64} : tensor<?x?x10xf32>
  return %p : tensor<?x?x10xf32>
}

// -----

// Guards: grouped-query attention needs K and V repeated alike; with only
// the keys repeated, V's heads are already the query heads and folding the
// repeat into kv_heads would read V by the wrong heads.
// CHECK-LABEL: func.func @only_keys_repeated
// CHECK-NOT: tfm.attention
// CHECK: tfm.repeat_heads %arg1
// CHECK: tfm.matmul %arg0, %{{.*}} {transpose_rhs}
// CHECK: tfm.softmax
// CHECK: tfm.matmul %{{.*}}, %arg2
// CHECK-NOT: tfm.attention
func.func @only_keys_repeated(%q: tensor<?x4x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32> {
  %kr = tfm.repeat_heads %k : tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  %s = tfm.matmul %q, %kr {transpose_rhs} : (tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: only one of the keys and values has its heads repeated}}
  %p = tfm.softmax %s {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x4x?x?xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32>
  return %o : tensor<?x4x?x4xf32>
}

// -----

// Guards: the same with only the values repeated.
// CHECK-LABEL: func.func @only_values_repeated
// CHECK-NOT: tfm.attention
// CHECK: tfm.repeat_heads %arg2
// CHECK: tfm.softmax
// CHECK-NOT: tfm.attention
func.func @only_values_repeated(%q: tensor<?x4x?x4xf32>, %k: tensor<?x4x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x4x?x4xf32> {
  %vr = tfm.repeat_heads %v : tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: only one of the keys and values has its heads repeated}}
  %p = tfm.softmax %s {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32>
  return %o : tensor<?x4x?x4xf32>
}

// -----

// Guards: K and V repeated from different head counts (1 and 2 heads, each
// repeated to 4) have no single kv_heads.
// CHECK-LABEL: func.func @different_kv_head_counts
// CHECK-NOT: tfm.attention
// CHECK: tfm.repeat_heads %arg1
// CHECK: tfm.repeat_heads %arg2
// CHECK: tfm.softmax
// CHECK-NOT: tfm.attention
func.func @different_kv_head_counts(%q: tensor<?x4x?x4xf32>, %k: tensor<?x1x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x4x?x4xf32> {
  %kr = tfm.repeat_heads %k : tensor<?x1x?x4xf32> -> tensor<?x4x?x4xf32>
  %vr = tfm.repeat_heads %v : tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  %s = tfm.matmul %q, %kr {transpose_rhs} : (tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: the keys and values have different numbers of heads}}
  %p = tfm.softmax %s {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32>
  return %o : tensor<?x4x?x4xf32>
}

// -----

// A mask under the soft-cap: tanh would turn its -inf into -cap, which the
// kernel's mask (applied after the cap) does not.
// CHECK-LABEL: func.func @mask_before_softcap
// CHECK-NOT: tfm.attention
// CHECK: tfm.softcap
func.func @mask_before_softcap(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m = tfm.apply_mask %s, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %c = tfm.softcap %m at 50.0 : tensor<?x2x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: a mask applies before the soft-capping (which would turn its -inf into -cap)}}
  %p = tfm.softmax %c {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// A scale of the capped scores is not the attention's scale.
// CHECK-LABEL: func.func @scale_after_softcap
// CHECK-NOT: tfm.attention
// CHECK: tfm.softcap
func.func @scale_after_softcap(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %c = tfm.softcap %s at 50.0 : tensor<?x2x?x?xf32>
  %ss = tfm.scale %c by 0.5 : tensor<?x2x?x?xf32>
  // expected-remark @+1 {{not fused into tfm.attention: a scale applies after the soft-capping}}
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}
