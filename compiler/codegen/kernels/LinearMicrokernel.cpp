//===- LinearMicrokernel.cpp - Integer products through a microkernel ------===//
//
// The linear kernel's integer form (int8 activations over int8 or int4 W, a
// row per sequence) with its innermost tile in a microkernel: C++ with one
// instruction set's intrinsics (runtime/ukernels/, support/Microkernels.h),
// which Halide 14 cannot match for these products (vpdpbusd only under its
// Sapphire Rapids feature; vpmaddubsw on int8 W not at all). Halide keeps
// the rest: x quantised once per call (quantiseRows, quantiseOnce), the
// parallel tasks over W's rows, the bias, the epilogue and the rows that
// held a NaN or an infinity. Each task calls the microkernel once as an
// extern stage computed at the task: its outputs for every row of x, so
// that W is read once per call whatever the batch.
//
// The numbers are the integer form's (docs/precision.md): the same q and
// scales, the same exact int32 group sums and f32(d_x · d_w) products;
// only the order of the f32 sums differs (8 lanes per output, then the
// bias).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/LinearForms.h"
#include "support/Microkernels.h"
#include "support/WeightFormat.h"

#include <algorithm>

namespace tfmc::codegen::kernels::linear {

using namespace Halide;

namespace {

/// Outputs per parallel task: the Halide form's (micro tile times tiles per
/// task, which the tile pass sized for the target's cores), in whole tiles
/// of the microkernel's 4 outputs.
int taskOutputs(const KernelSpec &spec) {
  const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
  const int64_t outputs = std::max<int64_t>(16, plan.microN * plan.tilesPerTask);
  // W in block panels: tasks start on whole panels.
  const int64_t unit = spec.weightPanel > 0 ? spec.weightPanel : 4;
  return int(std::min<int64_t>((outputs + unit - 1) / unit * unit,
                               (spec.width + unit - 1) / unit * unit));
}

} // namespace

bool usesMicrokernel(const KernelSpec &spec) {
  if (!spec.integerProducts || spec.integerMicrokernel.empty() ||
      !std::holds_alternative<CpuGemmPlan>(spec.tile) ||
      spec.plan<CpuGemmPlan>().widenPanel)
    return false;
  return spec.weightType == WeightType::Int4 ||
         (spec.weightType == WeightType::Int8 &&
          spec.group % format::kMicrokernelGroupMultiple == 0);
}

BuiltKernel microkernelAlgorithm(const KernelSpec &spec, const Operands &in,
                                 const std::string &name) {
  if (spec.weightPanel > 0 && spec.integerMicrokernel != "avx512")
    throw CompileError("an int8 or int4 weight in block panels needs the "
                       "avx512 integer microkernel, not '" +
                       spec.integerMicrokernel + "'");
  const bool int4 = spec.weightType == WeightType::Int4;
  const int depth = int(spec.inWidth);
  const int group = int4 ? int(format::kInt4BlockValues) : int(spec.group);
  QuantisedRows x = quantiseRows(spec, in.x, depth % group != 0, Int(8));
  // W in block panels (tfm-weight-layout): the microkernel that reads them.
  const std::string symbol =
      spec.weightPanel > 0
          ? format::integerPanelMicrokernelName(spec.integerMicrokernel)
          : format::integerMicrokernelName(spec.integerMicrokernel);
  Var n("n"), m("m"), p("p");
  std::map<std::string, Func> stages = x.stages;
  auto products = [&](const WeightInput &w, const std::string &stage) {
    Func sums(stage);
    sums.define_extern(symbol,
                       {x.q, x.scale, w.values, Expr(depth), Expr(group),
                        Expr(int(spec.width)), Expr(int4 ? 1 : 0)},
                       Float(32), {n, m}, NameMangling::C);
    stages.emplace(stage, sums);
    return sums;
  };
  Func sums = products(in.w, "int_uk");
  Expr value = sums(n, m);
  if (in.gated)
    value = select(p == 0, value, products(in.up, "int_uk_up")(n, m));
  Func start("int_start"), acc("int_acc");
  cpuAccumulatorStart(spec, in, start, {n, m}, n, p);
  acc(withPart(in.gated, {n, m}, p)) =
      start(withPart(in.gated, {n, m}, p)) + value;
  Func out = markNonFiniteRows(
      cpuEpilogue(spec, in, acc, {n, m}, n, m, name + "_value"), x.nonFinite,
      name);
  stages.emplace("int_acc", acc);
  return {out, in.arguments, std::move(stages), {}};
}

// One parallel task per taskOutputs outputs (all rows of x), whose sums the
// microkernel computes at the task; the epilogue vectorized over the task's
// outputs.
void microkernelSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
  Func out = kernel.output;
  Var n("n"), m("m"), task("task"), inner("n_inner");
  out.split(n, task, inner, taskOutputs(spec), TailStrategy::GuardWithIf)
      .reorder(inner, m, task)
      .parallel(task)
      .vectorize(inner, int(plan.vector), TailStrategy::GuardWithIf);
  for (const char *stage : {"int_uk", "int_uk_up"}) {
    auto sums = kernel.stages.find(stage);
    if (sums != kernel.stages.end())
      sums->second.compute_at(out, task);
  }
  quantiseOnce(kernel, int(plan.vector));
}

} // namespace tfmc::codegen::kernels::linear
