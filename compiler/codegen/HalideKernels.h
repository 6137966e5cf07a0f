//===- HalideKernels.h - Kernels as Halide pipelines ------------*- C++ -*-===//
//
// Each kernel kind is a Halide algorithm plus a schedule read from its tile
// plan, kept apart as in Halide's generators. This layer knows nothing of
// MLIR: Codegen.cpp describes each kernel with a KernelSpec.
//
// Buffer conventions (Halide dimensions, innermost first; f32 unless noted):
//   embedding   ids i64 (S, B), table (D, V)                    -> (D, S, B)
//   positions   x (D, S, B) [, table (D, max_len)]              -> (D, S, B)
//   scale, activation   x (W, R)                                -> (W, R)
//   add         a (W, R), b (W, R)                              -> (W, R)
//   linear      x (K, M), w (K, N) [, bias (N)] [, residual (N, M)] -> (N, M)
//   layer_norm  x (W, R) [, residual (W, R)], gamma (W), beta (W) -> (W, R)
//   attention   q (Dh, H, Sq, B), k (Dh, H, Sk, B), v (Dv, H, Sk, B)
//               [, key_padding i64 (Sk, B)]                     -> (Dv, H, Sq, B)
// R and M are rows: the product of the leading (batch, sequence) dims.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_HALIDEKERNELS_H
#define TFMC_CODEGEN_HALIDEKERNELS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tfmc::codegen {

enum class KernelKind {
  Embedding,
  Positions,
  Scale,
  Activation,
  Add,
  Linear,
  LayerNorm,
  Attention
};

enum class ActivationFn { None, Relu, Gelu, GeluTanh };

/// The `tfm.tile` dictionary, as plain values.
struct TilePlan {
  std::map<std::string, int64_t> ints;
  std::map<std::string, std::string> strings;

  int64_t get(const std::string &key, int64_t fallback) const {
    auto it = ints.find(key);
    return it == ints.end() ? fallback : it->second;
  }
  std::string getString(const std::string &key,
                        const std::string &fallback) const {
    auto it = strings.find(key);
    return it == strings.end() ? fallback : it->second;
  }
};

struct KernelSpec {
  KernelKind kind = KernelKind::Add;
  int64_t width = 0;   // the output's last dimension (D, N, W)
  int64_t inWidth = 0; // linear: K
  int64_t rows = 0;    // embedding: vocab; positions: max_len
  bool hasBias = false, hasResidual = false, learned = false;
  ActivationFn activation = ActivationFn::None;
  double factor = 1.0; // scale factor, attention scale, layer-norm eps
  // Attention.
  int64_t heads = 0, headDim = 0, valueHeadDim = 0, window = 0;
  bool causal = false, padding = false;
  TilePlan tile;
  /// A GPU (CUDA) kernel: gpu_blocks/gpu_threads schedules from a GPU tile
  /// plan (HalideGpuKernels.cpp) instead of the CPU schedule.
  bool gpu = false;
  /// Schedule with the tile plan (tfmc's own), or leave the algorithm to
  /// Halide's Adams2019 autoscheduler (a benchmark peer for the tile pass).
  bool autoschedule = false;
  /// Autoscheduler only: the extents of each buffer (arguments, then the
  /// output), Halide order, at the largest batch and sequence.
  std::vector<std::vector<int64_t>> estimates;
};

/// Halide's target string for one of tfmc's targets (codegen/Target.h).
/// CUDA targets get Halide 14's CUDA feature with the highest compute
/// capability it supports that the target's GPU runs (80 for cuda and
/// cuda-sm80; 86, Halide 14's highest, for cuda-sm90, whose GPUs run that
/// PTX through the driver's JIT).
std::string halideTargetFor(const std::string &targetName, bool withRuntime);

/// AOT-compiles the kernel into `objectPath` as function `name` (and
/// Halide's `name_argv`). Returns false with a one-line `error`.
bool compileKernel(const KernelSpec &spec, const std::string &name,
                   const std::string &halideTarget,
                   const std::string &objectPath, std::string &error);

/// Halide's runtime for `halideTarget`, once per binary.
bool compileRuntime(const std::string &halideTarget,
                    const std::string &objectPath, std::string &error);

/// The kernel's lowered loop nest and schedule, as Halide prints it
/// (`tfmc --emit halide`).
std::string describeKernel(const KernelSpec &spec, const std::string &name,
                           const std::string &halideTarget);

/// Changes whenever the kernel generators are rebuilt; part of the kernel
/// cache key so that a changed generator never reuses a stale object.
const char *kernelGeneratorStamp();

/// The same for the GPU schedules (HalideGpuKernels.cpp), part of the keys
/// of GPU kernels.
const char *gpuKernelGeneratorStamp();

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_HALIDEKERNELS_H
