// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx2 | FileCheck %s --check-prefix=AVX2
// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx512 | FileCheck %s --check-prefix=AVX512
// RUN: tfm-opt %s -tfm-tile=target=cuda | FileCheck %s --check-prefix=CUDA
//
// GEMMs whose W is stored in int8 (tfm-weight-storage), planned as
// passes/Tile.cpp explains; derived by hand from the registers of
// each target (16 ymm registers, or 32 zmm with AVX-512; tile.mlir has the f32
// model).
//
// Many rows (prefill, forward): a narrow W keeps the dot form (the packed
// form's gathers of int8 or bf16 columns were slower: Tile.cpp). W is
// widened once per row block into an f32 panel, so the micro tile is f32's
// dot tile (tile.mlir: 3x3 on AVX2, 5x4 on AVX-512) and widen_panel is set.
// AVX2-LABEL: func.func @prefill
// AVX2: tfm.tile = {block_m = 126 : i64, kind = "gemm", micro_m = 3 : i64, micro_n = 3 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx2", tiles_per_task = 8 : i64, vector = 8 : i64, widen_panel = true}
// AVX512-LABEL: func.func @prefill
// AVX512: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 5 : i64, micro_n = 4 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx512", tiles_per_task = 6 : i64, vector = 16 : i64, widen_panel = true}
// The GPU widens W as it stages it in shared memory: f32's plan (tile.mlir).
// CUDA-LABEL: func.func @prefill
// CUDA: tfm.tile = {block_k = 32 : i64, kind = "gemm", shared_bytes = 5120 : i64, target = "cuda-sm80", thread_m = 8 : i64, thread_n = 1 : i64}
func.func @prefill(%x: tensor<?x?x768xf32>) -> tensor<?x?x768xf32> attributes {tfm.max_len = 1024 : i64} {
  %w = tfm.weight "w" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<768x768xf32>
  %y = tfm.linear %x, %w : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  return %y : tensor<?x?x768xf32>
}

// One row (decode): W is widened in registers, one more register per
// column (its scale): 1 row x c columns needs c + 1 + 2c registers.
//  - AVX2, 16: c <= 5; FMAs per load 5/6 x utilization 768/770 = 0.831
//    beats c = 4 (0.8): 5 columns, where f32 (c + 1 + c <= 16) takes 7
//    (7/8 x 768/770 = 0.873 beats 6/7 = 0.857).
//  - AVX-512, 32: c <= 10, and the search stops at 8 columns, as for f32.
// Tasks: ceil(768 / c) tiles over 4 tasks for each of the 8 cores that the
// named targets plan for, at most 8 tiles a task: AVX2 154 / 32 = 4 (f32:
// 110 / 32 = 3); AVX-512 96 / 32 = 3.
// AVX2-LABEL: func.func @decode
// AVX2: tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 5 : i64, target = "x86-64-avx2", tiles_per_task = 4 : i64, vector = 8 : i64, widen_panel = false}
// AVX2: tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 7 : i64, target = "x86-64-avx2", tiles_per_task = 3 : i64, vector = 8 : i64, widen_panel = false}
// AVX512-LABEL: func.func @decode
// AVX512: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 8 : i64, target = "x86-64-avx512", tiles_per_task = 3 : i64, vector = 16 : i64, widen_panel = false}
// AVX512: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 8 : i64, target = "x86-64-avx512", tiles_per_task = 3 : i64, vector = 16 : i64, widen_panel = false}
func.func @decode(%x: tensor<?x1x768xf32>) -> tensor<?x1x768xf32> attributes {tfm.max_len = 1024 : i64, tfm.decode_step} {
  %w = tfm.weight "w" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<768x768xf32>
  %y = tfm.linear %x, %w : (tensor<?x1x768xf32>, tensor<768x768xf32>) -> tensor<?x1x768xf32>
  %w2 = tfm.weight "w2" : tensor<768x768xf32>
  %z = tfm.linear %y, %w2 : (tensor<?x1x768xf32>, tensor<768x768xf32>) -> tensor<?x1x768xf32>
  return %z : tensor<?x1x768xf32>
}

// Many rows with int8 activations (tfm.activations = "int8"): on both
// targets the integer microkernel's panel form takes them
// (runtime/ukernels/BlockPanels.h) for int4 W and int8 W in groups of a
// multiple of 32: no widened panel, tasks of whole 32-output panels (24
// panels of 768 outputs over 4 tasks for each of 8 cores: 1 a task). An
// int8 W in groups of 48 keeps the widened f32 panel.
// AVX512-LABEL: func.func @prefill_int8act
// AVX512: tfm.tile = {block_m = 318 : i64, kind = "gemm", micro_m = 3 : i64, micro_n = 32 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx512", tiles_per_task = 1 : i64, vector = 16 : i64, widen_panel = false}
// AVX512: tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 5 : i64, micro_n = 32 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx512", tiles_per_task = 1 : i64, vector = 16 : i64, widen_panel = false}
// AVX512: tfm.tile = {{.*}}widen_panel = true}
// AVX2-LABEL: func.func @prefill_int8act
// AVX2: tfm.tile = {{.*}}micro_n = 32 : i64, {{.*}}tiles_per_task = 1 : i64, vector = 8 : i64, widen_panel = false}
// AVX2: tfm.tile = {{.*}}micro_n = 32 : i64, {{.*}}tiles_per_task = 1 : i64, vector = 8 : i64, widen_panel = false}
// AVX2: tfm.tile = {{.*}}widen_panel = true}
func.func @prefill_int8act(%x: tensor<?x?x768xf32>) -> tensor<?x?x768xf32> attributes {tfm.max_len = 1024 : i64} {
  %w = tfm.weight "w" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<768x768xf32>
  %y = tfm.linear %x, %w {tfm.activations = "int8"} : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  %w4 = tfm.weight "w4" {group = 32 : i64, storage = #tfm.storage<int4>} : tensor<768x768xf32>
  %z = tfm.linear %y, %w4 {tfm.activations = "int8"} : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  %w48 = tfm.weight "w48" {group = 48 : i64, storage = #tfm.storage<int8>} : tensor<768x768xf32>
  %v = tfm.linear %z, %w48 {tfm.activations = "int8"} : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  return %v : tensor<?x?x768xf32>
}
