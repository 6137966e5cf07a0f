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
// the weight's G features and the dot form multiplies integers
// (integerAlgorithm below; the contract is README's "int8 activations").
//
// A gated linear (a gated FFN's gate and up, tfm.gated_linear) is the same
// GEMM with a second weight: every Func of the K loop gains a dimension p
// (0: gate, 1: up) that the schedule unrolls, so a micro tile holds both
// accumulators of its outputs and reads x once for both; the epilogue
// writes act(gate) · up.
//
// GPU: a thread block is one warp computing (32·thread_n) x thread_m
// outputs, each lane a thread_n x thread_m tile of accumulators in
// registers; x and W are staged through shared memory block_k columns of
// depth at a time (the warp loads both slices). K past the end (when block_k
// does not divide it) is guarded; reads past M and N are clamped and their
// outputs never stored.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Common.h"
#include "support/WeightFormat.h"

#include <algorithm>
#include <functional>

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;
using target::CpuGemmPlan;
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
/// divides by the group; otherwise one vector), each a whole number of
/// vectors.
struct DepthWalk {
  int64_t lanes, step, padded;
  bool stepIsGroup;
};

DepthWalk depthWalk(const KernelSpec &spec, const CpuGemmPlan &plan) {
  int64_t lanes = plan.vector;
  // A group that is not a whole number of vectors (only tfm-opt's group
  // option makes one) is walked by vectors, reading each lane's scale.
  bool stepIsGroup = (spec.weightType == WeightType::Int8 ||
                      spec.weightType == WeightType::Int4) &&
                     spec.group % lanes == 0;
  int64_t step = stepIsGroup ? spec.group : lanes;
  return {lanes, step, (spec.inWidth + step - 1) / step * step, stepIsGroup};
}

/// Func arguments with the gated linear's part dimension last.
std::vector<Expr> withPart(bool gated, std::vector<Expr> args, Expr part) {
  if (gated)
    args.push_back(part);
  return args;
}

/// A CPU kernel's inputs and its arguments in order: x, W (values, then
/// int8's scales), the gated linear's up weight, the biases, the residual.
struct Operands {
  explicit Operands(const KernelSpec &spec)
      : gated(spec.kind == KernelKind::GatedLinear), x(Float(32), 2, "x"),
        w(spec, "w"), up(spec, "w_up"), bias(Float(32), 1, "bias"),
        upBias(Float(32), 1, "bias_up"), residual(Float(32), 2, "residual") {
    arguments.push_back(x);
    for (const ImageParam &argument : w.arguments())
      arguments.push_back(argument);
    if (gated)
      for (const ImageParam &argument : up.arguments())
        arguments.push_back(argument);
    if (spec.hasBias) {
      arguments.push_back(bias);
      if (gated)
        arguments.push_back(upBias);
    }
    if (spec.hasResidual)
      arguments.push_back(residual);
  }

  /// A copy whose int8 scales are a Func of its own (`suffix` names it),
  /// so that each of two forms in one pipeline schedules its own.
  Operands withOwnScales(const std::string &suffix) const {
    Operands copy = *this;
    for (WeightInput *weight : {&copy.w, &copy.up})
      weight->scale = weight->scaleFunc(weight->scale.name() + suffix);
    return copy;
  }

  bool gated;
  ImageParam x;
  WeightInput w, up;
  ImageParam bias, upBias, residual;
  std::vector<ImageParam> arguments;
};

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
  out(n, m) = value;
  return out;
}

std::string outputName(const KernelSpec &spec) {
  return spec.kind == KernelKind::GatedLinear ? "gated_linear" : "linear";
}

/// The dot form: acc(n, m) = Σ_lanes partial(lane, n, m), each partial a
/// vector lane's sum over K. Stage names start with `prefix`.
BuiltKernel dotAlgorithm(const KernelSpec &spec, const CpuGemmPlan &plan,
                         const Operands &in, const std::string &prefix,
                         const std::string &name, Func xSource = Func()) {
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
  Expr rowIn = clamp(row, 0, in.x.dim(1).extent() - 1);
  Expr xValue = xSource.defined() ? xSource(kIn, rowIn) : in.x(kIn, rowIn);
  Expr wk = g * step + j;
  auto widened = [&](const WeightInput &weight) {
    Expr rowIn = clamp(row, 0, weight.values.dim(1).extent() - 1);
    // int4's blocks are whole: no clamp along K.
    if (weight.type == WeightType::Int4 && walk.stepIsGroup)
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
  xc(k, row) = xValue;
  wc(withPart(gated, {j, g, row}, p)) = wValue;

  RDom rk(0, step / lanes, 0, int(walk.padded / step), prefix + "rk");
  RVar rv = rk.x, rg = rk.y;
  // The step's vector rv reads its elements je. int4: the low and the high
  // nibbles of the same bytes in consecutive vectors (elements i and
  // i + 16), so that the bytes, loaded once, are not held across the block;
  // the schedule unrolls rv, so that each vector's bytes are consecutive.
  Expr je = rv * lanes + lane;
  if (spec.weightType == WeightType::Int4 && walk.stepIsGroup && lanes <= 16)
    je = (rv % 2) * 16 + (rv / 2) * lanes + lane;
  Func partial(prefix + "partial");
  partial(withPart(gated, {lane, n, m}, p)) = 0.0f;
  partial(withPart(gated, {lane, n, m}, p)) +=
      xc(rg * step + je, m) * wc(withPart(gated, {je, rg, n}, p));
  RDom rl(0, lanes, prefix + "rl");
  Func acc(prefix + "acc");
  cpuAccumulatorStart(spec, in, acc, {n, m}, n, p);
  acc(withPart(gated, {n, m}, p)) += partial(withPart(gated, {rl, n, m}, p));
  Func out = cpuEpilogue(spec, in, acc, {n, m}, n, m, name);
  std::map<std::string, Func> stages{{prefix + "partial", partial},
                                     {prefix + "acc", acc},
                                     {prefix + "w_widened", wc}};
  if (spec.weightType == WeightType::Int8 ||
      spec.weightType == WeightType::Int4) {
    stages.emplace(prefix + "w_scale", in.w.scale);
    if (gated)
      stages.emplace(prefix + "w_up_scale", in.up.scale);
  }
  return {out,
          in.arguments,
          std::move(stages),
          {{prefix + "rk", rk}, {prefix + "rl", rl}}};
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
  auto widened = [&](const WeightInput &weight) {
    return weight.widened(k, clamp(n, 0, int(spec.width) - 1));
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
  if (spec.weightType == WeightType::Int8 ||
      spec.weightType == WeightType::Int4) {
    stages.emplace("packed_w_scale", in.w.scale);
    if (gated)
      stages.emplace("packed_w_up_scale", in.up.scale);
  }
  return {out, in.arguments, std::move(stages), {{"packed_rk", rk}}};
}

/// The integer form (int8 activations; int8 or int4 W). Each row m of x is
/// quantised per group g of G = spec.group features, the weight's groups
/// (a short last group when G does not divide K), as README's "int8
/// activations" says:
///   d(g, m) = max |x| / 127,  q(k, m) = clamp(rne(x(k, m) · (1 / d)), ±127)
/// (0 where d is 0), each operation in strict f32 so that any CPU rounds it
/// alike; then
///   acc(n, m) = bias + Σ_g (d(g, m) · s(g, n)) · Σ_{k∈g} q(k, m) · w(k, n)
/// with the inner sums exact in int32 and the outer one in f32. The inner
/// sum walks a group in steps of 2·lanes values: `lanes` int32 lanes, each
/// the sum of a pair of i16 × i16 products, the pattern Halide 14 matches
/// to pmaddwd (AVX2, AVX-512BW; vpdpwssd where the target has VNNI);
/// i16 products cannot overflow (|q · w| <= 127²). A row holding a NaN or
/// an infinity quantises as if those were 0 and its outputs are set to NaN
/// with integer operations (no NaN is converted to an integer, and Halide's
/// fast-math flags let no NaN into a float operation).
struct QuantisedRows {
  /// q(j, g, row): element j of group g of a row as an i16 in [-127, 127]
  /// (0 for j past the group or K); scale(g, row): d.
  Func q, scale, nonFinite;
  std::map<std::string, Func> stages;
};

/// x's rows quantised per group of spec.group features (the contract in
/// integerAlgorithm's comment). `ragged`: q's j may pass the group or K (a
/// step that does not divide the group, a short last group), where it
/// reads 0.
QuantisedRows quantiseRows(const KernelSpec &spec, const Operands &in,
                           bool ragged) {
  const int group = int(spec.group);
  const int depth = int(spec.inWidth);
  Var j("j"), g("g"), row("row");
  // Element j of group g; j past the group (a step that does not divide
  // it) or past K (a short last group) reads 0.
  Expr k = g * group + j;
  Expr inside = j < group && k < depth;
  Expr rowIn = clamp(row, 0, in.x.dim(1).extent() - 1);
  Expr raw = in.x(clamp(k, 0, depth - 1), rowIn);
  Func finite("x_finite");
  finite(j, g, row) =
      select(is_finite(raw) && (ragged ? inside : cast<bool>(1)), raw, 0.0f);
  RDom rq(0, group, "x_rq");
  Func largest("x_amax");
  largest(g, row) = maximum(abs(finite(rq, g, row)));
  Func scale("x_scale"), inverse("x_inverse");
  scale(g, row) = strict_float(largest(g, row) / 127.0f);
  inverse(g, row) = strict_float(
      select(scale(g, row) == 0.0f, 0.0f, 1.0f / scale(g, row)));
  Func q("x_q");
  q(j, g, row) = cast<int16_t>(clamp(
      round(strict_float(finite(j, g, row) * inverse(g, row))), -127.0f,
      127.0f));
  RDom rx(0, depth, "x_rx");
  Func nonFinite("x_nonfinite");
  nonFinite(row) = maximum(select(is_finite(in.x(rx, rowIn)), 0, 1));
  return {q,
          scale,
          nonFinite,
          {{"x_q", q},
           {"x_amax", largest},
           {"x_scale", scale},
           {"x_inverse", inverse},
           {"x_nonfinite", nonFinite}}};
}

/// `value` with the outputs of rows that held a NaN or an infinity set to
/// NaN, by integer operations.
Func markNonFiniteRows(Func value, Func nonFinite, const std::string &name) {
  Var n("n"), m("m");
  Func out(name);
  out(n, m) = reinterpret<float>(
      reinterpret<uint32_t>(value(n, m)) |
      select(nonFinite(m) != 0, cast<uint32_t>(Expr(int32_t(0x7fc00000))),
             cast<uint32_t>(Expr(0))));
  return out;
}

/// The end of the forms that sum per group of K (integerAlgorithm,
/// nibbleAlgorithm, nibbleDotAlgorithm): with `sum(lane, n, m, g, p)` a
/// group's sum in each vector lane (f32),
///   partial(lane, n, m) = Σ_g sum · f32(d_x(g, m) · s_w(g, n))
/// (s_w alone without `xScale`), acc(n, m) = bias + Σ_lanes partial, and the
/// epilogue `outName`. Stages and domains are named `prefix`partial, acc,
/// rg and rl, and w_scale (w_up_scale) for W's scales.
BuiltKernel groupedSums(
    const KernelSpec &spec, const Operands &in, int groups, int lanes,
    const std::string &prefix,
    const std::function<Expr(Var, Var, Var, RVar, Var)> &sum, Func xScale,
    const std::string &outName) {
  const bool gated = in.gated;
  Var lane("lane"), n("n"), m("m"), p("p");
  RDom rg(0, groups, prefix + "rg");
  Expr nIn = clamp(n, 0, int(spec.width) - 1);
  Expr scale = gated ? select(p == 0, in.w.scale(rg, nIn), in.up.scale(rg, nIn))
                     : in.w.scale(rg, nIn);
  if (xScale.defined())
    scale = xScale(rg, m) * scale;
  Func partial(prefix + "partial");
  partial(withPart(gated, {lane, n, m}, p)) = 0.0f;
  partial(withPart(gated, {lane, n, m}, p)) += sum(lane, n, m, rg, p) * scale;
  RDom rl(0, lanes, prefix + "rl");
  Func acc(prefix + "acc");
  cpuAccumulatorStart(spec, in, acc, {n, m}, n, p);
  acc(withPart(gated, {n, m}, p)) += partial(withPart(gated, {rl, n, m}, p));
  Func out = cpuEpilogue(spec, in, acc, {n, m}, n, m, outName);
  std::map<std::string, Func> stages{{prefix + "acc", acc},
                                     {prefix + "partial", partial},
                                     {"w_scale", in.w.scale}};
  if (gated)
    stages.emplace("w_up_scale", in.up.scale);
  return {out, in.arguments, std::move(stages),
          {{prefix + "rg", rg}, {prefix + "rl", rl}}};
}

BuiltKernel integerAlgorithm(const KernelSpec &spec, const CpuGemmPlan &plan,
                             const Operands &in, const std::string &name) {
  const bool gated = in.gated;
  const int lanes = int(plan.vector);
  const int group = int(spec.group);
  const int depth = int(spec.inWidth);
  const int groups = (depth + group - 1) / group;
  const int step = 2 * lanes;
  const int steps = (group + step - 1) / step;
  Var g("g"), n("n"), m("m"), u("u"), p("p");
  const bool ragged = group % step != 0 || depth % group != 0;
  QuantisedRows x = quantiseRows(spec, in, ragged);
  Func q = x.q, scale = x.scale;

  // Element js of group g is the step's pair rs.x of lane u: values 2u and
  // 2u + 1 of step rs.y.
  RDom rs(0, 2, 0, steps, "int_rs");
  Expr js = rs.y * step + 2 * u + rs.x;
  // W's values as i16, 0 outside the group.
  auto weight = [&](const WeightInput &w) {
    Expr rowIn = clamp(n, 0, w.values.dim(1).extent() - 1);
    Expr kj = g * group + js;
    Expr value = cast<int16_t>(w.values(clamp(kj, 0, depth - 1), rowIn));
    return ragged ? select(js < group && kj < depth, value, cast<int16_t>(0))
                  : value;
  };
  Expr wValue = gated ? select(p == 0, weight(in.w), weight(in.up)) : weight(in.w);
  Func dot("int_dot");
  dot(withPart(gated, {u, n, m, g}, p)) = 0;
  dot(withPart(gated, {u, n, m, g}, p)) +=
      cast<int32_t>(q(js, g, m)) * cast<int32_t>(wValue);

  BuiltKernel kernel = groupedSums(
      spec, in, groups, lanes, "int_",
      [&](Var lane, Var n, Var m, RVar g, Var p) {
        return cast<float>(dot(withPart(gated, {lane, n, m, g}, p)));
      },
      scale, name + "_value");
  kernel.output = markNonFiniteRows(kernel.output, x.nonFinite, name);
  kernel.stages.insert(x.stages.begin(), x.stages.end());
  kernel.stages.emplace("int_dot", dot);
  kernel.domains.emplace("int_rs", rs);
  return kernel;
}

/// int4 W's nibbles w' = w + 8 (0 .. 15, u8) in element order:
/// nibbles(j, g, row[, part]) is element j of block g, the low nibble of
/// byte j for j < 16, the high nibble of byte j - 16 above. A schedule
/// unpacks a tile's rows once (unpackNibblesPerTile).
Func unpackNibbles(const Operands &in) {
  Var j("j"), g("g"), row("row"), p("p");
  auto nibbles = [&](const WeightInput &w) {
    Expr rowIn = clamp(row, 0, w.values.dim(1).extent() - 1);
    Expr bits = w.values(g * int(format::kInt4BlockBytes) +
                             int(format::kInt4ScaleBytes) + j % 16,
                         rowIn);
    return select(j >= 16, bits >> 4, bits & 15);
  };
  Func wn("w_nibbles");
  wn(withPart(in.gated, {j, g, row}, p)) =
      in.gated ? select(p == 0, nibbles(in.w), nibbles(in.up)) : nibbles(in.w);
  return wn;
}

/// The integer form for int4 W (int8 activations), as llama.cpp's Q4_0 ×
/// Q8_0 dot product does it: the same quantised rows as integerAlgorithm's
/// (groups of 32, the blocks), as i8, against W's nibbles w' = w + 8 in
/// 0 .. 15 as u8, so that
///   Σ_{k∈g} q · w = Σ_{k∈g} q · w' − 8 · Σ_{k∈g} q,
/// and the second sum is x's alone (`x_offset`, once per row). Per block,
/// 32 u8 × i8 products are summed in pairs into 16 i16 lanes, a 2-way
/// saturating VectorReduce that Halide 14 turns into `vpmaddubsw` (no pair
/// can saturate: 2 · 15 · 127 < 32767), then in pairs into 8 int32 lanes
/// (`vpmaddwd` by ones), then one f32 multiply-add by f32(d · s): exact
/// integer sums, as the int8 form's. A tile's rows of W are unpacked once
/// into nibbles in element order (`w_nibbles`: low nibbles are elements 0 ..
/// 15 of a block, high nibbles 16 .. 31), so that each product vector is
/// one dense load. The lanes are 8 whatever the target's vector (a block is
/// 32 values).
BuiltKernel nibbleAlgorithm(const KernelSpec &spec, const Operands &in,
                            const std::string &name) {
  const bool gated = in.gated;
  const int depth = int(spec.inWidth);
  const int blocks = int(format::int4BlocksPerRow(depth));
  Var j("j"), g("g"), row("row"), n("n"), m("m"), u("u"), v("v"), p("p");
  QuantisedRows x = quantiseRows(spec, in, depth % int(spec.group) != 0);
  Func q8("x_q8");
  q8(j, g, row) = cast<int8_t>(x.q(j, g, row));
  // Lane u of a block's int32 sums covers elements 4u .. 4u + 3.
  Func offset("x_offset");
  offset(u, g, row) = (cast<int32_t>(q8(4 * u, g, row)) +
                       cast<int32_t>(q8(4 * u + 1, g, row)) +
                       cast<int32_t>(q8(4 * u + 2, g, row)) +
                       cast<int32_t>(q8(4 * u + 3, g, row))) *
                      format::kInt4Zero;
  Func wn = unpackNibbles(in);
  RDom r2(0, 2, "int_pair");
  Func pairs("int_pairs");
  pairs(withPart(gated, {v, n, m, g}, p)) = cast<int16_t>(0);
  pairs(withPart(gated, {v, n, m, g}, p)) = Internal::saturating_add(
      pairs(withPart(gated, {v, n, m, g}, p)),
      Internal::widening_mul(wn(withPart(gated, {2 * v + r2, g, n}, p)),
                   q8(2 * v + r2, g, m)));
  // Pairs of i16 sums added into int32 as products with 1, the 2-way
  // pattern Halide 14 turns into vpmaddwd (a plain widening add becomes
  // sign extensions and vphaddd, five instructions for one). The 1 is a
  // value the simplifier cannot fold: 1 whenever x has a row, and no output
  // is computed when it has none.
  Expr one = cast<int16_t>(in.x.dim(1).extent() > 0);
  RDom rq(0, 2, "int_quad");
  Func dot("int_dot");
  dot(withPart(gated, {u, n, m, g}, p)) = 0;
  dot(withPart(gated, {u, n, m, g}, p)) += cast<int32_t>(Internal::widening_mul(
      pairs(withPart(gated, {2 * u + rq, n, m, g}, p)), one));
  BuiltKernel kernel = groupedSums(
      spec, in, blocks, 8, "int_",
      [&](Var lane, Var n, Var m, RVar g, Var p) {
        return cast<float>(dot(withPart(gated, {lane, n, m, g}, p)) -
                           offset(lane, g, m));
      },
      x.scale, name + "_value");
  kernel.output = markNonFiniteRows(kernel.output, x.nonFinite, name);
  kernel.stages.insert(x.stages.begin(), x.stages.end());
  kernel.stages.insert({{"int_dot", dot},
                        {"int_pairs", pairs},
                        {"w_nibbles", wn},
                        {"x_q8", q8},
                        {"x_offset", offset}});
  kernel.domains.insert({{"int_pair", r2}, {"int_quad", rq}});
  return kernel;
}

/// int4 W with f32 activations, a row per sequence (decode): the tile's
/// nibbles unpacked once (unpackNibbles), then per block of 32 and output
///   partial += d_w · (Σ_{k∈g} x · w' − 8 · Σ_{k∈g} x)
/// with the first sum in f32 lanes (one zero-extend, convert and FMA per
/// vector) and 8 · Σ x once per row (`x_offset`): the scale and the offset
/// once per block instead of once per vector. Sums in f32, so only their
/// order (and the offset's rounding) differs from the widened dot form's.
BuiltKernel nibbleDotAlgorithm(const KernelSpec &spec, const CpuGemmPlan &plan,
                               const Operands &in, const std::string &name) {
  const bool gated = in.gated;
  const int lanes = int(plan.vector);
  const int depth = int(spec.inWidth);
  const int blocks = int(format::int4BlocksPerRow(depth));
  const int block = int(format::kInt4BlockValues);
  Var g("g"), row("row"), n("n"), m("m"), lane("lane"), p("p");
  // x past K (a padded last block) reads 0.
  Func xb("x_blocks");
  Var j("j");
  Expr k = g * block + j;
  Expr xValue = in.x(clamp(k, 0, depth - 1), clamp(row, 0, in.x.dim(1).extent() - 1));
  xb(j, g, row) = depth % block == 0 ? xValue : select(k < depth, xValue, 0.0f);
  RDom rv(0, block / lanes, "nib_rv");
  Func offset("x_offset");
  offset(lane, g, row) = 0.0f;
  offset(lane, g, row) += xb(rv * lanes + lane, g, row);
  Func wn = unpackNibbles(in);
  Func blockSum("nib_block");
  blockSum(withPart(gated, {lane, n, m, g}, p)) = 0.0f;
  blockSum(withPart(gated, {lane, n, m, g}, p)) +=
      xb(rv * lanes + lane, g, m) *
      cast<float>(wn(withPart(gated, {rv * lanes + lane, g, n}, p)));
  BuiltKernel kernel = groupedSums(
      spec, in, blocks, lanes, "nib_",
      [&](Var lane, Var n, Var m, RVar g, Var p) {
        return blockSum(withPart(gated, {lane, n, m, g}, p)) -
               float(format::kInt4Zero) * offset(lane, g, m);
      },
      Func(), name);
  kernel.stages.insert({{"nib_block", blockSum},
                        {"w_nibbles", wn},
                        {"x_offset", offset}});
  kernel.domains.emplace("nib_rv", rv);
  return kernel;
}

/// int8 activations over many rows (a widened panel's plan): x quantised
/// as integerAlgorithm's, then the dot form on its values q · d against the
/// f32 panel of W's values qw · s. Each product is exact in f32 (8 + 11
/// significant bits a side) and only the summation order differs from the
/// integer form's: on AVX2 the integer dot form ran GPT-2 small's prefill
/// at about half the speed of this one (2 x 2 micro tiles: two vectors
/// per output, x and W both streamed along K).
BuiltKernel dequantisedAlgorithm(const KernelSpec &spec,
                                 const CpuGemmPlan &plan, const Operands &in,
                                 const std::string &name) {
  QuantisedRows x = quantiseRows(spec, in, /*ragged=*/true);
  Var k("k"), row("row");
  const int group = int(spec.group);
  Func values("x_dequantised");
  values(k, row) = cast<float>(x.q(k % group, k / group, row)) *
                   x.scale(k / group, row);
  BuiltKernel dot =
      dotAlgorithm(spec, plan, in, "", name + "_value", values);
  dot.output = markNonFiniteRows(dot.output, x.nonFinite, name);
  dot.stages.insert(x.stages.begin(), x.stages.end());
  dot.stages.emplace("x_dequantised", values);
  return dot;
}

/// Whether an int4 W with f32 activations runs nibbleDotAlgorithm: W
/// widened in registers (not into a panel), a block a whole number of
/// vectors.
bool usesNibbleDot(const KernelSpec &spec, const CpuGemmPlan &plan) {
  return spec.weightType == WeightType::Int4 && !spec.integerProducts &&
         !plan.widenPanel && format::kInt4BlockValues % plan.vector == 0;
}

/// The one condition the algorithm's select and the schedule's
/// specialization share (Halide drops the other branch only when they are
/// the same expression). `x` is the kernel's first argument.
Expr manyRows(const CpuPackedGemmPlan &plan, const ImageParam &x) {
  return x.dim(1).extent() >= int(plan.smallRows);
}

/// A packed plan's kernel holds both forms: the packed one for at least
/// small_rows rows, the dot one (its `dot_` plan) for fewer, where packing W
/// costs more than the FMAs it feeds. The output selects by the row count;
/// the schedule specializes on the same condition, so each call runs one
/// form only.
BuiltKernel algorithm(const KernelSpec &spec) {
  Operands in(spec);
  if (spec.integerProducts) {
    const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
    if (plan.widenPanel)
      return dequantisedAlgorithm(spec, plan, in, outputName(spec));
    if (spec.weightType == WeightType::Int4)
      return nibbleAlgorithm(spec, in, outputName(spec));
    return integerAlgorithm(spec, plan, in, outputName(spec));
  }
  if (!std::holds_alternative<CpuPackedGemmPlan>(spec.tile)) {
    const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
    if (usesNibbleDot(spec, plan))
      return nibbleDotAlgorithm(spec, plan, in, outputName(spec));
    return dotAlgorithm(spec, plan, in, "", outputName(spec));
  }
  const CpuPackedGemmPlan &plan = spec.plan<CpuPackedGemmPlan>();
  BuiltKernel packed = packedAlgorithm(spec, in, "packed_form");
  BuiltKernel dot = dotAlgorithm(spec, plan.dot, in.withOwnScales("_dot"),
                                 "dot_", "dot_form");
  Var n("n"), m("m");
  Func out(outputName(spec));
  out(n, m) = select(manyRows(plan, in.x), packed.output(n, m), dot.output(n, m));
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
    update = update.specialize(kernel.arguments.front().dim(1).extent() <=
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
Var tileDotOutputs(Func out, const CpuGemmPlan &plan) {
  Var n("n"), m("m");
  int microM = int(plan.microM);
  int microN = int(plan.microN);
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), tile("tile"), task("task");
  Var mb("mb"), moi("moi");
  int64_t blockM = plan.blockM;
  out.tile(n, m, no, mo, ni, mi, microN, microM, TailStrategy::GuardWithIf);
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
    out.split(mo, mb, moi, blockTiles, TailStrategy::GuardWithIf)
        .reorder(ni, mi, moi, no, mb);
    if (plan.widenPanel) {
      // A task's unit is a column tile of a block; its row tiles (moi)
      // share the panel.
      out.fuse(no, mb, tile);
      microTile = moi;
    } else {
      out.fuse(moi, no, tile).fuse(tile, mb, tile);
    }
  } else {
    out.fuse(no, mo, tile);
  }
  out.split(tile, task, tile, int(plan.tilesPerTask), TailStrategy::GuardWithIf)
      .parallel(task)
      .vectorize(ni)
      .unroll(mi);
  return microTile;
}

/// int8's scales of a tile's rows of W, converted to f32 once per tile and
/// a vector at a time (Halide converts a lone f16 in software).
void scalesPerTile(BuiltKernel &kernel, Func out,
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
                 const CpuGemmPlan &plan, const std::string &prefix) {
  Func out = kernel.output, acc = kernel.stages.at(prefix + "acc"),
       partial = kernel.stages.at(prefix + "partial"),
       widened = kernel.stages.at(prefix + "w_widened");
  RDom rk = kernel.domains.at(prefix + "rk"),
       rl = kernel.domains.at(prefix + "rl");
  Var n("n"), m("m"), lane("lane"), j("j"), p("p");
  const bool gated = spec.kind == KernelKind::GatedLinear;
  Var tile("tile");
  Var microTile = tileDotOutputs(out, plan);
  // int4: the vectors along a block are unrolled, so that each reads
  // consecutive bytes of one half (a constant j % 16 and j >= 16).
  const bool int4 = spec.weightType == WeightType::Int4;
  if (plan.widenPanel) {
    widened.compute_at(out, tile).vectorize(j, int(plan.vector));
    if (int4)
      widened.unroll(j);
    if (gated)
      widened.bound(p, 0, 2).unroll(p);
  }
  scalesPerTile(kernel, out, {prefix + "w_scale", prefix + "w_up_scale"});
  scheduleTileAccumulators(out, microTile, acc, rl, partial, lane, plan, gated);
  if (gated) {
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
  if (int4 && !plan.widenPanel)
    partial.update().unroll(rk.x);
  prefetchNextRows(kernel, spec, plan, partial, rk.y);
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
  // The panel: the task's columns of W over the whole depth, widened.
  panel.compute_at(out, task).vectorize(n, lanes, TailStrategy::GuardWithIf);
  if (gated) {
    acc.bound(p, 0, 2).unroll(p);
    panel.bound(p, 0, 2).unroll(p);
  }
  // int8's scales of the task's columns, converted to f32 a vector at a
  // time (Halide converts a lone f16 in software).
  for (const char *name : {"packed_w_scale", "packed_w_up_scale"}) {
    auto scale = kernel.stages.find(name);
    if (scale == kernel.stages.end())
      continue;
    Var g("g");
    scale->second.compute_at(out, task).vectorize(g, 8, TailStrategy::GuardWithIf);
  }
}

/// x's quantisation, once per call before the tiles (M·K values, parallel
/// over rows).
void quantiseOnce(BuiltKernel &kernel, int lanes) {
  Var j("j"), row("row"), k("k");
  kernel.stages.at("x_amax").compute_root().parallel(row);
  kernel.stages.at("x_scale").compute_root();
  kernel.stages.at("x_inverse").compute_root();
  kernel.stages.at("x_nonfinite").compute_root().parallel(row);
  auto values = kernel.stages.find("x_dequantised");
  if (values != kernel.stages.end())
    values->second.compute_root().parallel(row).vectorize(
        k, lanes, TailStrategy::GuardWithIf);
  else
    kernel.stages.at("x_q").compute_root().parallel(row).vectorize(
        j, 2 * lanes, TailStrategy::GuardWithIf);
}

// int8 activations. A panel plan (many rows) runs the dequantised form with
// the dot form's schedule. Otherwise the integer form: micro tiles as the
// dot form's, int8 W read as it is. A micro tile keeps, per output, a
// vector of f32 partial sums across the groups and, within a group, a
// vector of int32 sums: the depth loop of a step is the pair (2, vectorized
// into the pmaddwd pattern) within the lanes (vectorized), then the
// outputs of the tile (unrolled).
void integerSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
  if (plan.widenPanel) {
    quantiseOnce(kernel, int(plan.vector));
    dotSchedule(kernel, spec, plan, "");
    return;
  }
  const bool gated = spec.kind == KernelKind::GatedLinear;
  const int lanes = int(plan.vector);
  Func out = kernel.output, acc = kernel.stages.at("int_acc"),
       partial = kernel.stages.at("int_partial"),
       dot = kernel.stages.at("int_dot");
  RDom rs = kernel.domains.at("int_rs"), rg = kernel.domains.at("int_rg"),
       rl = kernel.domains.at("int_rl");
  Var n("n"), m("m"), u("u"), lane("lane"), p("p");
  Var microTile = tileDotOutputs(out, plan);
  scalesPerTile(kernel, out, {"w_scale", "w_up_scale"});
  quantiseOnce(kernel, lanes);
  scheduleTileAccumulators(out, microTile, acc, rl, partial, lane, plan, gated);
  dot.compute_at(partial, rg).vectorize(u).unroll(n).unroll(m);
  Stage partialSteps = partial.update(), dotSteps = dot.update();
  if (gated) {
    dot.bound(p, 0, 2).unroll(p);
    partialSteps.reorder(lane, n, m, p, rg).unroll(p);
    dotSteps.reorder(rs.x, u, n, m, p, rs.y).unroll(p);
  } else {
    partialSteps.reorder(lane, n, m, rg);
    dotSteps.reorder(rs.x, u, n, m, rs.y);
  }
  partialSteps.vectorize(lane).unroll(n).unroll(m);
  dotSteps.atomic().vectorize(rs.x).vectorize(u).unroll(n).unroll(m);
  // The next tile's rows of W, one group ahead of each group's products
  // (as the dot form's prefetchNextRows), where groups tile K exactly.
  if (spec.inWidth % spec.group == 0)
    prefetchNextTile(kernel, plan, partial, rg,
                     int(spec.inWidth / spec.group));
}

// A tile's rows of int4 W unpacked into nibbles once, before its depth loop
// (unpackNibbles), in halves of 16 bytes: each vector's j % 16 and j >= 16
// are constant. W is read there: the next tile's rows (micro_n on) are
// prefetched one block ahead, as prefetchNextTile does for the other forms.
void unpackNibblesPerTile(BuiltKernel &kernel, const KernelSpec &spec,
                          const CpuGemmPlan &plan) {
  Func nibbles = kernel.stages.at("w_nibbles");
  Var j("j"), g("g"), row("row"), p("p");
  nibbles.compute_at(kernel.output, Var("tile"))
      .bound(j, 0, int(format::kInt4BlockValues))
      .vectorize(j, 16)
      .unroll(j);
  if (spec.kind == KernelKind::GatedLinear)
    nibbles.bound(p, 0, 2).unroll(p);
  for (const ImageParam &argument : kernel.arguments)
    if (argument.name() == "w" || argument.name() == "w_up")
      nibbles.prefetch(argument, g, row, int(plan.microN),
                       PrefetchBoundStrategy::NonFaulting);
}

// int4 W with int8 activations (nibbleAlgorithm): micro tiles as the dot
// form's; a tile's rows of W unpacked into nibbles once, before its depth
// loop; per block, the outputs' i16 pair sums and int32 sums (vectorized
// into vpmaddubsw and vpmaddwd) and their f32 multiply-add, the outputs
// unrolled.
void nibbleSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
  const bool gated = spec.kind == KernelKind::GatedLinear;
  Func out = kernel.output, acc = kernel.stages.at("int_acc"),
       partial = kernel.stages.at("int_partial"),
       dot = kernel.stages.at("int_dot"), pairs = kernel.stages.at("int_pairs"),
       nibbles = kernel.stages.at("w_nibbles");
  RDom r2 = kernel.domains.at("int_pair"), rq = kernel.domains.at("int_quad"),
       rg = kernel.domains.at("int_rg"), rl = kernel.domains.at("int_rl");
  Var n("n"), m("m"), u("u"), v("v"), j("j"), lane("lane"), p("p"), row("row");
  Var microTile = tileDotOutputs(out, plan);
  scalesPerTile(kernel, out, {"w_scale", "w_up_scale"});
  quantiseOnce(kernel, int(plan.vector));
  kernel.stages.at("x_q8").compute_root().parallel(row).vectorize(
      j, 32, TailStrategy::GuardWithIf);
  kernel.stages.at("x_offset").compute_root().parallel(row).vectorize(u, 8);
  unpackNibblesPerTile(kernel, spec, plan);
  scheduleTileAccumulators(out, microTile, acc, rl, partial, lane, plan, gated);
  dot.compute_at(partial, rg).vectorize(u).unroll(n).unroll(m);
  pairs.compute_at(partial, rg).vectorize(v).unroll(n).unroll(m);
  Stage partialSteps = partial.update(), dotSteps = dot.update(),
        pairSteps = pairs.update();
  if (gated) {
    dot.bound(p, 0, 2).unroll(p);
    pairs.bound(p, 0, 2).unroll(p);
    partialSteps.reorder(lane, n, m, p, rg).unroll(p);
    dotSteps.reorder(rq, u, n, m, p).unroll(p);
    pairSteps.reorder(r2, v, n, m, p).unroll(p);
  } else {
    partialSteps.reorder(lane, n, m, rg);
    dotSteps.reorder(rq, u, n, m);
    pairSteps.reorder(r2, v, n, m);
  }
  partialSteps.vectorize(lane).unroll(n).unroll(m);
  dotSteps.atomic().vectorize(rq).vectorize(u).unroll(n).unroll(m);
  // Halide 14 cannot prove saturating_add associative; here no sum
  // saturates (each pair is at most 2 · 15 · 127), so it is.
  pairSteps.atomic(/*override_associativity_test=*/true)
      .vectorize(r2)
      .vectorize(v)
      .unroll(n)
      .unroll(m);
}

// int4 W with f32 activations (nibbleDotAlgorithm): as nibbleSchedule, with
// f32 block sums.
void nibbleDotSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
  const bool gated = spec.kind == KernelKind::GatedLinear;
  Func out = kernel.output, acc = kernel.stages.at("nib_acc"),
       partial = kernel.stages.at("nib_partial"),
       blockSum = kernel.stages.at("nib_block");
  RDom rv = kernel.domains.at("nib_rv"), rg = kernel.domains.at("nib_rg"),
       rl = kernel.domains.at("nib_rl");
  Var n("n"), m("m"), lane("lane"), p("p"), row("row");
  Var microTile = tileDotOutputs(out, plan);
  scalesPerTile(kernel, out, {"w_scale", "w_up_scale"});
  Func offset = kernel.stages.at("x_offset");
  offset.compute_root().parallel(row).vectorize(lane);
  offset.update().parallel(row).vectorize(lane);
  unpackNibblesPerTile(kernel, spec, plan);
  scheduleTileAccumulators(out, microTile, acc, rl, partial, lane, plan, gated);
  blockSum.compute_at(partial, rg).vectorize(lane).unroll(n).unroll(m);
  Stage partialSteps = partial.update(), blockSteps = blockSum.update();
  if (gated) {
    blockSum.bound(p, 0, 2).unroll(p);
    partialSteps.reorder(lane, n, m, p, rg).unroll(p);
    blockSteps.reorder(lane, n, m, p, rv).unroll(p);
  } else {
    partialSteps.reorder(lane, n, m, rg);
    blockSteps.reorder(lane, n, m, rv);
  }
  partialSteps.vectorize(lane).unroll(n).unroll(m);
  blockSteps.vectorize(lane).unroll(n).unroll(m).unroll(rv);
}

void cpuSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  if (spec.integerProducts && spec.weightType == WeightType::Int4 &&
      !spec.plan<CpuGemmPlan>().widenPanel) {
    nibbleSchedule(kernel, spec);
    return;
  }
  if (spec.integerProducts) {
    integerSchedule(kernel, spec);
    return;
  }
  if (!std::holds_alternative<CpuPackedGemmPlan>(spec.tile)) {
    if (usesNibbleDot(spec, spec.plan<CpuGemmPlan>()))
      nibbleDotSchedule(kernel, spec);
    else
      dotSchedule(kernel, spec, spec.plan<CpuGemmPlan>(), "");
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
  packedSchedule(kernel, spec, plan, many);
  dotSchedule(kernel, spec, plan.dot, "dot_");
}

BuiltKernel gpu(const KernelSpec &spec) {
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
  // Staged slices past K, M or N read the last column or row (clamped):
  // their products are never summed (K is guarded) or never stored.
  Func xTile("x_tile"), wTile("w_tile");
  xTile(k, row) = x(clamp(k, 0, depth - 1), clamp(row, 0, x.dim(1).extent() - 1));
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
  return {out, arguments};
}

const KernelRegistration registration({KernelKind::Linear,
                                       KernelKind::GatedLinear},
                                      {algorithm, cpuSchedule, gpu});

} // namespace

} // namespace tfmc::codegen::kernels
