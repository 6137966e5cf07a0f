// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx2 | FileCheck %s --check-prefixes=CHECK,AVX2-PLAN
// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx512 | FileCheck %s --check-prefixes=CHECK,AVX512-PLAN
// RUN: tfm-opt %s -tfm-tile=target=cuda | FileCheck %s --check-prefixes=CHECK,CUDA-PLAN
// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx2 | not grep -E 'tfm\.(weight|split) .*tfm\.tile'
// max-seq overrides the function's tfm.max_len (2048 here).
// RUN: tfm-opt %s -tfm-tile="target=x86-64-avx2 max-seq=1024" | FileCheck %s --check-prefix=SEQ1024
//
// tfm-tile: the plans differ per target exactly as the cost model in
// passes/Tile.cpp derives them from the target descriptions in
// compiler/codegen/Target.cpp (AVX2: 8 lanes, 16 ymm, L1 32 KiB, L2 512 KiB;
// AVX-512: 16 lanes, 32 zmm, L1 48 KiB, L2 1280 KiB; cuda = sm_80: 48 KiB
// shared per block, 96 registers per thread, 108 SMs). Every number below is
// derived by hand here; a change to the model must change these comments.
//
// ---- CPU GEMM micro tile: micro_m rows x v vectors of accumulators --------
// Needs rows·v (accumulators) + v (B vectors) + 1 (A broadcast) registers;
// the score is FMAs per load, rows·v / (rows + v), times the share of N that
// whole micro tiles cover (utilization).
//
// AVX2, 16 registers: rows·v + v + 1 <= 16 gives, at the largest rows per v,
//   v=1: rows<=8 (8 is the loop's cap)  8/9   = 0.889
//   v=2: rows<=6 (6·2+2+1 = 15)        12/8  = 1.500
//   v=3: rows<=4 (4·3+3+1 = 16)        12/7  = 1.714  <- best
//   v=4: rows<=2 (2·4+4+1 = 13)         8/6  = 1.333
// and N = 768 is 32 micro tiles of 3·8 = 24 columns (utilization 1), so
// micro_m = 4, micro_n = 24 (a 5x3 tile would need 5·3+3+1 = 19 registers
// and spill). For N = 200: 24-column tiles cover 200/216 = 0.926 (score
// 1.587), 16-column 6x2 tiles 200/208 (1.442), so 4x3 still wins, and
// 200 % 24 = 8 leaves a ragged tail: tail_n = "guard".
//   block_k: half of L1 holds the B panel (block_k x 24) and the A panel
//   (4 x block_k): 16384 / ((24 + 4)·4) = 146 -> a multiple of 8 lanes: 144,
//   and K = 768 is not divisible by 144, 136; 128 divides it: block_k = 128.
//   block_n: half of L2 holds block_k x block_n: 262144 / (128·4) = 512 ->
//   multiple of 24: 504; the largest multiple of 24 <= 504 dividing 768 is
//   384. For N = 200 <= 504: block_n = 200.
//   gemv_rows: N / (4 tasks · 8 cores) = 24, a multiple of 8: 24; N = 200: 6
//   -> at least one vector: 8.
//
// AVX-512, 32 registers: v=3: rows<=8 (28), 24/11 = 2.18; v=4: rows<=6
// (6·4+4+1 = 29), 24/10 = 2.40 <- best; N = 768 is 12 tiles of 64 columns:
// micro_m = 6, micro_n = 64. N = 200: 64-column tiles cover 200/256 (1.875)
// vs 48-column 8x3 tiles 200/240 (1.818): still 6x64, tail_n = "guard".
//   block_k: 24576 / ((64 + 6)·4) = 87 -> multiple of 16: 80; 768 % 80 != 0,
//   768 % 64 = 0: block_k = 64. block_n: 655360 / (64·4) = 2560 >= 768:
//   block_n = 768 (200 for N = 200). gemv_rows: 768/32 = 24 -> multiple of
//   16: 16.
//
// ---- CUDA GEMM -------------------------------------------------------------
// Maximise block_m·block_n/(block_m + block_n) under: 32..256 threads,
// (block_m + block_n)·block_k·4 <= 24576 bytes of shared memory, thread_m·
// thread_n + thread_m + thread_n + 16 <= 96 registers. 128x128 (intensity
// 64) fits with block_k = 16 (256·16·4 = 16384; 32 would need 32768) and
// 8x8 thread tiles (16·16 = 256 threads, 64+8+8+16 = 96 registers).
//
// ---- Attention, 12 heads of 64 (merged [B, S, 768]), max seq 2048 ----------
// CPU: query_block = the largest power of two <= 32 whose two-pass scratch
// 2·query_block·2048·4 fits in half of L2: AVX2 (262144): 32 needs 524288,
// 16 needs 262144: query_block = 16; AVX-512 (655360): 32 fits (524288).
// micro_q x micro_k is the micro tile for a dynamic N (utilization 1):
// AVX2 4 x 24, AVX-512 6 x 64. 64 % lanes == 0: tail_d = "none".
// With max-seq 1024 on AVX2, 2·32·1024·4 = 262144 fits: query_block = 32.
// On CUDA query_block starts at 128 and halves while 12 heads · ceil(2048 /
// query_block) < 2·108 SMs: 128 -> 12·16 = 192 < 216 -> 64 -> 12·32 = 384:
// query_block = 64 = threads. key_block: 2·key_block·64·4 <= 24576: 128 ->
// 65536, 64 -> 32768, 32 -> 16384: key_block = 32, shared_bytes = 16384.
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

  // AVX2-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 128 : i64, block_n = 384 : i64, gemv_rows = 24 : i64, kind = "gemm", micro_m = 4 : i64, micro_n = 24 : i64, {{.*}}tail_k = "none", tail_m = "guard", tail_n = "none", target = "x86-64-avx2", unroll_k = 2 : i64, vector = 8 : i64}
  // AVX512-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 64 : i64, block_n = 768 : i64, gemv_rows = 16 : i64, kind = "gemm", micro_m = 6 : i64, micro_n = 64 : i64, {{.*}}tail_k = "none", tail_m = "guard", tail_n = "none", target = "x86-64-avx512", unroll_k = 2 : i64, vector = 16 : i64}
  // CUDA-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 16 : i64, block_m = 128 : i64, block_n = 128 : i64, kind = "gemm", shared_bytes = 16384 : i64, tail_k = "none", tail_m = "guard", tail_n = "none", target = "cuda-sm80", thread_m = 8 : i64, thread_n = 8 : i64, threads = 256 : i64}
  %q = tfm.linear %x, %wq : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  %k = tfm.linear %x, %wk : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>
  %v = tfm.linear %x, %wv : (tensor<?x?x768xf32>, tensor<768x768xf32>) -> tensor<?x?x768xf32>

  // AVX2-PLAN: tfm.attention {{.*}}mask = #tfm.mask<causal, padding>{{.*}}tfm.tile = {key_block = 16 : i64, kind = "attention", micro_k = 24 : i64, micro_q = 4 : i64, parallel = "batch,heads,query_blocks", query_block = 16 : i64, scratch_bytes = 262144 : i64, skip_masked_blocks = true, softmax = "two_pass", tail_d = "none", {{.*}}vector = 8 : i64}
  // AVX512-PLAN: tfm.attention {{.*}}mask = #tfm.mask<causal, padding>{{.*}}tfm.tile = {key_block = 32 : i64, kind = "attention", micro_k = 64 : i64, micro_q = 6 : i64, parallel = "batch,heads,query_blocks", query_block = 32 : i64, scratch_bytes = 524288 : i64, skip_masked_blocks = true, softmax = "two_pass", tail_d = "none", {{.*}}vector = 16 : i64}
  // CUDA-PLAN: tfm.attention {{.*}}mask = #tfm.mask<causal, padding>{{.*}}tfm.tile = {key_block = 32 : i64, kind = "attention", parallel = "batch,heads,query_blocks", query_block = 64 : i64, shared_bytes = 16384 : i64, skip_masked_blocks = true, softmax = "online", {{.*}}threads = 64 : i64}
  // SEQ1024: tfm.attention {{.*}}mask = #tfm.mask<causal, padding>{{.*}}query_block = 32 : i64, scratch_bytes = 262144 : i64, skip_masked_blocks = true
  %c = tfm.attention %q, %k, %v, key_padding %kp {heads = 12 : i64, mask = #tfm.mask<causal, padding>, scale = 0.125 : f64} : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?xi64> -> tensor<?x?x768xf32>

  // Padding only: no key block is masked entirely for every query.
  // AVX2-PLAN: tfm.attention {{.*}}mask = #tfm.mask<padding>{{.*}}query_block = 16 : i64, scratch_bytes = 262144 : i64, skip_masked_blocks = false,
  // AVX512-PLAN: tfm.attention {{.*}}mask = #tfm.mask<padding>{{.*}}query_block = 32 : i64, scratch_bytes = 524288 : i64, skip_masked_blocks = false,
  // CUDA-PLAN: tfm.attention {{.*}}mask = #tfm.mask<padding>{{.*}}query_block = 64 : i64, shared_bytes = 16384 : i64, skip_masked_blocks = false,
  // SEQ1024: tfm.attention {{.*}}mask = #tfm.mask<padding>{{.*}}skip_masked_blocks = false,
  %p = tfm.attention %c, %k, %v, key_padding %kp {heads = 12 : i64, mask = #tfm.mask<padding>, scale = 0.125 : f64} : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?xi64> -> tensor<?x?x768xf32>

  // A window alone bounds the key loop too.
  // AVX2-PLAN: tfm.attention {{.*}}mask = #tfm.mask<window(128)>{{.*}}skip_masked_blocks = true,
  // AVX512-PLAN: tfm.attention {{.*}}mask = #tfm.mask<window(128)>{{.*}}skip_masked_blocks = true,
  // CUDA-PLAN: tfm.attention {{.*}}mask = #tfm.mask<window(128)>{{.*}}skip_masked_blocks = true,
  %wnd = tfm.attention %p, %k, %v {heads = 12 : i64, mask = #tfm.mask<window(128)>, scale = 0.125 : f64} : tensor<?x?x768xf32>, tensor<?x?x768xf32>, tensor<?x?x768xf32> -> tensor<?x?x768xf32>

  // N = 200 is not a whole number of micro tiles (nor of CUDA's 128-column
  // blocks): the column tail is guarded.
  // CHECK: tfm.weight "w200" : tensor<200x768xf32>
  // AVX2-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 128 : i64, block_n = 200 : i64, gemv_rows = 8 : i64, kind = "gemm", micro_m = 4 : i64, micro_n = 24 : i64, {{.*}}tail_n = "guard",
  // AVX512-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 64 : i64, block_n = 200 : i64, gemv_rows = 16 : i64, kind = "gemm", micro_m = 6 : i64, micro_n = 64 : i64, {{.*}}tail_n = "guard",
  // CUDA-PLAN: tfm.linear {{.*}}tfm.tile = {block_k = 16 : i64, block_m = 128 : i64, block_n = 128 : i64, {{.*}}tail_n = "guard",
  %w200 = tfm.weight "w200" : tensor<200x768xf32>
  %r = tfm.linear %wnd, %w200 : (tensor<?x?x768xf32>, tensor<200x768xf32>) -> tensor<?x?x200xf32>
  return %p, %r : tensor<?x?x768xf32>, tensor<?x?x200xf32>
}
