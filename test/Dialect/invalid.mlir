// RUN: tfm-opt %s -split-input-file -verify-diagnostics
// One case per verifier diagnostic of the tfm dialect.

// expected-error @+1 {{needs a non-empty parameter name}}
%w = tfm.weight "" : tensor<4xf32>

// -----

// expected-error @+1 {{result #0 must be statically shaped tensor of 32-bit float values}}
%w = tfm.weight "w" : tensor<?x4xf32>

// -----

func.func @f(%t: tensor<10x8xf32>, %ids: tensor<?x?x?xi64>) {
  // expected-error @+1 {{ids must have rank 2, got 3}}
  %x = tfm.embedding %t[%ids] : tensor<10x8xf32>, tensor<?x?x?xi64> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%t: tensor<10x8xf32>, %ids: tensor<?x?xf32>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 32-bit signless integer or 64-bit signless integer values}}
  %x = tfm.embedding %t[%ids] : tensor<10x8xf32>, tensor<?x?xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%t: tensor<10x8xf32>, %ids: tensor<2x?xi64>) {
  // expected-error @+1 {{result batch (3) does not match ids batch (2)}}
  %x = tfm.embedding %t[%ids] : tensor<10x8xf32>, tensor<2x?xi64> -> tensor<3x?x8xf32>
  return
}

// -----

func.func @f(%t: tensor<10x8xf32>, %ids: tensor<?x?xi64>) {
  // expected-error @+1 {{result width (16) does not match embedding width (8)}}
  %x = tfm.embedding %t[%ids] : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%t: tensor<10xf32>, %ids: tensor<?x?xi64>) {
  // expected-error @+1 {{table must have rank 2, got 1}}
  %x = tfm.embedding %t[%ids] : tensor<10xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{learned positions need a table}}
  %p = tfm.positions %x {kind = #tfm.positions<learned>} : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %t: tensor<16x8xf32>) {
  // expected-error @+1 {{sinusoidal positions take no table}}
  %p = tfm.positions %x, %t {kind = #tfm.positions<sinusoidal>} : tensor<?x?x8xf32>, tensor<16x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %t: tensor<16x4xf32>) {
  // expected-error @+1 {{position table width (4) does not match input width (8)}}
  %p = tfm.positions %x, %t {kind = #tfm.positions<learned>} : tensor<?x?x8xf32>, tensor<16x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{input must have rank 3, got 2}}
  %p = tfm.positions %x {kind = #tfm.positions<sinusoidal>} : tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+2 {{expected ::tfmc::tfm::PositionKind to be one of: sinusoidal, learned, sinusoidal_halves}}
  // expected-error @+1 {{failed to parse Tfm_PositionKindAttr parameter 'value'}}
  %p = tfm.positions %x {kind = #tfm.positions<rotary>} : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<16x4xf32>) {
  // expected-error @+1 {{input features (8) does not match weight in-features (4)}}
  %y = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x4xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{result features (12) does not match weight out-features (16)}}
  %y = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x12xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{bias size (8) does not match weight out-features (16)}}
  %y = tfm.linear %x, %w bias %b : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %b: tensor<1x16xf32>) {
  // expected-error @+1 {{bias must have rank 1, got 2}}
  %y = tfm.linear %x, %w bias %b : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<1x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{input must have rank >= 2, got 1}}
  %y = tfm.linear %x, %w : (tensor<8xf32>, tensor<16x8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<2x16x8xf32>) {
  // expected-error @+1 {{weight must have rank 2, got 3}}
  %y = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<2x16x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<2x?x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{result dimension 0 (3) does not match input dimension 0 (2)}}
  %y = tfm.linear %x, %w : (tensor<2x?x8xf32>, tensor<16x8xf32>) -> tensor<3x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{result must have rank 3, got 2}}
  %y = tfm.linear %x, %w : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf16>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float or 8-bit signless integer values}}
  %y = tfm.linear %x, %w : (tensor<?x?x8xf16>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%a: tensor<?x2x?x4xf32>, %b: tensor<?x2x?x8xf32>) {
  // expected-error @+1 {{lhs contraction size (4) does not match rhs contraction size (8)}}
  %s = tfm.matmul %a, %b {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x?xf32>
  return
}

// -----

func.func @f(%a: tensor<?x2x?x4xf32>, %b: tensor<?x3x?x4xf32>) {
  // expected-error @+1 {{lhs batch dimension 1 (2) does not match rhs batch dimension 1 (3)}}
  %s = tfm.matmul %a, %b {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x3x?x4xf32>) -> tensor<?x2x?x?xf32>
  return
}

// -----

func.func @f(%a: tensor<?x2x?x4xf32>, %b: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{result batch dimension 1 (3) does not match lhs batch dimension 1 (2)}}
  %s = tfm.matmul %a, %b {transpose_rhs} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x3x?x?xf32>
  return
}

// -----

func.func @f(%a: tensor<5x4xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{result rows (4) does not match lhs rows (5)}}
  %s = tfm.matmul %a, %b : (tensor<5x4xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return
}

// -----

func.func @f(%a: tensor<4x5xf32>, %b: tensor<4x6xf32>) {
  // transpose_lhs: lhs is [K, M] = [4, 5], so the result has 5 rows.
  // expected-error @+1 {{result columns (5) does not match rhs columns (6)}}
  %s = tfm.matmul %a, %b {transpose_lhs} : (tensor<4x5xf32>, tensor<4x6xf32>) -> tensor<5x5xf32>
  return
}

// -----

func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{operands must have rank >= 2, got 1}}
  %s = tfm.matmul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @f(%a: tensor<2x5x4xf32>, %b: tensor<4x6xf32>) {
  // expected-error @+1 {{rhs must have rank 3, got 2}}
  %s = tfm.matmul %a, %b : (tensor<2x5x4xf32>, tensor<4x6xf32>) -> tensor<2x5x6xf32>
  return
}

// -----

func.func @f(%w: tensor<24x8xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %a, %b, %c = tfm.split %w {axis = 2 : i64} : tensor<24x8xf32> -> tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  return
}

// -----

func.func @f(%w: tensor<25x8xf32>) {
  // expected-error @+1 {{parts of sizes adding up to 24 along axis 0 do not make 25}}
  %a, %b, %c = tfm.split %w {axis = 0 : i64} : tensor<25x8xf32> -> tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
  return
}

// -----

func.func @f(%w: tensor<24x8xf32>) {
  // expected-error @+1 {{parts of sizes adding up to 18 along axis 0 do not make 24}}
  %a, %b, %c = tfm.split %w {axis = 0 : i64} : tensor<24x8xf32> -> tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>
  return
}

// -----

func.func @f(%w: tensor<24x8xf32>) {
  // expected-error @+1 {{part dimension 1 (4) does not match input dimension 1 (8)}}
  %a, %b = tfm.split %w {axis = 0 : i64} : tensor<24x8xf32> -> tensor<12x8xf32>, tensor<12x4xf32>
  return
}

// -----

func.func @f(%w: tensor<24x8xf32>) {
  // expected-error @+1 {{part dimension 1 (4) does not match input dimension 1 (8)}}
  %a, %b = tfm.split %w {axis = 0 : i64} : tensor<24x8xf32> -> tensor<12x4xf32>, tensor<12x4xf32>
  return
}

// -----

func.func @f(%w: tensor<24x8xf32>) {
  // expected-error @+1 {{each part must have rank 2, got 1}}
  %a, %b = tfm.split %w {axis = 0 : i64} : tensor<24x8xf32> -> tensor<96xf32>, tensor<96xf32>
  return
}

// -----

func.func @f(%w: tensor<24x8xf32>) {
  // expected-error @+1 {{needs at least one result}}
  "tfm.split"(%w) {axis = 0 : i64} : (tensor<24x8xf32>) -> ()
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{heads (3) x head size (2) does not match input width (8)}}
  %h = tfm.split_heads %x : tensor<?x?x8xf32> -> tensor<?x3x?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{needs static heads, head size and model width}}
  %h = tfm.split_heads %x : tensor<?x?x8xf32> -> tensor<?x?x?x2xf32>
  return
}

// -----

func.func @f(%x: tensor<2x?x8xf32>) {
  // expected-error @+1 {{result batch (3) does not match input batch (2)}}
  %h = tfm.split_heads %x : tensor<2x?x8xf32> -> tensor<3x2x?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x5x8xf32>) {
  // expected-error @+1 {{result sequence (6) does not match input sequence (5)}}
  %h = tfm.split_heads %x : tensor<?x5x8xf32> -> tensor<?x2x6x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{result must have rank 4, got 3}}
  %h = tfm.split_heads %x : tensor<?x?x8xf32> -> tensor<?x2x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{heads (2) x head size (4) does not match result width (6)}}
  %m = tfm.merge_heads %x : tensor<?x2x?x4xf32> -> tensor<?x?x6xf32>
  return
}

// -----

func.func @f(%x: tensor<?x2x5x4xf32>) {
  // expected-error @+1 {{result sequence (6) does not match input sequence (5)}}
  %m = tfm.merge_heads %x : tensor<?x2x5x4xf32> -> tensor<?x6x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{input must have rank 4, got 3}}
  %m = tfm.merge_heads %x : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{factor must be finite, got INF}}
  %s = tfm.scale %x by 0x7FF0000000000000 : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{factor must be finite, got nan}}
  %s = tfm.scale %x by 0x7FF8000000000000 : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{cap must be positive}}
  %s = tfm.softcap %x at 0.0 : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive, got 0.000000e+00}}
  %n = tfm.layer_norm %x, %g, %g {eps = 0.0 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive, got -1.000000e-05}}
  %n = tfm.layer_norm %x, %g, %g {eps = -1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<4xf32>, %b: tensor<8xf32>) {
  // expected-error @+1 {{gamma size (4) does not match normalized width (8)}}
  %n = tfm.layer_norm %x, %g, %b {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<4xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<6xf32>) {
  // expected-error @+1 {{beta size (6) does not match normalized width (8)}}
  %n = tfm.layer_norm %x, %g, %b {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<6xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<1x8xf32>) {
  // expected-error @+1 {{gamma must have rank 1, got 2}}
  %n = tfm.layer_norm %x, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x2x?x?xf32>) {
  // expected-error @+1 {{axis 4 is out of range for rank 4}}
  %s = tfm.softmax %x {axis = 4 : i64} : tensor<?x2x?x?xf32>
  return
}

// -----

func.func @f(%x: tensor<?x2x?x?xf32>) {
  // expected-error @+1 {{axis -1 is out of range for rank 4}}
  %s = tfm.softmax %x {axis = -1 : i64} : tensor<?x2x?x?xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+2 {{expected ::tfmc::tfm::ActivationKind to be one of: relu, gelu, gelu_tanh}}
  // expected-error @+1 {{failed to parse Tfm_ActivationAttr parameter 'value'}}
  %a = tfm.activation %x <swish> : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%a: tensor<?x?x8xf32>, %b: tensor<?x?x4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %s = "tfm.add"(%a, %b) : (tensor<?x?x8xf32>, tensor<?x?x4xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x5x8xf32>) {
  // expected-error @+1 {{result rows (4) does not match sequence length (5)}}
  %c = tfm.causal_mask %x : tensor<?x5x8xf32> -> tensor<4x5xi1>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{sequence must have rank 3, got 2}}
  %c = tfm.causal_mask %x : tensor<?x8xf32> -> tensor<?x?xi1>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{result #0 must be ranked tensor of 1-bit signless integer values}}
  %c = tfm.causal_mask %x : tensor<?x?x8xf32> -> tensor<?x?xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{window size must be positive, got 0}}
  %w = tfm.window_mask %x {size = 0 : i64} : tensor<?x?x8xf32> -> tensor<?x?xi1>
  return
}

// -----

func.func @f(%x: tensor<?x6x8xf32>) {
  // expected-error @+1 {{result columns (5) does not match sequence length (6)}}
  %w = tfm.window_mask %x {size = 2 : i64} : tensor<?x6x8xf32> -> tensor<6x5xi1>
  return
}

// -----

func.func @f(%m: tensor<?x?xi64>) {
  // expected-error @+1 {{result must have shape [B, 1, 1, S], got [?, 2, 1, ?]}}
  %p = tfm.padding_mask %m : tensor<?x?xi64> -> tensor<?x2x1x?xi1>
  return
}

// -----

func.func @f(%m: tensor<?x7xi64>) {
  // expected-error @+1 {{result keys (6) does not match key mask length (7)}}
  %p = tfm.padding_mask %m : tensor<?x7xi64> -> tensor<?x1x1x6xi1>
  return
}

// -----

func.func @f(%m: tensor<?xi64>) {
  // expected-error @+1 {{key mask must have rank 2, got 1}}
  %p = tfm.padding_mask %m : tensor<?xi64> -> tensor<?x1x1x?xi1>
  return
}

// -----

func.func @f(%a: tensor<3x4xi1>, %b: tensor<2x1x1x5xi1>) {
  // expected-error @+1 {{operand shapes do not broadcast}}
  %m = tfm.mask_and %a, %b : (tensor<3x4xi1>, tensor<2x1x1x5xi1>) -> tensor<2x1x3x4xi1>
  return
}

// -----

func.func @f(%a: tensor<3x4xi1>, %b: tensor<2x1x1x4xi1>) {
  // expected-error @+1 {{result dimension 2 (4) does not match broadcast dimension 2 (3)}}
  %m = tfm.mask_and %a, %b : (tensor<3x4xi1>, tensor<2x1x1x4xi1>) -> tensor<2x1x4x4xi1>
  return
}

// -----

func.func @f(%a: tensor<3x4xi1>, %b: tensor<2x1x1x4xi1>) {
  // expected-error @+1 {{result must have rank 4, got 2}}
  %m = tfm.mask_and %a, %b : (tensor<3x4xi1>, tensor<2x1x1x4xi1>) -> tensor<3x4xi1>
  return
}

// -----

func.func @f(%s: tensor<?x2x5x5xf32>, %m: tensor<4x5xi1>) {
  // expected-error @+1 {{mask dimension 0 (4) does not broadcast to scores dimension 2 (5)}}
  %r = tfm.apply_mask %s, %m : tensor<?x2x5x5xf32>, tensor<4x5xi1>
  return
}

// -----

func.func @f(%s: tensor<?x2x5x5xf32>, %m: tensor<5xi1>) {
  // expected-error @+1 {{mask must have rank 2 to 4, got 1}}
  %r = tfm.apply_mask %s, %m : tensor<?x2x5x5xf32>, tensor<5xi1>
  return
}

// -----

func.func @f(%s: tensor<?x5x5xf32>, %m: tensor<5x5xi1>) {
  // expected-error @+1 {{scores must have rank 4, got 3}}
  %r = tfm.apply_mask %s, %m : tensor<?x5x5xf32>, tensor<5x5xi1>
  return
}

// -----

func.func @f(%s: tensor<?x2x5x5xf32>, %m: tensor<5x5xi64>) {
  // expected-error @+1 {{operand #1 must be ranked tensor of 1-bit signless integer or 32-bit float values}}
  %r = tfm.apply_mask %s, %m : tensor<?x2x5x5xf32>, tensor<5x5xi64>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{key head size (8) does not match query head size (4)}}
  %a = tfm.attention %q, %k, %v {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>, %k: tensor<?x3x?x4xf32>, %v: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{value heads (2) does not match key heads (3)}}
  %a = tfm.attention %q, %k, %v {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x3x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

// Grouped-query attention: K/V heads must divide the query heads.
func.func @f(%q: tensor<?x4x?x4xf32>, %k: tensor<?x3x?x4xf32>, %v: tensor<?x3x?x4xf32>) {
  // expected-error @+1 {{key heads (3) do not divide query heads (4)}}
  %a = tfm.attention %q, %k, %v {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x4x?x4xf32>, tensor<?x3x?x4xf32>, tensor<?x3x?x4xf32> -> tensor<?x4x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x7x4xf32>, %v: tensor<?x2x6x4xf32>) {
  // expected-error @+1 {{value length (6) does not match key length (7)}}
  %a = tfm.attention %q, %k, %v {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x7x4xf32>, tensor<?x2x6x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x5x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{result length (4) does not match query length (5)}}
  %a = tfm.attention %q, %k, %v {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x2x5x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x4x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{scale must be positive, got 0}}
  %a = tfm.attention %q, %k, %v {mask = #tfm.mask<none>, scale = 0.0 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{a padding mask needs a key_padding operand}}
  %a = tfm.attention %q, %k, %v {mask = #tfm.mask<padding>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>, %kp: tensor<?x?xi64>) {
  // expected-error @+1 {{a key_padding operand needs a padding mask}}
  %a = tfm.attention %q, %k, %v, key_padding %kp {mask = #tfm.mask<causal>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x?xi64> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x9x4xf32>, %v: tensor<?x2x9x4xf32>, %kp: tensor<?x8xi64>) {
  // expected-error @+1 {{key_padding length (8) does not match key length (9)}}
  %a = tfm.attention %q, %k, %v, key_padding %kp {mask = #tfm.mask<padding>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x9x4xf32>, tensor<?x2x9x4xf32>, tensor<?x8xi64> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{key must have rank 3, got 4}}
  %a = tfm.attention %q, %k, %v {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{unknown mask kind 'lookahead', expected causal, padding, window(N) or none}}
  %a = tfm.attention %q, %q, %q {mask = #tfm.mask<lookahead>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{mask kind 'causal' given twice}}
  %a = tfm.attention %q, %q, %q {mask = #tfm.mask<causal, causal>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{mask window must be positive, got 0}}
  %a = tfm.attention %q, %q, %q {mask = #tfm.mask<window(0)>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x4xf32>) {
  // expected-error @+1 {{query must have rank 4 ([B, H, S, D]) or 3 ([B, S, H*D] with heads), got 2}}
  %a = tfm.attention %q, %q, %q {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x8xf32>) {
  // expected-error @+1 {{the [B, S, H*D] layout needs a heads attribute}}
  %a = tfm.attention %q, %q, %q {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{the [B, H, S, D] layout takes no heads attribute}}
  %a = tfm.attention %q, %q, %q {heads = 2 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x8xf32>) {
  // expected-error @+1 {{query width 8 is not divisible by 3 heads}}
  %a = tfm.attention %q, %q, %q {heads = 3 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x8xf32>) {
  // expected-error @+1 {{heads must be positive, got 0}}
  %a = tfm.attention %q, %q, %q {heads = 0 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x8xf32>, %k: tensor<?x6x8xf32>, %v: tensor<?x6x8xf32>, %kp: tensor<?x5xi64>) {
  // expected-error @+1 {{key_padding length (5) does not match key length (6)}}
  %a = tfm.attention %q, %k, %v, key_padding %kp {heads = 2 : i64, mask = #tfm.mask<padding>, scale = 0.5 : f64} : tensor<?x?x8xf32>, tensor<?x6x8xf32>, tensor<?x6x8xf32>, tensor<?x5xi64> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>, %r: tensor<?x?x8xf32>) {
  // expected-error @+1 {{residual type 'tensor<?x?x8xf32>' does not match result type 'tensor<?x?x16xf32>'}}
  %y = tfm.linear %x, %w residual %r : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>, %r: tensor<2x?x8xf32>) {
  // expected-error @+1 {{residual type 'tensor<2x?x8xf32>' does not match input type 'tensor<?x?x8xf32>'}}
  %n = tfm.layer_norm %x residual %r, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<2x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{result type 'tensor<1x?x8xf32>' does not match input type 'tensor<?x?x8xf32>'}}
  %n = tfm.layer_norm %x, %g, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x?x8xf32>
  return
}

// -----

// expected-error @+1 {{is 'transposed', which needs a rank-2 result, but the result has rank 1}}
%w = tfm.weight "h.0.attn.c_attn.bias" {transposed} : tensor<24xf32>

// -----

// expected-error @+1 {{needs non-empty alternative names}}
%w = tfm.weight "wte.weight" {alt_names = ["transformer.wte.weight", ""]} : tensor<4x2xf32>

// -----

// expected-error @+1 {{attribute 'alt_names' failed to satisfy constraint: string array attribute}}
%w = tfm.weight "wte.weight" {alt_names = [1, 2]} : tensor<4x2xf32>

// -----

// A narrow storage is for rank-2 weights (linear weights, embedding tables).
// expected-error @+1 {{has a storage, which needs a rank-2 result, but the result has rank 1}}
%w = tfm.weight "b" {storage = #tfm.storage<bf16>} : tensor<24xf32>

// -----

// expected-error @+1 {{has int8 or int4 storage, which needs a 'group'}}
%w = tfm.weight "w" {storage = #tfm.storage<int8>} : tensor<24x8xf32>

// -----

// expected-error @+1 {{has a 'group', which only int8 and int4 storage take}}
%w = tfm.weight "w" {group = 64 : i64, storage = #tfm.storage<bf16>} : tensor<24x8xf32>

// -----

// int4 is GGUF's Q4_0 block: 32 values a scale, no other group.
// expected-error @+1 {{has int4 storage, whose group is 32 (Q4_0 blocks), not 64}}
%w = tfm.weight "w" {group = 64 : i64, storage = #tfm.storage<int4>} : tensor<24x8xf32>

// -----

// K-quants: whole super-blocks of 256 values, no group, no panels.
// expected-error @+1 {{has q4_k storage, whose rows are whole super-blocks of 256 values, but has 100 columns}}
%w = tfm.weight "w" {storage = #tfm.storage<q4_k>} : tensor<24x100xf32>

// -----

// expected-error @+1 {{has a 'group', which only int8 and int4 storage take}}
%w = tfm.weight "w" {group = 32 : i64, storage = #tfm.storage<q6_k>} : tensor<24x256xf32>

// -----

// expected-error @+1 {{has q5_k storage, which has no panels}}
%w = tfm.weight "w" {panel = 16 : i64, storage = #tfm.storage<q5_k>} : tensor<32x256xf32>

// -----

// expected-error @+1 {{attribute 'group' failed to satisfy constraint}}
%w = tfm.weight "w" {group = 0 : i64, storage = #tfm.storage<int8>} : tensor<24x8xf32>

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{input must have rank 3, got 2}}
  %l = tfm.last_position %x : tensor<?x8xf32> -> tensor<?x1x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{result must have rank 3, got 2}}
  %l = tfm.last_position %x : tensor<?x?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{result sequence must be 1 (one position per row), got ?}}
  %l = tfm.last_position %x : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x5x8xf32>) {
  // expected-error @+1 {{result sequence must be 1 (one position per row), got 2}}
  %l = tfm.last_position %x : tensor<?x5x8xf32> -> tensor<?x2x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x0x8xf32>) {
  // expected-error @+1 {{input sequence is empty: it has no last position}}
  %l = tfm.last_position %x : tensor<?x0x8xf32> -> tensor<?x1x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x?x8xf32>) {
  // expected-error @+1 {{result batch (3) does not match input batch (2)}}
  %l = tfm.last_position %x : tensor<2x?x8xf32> -> tensor<3x1x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{result width (16) does not match input width (8)}}
  %l = tfm.last_position %x : tensor<?x?x8xf32> -> tensor<?x1x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xi32>) {
  // expected-error @+1 {{operand #0 must be ranked tensor of 32-bit float values}}
  %l = tfm.last_position %x : tensor<?x?x8xi32> -> tensor<?x1x8xf32>
  return
}

// -----

// The Llama family's ops (issue 14). Q, K and V of unequal sizes whose sizes do not make the packed rows.
func.func @f(%w: tensor<16x8xf32>) {
  // expected-error @+1 {{parts of sizes adding up to 15 along axis 0 do not make 16}}
  %a, %b, %c = tfm.split %w {axis = 0 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>, tensor<4x8xf32>, tensor<3x8xf32>
  return
}

// -----

func.func @f(%w: tensor<16x8xf32>) {
  // expected-error @+1 {{part dimension 1 (6) does not match input dimension 1 (8)}}
  %a, %b, %c = tfm.split %w {axis = 0 : i64} : tensor<16x8xf32> -> tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x6xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{result type 'tensor<?x?x4xf32>' does not match input type 'tensor<?x?x8xf32>'}}
  %n = tfm.rms_norm %x, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %r: tensor<2x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{residual type 'tensor<2x?x8xf32>' does not match input type 'tensor<?x?x8xf32>'}}
  %n = tfm.rms_norm %x residual %r, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<2x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<2x8xf32>) {
  // expected-error @+1 {{gamma must have rank 1, got 2}}
  %n = tfm.rms_norm %x, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<2x8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<6xf32>) {
  // expected-error @+1 {{gamma size (6) does not match normalized width (8)}}
  %n = tfm.rms_norm %x, %g {eps = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<6xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{eps must be positive, got 0.000000e+00}}
  %n = tfm.rms_norm %x, %g {eps = 0.0 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{eps must be finite, got nan}}
  %n = tfm.rms_norm %x, %g {eps = 0x7FF8000000000000 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<f32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{input must have rank >= 1}}
  %n = tfm.rms_norm %x, %g {eps = 1.0e-5 : f64} : (tensor<f32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @f(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{input ([B, S, H*Dh]) must have rank 3, got 2}}
  %r = tfm.rope %x {heads = 2 : i64, theta = 1.0e4 : f64} : tensor<?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{heads must be positive, got 0}}
  %r = tfm.rope %x {heads = 0 : i64, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x?xf32>) {
  // expected-error @+1 {{the feature width must be static}}
  %r = tfm.rope %x {heads = 2 : i64, theta = 1.0e4 : f64} : tensor<?x?x?xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{width 8 is not 3 heads of an even size (rope rotates pairs)}}
  %r = tfm.rope %x {heads = 3 : i64, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

// Heads of 3 features: the pairs (i, i + Dh/2) need an even head size.
func.func @f(%x: tensor<?x?x6xf32>) {
  // expected-error @+1 {{width 6 is not 2 heads of an even size (rope rotates pairs)}}
  %r = tfm.rope %x {heads = 2 : i64, theta = 1.0e4 : f64} : tensor<?x?x6xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{theta must be positive, got -1.000000e+04}}
  %r = tfm.rope %x {heads = 2 : i64, theta = -1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x4xf32>) {
  // expected-error @+1 {{input ([B, Hkv, S, D]) must have rank 4, got 3}}
  %r = tfm.repeat_heads %x : tensor<?x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x1x?x4xf32>) {
  // expected-error @+1 {{result must have rank 4, got 3}}
  %r = tfm.repeat_heads %x : tensor<?x1x?x4xf32> -> tensor<?x?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<2x1x?x4xf32>) {
  // expected-error @+1 {{result batch (3) does not match input batch (2)}}
  %r = tfm.repeat_heads %x : tensor<2x1x?x4xf32> -> tensor<3x2x?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x1x5x4xf32>) {
  // expected-error @+1 {{result length (6) does not match input length (5)}}
  %r = tfm.repeat_heads %x : tensor<?x1x5x4xf32> -> tensor<?x2x6x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x1x?x4xf32>) {
  // expected-error @+1 {{result head size (8) does not match input head size (4)}}
  %r = tfm.repeat_heads %x : tensor<?x1x?x4xf32> -> tensor<?x2x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x?x4xf32>) {
  // expected-error @+1 {{head counts must be static}}
  %r = tfm.repeat_heads %x : tensor<?x?x?x4xf32> -> tensor<?x4x?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{result heads (3) are not a multiple of input heads (2)}}
  %r = tfm.repeat_heads %x : tensor<?x2x?x4xf32> -> tensor<?x3x?x4xf32>
  return
}

// -----

func.func @f(%x: tensor<8xf32>, %g: tensor<16x8xf32>) {
  // expected-error @+1 {{input must have rank >= 2, got 1}}
  %y = tfm.gated_linear %x, %g, %g <silu> : (tensor<8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<128xf32>) {
  // expected-error @+1 {{gate weight must have rank 2, got 1}}
  %y = tfm.gated_linear %x, %g, %g <silu> : (tensor<?x?x8xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<16x8xf32>) {
  // expected-error @+1 {{result must have rank 3, got 2}}
  %y = tfm.gated_linear %x, %g, %g <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<16x8xf32>, %u: tensor<12x8xf32>) {
  // expected-error @+1 {{gate weight 'tensor<16x8xf32>' and up weight 'tensor<12x8xf32>' differ in shape}}
  %y = tfm.gated_linear %x, %g, %u <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<12x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x4xf32>, %g: tensor<16x8xf32>) {
  // expected-error @+1 {{input features (4) does not match weight in-features (8)}}
  %y = tfm.gated_linear %x, %g, %g <silu> : (tensor<?x?x4xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<16x8xf32>) {
  // expected-error @+1 {{result features (8) does not match weight out-features (16)}}
  %y = tfm.gated_linear %x, %g, %g <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<2x?x8xf32>, %g: tensor<16x8xf32>) {
  // expected-error @+1 {{result dimension 0 (3) does not match input dimension 0 (2)}}
  %y = tfm.gated_linear %x, %g, %g <silu> : (tensor<2x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<3x?x16xf32>
  return
}

// -----

// Only the custom form's `bias` takes both; the generic form can give one.
func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<16x8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{the gate and up biases must be both present or both absent}}
  %y = "tfm.gated_linear"(%x, %g, %g, %b) <{activation = #tfm.activation<silu>, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<16x8xf32>, %b: tensor<16xf32>, %c: tensor<12xf32>) {
  // expected-error @+1 {{bias size (12) does not match weight out-features (16)}}
  %y = tfm.gated_linear %x, %g, %g bias %b, %c <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16xf32>, tensor<12xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %g: tensor<16x8xf32>, %b: tensor<2x16xf32>) {
  // expected-error @+1 {{bias must have rank 1, got 2}}
  %y = tfm.gated_linear %x, %g, %g bias %b, %b <silu> : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x4x?x4xf32>, %k: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{the [B, H, S, D] layout takes no kv_heads attribute: the key's heads dimension gives it}}
  %a = tfm.attention %q, %k, %k {kv_heads = 2 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x4x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x4x?x4xf32>, %k: tensor<?x2x?x4xf32>) {
  // expected-error @+1 {{result heads (2) does not match query heads (4)}}
  %a = tfm.attention %q, %k, %k {mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x4x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x16xf32>, %k: tensor<?x?x12xf32>) {
  // expected-error @+1 {{kv_heads 3 does not divide heads 4}}
  %a = tfm.attention %q, %k, %k {heads = 4 : i64, kv_heads = 3 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x16xf32>, tensor<?x?x12xf32>, tensor<?x?x12xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x16xf32>, %k: tensor<?x?x12xf32>) {
  // expected-error @+1 {{kv_heads 0 does not divide heads 4}}
  %a = tfm.attention %q, %k, %k {heads = 4 : i64, kv_heads = 0 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x16xf32>, tensor<?x?x12xf32>, tensor<?x?x12xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x16xf32>, %k: tensor<?x?x9xf32>) {
  // expected-error @+1 {{key width 9 is not divisible by 2 heads}}
  %a = tfm.attention %q, %k, %k {heads = 4 : i64, kv_heads = 2 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x16xf32>, tensor<?x?x9xf32>, tensor<?x?x9xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x16xf32>, %k: tensor<?x?x8xf32>, %v: tensor<?x?x7xf32>) {
  // expected-error @+1 {{value width 7 is not divisible by 2 heads}}
  %a = tfm.attention %q, %k, %v {heads = 4 : i64, kv_heads = 2 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x7xf32> -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%q: tensor<?x?x16xf32>, %k: tensor<?x?x8xf32>) {
  // expected-error @+1 {{result width 18 is not divisible by 4 heads}}
  %a = tfm.attention %q, %k, %k {heads = 4 : i64, kv_heads = 2 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x18xf32>
  return
}

// -----

// 2 K/V heads of 8 against query heads of 4.
func.func @f(%q: tensor<?x?x16xf32>, %k: tensor<?x?x16xf32>) {
  // expected-error @+1 {{key head size (8) does not match query head size (4)}}
  %a = tfm.attention %q, %k, %k {heads = 4 : i64, kv_heads = 2 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32> -> tensor<?x?x16xf32>
  return
}

// -----

// The result has the query heads, each of the value head size (8 / 2 = 4).
func.func @f(%q: tensor<?x?x16xf32>, %k: tensor<?x?x8xf32>) {
  // expected-error @+1 {{result head size (2) does not match value head size (4)}}
  %a = tfm.attention %q, %k, %k {heads = 4 : i64, kv_heads = 2 : i64, mask = #tfm.mask<none>, scale = 0.5 : f64} : tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32> -> tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{rope scaling factor must be positive and finite, got 0.000000e+00}}
  %r = tfm.rope %x {heads = 2 : i64, scaling = #tfm.rope_scaling<linear, factor = 0.0>, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor, got 4.000000e+00 and 1.000000e+00}}
  %r = tfm.rope %x {heads = 2 : i64, scaling = #tfm.rope_scaling<llama3, factor = 8.0, low_freq_factor = 4.0, high_freq_factor = 1.0, original_max_len = 8192>, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{llama3 rope scaling's original_max_len must be positive, got 0}}
  %r = tfm.rope %x {heads = 2 : i64, scaling = #tfm.rope_scaling<llama3, factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0, original_max_len = 0>, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{unknown rope scaling 'yarn', expected linear, llama3 or longrope}}
  %r = tfm.rope %x {heads = 2 : i64, scaling = #tfm.rope_scaling<yarn, factor = 8.0>, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

// longrope: one factor per pair of a head's features (heads of 4: 2).
func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{longrope scaling has 3 factors; heads of 4 features turn 2 pairs, one factor each}}
  %r = tfm.rope %x {heads = 2 : i64, scaling = #tfm.rope_scaling<longrope, attention_factor = 1.2, factors = [1.0, 2.0, 3.0]>, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{longrope factors must be positive and finite, got -2.000000e+00}}
  %r = tfm.rope %x {heads = 2 : i64, scaling = #tfm.rope_scaling<longrope, attention_factor = 1.2, factors = [1.0, -2.0]>, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{longrope scaling needs a factor per frequency}}
  %r = tfm.rope %x {heads = 2 : i64, scaling = #tfm.rope_scaling<longrope, attention_factor = 1.2, factors = []>, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
  return
}

// -----

// x quantised once (tfm.quantize): K = 8 in groups of 4 is 8 levels, 2
// scales and the flag, 17 bytes in 5 chunks of 4.
func.func @f(%x: tensor<?x?x8xf32>) {
  // expected-error @+1 {{result bytes (16) does not match a row's quantised bytes (20)}}
  %q = tfm.quantize %x {group = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x?x16xi8>
  return
}

// -----

func.func @f(%x: tensor<?x?xf32>) {
  // expected-error @+1 {{input features must be static}}
  %q = tfm.quantize %x {group = 4 : i64} : tensor<?x?xf32> -> tensor<?x20xi8>
  return
}

// -----

func.func @f(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{result dimension 0 (3) does not match input dimension 0 (4)}}
  %q = tfm.quantize %x {group = 4 : i64} : tensor<4x8xf32> -> tensor<3x20xi8>
  return
}

// -----

func.func @f(%x: tensor<?x?x20xi8>, %w: tensor<16x8xf32>) {
  // expected-error @+1 {{an i8 input must be a tfm.quantize's result}}
  %y = tfm.linear %x, %w {tfm.activations = "int8"} : (tensor<?x?x20xi8>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<16x8xf32>) {
  %q = tfm.quantize %x {group = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x?x20xi8>
  // expected-error @+1 {{an i8 input (a tfm.quantize's) needs tfm.activations = "int8"}}
  %y = tfm.linear %q, %w : (tensor<?x?x20xi8>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  return
}

// -----

func.func @f(%x: tensor<?x?x8xf32>, %w: tensor<16x4xf32>) {
  %q = tfm.quantize %x {group = 4 : i64} : tensor<?x?x8xf32> -> tensor<?x?x20xi8>
  // expected-error @+1 {{input features (8) does not match weight in-features (4)}}
  %y = tfm.linear %q, %w {tfm.activations = "int8"} : (tensor<?x?x20xi8>, tensor<16x4xf32>) -> tensor<?x?x16xf32>
  return
}
