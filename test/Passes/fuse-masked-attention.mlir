// RUN: tfm-opt %s -split-input-file -tfm-fuse-masked-attention | FileCheck %s
// A fused chain emits no remark: with remarks on and no expected-remark in
// this file, -verify-diagnostics fails on any remark.
// RUN: tfm-opt %s -split-input-file -tfm-fuse-masked-attention=remarks=true -verify-diagnostics | FileCheck %s
//
// Positive cases of tfm-fuse-masked-attention: every order in which a
// frontend or a user may write the classic attention chain
//   s = Q·Kᵀ; s = scale/apply_mask ...; p = softmax(s, 3); o = p · V
// becomes one tfm.attention whose operands, #tfm.mask and scale are checked
// exactly, and the chain (and mask producers with no other user) is gone.
//
// Shapes: Q, K, V [B, 2 heads, S, 4]; scores [B, 2, Sq, Sk]; the key padding
// mask [B, Sk] (1 = token); %x [B, S, 8] only sizes causal/window masks.

// Guards: the frontend's order, scale right after Q·Kᵀ and then one padding mask.
// CHECK-LABEL: func.func @scale_then_padding
// CHECK-NOT: {{tfm\.(matmul|scale|padding_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<padding>, scale = 5.000000e-01 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi64> -> tensor<?x2x?x4xf32>
// CHECK-NOT: {{tfm\.(matmul|scale|padding_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @scale_then_padding(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m = tfm.apply_mask %ss, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: the mask before the scale (scaling −inf by a positive factor keeps it −inf).
// CHECK-LABEL: func.func @padding_then_scale
// CHECK-NOT: {{tfm\.(matmul|scale|padding_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<padding>, scale = 1.250000e-01 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|padding_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @padding_then_scale(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m = tfm.apply_mask %s, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %ss = tfm.scale %m by 0.125 : tensor<?x2x?x?xf32>
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: causal then padding, each by its own apply_mask (the frontend's
// decoder self-attention), with the scale first.
// CHECK-LABEL: func.func @causal_then_padding
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|padding_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<causal, padding>, scale = 5.000000e-01 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|padding_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @causal_then_padding(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m1 = tfm.apply_mask %ss, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m2 = tfm.apply_mask %m1, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %p = tfm.softmax %m2 {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: padding then causal, and the scale last (after both masks).
// CHECK-LABEL: func.func @padding_then_causal
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|padding_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<causal, padding>, scale = 2.500000e-01 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|padding_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @padding_then_causal(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m1 = tfm.apply_mask %s, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m2 = tfm.apply_mask %m1, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %ss = tfm.scale %m2 by 0.25 : tensor<?x2x?x?xf32>
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: causal and padding combined by tfm.mask_and into one apply_mask,
// with the scale between the mask and softmax.
// CHECK-LABEL: func.func @mask_and
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|padding_mask|mask_and|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<causal, padding>, scale = 5.000000e-01 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|padding_mask|mask_and|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @mask_and(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %both = tfm.mask_and %pm, %cm : (tensor<?x1x1x?xi1>, tensor<?x?xi1>) -> tensor<?x1x?x?xi1>
  %m = tfm.apply_mask %s, %both : tensor<?x2x?x?xf32>, tensor<?x1x?x?xi1>
  %ss = tfm.scale %m by 0.5 : tensor<?x2x?x?xf32>
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: a window mask alone gives #tfm.mask<window(N)> (no padding, so no
// key_padding operand).
// CHECK-LABEL: func.func @window
// CHECK-NOT: {{tfm\.(matmul|scale|window_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2 {mask = #tfm.mask<window(3)>, scale = 5.000000e-01 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
// CHECK-NOT: {{tfm\.(matmul|scale|window_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @window(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %wm = tfm.window_mask %x {size = 3 : i64} : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m = tfm.apply_mask %ss, %wm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: causal AND two windows (|q - k| < 16 and |q - k| < 4, the tighter
// wins) AND padding, all through nested mask_ands.
// CHECK-LABEL: func.func @causal_windows_padding
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|window_mask|padding_mask|mask_and|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<causal, padding, window(4)>, scale = 1.000000e+00 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|window_mask|padding_mask|mask_and|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @causal_windows_padding(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %w16 = tfm.window_mask %x {size = 16 : i64} : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m1 = tfm.apply_mask %s, %w16 : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %w4 = tfm.window_mask %x {size = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %cw = tfm.mask_and %cm, %w4 : (tensor<?x?xi1>, tensor<?x?xi1>) -> tensor<?x?xi1>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %all = tfm.mask_and %cw, %pm : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %m2 = tfm.apply_mask %m1, %all : tensor<?x2x?x?xf32>, tensor<?x1x?x?xi1>
  %p = tfm.softmax %m2 {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: the scale folded into Q ((cQ)·Kᵀ = c(Q·Kᵀ)): the attention reads
// the unscaled Q and carries c; the scale on Q, now unused, is gone.
// CHECK-LABEL: func.func @scale_on_q
// CHECK-NOT: {{tfm\.(matmul|scale|padding_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<padding>, scale = 1.250000e-01 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|padding_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @scale_on_q(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  %qs = tfm.scale %q by 0.125 : tensor<?x2x?x4xf32>
  %s = tfm.matmul %qs, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m = tfm.apply_mask %s, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: the scale on Q before split_heads (a user scaling the projection,
// as some exporters do): the attention reads split_heads of the unscaled
// projection and carries the scale; scale and the old split_heads are gone.
// CHECK-LABEL: func.func @scale_on_q_before_split_heads
// CHECK-NOT: {{tfm\.(scale|matmul|softmax)}}
// CHECK: %[[QH:.*]] = tfm.split_heads %arg0 : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
// CHECK-NOT: {{tfm\.(scale|split_heads|matmul|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %[[QH]], %arg1, %arg2 {mask = #tfm.mask<none>, scale = 2.500000e-01 : f64}
// CHECK-NOT: {{tfm\.(scale|split_heads|matmul|softmax)}}
// CHECK: return %[[A]]
func.func @scale_on_q_before_split_heads(%xq: tensor<?x?x8xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %xs = tfm.scale %xq by 0.5 : tensor<?x?x8xf32>
  %q = tfm.split_heads %xs : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: a scale on K joins the attention scale like one on Q.
// CHECK-LABEL: func.func @scale_on_k
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2 {mask = #tfm.mask<causal>, scale = 2.000000e+00 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @scale_on_k(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %ks = tfm.scale %k by 2.0 : tensor<?x2x?x4xf32>
  %s = tfm.matmul %q, %ks {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m = tfm.apply_mask %s, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: scales multiply, wherever they are: 3 on Q, 0.5 before the mask
// and 0.25 after it give 3 · 0.5 · 0.25 = 0.375.
// CHECK-LABEL: func.func @scales_multiply
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2 {mask = #tfm.mask<causal>, scale = 3.750000e-01 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @scales_multiply(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %x: tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32> {
  %qs = tfm.scale %q by 3.0 : tensor<?x2x?x4xf32>
  %s = tfm.matmul %qs, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %s1 = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m = tfm.apply_mask %s1, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %s2 = tfm.scale %m by 0.25 : tensor<?x2x?x?xf32>
  %p = tfm.softmax %s2 {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: no scale and no mask at all: scale = 1, #tfm.mask<none>.
// CHECK-LABEL: func.func @no_scale_no_mask
// CHECK-NOT: {{tfm\.(matmul|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2 {mask = #tfm.mask<none>, scale = 1.000000e+00 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
// CHECK-NOT: {{tfm\.(matmul|softmax)}}
// CHECK: return %[[A]]
func.func @no_scale_no_mask(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %p = tfm.softmax %s {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: cross-attention: Q from the decoder states %y [B, T, 8], K and V
// from the encoder output %e [B, S, 8], the padding mask on the encoder's
// keys %emask [B, S]. Sq (T) and Sk (S) differ; the attention must read the
// encoder-side K and V and the encoder's mask.
// CHECK-LABEL: func.func @cross_attention
// CHECK-SAME: (%[[Y:[^:]*]]: tensor<?x?x8xf32>, %[[E:[^:]*]]: tensor<?x?x8xf32>, %[[EMASK:[^:]*]]: tensor<?x?xi64>, %[[WQ:[^:]*]]: tensor<8x8xf32>, %[[WK:[^:]*]]: tensor<8x8xf32>, %[[WV:[^:]*]]: tensor<8x8xf32>)
// CHECK-DAG: %[[QP:.*]] = tfm.linear %[[Y]], %[[WQ]]
// CHECK-DAG: %[[QH:.*]] = tfm.split_heads %[[QP]]
// CHECK-DAG: %[[KP:.*]] = tfm.linear %[[E]], %[[WK]]
// CHECK-DAG: %[[KH:.*]] = tfm.split_heads %[[KP]]
// CHECK-DAG: %[[VP:.*]] = tfm.linear %[[E]], %[[WV]]
// CHECK-DAG: %[[VH:.*]] = tfm.split_heads %[[VP]]
// CHECK-NOT: {{tfm\.(matmul|scale|padding_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %[[QH]], %[[KH]], %[[VH]], key_padding %[[EMASK]] {mask = #tfm.mask<padding>, scale = 5.000000e-01 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|padding_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @cross_attention(%y: tensor<?x?x8xf32>, %e: tensor<?x?x8xf32>, %emask: tensor<?x?xi64>, %wq: tensor<8x8xf32>, %wk: tensor<8x8xf32>, %wv: tensor<8x8xf32>) -> tensor<?x2x?x4xf32> {
  %qp = tfm.linear %y, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %q = tfm.split_heads %qp : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %kp = tfm.linear %e, %wk : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %k = tfm.split_heads %kp : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %vp = tfm.linear %e, %wv : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %v = tfm.split_heads %vp : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %emask : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m = tfm.apply_mask %ss, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: the same padding mask applied twice is one padding kind, not "two
// different key padding masks".
// CHECK-LABEL: func.func @same_padding_twice
// CHECK-NOT: {{tfm\.(matmul|padding_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<padding>, scale = 1.000000e+00 : f64}
// CHECK: return %[[A]]
func.func @same_padding_twice(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %pm1 = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m1 = tfm.apply_mask %s, %pm1 : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %pm2 = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m2 = tfm.apply_mask %m1, %pm2 : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %p = tfm.softmax %m2 {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: two chains sharing one padding mask both fuse, and a mask
// producer with another user (here: returned) stays while one that fed
// only fused chains goes.
// CHECK-LABEL: func.func @shared_mask_producers
// CHECK-NOT: tfm.padding_mask
// CHECK: %[[C:.*]] = tfm.causal_mask %arg4
// CHECK-NOT: tfm.padding_mask
// CHECK: %[[A1:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<causal, padding>, scale = 1.000000e+00 : f64}
// CHECK-NOT: tfm.padding_mask
// CHECK: %[[A2:.*]] = tfm.attention %[[A1]], %arg1, %arg2, key_padding %arg3 {mask = #tfm.mask<causal, padding>, scale = 1.000000e+00 : f64}
// CHECK-NOT: {{tfm\.(matmul|padding_mask|apply_mask|softmax)}}
// CHECK: return %[[A2]], %[[C]]
func.func @shared_mask_producers(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>, %x: tensor<?x?x8xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x?xi1>) {
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %s1 = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %c1 = tfm.apply_mask %s1, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %m1 = tfm.apply_mask %c1, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %p1 = tfm.softmax %m1 {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o1 = tfm.matmul %p1, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  %s2 = tfm.matmul %o1, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %c2 = tfm.apply_mask %s2, %cm : tensor<?x2x?x?xf32>, tensor<?x?xi1>
  %m2 = tfm.apply_mask %c2, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %p2 = tfm.softmax %m2 {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o2 = tfm.matmul %p2, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o2, %cm : tensor<?x2x?x4xf32>, tensor<?x?xi1>
}

// -----

// Guards: a scale on V is not a scale of the scores: the chain fuses, the
// V scale stays on the value operand, and only the score scale (0.5) enters
// the attention's scale.
// CHECK-LABEL: func.func @scale_on_v_stays
// CHECK: %[[VS:.*]] = tfm.scale %arg2 by 3.000000e+00 : tensor<?x2x?x4xf32>
// CHECK-NOT: {{tfm\.(matmul|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %[[VS]] {mask = #tfm.mask<none>, scale = 5.000000e-01 : f64}
// CHECK-NOT: {{tfm\.(matmul|softmax)}}
// CHECK: return %[[A]]
func.func @scale_on_v_stays(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %vs = tfm.scale %v by 3.0 : tensor<?x2x?x4xf32>
  %o = tfm.matmul %p, %vs : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: a negative scale on Q is not peeled (it is not a mask hazard, but
// the attention scale must stay positive): the attention reads the scaled
// Q and only the positive score scale joins.
// CHECK-LABEL: func.func @negative_scale_on_q_stays
// CHECK: %[[QS:.*]] = tfm.scale %arg0 by -2.000000e+00 : tensor<?x2x?x4xf32>
// CHECK-NOT: {{tfm\.(matmul|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %[[QS]], %arg1, %arg2 {mask = #tfm.mask<none>, scale = 5.000000e-01 : f64}
// CHECK: return %[[A]]
func.func @negative_scale_on_q_stays(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %qs = tfm.scale %q by -2.0 : tensor<?x2x?x4xf32>
  %s = tfm.matmul %qs, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %p = tfm.softmax %ss {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Guards: grouped-query attention. K and V heads repeated alike (2 K/V heads
// for 4 query heads) become the attention's own K/V heads: the attention
// reads the un-repeated K and V, and the repeats are gone.
// CHECK-LABEL: func.func @repeated_heads
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|apply_mask|softmax|repeat_heads)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2 {mask = #tfm.mask<causal>, scale = 5.000000e-01 : f64} : tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
// CHECK-NOT: {{tfm\.(matmul|scale|causal_mask|apply_mask|softmax|repeat_heads)}}
// CHECK: return %[[A]]
func.func @repeated_heads(%q: tensor<?x4x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %x: tensor<?x?x8xf32>) -> tensor<?x4x?x4xf32> {
  %kr = tfm.repeat_heads %k : tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  %vr = tfm.repeat_heads %v : tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  %s = tfm.matmul %q, %kr {transpose_rhs} : (tensor<?x4x?x4xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x4x?x?xf32>
  %cm = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %m = tfm.apply_mask %ss, %cm : tensor<?x4x?x?xf32>, tensor<?x?xi1>
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x4x?x?xf32>
  %o = tfm.matmul %p, %vr : (tensor<?x4x?x?xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x?x4xf32>
  return %o : tensor<?x4x?x4xf32>
}

// -----

// Guards: a decode step's self-attention (the builder's form): one query,
// the newest position, and a window counted back from it over the cached
// keys (window_mask from_cache) -> tfm.attention from_cache with the window
// (the kernel then places the query at Sk - 1); 1 K/V head for 4 query heads.
// CHECK-LABEL: func.func @decode_window
// CHECK-NOT: {{tfm\.(matmul|scale|window_mask|apply_mask|softmax|repeat_heads)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2 {from_cache, mask = #tfm.mask<window(4)>, scale = 5.000000e-01 : f64} : tensor<?x4x1x4xf32>, tensor<?x1x?x4xf32>, tensor<?x1x?x4xf32> -> tensor<?x4x1x4xf32>
// CHECK-NOT: {{tfm\.(matmul|scale|window_mask|apply_mask|softmax|repeat_heads)}}
// CHECK: return %[[A]]
func.func @decode_window(%q: tensor<?x4x1x4xf32>, %k: tensor<?x1x?x4xf32>, %v: tensor<?x1x?x4xf32>, %x: tensor<?x1x8xf32>) -> tensor<?x4x1x4xf32> {
  %kr = tfm.repeat_heads %k : tensor<?x1x?x4xf32> -> tensor<?x4x?x4xf32>
  %vr = tfm.repeat_heads %v : tensor<?x1x?x4xf32> -> tensor<?x4x?x4xf32>
  %s = tfm.matmul %q, %kr {transpose_rhs} : (tensor<?x4x1x4xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x1x?xf32>
  %ss = tfm.scale %s by 0.5 : tensor<?x4x1x?xf32>
  %wm = tfm.window_mask %x {from_cache, size = 4 : i64} : tensor<?x1x8xf32> -> tensor<?x?xi1>
  %m = tfm.apply_mask %ss, %wm : tensor<?x4x1x?xf32>, tensor<?x?xi1>
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x4x1x?xf32>
  %o = tfm.matmul %p, %vr : (tensor<?x4x1x?xf32>, tensor<?x4x?x4xf32>) -> tensor<?x4x1x4xf32>
  return %o : tensor<?x4x1x4xf32>
}

// -----

// Guards: Gemma 2's soft-capping of the scaled scores, before the padding
// mask, becomes tfm.attention's logit_softcap.
// CHECK-LABEL: func.func @scale_softcap_padding
// CHECK-NOT: {{tfm\.(matmul|scale|softcap|padding_mask|apply_mask|softmax)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {logit_softcap = 5.000000e+01 : f64, mask = #tfm.mask<padding>, scale = 6.250000e-02 : f64}
// CHECK-NOT: {{tfm\.(matmul|scale|softcap|padding_mask|apply_mask|softmax)}}
// CHECK: return %[[A]]
func.func @scale_softcap_padding(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) -> tensor<?x2x?x4xf32> {
  %s = tfm.matmul %q, %k {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %ss = tfm.scale %s by 0.0625 : tensor<?x2x?x?xf32>
  %c = tfm.softcap %ss at 50.0 : tensor<?x2x?x?xf32>
  %pm = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %m = tfm.apply_mask %c, %pm : tensor<?x2x?x?xf32>, tensor<?x1x1x?xi1>
  %p = tfm.softmax %m {axis = 3 : i64} : tensor<?x2x?x?xf32>
  %o = tfm.matmul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}
