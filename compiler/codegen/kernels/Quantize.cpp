//===- Quantize.cpp - x's rows quantised once for int8 activations ---------===//
//
// tfm.quantize (tfm-quantise-once): each row of x (K, R) quantised as an
// int8-activation linear quantises its input (LinearQuantized.cpp's
// quantiseRows: the same levels, scales and flag), written as the bytes
// support/WeightFormat.h describes (quantisedRowBytes B), viewed as (G, B /
// G, R) chunks of a group so that each group's levels are one dense run of
// a vector loop (over bytes b, b % G and b / G made every vector of x a
// gather). The linears that share x then read them instead of quantising
// it each (KernelSpec::quantisedInput). The schedule (LinearQuantized.cpp's
// scheduleQuantisedBytes) is one parallel loop over tasks of rows, each
// computing its rows' maxima, flags, levels and scale bytes.
// No GPU kernel: tfm-quantise-once leaves CUDA programs as they were.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/LinearForms.h"
#include "support/WeightFormat.h"

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;

BuiltKernel algorithm(const KernelSpec &spec) {
  if (spec.group <= 0 || spec.inWidth <= 0)
    throw CompileError("tfm.quantize needs a positive group and width");
  ImageParam x(Float(32), 2, "x");
  linear::QuantisedBytes bytes = linear::quantiseToBytes(spec, x, "quantize");
  return {bytes.bytes, {x}, bytes.stages};
}

void cpuSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  linear::scheduleQuantisedBytes(
      {kernel.output, kernel.stages}, spec,
      int(spec.plan<target::CpuRowsPlan>().vector),
      kernel.arguments.front().dim(1).extent());
}

BuiltKernel gpu(const KernelSpec &) {
  throw CompileError("tfm.quantize has no CUDA kernel (tfm-quantise-once "
                     "leaves CUDA programs' linears quantising their own x)");
}

const KernelRegistration registration({KernelKind::Quantize},
                                      {algorithm, cpuSchedule, gpu});

} // namespace
} // namespace tfmc::codegen::kernels
