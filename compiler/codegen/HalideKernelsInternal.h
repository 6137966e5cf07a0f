//===- HalideKernelsInternal.h - Shared by the CPU and GPU kernels -*- C++ -*-===//
//
// What HalideKernels.cpp (algorithms + CPU schedules) and
// HalideGpuKernels.cpp (GPU schedules, and the GPU forms of GEMM and
// attention) share. Where a kernel's algorithm is the same on both targets
// (embedding, positions, elementwise, layer_norm) it is defined once, in
// HalideKernels.cpp, and each side adds only its schedule.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_HALIDEKERNELSINTERNAL_H
#define TFMC_CODEGEN_HALIDEKERNELSINTERNAL_H

#include "compiler/codegen/HalideKernels.h"

#include "Halide.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tfmc::codegen::detail {

/// A pipeline ready to compile: its output, its arguments in order, and the
/// intermediate Funcs a schedule needs by name (e.g. layer_norm's "mean").
struct BuiltKernel {
  BuiltKernel(Halide::Func output, std::vector<Halide::ImageParam> arguments,
              std::map<std::string, Halide::Func> stages = {})
      : output(std::move(output)), arguments(std::move(arguments)),
        stages(std::move(stages)) {}

  Halide::Func output;
  std::vector<Halide::ImageParam> arguments;
  std::map<std::string, Halide::Func> stages;
};

/// The activation epilogue of linear kernels (and the activation kernel).
Halide::Expr activation(ActivationFn fn, Halide::Expr x);

/// Algorithms without a schedule. Output dimensions (Halide's order):
///   embedding, positions: (d, s, b); elementwise, layer_norm: (w, r).
BuiltKernel embeddingAlgorithm(const KernelSpec &spec);
BuiltKernel positionsAlgorithm(const KernelSpec &spec);
BuiltKernel elementwiseAlgorithm(const KernelSpec &spec);
BuiltKernel layerNormAlgorithm(const KernelSpec &spec);

/// The kernel as codegen compiles it: its algorithm with the schedule of
/// its tile plan, for the CPU or (spec.gpu) the GPU; with no schedule when
/// spec.autoschedule.
BuiltKernel build(const KernelSpec &spec);

/// The kernel with a GPU schedule from its tile plan (HalideGpuKernels.cpp).
/// `emulateOnHost`: the same kernel with its GPU loops serial and its GPU
/// memory types left to Halide, runnable on the CPU (for tests).
BuiltKernel buildGpu(const KernelSpec &spec, bool emulateOnHost = false);

/// The loop nest of a GPU kernel (gpu_block and gpu_thread loops, what is
/// computed where), for `tfmc --emit halide`: the lowered statement of a
/// GPU pipeline shows only the host side and the PTX.
std::string gpuLoopNest(const Halide::Pipeline &pipeline);

/// Halide's target string (without the runtime flags) for a tfmc GPU
/// target name, or empty when `targetName` is not a GPU target.
std::string gpuHalideTargetFor(const std::string &targetName);

} // namespace tfmc::codegen::detail

#endif // TFMC_CODEGEN_HALIDEKERNELSINTERNAL_H
