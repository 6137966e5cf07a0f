// RUN: tfm-opt %s -tfm-tile=target=cuda | FileCheck %s --check-prefix=CUDA
// RUN: tfm-opt %s -tfm-tile=target=x86-64-avx2 | FileCheck %s --check-prefix=AVX2
// Every kernel kind but GEMMs and attention gets a row plan; a norm (an op
// with NormOpInterface) reduces each row, so on a GPU its block of 256
// threads is halved while the half still has a thread per feature: 64
// features -> 256, 128, 64. An elementwise kernel keeps 256. On the CPU both vectorise the width: 64 =
// 4 x 8 lanes (unroll 4), 16 KiB of output a task = 64 rows of 256 bytes.

// CUDA-LABEL: func.func @norms
// AVX2-LABEL: func.func @norms
func.func @norms(%x: tensor<?x?x64xf32>, %y: tensor<?x?x64xf32>) -> (tensor<?x?x64xf32>, tensor<?x?x64xf32>) attributes {tfm.max_len = 128 : i64} {
  %g = tfm.weight "g" : tensor<64xf32>
  %b = tfm.weight "b" : tensor<64xf32>
  // CUDA: tfm.layer_norm {{.*}}tfm.tile = {kind = "rows", target = "cuda-sm80", threads = 64 : i64}
  // AVX2: tfm.layer_norm {{.*}}tfm.tile = {kind = "rows", rows_per_task = 64 : i64, target = "x86-64-avx2", unroll = 4 : i64, vector = 8 : i64}
  %l = tfm.layer_norm %x residual %y, %g, %b {eps = 1.0e-5 : f64} : (tensor<?x?x64xf32>, tensor<?x?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CUDA: tfm.rms_norm {{.*}}tfm.tile = {kind = "rows", target = "cuda-sm80", threads = 64 : i64}
  // AVX2: tfm.rms_norm {{.*}}tfm.tile = {kind = "rows", rows_per_task = 64 : i64, target = "x86-64-avx2", unroll = 4 : i64, vector = 8 : i64}
  %r = tfm.rms_norm %l, %g {eps = 1.0e-6 : f64} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  // CUDA: tfm.add {{.*}}tfm.tile = {kind = "rows", target = "cuda-sm80", threads = 256 : i64}
  // AVX2: tfm.add {{.*}}tfm.tile = {kind = "rows", rows_per_task = 64 : i64, target = "x86-64-avx2", unroll = 4 : i64, vector = 8 : i64}
  %s = tfm.add %r, %x : tensor<?x?x64xf32>
  return %l, %s : tensor<?x?x64xf32>, tensor<?x?x64xf32>
}
