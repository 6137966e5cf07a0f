// Guards: an unknown target is one error naming every known target.
// RUN: not tfm-opt %s -tfm-tile=target=foo 2>&1 | FileCheck %s --check-prefix=BAD-TARGET
// BAD-TARGET: error: unknown target 'foo'; known targets are host x86-64-avx2 x86-64-avx512 x86-64-avx512-bf16 x86-64-all cuda cuda-sm80 cuda-sm90
//
// Guards: a function without tfm.max_len, and no max-seq option, has no
// sequence bound to plan attention scratch for: an error at the function.
// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx2 -verify-diagnostics
//
// With max-seq the same function is planned.
// RUN: tfm-opt %s -tfm-tile="target=x86-64-avx2 max-seq=64" | FileCheck %s --check-prefix=WITH-SEQ
// WITH-SEQ: tfm.attention {{.*}}query_block = 16 : i64, scratch_bytes = 8192 : i64

// expected-error @+1 {{tfm-tile needs a sequence bound: set max-seq or a tfm.max_len attribute on the function}}
func.func @no_max_len(%q: tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32> {
  %a = tfm.attention %q, %q, %q {mask = #tfm.mask<causal>, scale = 0.5 : f64} : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32> -> tensor<?x2x?x4xf32>
  return %a : tensor<?x2x?x4xf32>
}
