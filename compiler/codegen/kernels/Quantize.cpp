//===- Quantize.cpp - x's rows quantised once for int8 activations ---------===//
//
// tfm.quantize (tfm-quantise-once): each row of x (K, R) quantised as an
// int8-activation linear quantises its input (LinearQuantized.cpp's
// quantiseRows: the same levels, scales and flag), written as the bytes
// support/WeightFormat.h describes (quantisedRowBytes B), viewed as (G, B /
// G, R) chunks of a group so that each group's levels are one dense run of
// a vector loop (over bytes b, b % G and b / G made every vector of x a
// gather). The linears that share x then read them instead of quantising
// it each (KernelSpec::quantisedInput). The schedule is one parallel loop
// over tasks of kQuantiseRowsPerTask rows (serial below
// kParallelQuantiseRows), each computing its rows' maxima, flags, levels
// and scale bytes, where a linear quantising its own x runs a loop a stage
// (LinearQuantized.cpp's quantiseOnce). A linear quantising its own x this
// way, its microkernel reading the bytes, was slower
// (docs/performance.md).
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
  // The quantisation a linear runs on its own f32 x.
  KernelSpec own = spec;
  own.quantisedInput = false;
  const int group = int(spec.group), depth = int(spec.inWidth);
  const int groups = int(format::blocksPerRow(depth, group));
  linear::QuantisedRows rows =
      linear::quantiseRows(own, x, depth % group != 0, Int(8));
  // Byte j of chunk c of row r: the levels of group c (0 past K), then
  // zeros, over which go each scale's bytes (little-endian) and the flag.
  Var j("j"), c("c"), r("r");
  Func bytes("quantize_bytes");
  bytes(j, c, r) = select(c < groups, rows.q(j, min(c, groups - 1), r),
                          cast<int8_t>(0));
  auto at = [&](Expr offset) {
    return std::vector<Expr>{offset % group, groups + offset / group, r};
  };
  RDom rs(0, 4 * groups, "quantize_rs");
  Expr bits = reinterpret<uint32_t>(rows.scale(rs / 4, r));
  bytes(at(rs)) = cast<int8_t>(
      cast<uint8_t>((bits >> cast<uint32_t>(8 * (rs % 4))) & 0xff));
  bytes(at(4 * groups)) = cast<int8_t>(rows.nonFinite(r));
  // The output copies a task's bytes, so that every stage above runs in
  // its one parallel loop (an update of the output has a loop of its own).
  Func out("quantize");
  out(j, c, r) = bytes(j, c, r);
  std::map<std::string, Func> stages = rows.stages;
  stages.emplace("quantize_bytes", bytes);
  return {out, {x}, std::move(stages)};
}

void cpuSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  const int lanes = int(spec.plan<target::CpuRowsPlan>().vector);
  Func out = kernel.output, bytes = kernel.stages.at("quantize_bytes");
  Var j("j"), r("r"), task("task"), rr("rr");
  const int group = int(spec.group);
  // A group's bytes in vectors of the target's width (as bytes), or the
  // largest power of two dividing the group below it.
  int width = 1;
  while (width < 4 * lanes && group % (2 * width) == 0)
    width *= 2;
  out.split(r, task, rr, linear::kQuantiseRowsPerTask, TailStrategy::GuardWithIf)
      .vectorize(j, width, TailStrategy::GuardWithIf);
  out.specialize(kernel.arguments.front().dim(1).extent() >=
                 linear::kParallelQuantiseRows)
      .parallel(task);
  bytes.compute_at(out, task).vectorize(j, width, TailStrategy::GuardWithIf);
  // Each row's scale bytes and flag: a few scalar stores.
  bytes.update(0).unscheduled();
  bytes.update(1).unscheduled();
  for (const char *name : {"x_amax", "x_nonfinite"}) {
    Func f = kernel.stages.at(name);
    f.compute_at(out, task);
    linear::vectorizeRowReduction(
        f, name == std::string("x_amax") ? spec.group : spec.inWidth, lanes);
  }
  for (const char *name : {"x_scale", "x_inverse"})
    kernel.stages.at(name).compute_at(out, task);
}

BuiltKernel gpu(const KernelSpec &) {
  throw CompileError("tfm.quantize has no CUDA kernel (tfm-quantise-once "
                     "leaves CUDA programs' linears quantising their own x)");
}

const KernelRegistration registration({KernelKind::Quantize},
                                      {algorithm, cpuSchedule, gpu});

} // namespace
} // namespace tfmc::codegen::kernels
