// Size arithmetic of tfm-plan-memory is checked: a result may hold at most
// 2^31 - 1 elements at the planned batch and sequence (Halide's kernels
// index with 32 bits), the arena at most 2^40 bytes (docs/user-guide.md, "Limits").
// Before, max-batch 288230376151711744 overflowed int64 silently and gave
// an arena of 0 bytes.
//
// RUN: tfm-opt %s -tfm-plan-memory="max-batch=288230376151711744" -verify-diagnostics
// RUN: tfm-opt %s -tfm-plan-memory="max-batch=2731" -verify-diagnostics
// RUN: not tfm-opt %s -tfm-plan-memory="max-batch=2731" 2>&1 | FileCheck %s --check-prefix=OVER
// OVER: error: tfm-plan-memory: the result 'tensor<?x?x768xf32>' would hold more than 2147483647 elements (the most a kernel indexes) at max-batch 2731 and max-seq 1024; lower max-batch or max-seq
//
// At the boundary: 2730 * 1024 * 768 = 2,146,959,360 elements (2731 would
// be 2,147,745,792 > 2,147,483,647), * 4 bytes = 8,587,837,440 bytes, a
// multiple of 64.
// RUN: sed 's/expected-error.*//' %s | tfm-opt -tfm-plan-memory="max-batch=2730" | FileCheck %s --check-prefix=EDGE
// EDGE: tfm.arena_size = 8587837440 : i64

func.func @wide(%x: tensor<?x?x768xf32>) -> tensor<?x?x768xf32> attributes {tfm.max_len = 1024 : i64} {
  // expected-error @+1 {{would hold more than 2147483647 elements}}
  %s = tfm.scale %x by 2.0 : tensor<?x?x768xf32>
  return %s : tensor<?x?x768xf32>
}

// The arena: 129 results of [1, 1048576, 2047] f32 (2,146,435,072 elements,
// 8,585,740,288 bytes each, a multiple of 64) live at once need
// 1,107,560,497,152 bytes > 2^40 = 1,099,511,627,776; 128 of them
// (1,098,974,756,864 bytes) fit.
// RUN: %python %S/Inputs/many-live.py 129 | not tfm-opt -tfm-plan-memory="max-seq=1048576" 2>&1 | FileCheck %s --check-prefix=ARENA
// ARENA: error: tfm-plan-memory: the arena would need more than 1099511627776 bytes at max-batch 1 and max-seq 1048576; lower max-batch or max-seq
// RUN: %python %S/Inputs/many-live.py 128 | tfm-opt -tfm-plan-memory="max-seq=1048576" | FileCheck %s --check-prefix=FITS
// FITS: tfm.arena_size = 1098974756864 : i64
