// Guards: with no sequence bound (no max-seq option and no tfm.max_len on
// the function), or a batch bound that is not positive, there is nothing to
// size buffers at: one error at the function, and no plan.
// RUN: tfm-opt %s -tfm-plan-memory -verify-diagnostics
// RUN: tfm-opt %s -tfm-plan-memory="max-batch=0 max-seq=8" -verify-diagnostics
// RUN: not tfm-opt %s -tfm-plan-memory 2>&1 | FileCheck %s
// CHECK: error: tfm-plan-memory needs positive bounds
// CHECK-NOT: tfm.arena

// expected-error @+1 {{tfm-plan-memory needs positive bounds: set max-batch, and max-seq or a tfm.max_len attribute on the function}}
func.func @no_max_len(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
  %s = tfm.scale %x by 2.0 : tensor<?x?x16xf32>
  return %s : tensor<?x?x16xf32>
}
