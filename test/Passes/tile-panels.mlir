// RUN: tfm-opt %s -split-input-file -tfm-tile="target=x86-64-avx2 max-batch=8" | FileCheck %s --check-prefix=AVX2
// RUN: tfm-opt %s -split-input-file -tfm-tile="target=x86-64-avx512 max-batch=8" | FileCheck %s --check-prefix=AVX512
// RUN: tfm-opt %s -split-input-file -tfm-tile="target=x86-64-avx2 max-batch=1" | FileCheck %s --check-prefix=ONE
//
// GEMMs whose f32 W is stored in panels (tfm-weight-layout) run the panel
// form for few rows (Tile.cpp's planCpuPanelGemm): micro tiles of r rows x
// v vectors of columns, v·lanes dividing N, with r·v accumulators + v W
// vectors + 1 broadcast <= the registers, chosen for the most FMAs per
// load r·v / (r + v); a decode step's r divides its rows (up to max-batch,
// at most 8), and its tile takes all of them where that tile's FMAs per
// load are at least 0.75 of the best's. Derived by hand, N = K = 768:
//  - AVX2 (8 lanes, 16 registers; v divides 96): 1 row: v <= 7 -> 6 (6/7);
//    2 rows: v <= 5 -> 4 (8/6); 4 rows: v <= 3 -> 3 (12/7 = 1.71); 8 rows:
//    v = 1 (8/9 < 0.75 x 12/7). 4 x 3: micro_m 4, micro_n 24; 32 tiles / (4 x 8 cores)
//    -> 1 per task. One-row tile 1 x 6: 48 columns, 16 tiles -> 1 per task.
//    block_m: 3/4 of L2 in rows of 768 floats, a multiple of 4: 128.
//  - AVX-512 (16 lanes, 32 registers; v divides 48, at most 8): 1 row 1 x
//    8 (8/9); 2 rows v <= 10 -> 8 (16/10); 4 rows v <= 6 -> 6 (24/10 =
//    2.4); 8 rows v <= 3 -> 3 (24/11 >= 0.75 x 2.4). 8 x 3: micro_n 48, 16
//    tiles -> 1 per task; one-row 1 x 8: 128 columns. block_m
//    3·1310720/4/3072 = 320.
//  - max-batch 1: the one-row tile, without one-row keys.
// AVX2-LABEL: func.func @decode
// AVX2: tfm.linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 4 : i64, micro_n = 24 : i64, one_row_micro_n = 48 : i64, one_row_tiles_per_task = 1 : i64, target = "x86-64-avx2", tiles_per_task = 1 : i64, vector = 8 : i64, widen_panel = false}
// AVX512-LABEL: func.func @decode
// AVX512: tfm.linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 8 : i64, micro_n = 48 : i64, one_row_micro_n = 128 : i64, one_row_tiles_per_task = 1 : i64, target = "x86-64-avx512", tiles_per_task = 1 : i64, vector = 16 : i64, widen_panel = false}
// ONE-LABEL: func.func @decode
// ONE: tfm.linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 48 : i64, target = "x86-64-avx2", tiles_per_task = 1 : i64, vector = 8 : i64, widen_panel = false}
func.func @decode(%x: tensor<?x1x768xf32>) -> tensor<?x1x768xf32> attributes {tfm.max_len = 1024 : i64, tfm.decode_step} {
  %w = tfm.weight "w" {panel = 16 : i64} : tensor<768x768xf32>
  %y = tfm.linear %x, %w : (tensor<?x1x768xf32>, tensor<768x768xf32>) -> tensor<?x1x768xf32>
  return %y : tensor<?x1x768xf32>
}

// -----

// A gated linear (two weights: 2·r·v accumulators, 2·v W vectors), one row,
// N = 64, K = 32, for AVX2 v divides 8 and 4v + 1 <= 16, so v <= 3 -> 2
// (4/5 FMAs per load): 16 columns, 4 tiles -> 1 per task; block_m
// 3·524288/4/128 = 3072.
// ONE-LABEL: func.func @gated
// ONE: tfm.gated_linear {{.*}}tfm.tile = {block_m = 3072 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 16 : i64, target = "x86-64-avx2", tiles_per_task = 1 : i64, vector = 8 : i64, widen_panel = false}
func.func @gated(%x: tensor<?x1x32xf32>) -> tensor<?x1x64xf32> attributes {tfm.max_len = 1024 : i64, tfm.decode_step} {
  %g = tfm.weight "g" {panel = 16 : i64} : tensor<64x32xf32>
  %u = tfm.weight "u" {panel = 16 : i64} : tensor<64x32xf32>
  %y = tfm.gated_linear %x, %g, %u <silu> : (tensor<?x1x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<?x1x64xf32>
  return %y : tensor<?x1x64xf32>
}

// -----

// Many rows (a prefill): the packed form, as for row-major weights (it reads
// the panels in place), with the panel form for fewer than small_rows rows
// (dot_ keys), any r up to 8 for AVX2 and N = 768 - 3 rows v <= 3 (9/6), 4 rows
// v <= 3 (12/7), 5 rows v = 2 (10/7), 6 rows v = 2 (12/8): 4 x 3.
// On AVX2 the packed form is the f32 microkernel (TargetDescription::
// floatMicrokernels; FloatProductsAvx2.cpp): its 6 x 2 tile and depth
// block, tasks of whole tiles of rows (510 = 85 x 6); on x86-64-avx512
// FloatProductsAvx512.cpp's 12 x 2 tile and depth block of 128 (504 = 42 x
// 12).
// AVX2-LABEL: func.func @prefill
// AVX2: tfm.linear {{.*}}block_k = 256 : i64, block_m = 6 : i64, dot_block_m = 128 : i64, dot_micro_m = 4 : i64, dot_micro_n = 24 : i64, {{.*}}kind = "packed_gemm", micro_m = 6 : i64, micro_n = 2 : i64, microkernel = true, small_rows = 32 : i64, {{.*}}task_m = 510 : i64, task_n = 32 : i64
// AVX512-LABEL: func.func @prefill
// AVX512: tfm.linear {{.*}}block_k = 128 : i64, block_m = 12 : i64, {{.*}}kind = "packed_gemm", micro_m = 12 : i64, micro_n = 2 : i64, microkernel = true, small_rows = 32 : i64, {{.*}}task_m = 504 : i64, task_n = 64 : i64
func.func @prefill(%x: tensor<?x?x768xf32>) -> tensor<?x?x768xf32> attributes {tfm.max_len = 1024 : i64} {
  %w = tfm.weight "w" {panel = 16 : i64} : tensor<768x768xf32>
  %y = tfm.linear %x, %w : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  return %y : tensor<?x?x768xf32>
}
