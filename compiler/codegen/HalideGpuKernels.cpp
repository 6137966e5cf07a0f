//===- HalideGpuKernels.cpp - tfmc's kernels on CUDA GPUs -----------------===//
//
// GPU schedules read from the GPU tile plans of passes/Tile.cpp (keys
// threads, block_m/n/k, thread_m/n, query_block, key_block), and the GPU
// forms of the two kernels whose algorithm differs from the CPU's:
//
//  - GEMM (linear): a thread block is one warp computing (32·thread_n) x
//    thread_m outputs, each lane a thread_n x thread_m tile of accumulators
//    in registers; x and W are staged through shared memory block_k columns
//    of depth at a time (the warp loads both slices). K past the end (when
//    block_k does not divide it) is guarded; reads past M and N are clamped
//    and their outputs never stored.
//  - Attention: one thread block (a warp) per (block of 32 queries, head,
//    batch), one query per lane, online softmax over key blocks
//    (HALIDE14_NOTES.md: the two-pass score rows of the CPU kernel would
//    not fit in shared memory). Each key block's K and V rows are staged in
//    shared memory; each lane computes the block's scores, their max, sum
//    and value-weighted sum, then rescales its running (max, sum,
//    accumulator) Tuple, which is striped across the lanes (registers). With a causal
//    (or window) mask the reduction over key blocks has a bound that names
//    the query block (RDom::where), so key blocks that are masked for every
//    query of the block are never visited.
//
// Elementwise, embedding, positions and layer_norm share their algorithm
// with the CPU kernels (HalideKernels.cpp) and only add a schedule here.
//
// Halide 14 generates fp32 SIMT code (no tensor cores) as PTX, which the
// CUDA driver loads (and JIT-compiles for newer GPUs) at run time.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/HalideKernelsInternal.h"

#include <algorithm>
#include <limits>

namespace Halide::Internal {
// Exported by libHalide (PrintLoopNest.h), not declared by Halide.h.
std::string print_loop_nest(const std::vector<Function> &outputs);
} // namespace Halide::Internal

namespace tfmc::codegen::detail {
namespace {

using namespace Halide;

Expr negativeInfinity() {
  return Expr(-std::numeric_limits<float>::infinity());
}

/// Set while a kernel is built for host emulation (buildGpu's
/// emulateOnHost): the GPU directives below then leave their loops serial
/// and their allocations ordinary, so the same algorithm, loop structure,
/// bounds and compute_at levels run on the CPU, where tests check the
/// numbers. Barriers, shared and register memory are what only a GPU run
/// checks.
thread_local bool emulating = false;

template <typename... Vars> void blocks(Stage stage, Vars... vars) {
  if (!emulating)
    stage.gpu_blocks(vars...);
}

template <typename... Vars> void threads(Stage stage, Vars... vars) {
  if (!emulating)
    stage.gpu_threads(vars...);
}

template <typename... Vars> void lanes(Stage stage, Vars... vars) {
  if (!emulating)
    stage.gpu_lanes(vars...);
}

/// Registers for a Func computed at the block level: whole in every thread
/// (local memory when indexed by the thread), striped across the lanes of
/// a warp when its innermost storage dimension is the lane.
void inRegisters(Func f) {
  if (!emulating)
    f.store_in(MemoryType::Register);
}

int planned(const KernelSpec &spec, const char *key, int64_t fallback) {
  return int(spec.tile.get(key, fallback));
}

int powerOfTwoAtLeast(int64_t n) {
  int p = 1;
  while (p < n && p < (1 << 20))
    p *= 2;
  return p;
}

/// (w, r) outputs on a grid of tx x ty thread blocks, tx along the
/// contiguous w so that each warp's loads and stores are coalesced.
void scheduleGrid(Func out, Var w, Var r, int64_t width, int threads) {
  int tx = std::min(threads, std::max(1, powerOfTwoAtLeast(width)));
  int ty = std::max(1, threads / tx);
  Var wo("wo"), ro("ro"), wi("wi"), ri("ri");
  if (emulating)
    out.tile(w, r, wo, ro, wi, ri, tx, ty, TailStrategy::GuardWithIf);
  else
    out.gpu_tile(w, r, wo, ro, wi, ri, tx, ty, TailStrategy::GuardWithIf);
}

/// Kernels over (D, S, B): a grid over D and the tokens (s, b).
BuiltKernel gridOverTokens(BuiltKernel kernel, const KernelSpec &spec) {
  Var d("d"), s("s"), b("b"), sb("sb");
  kernel.output.fuse(s, b, sb);
  scheduleGrid(kernel.output, d, sb, spec.width, planned(spec, "threads", 256));
  return kernel;
}

BuiltKernel gpuEmbedding(const KernelSpec &spec) {
  return gridOverTokens(embeddingAlgorithm(spec), spec);
}

BuiltKernel gpuPositions(const KernelSpec &spec) {
  // The sinusoid is computed inline, per element, in double (as on the CPU).
  return gridOverTokens(positionsAlgorithm(spec), spec);
}

BuiltKernel gpuElementwise(const KernelSpec &spec) {
  BuiltKernel kernel = elementwiseAlgorithm(spec);
  scheduleGrid(kernel.output, Var("w"), Var("r"), spec.width,
               planned(spec, "threads", 256));
  return kernel;
}

/// One thread block per row: the row's input (with the residual) is staged
/// in shared memory; mean and variance are reduced in two steps, `threads`
/// partial sums in parallel (rfactor) and then those partials.
BuiltKernel gpuLayerNorm(const KernelSpec &spec) {
  BuiltKernel kernel = layerNormAlgorithm(spec);
  const int threadCount = planned(spec, "threads", 256);
  Func out = kernel.output;
  Func sum = kernel.stages.at("sum_in");
  Func mean = kernel.stages.at("mean");
  Func variance = kernel.stages.at("variance");
  Var w("w"), r("r"), wo("wo"), wi("wi"), u("u");

  out.bound(w, 0, int(spec.width))
      .split(w, wo, wi, threadCount, TailStrategy::GuardWithIf)
      .reorder(wo, wi, r);
  blocks(out, r);
  threads(out, wi);
  sum.compute_at(out, r)
      .split(w, wo, wi, threadCount, TailStrategy::GuardWithIf)
      .reorder(wo, wi);
  threads(sum, wi);
  for (Func total : {mean, variance}) {
    // The reduction's RDom is the only RVar of the update: split it into
    // `threads` strided lanes and reduce each lane on its own thread.
    RVar rw(total.update().get_schedule().rvars().front().var);
    RVar rwo("rwo"), rwi("rwi");
    Func partial = total.update()
                       .split(rw, rwo, rwi, threadCount,
                              TailStrategy::GuardWithIf)
                       .rfactor(rwi, u);
    partial.compute_at(out, r);
    threads(partial, u);
    threads(partial.update(), u);
    // The `threads` partials are summed by one thread.
    total.compute_at(out, r);
  }
  return kernel;
}

BuiltKernel gpuLinear(const KernelSpec &spec) {
  ImageParam x(Float(32), 2, "x");
  ImageParam w(Float(32), 2, "w");
  ImageParam bias(Float(32), 1, "bias");
  ImageParam residual(Float(32), 2, "residual");
  std::vector<ImageParam> arguments{x, w};
  Var n("n"), m("m"), k("k"), row("row");

  const int depth = int(spec.inWidth);
  // Staged slices past K, M or N read the last column or row (clamped):
  // their products are never summed (K is guarded) or never stored.
  Func xTile("x_tile"), wTile("w_tile");
  xTile(k, row) = x(clamp(k, 0, depth - 1), clamp(row, 0, x.dim(1).extent() - 1));
  wTile(k, row) = w(clamp(k, 0, depth - 1), clamp(row, 0, w.dim(1).extent() - 1));
  RDom rk(0, depth, "rk");
  Func prod("prod");
  prod(n, m) = 0.0f;
  prod(n, m) += xTile(rk, m) * wTile(rk, n);
  Expr value = prod(n, m);
  if (spec.hasBias) {
    arguments.push_back(bias);
    value += bias(min(n, int(spec.width) - 1));
  }
  value = activation(spec.activation, value);
  if (spec.hasResidual) {
    arguments.push_back(residual);
    value += residual(n, m);
  }
  Func out("linear");
  out(n, m) = value;

  // One warp per thread block. Halide 14 keeps a block-level register
  // allocation whole in every thread (indexed by the thread id it lives in
  // local memory), except across the lanes of a warp, where it is striped:
  // so the accumulators of a block belong to one warp, and lane l holds
  // columns n = nb·block_n + j·32 + l (j < thread_n) of the block's
  // thread_m rows: thread_n x thread_m accumulators in registers per lane
  // (the plan's block_n = 32·thread_n, block_m = thread_m, threads = 32).
  const int warp = 32;
  const int columnsPerLane = planned(spec, "thread_n", 4);
  const int blockM = planned(spec, "thread_m", 4);
  const int blockN = warp * columnsPerLane;
  const int blockK = planned(spec, "block_k", 16);

  Var nb("nb"), mb("mb"), ni("ni"), mi("mi"), nr("nr"), lane("lane");
  out.tile(n, m, nb, mb, ni, mi, blockN, blockM, TailStrategy::GuardWithIf)
      .split(ni, nr, lane, warp)
      .reorder(lane, nr, mi, nb, mb)
      .unroll(nr)
      .unroll(mi);
  blocks(out, nb, mb);
  lanes(out, lane);
  prod.compute_at(out, nb)
      .bound_extent(n, blockN)
      .bound_extent(m, blockM)
      .split(n, nr, lane, warp)
      .reorder(lane, nr, m)
      .unroll(nr)
      .unroll(m);
  inRegisters(prod);
  lanes(prod, lane);
  RVar rko("rko"), rki("rki");
  prod.update()
      .split(rk, rko, rki, blockK, TailStrategy::GuardWithIf)
      .split(n, nr, lane, warp)
      .reorder(lane, nr, m, rki, rko)
      .unroll(nr)
      .unroll(m);
  lanes(prod.update(), lane);
  // Slices of block_k columns of x and W in shared memory, loaded by the
  // whole warp (consecutive lanes read consecutive k), stored k-outermost
  // so that consecutive lanes read consecutive columns of W (no bank
  // conflicts) and one broadcast row of x.
  auto stage = [&](Func tile, int rows) {
    Var f("f"), fo("fo"), fl("fl");
    tile.compute_at(prod, rko)
        .bound_extent(k, blockK)
        .bound_extent(row, rows)
        .reorder_storage(row, k)
        .fuse(k, row, f)
        .split(f, fo, fl, warp, TailStrategy::GuardWithIf)
        .reorder(fo, fl);
    lanes(tile, fl);
  };
  stage(xTile, blockM);
  stage(wTile, blockN);
  return {out, arguments, {}};
}

BuiltKernel gpuAttention(const KernelSpec &spec) {
  ImageParam q(Float(32), 4, "q");
  ImageParam k(Float(32), 4, "k");
  ImageParam v(Float(32), 4, "v");
  ImageParam keyPadding(Int(64), 2, "key_padding");
  std::vector<ImageParam> arguments{q, k, v};
  if (spec.padding)
    arguments.push_back(keyPadding);
  Var e("e"), h("h"), qq("qq"), b("b"), kk("kk"), qi("qi"), qo("qo"), d("d"),
      j("j");

  // One warp per thread block, one query per lane: the running softmax
  // state of the block's queries is striped across the warp's lanes (a
  // block-level register allocation is kept whole in every thread
  // otherwise): query blocks of 32, as the plan says.
  const int queryBlock = 32;
  // Each lane keeps its key block's scores and probabilities (2 x
  // key_block floats): blocks of more than 32 keys made ptxas spill
  // (255 registers at key_block 128, head size 16).
  const int keyBlock = std::min(planned(spec, "key_block", 32), 32);
  const int headDim = int(spec.headDim), valueDim = int(spec.valueHeadDim);
  Expr queries = q.dim(2).extent(), keys = k.dim(2).extent();
  Expr query = qo * queryBlock + qi;
  const Expr minusInf = negativeInfinity();

  // The block's rows past the last query (or key) read the last one; their
  // results are never stored (or are masked out).
  Func queryRow("query_row"), keyTile("key_tile"), valueTile("value_tile");
  queryRow(d, qi, qo, h, b) =
      q(d, h, min(query, queries - 1), b) * float(spec.factor);
  keyTile(d, kk, h, b) = k(d, h, min(kk, keys - 1), b);
  valueTile(e, kk, h, b) = v(e, h, min(kk, keys - 1), b);

  RDom rd(0, headDim, "rd");
  Func score("score");
  score(kk, qi, qo, h, b) = 0.0f;
  score(kk, qi, qo, h, b) += queryRow(rd, qi, qo, h, b) * keyTile(rd, kk, h, b);

  // Whether query `query` may attend to key `key` (every key block but the
  // last is whole; the last one's keys past the end are masked).
  auto allowedAt = [&](Expr key) {
    Expr allowed = key < keys;
    if (spec.causal)
      allowed = allowed && key <= query;
    if (spec.window > 0)
      allowed = allowed && (spec.causal ? query - key < int(spec.window)
                                        : abs(query - key) < int(spec.window));
    if (spec.padding)
      allowed = allowed &&
                keyPadding(min(key, keyPadding.dim(0).extent() - 1), b) != 0;
    return allowed;
  };

  // One key block j of one query: its max, probabilities relative to that
  // max, their sum, and the value-weighted sum.
  RDom rkb(0, keyBlock, "rkb");
  Expr key = j * keyBlock + rkb;
  Func blockMax("block_max"), prob("prob"), blockSum("block_sum"),
      blockAcc("block_acc");
  blockMax(qi, j, qo, h, b) = minusInf;
  blockMax(qi, j, qo, h, b) =
      max(blockMax(qi, j, qo, h, b),
          score(key, qi, qo, h, b) + select(allowedAt(key), 0.0f, minusInf));
  Expr ownMax = blockMax(qi, kk / keyBlock, qo, h, b);
  prob(kk, qi, qo, h, b) =
      select(allowedAt(kk) && ownMax > minusInf,
             exp(score(kk, qi, qo, h, b) - ownMax), 0.0f);
  blockSum(qi, j, qo, h, b) = 0.0f;
  blockSum(qi, j, qo, h, b) += prob(key, qi, qo, h, b);
  blockAcc(e, qi, j, qo, h, b) = 0.0f;
  blockAcc(e, qi, j, qo, h, b) +=
      prob(key, qi, qo, h, b) * valueTile(e, key, h, b);

  // Online softmax over the key blocks: a running (max, sum, accumulator)
  // rescaled whenever the max grows. A block with every key masked has
  // max -inf and contributes nothing (never exp(nan)).
  RDom rj(0, (keys + keyBlock - 1) / keyBlock, "rj");
  Expr firstQuery = qo * queryBlock, lastQuery = qo * queryBlock + queryBlock - 1;
  if (spec.causal)
    rj.where(rj * keyBlock <= lastQuery);
  if (spec.window > 0) {
    rj.where(rj * keyBlock + keyBlock - 1 > firstQuery - int(spec.window));
    if (!spec.causal)
      rj.where(rj * keyBlock < lastQuery + int(spec.window));
  }
  Func state("state");
  state(e, qi, qo, h, b) = Tuple(minusInf, 0.0f, 0.0f);
  Expr oldMax = state(e, qi, qo, h, b)[0];
  Expr oldSum = state(e, qi, qo, h, b)[1];
  Expr oldAcc = state(e, qi, qo, h, b)[2];
  Expr newBlockMax = blockMax(qi, rj, qo, h, b);
  Expr newMax = max(oldMax, newBlockMax);
  Expr keepOld = select(oldMax > minusInf, exp(oldMax - newMax), 0.0f);
  Expr keepNew = select(newBlockMax > minusInf, exp(newBlockMax - newMax), 0.0f);
  state(e, qi, qo, h, b) =
      Tuple(newMax, oldSum * keepOld + blockSum(qi, rj, qo, h, b) * keepNew,
            oldAcc * keepOld + blockAcc(e, qi, rj, qo, h, b) * keepNew);

  // A query whose keys are all masked has sum 0: its output is zeros.
  Func out("attention");
  Expr block = qq / queryBlock, inBlock = qq % queryBlock;
  Expr total = state(e, inBlock, block, h, b)[1];
  out(e, h, qq, b) =
      select(total > 0.0f, state(e, inBlock, block, h, b)[2] / total, 0.0f);

  Var qoLoop("qo_loop"), qiLoop("qi_loop");
  // Queries from 0 (as the plan lays them out): lane qi of block qo then
  // reads back its own state, which keeps it striped across the lanes.
  out.bound(e, 0, valueDim)
      .bound(qq, 0, queries)
      .split(qq, qoLoop, qiLoop, queryBlock, TailStrategy::GuardWithIf)
      .reorder(e, qiLoop, qoLoop, h, b);
  blocks(out, qoLoop, h, b);
  lanes(out, qiLoop);
  // Stored query-innermost: lane qi's values are every 32nd.
  state.compute_at(out, qoLoop)
      .bound(e, 0, valueDim)
      .bound_extent(qi, queryBlock)
      .bound_extent(qo, 1)
      .bound_extent(h, 1)
      .bound_extent(b, 1)
      .reorder_storage(qi, e, qo, h, b);
  inRegisters(state);
  lanes(state, qi);
  state.update().reorder(e, qi, rj);
  lanes(state.update(), qi);
  // K and V rows of the key block, in shared memory, loaded by the whole
  // warp (consecutive lanes read consecutive elements of a row).
  auto stage = [&](Func tile, Var inner) {
    Var f("f"), fo("fo"), fi("fi");
    tile.compute_at(state, rj)
        .bound_extent(kk, keyBlock)
        .fuse(inner, kk, f)
        .split(f, fo, fi, queryBlock, TailStrategy::GuardWithIf)
        .reorder(fo, fi);
    lanes(tile, fi);
  };
  stage(keyTile, d);
  stage(valueTile, e);
  // Per lane (per query), per key block.
  queryRow.compute_at(state, qi);
  score.compute_at(state, qi);
  score.update().reorder(kk, rd);
  blockMax.compute_at(state, qi);
  prob.compute_at(state, qi);
  blockSum.compute_at(state, qi);
  blockAcc.compute_at(state, qi);
  blockAcc.update().reorder(e, rkb);
  return {out, arguments, {}};
}

} // namespace

BuiltKernel buildGpu(const KernelSpec &spec, bool emulateOnHost) {
  struct Emulation {
    bool saved = emulating;
    explicit Emulation(bool on) { emulating = on; }
    ~Emulation() { emulating = saved; }
  } emulation(emulateOnHost);
  switch (spec.kind) {
  case KernelKind::Embedding:
    return gpuEmbedding(spec);
  case KernelKind::Positions:
    return gpuPositions(spec);
  case KernelKind::Scale:
  case KernelKind::Activation:
  case KernelKind::Add:
    return gpuElementwise(spec);
  case KernelKind::Linear:
    return gpuLinear(spec);
  case KernelKind::LayerNorm:
    return gpuLayerNorm(spec);
  case KernelKind::Attention:
    return gpuAttention(spec);
  }
  return gpuElementwise(spec);
}

std::string gpuLoopNest(const Halide::Pipeline &pipeline) {
  std::vector<Internal::Function> outputs;
  for (const Func &output : pipeline.outputs())
    outputs.push_back(output.function());
  return Internal::print_loop_nest(outputs);
}

} // namespace tfmc::codegen::detail

const char *tfmc::codegen::gpuKernelGeneratorStamp() {
  return __DATE__ " " __TIME__;
}

namespace tfmc::codegen::detail {

std::string gpuHalideTargetFor(const std::string &targetName) {
  // PTX for compute capability N runs on GPUs of capability >= N only, so
  // sm_80 GPUs (A100) get capability 80; Halide 14 generates at most 86,
  // which sm_90 GPUs (H100) JIT-compile from the PTX.
  // The host side only launches kernels: baseline x86-64.
  if (targetName == "cuda" || targetName == "cuda-sm80")
    return "x86-64-linux-sse41-cuda-cuda_capability_80";
  if (targetName == "cuda-sm90")
    return "x86-64-linux-sse41-cuda-cuda_capability_86";
  return "";
}

} // namespace tfmc::codegen::detail
