//===- LinearMicrokernel.cpp - Linear layers through a microkernel ---------===//
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
// An f32 W in rows (a tied embedding that is also the head, or a weight
// the panel layout does not take) with a row per sequence (the dot plans
// of decode steps) goes through tfmc_uk_f32r, x as it is: each task's rows
// of W meet every row of x in one pass, prefetched far ahead
// (runtime/ukernels/FloatRows.h).
//
// K-quant weights (support/Microkernels.h): with int8 activations the
// integer microkernel over the super-blocks (x quantised once per call, as
// above); with f32 ones a row per sequence through tfmc_uk_qkf (x as it
// is), and many rows (the plans that widen W into panels) through
// tfmc_uk_qkfp, x packed once per call as for the f32 microkernel below
// and tasks of whole 16-output panels. int8 and int4 weights in rows with
// f32 activations take the same many-rows form through tfmc_uk_q8fp.
//
// The packed plans' many-rows form over an f32 W in panels, where the plan
// says `microkernel` (the target's floatMicrokernels), the same way: each
// parallel task of task_m x task_n outputs calls the f32 microkernel
// (runtime/ukernels/FloatPanels.h) once for its products, and Halide adds
// the bias, the activation and the residual, a vector at a time. The
// sums are f32 in k's order (the Halide form's are in another; no f32
// contract fixes it).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/LinearForms.h"
#include "support/Microkernels.h"
#include "support/WeightFormat.h"

#include <algorithm>
#include <functional>

namespace tfmc::codegen::kernels::linear {

using namespace Halide;

namespace {

/// Whether a K-quant linear with f32 activations runs many rows of x (the
/// plans that widen W into panels) through the K-quant panels microkernel.
bool kQuantPanels(const KernelSpec &spec) {
  return isKQuant(spec.weightType) && !spec.integerProducts &&
         format::widenedPanelTile(spec.kQuantMicrokernel).rows != 0 &&
         std::holds_alternative<CpuGemmPlan>(spec.tile) &&
         spec.plan<CpuGemmPlan>().widenPanel;
}

/// Whether an int8 or int4 linear (W in rows) with f32 activations runs
/// many rows of x (the plans that widen W into panels) through the
/// microkernel that widens its blocks into f32 panels.
bool blockPanels(const KernelSpec &spec) {
  return (spec.weightType == WeightType::Int4 ||
          (spec.weightType == WeightType::Int8 && spec.group % 8 == 0)) &&
         !spec.integerProducts && spec.weightPanel == 0 &&
         format::widenedPanelTile(spec.blockFloatMicrokernel).rows != 0 &&
         std::holds_alternative<CpuGemmPlan>(spec.tile) &&
         spec.plan<CpuGemmPlan>().widenPanel;
}

/// The least bytes of W a task of the f32 microkernel over rows reads.
constexpr int64_t kRowTaskBytes = int64_t(1) << 20;

/// Whether an f32 linear over W in rows runs a dot plan (a row per
/// sequence) through the f32 microkernel over rows (Lowering decides).
bool floatRows(const KernelSpec &spec) {
  return !spec.floatRowMicrokernel.empty();
}

/// Outputs per parallel task: the Halide form's (micro tile times tiles per
/// task, which the tile pass sized for the target's cores), in whole tiles
/// of the microkernel's 4 outputs.
int taskOutputs(const KernelSpec &spec) {
  const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
  int64_t outputs = std::max<int64_t>(16, plan.microN * plan.tilesPerTask);
  // W in rows: tasks of at least kRowTaskBytes of W, so that a task's
  // prefetches ahead (runtime/ukernels/FloatRows.h) mostly fall on its own
  // rows.
  if (floatRows(spec))
    outputs = std::max<int64_t>(outputs, kRowTaskBytes / (4 * spec.inWidth));
  // W in block panels: tasks start on whole panels; the K-quant panels form
  // widens 16 rows at a time.
  const int64_t unit = spec.weightPanel > 0 ? spec.weightPanel
                       : kQuantPanels(spec) || blockPanels(spec) ? 16
                                                                 : 4;
  return int(std::min<int64_t>((outputs + unit - 1) / unit * unit,
                               (spec.width + unit - 1) / unit * unit));
}

/// acc(n, m[, p]) = the output's start (the bias) + the sums that the
/// extern stage `symbol` computes for each weight (its arguments
/// `arguments(w)`): stages `stage` and, gated, `stage`_up, each an output
/// (n, m) of f32; adds them and acc (`stage`_acc) to `stages`.
Func externSums(const KernelSpec &spec, const Operands &in,
                const std::string &symbol,
                const std::function<std::vector<ExternFuncArgument>(
                    const WeightInput &)> &arguments,
                const std::string &stage, std::map<std::string, Func> &stages) {
  Var n("n"), m("m"), p("p");
  auto products = [&](const WeightInput &w, const std::string &name) {
    Func sums(name);
    sums.define_extern(symbol, arguments(w), Float(32), {n, m},
                       NameMangling::C);
    stages.emplace(name, sums);
    return sums(n, m);
  };
  Expr value = products(in.w, stage);
  if (in.gated)
    value = select(p == 0, value, products(in.up, stage + "_up"));
  Func start(stage + "_start"), acc(stage + "_acc");
  cpuAccumulatorStart(spec, in, start, {n, m}, n, p);
  acc(withPart(in.gated, {n, m}, p)) =
      start(withPart(in.gated, {n, m}, p)) + value;
  stages.emplace(stage + "_acc", acc);
  return acc;
}

/// The extern stages of externSums(`stage`) computed at `loop` of `out`.
void computeSumsAt(BuiltKernel &kernel, const std::string &stage, Var loop) {
  for (const std::string &name : {stage, stage + "_up"}) {
    auto sums = kernel.stages.find(name);
    if (sums != kernel.stages.end())
      sums->second.compute_at(kernel.output, loop);
  }
}

} // namespace

bool usesMicrokernel(const KernelSpec &spec) {
  if (blockPanels(spec) || floatRows(spec))
    return true;
  // K-quants: a row per sequence (with int8 activations every row count
  // but the plans that widen W into panels: Halide's form), many rows of
  // f32 x through the panels form where the ISA has it.
  if (isKQuant(spec.weightType))
    return !spec.kQuantMicrokernel.empty() &&
           std::holds_alternative<CpuGemmPlan>(spec.tile) &&
           (!spec.plan<CpuGemmPlan>().widenPanel || kQuantPanels(spec));
  if (!spec.integerProducts || spec.integerMicrokernel.empty() ||
      !std::holds_alternative<CpuGemmPlan>(spec.tile) ||
      spec.plan<CpuGemmPlan>().widenPanel)
    return false;
  return spec.weightType == WeightType::Int4 || isKQuant(spec.weightType) ||
         (spec.weightType == WeightType::Int8 &&
          spec.group % format::kMicrokernelGroupMultiple == 0);
}

BuiltKernel microkernelAlgorithm(const KernelSpec &spec, const Operands &in,
                                 const std::string &name) {
  if (spec.weightPanel > 0 &&
      !format::hasIntegerPanelMicrokernel(spec.integerMicrokernel))
    throw CompileError("an int8 or int4 weight in block panels needs an "
                       "integer microkernel over panels (avx2, avx512), not '" +
                       spec.integerMicrokernel + "'");
  const bool int4 = spec.weightType == WeightType::Int4;
  const bool kQuant = isKQuant(spec.weightType);
  const int depth = int(spec.inWidth);
  const int ggmlType = spec.weightType == WeightType::Q4K   ? format::kGgmlQ4K
                       : spec.weightType == WeightType::Q5K ? format::kGgmlQ5K
                                                            : format::kGgmlQ6K;
  Var n("n"), m("m");
  if (kQuantPanels(spec) || blockPanels(spec)) {
    // f32 activations, many rows: x packed as the f32 microkernel packs it
    // (support/Microkernels.h; clamped reads past K or M are never used).
    const bool blocks = blockPanels(spec);
    const int rows =
        format::widenedPanelTile(blocks ? spec.blockFloatMicrokernel
                                        : spec.kQuantMicrokernel)
            .rows;
    Var i("i"), r("r"), c("c"), t("t");
    Func packed("f32_x_packed");
    packed(i, r, c, t) = in.x(min(c * 16 + i, depth - 1),
                              min(t * rows + r, in.x.dim(1).extent() - 1));
    std::map<std::string, Func> stages{{"f32_x_packed", packed}};
    Func acc = externSums(
        spec, in,
        blocks ? format::blockFloatPanelMicrokernelName(spec.blockFloatMicrokernel)
               : format::kQuantFloatPanelMicrokernelName(spec.kQuantMicrokernel),
        [&](const WeightInput &w) -> std::vector<ExternFuncArgument> {
          if (blocks)
            return {packed, w.values, Expr(depth), Expr(int(spec.group)),
                    Expr(int(spec.width)), in.x.dim(1).extent(),
                    Expr(int4 ? 1 : 0)};
          return {packed, w.values, Expr(depth), Expr(int(spec.width)),
                  in.x.dim(1).extent(), Expr(ggmlType)};
        },
        "int_uk", stages);
    Func out = cpuEpilogue(spec, in, acc, {n, m}, n, m, name);
    return {out, in.arguments, std::move(stages), {}};
  }
  if (floatRows(spec)) {
    if (spec.weightType != WeightType::F32 || spec.weightPanel != 0 ||
        !std::holds_alternative<CpuGemmPlan>(spec.tile))
      throw CompileError("the f32 microkernel over rows needs an f32 weight "
                         "in rows and a plan of a row per sequence");
    std::map<std::string, Func> stages;
    Func acc = externSums(
        spec, in, format::floatRowMicrokernelName(spec.floatRowMicrokernel),
        [&](const WeightInput &w) -> std::vector<ExternFuncArgument> {
          return {in.x, w.values, Expr(depth), Expr(int(spec.width))};
        },
        "int_uk", stages);
    Func out = cpuEpilogue(spec, in, acc, {n, m}, n, m, name);
    return {out, in.arguments, std::move(stages), {}};
  }
  if (kQuant && !spec.integerProducts) {
    // f32 activations: x as it is.
    std::map<std::string, Func> stages;
    Func acc = externSums(
        spec, in, format::kQuantFloatMicrokernelName(spec.kQuantMicrokernel),
        [&](const WeightInput &w) -> std::vector<ExternFuncArgument> {
          return {in.x, w.values, Expr(depth), Expr(int(spec.width)),
                  Expr(ggmlType)};
        },
        "int_uk", stages);
    Func out = cpuEpilogue(spec, in, acc, {n, m}, n, m, name);
    return {out, in.arguments, std::move(stages), {}};
  }
  const int group = int4 ? int(format::kInt4BlockValues) : int(spec.group);
  QuantisedRows x = quantiseRows(spec, in.x, depth % group != 0, Int(8));
  // W in block panels (tfm-weight-layout): the microkernel that reads them;
  // a K-quant's super-blocks: its own.
  const std::string symbol =
      kQuant ? format::kQuantMicrokernelName(spec.kQuantMicrokernel)
      : spec.weightPanel > 0
          ? format::integerPanelMicrokernelName(spec.integerMicrokernel)
          : format::integerMicrokernelName(spec.integerMicrokernel);
  std::map<std::string, Func> stages = x.stages;
  Func acc = externSums(
      spec, in, symbol,
      [&](const WeightInput &w) -> std::vector<ExternFuncArgument> {
        if (kQuant)
          return {x.q, x.scale, w.values, Expr(depth), Expr(int(spec.width)),
                  Expr(ggmlType)};
        return {x.q, x.scale, w.values, Expr(depth), Expr(group),
                Expr(int(spec.width)), Expr(int4 ? 1 : 0)};
      },
      "int_uk", stages);
  Func out = markNonFiniteRows(
      spec, cpuEpilogue(spec, in, acc, {n, m}, n, m, name + "_value"),
      x.nonFinite, name);
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
  computeSumsAt(kernel, "int_uk", task);
  if (spec.integerProducts)
    quantiseOnce(kernel, spec, int(plan.vector));
  // The K-quant panels form's packed x: once per call, a tile of rows per
  // parallel iteration.
  auto packed = kernel.stages.find("f32_x_packed");
  if (packed != kernel.stages.end()) {
    Var i("i"), t("t");
    packed->second.compute_root().parallel(t).vectorize(
        i, std::min(16, int(plan.vector)));
  }
}

BuiltKernel floatMicrokernelAlgorithm(const KernelSpec &spec,
                                      const Operands &in,
                                      const std::string &name) {
  const int rows = format::floatMicrokernelTile(spec.floatMicrokernel).rows;
  if (rows == 0 || spec.weightType != WeightType::F32 || spec.weightPanel != 16)
    throw CompileError("the f32 microkernel needs an f32 weight in panels of "
                       "16 rows and a target that has one");
  const std::string symbol =
      format::floatPanelMicrokernelName(spec.floatMicrokernel);
  const int depth = int(spec.inWidth);
  Var n("n"), m("m"), i("i"), r("r"), c("c"), t("t");
  // x packed for the microkernel (support/Microkernels.h): tiles of its
  // rows, each in chunks of 16 steps of K; reads past K or M are clamped
  // (never used).
  Func packed("f32_x_packed");
  packed(i, r, c, t) = in.x(min(c * 16 + i, depth - 1),
                            min(t * rows + r, in.x.dim(1).extent() - 1));
  std::map<std::string, Func> stages{{"f32_x_packed", packed}};
  Func acc = externSums(
      spec, in, symbol,
      [&](const WeightInput &w) -> std::vector<ExternFuncArgument> {
        return {packed, w.values, Expr(depth), Expr(int(spec.width)),
                in.x.dim(1).extent()};
      },
      "f32_uk", stages);
  Func out = cpuEpilogue(spec, in, acc, {n, m}, n, m, name);
  return {out, in.arguments, std::move(stages), {}};
}

// Tasks of task_n x task_m outputs, along N first (consecutive tasks share
// x's rows), whose products the microkernel computes at the task; the
// epilogue vectorized over the task's outputs.
void floatMicrokernelSchedule(BuiltKernel &kernel,
                              const target::CpuPackedGemmPlan &plan,
                              Stage loops) {
  Var n("n"), m("m"), nt("nt"), mt("mt"), ni("ni"), mi("mi"), task("task");
  loops.split(n, nt, ni, int(plan.taskN), TailStrategy::GuardWithIf)
      .split(m, mt, mi, int(plan.taskM), TailStrategy::GuardWithIf)
      .reorder(ni, mi, nt, mt)
      .fuse(nt, mt, task)
      .parallel(task)
      .vectorize(ni, int(plan.vector), TailStrategy::GuardWithIf);
  computeSumsAt(kernel, "f32_uk", task);
  // x packed once per call, a tile of rows per parallel iteration (a call
  // of fewer than small_rows rows, which runs the other form, packs its few
  // rows too: the realization is outside the specialization).
  Var i("i"), t("t");
  kernel.stages.at("f32_x_packed")
      .compute_root()
      .parallel(t)
      .vectorize(i, std::min(16, int(plan.vector)));
}

} // namespace tfmc::codegen::kernels::linear
