//===- HalideKernels.cpp - Kernels as Halide pipelines --------------------===//
//
// Each kernel is written twice over, as Halide intends: an algorithm (what
// each output element is) and a schedule (loop order, tiles, vectors,
// threads) read from the kernel's tile plan. Schedules never change results.
//
// Tails: outputs are split with GuardWithIf, so a tile past the end of the
// output does no stores; intermediates may be computed over whole tiles, so
// every input is read through a boundary condition (repeat_edge) and an
// over-computed element reads valid memory instead of asserting (the
// "accessed at 999, beyond the max (511)" failures of HALIDE14_NOTES.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/HalideKernels.h"
#include "compiler/codegen/HalideKernelsInternal.h"

#include "Halide.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace tfmc::codegen {
namespace {

using namespace Halide;

using detail::BuiltKernel;

Expr negativeInfinity() { return Expr(-std::numeric_limits<float>::infinity()); }

/// erf for the exact GELU: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7),
/// since Halide 14 has no erf.
Expr erfApprox(Expr x) {
  Expr a = abs(x);
  Expr t = 1.0f / (1.0f + 0.3275911f * a);
  Expr poly =
      ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t -
        0.284496736f) *
           t +
       0.254829592f) *
      t;
  Expr y = 1.0f - poly * exp(-a * a);
  return select(x < 0, -y, y);
}

Expr applyActivation(ActivationFn fn, Expr x) {
  switch (fn) {
  case ActivationFn::None:
    return x;
  case ActivationFn::Relu:
    return max(x, 0.0f);
  case ActivationFn::Gelu:
    return 0.5f * x * (1.0f + erfApprox(x * float(M_SQRT1_2)));
  case ActivationFn::GeluTanh: {
    // 0.5·x·(1 + tanh(u)) = x·sigmoid(2u) = x / (1 + exp(-2u)): Halide
    // inlines a vector exp, while its tanh is a scalar libm call per
    // element (which made the FFN's first linear 2.5x slower). exp's
    // argument is clamped so that it stays finite: x / 1.6e38 is 0 to f32.
    Expr u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return x / (1.0f + exp(min(-2.0f * u, 88.0f)));
  }
  }
  return x;
}

int lanesOf(const KernelSpec &spec) {
  return int(spec.tile.get("vector", 8));
}

/// Elementwise and row kernels over (W, R): vectorise W, rows in parallel
/// tasks of `rows_per_task`. Returns the loop over one row.
Var scheduleRows(Func out, Var w, Var r, const KernelSpec &spec) {
  Var ro("ro"), ri("ri");
  int lanes = lanesOf(spec);
  int unroll = int(spec.tile.get("unroll", 1));
  out.split(r, ro, ri, int(spec.tile.get("rows_per_task", 1)),
            TailStrategy::GuardWithIf)
      .parallel(ro);
  Var wo("wo"), wi("wi");
  out.split(w, wo, wi, lanes * unroll, TailStrategy::GuardWithIf)
      .vectorize(wi, lanes);
  if (unroll > 1)
    out.unroll(wi);
  return ri;
}

} // namespace

BuiltKernel detail::embeddingAlgorithm(const KernelSpec &spec) {
  ImageParam ids(Int(64), 2, "ids");
  ImageParam table(Float(32), 2, "table");
  Var d("d"), s("s"), b("b");
  Func out("embedding");
  // The runtime rejects ids outside [0, vocab); the clamp keeps bounds
  // inference finite.
  Expr row = clamp(cast<int32_t>(ids(s, b)), 0, int(spec.rows) - 1);
  out(d, s, b) = table(d, row);
  return {out, {ids, table}, {}};
}

namespace {

/// Kernels over (D, S, B): every token (s, b) is a row.
void scheduleTokenRows(Func out, const KernelSpec &spec) {
  Var d("d"), s("s"), b("b"), sb("sb");
  out.fuse(s, b, sb);
  scheduleRows(out, d, sb, spec);
}

BuiltKernel embedding(const KernelSpec &spec) {
  BuiltKernel kernel = detail::embeddingAlgorithm(spec);
  if (!spec.autoschedule)
    scheduleTokenRows(kernel.output, spec);
  return kernel;
}

} // namespace

BuiltKernel detail::positionsAlgorithm(const KernelSpec &spec) {
  ImageParam x(Float(32), 3, "x");
  Var d("d"), s("s"), b("b");
  Func out("positions");
  std::vector<ImageParam> arguments{x};
  if (spec.learned) {
    ImageParam table(Float(32), 2, "table");
    out(d, s, b) = x(d, s, b) + table(d, s);
    arguments.push_back(table);
  } else {
    // PE[p, 2i] = sin(p / 10000^(2i/D)), PE[p, 2i+1] = cos(same), in
    // double: arguments reach max_len radians, where f32 loses digits.
    Func pe("sinusoid");
    Expr even = cast<double>((d / 2) * 2);
    Expr angle = cast<double>(s) *
                 exp(even * Expr(-std::log(10000.0) / double(spec.width)));
    pe(d, s) = cast<float>(select(d % 2 == 0, sin(angle), cos(angle)));
    out(d, s, b) = x(d, s, b) + pe(d, s);
    return {out, arguments, {{"sinusoid", pe}}};
  }
  return {out, arguments, {}};
}

namespace {

BuiltKernel positions(const KernelSpec &spec) {
  BuiltKernel kernel = detail::positionsAlgorithm(spec);
  if (spec.autoschedule)
    return kernel;
  if (kernel.stages.count("sinusoid"))
    kernel.stages["sinusoid"].compute_root().parallel(Var("s"));
  scheduleTokenRows(kernel.output, spec);
  return kernel;
}

} // namespace

BuiltKernel detail::elementwiseAlgorithm(const KernelSpec &spec) {
  ImageParam x(Float(32), 2, "x");
  Var w("w"), r("r");
  Func out(spec.kind == KernelKind::Scale ? "scale" : "activation");
  std::vector<ImageParam> arguments{x};
  switch (spec.kind) {
  case KernelKind::Scale:
    out(w, r) = x(w, r) * float(spec.factor);
    break;
  case KernelKind::Activation:
    out(w, r) = applyActivation(spec.activation, x(w, r));
    break;
  default: {
    ImageParam y(Float(32), 2, "y");
    out(w, r) = x(w, r) + y(w, r);
    arguments.push_back(y);
    break;
  }
  }
  return {out, arguments, {}};
}

namespace {

BuiltKernel elementwise(const KernelSpec &spec) {
  BuiltKernel kernel = detail::elementwiseAlgorithm(spec);
  if (!spec.autoschedule)
    scheduleRows(kernel.output, Var("w"), Var("r"), spec);
  return kernel;
}

BuiltKernel linear(const KernelSpec &spec) {
  ImageParam x(Float(32), 2, "x");
  ImageParam w(Float(32), 2, "w");
  ImageParam bias(Float(32), 1, "bias");
  ImageParam residual(Float(32), 2, "residual");
  std::vector<ImageParam> arguments{x, w};
  Var n("n"), m("m"), lane("lane");

  // Dot-product form: W is [N, K] row-major, so a row of W and a row of x
  // are both contiguous along K. Each output keeps a vector accumulator
  // over K and sums its lanes at the end; no transpose of W is needed, for
  // one row (decode) or many (prefill).
  int lanes = lanesOf(spec);
  int64_t depth = spec.inWidth;
  int64_t paddedDepth = (depth + lanes - 1) / lanes * lanes;
  // Rows and columns past the end (whole micro tiles) read clamped memory;
  // depth past K (when K is not a multiple of the vector) reads zeros.
  Func xc("x_clamped"), wc("w_clamped");
  Var k("k"), row("row");
  Expr kIn = clamp(k, 0, int(depth) - 1);
  Expr xValue = x(kIn, clamp(row, 0, x.dim(1).extent() - 1));
  Expr wValue = w(kIn, clamp(row, 0, w.dim(1).extent() - 1));
  if (paddedDepth != depth) {
    xValue = select(k < int(depth), xValue, 0.0f);
    wValue = select(k < int(depth), wValue, 0.0f);
  }
  xc(k, row) = xValue;
  wc(k, row) = wValue;

  RDom rk(0, int(paddedDepth / lanes), "rk");
  Func partial("partial");
  partial(lane, n, m) = 0.0f;
  partial(lane, n, m) += xc(rk * lanes + lane, m) * wc(rk * lanes + lane, n);
  RDom rl(0, lanes, "rl");
  Func acc("acc");
  if (spec.hasBias) {
    arguments.push_back(bias);
    acc(n, m) = bias(min(n, int(spec.width) - 1));
  } else {
    acc(n, m) = 0.0f;
  }
  acc(n, m) += partial(rl, n, m);
  Expr value = applyActivation(spec.activation, acc(n, m));
  if (spec.hasResidual) {
    arguments.push_back(residual);
    value += residual(n, m);
  }
  Func out("linear");
  out(n, m) = value;
  if (spec.autoschedule)
    return {out, arguments};

  // A micro_m x micro_n tile of outputs keeps micro_m·micro_n vector
  // accumulators in registers across K. Within a block of block_m rows
  // consecutive tiles walk down the rows (the same rows of W), then along
  // N; groups of tiles run in parallel, so one row (decode) still spreads
  // over every core. The epilogue is applied to micro_n-wide vectors.
  int microM = int(spec.tile.get("micro_m", 3));
  int microN = int(spec.tile.get("micro_n", 3));
  Var no("no"), mo("mo"), ni("ni"), mi("mi"), tile("tile"), task("task");
  Var mb("mb"), moi("moi");
  int64_t blockM = spec.tile.get("block_m", 0);
  out.tile(n, m, no, mo, ni, mi, microN, microM, TailStrategy::GuardWithIf);
  if (blockM > 0) {
    // Never more row tiles per block than there are rows (one row, decode:
    // a block of one tile).
    Expr rowTiles = (out.output_buffer().dim(1).extent() + microM - 1) / microM;
    Expr blockTiles =
        clamp(rowTiles, 1, int(std::max<int64_t>(1, blockM / microM)));
    out.split(mo, mb, moi, blockTiles, TailStrategy::GuardWithIf)
        .reorder(ni, mi, moi, no, mb)
        .fuse(moi, no, tile)
        .fuse(tile, mb, tile);
  } else {
    out.fuse(no, mo, tile);
  }
  out.split(tile, task, tile, int(spec.tile.get("tiles_per_task", 8)),
             TailStrategy::GuardWithIf)
      .parallel(task)
      .vectorize(ni)
      .unroll(mi);
  acc.compute_at(out, tile).bound_extent(n, microN).bound_extent(m, microM);
  // The lanes of each accumulator are summed with a vector reduction.
  acc.update().atomic().vectorize(rl).unroll(n).unroll(m);
  partial.compute_at(out, tile)
      .bound_extent(n, microN)
      .bound_extent(m, microM)
      .vectorize(lane)
      .unroll(n)
      .unroll(m);
  partial.update()
      .reorder(lane, n, m, rk)
      .vectorize(lane)
      .unroll(n)
      .unroll(m);
  return {out, arguments};
}

} // namespace

BuiltKernel detail::layerNormAlgorithm(const KernelSpec &spec) {
  ImageParam x(Float(32), 2, "x");
  ImageParam residual(Float(32), 2, "residual");
  ImageParam gamma(Float(32), 1, "gamma");
  ImageParam beta(Float(32), 1, "beta");
  std::vector<ImageParam> arguments{x};
  Var w("w"), r("r");
  Func sum("sum_in");
  if (spec.hasResidual) {
    arguments.push_back(residual);
    sum(w, r) = x(w, r) + residual(w, r);
  } else {
    sum(w, r) = x(w, r);
  }
  arguments.push_back(gamma);
  arguments.push_back(beta);
  float width = float(spec.width);
  RDom rw(0, int(spec.width), "rw");
  Func mean("mean"), variance("variance"), out("layer_norm");
  mean(r) = 0.0f;
  mean(r) += sum(rw, r);
  Expr mu = mean(r) / width;
  variance(r) = 0.0f;
  Expr centred = sum(rw, r) - mean(r) / width;
  variance(r) += centred * centred;
  Expr inverse = 1.0f / sqrt(variance(r) / width + float(spec.factor));
  out(w, r) = (sum(w, r) - mu) * inverse * gamma(w) + beta(w);
  return {out,
          arguments,
          {{"sum_in", sum}, {"mean", mean}, {"variance", variance}}};
}

namespace {

BuiltKernel layerNorm(const KernelSpec &spec) {
  BuiltKernel kernel = detail::layerNormAlgorithm(spec);
  if (spec.autoschedule)
    return kernel;
  // The row's sum x + residual is read three times (mean, variance,
  // output): keep it. Without a residual it is x itself, read in place.
  Var row = scheduleRows(kernel.output, Var("w"), Var("r"), spec);
  if (spec.hasResidual)
    kernel.stages["sum_in"].compute_at(kernel.output, row)
        .vectorize(Var("w"), lanesOf(spec), TailStrategy::GuardWithIf);
  // The two sums over the row: with a width that is a whole number of
  // vectors, each is a vector of partial sums (rfactor) and then one sum
  // across lanes, instead of a scalar loop over the width.
  const int lanes = lanesOf(spec);
  for (const char *name : {"mean", "variance"}) {
    Func sumOverRow = kernel.stages[name];
    sumOverRow.compute_at(kernel.output, row);
    if (spec.width % lanes != 0)
      continue;
    RVar outer("rw_outer"), inner("rw_inner");
    Var lane("lane");
    Func partial = sumOverRow.update()
                       .split(sumOverRow.rvars(0)[0], outer, inner, lanes)
                       .rfactor(inner, lane);
    partial.compute_at(kernel.output, row).vectorize(lane);
    partial.update().vectorize(lane);
  }
  return kernel;
}

BuiltKernel attention(const KernelSpec &spec) {
  ImageParam q(Float(32), 4, "q");
  ImageParam k(Float(32), 4, "k");
  ImageParam v(Float(32), 4, "v");
  ImageParam keyPadding(Int(64), 2, "key_padding");
  std::vector<ImageParam> arguments{q, k, v};
  Var e("e"), h("h"), qq("qq"), b("b"), kk("kk"), qi("qi"), qo("qo"), d("d");

  // Queries in blocks of query_block: query qo·QB + qi. The block index is
  // a dimension of its own so that the causal bound below can name it
  // (HALIDE14_NOTES.md): bounds inference then trims each block's scores.
  // Every per-block Func keeps the query innermost (qi first), so the
  // softmax vectorises across queries and Q·Kᵀ is a broadcast micro-kernel:
  // a vector of queries times one key value per FMA.
  const int queryBlock = int(spec.tile.get("query_block", 16));
  Expr query = qo * queryBlock + qi;
  Expr queries = q.dim(2).extent(), keys = k.dim(2).extent();
  // Blocks and micro tiles past the ends read the last query / key row.
  Expr queryIn = clamp(query, 0, queries - 1);
  Expr keyIn = clamp(kk, 0, keys - 1);

  // Q of one block, transposed and pre-scaled: (qi, d).
  Func queryT("query_t");
  queryT(qi, d, qo, h, b) = q(d, h, queryIn, b) * float(spec.factor);
  RDom rd(0, int(spec.headDim), "rd");
  Func dot("dot"), score("score");
  dot(qi, kk, qo, h, b) = 0.0f;
  // Keys and values copied once per call into one contiguous block per
  // head. In Q, K and V every row of a head is H·Dh floats from the next
  // (3 KiB for GPT-2), so a head's rows map to a quarter of L2's sets and
  // evicted each other at S >= 1024; and the micro-kernels then read each
  // key row at a fixed offset, without a clamped index per load.
  Func keyRows("key_rows"), valueRows("value_rows");
  keyRows(d, kk, h, b) = k(d, h, keyIn, b);
  valueRows(e, kk, h, b) = v(e, h, keyIn, b);
  dot(qi, kk, qo, h, b) += queryT(qi, rd, qo, h, b) * keyRows(rd, kk, h, b);
  score(qi, kk, qo, h, b) = dot(qi, kk, qo, h, b);

  // Whether query `query` may attend to key `key`.
  if (spec.padding)
    arguments.push_back(keyPadding);
  auto allowedAt = [&](Expr key) {
    Expr allowed = cast<bool>(1);
    if (spec.causal)
      allowed = allowed && key <= query;
    if (spec.window > 0)
      allowed = allowed && (spec.causal ? query - key < int(spec.window)
                                        : abs(query - key) < int(spec.window));
    if (spec.padding)
      allowed = allowed && keyPadding(clamp(key, 0, keys - 1), b) != 0;
    return allowed;
  };

  // With a causal mask the keys of block qo stop at its last query: key
  // blocks above the diagonal are never computed. Within the diagonal
  // block `allowed` masks the rest.
  RDom rk(0, keys, "rk");
  if (spec.causal)
    rk.where(rk < (qo + 1) * queryBlock);
  // Masking is arithmetic, never a select around a Func call, which would
  // change bounds inference (HALIDE14_NOTES.md, pitfall 1).
  Func rowMax("row_max"), probs("probs"), rowSum("row_sum"),
      weighted("weighted");
  rowMax(qi, qo, h, b) = negativeInfinity();
  rowMax(qi, qo, h, b) =
      max(rowMax(qi, qo, h, b),
          score(qi, rk, qo, h, b) +
              select(allowedAt(rk), 0.0f, negativeInfinity()));
  // A query whose keys are all masked has row_max = -inf: it subtracts 0,
  // its probabilities are all 0 and its output zeros (never exp(nan)).
  // exp's argument is clamped at 0: masked scores may exceed the maximum.
  Expr shift = select(rowMax(qi, qo, h, b) > negativeInfinity(),
                      rowMax(qi, qo, h, b), 0.0f);
  probs(qi, kk, qo, h, b) =
      exp(min(score(qi, kk, qo, h, b) - shift, 0.0f)) *
      select(allowedAt(kk), 1.0f, 0.0f);
  rowSum(qi, qo, h, b) = 0.0f;
  rowSum(qi, qo, h, b) += probs(qi, rk, qo, h, b);
  weighted(e, qi, qo, h, b) = 0.0f;
  weighted(e, qi, qo, h, b) += probs(qi, rk, qo, h, b) * valueRows(e, rk, h, b);
  Func blockOut("block_out"), out("attention");
  Expr total = rowSum(qi, qo, h, b);
  blockOut(e, qi, qo, h, b) =
      select(total > 0.0f, weighted(e, qi, qo, h, b) / total, 0.0f);
  out(e, h, qq, b) = blockOut(e, qq % queryBlock, qq / queryBlock, h, b);

  if (spec.autoschedule)
    return {out, arguments};
  // One task per (batch, query block, head); the block's scores and
  // probabilities live in per-task scratch.
  const int lanes = lanesOf(spec);
  const int scoreKeys = int(spec.tile.get("micro_k", 6));
  const int pvQueries = int(spec.tile.get("pv_queries", 4));
  // The P·V tile's width must divide the value head size (vector loads of
  // V never leave a head).
  const int valueDim = int(spec.valueHeadDim);
  int pvLanes = lanes;
  while (pvLanes > 1 && valueDim % pvLanes != 0)
    pvLanes /= 2;
  int pvWidth = int(spec.tile.get("pv_width", 4 * lanes));
  pvWidth = std::max(pvLanes, std::min(pvWidth, valueDim) / pvLanes * pvLanes);
  while (valueDim % pvWidth != 0)
    pvWidth -= pvLanes;
  Var qiLoop("qi_loop"), qoLoop("qo_loop"), task("task"), task2("task2");
  out.split(qq, qoLoop, qiLoop, queryBlock, TailStrategy::GuardWithIf)
      .reorder(e, qiLoop, qoLoop, h, b)
      .fuse(qoLoop, h, task)
      .fuse(task, b, task2)
      .parallel(task2)
      .vectorize(e, pvLanes, TailStrategy::GuardWithIf);
  // The block's output, pvWidth x pvQueries at a time.
  Var eo("eo"), ei("ei"), qio("qio"), qii("qii");
  blockOut.compute_at(out, task2)
      .bound_extent(qi, queryBlock)
      .tile(e, qi, eo, qio, ei, qii, pvWidth, pvQueries,
            TailStrategy::GuardWithIf)
      .vectorize(ei, pvLanes)
      .unroll(ei)
      .unroll(qii);
  queryT.compute_at(out, task2).vectorize(qi, lanes);
  // A decode step's one query reads each key once: a copy would only add
  // traffic (stage_kv = 0 in its plan; the rows are then read in place).
  Var headTask("head_task");
  if (spec.tile.get("stage_kv", 1)) {
    for (Func rows : {keyRows, valueRows})
      rows.compute_root()
          .reorder(rows.args()[0], rows.args()[1], b, h)
          .fuse(h, b, headTask)
          .parallel(headTask)
          .vectorize(rows.args()[0], lanes, TailStrategy::GuardWithIf);
  }
  // Q·Kᵀ: a queryBlock x scoreKeys tile of dots stays in registers over the
  // head dimension.
  Var ko("ko"), ki("ki");
  score.compute_at(out, task2)
      .split(kk, ko, ki, scoreKeys)
      .reorder(qi, ki, ko)
      .vectorize(qi, lanes)
      .unroll(ki);
  dot.compute_at(score, ko)
      .bound_extent(qi, queryBlock)
      .bound_extent(kk, scoreKeys)
      .vectorize(qi, lanes)
      .unroll(kk);
  dot.update().reorder(qi, kk, rd).vectorize(qi, lanes).unroll(qi).unroll(kk);
  rowMax.compute_at(out, task2).vectorize(qi, lanes);
  rowMax.update().vectorize(qi, lanes);
  probs.compute_at(out, task2).vectorize(qi, lanes);
  rowSum.compute_at(out, task2).vectorize(qi, lanes);
  rowSum.update().vectorize(qi, lanes);
  // P·V: pvQueries x pvWidth accumulators in registers over the keys.
  weighted.compute_at(blockOut, eo)
      .bound_extent(e, pvWidth)
      .bound_extent(qi, pvQueries)
      .vectorize(e, pvLanes)
      .unroll(e)
      .unroll(qi);
  weighted.update()
      .reorder(e, qi, rk)
      .vectorize(e, pvLanes)
      .unroll(e)
      .unroll(qi);
  return {out, arguments};
}

} // namespace

BuiltKernel detail::build(const KernelSpec &spec) {
  if (spec.gpu)
    return detail::buildGpu(spec);
  switch (spec.kind) {
  case KernelKind::Embedding:
    return embedding(spec);
  case KernelKind::Positions:
    return positions(spec);
  case KernelKind::Scale:
  case KernelKind::Activation:
  case KernelKind::Add:
    return elementwise(spec);
  case KernelKind::Linear:
    return linear(spec);
  case KernelKind::LayerNorm:
    return layerNorm(spec);
  case KernelKind::Attention:
    return attention(spec);
  }
  return elementwise(spec);
}

Expr detail::activation(ActivationFn fn, Expr x) {
  return applyActivation(fn, x);
}

std::string halideTargetFor(const std::string &targetName, bool withRuntime) {
  if (std::string gpu = detail::gpuHalideTargetFor(targetName); !gpu.empty())
    return withRuntime ? gpu : gpu + "-no_runtime";
  std::string target = "x86-64-linux-sse41-avx-f16c-fma-avx2";
  if (targetName == "x86-64-avx512")
    target += "-avx512-avx512_skylake";
  return withRuntime ? target : target + "-no_runtime";
}

/// The pipeline ready to lower: with tfmc's schedule, or estimates set and
/// Adams2019's schedule applied.
std::pair<Pipeline, std::vector<Argument>>
lowerable(const KernelSpec &spec, const std::string &halideTarget) {
  BuiltKernel kernel = detail::build(spec);
  std::vector<Argument> arguments(kernel.arguments.begin(),
                                  kernel.arguments.end());
  Pipeline pipeline(kernel.output);
  if (!spec.autoschedule)
    return {pipeline, arguments};
  if (spec.estimates.size() != kernel.arguments.size() + 1)
    throw CompileError("the autoscheduler needs an estimate per buffer");
  for (size_t i = 0; i < kernel.arguments.size(); ++i) {
    ImageParam &param = kernel.arguments[i];
    for (int d = 0; d < param.dimensions(); ++d)
      param.dim(d).set_estimate(0, int(spec.estimates[i][d]));
  }
  Region region;
  for (int64_t extent : spec.estimates.back())
    region.push_back(Range(0, int(extent)));
  kernel.output.set_estimates(region);
  static const bool loaded = [] {
    load_plugin("/usr/lib/x86_64-linux-gnu/halide14/"
                "libautoschedule_adams2019.so");
    return true;
  }();
  (void)loaded;
  Target target(halideTarget);
  pipeline.auto_schedule("Adams2019", target,
                         MachineParams(/*parallelism=*/2,
                                       /*last_level_cache_size=*/16 << 20,
                                       /*balance=*/40));
  return {pipeline, arguments};
}

bool compileKernel(const KernelSpec &spec, const std::string &name,
                   const std::string &halideTarget,
                   const std::string &objectPath, std::string &error) {
  try {
    try {
      auto [pipeline, arguments] = lowerable(spec, halideTarget);
      pipeline.compile_to_object(objectPath, arguments, name,
                                 Target(halideTarget));
    } catch (const Halide::Error &e) {
      if (!spec.autoschedule)
        throw;
      // A benchmark peer that cannot schedule a kernel leaves that kernel
      // to the tile plan, so the others can still be compared.
      std::string message = e.what();
      for (char &c : message)
        if (c == '\n')
          c = ' ';
      std::fprintf(stderr,
                   "tfmc: warning: Adams2019 cannot schedule kernel %s (%s); "
                   "it uses its tile plan\n",
                   name.c_str(), message.c_str());
      KernelSpec planned = spec;
      planned.autoschedule = false;
      auto [pipeline, arguments] = lowerable(planned, halideTarget);
      pipeline.compile_to_object(objectPath, arguments, name,
                                 Target(halideTarget));
    }
    return true;
  } catch (const Halide::Error &e) {
    error = "Halide failed to compile kernel " + name + ": " + e.what();
    for (char &c : error)
      if (c == '\n')
        c = ' ';
    return false;
  }
}

bool compileRuntime(const std::string &halideTarget,
                    const std::string &objectPath, std::string &error) {
  try {
    compile_standalone_runtime(objectPath, Target(halideTarget));
    return true;
  } catch (const Halide::Error &e) {
    error = std::string("Halide failed to compile its runtime: ") + e.what();
    return false;
  }
}

std::string describeKernel(const KernelSpec &spec, const std::string &name,
                           const std::string &halideTarget) {
  auto [pipeline, arguments] = lowerable(spec, halideTarget);
  std::string loopNest;
  if (spec.gpu)
    loopNest = "// loop nest\n" + detail::gpuLoopNest(pipeline) + "\n";
  char path[] = "/tmp/tfmc-stmt-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return "(cannot create a temporary file for the lowered statement)\n";
  close(fd);
  pipeline.compile_to_lowered_stmt(path, arguments, StmtOutputFormat::Text,
                                   Target(halideTarget));
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::remove(path);
  return loopNest + text.str();
}

const char *kernelGeneratorStamp() { return __DATE__ " " __TIME__; }

} // namespace tfmc::codegen
