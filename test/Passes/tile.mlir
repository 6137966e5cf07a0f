// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx2 | FileCheck %s --check-prefixes=CHECK,AVX2-PLAN
// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx512 | FileCheck %s --check-prefixes=CHECK,AVX512-PLAN
// RUN: tfm-opt %s -tfm-tile=target=cuda | FileCheck %s --check-prefixes=CHECK,CUDA-PLAN
// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx2 | not grep -E 'tfm\.(weight|split) .*tfm\.tile'
// max-seq overrides the function's tfm.max_len (2048 here).
// RUN: tfm-opt %s -tfm-tile="target=x86-64-avx2 max-seq=1024" | FileCheck %s --check-prefix=SEQ1024
//
// tfm-tile: the plans differ per target exactly as the cost model in
// passes/Tile.cpp derives them from the target registry in
// passes/target/Target.cpp (AVX2: 8 lanes, 16 ymm, L1 32 KiB, L2 512 KiB;
// AVX-512: 16 lanes, 32 zmm, L1 48 KiB, L2 1280 KiB; cuda = sm_80: 48 KiB
// shared per block, 96 registers per thread, 108 SMs). Every number below is
// derived by hand here; a change to the model must change these comments.
//
// ---- CPU GEMM of many rows (M dynamic, or at least 8): packed form --------
// A micro tile of micro_m rows x 2 vectors of columns needs 2·micro_m
// accumulators + 2 panel vectors + 1 broadcast of x: micro_m =
// min(8, (registers - 3) / 2): AVX2 (16 - 3) / 2 = 6; AVX-512 (32 - 3) / 2
// = 14 -> 8. task_n = 2 micro tiles of columns = 4 vectors: AVX2 32, AVX-512
// 64; block_m = 16 rounded up to a multiple of micro_m: AVX2 18, AVX-512 16;
// task_m = 512 rounded down to a multiple of block_m: AVX2 504, AVX-512
// 512; block_k = 256. N does not enter: N = 768 and N = 200 plan alike.
// Below small_rows = 32 rows a call runs the dot form, whose plan (the
// dot_ keys) is derived below for the same N.
//
// ---- CPU GEMM, dot-product form: micro_m rows of x times micro_n rows of W --
// (@few_rows: 5 rows, fewer than a packed micro tile.)
// Each output keeps one vector accumulator along K, so a micro tile needs
// micro_m·micro_n accumulators + micro_m x-vectors + micro_n W-vectors
// registers, does micro_m·micro_n FMAs per micro_m + micro_n loads, and is
// scored FMAs-per-load times the share of N that whole tiles cover
// (utilization, N / (ceil(N / micro_n)·micro_n)); the first strictly best
// shape wins (rows outer, 1..8; columns inner, 1..8).
//
// AVX2, 16 registers: r·c + r + c <= 16, i.e. (r+1)(c+1) <= 17, gives at the
// most columns per row count
//   1x7: 7/8  = 0.875     2x4: 8/6  = 1.333     3x3: 9/6 = 1.500  <- best
//   4x2: 8/6  = 1.333     5..7x1: <= 7/8
// (4x3 would need 12 + 4 + 3 = 19 registers and spill). N = 768 is 256
// tiles of 3 (utilization 1): micro_m = 3, micro_n = 3.
// N = 200: 3x3 covers 200/201 (score 1.493) vs 2x4 and 4x2 at 200/200
// (1.333): still 3x3; 200 % 3 = 2 leaves a ragged tail, which codegen
// guards (every kernel guards its tails: the plan has no tail keys).
//   block_m: rows of x (K = 768 floats each) in 3/4 of L2, a multiple of
//   micro_m: AVX2 3·524288/4/3072 = 128 -> 126; AVX-512 3·1310720/4/3072
//   = 320.
//   tiles_per_task = clamp(tiles per row / (4 tasks · 8 cores), 1, 8):
//   768/3 = 256 -> 256/32 = 8; ceil(200/3) = 67 -> 67/32 = 2.
//
// AVX-512, 32 registers: (r+1)(c+1) <= 33:
//   3x7: 21/10 = 2.100    4x5: 20/9 = 2.222     5x4: 20/9 = 2.222
//   6x3: 18/9  = 2.000    7x3: 21/10 = 2.100    8x2: 16/10 = 1.600
// N = 768: 4x5 covers 768/770 (2.217), 5x4 covers it exactly (2.222):
// micro_m = 5, micro_n = 4; 192 tiles / 32 = 6 per task. N = 200: both cover
// it exactly, tie, so the first (4x5) stays: micro_m = 4, micro_n = 5, and
// 200 % 5 = 0; 40 tiles / 32 -> 1 per task.
//
// ---- Attention's micro tiles (CPU) ------------------------------------------
// A query block is 16 queries = qv vectors (AVX2: 2 ymm, AVX-512: 1 zmm).
// Q·Kᵀ: qv query vectors x micro_k keys (one broadcast key value per FMA)
// needs qv·micro_k + qv + 1 registers; micro_k is the largest <= 16 that fits:
//   AVX2: 2·6+2+1 = 15 <= 16 (2·7+3 = 17 does not): micro_k = 6.
//   AVX-512: 1·16+1+1 = 18 <= 32: micro_k = 16 (the cap).
// P·V: pv_queries x pv_vectors accumulators (+ pv_vectors + 1 registers),
// pv_vectors dividing the 64/lanes vectors of a value head, pv_queries a
// power of two dividing 16; most FMAs per load (q·v/(q+v)), ties to the
// wider tile:
//   AVX2 (8 vectors per head): 4x2 -> 8/6 = 1.33 (13 registers), 2x4 the
//   same, 4x4 needs 21: pv_vectors = 4 (pv_width 32), pv_queries = 2.
//   AVX-512 (4 vectors): 4x4 -> 16/8 = 2.0 (21 registers), 4x8 needs 37:
//   pv_width = 64, pv_queries = 4.

// ---- CUDA GEMM -------------------------------------------------------------
// One warp per block: block_n = 32·thread_n, block_m = thread_m. Maximise
// block_m·block_n/(block_m + block_n) under (block_m + block_n)·block_k·4
// <= 24576 bytes of shared memory and thread_m·thread_n + thread_m +
// thread_n + 16 <= 96 registers: 16x2 (16 x 64, intensity 12.8; 32+16+2+16
// = 66 registers) beats 8x8 (8 x 256: 7.8) and 16x4 needs 100 registers;
// block_k = 32 (80·32·4 = 10240 bytes).
//
// ---- Attention, 12 heads of 64 (merged [B, S, 768]), max seq 2048 ----------
// CPU: query_block 16; scratch_bytes = 2·16·2048·4 = 262144 (1024 keys:
// 131072). Micro tiles as derived above. The head size 64 is a whole number
// of vectors.
// On CUDA a warp per block of 32 queries: query_block = 32.
// key_block: at most 32 (each lane keeps key_block scores), 2·key_block·64·4
// = 16384 <= 24576: key_block = 32, shared_bytes = 16384.
// skip_masked_blocks: true with causal or window, false for padding only.

// Weights and tfm.split are views of the weights file, not kernels: the
// exact lines below have no attribute dictionary, and no weight or split
// line anywhere carries a tfm.tile.
// CHECK-LABEL: func.func @forward
// CHECK: tfm.weight "w" : tensor<2304x768xf32>
// CHECK: tfm.split %{{[^{]*}} {axis = 0 : i64} : tensor<2304x768xf32>
// SEQ1024-LABEL: func.func @forward
func.func @forward(%x: tensor<?x?x768xf32>, %kp: tensor<?x?xi64>) -> (tensor<?x?x768xf32>, tensor<?x?x200xf32>) attributes {tfm.max_len = 2048 : i64} {
  %w = tfm.weight "w" : tensor<2304x768xf32>
  %wq, %wk, %wv = tfm.split %w {axis = 0 : i64} : tensor<2304x768xf32> -> tensor<768x768xf32>, tensor<768x768xf32>, tensor<768x768xf32>

  // AVX2-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 256 : i64, block_m = 18 : i64, dot_block_m = 126 : i64, dot_micro_m = 3 : i64, dot_micro_n = 3 : i64, dot_tiles_per_task = 8 : i64, dot_widen_panel = false, kind = "packed_gemm", micro_m = 6 : i64, micro_n = 2 : i64, microkernel = false, small_rows = 32 : i64, target = "x86-64-avx2", task_m = 504 : i64, task_n = 32 : i64, vector = 8 : i64}
  // AVX512-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 256 : i64, block_m = 16 : i64, dot_block_m = 320 : i64, dot_micro_m = 5 : i64, dot_micro_n = 4 : i64, dot_tiles_per_task = 6 : i64, dot_widen_panel = false, kind = "packed_gemm", micro_m = 8 : i64, micro_n = 2 : i64, microkernel = false, small_rows = 32 : i64, target = "x86-64-avx512", task_m = 512 : i64, task_n = 64 : i64, vector = 16 : i64}
  // CUDA-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 32 : i64, kind = "gemm", shared_bytes = 5120 : i64, target = "cuda-sm80", thread_m = 8 : i64, thread_n = 1 : i64}
  %q = tfm.linear %x, %wq : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  %k = tfm.linear %x, %wk : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  %v = tfm.linear %x, %wv : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>

  // AVX2-PLAN: tfm.attention {{.*}}mask = #tfm.mask<causal, padding>{{.*}}tfm.tile = {head_block = false, kind = "attention", micro_k = 6 : i64, pv_queries = 2 : i64, pv_width = 32 : i64, query_block = 16 : i64, scratch_bytes = 262144 : i64, skip_masked_blocks = true, stage_kv = true, target = "x86-64-avx2", vector = 8 : i64}
  // AVX512-PLAN: tfm.attention {{.*}}mask = #tfm.mask<causal, padding>{{.*}}tfm.tile = {head_block = false, kind = "attention", micro_k = 16 : i64, pv_queries = 4 : i64, pv_width = 64 : i64, query_block = 16 : i64, scratch_bytes = 262144 : i64, skip_masked_blocks = true, stage_kv = true, target = "x86-64-avx512", vector = 16 : i64}
  // CUDA-PLAN: tfm.attention {{.*}}mask = #tfm.mask<causal, padding>{{.*}}tfm.tile = {key_block = 32 : i64, kind = "attention", query_block = 32 : i64, shared_bytes = 16384 : i64, skip_masked_blocks = true, target = "cuda-sm80"}
  // SEQ1024: tfm.attention {{.*}}mask = #tfm.mask<causal, padding>{{.*}}query_block = 16 : i64, scratch_bytes = 131072 : i64, skip_masked_blocks = true
  %c = tfm.attention %q, %k, %v, key_padding %kp {heads = 12 : i64, mask = #tfm.mask<causal, padding>, scale = 0.125 : f64} : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?xi64> -> tensor<?x?x768xf32>

  // Padding only: no key block is masked entirely for every query.
  // AVX2-PLAN: tfm.attention {{.*}}mask = #tfm.mask<padding>{{.*}}query_block = 16 : i64, scratch_bytes = 262144 : i64, skip_masked_blocks = false,
  // AVX512-PLAN: tfm.attention {{.*}}mask = #tfm.mask<padding>{{.*}}query_block = 16 : i64, scratch_bytes = 262144 : i64, skip_masked_blocks = false,
  // CUDA-PLAN: tfm.attention {{.*}}mask = #tfm.mask<padding>{{.*}}query_block = 32 : i64, shared_bytes = 16384 : i64, skip_masked_blocks = false,
  // SEQ1024: tfm.attention {{.*}}mask = #tfm.mask<padding>{{.*}}skip_masked_blocks = false,
  %p = tfm.attention %c, %k, %v, key_padding %kp {heads = 12 : i64, mask = #tfm.mask<padding>, scale = 0.125 : f64} : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?xi64> -> tensor<?x?x768xf32>

  // A window alone bounds the key loop too.
  // AVX2-PLAN: tfm.attention {{.*}}mask = #tfm.mask<window(128)>{{.*}}skip_masked_blocks = true,
  // AVX512-PLAN: tfm.attention {{.*}}mask = #tfm.mask<window(128)>{{.*}}skip_masked_blocks = true,
  // CUDA-PLAN: tfm.attention {{.*}}mask = #tfm.mask<window(128)>{{.*}}skip_masked_blocks = true,
  %wnd = tfm.attention %p, %k, %v {heads = 12 : i64, mask = #tfm.mask<window(128)>, scale = 0.125 : f64} : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32> -> tensor<?x?x768xf32>

  // N = 200: on the CPU the packed plan of N = 768 (tails are guarded). On
  // CUDA (128 nominal rows, 108 multiprocessors), 200 columns make few
  // blocks: 2-row tiles keep 4 blocks per multiprocessor; for N = 768,
  // 8-row tiles of 32 columns make 384.
  // CHECK: tfm.weight "w200" : tensor<200x768xf32>
  // AVX2-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 256 : i64, block_m = 18 : i64, dot_block_m = 126 : i64, dot_micro_m = 3 : i64, dot_micro_n = 3 : i64, dot_tiles_per_task = 2 : i64, dot_widen_panel = false, kind = "packed_gemm", micro_m = 6 : i64, micro_n = 2 : i64, microkernel = false, small_rows = 32 : i64, target = "x86-64-avx2", task_m = 504 : i64, task_n = 32 : i64, vector = 8 : i64}
  // AVX512-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 256 : i64, block_m = 16 : i64, dot_block_m = 320 : i64, dot_micro_m = 4 : i64, dot_micro_n = 5 : i64, dot_tiles_per_task = 1 : i64, dot_widen_panel = false, kind = "packed_gemm", micro_m = 8 : i64, micro_n = 2 : i64, microkernel = false, small_rows = 32 : i64, target = "x86-64-avx512", task_m = 512 : i64, task_n = 64 : i64, vector = 16 : i64}
  // CUDA-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 32 : i64, kind = "gemm", shared_bytes = 4352 : i64, target = "cuda-sm80", thread_m = 2 : i64, thread_n = 1 : i64}
  %w200 = tfm.weight "w200" : tensor<200x768xf32>
  %r = tfm.linear %wnd, %w200 : (tensor<?x?x768xf32>, tensor<200x768xf32>) -> tensor<?x?x200xf32>
  return %p, %r : tensor<?x?x768xf32>, tensor<?x?x200xf32>
}

// The dot form's plans, derived above: 5 rows (static) are fewer than a
// packed micro tile. N = 200 is not a whole number of AVX2's 3-column
// tiles: the same plan as for N = 768 but fewer tiles per task; on AVX-512
// the 4x5 tile divides it.
// CHECK-LABEL: func.func @few_rows
func.func @few_rows(%x: tensor<1x5x768xf32>) -> (tensor<1x5x768xf32>, tensor<1x5x200xf32>) attributes {tfm.max_len = 2048 : i64} {
  %w = tfm.weight "w768" : tensor<768x768xf32>
  // AVX2-PLAN: tfm.linear {{.*}}tfm.tile = {block_m = 126 : i64, kind = "gemm", micro_m = 3 : i64, micro_n = 3 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx2", tiles_per_task = 8 : i64, vector = 8 : i64, widen_panel = false}
  // AVX512-PLAN: tfm.linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 5 : i64, micro_n = 4 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx512", tiles_per_task = 6 : i64, vector = 16 : i64, widen_panel = false}
  %y = tfm.linear %x, %w : (tensor<1x5x768xf32>, tensor<768x768xf32>) -> tensor<1x5x768xf32>
  %w200 = tfm.weight "w200" : tensor<200x768xf32>
  // AVX2-PLAN: tfm.linear {{.*}}tfm.tile = {block_m = 126 : i64, kind = "gemm", micro_m = 3 : i64, micro_n = 3 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx2", tiles_per_task = 2 : i64, vector = 8 : i64, widen_panel = false}
  // AVX512-PLAN: tfm.linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm", micro_m = 4 : i64, micro_n = 5 : i64, one_row_micro_n = 0 : i64, one_row_tiles_per_task = 0 : i64, target = "x86-64-avx512", tiles_per_task = 1 : i64, vector = 16 : i64, widen_panel = false}
  %r = tfm.linear %x, %w200 : (tensor<1x5x768xf32>, tensor<200x768xf32>) -> tensor<1x5x200xf32>
  return %y, %r : tensor<1x5x768xf32>, tensor<1x5x200xf32>
}

// An output head wider than 16384 columns keeps the dot form with many rows
// (Tile.cpp, kPackedMaxColumns): each column task would pack its panel for
// a prompt's rows only.
// CHECK-LABEL: func.func @head
func.func @head(%x: tensor<?x?x768xf32>) -> tensor<?x?x50257xf32> attributes {tfm.max_len = 2048 : i64} {
  %w = tfm.weight "wte" : tensor<50257x768xf32>
  // AVX2-PLAN: tfm.linear {{.*}}tfm.tile = {block_m = 126 : i64, kind = "gemm",
  // AVX512-PLAN: tfm.linear {{.*}}tfm.tile = {block_m = 320 : i64, kind = "gemm",
  %y = tfm.linear %x, %w : (tensor<?x?x768xf32>, tensor<50257x768xf32>) -> tensor<?x?x50257xf32>
  return %y : tensor<?x?x50257xf32>
}
