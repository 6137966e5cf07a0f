// RUN: tfm-opt %s -split-input-file -tfm-fuse-epilogues | FileCheck %s
//
// tfm-fuse-epilogues: activations, residual adds and head splits fold into
// the kernel that produces their input. Positive cases first, then negative
// ones (each fusion needs the producer's result to have no other user, and
// must not reorder an activation and a residual).
//
// Shapes: x [B, S, 8], W [16, 8] / [8, 16] / [8, 8], gamma/beta [8].

// Guards: activation(linear(x)) -> linear(x) {activation}.
// CHECK-LABEL: func.func @activation_into_linear
// CHECK-NOT: tfm.activation
// CHECK: %[[L:.*]] = tfm.linear %arg0, %arg1 bias %arg2 {activation = #tfm.activation<gelu_tanh>} : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
// CHECK-NOT: tfm.activation
// CHECK: return %[[L]]
func.func @activation_into_linear(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %h = tfm.linear %x, %w bias %b : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %a = tfm.activation %h <gelu_tanh> : tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}

// -----

// Guards: post-norm LN(x + f(x)) -> layer_norm x residual f(x), and this wins
// over folding the add into the linear f(x) as a residual (the linear stays
// plain, so the sum is computed once, inside the norm).
// CHECK-LABEL: func.func @residual_into_layer_norm
// CHECK: %[[H:.*]] = tfm.linear %arg0, %arg1 bias %arg2 : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: tfm.add
// CHECK: %[[N:.*]] = tfm.layer_norm %arg0 residual %[[H]], %arg3, %arg3 {eps = 1.000000e-05 : f64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: tfm.add
// CHECK: return %[[N]]
func.func @residual_into_layer_norm(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %h = tfm.linear %x, %w bias %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %s = tfm.add %x, %h : tensor<?x?x8xf32>
  %n = tfm.layer_norm %s, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// Guards: the same for an RMSNorm (its kernel also adds a residual before
// normalising): rms_norm(x + f(x)) -> rms_norm x residual f(x).
// CHECK-LABEL: func.func @residual_into_rms_norm
// CHECK: %[[H:.*]] = tfm.linear %arg0, %arg1 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: tfm.add
// CHECK: %[[N:.*]] = tfm.rms_norm %arg0 residual %[[H]], %arg2 {eps = 1.000000e-05 : f64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK: return %[[N]]
func.func @residual_into_rms_norm(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %h = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %s = tfm.add %x, %h : tensor<?x?x8xf32>
  %n = tfm.rms_norm %s, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// Guards: the post-norm priority also holds when the add is visited first:
// here the sum has a second, dead user, so the norm cannot take it at first;
// once the dead op is erased the add is revisited before the norm, and it
// must still leave itself to the norm rather than become the linear's
// residual.
// CHECK-LABEL: func.func @residual_into_layer_norm_add_visited_first
// CHECK: %[[H:.*]] = tfm.linear %arg0, %arg1 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: {{tfm\.(add|activation)}}
// CHECK: %[[N:.*]] = tfm.layer_norm %arg0 residual %[[H]], %arg2, %arg2
// CHECK: return %[[N]]
func.func @residual_into_layer_norm_add_visited_first(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %h = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %s = tfm.add %x, %h : tensor<?x?x8xf32>
  %dead = tfm.activation %s <relu> : tensor<?x?x8xf32>
  %n = tfm.layer_norm %s, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// Guards: pre-norm x + f(LN(x)) -> linear(LN(x)) residual x, with the linear
// on either side of the add.
// CHECK-LABEL: func.func @residual_into_linear
// CHECK: %[[N:.*]] = tfm.layer_norm %arg0, %arg3, %arg3
// CHECK-NOT: tfm.add
// CHECK: %[[Y:.*]] = tfm.linear %[[N]], %arg1 bias %arg2 residual %arg0 : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: tfm.add
// CHECK: %[[N2:.*]] = tfm.layer_norm %[[Y]], %arg3, %arg3
// CHECK-NOT: tfm.add
// CHECK: %[[Z:.*]] = tfm.linear %[[N2]], %arg1 bias %arg2 residual %[[Y]] : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: tfm.add
// CHECK: return %[[Z]]
func.func @residual_into_linear(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %n = tfm.layer_norm %x, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %h = tfm.linear %n, %w bias %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %y = tfm.add %x, %h : tensor<?x?x8xf32>
  %n2 = tfm.layer_norm %y, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %h2 = tfm.linear %n2, %w bias %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %z = tfm.add %h2, %y : tensor<?x?x8xf32>
  return %z : tensor<?x?x8xf32>
}

// -----

// Guards: when both operands of the add are single-use linears, the later
// one is the sublayer and takes the earlier one as its residual, whichever
// side of the add each is on.
// CHECK-LABEL: func.func @both_operands_linears
// CHECK: %[[EARLY:.*]] = tfm.linear %arg0, %arg1 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: tfm.add
// CHECK: %[[LATE:.*]] = tfm.linear %arg2, %arg1 residual %[[EARLY]] : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
// CHECK: %[[EARLY2:.*]] = tfm.linear %arg0, %arg1 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: tfm.add
// CHECK: %[[LATE2:.*]] = tfm.linear %arg2, %arg1 residual %[[EARLY2]] : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: tfm.add
// CHECK: return %[[LATE]], %[[LATE2]]
func.func @both_operands_linears(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %y: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %early = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %late = tfm.linear %y, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %s = tfm.add %early, %late : tensor<?x?x8xf32>
  %early2 = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %late2 = tfm.linear %y, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %s2 = tfm.add %late2, %early2 : tensor<?x?x8xf32>
  return %s, %s2 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Guards: an FFN's x + linear2(act(linear1(x))): the activation folds into
// linear1 and the residual into linear2 (activation first, residual last).
// CHECK-LABEL: func.func @ffn
// CHECK: %[[H:.*]] = tfm.linear %arg0, %arg1 bias %arg2 {activation = #tfm.activation<relu>} : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
// CHECK-NOT: {{tfm\.(activation|add)}}
// CHECK: %[[Y:.*]] = tfm.linear %[[H]], %arg3 bias %arg4 residual %arg0 : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
// CHECK-NOT: {{tfm\.(activation|add)}}
// CHECK: return %[[Y]]
func.func @ffn(%x: tensor<?x?x8xf32>, %w1: tensor<16x8xf32>, %b1: tensor<16xf32>, %w2: tensor<8x16xf32>, %b2: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %h = tfm.linear %x, %w1 bias %b1 : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %a = tfm.activation %h <relu> : tensor<?x?x16xf32>
  %o = tfm.linear %a, %w2 bias %b2 : (tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %y = tfm.add %x, %o : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Guards: merge_heads(attention(split_heads q, k, v)) -> attention(q, k, v)
// {heads = 2} in the merged [B, S, H·D] layout, mask, key padding and
// scale kept; no split_heads or merge_heads is left.
// CHECK-LABEL: func.func @heads_into_attention
// CHECK-NOT: {{tfm\.(split_heads|merge_heads)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2, key_padding %arg3 {heads = 2 : i64, mask = #tfm.mask<causal, padding>, scale = 5.000000e-01 : f64} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
// CHECK-NOT: {{tfm\.(split_heads|merge_heads)}}
// CHECK: return %[[A]]
func.func @heads_into_attention(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>, %kp: tensor<?x?xi64>) -> tensor<?x?x8xf32> {
  %qh = tfm.split_heads %q : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %kh = tfm.split_heads %k : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %vh = tfm.split_heads %v : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %a = tfm.attention %qh, %kh, %vh, key_padding %kp {mask = #tfm.mask<causal, padding>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi64> -> tensor<?x2x?x4xf32>
  %m = tfm.merge_heads %a : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  return %m : tensor<?x?x8xf32>
}

// -----

// Guards: a split_heads with another user still lets the attention go
// merged; that split_heads stays for its other user.
// CHECK-LABEL: func.func @split_heads_with_another_user
// CHECK: %[[VH:.*]] = tfm.split_heads %arg2
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2 {heads = 2 : i64, mask = #tfm.mask<none>, scale = 1.000000e+00 : f64}
// CHECK-NOT: tfm.merge_heads
// CHECK: return %[[A]], %[[VH]]
func.func @split_heads_with_another_user(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x?x4xf32>) {
  %qh = tfm.split_heads %q : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %kh = tfm.split_heads %k : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %vh = tfm.split_heads %v : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %a = tfm.attention %qh, %kh, %vh {mask = #tfm.mask<none>, scale = 1.0 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  %m = tfm.merge_heads %a : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  return %m, %vh : tensor<?x?x8xf32>, tensor<?x2x?x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Negative cases
//===----------------------------------------------------------------------===//

// Guards (activation): a linear whose result has another user keeps its
// plain form; the activation stays a kernel of its own.
// CHECK-LABEL: func.func @no_activation_linear_has_other_user
// CHECK: %[[H:.*]] = tfm.linear %arg0, %arg1 : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
// CHECK: %[[A:.*]] = tfm.activation %[[H]] <relu>
// CHECK: return %[[A]], %[[H]]
func.func @no_activation_linear_has_other_user(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %h = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %a = tfm.activation %h <relu> : tensor<?x?x16xf32>
  return %a, %h : tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// -----

// Guards (activation): a linear that already has a residual: act(y + r) is
// not act(y) + r, so the activation stays.
// CHECK-LABEL: func.func @no_activation_linear_has_residual
// CHECK: %[[H:.*]] = tfm.linear %arg0, %arg1 residual %arg0 : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
// CHECK: %[[A:.*]] = tfm.activation %[[H]] <gelu>
// CHECK: return %[[A]]
func.func @no_activation_linear_has_residual(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %h = tfm.linear %x, %w residual %x : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %a = tfm.activation %h <gelu> : tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// Guards (activation): a linear that already has an activation keeps it;
// the second activation is not merged over the first.
// CHECK-LABEL: func.func @no_activation_linear_has_activation
// CHECK: %[[H:.*]] = tfm.linear %arg0, %arg1 {activation = #tfm.activation<relu>}
// CHECK: %[[A:.*]] = tfm.activation %[[H]] <gelu>
// CHECK: return %[[A]]
func.func @no_activation_linear_has_activation(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> tensor<?x?x8xf32> {
  %h = tfm.linear %x, %w {activation = #tfm.activation<relu>} : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %a = tfm.activation %h <gelu> : tensor<?x?x8xf32>
  return %a : tensor<?x?x8xf32>
}

// -----

// Guards (post-norm): a sum with another user stays a kernel: the norm reads
// it as its plain input.
// CHECK-LABEL: func.func @no_layer_norm_residual_sum_has_other_user
// CHECK: %[[S:.*]] = tfm.add %arg0, %arg1
// CHECK: %[[N:.*]] = tfm.layer_norm %[[S]], %arg2, %arg2 {eps = 1.000000e-05 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
// CHECK: return %[[N]], %[[S]]
func.func @no_layer_norm_residual_sum_has_other_user(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %s = tfm.add %x, %y : tensor<?x?x8xf32>
  %n = tfm.layer_norm %s, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n, %s : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Guards (post-norm): a layer norm that already has a residual does not
// take another one.
// CHECK-LABEL: func.func @no_layer_norm_residual_norm_has_residual
// CHECK: %[[S:.*]] = tfm.add %arg0, %arg1
// CHECK: %[[N:.*]] = tfm.layer_norm %[[S]] residual %arg2, %arg3, %arg3
// CHECK: return %[[N]]
func.func @no_layer_norm_residual_norm_has_residual(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>, %z: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %s = tfm.add %x, %y : tensor<?x?x8xf32>
  %n = tfm.layer_norm %s residual %z, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// Guards (pre-norm): a linear whose result has another user is not turned
// into linear + residual.
// CHECK-LABEL: func.func @no_residual_linear_has_other_user
// CHECK: %[[H:.*]] = tfm.linear %arg0, %arg1 : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
// CHECK: %[[S:.*]] = tfm.add %arg0, %[[H]]
// CHECK: return %[[S]], %[[H]]
func.func @no_residual_linear_has_other_user(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %h = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %s = tfm.add %x, %h : tensor<?x?x8xf32>
  return %s, %h : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Guards (pre-norm): a linear that already has a residual does not take a
// second one.
// CHECK-LABEL: func.func @no_residual_linear_has_residual
// CHECK: %[[H:.*]] = tfm.linear %arg0, %arg1 residual %arg2 : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
// CHECK: %[[S:.*]] = tfm.add %arg0, %[[H]]
// CHECK: return %[[S]]
func.func @no_residual_linear_has_residual(%x: tensor<?x?x8xf32>, %w: tensor<8x8xf32>, %r: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %h = tfm.linear %x, %w residual %r : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %s = tfm.add %x, %h : tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}

// -----

// Guards (heads): an attention whose [B, H, S, D] result has another user
// stays split; merge_heads and the split_heads stay.
// CHECK-LABEL: func.func @no_heads_attention_has_other_user
// CHECK: %[[QH:.*]] = tfm.split_heads %arg0
// CHECK: %[[KH:.*]] = tfm.split_heads %arg1
// CHECK: %[[VH:.*]] = tfm.split_heads %arg2
// CHECK: %[[A:.*]] = tfm.attention %[[QH]], %[[KH]], %[[VH]] {mask = #tfm.mask<causal>, scale = 1.000000e+00 : f64}
// CHECK: %[[M:.*]] = tfm.merge_heads %[[A]]
// CHECK: return %[[M]], %[[A]]
func.func @no_heads_attention_has_other_user(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<?x2x?x4xf32>) {
  %qh = tfm.split_heads %q : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %kh = tfm.split_heads %k : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %vh = tfm.split_heads %v : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %a = tfm.attention %qh, %kh, %vh {mask = #tfm.mask<causal>, scale = 1.0 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  %m = tfm.merge_heads %a : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  return %m, %a : tensor<?x?x8xf32>, tensor<?x2x?x4xf32>
}

// -----

// Guards (heads): an operand that is not a split_heads (here V, given in
// [B, H, S, D] already) has no merged form: nothing changes.
// CHECK-LABEL: func.func @no_heads_operand_not_split
// CHECK: %[[QH:.*]] = tfm.split_heads %arg0
// CHECK: %[[KH:.*]] = tfm.split_heads %arg1
// CHECK: %[[A:.*]] = tfm.attention %[[QH]], %[[KH]], %arg2 {mask = #tfm.mask<none>, scale = 1.000000e+00 : f64}
// CHECK: %[[M:.*]] = tfm.merge_heads %[[A]]
// CHECK: return %[[M]]
func.func @no_heads_operand_not_split(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %vh: tensor<?x2x?x4xf32>) -> tensor<?x?x8xf32> {
  %qh = tfm.split_heads %q : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %kh = tfm.split_heads %k : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %a = tfm.attention %qh, %kh, %vh {mask = #tfm.mask<none>, scale = 1.0 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  %m = tfm.merge_heads %a : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  return %m : tensor<?x?x8xf32>
}

// -----

// Guards (heads): grouped-query attention keeps its K/V head count in the
// merged layout (kv_heads), and a decode step's from_cache survives.
// CHECK-LABEL: func.func @grouped_heads_into_attention
// CHECK-NOT: {{tfm\.(split_heads|merge_heads)}}
// CHECK: %[[A:.*]] = tfm.attention %arg0, %arg1, %arg2 {from_cache, heads = 4 : i64, kv_heads = 2 : i64, mask = #tfm.mask<window(3)>, scale = 5.000000e-01 : f64} : tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x16xf32>
// CHECK-NOT: {{tfm\.(split_heads|merge_heads)}}
// CHECK: return %[[A]]
func.func @grouped_heads_into_attention(%q: tensor<?x?x16xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  %qh = tfm.split_heads %q : tensor<?x?x16xf32> -> tensor<?x4x?x4xf32>
  %kh = tfm.split_heads %k : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %vh = tfm.split_heads %v : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %a = tfm.attention %qh, %kh, %vh {from_cache, mask = #tfm.mask<window(3)>, scale = 0.5 : f64} : tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  %m = tfm.merge_heads %a : tensor<?x4x?x4xf32> -> tensor<?x?x16xf32>
  return %m : tensor<?x?x16xf32>
}

// -----

// Guards (heads): as many K/V heads as query heads: no kv_heads attribute.
// CHECK-LABEL: func.func @ungrouped_heads_have_no_kv_heads
// CHECK: tfm.attention %arg0, %arg1, %arg2 {heads = 2 : i64, mask = #tfm.mask<causal>, scale = 5.000000e-01 : f64}
func.func @ungrouped_heads_have_no_kv_heads(%q: tensor<?x?x8xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %qh = tfm.split_heads %q : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %kh = tfm.split_heads %k : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %vh = tfm.split_heads %v : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %a = tfm.attention %qh, %kh, %vh {mask = #tfm.mask<causal>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  %m = tfm.merge_heads %a : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  return %m : tensor<?x?x8xf32>
}

// -----

// Guards (gated): a gated FFN's mul(silu(linear(x, G)), linear(x, U)) ->
// gated_linear(x, G, U) <silu>: no linear, activation or mul is left for
// gate and up; the down projection is untouched.
// CHECK-LABEL: func.func @gate_into_linear
// CHECK-NOT: {{tfm\.(activation|mul)}}
// CHECK: %[[H:.*]] = tfm.gated_linear %arg0, %arg1, %arg2 <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
// CHECK-NOT: {{tfm\.(activation|mul)}}
// CHECK: %[[Y:.*]] = tfm.linear %[[H]], %arg3 : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
// CHECK: return %[[Y]]
func.func @gate_into_linear(%x: tensor<?x?x8xf32>, %wg: tensor<16x8xf32>, %wu: tensor<16x8xf32>, %wd: tensor<8x16xf32>) -> tensor<?x?x8xf32> {
  %g = tfm.linear %x, %wg : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %ga = tfm.activation %g <silu> : tensor<?x?x16xf32>
  %u = tfm.linear %x, %wu : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %h = tfm.mul %ga, %u : tensor<?x?x16xf32>
  %y = tfm.linear %h, %wd : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Guards (gated): the activation already in the gate's linear, up on the
// left of the mul, and both biases.
// CHECK-LABEL: func.func @gate_activation_in_linear
// CHECK-NOT: {{tfm\.(linear|mul)}}
// CHECK: %[[H:.*]] = tfm.gated_linear %arg0, %arg1, %arg2 bias %arg3, %arg4 <gelu_tanh> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
// CHECK-NOT: {{tfm\.(linear|mul)}}
// CHECK: return %[[H]]
func.func @gate_activation_in_linear(%x: tensor<?x?x8xf32>, %wg: tensor<16x8xf32>, %wu: tensor<16x8xf32>, %bg: tensor<16xf32>, %bu: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %g = tfm.linear %x, %wg bias %bg {activation = #tfm.activation<gelu_tanh>} : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %u = tfm.linear %x, %wu bias %bu : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %h = tfm.mul %u, %g : tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}

// -----

// Guards (gated, negative): gate and up of different inputs are two GEMMs.
// CHECK-LABEL: func.func @no_gate_different_inputs
// CHECK-NOT: tfm.gated_linear
// CHECK: tfm.linear %arg0, %arg2 {activation = #tfm.activation<silu>}
// CHECK: tfm.linear %arg1, %arg3 :
// CHECK: tfm.mul
// CHECK-NOT: tfm.gated_linear
func.func @no_gate_different_inputs(%x: tensor<?x?x8xf32>, %y: tensor<?x?x8xf32>, %wg: tensor<16x8xf32>, %wu: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  %g = tfm.linear %x, %wg : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %ga = tfm.activation %g <silu> : tensor<?x?x16xf32>
  %u = tfm.linear %y, %wu : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %h = tfm.mul %ga, %u : tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}

// -----

// Guards (gated, negative): with an activation on both sides neither is the
// plain up projection (the kernel applies one activation, to the gate).
// CHECK-LABEL: func.func @no_gate_up_has_activation
// CHECK-NOT: tfm.gated_linear
// CHECK: tfm.linear %arg0, %arg1 {activation = #tfm.activation<silu>}
// CHECK: tfm.linear %arg0, %arg2 {activation = #tfm.activation<relu>}
// CHECK: tfm.mul
// CHECK-NOT: tfm.gated_linear
func.func @no_gate_up_has_activation(%x: tensor<?x?x8xf32>, %wg: tensor<16x8xf32>, %wu: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  %g = tfm.linear %x, %wg : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %ga = tfm.activation %g <silu> : tensor<?x?x16xf32>
  %u = tfm.linear %x, %wu : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %ua = tfm.activation %u <relu> : tensor<?x?x16xf32>
  %h = tfm.mul %ga, %ua : tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}

// -----

// Guards (gated, negative): no activation at all (a bilinear product) is
// not the act(gate) · up the kernel computes.
// CHECK-LABEL: func.func @no_gate_without_activation
// CHECK-NOT: tfm.gated_linear
// CHECK: tfm.mul
func.func @no_gate_without_activation(%x: tensor<?x?x8xf32>, %wg: tensor<16x8xf32>, %wu: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  %g = tfm.linear %x, %wg : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %u = tfm.linear %x, %wu : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %h = tfm.mul %g, %u : tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}

// -----

// Guards (gated, negative): a bias on the gate only: gated_linear takes both
// or neither.
// CHECK-LABEL: func.func @no_gate_one_bias
// CHECK-NOT: tfm.gated_linear
// CHECK: tfm.linear %arg0, %arg1 bias %arg3 {activation = #tfm.activation<silu>}
// CHECK: tfm.linear %arg0, %arg2 :
// CHECK: tfm.mul
// CHECK-NOT: tfm.gated_linear
func.func @no_gate_one_bias(%x: tensor<?x?x8xf32>, %wg: tensor<16x8xf32>, %wu: tensor<16x8xf32>, %bg: tensor<16xf32>) -> tensor<?x?x16xf32> {
  %g = tfm.linear %x, %wg bias %bg : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %ga = tfm.activation %g <silu> : tensor<?x?x16xf32>
  %u = tfm.linear %x, %wu : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %h = tfm.mul %ga, %u : tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}

// -----

// Guards (gated, negative): weights of different shapes (here one with a
// dynamic row count) are not one GEMM's two parts.
// CHECK-LABEL: func.func @no_gate_weight_shapes_differ
// CHECK-NOT: tfm.gated_linear
// CHECK: tfm.mul
func.func @no_gate_weight_shapes_differ(%x: tensor<?x?x8xf32>, %wg: tensor<16x8xf32>, %wu: tensor<?x8xf32>) -> tensor<?x?x16xf32> {
  %g = tfm.linear %x, %wg : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %ga = tfm.activation %g <silu> : tensor<?x?x16xf32>
  %u = tfm.linear %x, %wu : (tensor<?x?x8xf32>, tensor<?x8xf32>) -> tensor<?x?x16xf32>
  %h = tfm.mul %ga, %u : tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}

// -----

// Guards (gated, negative): the activated gate has another user, so it
// cannot disappear into the GEMM (the activation still joins its linear).
// CHECK-LABEL: func.func @no_gate_activation_reused
// CHECK-NOT: tfm.gated_linear
// CHECK: %[[G:.*]] = tfm.linear %arg0, %arg1 {activation = #tfm.activation<silu>}
// CHECK: %[[H:.*]] = tfm.mul
// CHECK: return %[[H]], %[[G]]
func.func @no_gate_activation_reused(%x: tensor<?x?x8xf32>, %wg: tensor<16x8xf32>, %wu: tensor<16x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>) {
  %g = tfm.linear %x, %wg : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %ga = tfm.activation %g <silu> : tensor<?x?x16xf32>
  %u = tfm.linear %x, %wu : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %h = tfm.mul %ga, %u : tensor<?x?x16xf32>
  return %h, %ga : tensor<?x?x16xf32>, tensor<?x?x16xf32>
}
