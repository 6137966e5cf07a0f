// RUN: tfm-opt %s -split-input-file -tfm-plan-memory="max-batch=2 max-seq=8" | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-plan-memory="max-batch=1 max-seq=128" | FileCheck %s --check-prefix=MASKS
// RUN: tfm-opt %s -split-input-file -tfm-plan-memory="max-batch=2 max-seq=8 in-place=false" | FileCheck %s --check-prefix=NO-IN-PLACE
//
// tfm-plan-memory: every kernel result gets [offset, bytes] in one arena,
// sized at the largest batch (a dynamic leading dimension) and sequence
// (any other dynamic dimension), live from its kernel to its last reader;
// an elementwise kernel writes over an operand that dies there (same size);
// buffers are packed largest first at the lowest free offset, 64-byte
// aligned. Every offset below is derived by hand.
//
// With max-batch 2 and max-seq 8, f32:
//   [B, S, 32] = 2·8·32·4 = 2048 bytes, [B, S, 16] = 2·8·16·4 = 1024 bytes.
//
// Program positions (weights count, return reads %o), buffers and ranges:
//    2 %h1 linear      -> A 2048, live [2, 3]
//    3 %g  activation  -> in place over A (%h1's last reader): A [2, 4]
//    4 %h2 linear      -> B 1024, [4, 5]
//    5 %r  add         -> in place over B (%h2 dies here):     B [4, 6]
//    6 %p  linear      -> C 2048, [6, 9]  (read at 7 and 9)
//    7 %q  scale       -> NOT over C: %p has a later reader (9): D 2048 [7, 9]
//    8 %u  linear      -> E 1024, [8, 11]
//    9 %z  add(%p, %q) -> in place over C (%p dies here):      C [6, 10]
//   10 %y  linear      -> F 1024, [10, 11]
//   11 %o  add(%y, %u) -> in place over F (%y dies here):      F [10, 12]
// Packing, largest first (stable): A, C, D, then B, E, F.
//   A -> 0.  C overlaps nothing placed in time (A ends at 4) -> 0.
//   D overlaps C -> 2048.  B overlaps A and C (both at 0) -> 2048.
//   E overlaps C [0, 2048) and D [2048, 4096) -> 4096.
//   F overlaps C [0, 2048) and E [4096, 5120) -> the gap at 2048.
// Arena: 5120 bytes = the largest live set, C + D + E at positions 8-9.

// CHECK-LABEL: func.func @ffn_chain
// CHECK-SAME: tfm.arena_size = 5120 : i64, tfm.max_batch = 2 : i64, tfm.max_len = 8 : i64, tfm.max_seq = 8 : i64
// CHECK: tfm.weight "w1" : tensor<32x16xf32>
// CHECK: tfm.weight "w2" : tensor<16x32xf32>
// CHECK: %[[H1:.*]] = tfm.linear %arg0, %{{.*}} {tfm.arena = array<i64: 0, 2048>}
// CHECK: %[[G:.*]] = tfm.activation %[[H1]] <relu> {tfm.arena = array<i64: 0, 2048>}
// CHECK: %[[H2:.*]] = tfm.linear %[[G]], %{{.*}} {tfm.arena = array<i64: 2048, 1024>}
// CHECK: %[[R:.*]] = tfm.add %[[H2]], %arg0 {tfm.arena = array<i64: 2048, 1024>}
// CHECK: %[[P:.*]] = tfm.linear %[[R]], %{{.*}} {tfm.arena = array<i64: 0, 2048>}
// CHECK: %[[Q:.*]] = tfm.scale %[[P]] by 2.000000e+00 {tfm.arena = array<i64: 2048, 2048>}
// CHECK: %[[U:.*]] = tfm.linear %[[Q]], %{{.*}} {tfm.arena = array<i64: 4096, 1024>}
// CHECK: %[[Z:.*]] = tfm.add %[[P]], %[[Q]] {tfm.arena = array<i64: 0, 2048>}
// CHECK: %[[Y:.*]] = tfm.linear %[[Z]], %{{.*}} {tfm.arena = array<i64: 2048, 1024>}
// CHECK: %[[O:.*]] = tfm.add %[[Y]], %[[U]] {tfm.arena = array<i64: 2048, 1024>}
// CHECK: return %[[O]]
// in-place=false (tfmc --scheduler adams2019, whose schedules may compute an
// element twice): no result shares its operand's buffer. %g no longer goes
// over A: A [0, 2048) is live until %g runs, so %g takes 2048; %r likewise
// leaves %h2's buffer (at 0, A having died) and takes 2048.
// NO-IN-PLACE-LABEL: func.func @ffn_chain
// NO-IN-PLACE: %[[H1:.*]] = tfm.linear %arg0, %{{.*}} {tfm.arena = array<i64: 0, 2048>}
// NO-IN-PLACE: tfm.activation %[[H1]] <relu> {tfm.arena = array<i64: 2048, 2048>}
// NO-IN-PLACE: %[[H2:.*]] = tfm.linear %{{.*}} {tfm.arena = array<i64: 0, 1024>}
// NO-IN-PLACE: tfm.add %[[H2]], %arg0 {tfm.arena = array<i64: 2048, 1024>}
func.func @ffn_chain(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> attributes {tfm.max_len = 8 : i64} {
  %w1 = tfm.weight "w1" : tensor<32x16xf32>
  %w2 = tfm.weight "w2" : tensor<16x32xf32>
  %h1 = tfm.linear %x, %w1 : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  %g = tfm.activation %h1 <relu> : tensor<?x?x32xf32>
  %h2 = tfm.linear %g, %w2 : (tensor<?x?x32xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
  %r = tfm.add %h2, %x : tensor<?x?x16xf32>
  %p = tfm.linear %r, %w1 : (tensor<?x?x16xf32>, tensor<32x16xf32>) -> tensor<?x?x32xf32>
  %q = tfm.scale %p by 2.0 : tensor<?x?x32xf32>
  %u = tfm.linear %q, %w2 : (tensor<?x?x32xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
  %z = tfm.add %p, %q : tensor<?x?x32xf32>
  %y = tfm.linear %z, %w2 : (tensor<?x?x32xf32>, tensor<16x32xf32>) -> tensor<?x?x16xf32>
  %o = tfm.add %y, %u : tensor<?x?x16xf32>
  return %o : tensor<?x?x16xf32>
}

// -----

// Guards: the option max-seq wins over tfm.max_len, and a non-elementwise
// kernel (layer_norm) never writes over its input even when the input dies
// there: it reads a whole row (mean, variance) before writing it.
// [B, S, 16] at batch 2, seq 8 = 1024 bytes:
//   1 %n1 layer_norm(%x)   -> A [1, 2]
//   2 %n2 layer_norm(%n1)  -> B [2, 3]: A is live at 2, so B goes to 1024
//   3 %n3 layer_norm(%n2)  -> C [3, 4]: overlaps B only -> 0
// Arena 2048.
// CHECK-LABEL: func.func @row_kernels_not_in_place
// CHECK-SAME: tfm.arena_size = 2048 : i64, tfm.max_batch = 2 : i64, tfm.max_len = 1024 : i64, tfm.max_seq = 8 : i64
// CHECK: tfm.layer_norm %arg0, {{.*}}tfm.arena = array<i64: 0, 1024>
// CHECK: tfm.layer_norm {{.*}}tfm.arena = array<i64: 1024, 1024>
// CHECK: tfm.layer_norm {{.*}}tfm.arena = array<i64: 0, 1024>
func.func @row_kernels_not_in_place(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> attributes {tfm.max_len = 1024 : i64} {
  %g = tfm.weight "g" : tensor<16xf32>
  %n1 = tfm.layer_norm %x, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %n2 = tfm.layer_norm %n1, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %n3 = tfm.layer_norm %n2, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %n3 : tensor<?x?x16xf32>
}

// -----

// Guards: a [B, H, S, D] tensor: the leading dynamic dimension is the
// batch, the other the sequence: 2·2·8·4·4 = 512 bytes; the scale reads a
// function argument, so there is nothing to write over.
// CHECK-LABEL: func.func @other_shapes
// CHECK-SAME: tfm.arena_size = 1024 : i64
// CHECK: %[[S:.*]] = tfm.scale %arg0 by 5.000000e-01 {tfm.arena = array<i64: 0, 512>}
// CHECK: tfm.attention %[[S]], %arg0, %arg0 {{.*}}tfm.arena = array<i64: 512, 512>
func.func @other_shapes(%q: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> attributes {tfm.max_len = 8 : i64} {
  %s = tfm.scale %q by 0.5 : tensor<?x2x?x4xf32>
  %a = tfm.attention %s, %q, %q {mask = #tfm.mask<causal>, scale = 1.0 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %a : tensor<?x2x?x4xf32>
}

// -----

// Guards: mask producers that stay unfused are sized by what they are. A
// causal or window mask is [Sq, Sk] (its leading dynamic dimension is a
// sequence, not the batch): 128·128 i1 = 16384 bytes, not batch·128 = 128
// (that plan would let the mask kernel write 16 KiB into a 128-byte slot).
// A padding mask is [B, 1, 1, Sk]: 1·128 = 128; their mask_and
// [B, 1, Sq, Sk]: 16384. All four are returned, so all are live together:
// 16384 x 3 (largest first, in order) then the 128-byte one: 49280.
// MASKS-LABEL: func.func @unfused_masks
// MASKS-SAME: tfm.arena_size = 49280 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 128 : i64, tfm.max_seq = 128 : i64
// MASKS: tfm.causal_mask %arg0 {tfm.arena = array<i64: 0, 16384>}
// MASKS: tfm.window_mask %arg0 {size = 4 : i64, tfm.arena = array<i64: 16384, 16384>}
// MASKS: tfm.padding_mask %arg1 {tfm.arena = array<i64: 49152, 128>}
// MASKS: tfm.mask_and {{.*}}{tfm.arena = array<i64: 32768, 16384>}
func.func @unfused_masks(%x: tensor<?x?x8xf32>, %kp: tensor<?x?xi64>) -> (tensor<?x?xi1>, tensor<?x?xi1>, tensor<?x1x1x?xi1>, tensor<?x1x?x?xi1>) attributes {tfm.max_len = 128 : i64} {
  %c = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %w = tfm.window_mask %x {size = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x?xi1>
  %p = tfm.padding_mask %kp : tensor<?x?xi64> -> tensor<?x1x1x?xi1>
  %cp = tfm.mask_and %c, %p : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  return %c, %w, %p, %cp : tensor<?x?xi1>, tensor<?x?xi1>, tensor<?x1x1x?xi1>, tensor<?x1x?x?xi1>
}
