//===- LinearQuantized.cpp - Linear forms for integer weights --------------===//
//
// The linear kernel's forms that do not widen an integer W to f32 values
// one by one (Linear.cpp has the others and the kernel's registration):
//  - int8 activations (tfmc --activations int8; docs/precision.md, "int8
//    activations"): each row of x quantised per group of the weight's G
//    features, then integer products: pmaddwd on i16 pairs for int8 W
//    (integerAlgorithm), vpmaddubsw on int4's nibbles (nibbleAlgorithm), or,
//    for many rows, the dot form on the dequantised values
//    (dequantisedAlgorithm);
//  - int4 W with f32 activations, a row per sequence: f32 sums per block,
//    scaled once per block (nibbleDotAlgorithm).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/LinearForms.h"
#include "support/WeightFormat.h"

#include <functional>
#include <vector>

namespace tfmc::codegen::kernels::linear {

using namespace Halide;

namespace {

/// quantiseRows' Funcs read from a tfm.quantize's bytes x, (G, B / G, M)
/// chunks of a group (support/WeightFormat.h): the levels as they are,
/// each group's scale from its four bytes, the row's flag.
QuantisedRows readQuantisedRows(const KernelSpec &spec, const ImageParam &x,
                                bool ragged, Type levels) {
  const int group = int(spec.group);
  const int depth = int(spec.inWidth);
  const int groups = int(format::blocksPerRow(depth, group));
  Var j("j"), g("g"), row("row");
  Expr rowIn = clamp(row, 0, rowsOf(x) - 1);
  // j past the group (a step that does not divide it) reads 0; past K the
  // bytes are 0.
  Expr level = cast(levels, x(ragged ? min(j, group - 1) : j, g, rowIn));
  Func q("x_q");
  q(j, g, row) = ragged ? select(j < group, level, cast(levels, 0)) : level;
  // Byte `at` after the levels.
  auto byte = [&](Expr at) {
    return cast<uint32_t>(cast<uint8_t>(x(at % group, groups + at / group, rowIn)));
  };
  Expr at = 4 * g;
  Func scale("x_scale");
  scale(g, row) = reinterpret<float>(byte(at) | (byte(at + 1) << 8) |
                                     (byte(at + 2) << 16) | (byte(at + 3) << 24));
  Func nonFinite("x_nonfinite");
  nonFinite(row) = cast<int32_t>(byte(4 * groups));
  return {q,
          scale,
          nonFinite,
          {{"x_q", q}, {"x_scale", scale}, {"x_nonfinite", nonFinite}}};
}

} // namespace


QuantisedRows quantiseRows(const KernelSpec &spec, const ImageParam &x,
                           bool ragged, Type levels) {
  if (spec.quantisedInput)
    return readQuantisedRows(spec, x, ragged, levels);
  const int group = int(spec.group);
  const int depth = int(spec.inWidth);
  Var j("j"), g("g"), row("row");
  // Element j of group g; j past the group (a step that does not divide
  // it) or past K (a short last group) reads 0.
  Expr k = g * group + j;
  Expr inside = j < group && k < depth;
  Expr rowIn = clamp(row, 0, x.dim(1).extent() - 1);
  // (Clamped only where a group may pass K: a clamped index made each
  // vector of the reductions below a gather.)
  Expr raw = x(ragged ? clamp(k, 0, depth - 1) : k, rowIn);
  Func finite("x_finite");
  finite(j, g, row) =
      select(is_finite(raw) && (ragged ? inside : cast<bool>(1)), raw, 0.0f);
  // The two reductions as updates (not inline maximum()s), so that the CPU
  // schedule can vectorize them (quantiseOnce).
  RDom rq(0, group, "x_rq");
  Func largest("x_amax");
  largest(g, row) = 0.0f;
  largest(g, row) = max(largest(g, row), abs(finite(rq, g, row)));
  Func scale("x_scale"), inverse("x_inverse");
  scale(g, row) = strict_float(largest(g, row) / 127.0f);
  inverse(g, row) = strict_float(
      select(scale(g, row) == 0.0f, 0.0f, 1.0f / scale(g, row)));
  Func q("x_q");
  q(j, g, row) = cast(levels, clamp(
      round(strict_float(finite(j, g, row) * inverse(g, row))), -127.0f,
      127.0f));
  RDom rx(0, depth, "x_rx");
  Func nonFinite("x_nonfinite");
  nonFinite(row) = 0;
  nonFinite(row) = max(nonFinite(row), select(is_finite(x(rx, rowIn)), 0, 1));
  return {q,
          scale,
          nonFinite,
          {{"x_q", q},
           {"x_amax", largest},
           {"x_scale", scale},
           {"x_inverse", inverse},
           {"x_nonfinite", nonFinite}}};
}

Func dequantisedRows(const QuantisedRows &rows, int group) {
  Var k("k"), row("row");
  Func values("x_dequantised");
  values(k, row) = cast<float>(rows.q(k % group, k / group, row)) *
                   rows.scale(k / group, row);
  return values;
}

Expr markNonFinite(Expr value, Expr nonFinite) {
  return reinterpret<float>(
      reinterpret<uint32_t>(value) |
      select(nonFinite != 0, cast<uint32_t>(Expr(int32_t(0x7fc00000))),
             cast<uint32_t>(Expr(0))));
}

Func markNonFiniteRows(const KernelSpec &spec, Func value, Func nonFinite,
                       const std::string &name) {
  Var n("n"), m("m");
  Func out(name);
  out(n, m) = storedAs(spec.outputType,
                       markNonFinite(value(n, m), nonFinite(m)));
  return out;
}

// The reductions (the largest |x| of a group, whether a row holds a NaN
// or an infinity) in vectors: an rfactor into `width` partial maxima a row
// (vectorized), then one horizontal maximum. Scalar, they took about half
// the quantisation's time in a BERT-base int8a8 forward. (Halide's atomic()
// vectorization instead made a compare-and-swap loop a vector inside the
// parallel loop.)
void vectorizeRowReduction(Func f, int64_t extent, int lanes) {
  int width = lanes;
  while (width > 1 && extent % width != 0)
    width /= 2;
  if (width < 4)
    return;
  Var row("row");
  RVar outer("x_ro"), inner("x_ri");
  Var u("x_u");
  Func partial =
      f.update().split(f.rvars().front(), outer, inner, width).rfactor(inner, u);
  // rfactor puts u last: the lanes innermost in storage and loops.
  std::vector<Var> order{u};
  for (const Var &v : partial.args())
    if (v.name() != u.name())
      order.push_back(v);
  partial.compute_at(f, row).reorder_storage(order).vectorize(u);
  std::vector<VarOrRVar> loops{u, outer};
  loops.insert(loops.end(), order.begin() + 1, order.end());
  partial.reorder(std::vector<VarOrRVar>(order.begin(), order.end()));
  partial.update().reorder(loops).vectorize(u);
}

void quantiseOnce(BuiltKernel &kernel, const KernelSpec &spec, int lanes) {
  Var j("j"), row("row"), k("k");
  // Rows of x (the kernel's first argument). A decode step's one row of
  // 512 values took ~0.2 us to quantise, and each parallel loop over it
  // (one a stage) ~3-5 us more on a 2-core VM, a third of a 512 x 512
  // int8 linear's time: few rows run serially.
  const Expr many = rowsOf(kernel.arguments.front()) >= kParallelQuantiseRows;
  auto reduction = [&](const std::string &name, int64_t extent) {
    Func f = kernel.stages.at(name);
    f.compute_root();
    vectorizeRowReduction(f, extent, lanes);
    // Parallel over rows only for many rows (a specialization).
    f.update().specialize(many).parallel(row, kQuantiseRowsPerTask);
  };
  if (spec.quantisedInput) {
    // Read from a tfm.quantize's bytes: each row's scales and flag once.
    kernel.stages.at("x_scale").compute_root();
    kernel.stages.at("x_nonfinite").compute_root();
  } else {
    reduction("x_amax", spec.group);
    kernel.stages.at("x_scale").compute_root();
    kernel.stages.at("x_inverse").compute_root();
    reduction("x_nonfinite", spec.inWidth);
  }
  auto values = kernel.stages.find("x_dequantised");
  Func q = values != kernel.stages.end() ? values->second
                                         : kernel.stages.at("x_q");
  const Var inner = values != kernel.stages.end() ? k : j;
  const int width = values != kernel.stages.end() ? lanes : 2 * lanes;
  q.compute_root().vectorize(inner, width, TailStrategy::GuardWithIf);
  q.specialize(many).parallel(row, kQuantiseRowsPerTask);
}

namespace {

/// The integer form (int8 activations; int8 or int4 W): x's rows quantised
/// per group (quantiseRows), then
///   acc(n, m) = bias + Σ_g (d(g, m) · s(g, n)) · Σ_{k∈g} q(k, m) · w(k, n)
/// with the inner sums exact in int32 and the outer one in f32. The inner
/// sum walks a group in steps of 2·lanes values: `lanes` int32 lanes, each
/// the sum of a pair of i16 × i16 products, the pattern Halide 14 matches
/// to pmaddwd (AVX2, AVX-512BW; vpdpwssd where the target has VNNI);
/// i16 products cannot overflow (|q · w| <= 127²). The outputs of a row
/// holding a NaN or an infinity are set to NaN with integer operations (no
/// NaN is converted to an integer, and Halide's fast-math flags let no NaN
/// into a float operation).
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
  LaneSums sums = sumLanes(spec, in, partial, lanes, prefix, outName);
  std::map<std::string, Func> stages{{prefix + "acc", sums.acc},
                                     {prefix + "partial", partial},
                                     {"w_scale", in.w.scale}};
  if (gated)
    stages.emplace("w_up_scale", in.up.scale);
  return {sums.out, in.arguments, std::move(stages),
          {{prefix + "rg", rg}, {prefix + "rl", sums.rl}}};
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
  QuantisedRows x = quantiseRows(spec, in.x, ragged, Int(16));
  Func q = x.q, scale = x.scale;

  // Element js of group g is the step's pair rs.x of lane u: values 2u and
  // 2u + 1 of step rs.y.
  RDom rs(0, 2, 0, steps, "int_rs");
  Expr js = rs.y * step + 2 * u + rs.x;
  // W's values as i16, 0 outside the group.
  auto weight = [&](const WeightInput &w) {
    Expr rowIn = clamp(n, 0, w.values.dim(1).extent() - 1);
    Expr kj = g * group + js;
    // The blocks are whole (padded with zeros): js is clamped to its own.
    Expr value = cast<int16_t>(w.int8Value(min(js, group - 1), g, rowIn));
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
  kernel.output = markNonFiniteRows(spec, kernel.output, x.nonFinite, name);
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
    return w.int4Nibble(j, g, clamp(row, 0, w.values.dim(1).extent() - 1));
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
  Var g("g"), row("row"), n("n"), m("m"), u("u"), v("v"), p("p");
  QuantisedRows x =
      quantiseRows(spec, in.x, depth % int(spec.group) != 0, Int(8));
  Func q8 = x.q;
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
  Expr one = cast<int16_t>(in.rows() > 0);
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
  kernel.output = markNonFiniteRows(spec, kernel.output, x.nonFinite, name);
  kernel.stages.insert(x.stages.begin(), x.stages.end());
  kernel.stages.insert({{"int_dot", dot},
                        {"int_pairs", pairs},
                        {"w_nibbles", wn},
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
  QuantisedRows x = quantiseRows(spec, in.x, /*ragged=*/true, Int(16));
  Func values = dequantisedRows(x, int(spec.group));
  BuiltKernel dot =
      dotAlgorithm(spec, plan, in, "", name + "_value", values);
  dot.output = markNonFiniteRows(spec, dot.output, x.nonFinite, name);
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

/// groupedSums' end, scheduled: micro tiles as the dot form's, W's scales
/// per tile, the tile's accumulators, and `prefix`partial's update over the
/// groups (lanes vectorized, the tile's outputs and a gated linear's parts
/// unrolled). Each form computes its group sums at (partial, rg).
void scheduleGroupedSums(BuiltKernel &kernel, const KernelSpec &spec,
                         const std::string &prefix) {
  const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
  const bool gated = spec.kind == KernelKind::GatedLinear;
  Func out = kernel.output, acc = kernel.stages.at(prefix + "acc"),
       partial = kernel.stages.at(prefix + "partial");
  RDom rg = kernel.domains.at(prefix + "rg"),
       rl = kernel.domains.at(prefix + "rl");
  Var n("n"), m("m"), lane("lane"), p("p");
  Var microTile = tileDotOutputs(out, out, plan);
  // W's block scales are read where they are used, once per block and
  // output (a few scalar integer operations, WeightInput::scaleFunc): a
  // tile's scales widened as a vector first gathered their f16s byte by
  // byte, a third of the kernel's time (int4, TinyLlama-shaped decode, 1
  // thread, AVX2, both with the 2^112 widening: 10.4 -> 12.9 tokens/s with
  // int8 activations, 8.5 -> 10.2 without).
  scheduleTileAccumulators(out, microTile, acc, rl, partial, lane, plan, gated);
  Stage steps = partial.update();
  if (gated)
    steps.reorder(lane, n, m, p, rg).unroll(p);
  else
    steps.reorder(lane, n, m, rg);
  steps.vectorize(lane).unroll(n).unroll(m);
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
    quantiseOnce(kernel, spec, int(plan.vector));
    dotSchedule(kernel, spec, plan, "", kernel.output);
    return;
  }
  const bool gated = spec.kind == KernelKind::GatedLinear;
  Func partial = kernel.stages.at("int_partial"),
       dot = kernel.stages.at("int_dot");
  RDom rs = kernel.domains.at("int_rs"), rg = kernel.domains.at("int_rg");
  Var n("n"), m("m"), u("u"), p("p");
  scheduleGroupedSums(kernel, spec, "int_");
  quantiseOnce(kernel, spec, int(plan.vector));
  dot.compute_at(partial, rg).vectorize(u).unroll(n).unroll(m);
  Stage dotSteps = dot.update();
  if (gated) {
    dot.bound(p, 0, 2).unroll(p);
    dotSteps.reorder(rs.x, u, n, m, p, rs.y).unroll(p);
  } else {
    dotSteps.reorder(rs.x, u, n, m, rs.y);
  }
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
  Func partial = kernel.stages.at("int_partial"),
       dot = kernel.stages.at("int_dot"), pairs = kernel.stages.at("int_pairs");
  RDom r2 = kernel.domains.at("int_pair"), rq = kernel.domains.at("int_quad"),
       rg = kernel.domains.at("int_rg");
  Var n("n"), m("m"), u("u"), v("v"), p("p"), row("row");
  scheduleGroupedSums(kernel, spec, "int_");
  quantiseOnce(kernel, spec, int(plan.vector));
  kernel.stages.at("x_offset").compute_root().parallel(row).vectorize(u, 8);
  unpackNibblesPerTile(kernel, spec, plan);
  dot.compute_at(partial, rg).vectorize(u).unroll(n).unroll(m);
  pairs.compute_at(partial, rg).vectorize(v).unroll(n).unroll(m);
  Stage dotSteps = dot.update(), pairSteps = pairs.update();
  if (gated) {
    dot.bound(p, 0, 2).unroll(p);
    pairs.bound(p, 0, 2).unroll(p);
    dotSteps.reorder(rq, u, n, m, p).unroll(p);
    pairSteps.reorder(r2, v, n, m, p).unroll(p);
  } else {
    dotSteps.reorder(rq, u, n, m);
    pairSteps.reorder(r2, v, n, m);
  }
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
  Func partial = kernel.stages.at("nib_partial"),
       blockSum = kernel.stages.at("nib_block"),
       offset = kernel.stages.at("x_offset");
  RDom rv = kernel.domains.at("nib_rv"), rg = kernel.domains.at("nib_rg");
  Var n("n"), m("m"), lane("lane"), p("p"), row("row");
  scheduleGroupedSums(kernel, spec, "nib_");
  offset.compute_root().parallel(row).vectorize(lane);
  offset.update().parallel(row).vectorize(lane);
  unpackNibblesPerTile(kernel, spec, plan);
  blockSum.compute_at(partial, rg).vectorize(lane).unroll(n).unroll(m);
  Stage blockSteps = blockSum.update();
  if (gated) {
    blockSum.bound(p, 0, 2).unroll(p);
    blockSteps.reorder(lane, n, m, p, rv).unroll(p);
  } else {
    blockSteps.reorder(lane, n, m, rv);
  }
  blockSteps.vectorize(lane).unroll(n).unroll(m).unroll(rv);
}

} // namespace

bool usesQuantizedForm(const KernelSpec &spec) {
  if (spec.integerProducts)
    return true;
  if (isKQuant(spec.weightType) || usesMicrokernel(spec))
    return usesMicrokernel(spec);
  return std::holds_alternative<CpuGemmPlan>(spec.tile) &&
         usesNibbleDot(spec, spec.plan<CpuGemmPlan>());
}

BuiltKernel quantizedAlgorithm(const KernelSpec &spec, const Operands &in,
                               const std::string &name) {
  if (usesMicrokernel(spec))
    return microkernelAlgorithm(spec, in, name);
  if (isKQuant(spec.weightType))
    throw CompileError("K-quant weights multiply int8 activations only "
                       "through the target's integer microkernel (x86-64-avx2 "
                       "and x86-64-avx512 have one)");
  // Only the microkernel reads block panels (tfm-weight-layout gives them
  // to no other weight).
  if (spec.weightPanel > 0)
    throw CompileError("an int8 or int4 weight in block panels is read only "
                       "by the integer microkernel, which this kernel does "
                       "not run");
  const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
  // Tile.cpp gives these forms no one-row tile (their decode tiles have
  // one row at max-batch 1 only); a plan that has one is not theirs.
  if (plan.oneRowMicroN != 0)
    throw CompileError("the integer and int4 forms of the GEMM have no "
                       "one-row tile; the plan names one");
  if (!spec.integerProducts)
    return nibbleDotAlgorithm(spec, plan, in, name);
  if (plan.widenPanel)
    return dequantisedAlgorithm(spec, plan, in, name);
  if (spec.weightType == WeightType::Int4)
    return nibbleAlgorithm(spec, in, name);
  return integerAlgorithm(spec, plan, in, name);
}

void quantizedSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  if (usesMicrokernel(spec))
    return microkernelSchedule(kernel, spec);
  const CpuGemmPlan &plan = spec.plan<CpuGemmPlan>();
  if (!spec.integerProducts)
    nibbleDotSchedule(kernel, spec);
  else if (spec.weightType == WeightType::Int4 && !plan.widenPanel)
    nibbleSchedule(kernel, spec);
  else
    integerSchedule(kernel, spec);
}

} // namespace tfmc::codegen::kernels::linear
