//===- Attention.cpp - Fused masked multi-head attention ------------------===//
//
// CPU: queries in blocks of query_block, one parallel task per (batch,
// head, query block); the block's scores and probabilities live in per-task
// scratch (two-pass softmax). Every per-block Func keeps the query innermost,
// so the softmax vectorises across queries and Q·Kᵀ is a broadcast
// micro-kernel: a vector of queries times one key value per FMA.
//
// GPU: one thread block (a warp) per (block of query_block queries, head,
// batch), one query per lane, online softmax over key blocks (the two-pass
// score rows of the CPU kernel would not fit in shared memory). Each key
// block's K and V rows are staged in shared memory; each lane computes the
// block's scores, their max, sum and value-weighted sum, then rescales its
// running (max, sum, accumulator) Tuple, which is striped across the lanes
// (registers).
//
// Both skip key blocks that are masked for every query of a query block
// (causal, window) with RDom::where over a bound that names the query
// block: a predicate over outer loop variables is what lets bounds
// inference trim the reduction and its producers' scratch.
//
// Grouped-query attention: query head h reads K/V head h / (H / Hkv), so
// the K/V heads are read (and staged) once, never repeated in memory. A
// grouped-query decode step's plan (head_block) makes the query heads of
// one K/V head the block instead, at one position: a task per sequence,
// position and K/V head reads each K/V row once for its group. In a
// decode step's self-attention the queries are the newest positions
// (queries_at_end): query i is at position Sk - Sq + i, which the causal
// and window masks and their block skipping compare with the keys.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Common.h"
#include "support/PlanFormat.h"

#include <algorithm>

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;
using target::CpuAttentionPlan;
using target::GpuAttentionPlan;

BuiltKernel algorithm(const KernelSpec &spec) {
  ImageParam q(Float(32), 4, "q");
  // bf16 or f16 when read from a narrowed KV cache: widened as copied.
  // A paged cache's keys and values are the whole block pool, (d, block
  // position, head, block): head-major blocks, a head's kBlockTokens rows
  // of a block in one run; key_rows (key, b) says which pool row (block ·
  // kBlockTokens + position) holds each sequence's key (-1: none, a
  // position left of its tokens).
  ImageParam k(spec.keyType, 4, "k");
  ImageParam v(spec.valueType, 4, "v");
  ImageParam keyRowsOf(Int(32), 2, "key_rows");
  ImageParam keyPadding(Int(64), 2, "key_padding");
  std::vector<ImageParam> arguments{q, k, v};
  if (spec.pagedCache)
    arguments.push_back(keyRowsOf);
  Var e("e"), h("h"), qq("qq"), b("b"), kk("kk"), qi("qi"), qo("qo"), d("d");

  // Queries in blocks of query_block: query qo·QB + qi. The block index is
  // a dimension of its own so that the causal bound below can name it.
  // With head_block (a grouped-query decode step) the block is instead the
  // group's query heads at position qo: query head h·G + qi of K/V head h.
  const CpuAttentionPlan &plan = spec.plan<CpuAttentionPlan>();
  const int queryBlock = int(plan.queryBlock);
  const bool headBlock = plan.headBlock;
  Expr query = headBlock ? Expr(qo) : qo * queryBlock + qi;
  Expr queries = q.dim(2).extent(),
       keys = spec.pagedCache ? keyRowsOf.dim(0).extent() : k.dim(2).extent();
  // Blocks and micro tiles past the ends read the last query / key row.
  Expr queryIn = clamp(query, 0, queries - 1);
  Expr keyIn = clamp(kk, 0, keys - 1);
  // Where query 0 is among the keys' positions.
  Expr firstPosition = spec.mask.queriesAtEnd ? keys - queries : Expr(0);
  // Query heads per K/V head (kv_heads 0: as many as query heads).
  const int group = spec.kvHeads > 0 ? int(spec.heads / spec.kvHeads) : 1;
  if (headBlock && queryBlock != group)
    throw CompileError("an attention plan whose block is a K/V head's query "
                       "heads needs query_block = heads / kv_heads");
  // The query head of block row qi, and the K/V head of block h.
  Expr queryHead = headBlock ? h * group + qi : Expr(h);
  Expr kvHead = headBlock ? Expr(h) : h / group;

  // Q of one block, transposed and pre-scaled: (qi, d).
  Func queryT("query_t");
  queryT(qi, d, qo, h, b) =
      q(d, queryHead, queryIn, b) * float(spec.attentionScale);
  RDom rd(0, int(spec.headDim), "rd");
  Func dot("dot"), score("score");
  dot(qi, kk, qo, h, b) = 0.0f;
  // Keys and values copied once per call into one contiguous block per
  // head. In Q, K and V every row of a head is H·Dh floats from the next
  // (3 KiB for GPT-2), so a head's rows map to a quarter of L2's sets and
  // evicted each other at S >= 1024; and the micro-kernels then read each
  // key row at a fixed offset, without a clamped index per load.
  Func keyRows("key_rows"), valueRows("value_rows");
  // Indexed by K/V head.
  // A paged cache's rows: each key's pool row, read once per task (the
  // micro-kernels then index a small scratch row, not key_rows).
  Func keyRow("key_row");
  if (spec.pagedCache) {
    keyRow(kk, b) = keyRowsOf(keyIn, b);
    constexpr int blockTokens = tfmc::plan::kBlockTokens;
    Expr poolRow =
        clamp(keyRow(kk, b), 0, k.dim(3).extent() * blockTokens - 1);
    Expr block = poolRow / blockTokens, position = poolRow % blockTokens;
    keyRows(d, kk, h, b) = cast<float>(k(d, position, h, block));
    valueRows(e, kk, h, b) = cast<float>(v(e, position, h, block));
  } else {
    keyRows(d, kk, h, b) = cast<float>(k(d, h, keyIn, b));
    valueRows(e, kk, h, b) = cast<float>(v(e, h, keyIn, b));
  }
  dot(qi, kk, qo, h, b) +=
      queryT(qi, rd, qo, h, b) * keyRows(rd, kk, kvHead, b);
  // Gemma 2's soft-capping of the scaled scores, before the masks.
  score(qi, kk, qo, h, b) =
      spec.softcap > 0 ? softcap(dot(qi, kk, qo, h, b), spec.softcap)
                       : Expr(dot(qi, kk, qo, h, b));

  if (spec.mask.padding)
    arguments.push_back(keyPadding);
  auto allowedAt = [&](Expr key) {
    Expr allowed = keyAllowed(spec.mask, firstPosition + query, key, keys,
                              keyPadding, b, /*keyMayPassEnd=*/false);
    if (spec.pagedCache)
      allowed = allowed && keyRow(key, b) >= 0;
    return allowed;
  };

  // With a causal mask the keys of block qo stop at its last query: key
  // blocks above the diagonal are never computed; a window also starts
  // them at its first query's window. Within those bounds `allowed` masks
  // the rest.
  RDom rk(0, keys, "rk");
  Expr firstQuery = firstPosition + (headBlock ? Expr(qo) : qo * queryBlock);
  Expr lastQuery = headBlock ? firstQuery : firstQuery + queryBlock - 1;
  if (spec.mask.causal)
    rk.where(rk <= lastQuery);
  if (spec.mask.window > 0) {
    rk.where(rk > firstQuery - int(spec.mask.window));
    if (!spec.mask.causal)
      rk.where(rk < lastQuery + int(spec.mask.window));
  }
  // Masking is arithmetic, never a select around a Func call, which would
  // change bounds inference (triangular, dynamically sized regions).
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
  weighted(e, qi, qo, h, b) +=
      probs(qi, rk, qo, h, b) * valueRows(e, rk, kvHead, b);
  Func blockOut("block_out"), out("attention");
  Expr total = rowSum(qi, qo, h, b);
  blockOut(e, qi, qo, h, b) =
      select(total > 0.0f, weighted(e, qi, qo, h, b) / total, 0.0f);
  if (headBlock)
    out(e, h, qq, b) = blockOut(e, h % group, qq, h / group, b);
  else
    out(e, h, qq, b) = blockOut(e, qq % queryBlock, qq / queryBlock, h, b);
  BuiltKernel kernel{out,
                     arguments,
                     {{"query_t", queryT},
                      {"dot", dot},
                      {"score", score},
                      {"key_rows", keyRows},
                      {"value_rows", valueRows},
                      {"row_max", rowMax},
                      {"probs", probs},
                      {"row_sum", rowSum},
                      {"weighted", weighted},
                      {"block_out", blockOut}},
                     {{"rd", rd}, {"rk", rk}}};
  if (spec.pagedCache)
    kernel.stages.emplace("key_row", keyRow);
  return kernel;
}

void cpuSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  const CpuAttentionPlan &plan = spec.plan<CpuAttentionPlan>();
  auto stage = [&](const char *name) { return kernel.stages.at(name); };
  Func out = kernel.output, queryT = stage("query_t"), dot = stage("dot"),
       score = stage("score"), keyRows = stage("key_rows"),
       valueRows = stage("value_rows"), rowMax = stage("row_max"),
       probs = stage("probs"), rowSum = stage("row_sum"),
       weighted = stage("weighted"), blockOut = stage("block_out");
  RDom rd = kernel.domains.at("rd"), rk = kernel.domains.at("rk");
  Var e("e"), h("h"), qq("qq"), b("b"), kk("kk"), qi("qi");
  const int queryBlock = int(plan.queryBlock);

  // One task per (batch, query block, head); the block's scores and
  // probabilities live in per-task scratch.
  const int lanes = int(plan.vector);
  // Queries are the vector lanes of the score stages: fewer when the block
  // is smaller (a decode step's block is its one query).
  const int queryLanes = std::min(lanes, queryBlock);
  const int scoreKeys = int(plan.microK);
  const int pvQueries = int(plan.pvQueries);
  // The P·V tile's width must divide the value head size (vector loads of
  // V never leave a head).
  const int valueDim = int(spec.valueHeadDim);
  int pvLanes = lanes;
  while (pvLanes > 1 && valueDim % pvLanes != 0)
    pvLanes /= 2;
  int pvWidth = int(plan.pvWidth);
  pvWidth = std::max(pvLanes, std::min(pvWidth, valueDim) / pvLanes * pvLanes);
  while (valueDim % pvWidth != 0)
    pvWidth -= pvLanes;
  Var qiLoop("qi_loop"), qoLoop("qo_loop"), task("task"), task2("task2");
  if (plan.headBlock) {
    // A task per (batch, position, K/V head): the group's query heads.
    Var ho("h_group"), hi("h_in_group");
    out.split(h, ho, hi, queryBlock, TailStrategy::GuardWithIf)
        .reorder(e, hi, ho, qq, b)
        .fuse(ho, qq, task)
        .fuse(task, b, task2);
  } else {
    out.split(qq, qoLoop, qiLoop, queryBlock, TailStrategy::GuardWithIf)
        .reorder(e, qiLoop, qoLoop, h, b)
        .fuse(qoLoop, h, task)
        .fuse(task, b, task2);
  }
  out.parallel(task2).vectorize(e, pvLanes, TailStrategy::GuardWithIf);
  // The block's output, pvWidth x pvQueries at a time.
  Var eo("eo"), ei("ei"), qio("qio"), qii("qii");
  blockOut.compute_at(out, task2)
      .bound_extent(qi, queryBlock)
      .tile(e, qi, eo, qio, ei, qii, pvWidth, pvQueries,
            TailStrategy::GuardWithIf)
      .vectorize(ei, pvLanes)
      .unroll(ei)
      .unroll(qii);
  queryT.compute_at(out, task2).vectorize(qi, queryLanes);
  // (Staged keys and values are copied at the root: their rows too.)
  if (spec.pagedCache && plan.stageKv)
    stage("key_row").compute_root();
  else if (spec.pagedCache)
    stage("key_row").compute_at(out, task2);
  // A decode step's one query reads each key once: a copy would only add
  // traffic (stage_kv false in its plan; the rows are then read in place).
  Var headTask("head_task");
  if (plan.stageKv) {
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
      .reorder(qi, ki, ko);
  if (queryBlock == 1)
    score.unroll(ki);
  else
    score.vectorize(qi, queryLanes).unroll(ki);
  dot.compute_at(score, ko)
      .bound_extent(qi, queryBlock)
      .bound_extent(kk, scoreKeys);
  if (queryBlock == 1 && int(spec.headDim) % lanes == 0) {
    // One query (a decode step): the head dimension in vectors. Each of
    // scoreKeys keys keeps a vector of partial sums (lane l: dims l + lanes
    // x i) over the head dimension, then one horizontal sum; the partial
    // sums are stored lane-innermost (else LLVM transposes them with
    // permutes, which measured slower than scalar dots). GPT-2 small's
    // decode step at 512 keys, Zen 5, 2 threads: attention 1.06-1.10 ms
    // against 1.21-1.27 with scalar dots (`NAME bench --entry decode_step
    // --seq 512`); it reads the f32 K/V rows near the read bandwidth.
    RVar rdo("rdo"), rdi("rdi");
    Var lane("lane");
    Func partial = dot.update().split(rd, rdo, rdi, lanes).rfactor(rdi, lane);
    dot.unroll(kk);
    dot.update().reorder(rdi, kk, qi).atomic().vectorize(rdi).unroll(kk);
    partial.compute_at(score, ko)
        .reorder_storage(lane, kk)
        .bound_extent(kk, scoreKeys)
        .vectorize(lane)
        .unroll(kk);
    partial.update().reorder(lane, kk, qi, rdo).vectorize(lane).unroll(kk);
    // From a narrowed (bf16 or f16) KV cache the rows are widened as they
    // are read, and the loads' latency, not the bandwidth, bounded the
    // step: each tile of scoreKeys keys prefetches the next tile's K rows,
    // and P·V each key's V row 8 keys ahead (Halide `prefetch`, rewritten to
    // prefetcht0 at link). GPT-2 small, a --max-batch 8 program with
    // --kv-cache-dtype bf16, decode step at batch 8 after 512 tokens, 2
    // threads, Sapphire Rapids: attention 1.24-1.26 -> 0.97-1.04 ms a
    // layer (batch 1 unchanged). f32 rows already stream at the read
    // bandwidth: there the prefetches cost 8-28 %, so they have none.
    // (A paged cache's rows are found through key_rows: Halide cannot
    // bound what a tile reads, so there is no prefetch.)
    if ((spec.keyType != Float(32) || spec.valueType != Float(32)) &&
        !spec.pagedCache)
      for (const ImageParam &argument : kernel.arguments) {
        if (argument.name() == "k")
          score.prefetch(argument, ko, ko, 1, PrefetchBoundStrategy::NonFaulting);
        if (argument.name() == "v")
          weighted.update().prefetch(argument, rk.x, rk.x, 8,
                                     PrefetchBoundStrategy::NonFaulting);
      }
  } else if (queryBlock == 1) {
    // One query whose head dimension is no whole number of vectors:
    // scoreKeys scalar dots in registers (keys as vector lanes would
    // gather, rows H·Dh floats apart).
    dot.unroll(kk);
    dot.update().reorder(kk, qi, rd).unroll(kk);
  } else {
    dot.vectorize(qi, queryLanes).unroll(kk);
    dot.update()
        .reorder(qi, kk, rd)
        .vectorize(qi, queryLanes)
        .unroll(qi)
        .unroll(kk);
  }
  rowMax.compute_at(out, task2).vectorize(qi, queryLanes);
  rowMax.update().vectorize(qi, queryLanes);
  if (queryBlock == 1)
    probs.compute_at(out, task2).vectorize(kk, lanes, TailStrategy::GuardWithIf);
  else
    probs.compute_at(out, task2).vectorize(qi, queryLanes);
  rowSum.compute_at(out, task2).vectorize(qi, queryLanes);
  rowSum.update().vectorize(qi, queryLanes);
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
}

BuiltKernel gpu(const KernelSpec &spec) {
  if (spec.pagedCache)
    throw CompileError("the GPU attention kernel reads a dense KV cache, "
                       "not a paged one");
  ImageParam q(Float(32), 4, "q");
  ImageParam k(Float(32), 4, "k");
  ImageParam v(Float(32), 4, "v");
  ImageParam keyPadding(Int(64), 2, "key_padding");
  std::vector<ImageParam> arguments{q, k, v};
  if (spec.mask.padding)
    arguments.push_back(keyPadding);
  Var e("e"), h("h"), qq("qq"), b("b"), kk("kk"), qi("qi"), qo("qo"), d("d"),
      j("j");

  const GpuAttentionPlan &plan = spec.plan<GpuAttentionPlan>();
  // One warp per thread block, one query per lane: the running softmax
  // state of the block's queries is striped across the warp's lanes (a
  // block-level register allocation is kept whole in every thread
  // otherwise). The plan's query block is the warp.
  const int queryBlock = int(plan.queryBlock);
  // Each lane keeps its key block's scores and probabilities (2 x
  // key_block floats): the plan's range stops at 32 keys, since more made
  // ptxas spill (255 registers at key_block 128, head size 16).
  const int keyBlock = int(plan.keyBlock);
  const int headDim = int(spec.headDim), valueDim = int(spec.valueHeadDim);
  Expr queries = q.dim(2).extent(), keys = k.dim(2).extent();
  Expr query = qo * queryBlock + qi;
  const Expr minusInf = negativeInfinity();
  Expr firstPosition = spec.mask.queriesAtEnd ? keys - queries : Expr(0);
  // Query heads per K/V head (kv_heads 0: as many as query heads).
  const int group = spec.kvHeads > 0 ? int(spec.heads / spec.kvHeads) : 1;

  // The block's rows past the last query (or key) read the last one; their
  // results are never stored (or are masked out).
  Func queryRow("query_row"), keyTile("key_tile"), valueTile("value_tile");
  queryRow(d, qi, qo, h, b) =
      q(d, h, min(query, queries - 1), b) * float(spec.attentionScale);
  keyTile(d, kk, h, b) = k(d, h / group, min(kk, keys - 1), b);
  valueTile(e, kk, h, b) = v(e, h / group, min(kk, keys - 1), b);

  RDom rd(0, headDim, "rd");
  Func score("score");
  score(kk, qi, qo, h, b) = 0.0f;
  score(kk, qi, qo, h, b) += queryRow(rd, qi, qo, h, b) * keyTile(rd, kk, h, b);

  // Every key block but the last is whole; the last one's keys past the
  // end are masked.
  auto allowedAt = [&](Expr key) {
    return keyAllowed(spec.mask, firstPosition + query, key, keys, keyPadding,
                      b, /*keyMayPassEnd=*/true);
  };

  // One key block j of one query: its max, probabilities relative to that
  // max, their sum, and the value-weighted sum.
  RDom rkb(0, keyBlock, "rkb");
  Expr key = j * keyBlock + rkb;
  // Gemma 2's soft-capping of the scaled scores, before the masks (inlined
  // into its two uses).
  Func capped("score_capped");
  capped(kk, qi, qo, h, b) =
      spec.softcap > 0 ? softcap(score(kk, qi, qo, h, b), spec.softcap)
                       : Expr(score(kk, qi, qo, h, b));
  Func blockMax("block_max"), prob("prob"), blockSum("block_sum"),
      blockAcc("block_acc");
  blockMax(qi, j, qo, h, b) = minusInf;
  blockMax(qi, j, qo, h, b) =
      max(blockMax(qi, j, qo, h, b),
          capped(key, qi, qo, h, b) + select(allowedAt(key), 0.0f, minusInf));
  Expr ownMax = blockMax(qi, kk / keyBlock, qo, h, b);
  prob(kk, qi, qo, h, b) =
      select(allowedAt(kk) && ownMax > minusInf,
             exp(capped(kk, qi, qo, h, b) - ownMax), 0.0f);
  blockSum(qi, j, qo, h, b) = 0.0f;
  blockSum(qi, j, qo, h, b) += prob(key, qi, qo, h, b);
  blockAcc(e, qi, j, qo, h, b) = 0.0f;
  blockAcc(e, qi, j, qo, h, b) +=
      prob(key, qi, qo, h, b) * valueTile(e, key, h, b);

  // Online softmax over the key blocks: a running (max, sum, accumulator)
  // rescaled whenever the max grows. A block with every key masked has
  // max -inf and contributes nothing (never exp(nan)).
  RDom rj(0, (keys + keyBlock - 1) / keyBlock, "rj");
  Expr firstQuery = firstPosition + qo * queryBlock;
  Expr lastQuery = firstQuery + queryBlock - 1;
  if (spec.mask.causal)
    rj.where(rj * keyBlock <= lastQuery);
  if (spec.mask.window > 0) {
    rj.where(rj * keyBlock + keyBlock - 1 > firstQuery - int(spec.mask.window));
    if (!spec.mask.causal)
      rj.where(rj * keyBlock < lastQuery + int(spec.mask.window));
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
  gpuBlocks(out, qoLoop, h, b);
  gpuLanes(out, qiLoop);
  // Stored query-innermost: lane qi's values are every 32nd.
  state.compute_at(out, qoLoop)
      .bound(e, 0, valueDim)
      .bound_extent(qi, queryBlock)
      .bound_extent(qo, 1)
      .bound_extent(h, 1)
      .bound_extent(b, 1)
      .reorder_storage(qi, e, qo, h, b);
  inRegisters(state);
  gpuLanes(state, qi);
  state.update().reorder(e, qi, rj);
  gpuLanes(state.update(), qi);
  // K and V rows of the key block, in shared memory, loaded by the whole
  // warp (consecutive lanes read consecutive elements of a row).
  auto stage = [&](Func tile, Var inner) {
    Var f("f"), fo("fo"), fi("fi");
    tile.compute_at(state, rj)
        .bound_extent(kk, keyBlock)
        .fuse(inner, kk, f)
        .split(f, fo, fi, queryBlock, TailStrategy::GuardWithIf)
        .reorder(fo, fi);
    gpuLanes(tile, fi);
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
  return {out, arguments};
}

const KernelRegistration registration({KernelKind::Attention},
                                      {algorithm, cpuSchedule, gpu});

} // namespace

} // namespace tfmc::codegen::kernels
