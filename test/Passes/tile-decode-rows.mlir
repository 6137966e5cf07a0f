// RUN: tfm-opt %s -tfm-tile="target=x86-64-avx2 max-batch=8" | FileCheck %s --check-prefix=AVX2
// RUN: tfm-opt %s -tfm-tile="target=x86-64-avx512 max-batch=8" | FileCheck %s --check-prefix=AVX512
// RUN: tfm-opt %s -tfm-tile="target=x86-64-avx2 max-batch=1" | FileCheck %s --check-prefix=ONE
// RUN: tfm-opt %s -tfm-tile="target=x86-64-avx2 max-batch=8" | FileCheck %s --check-prefix=INT8A
//
// A decode step's GEMMs in a --max-batch program: one row per sequence, up
// to max-batch rows, in micro tiles of at most the target's decode tile
// rows (2 for both x86 targets, Target.cpp's tuning).
// A call of fewer rows than a tile (batch 1) would compute the tile's idle
// rows, so the plan also carries a one-row tile (one_row_micro_n,
// one_row_tiles_per_task) that the kernel runs for it (Linear.cpp
// specializes on the row count). The one-row tile is the plan a --max-batch
// 1 program gets. Derived by hand (tile.mlir has the dot form's model):
//
// f32 W, N = K = 768; r·c accumulators + r + c vectors <= the registers:
//  - AVX2 (16): rows 1..2: 1 x 7 (7/8 = 0.875 FMAs per load) and 2 x 4
//    (8/6 = 1.333): micro_m 2, micro_n 4; tiles per task 768/4 = 192 over
//    4 tasks for each of 8 cores: 6. One-row tile 1 x 7: ceil(768/7) = 110
//    / 32 -> 3. block_m: 3/4 of L2 in rows of 768 floats, a multiple of 2:
//    3·524288/4/3072 = 128.
//  - AVX-512 (32): 1 x 8 (the search's 8 columns at most, 8/9) and 2 x 8
//    (16/10 = 1.6; 16 + 2 + 8 = 26 registers): micro_n 8 both; 768/8 = 96
//    / 32 -> 3 tiles per task for both. block_m 3·1310720/4/3072 = 320.
// int8 W widened in registers (one more register per column, its scale):
// r·c + r + 2c:
//  - AVX2, 1 x 5 (1 + 5 + 10 = 16; 5/6 · 768/770 = 0.831) and 2 x 3 (6 +
//    2 + 6 = 14; 6/5 = 1.2): 2 x 3, 256 / 32 -> 8 per task; one row 1 x 5,
//    154 / 32 -> 4.
//  - AVX-512: 2 x 7 (14 + 2 + 14 = 30; 14/9 · 768/770 = 1.552) beats 2 x 6
//    (1.5), 2 x 8 needs 34: 2 x 7, 110 / 32 -> 3; one row 1 x 8 (8 + 1 +
//    16 = 25), 96 / 32 -> 3.
// At max-batch 1 (prefix ONE) the tile has one row (and no one-row keys: micro_m
// is 1).
// Int8 activations (prefix INT8A; the integer form, LinearQuantized.cpp) keep
// their own tiles and get no one-row tile (micro_m 2, both keys 0).

// AVX2-LABEL: func.func @decode
// AVX2: tfm.linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 4 : i64, one_row_micro_n = 7 : i64, one_row_tiles_per_task = 3 : i64, target = "x86-64-avx2", tiles_per_task = 6 : i64, vector = 8 : i64, widen_panel = false}
// AVX2: tfm.linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 3 : i64, one_row_micro_n = 5 : i64, one_row_tiles_per_task = 4 : i64, target = "x86-64-avx2", tiles_per_task = 8 : i64, vector = 8 : i64, widen_panel = false}
// AVX512-LABEL: func.func @decode
// AVX512: tfm.linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 8 : i64, one_row_micro_n = 8 : i64, one_row_tiles_per_task = 3 : i64, target = "x86-64-avx512", tiles_per_task = 3 : i64, vector = 16 : i64, widen_panel = false}
// AVX512: tfm.linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 7 : i64, one_row_micro_n = 8 : i64, one_row_tiles_per_task = 3 : i64, target = "x86-64-avx512", tiles_per_task = 3 : i64, vector = 16 : i64, widen_panel = false}
// ONE-LABEL: func.func @decode
// ONE: tfm.linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 7 : i64, target = "x86-64-avx2", tiles_per_task = 3 : i64, vector = 8 : i64, widen_panel = false}
// ONE: tfm.linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 5 : i64, target = "x86-64-avx2", tiles_per_task = 4 : i64, vector = 8 : i64, widen_panel = false}
func.func @decode(%x: tensor<?x1x768xf32>) -> tensor<?x1x768xf32> attributes {tfm.max_len = 1024 : i64, tfm.decode_step} {
  %w = tfm.weight "w" : tensor<768x768xf32>
  %y = tfm.linear %x, %w : (tensor<?x1x768xf32>, tensor<768x768xf32>) -> tensor<?x1x768xf32>
  %w8 = tfm.weight "w8" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<768x768xf32>
  %z = tfm.linear %y, %w8 : (tensor<?x1x768xf32>, tensor<768x768xf32>) -> tensor<?x1x768xf32>
  return %z : tensor<?x1x768xf32>
}

// INT8A-LABEL: func.func @decode_int8_activations
// INT8A: tfm.linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = {{[0-9]+}} : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx2"
func.func @decode_int8_activations(%x: tensor<?x1x768xf32>) -> tensor<?x1x768xf32> attributes {tfm.max_len = 1024 : i64, tfm.decode_step} {
  %w8 = tfm.weight "w8" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<768x768xf32>
  %z = tfm.linear %x, %w8 {tfm.activations = "int8"} : (tensor<?x1x768xf32>, tensor<768x768xf32>) -> tensor<?x1x768xf32>
  return %z : tensor<?x1x768xf32>
}
