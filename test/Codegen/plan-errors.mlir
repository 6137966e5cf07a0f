// Codegen reads each kernel's typed tile plan back and refuses, at the op,
// a plan it cannot schedule with: never a fallback default.
// RUN: tfmc-codegen %s --target x86-64-avx2 --split-input-file --verify-diagnostics
//
// The well-formed plan of the first case compiles (its Halide description
// is printed; a plan of 2-row tiles with a one-row tile, so the kernel
// holds both and specializes on the row count): the errors below come from
// the one key or value changed.
// RUN: not tfmc-codegen %s --target x86-64-avx2 --split-input-file 2>&1 | FileCheck %s
// CHECK: // kernel tfmc_{{[0-9a-f]+}}: tfm.linear at
// CHECK: module name=linear, target=x86-64-linux-avx-avx2-f16c-fma-no_runtime-sse41

module @ok {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x4xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx2", unroll = 1 : i64, vector = 8 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %w = tfm.weight "w" : tensor<4x8xf32>
  %y = tfm.linear %e, %w {tfm.arena = array<i64: 0, 256>, tfm.tile = {block_m = 12288 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 4 : i64, one_row_micro_n = 7 : i64, one_row_tiles_per_task = 1 : i64, target = "x86-64-avx2", tiles_per_task = 1 : i64, vector = 8 : i64, widen_panel = false}} : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}
}

// -----

// A plan made for another target.
module @other_target {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x8xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  // expected-error @+1 {{tile plan is for target 'x86-64-avx512', not 'x86-64-avx2'}}
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx512", unroll = 1 : i64, vector = 16 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}
}

// -----

// A key missing.
module @missing_key {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x4xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx2", unroll = 1 : i64, vector = 8 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %w = tfm.weight "w" : tensor<4x8xf32>
  // expected-error @+1 {{tile plan has no valid 'micro_n'}}
  %y = tfm.linear %e, %w {tfm.arena = array<i64: 0, 256>, tfm.tile = {block_m = 12288 : i64, kind = "gemm", micro_m = 2 : i64, target = "x86-64-avx2", tiles_per_task = 1 : i64, vector = 8 : i64, widen_panel = false}} : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}
}

// -----

// A plan of 2-row tiles without its one-row keys.
module @no_one_row {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x4xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx2", unroll = 1 : i64, vector = 8 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %w = tfm.weight "w" : tensor<4x8xf32>
  // expected-error @+1 {{tile plan has no valid 'one_row_micro_n'}}
  %y = tfm.linear %e, %w {tfm.arena = array<i64: 0, 256>, tfm.tile = {block_m = 12288 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 4 : i64, target = "x86-64-avx2", tiles_per_task = 1 : i64, vector = 8 : i64, widen_panel = false}} : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}
}

// -----

// A key no plan has (the old plans' tail keys).
module @unknown_key {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x8xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  // expected-error @+1 {{tile plan has an unknown key 'tail'}}
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, tail = "guard", target = "x86-64-avx2", unroll = 1 : i64, vector = 8 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}
}

// -----

// A plan of the wrong family for the kernel.
module @wrong_family {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x8xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  // expected-error @+1 {{tile plan of kind 'gemm' for a kernel that needs a 'rows' plan}}
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {block_m = 12288 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 4 : i64, target = "x86-64-avx2", tiles_per_task = 1 : i64, vector = 8 : i64, widen_panel = false}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}
}

// -----

// A linear's plan names one of its two families.
module @linear_wrong_family {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x4xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx2", unroll = 1 : i64, vector = 8 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %w = tfm.weight "w" : tensor<4x8xf32>
  // expected-error @+1 {{tile plan of kind 'rows' for a kernel that needs a 'gemm' plan (or a 'packed_gemm' one)}}
  %y = tfm.linear %e, %w {tfm.arena = array<i64: 0, 256>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx2", unroll = 1 : i64, vector = 8 : i64}} : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}
}

// -----

// A packed plan missing a key (block_m).
module @packed_missing_key {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x4xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx2", unroll = 1 : i64, vector = 8 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %w = tfm.weight "w" : tensor<4x8xf32>
  // expected-error @+1 {{tile plan has no valid 'block_m'}}
  %y = tfm.linear %e, %w {tfm.arena = array<i64: 0, 256>, tfm.tile = {block_k = 256 : i64, kind = "packed_gemm", micro_m = 6 : i64, micro_n = 2 : i64, target = "x86-64-avx2", task_m = 252 : i64, task_n = 32 : i64, vector = 8 : i64}} : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}
}

// -----

// A value of the wrong type.
module @wrong_type {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x8xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  // expected-error @+1 {{tile plan has no valid 'unroll'}}
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx2", unroll = "4", vector = 8 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}
}

// -----

// A value outside its field's range: a vector of 0 lanes (it divided by zero
// in the GEMM's algorithm), and a factor past the int the schedules use.
module @zero_vector {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x4xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 512 : i64, target = "x86-64-avx2", unroll = 1 : i64, vector = 8 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  %w = tfm.weight "w" : tensor<4x8xf32>
  // expected-error @+1 {{tile plan's 'vector' is 0, outside 1..2147483647}}
  %y = tfm.linear %e, %w {tfm.arena = array<i64: 0, 256>, tfm.tile = {block_m = 12288 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 4 : i64, target = "x86-64-avx2", tiles_per_task = 1 : i64, vector = 0 : i64, widen_panel = false}} : (tensor<?x?x8xf32>, tensor<4x8xf32>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}
}

// -----

module @huge_rows_per_task {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x8xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  // expected-error @+1 {{tile plan's 'rows_per_task' is 4294967296, outside 1..2147483647}}
  %e = tfm.embedding %t[%x] {tfm.arena = array<i64: 0, 512>, tfm.tile = {kind = "rows", rows_per_task = 4294967296 : i64, target = "x86-64-avx2", unroll = 1 : i64, vector = 8 : i64}} : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}
}

// -----

// No plan at all, and no arena slot: the middle end did not run.
module @not_planned {
func.func @forward(%x: tensor<?x?xi64> {tfm.input = "input_ids"}) -> (tensor<?x?x8xf32> {tfm.output = "logits"}) attributes {tfm.max_len = 16 : i64} {
  %t = tfm.weight "table" : tensor<10x8xf32>
  // expected-error @+1 {{kernel has no arena slot: run the memory planner first}}
  %e = tfm.embedding %t[%x] : tensor<10x8xf32>, tensor<?x?xi64> -> tensor<?x?x8xf32>
  return %e : tensor<?x?x8xf32>
}
}

// -----

// An op no kernel implements (the middle end's check-kernels pass stops
// such a module first; codegen refuses it too).
module @not_a_kernel {
func.func @forward(%x: tensor<?x?x8xf32> {tfm.input = "input_ids"}) -> (tensor<?x?x8xf32> {tfm.output = "logits"}) attributes {tfm.arena_size = 512 : i64, tfm.max_batch = 1 : i64, tfm.max_len = 16 : i64, tfm.max_seq = 16 : i64} {
  // expected-error @+1 {{tfmc has no kernel for 'tfm.softmax'}}
  %s = tfm.softmax %x {axis = 2 : i64, tfm.arena = array<i64: 0, 512>} : tensor<?x?x8xf32>
  return %s : tensor<?x?x8xf32>
}
}
