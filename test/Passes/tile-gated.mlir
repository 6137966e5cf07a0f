// RUN: tfm-opt %s -split-input-file -tfm-tile=target=x86-64-avx2 | FileCheck %s --check-prefix=AVX2
// RUN: tfm-opt %s -split-input-file -tfm-tile=target=x86-64-avx512 | FileCheck %s --check-prefix=AVX512
// RUN: tfm-opt %s -split-input-file -tfm-tile=target=cuda | FileCheck %s --check-prefix=CUDA
//
// tfm-tile on a gated linear (a gated FFN's gate and up in one GEMM, N =
// 2048 outputs of K = 768): the plans that passes/Tile.cpp's cost
// model gives with parts = 2 (two weights per output), derived by hand
// here from the target registry (tile.mlir has the model for one weight;
// AVX2 has 8 lanes, 16 ymm, L2 512 KiB; AVX-512 16 lanes, 32 zmm, L2
// 1280 KiB; both plan for 8 cores; cuda = sm_80: 48 KiB shared per block,
// 96 registers per thread, 108 multiprocessors).
//
// ---- CPU, dot-product form -----------------------------------------------
// A micro tile of r rows of x and c output columns holds both parts of
// each output: w = 2c accumulators per row and 2c W vectors, so it needs
// r·w + r + p·w registers (p = 1, or 2 when W is widened in registers),
// does r·w FMAs per r + w loads, and scores r·w/(r + w) times the share of
// N that whole tiles of c columns cover; the first strictly best shape
// wins (rows outer, columns inner).
//
// Few rows (@few_rows: 5, fewer than a packed micro tile; up to 8 rows,
// p = 1): (r + 1)(2c + 1) <= registers + 1.
//  - AVX2, 16: r = 1: c <= 3 (6/7 = 0.857); r = 2: c <= 2 (8/6 = 1.333);
//    r = 3: c = 1 (6/5 = 1.2); r = 4: c = 1 (8/6 = 1.333, a tie: 2x2 stays);
//    r = 5: none (6·3 = 18 > 17). micro_m = 2, micro_n = 2, where one
//    weight takes 3x3 (tile.mlir).
//  - AVX-512, 32: r = 3, c = 3: 18/9 x 2048/2049 = 1.999; r = 4, c = 2:
//    16/8 = 2.0; r = 5, c = 2 (6·5 = 30 <= 33): 20/9 = 2.222; r = 6..8 only
//    c = 1 (at most 16/10). micro_m = 5, micro_n = 2.
//  block_m as for any K = 768 GEMM: 3/4 of L2 over 3072-byte rows, a
//  multiple of micro_m: AVX2 128 (a multiple of 2), AVX-512 320.
//  tiles_per_task = clamp(2048/micro_n / 32, 1, 8) = 8 on both.
//
// Decode (one row per sequence, r = 1): 2c + 1 + p·2c <= registers.
//  - f32 W (p = 1): AVX2 c <= 3: 6/7 x 2048/2049 = 0.857 beats c = 2
//    (4/5): micro_n = 3. AVX-512 c <= 7: 14/15 x 2048/2051 = 0.932 beats
//    c = 6 (12/13 x 2048/2052 = 0.921): micro_n = 7.
//  - int8 W widened in registers (p = 2, 6c + 1 <= registers): AVX2 c <= 2:
//    micro_n = 2 (4/5); AVX-512 c <= 5: 10/11 x 2048/2050 = 0.908 beats
//    c = 4 (8/9): micro_n = 5.
//  block_m = max(1, 128 or 320 rows) as above; tiles_per_task: 683, 293,
//  1024 or 410 tiles over 32 tasks, clamped to 8.
//
// ---- CPU, packed form (many rows: @prefill) --------------------------------
// A micro tile of micro_m rows x 2 vectors of columns holds both parts: 4
// accumulators per row, 4 panel vectors and 1 broadcast of x, so micro_m =
// min(8, (registers - 5) / 4): AVX2 11/4 = 2, AVX-512 27/4 = 6; block_m =
// 16 rounded up to a multiple of micro_m: 16 and 18; task_m = 512 rounded
// down to a multiple of block_m: 512 and 504; task_n 4 vectors (32 and 64);
// block_k 256. Below small_rows = 32 rows a call runs the dot form: the
// dot_ keys are the few rows' plan above. An int8 W keeps the dot form
// (@prefill_int8).
//
// ---- CUDA ---------------------------------------------------------------
// One warp per block: block_m = thread_m, block_n = 32·thread_n, and both
// weights staged: 2·block_n W rows. Maximise intensity
// block_m·2·block_n/(block_m + 2·block_n) x occupancy (blocks / (4 x 108),
// at most 1; 128 nominal rows in a prefill, 1 in a decode step) x (1 +
// 0.01·block_k), under (block_m + 2·block_n)·block_k·4 <= 24576 bytes and
// 2·thread_m·thread_n + thread_m + 2·thread_n + 16 <= 96 registers.
//  - Prefill: 16x1 (16 x 32 outputs, 64 W rows): intensity 16·64/80 =
//    12.8, 8 x 64 = 512 blocks (occupancy 1), 66 registers, block_k 32
//    (80·32·4 = 10240 bytes). 16x2 needs 100 registers; 8x4 (96 registers)
//    has 7.76 and 256 blocks.
//  - Decode: thread_m = 1; 1x1 (64/65, 64 blocks) beats 1x2 (128/129, 32
//    blocks); block_k 32: (1 + 64)·32·4 = 8320 bytes.

// AVX2-LABEL: func.func @prefill
// AVX2: tfm.gated_linear {{.*}}tfm.tile = {block_k = 256 : i64, block_m = 16 : i64, dot_block_m = 128 : i64, dot_micro_m = 2 : i64, dot_micro_n = 2 : i64, dot_tiles_per_task = 8 : i64, dot_widen_panel = false, kind = "packed_gemm", micro_m = 2 : i64, micro_n = 2 : i64, microkernel = false, small_rows = 32 : i64, target = "x86-64-avx2", task_m = 512 : i64, task_n = 32 : i64, vector = 8 : i64}
// AVX512-LABEL: func.func @prefill
// AVX512: tfm.gated_linear {{.*}}tfm.tile = {block_k = 256 : i64, block_m = 18 : i64, dot_block_m = 320 : i64, dot_micro_m = 5 : i64, dot_micro_n = 2 : i64, dot_tiles_per_task = 8 : i64, dot_widen_panel = false, kind = "packed_gemm", micro_m = 6 : i64, micro_n = 2 : i64, microkernel = false, small_rows = 32 : i64, target = "x86-64-avx512", task_m = 504 : i64, task_n = 64 : i64, vector = 16 : i64}
// CUDA-LABEL: func.func @prefill
// CUDA: tfm.gated_linear {{.*}}tfm.tile = {block_k = 32 : i64, kind = "gemm", shared_bytes = 10240 : i64, target = "cuda-sm80", thread_m = 16 : i64, thread_n = 1 : i64}
func.func @prefill(%x: tensor<?x?x768xf32>) -> tensor<?x?x2048xf32> attributes {tfm.max_len = 1024 : i64} {
  %wg = tfm.weight "gate" : tensor<2048x768xf32>
  %wu = tfm.weight "up" : tensor<2048x768xf32>
  %h = tfm.gated_linear %x, %wg, %wu <silu> : (tensor<?x?x768xf32>, tensor<2048x768xf32>, tensor<2048x768xf32>) -> tensor<?x?x2048xf32>
  return %h : tensor<?x?x2048xf32>
}

// -----

// AVX2-LABEL: func.func @decode
// AVX2: tfm.gated_linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 3 : i64, target = "x86-64-avx2", tiles_per_task = 8 : i64, vector = 8 : i64, widen_panel = false}
// AVX512-LABEL: func.func @decode
// AVX512: tfm.gated_linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 7 : i64, target = "x86-64-avx512", tiles_per_task = 8 : i64, vector = 16 : i64, widen_panel = false}
// CUDA-LABEL: func.func @decode
// CUDA: tfm.gated_linear {{.*}}tfm.tile = {block_k = 32 : i64, kind = "gemm", shared_bytes = 8320 : i64, target = "cuda-sm80", thread_m = 1 : i64, thread_n = 1 : i64}
func.func @decode(%x: tensor<?x1x768xf32>) -> tensor<?x1x2048xf32> attributes {tfm.max_len = 1024 : i64, tfm.decode_step} {
  %wg = tfm.weight "gate" : tensor<2048x768xf32>
  %wu = tfm.weight "up" : tensor<2048x768xf32>
  %h = tfm.gated_linear %x, %wg, %wu <silu> : (tensor<?x1x768xf32>, tensor<2048x768xf32>, tensor<2048x768xf32>) -> tensor<?x1x2048xf32>
  return %h : tensor<?x1x2048xf32>
}

// -----

// int8 weights (tfm-weight-storage): the dot form with many rows too (the
// packed form's gathers of int8 columns were slower: Tile.cpp), widened
// into a panel; in registers with one.
// AVX2-LABEL: func.func @prefill_int8
// AVX2: tfm.gated_linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 2 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx2", tiles_per_task = 8 : i64, vector = 8 : i64, widen_panel = true}
// AVX512-LABEL: func.func @prefill_int8
// AVX512: tfm.gated_linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 5 : i64, micro_n = 2 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx512", tiles_per_task = 8 : i64, vector = 16 : i64, widen_panel = true}
func.func @prefill_int8(%x: tensor<?x?x768xf32>) -> tensor<?x?x2048xf32> attributes {tfm.max_len = 1024 : i64} {
  %wg = tfm.weight "gate" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<2048x768xf32>
  %wu = tfm.weight "up" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<2048x768xf32>
  %h = tfm.gated_linear %x, %wg, %wu <silu> : (tensor<?x?x768xf32>, tensor<2048x768xf32>, tensor<2048x768xf32>) -> tensor<?x?x2048xf32>
  return %h : tensor<?x?x2048xf32>
}

// -----

// AVX2-LABEL: func.func @decode_int8
// AVX2: tfm.gated_linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 2 : i64, target = "x86-64-avx2", tiles_per_task = 8 : i64, vector = 8 : i64, widen_panel = false}
// AVX512-LABEL: func.func @decode_int8
// AVX512: tfm.gated_linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 1 : i64, micro_n = 5 : i64, target = "x86-64-avx512", tiles_per_task = 8 : i64, vector = 16 : i64, widen_panel = false}
func.func @decode_int8(%x: tensor<?x1x768xf32>) -> tensor<?x1x2048xf32> attributes {tfm.max_len = 1024 : i64, tfm.decode_step} {
  %wg = tfm.weight "gate" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<2048x768xf32>
  %wu = tfm.weight "up" {group = 64 : i64, storage = #tfm.storage<int8>} : tensor<2048x768xf32>
  %h = tfm.gated_linear %x, %wg, %wu <silu> : (tensor<?x1x768xf32>, tensor<2048x768xf32>, tensor<2048x768xf32>) -> tensor<?x1x2048xf32>
  return %h : tensor<?x1x2048xf32>
}

// -----

// AVX2-LABEL: func.func @few_rows
// AVX2: tfm.gated_linear {{.*}}tfm.tile = {block_m = 128 : i64, kind = "gemm", micro_m = 2 : i64, micro_n = 2 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx2", tiles_per_task = 8 : i64, vector = 8 : i64, widen_panel = false}
// AVX512-LABEL: func.func @few_rows
// AVX512: tfm.gated_linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 5 : i64, micro_n = 2 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx512", tiles_per_task = 8 : i64, vector = 16 : i64, widen_panel = false}
func.func @few_rows(%x: tensor<1x5x768xf32>) -> tensor<1x5x2048xf32> attributes {tfm.max_len = 1024 : i64} {
  %wg = tfm.weight "gate" : tensor<2048x768xf32>
  %wu = tfm.weight "up" : tensor<2048x768xf32>
  %h = tfm.gated_linear %x, %wg, %wu <silu> : (tensor<1x5x768xf32>, tensor<2048x768xf32>, tensor<2048x768xf32>) -> tensor<1x5x2048xf32>
  return %h : tensor<1x5x2048xf32>
}
