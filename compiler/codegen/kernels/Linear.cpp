//===- Linear.cpp - GEMM with a fused epilogue: act(x·Wᵀ + bias) + residual ===//
//
// CPU, two forms (the tile plan's family picks one):
//  - dot-product form ('gemm'), for a few rows (decode steps). W is [N, K]
//    row-major, so a row of W and a row of x are both contiguous along K.
//    Each output keeps a vector accumulator over K and sums its lanes at the
//    end; no transpose of W is needed.
//  - packed outer-product form ('packed_gemm'), for many rows (prefill,
//    encoders). A task of task_m x task_n outputs packs its columns of W
//    into an f32 panel with the columns innermost, then walks its rows in
//    blocks of block_m; a micro tile of micro_m rows x micro_n vectors of
//    columns keeps its accumulators in registers across each block_k of
//    depth, each step one broadcast of x per row and one panel vector per
//    column vector. The
//    dot form streams micro_m + micro_n vectors from L2 per micro_m·micro_n
//    FMAs and was bound by L2 at ~37 % of the AVX-512 peak at M = 1024; the
//    packed form reads the panel from L1/L2 once per row tile. Packing
//    costs about as much as streaming W eight times, so a packed plan's
//    kernel also holds the dot form (its plan's dot_ keys): the output
//    selects by the row count and the schedule specializes on it, so a
//    call with fewer than small_rows rows runs the dot form only.
//
// An f32 W stored in panels of 16 rows (spec.weightPanel, tfm-weight-layout;
// the CPU default) is read in place: the packed form's panel is W itself,
// and fewer rows (decode steps, a packed plan's few-rows branch) run the
// panel form: micro tiles of micro_m rows x micro_n columns (whole vectors
// that divide N) accumulate over the whole depth, each step one broadcast
// of x per row and one vector of W per column vector, with no lane sums.
// The output's N starts at 0 (a bound), so that a vector of columns is a
// dense load of one panel. Where the target has an f32 microkernel (the
// plan's `microkernel`), the packed form over the panels is that
// microkernel's instead (LinearMicrokernel.cpp).
//
// bf16, int8 and int4 weights (tfm-weight-storage) are widened to f32 in
// registers as they are read, or once per row block into an f32 panel
// (widen_panel), or as the packed form packs them (which the tile pass
// does not choose for them: see Tile.cpp); accumulation is f32. Widened in
// registers, the dot form also prefetches the next tile's rows of W
// (prefetchNextRows) for one row tile of x: otherwise load latency bounds
// the decode GEMV.
//
// With int8 activations (spec.integerProducts, tfmc --activations int8) an
// int8 or int4 W is not widened: each row of x is quantised per group of
// the weight's G features and the dot form multiplies integers; an int4 W
// with f32 activations is summed per block. Those forms are
// LinearQuantized.cpp's (the contract is docs/precision.md's "int8 activations").
//
// With bf16 activations (spec.bf16Products, tfmc --activations bf16) x is
// rounded to bf16 once per call and the dot form multiplies bf16 values: in
// pairs (spec.bf16Pairs, a target with bf16DotFeatures), each step a vector
// of pairs of x and of W as stored, summed per lane by a 2-way vector
// reduction that Halide 14 emits as vdpbf16ps. Halide matches it only when
// both operands are loads of bf16 vectors cast to f32 (a broadcast of an
// f32x2 pair fails its lossless_cast, hence x's bf16 stage) and only with
// its full AVX-512 feature string (otherwise the dpbf16psx16 wrapper stays
// an external call). Without pairs the rounded x meets bf16 W widened as
// usual: the same exact products, summed in another order.
//
// A gated linear (a gated FFN's gate and up, tfm.gated_linear) is the same
// GEMM with a second weight: every Func of the K loop gains a dimension p
// (0: gate, 1: up) that the schedule unrolls, so a micro tile holds both
// accumulators of its outputs and reads x once for both; the epilogue
// writes act(gate) · up.
//
// GPU: the same forms for every weight type, int8 activations included (x
// quantised as on the CPU, then multiplied as exact f32 products q · d ·
// w; no integer instructions). A thread block is one warp computing (32·thread_n) x thread_m
// outputs, each lane a thread_n x thread_m tile of accumulators in
// registers; x and W are staged through shared memory block_k columns of
// depth at a time (the warp loads both slices). K past the end (when block_k
// does not divide it) is guarded; reads past M and N are clamped and their
// outputs never stored.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/LinearForms.h"

#include <algorithm>
#include <optional>

namespace tfmc::codegen::kernels::linear {

using namespace Halide;
using target::CpuPackedGemmPlan;
using target::GpuGemmPlan;

/// The GPU epilogue: bias, activation and residual around the accumulated
/// value. (The CPU form starts its accumulator at the bias instead.)
Expr epilogue(const KernelSpec &spec, Expr value, ImageParam bias,
              ImageParam residual, Var n, Var m,
              std::vector<ImageParam> &arguments) {
  if (spec.hasBias) {
    arguments.push_back(bias);
    value += bias(min(n, int(spec.width) - 1));
  }
  value = activation(spec.activation, value);
  if (spec.hasResidual) {
    arguments.push_back(residual);
    value += residual(n, m);
  }
  return value;
}

/// How the CPU kernel walks K: in steps of `step` values (int8, int4: one
/// scale group, so that each step reads one scale and no vector lane
/// divides by the group; bf16 products: a vector of pairs, two values a
/// lane; otherwise one vector), each a whole number of vectors.
struct DepthWalk {
  int64_t lanes, step, padded;
  bool stepIsGroup;
};

DepthWalk depthWalk(const KernelSpec &spec, const CpuGemmPlan &plan) {
  int64_t lanes = plan.vector;
  // A group that is not a whole number of vectors (only tfm-opt's group
  // option makes one) is walked by vectors, reading each lane's scale.
  bool stepIsGroup = (spec.weightType == WeightType::Int8 ||
                      spec.weightType == WeightType::Int4 ||
                      isKQuant(spec.weightType)) &&
                     spec.group % lanes == 0;
  int64_t step = stepIsGroup ? spec.group : spec.bf16Pairs ? 2 * lanes : lanes;
  return {lanes, step, (spec.inWidth + step - 1) / step * step, stepIsGroup};
}

/// Defines the accumulator's initial value: the bias (gated: each part's),
/// or 0. `at` is its pure arguments but the part (n first). Shared by both
/// CPU forms.
void cpuAccumulatorStart(const KernelSpec &spec, const Operands &in, Func acc,
                         std::vector<Expr> at, Var n, Var p) {
  if (spec.hasBias) {
    Expr first = in.bias(min(n, int(spec.width) - 1));
    if (in.gated)
      first = select(p == 0, first, in.upBias(min(n, int(spec.width) - 1)));
    acc(withPart(in.gated, at, p)) = first;
  } else {
    acc(withPart(in.gated, at, p)) = 0.0f;
  }
}

/// The output: act(acc) + residual (gated: act(gate) · up), with `at` the
/// accumulator's arguments of output (n, m) but the part. Shared by both
/// CPU forms.
Func cpuEpilogue(const KernelSpec &spec, const Operands &in, Func acc,
                 std::vector<Expr> at, Var n, Var m, const std::string &name) {
  Expr value = in.gated
                   ? activation(spec.activation, acc(withPart(true, at, 0))) *
                         acc(withPart(true, at, 1))
                   : activation(spec.activation, acc(at));
  if (spec.hasResidual)
    value += in.residual(n, m);
  Func out(name);
  // The kernel's own output (not one form of a packed plan's two, nor the
  // integer form's, which marks non-finite rows after) in the type it is
  // stored as: a narrowed KV cache's (Lowering refuses int8 activations
  // there).
  out(n, m) = name == outputName(spec) && !spec.integerProducts
                  ? storedAs(spec.outputType, value)
                  : value;
  return out;
}

LaneSums sumLanes(const KernelSpec &spec, const Operands &in, Func partial,
                  int lanes, const std::string &prefix,
                  const std::string &outName) {
  Var n("n"), m("m"), p("p");
  RDom rl(0, lanes, prefix + "rl");
  Func acc(prefix + "acc");
  cpuAccumulatorStart(spec, in, acc, {n, m}, n, p);
  acc(withPart(in.gated, {n, m}, p)) +=
      partial(withPart(in.gated, {rl, n, m}, p));
  return {acc, cpuEpilogue(spec, in, acc, {n, m}, n, m, outName), rl};
}

std::string outputName(const KernelSpec &spec) {
  return spec.kind == KernelKind::GatedLinear ? "gated_linear" : "linear";
}

/// The dot form: acc(n, m) = Σ_lanes partial(lane, n, m), each partial a
/// vector lane's sum over K. Stage names start with `prefix`.
/// W's block scales (and a K-quant's minimums) as stages `prefix`w_scale,
/// w_min, w_up_scale, w_up_min, for the schedules to place.
static void addScaleStages(const KernelSpec &spec, const Operands &in,
                    const std::string &prefix,
                    std::map<std::string, Func> &stages) {
  if (spec.weightType != WeightType::Int8 &&
      spec.weightType != WeightType::Int4 && !isKQuant(spec.weightType))
    return;
  stages.emplace(prefix + "w_scale", in.w.scale);
  if (in.w.minimum.defined())
    stages.emplace(prefix + "w_min", in.w.minimum);
  if (in.gated) {
    stages.emplace(prefix + "w_up_scale", in.up.scale);
    if (in.up.minimum.defined())
      stages.emplace(prefix + "w_up_min", in.up.minimum);
  }
}

BuiltKernel dotAlgorithm(const KernelSpec &spec, const CpuGemmPlan &plan,
                         const Operands &in, const std::string &prefix,
                         const std::string &name, Func xSource) {
  const bool gated = in.gated;
  Var n("n"), m("m"), lane("lane"), p("p");

  // The accumulators have one partial sum per vector lane.
  DepthWalk walk = depthWalk(spec, plan);
  int lanes = int(walk.lanes), step = int(walk.step);
  int64_t depth = spec.inWidth;
  // Rows and columns past the end (whole micro tiles) read clamped memory;
  // depth past K (when K is not a multiple of the step) reads zeros.
  // W is indexed by (j, g): element g·step + j, widened to f32.
  Func xc(prefix + "x_clamped"), wc(prefix + "w_widened");
  Var k("k"), row("row"), j("j"), g("g");
  Expr kIn = clamp(k, 0, int(depth) - 1);
  Expr rowIn = clamp(row, 0, in.rows() - 1);
  Expr xValue = xSource.defined() ? xSource(kIn, rowIn) : in.x(kIn, rowIn);
  Expr wk = g * step + j;
  auto widened = [&](const WeightInput &weight) {
    Expr rowIn = clamp(row, 0, weight.values.dim(1).extent() - 1);
    // int8's and int4's blocks are whole: no clamp along K.
    if (weight.groupSize > 0 && walk.stepIsGroup)
      return weight.widenedInGroup(j, g, rowIn);
    return weight.widened(clamp(wk, 0, int(depth) - 1), rowIn,
                          walk.stepIsGroup ? Expr(g) : Expr());
  };
  // The schedule unrolls p: each copy reads one of the weights.
  Expr wValue =
      gated ? select(p == 0, widened(in.w), widened(in.up)) : widened(in.w);
  if (walk.padded != depth) {
    xValue = select(k < int(depth), xValue, 0.0f);
    wValue = select(wk < int(depth), wValue, 0.0f);
  }
  // bf16 products: x rounded to bf16 as the contract says (storedAs:
  // nearest even, NaN kept), once per call (dotSchedule). Every product of
  // two bf16 values is exact in f32, so the forms differ only in the order
  // of the f32 sums. Without pairs the rounded x is held as f32 and W is
  // widened as a bf16 weight always is.
  if (spec.bf16Products && !spec.bf16Pairs)
    xValue = cast<float>(storedAs(BFloat(16), xValue));
  if (spec.bf16Pairs) {
    // Pairs: W as stored; lane l of a step sums the products of values 2l
    // and 2l + 1: the vector reduction Halide 14 emits as vdpbf16ps (with
    // bf16DotFeatures; elsewhere as f32 products and adds).
    auto stored = [&](const WeightInput &weight) {
      Expr rowIn = clamp(row, 0, weight.values.dim(1).extent() - 1);
      return weight.values(clamp(wk, 0, int(depth) - 1), rowIn);
    };
    xValue = storedAs(BFloat(16), xValue);
    wValue = gated ? select(p == 0, stored(in.w), stored(in.up)) : stored(in.w);
    if (walk.padded != depth)
      wValue = select(wk < int(depth), wValue, cast(BFloat(16), 0.0f));
  }
  xc(k, row) = xValue;
  wc(withPart(gated, {j, g, row}, p)) = wValue;

  // rk.x: a vector within a step (int8's groups), or with bf16 pairs the
  // value within a pair; rk.y: the step.
  RDom rk(0, spec.bf16Pairs ? 2 : step / lanes, 0, int(walk.padded / step),
          prefix + "rk");
  RVar rv = rk.x, rg = rk.y;
  Func partial(prefix + "partial");
  partial(withPart(gated, {lane, n, m}, p)) = 0.0f;
  if (spec.bf16Pairs)
    partial(withPart(gated, {lane, n, m}, p)) +=
        cast<float>(xc(rg * step + 2 * lane + rv, m)) *
        cast<float>(wc(withPart(gated, {2 * lane + rv, rg, n}, p)));
  else
    partial(withPart(gated, {lane, n, m}, p)) +=
        xc(rg * step + rv * lanes + lane, m) *
        wc(withPart(gated, {rv * lanes + lane, rg, n}, p));
  LaneSums sums = sumLanes(spec, in, partial, lanes, prefix, name);
  std::map<std::string, Func> stages{{prefix + "partial", partial},
                                     {prefix + "acc", sums.acc},
                                     {prefix + "w_widened", wc}};
  if (spec.bf16Products)
    stages.emplace(prefix + "x_bf16", xc);
  addScaleStages(spec, in, prefix, stages);
  return {sums.out,
          in.arguments,
          std::move(stages),
          {{prefix + "rk", rk}, {prefix + "rl", sums.rl}}};
}

/// The packed form: acc(n, m) += x(k, m) · panel(n, k) over the whole
/// depth; the schedule splits K into blocks and computes the panel (W's
/// columns, widened) per task. Rows past M read the last row and columns
/// past N the last column (clamped): the schedule computes whole row
/// blocks, whose extra outputs are never stored.
BuiltKernel packedAlgorithm(const KernelSpec &spec, const Operands &in,
                            const std::string &name) {
  const bool gated = in.gated;
  Var n("n"), m("m"), k("k"), p("p");
  // A weight in panels (spec.weightPanel) is read as it is stored: N is a
  // whole number of panels, so the guarded vectors of N read no padding.
  auto widened = [&](const WeightInput &weight) {
    return weight.panel > 0
               ? weight.widened(k, n)
               : weight.widened(k, clamp(n, 0, int(spec.width) - 1));
  };
  Func panel("w_packed");
  panel(withPart(gated, {n, k}, p)) =
      gated ? select(p == 0, widened(in.w), widened(in.up)) : widened(in.w);
  RDom rk(0, int(spec.inWidth), "packed_rk");
  Func acc("packed_acc");
  cpuAccumulatorStart(spec, in, acc, {n, m}, n, p);
  acc(withPart(gated, {n, m}, p)) +=
      in.x(rk, clamp(m, 0, in.x.dim(1).extent() - 1)) *
      panel(withPart(gated, {n, rk}, p));
  Func out = cpuEpilogue(spec, in, acc, {n, m}, n, m, name);
  std::map<std::string, Func> stages{{"packed_acc", acc}, {"w_packed", panel}};
  addScaleStages(spec, in, "packed_", stages);
  return {out, in.arguments, std::move(stages), {{"packed_rk", rk}}};
}

/// The panel form, for a W stored in panels (spec.weightPanel) and fewer
/// rows than a packed plan's small_rows (decode steps): acc(n, m) = bias +
/// Σ_k x(k, m) · W(n, k), each step of K one broadcast of x per row and one
/// vector of W per column vector, read from the panels as they are stored
/// (W streams once per row tile, with no transpose and no lane sums). Rows
/// past M read the last row (a tile's rows are whole; their outputs are
/// never stored). Stages are named with `prefix`.
BuiltKernel panelAlgorithm(const KernelSpec &spec, const Operands &in,
                           const std::string &prefix, const std::string &name) {
  const bool gated = in.gated;
  Var n("n"), m("m"), p("p");
  RDom rk(0, int(spec.inWidth), prefix + "rk");
  Func acc(prefix + "acc");
  cpuAccumulatorStart(spec, in, acc, {n, m}, n, p);
  Expr w = gated ? select(p == 0, in.w.widened(rk, n), in.up.widened(rk, n))
                 : in.w.widened(rk, n);
  acc(withPart(gated, {n, m}, p)) +=
      in.x(rk, clamp(m, 0, in.x.dim(1).extent() - 1)) * w;
  Func out = cpuEpilogue(spec, in, acc, {n, m}, n, m, name);
  return {out, in.arguments, {{prefix + "acc", acc}}, {{prefix + "rk", rk}}};
}

/// Whether the kernel reads an f32 W in panels (the packed form in place,
/// the panel form for few rows).
bool readsPanels(const KernelSpec &spec) {
  return spec.weightPanel > 0 && spec.weightType == WeightType::F32;
}

/// The one condition the algorithm's select and the schedule's
/// specialization share (Halide drops the other branch only when they are
/// the same expression). `x` is the kernel's first argument.
Expr manyRows(const CpuPackedGemmPlan &plan, const ImageParam &x) {
  return x.dim(1).extent() >= int(plan.smallRows);
}

/// The condition shared by withOneRowTile's select and its specialization:
/// one row (batch 1 in a --max-batch program). Other calls of fewer rows
/// than a tile run the tile, idle rows included: it reads W once, where
/// the one-row tile would read it from memory once per row (GPT-2 small's
/// decode step, a --max-batch 8 program whose panel tile is 8 x 3, 2
/// threads, Sapphire Rapids; the 768- and 3072-wide linears a step: batch
/// 2 15.0 ms against 18.0 one row at a time, batch 4 14.7 against 22.1,
/// batch 6 13.9 against 24.0). (`< 2`, not `== 1`: with the equality,
/// Halide 14's kernel failed its bounds check on a call of 2 rows.)
Expr oneRow(const ImageParam &x) { return x.dim(1).extent() < 2; }

/// A decode step's plan of several rows per tile (one row per sequence,
/// --max-batch > 1) with a one-row tile: the kernel holds the dot form
/// twice, with each tile, and a call of one row (batch 1)
/// runs the one-row form only, so it computes no idle rows and keeps the
/// columns of a --max-batch 1 program's tile. The output selects by the
/// row count; the schedule specializes on the same condition.
BuiltKernel withOneRowTile(const KernelSpec &spec, const CpuGemmPlan &plan,
                           const Operands &in) {
  const bool panels = readsPanels(spec);
  BuiltKernel rows = panels ? panelAlgorithm(spec, in, "", "rows_form")
                            : dotAlgorithm(spec, plan, in, "", "rows_form");
  BuiltKernel one =
      panels ? panelAlgorithm(spec, in, "one_row_", "one_row_form")
             : dotAlgorithm(spec, plan.oneRowPlan(),
                            in.withOwnScales("_one_row"), "one_row_",
                            "one_row_form");
  Var n("n"), m("m");
  Func out(outputName(spec));
  // In the type the output is stored as (a narrowed KV cache's), as the
  // packed plan's two forms are: each form's own output stays f32.
  out(n, m) = storedAs(spec.outputType,
                       select(oneRow(in.x), one.output(n, m),
                              rows.output(n, m)));
  std::map<std::string, Func> stages = rows.stages;
  stages.insert(one.stages.begin(), one.stages.end());
  std::map<std::string, RDom> domains = rows.domains;
  domains.insert(one.domains.begin(), one.domains.end());
  return {out, in.arguments, std::move(stages), std::move(domains)};
}

/// A packed plan's kernel holds both forms: the packed one for at least
/// small_rows rows, the dot one (its `dot_` plan) for fewer, where packing W
/// costs more than the FMAs it feeds. The output selects by the row count;
/// the schedule specializes on the same condition, so each call runs one
/// form only.
BuiltKernel algorithm(const KernelSpec &spec) {
  Operands in(spec);
  if (usesQuantizedForm(spec))
    return quantizedAlgorithm(spec, in, outputName(spec));
  if (!std::holds_alternative<CpuPackedGemmPlan>(spec.tile)) {
    const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
    if (plan.oneRowMicroN != 0)
      return withOneRowTile(spec, plan, in);
    if (readsPanels(spec))
      return panelAlgorithm(spec, in, "", outputName(spec));
    return dotAlgorithm(spec, plan, in, "", outputName(spec));
  }
  const CpuPackedGemmPlan &plan = spec.plan<CpuPackedGemmPlan>();
  BuiltKernel packed = plan.microkernel
                           ? floatMicrokernelAlgorithm(spec, in, "packed_form")
                           : packedAlgorithm(spec, in, "packed_form");
  BuiltKernel dot =
      readsPanels(spec)
          ? panelAlgorithm(spec, in, "dot_", "dot_form")
          : dotAlgorithm(spec, plan.dot, in.withOwnScales("_dot"), "dot_",
                         "dot_form");
  Var n("n"), m("m");
  Func out(outputName(spec));
  out(n, m) = storedAs(spec.outputType, select(manyRows(plan, in.x),
                                               packed.output(n, m),
                                               dot.output(n, m)));
  std::map<std::string, Func> stages = packed.stages;
  stages.insert(dot.stages.begin(), dot.stages.end());
  std::map<std::string, RDom> domains = packed.domains;
  domains.insert(dot.domains.begin(), dot.domains.end());
  return {out, in.arguments, std::move(stages), std::move(domains)};
}

// With one row tile of x (decode) the dot form streams W from memory once,
// micro_n rows at a time, each step of the depth loop reading one line of
// each row. The hardware prefetchers do not follow that (a row of W is a
// few lines long), and with bf16 or int8 W the widening leaves the
// out-of-order window too few lines ahead, so the load latency, not the
// bandwidth, bounds it: about 6 GB/s per core for int8 W, half the read
// bandwidth. Each step therefore prefetches the same lines of the next
// micro_n rows (the next tile; W's rows are contiguous, so that is
// k + micro_n·K along this tile's rows). Halide 14 emits prefetchnta, which
// measured no faster than none; Link.cpp rewrites it to prefetcht0
// (PrefetchHints.h). Measured on GPT-2 small's decode step (2 threads):
// int8 1.64x, bf16 1.39x faster; f32 W (4 bytes a value, one FMA a
// vector) already ran at the read bandwidth and was 8 % slower with it,
// so it has none. A plan of several rows per tile (--max-batch > 1) gets it
// in a specialization for calls of at most micro_m rows: there int8 at
// batch 1 went 16.6 -> 12.2 ms, while at batch 8 (W's next rows come only
// after the block's other row tiles, and each of them repeated the
// prefetches) it went 38.2 -> 42.7 ms. Not for a K that the step does not
// divide (the depth walk clamps k there, which would bend the prefetched
// address) nor for a widened panel.
void prefetchNextTile(BuiltKernel &kernel, const CpuGemmPlan &plan,
                      Func partial, RVar steps, int stepsPerRow) {
  Stage update = partial.update();
  if (plan.microM > 1)
    update = update.specialize(rowsOf(kernel.arguments.front()) <=
                               int(plan.microM));
  for (const ImageParam &argument : kernel.arguments)
    if (argument.name() == "w" || argument.name() == "w_up")
      update.prefetch(argument, steps, steps,
                      int(plan.microN) * stepsPerRow,
                      PrefetchBoundStrategy::NonFaulting);
}

/// The dot form's prefetches: for a narrow W widened in registers, when the
/// step divides K.
void prefetchNextRows(BuiltKernel &kernel, const KernelSpec &spec,
                      const CpuGemmPlan &plan, Func partial, RVar groups) {
  DepthWalk walk = depthWalk(spec, plan);
  if (spec.weightType == WeightType::F32 || plan.widenPanel ||
      walk.padded != spec.inWidth)
    return;
  prefetchNextTile(kernel, plan, partial, groups,
                   int(walk.padded / walk.step));
}

// A micro_m x micro_n tile of outputs keeps micro_m·micro_n vector
// accumulators in registers across K. Within a block of block_m rows
// consecutive tiles walk down the rows (the same rows of W), then along
// N; groups of tiles run in parallel, so one row (decode) still spreads
// over every core. The epilogue is applied to micro_n-wide vectors.
// Returns the loop at which one micro tile's accumulators live (`tile`,
// or with widen_panel the block's row tiles). Shared by the dot and the
// integer forms.
Var tileDotOutputs(Func out, Stage loops, const CpuGemmPlan &plan) {
  Var n("n"), m("m");
  int microM = int(plan.microM);
  int microN = int(plan.microN);
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), tile("tile"), task("task");
  Var mb("mb"), moi("moi");
  int64_t blockM = plan.blockM;
  loops.tile(n, m, no, mo, ni, mi, microN, microM, TailStrategy::GuardWithIf);
  // Where one micro tile's accumulators live.
  Var microTile = tile;
  if (blockM > 0 || plan.widenPanel) {
    // Never more row tiles per block than there are rows (one row, decode:
    // a block of one tile).
    Expr rowTiles = (out.output_buffer().dim(1).extent() + microM - 1) / microM;
    Expr blockTiles =
        blockM > 0
            ? clamp(rowTiles, 1, int(std::max<int64_t>(1, blockM / microM)))
            : rowTiles;
    loops.split(mo, mb, moi, blockTiles, TailStrategy::GuardWithIf)
        .reorder(ni, mi, moi, no, mb);
    if (plan.widenPanel) {
      // A task's unit is a column tile of a block; its row tiles (moi)
      // share the panel.
      loops.fuse(no, mb, tile);
      microTile = moi;
    } else {
      loops.fuse(moi, no, tile).fuse(tile, mb, tile);
    }
  } else {
    loops.fuse(no, mo, tile);
  }
  loops.split(tile, task, tile, int(plan.tilesPerTask), TailStrategy::GuardWithIf)
      .parallel(task)
      .vectorize(ni)
      .unroll(mi);
  return microTile;
}

/// The block scales of a tile's rows of W (the stages `names`), widened to
/// f32 once per tile and a vector at a time.
static void scalesPerTile(BuiltKernel &kernel, Func out,
                          std::initializer_list<std::string> names) {
  for (const std::string &name : names) {
    auto scale = kernel.stages.find(name);
    if (scale == kernel.stages.end())
      continue;
    Var g("g");
    scale->second.compute_at(out, Var("tile"))
        .vectorize(g, 8, TailStrategy::GuardWithIf);
  }
}

/// A micro tile's accumulators, shared by the dot and the integer forms:
/// `acc` (the outputs, a vector reduction of `partial`'s lanes) and
/// `partial` (one vector per output, `lane` vectorized) live at
/// `microTile`, their outputs unrolled; a gated linear's two parts too
/// (both accumulators of a tile stay in registers, each unrolled copy reads
/// one weight).
void scheduleTileAccumulators(Func out, Var microTile, Func acc, RDom rl,
                              Func partial, Var lane, const CpuGemmPlan &plan,
                              bool gated) {
  Var n("n"), m("m"), p("p");
  const int microM = int(plan.microM), microN = int(plan.microN);
  acc.compute_at(out, microTile).bound_extent(n, microN).bound_extent(m, microM);
  acc.update().atomic().vectorize(rl).unroll(n).unroll(m);
  partial.compute_at(out, microTile)
      .bound_extent(n, microN)
      .bound_extent(m, microM)
      .vectorize(lane)
      .unroll(n)
      .unroll(m);
  if (gated) {
    acc.bound(p, 0, 2).unroll(p);
    acc.update().unroll(p);
    partial.bound(p, 0, 2).unroll(p);
  }
}

// The dot form's schedule: micro tiles as tileDotOutputs places them. A
// bf16 or int8 W is widened in registers as it is read, or, with
// widen_panel, once per block into an f32 panel of micro_n rows of W that
// the block's tiles read. Stages are named with `prefix` (dotAlgorithm's).
void dotSchedule(BuiltKernel &kernel, const KernelSpec &spec,
                 const CpuGemmPlan &plan, const std::string &prefix,
                 Stage loops) {
  Func out = kernel.output, acc = kernel.stages.at(prefix + "acc"),
       partial = kernel.stages.at(prefix + "partial"),
       widened = kernel.stages.at(prefix + "w_widened");
  RDom rk = kernel.domains.at(prefix + "rk"),
       rl = kernel.domains.at(prefix + "rl");
  Var n("n"), m("m"), lane("lane"), j("j"), p("p");
  const bool gated = spec.kind == KernelKind::GatedLinear;
  Var tile("tile");
  Var microTile = tileDotOutputs(out, loops, plan);
  // int4: the panel's vectors along a block are unrolled, so that each
  // reads consecutive bytes of one half (a constant j % 16 and j >= 16).
  // (Widened in registers, int4 runs LinearQuantized.cpp's nibble form.)
  // The block scales: per tile, a vector at a time, for the panel; read
  // where they are used otherwise (as scheduleGroupedSums does): per tile,
  // gathered from the int8 blocks, TinyLlama-shaped decode ran at 16.5
  // tokens/s against 20.3 (groups of 64; 16.9 against 17.1 with 32; 2
  // threads, AVX-512, Zen 4).
  if (plan.widenPanel) {
    widened.compute_at(out, tile).vectorize(j, int(plan.vector));
    if (spec.weightType == WeightType::Int4)
      widened.unroll(j);
    if (gated)
      widened.bound(p, 0, 2).unroll(p);
    scalesPerTile(kernel, out,
                  {prefix + "w_scale", prefix + "w_up_scale", prefix + "w_min",
                   prefix + "w_up_min"});
  } else if (isKQuant(spec.weightType)) {
    // A K-quant's scales and minimums take a dozen integer operations
    // each (six-bit fields, two halves): once per tile, not per vector.
    scalesPerTile(kernel, out,
                  {prefix + "w_scale", prefix + "w_up_scale", prefix + "w_min",
                   prefix + "w_up_min"});
  }
  scheduleTileAccumulators(out, microTile, acc, rl, partial, lane, plan, gated);
  if (spec.bf16Products) {
    // x rounded once per call, before the tiles, its rows in parallel
    // (per task instead, a prefill's 32 column tasks of a row block each
    // rounded the block again: GPT-2 small's 128-token prefill 1.25x the
    // time of bf16 weights alone, AVX2).
    Func xc = kernel.stages.at(prefix + "x_bf16");
    Var k("k"), row("row");
    xc.compute_root().parallel(row).vectorize(
        k, int(plan.vector), TailStrategy::GuardWithIf);
  }
  if (spec.bf16Pairs) {
    // Each step a vector of pairs (rk.x innermost, then the lanes): one
    // vdpbf16ps per row and column.
    Stage update = partial.update();
    if (gated)
      update.reorder(rk.x, lane, n, m, p, rk.y).unroll(p);
    else
      update.reorder(rk.x, lane, n, m, rk.y);
    update.atomic().vectorize(rk.x).vectorize(lane).unroll(n).unroll(m);
  } else if (gated) {
    partial.update()
        .reorder(lane, n, m, p, rk.x, rk.y)
        .vectorize(lane)
        .unroll(n)
        .unroll(m)
        .unroll(p);
  } else {
    partial.update()
        .reorder(lane, n, m, rk.x, rk.y)
        .vectorize(lane)
        .unroll(n)
        .unroll(m);
  }
  prefetchNextRows(kernel, spec, plan, partial, rk.y);
}

// The panel form's schedule (stages named with `prefix`): micro tiles of
// micro_m rows x micro_n columns (a whole number of vectors that divides
// N: Tile.cpp's choice) placed as the dot form's (tileDotOutputs); a
// tile's accumulators, one vector per row and column vector, live in
// registers across the whole depth, which is the innermost loop but for
// the unrolled rows and column vectors.
void panelSchedule(BuiltKernel &kernel, const KernelSpec &spec,
                   const CpuGemmPlan &plan, const std::string &prefix,
                   Stage loops) {
  const bool gated = spec.kind == KernelKind::GatedLinear;
  const int lanes = int(plan.vector);
  Func out = kernel.output, acc = kernel.stages.at(prefix + "acc");
  RDom rk = kernel.domains.at(prefix + "rk");
  Var n("n"), m("m"), p("p"), nu("nu"), nv("nv");
  Var microTile = tileDotOutputs(out, loops, plan);
  acc.compute_at(out, microTile)
      .bound_extent(n, int(plan.microN))
      .bound_extent(m, int(plan.microM))
      .vectorize(n, lanes)
      .unroll(m);
  Stage update = acc.update();
  update.split(n, nu, nv, lanes);
  if (gated) {
    acc.bound(p, 0, 2).unroll(p);
    update.reorder(nv, nu, m, p, rk).unroll(p);
  } else {
    update.reorder(nv, nu, m, rk);
  }
  update.vectorize(nv).unroll(nu).unroll(m);
}

// The packed form, on the specialization of `out` for many rows (`loops`).
// Tasks of task_m x task_n outputs run in parallel, walking along N first
// (consecutive tasks share x's rows). A task packs its columns of W into
// the panel (K x task_n, widened to f32, columns innermost; an L2-sized
// block) once, then walks its rows in blocks of block_m: a block's
// accumulators (block_m·task_n floats, 4 KiB at 16 x 64: L1) start at the
// bias, and for each block_k of depth its micro tiles run with the depth
// loop innermost but for the unrolled rows and column vectors, so LLVM
// keeps each micro tile's micro_m·micro_n vector accumulators in registers
// across the depth block. The epilogue reads the block's accumulators a
// vector at a time. An M tail computes whole blocks (clamped reads) and
// stores only what is inside; an N tail is guarded per vector; a K that
// block_k does not divide is guarded.
void packedSchedule(BuiltKernel &kernel, const KernelSpec &spec,
                    const CpuPackedGemmPlan &plan, Stage loops) {
  const bool gated = spec.kind == KernelKind::GatedLinear;
  const int lanes = int(plan.vector);
  Func out = kernel.output, acc = kernel.stages.at("packed_acc"),
       panel = kernel.stages.at("w_packed");
  RDom rk = kernel.domains.at("packed_rk");
  Var n("n"), m("m"), p("p");
  Var nt("nt"), mt("mt"), ni("ni"), task("task"), mb("mb"), mr("mr");
  // Rows are split into blocks before tasks, so that a task at the end of
  // M runs only the blocks that hold rows: the guard is on whole blocks (a
  // guard inside a 256-row task still computed every block's
  // accumulators).
  loops.split(n, nt, ni, int(plan.taskN), TailStrategy::GuardWithIf)
      .split(m, mb, mr, int(plan.blockM), TailStrategy::GuardWithIf)
      .split(mb, mt, mb, int(std::max<int64_t>(1, plan.taskM / plan.blockM)),
             TailStrategy::GuardWithIf)
      .reorder(ni, mr, mb, nt, mt)
      .fuse(nt, mt, task)
      .parallel(task)
      .vectorize(ni, lanes, TailStrategy::GuardWithIf);
  // A block's accumulators are always whole (rows past M read clamped x
  // and are never stored), so that the micro tiles need no guards.
  acc.compute_at(out, mb)
      .bound_extent(m, int(plan.blockM))
      .vectorize(n, lanes, TailStrategy::GuardWithIf);
  Var no("no"), nu("nu"), nv("nv"), mo("mo"), mu("mu");
  RVar ko("ko"), ki("ki");
  Stage update = acc.update();
  update.split(rk, ko, ki, int(plan.blockK), TailStrategy::GuardWithIf)
      .split(n, no, n, int(plan.microN) * lanes, TailStrategy::GuardWithIf)
      .split(n, nu, nv, lanes, TailStrategy::GuardWithIf)
      .split(m, mo, mu, int(plan.microM), TailStrategy::GuardWithIf);
  if (gated)
    update.reorder(nv, nu, mu, p, ki, no, mo, ko).unroll(p);
  else
    update.reorder(nv, nu, mu, ki, no, mo, ko);
  update.vectorize(nv).unroll(nu).unroll(mu);
  // The panel: the task's columns of W over the whole depth, widened. A
  // weight stored in panels is read in place (the panel is inline).
  const bool stored = readsPanels(spec);
  if (!stored)
    panel.compute_at(out, task).vectorize(n, lanes, TailStrategy::GuardWithIf);
  if (gated) {
    acc.bound(p, 0, 2).unroll(p);
    if (!stored)
      panel.bound(p, 0, 2).unroll(p);
  }
  // The block scales of the task's columns, widened to f32 a vector at a
  // time.
  for (const char *name : {"packed_w_scale", "packed_w_up_scale",
                           "packed_w_min", "packed_w_up_min"}) {
    auto scale = kernel.stages.find(name);
    if (scale == kernel.stages.end())
      continue;
    Var g("g");
    scale->second.compute_at(out, task).vectorize(g, 8, TailStrategy::GuardWithIf);
  }
}

void cpuSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  if (usesQuantizedForm(spec)) {
    quantizedSchedule(kernel, spec);
    return;
  }
  if (!std::holds_alternative<CpuPackedGemmPlan>(spec.tile)) {
    const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
    const bool panels = readsPanels(spec);
    // Panels: with N's start known (0), a vector of columns is a dense load
    // of one panel (n % 16 of a ramp); otherwise it was a gather.
    if (panels)
      kernel.output.bound(Var("n"), 0, int(spec.width));
    auto schedule = panels ? panelSchedule : dotSchedule;
    // The specialization copies the schedule so far (none); what follows
    // on the Func itself is the other (a tile's rows or more) branch's.
    if (plan.oneRowMicroN != 0)
      schedule(kernel, spec, plan.oneRowPlan(), "one_row_",
               kernel.output.specialize(
                   oneRow(kernel.arguments.front())));
    schedule(kernel, spec, plan, "", kernel.output);
    return;
  }
  const CpuPackedGemmPlan &plan = spec.plan<CpuPackedGemmPlan>();
  // N is known: with the output's width left to the buffer, every packed
  // task's columns were a run-time extent and each ran 2x slower.
  kernel.output.bound(Var("n"), 0, int(spec.width));
  // The specialization copies the schedule so far; what follows on the
  // Func itself is the other (few rows) branch's.
  Stage many =
      kernel.output.specialize(manyRows(plan, kernel.arguments.front()));
  if (plan.microkernel)
    floatMicrokernelSchedule(kernel, plan, many);
  else
    packedSchedule(kernel, spec, plan, many);
  if (readsPanels(spec))
    panelSchedule(kernel, spec, plan.dot, "dot_", kernel.output);
  else
    dotSchedule(kernel, spec, plan.dot, "dot_", kernel.output);
}

BuiltKernel gpu(const KernelSpec &spec) {
  if (spec.quantisedInput)
    throw CompileError("a linear reading a tfm.quantize's bytes has no CUDA "
                       "kernel (tfm-quantise-once leaves CUDA programs' "
                       "linears quantising their own x)");
  if (isKQuant(spec.weightType))
    throw CompileError("K-quant weights (q4_k, q5_k, q6_k) have no CUDA "
                       "kernel: a CUDA program converts them to int8");
  const bool gated = spec.kind == KernelKind::GatedLinear;
  ImageParam x(Float(32), 2, "x");
  WeightInput w(spec, "w");
  WeightInput up(spec, "w_up");
  ImageParam bias(Float(32), 1, "bias");
  ImageParam upBias(Float(32), 1, "bias_up");
  ImageParam residual(Float(32), 2, "residual");
  std::vector<ImageParam> arguments{x};
  for (const ImageParam &argument : w.arguments())
    arguments.push_back(argument);
  if (gated)
    for (const ImageParam &argument : up.arguments())
      arguments.push_back(argument);
  Var n("n"), m("m"), k("k"), row("row"), p("p");

  const int depth = int(spec.inWidth);
  // int8 activations: x's rows quantised per group as on the CPU, then
  // staged as their exact f32 values q · d (the CPU's many-row form, which
  // differs from its integer form only in the order of the sums).
  std::optional<QuantisedRows> quantised;
  Func xSource = x;
  if (spec.integerProducts) {
    quantised = quantiseRows(spec, x, /*ragged=*/true, Int(16));
    xSource = dequantisedRows(*quantised, int(spec.group));
  }
  // Staged slices past K, M or N read the last column or row (clamped):
  // their products are never summed (K is guarded) or never stored.
  Func xTile("x_tile"), wTile("w_tile");
  xTile(k, row) =
      xSource(clamp(k, 0, depth - 1), clamp(row, 0, x.dim(1).extent() - 1));
  // A bf16 or int8 W is widened as it is staged. A gated linear stages
  // both weights (p unrolled: each copy reads one).
  auto widened = [&](const WeightInput &weight) {
    return weight.widened(clamp(k, 0, depth - 1),
                          clamp(row, 0, weight.values.dim(1).extent() - 1));
  };
  wTile(withPart(gated, {k, row}, p)) =
      gated ? select(p == 0, widened(w), widened(up)) : widened(w);
  RDom rk(0, depth, "rk");
  Func prod("prod");
  prod(withPart(gated, {n, m}, p)) = 0.0f;
  prod(withPart(gated, {n, m}, p)) +=
      xTile(rk, m) * wTile(withPart(gated, {rk, n}, p));
  Expr value;
  if (gated) {
    Expr gate = prod(n, m, 0), upValue = prod(n, m, 1);
    if (spec.hasBias) {
      arguments.push_back(bias);
      arguments.push_back(upBias);
      gate += bias(min(n, int(spec.width) - 1));
      upValue += upBias(min(n, int(spec.width) - 1));
    }
    value = activation(spec.activation, gate) * upValue;
  } else {
    value = epilogue(spec, prod(n, m), bias, residual, n, m, arguments);
  }
  if (quantised)
    value = markNonFinite(value, quantised->nonFinite(m));
  Func out(gated ? "gated_linear" : "linear");
  out(n, m) = value;

  // One warp per thread block. Halide 14 keeps a block-level register
  // allocation whole in every thread (indexed by the thread id it lives in
  // local memory), except across the lanes of a warp, where it is striped:
  // so the accumulators of a block belong to one warp, and lane l holds
  // columns n = nb·block_n + j·32 + l (j < thread_n) of the block's
  // thread_m rows: thread_n x thread_m accumulators in registers per lane.
  const GpuGemmPlan &plan = spec.plan<GpuGemmPlan>();
  const int warp = 32;
  const int columnsPerLane = int(plan.threadN);
  const int blockM = int(plan.threadM);
  const int blockN = warp * columnsPerLane;
  const int blockK = int(plan.blockK);

  Var nb("nb"), mb("mb"), ni("ni"), mi("mi"), nr("nr"), lane("lane");
  out.tile(n, m, nb, mb, ni, mi, blockN, blockM, TailStrategy::GuardWithIf)
      .split(ni, nr, lane, warp)
      .reorder(lane, nr, mi, nb, mb)
      .unroll(nr)
      .unroll(mi);
  gpuBlocks(out, nb, mb);
  gpuLanes(out, lane);
  prod.compute_at(out, nb)
      .bound_extent(n, blockN)
      .bound_extent(m, blockM)
      .split(n, nr, lane, warp)
      .reorder(lane, nr, m)
      .unroll(nr)
      .unroll(m);
  if (gated)
    prod.bound(p, 0, 2).unroll(p);
  inRegisters(prod);
  gpuLanes(prod, lane);
  RVar rko("rko"), rki("rki");
  prod.update()
      .split(rk, rko, rki, blockK, TailStrategy::GuardWithIf)
      .split(n, nr, lane, warp)
      .reorder(lane, nr, m, rki, rko)
      .unroll(nr)
      .unroll(m);
  if (gated)
    prod.update().unroll(p);
  gpuLanes(prod.update(), lane);
  // Slices of block_k columns of x and W in shared memory, loaded by the
  // whole warp (consecutive lanes read consecutive k), stored k-outermost
  // so that consecutive lanes read consecutive columns of W (no bank
  // conflicts) and one broadcast row of x.
  auto stage = [&](Func tile, int rows, bool parts) {
    Var f("f"), fo("fo"), fl("fl");
    tile.compute_at(prod, rko)
        .bound_extent(k, blockK)
        .bound_extent(row, rows);
    if (parts)
      tile.bound(p, 0, 2).reorder_storage(row, k, p);
    else
      tile.reorder_storage(row, k);
    tile.fuse(k, row, f)
        .split(f, fo, fl, warp, TailStrategy::GuardWithIf)
        .reorder(fo, fl);
    gpuLanes(tile, fl);
  };
  stage(xTile, blockM, false);
  stage(wTile, blockN, gated);
  // The quantisation's row reductions, before the GEMM: a thread per group
  // (the largest |x|) or per row (whether it holds a NaN or an infinity).
  if (quantised) {
    Var g("g"), go("go"), gi("gi"), ro("ro"), ri("ri");
    // Each is a start and an update (the reduction): both on the GPU.
    Func largest = quantised->stages.at("x_amax");
    largest.compute_root();
    for (Stage s : {Stage(largest), largest.update()}) {
      s.split(g, go, gi, warp, TailStrategy::GuardWithIf);
      gpuBlocks(s, go, row);
      gpuThreads(s, gi);
    }
    Func nonFinite = quantised->nonFinite;
    nonFinite.compute_root();
    for (Stage s : {Stage(nonFinite), nonFinite.update()}) {
      s.split(row, ro, ri, warp, TailStrategy::GuardWithIf);
      gpuBlocks(s, ro);
      gpuThreads(s, ri);
    }
  }
  return {out, arguments};
}

const KernelRegistration registration({KernelKind::Linear,
                                       KernelKind::GatedLinear},
                                      {algorithm, cpuSchedule, gpu});

} // namespace tfmc::codegen::kernels::linear
