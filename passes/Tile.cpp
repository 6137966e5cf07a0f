//===- Tile.cpp - Per-kernel tile plans from a target description ---------===//
//
// Every kernel gets a typed tile plan (passes/target/TilePlan.h), stored as
// a `tfm.tile` dictionary that codegen reads back into the same struct and
// turns into a Halide schedule. The plan is a small analytic cost model over the target
// description; the reasons for each choice are the comments below, and the
// numbers they were checked against are in docs/performance.md.
//
// CPU
//  - GEMM (tfm.linear) of many rows (prefill, encoders), at most 16384
//    columns (not a vocabulary head) and an f32 W: packed outer-product
//    form (packed_gemm). A task of task_m x task_n outputs packs its
//    columns of W into an f32 panel (columns innermost) and walks its rows
//    in blocks of block_m; a micro tile of micro_m rows x micro_n column
//    vectors keeps its accumulators in registers across each block_k of
//    depth, each step one broadcast of x per row and one panel vector per
//    column vector. The shape constants were measured
//    (the target's tuning figures, below); micro_m shrinks to fit the registers (gated: twice
//    the accumulators). The dot form below (0.49-0.64x OpenBLAS at these
//    shapes) is bound by L2: it reloads micro_m + micro_n vectors per step.
//    Packing W costs about as much as streaming it ~8 times, so the plan
//    also carries the dot form's tile (dot_ keys) and the kernel runs it
//    for calls of fewer than small_rows rows.
//  - GEMM whose f32 W is stored in panels of 16 rows (tfm-weight-layout,
//    the default for CPU targets): the packed form reads the panels in
//    place instead of packing them per task; its few-rows branch and every
//    decode GEMM run the panel form (planCpuPanelGemm): micro tiles of
//    micro_m rows x micro_n columns (whole vectors that divide N), one
//    broadcast of x per row and one panel vector per column vector each
//    step, the accumulators in registers across the whole depth. Measured
//    (GPT-2 small, EPYC AVX2, 2 threads): prefill of 128 tokens 189 ->
//    155-163 ms, decode step 17.6-18.5 -> 17.0 ms against the row-major
//    forms below (`--weight-layout rows`).
//  - GEMM of a row per sequence (decode steps, a last or first position),
//    of fewer rows than a packed micro tile (packing W would cost more than
//    the FMAs it feeds), of a vocabulary head or of a bf16 or int8 W
//    (planCpuGemmForm says why): dot-product form (gemm). W is [N, K] row-major,
//    so rows of W and rows of x are both contiguous along K: each output
//    keeps a vector accumulator along K (summed across lanes at the end),
//    and no transpose of W is ever made, for one row (decode) or many
//    (prefill). A micro tile of micro_m rows x micro_n columns loads
//    micro_m + micro_n vectors per step for micro_m·micro_n FMAs and keeps
//    micro_m·micro_n + micro_m + micro_n registers live (spills are silent
//    and halve the speed). We pick the shape with the
//    most FMAs per load that fits, preferring columns that divide N. Tiles
//    are grouped into parallel tasks; with one row the groups are small
//    enough for four tasks per core. Rows go in blocks of block_m (x's
//    rows of a block fill ~3/4 of L2); within a block the tiles walk down
//    the rows first, so a micro tile's rows of W stay in L1 across the block
//    and W streams from memory once per block (M = 128 with N = 50257: once
//    instead of 26 times). K past a multiple of the vector reads
//    zeros; M and N tails are guarded. With a row per sequence and tiles
//    of several rows (--max-batch > 1), the plan also carries the one-row
//    tile of a --max-batch 1 program (one_row_*), which the kernel runs
//    for calls of fewer rows than a tile: batch 1 computes no idle rows.
//  - GEMM with a bf16 or int8 weight (tfm-weight-storage). One row
//    (decode) reads each weight once, so the kernel must stay bound by
//    those bytes: each W vector is widened in registers as it is loaded
//    (int8: sign-extend, convert, times the group's f16 scale; bf16: a
//    shift), which costs one register per column of the micro tile for the
//    widened vector's scale. With more rows each weight is used once per
//    row, and widening it per row tile would cost more than the FMAs it
//    feeds: widen_panel widens micro_n rows of W once per row block into
//    an f32 panel (micro_n·K·4 bytes, 36 KiB at K = 3072: L1 or L2), and
//    the f32 micro-kernel reads the panel for every row tile of the block.
//  - Gated GEMM (tfm.gated_linear: a gated FFN's gate and up). Each output
//    needs two dot products over the same x, so a micro tile of micro_n
//    columns holds 2·micro_n accumulators per row and reads 2·micro_n W
//    vectors per step: chooseDotTile counts both (parts = 2), which gives
//    half the columns of a plain linear of the same N for the same registers
//    and the same FMAs per load. One kernel instead of two linears, a mul
//    and the activation reads x once and writes one [M, d_ff] output
//    instead of three (TinyLlama, 128 tokens: two 2.9 MB intermediates per
//    layer neither written nor read back).
//  - Grouped-query attention plans as multi-head attention: its cost per
//    query head is the same; the K/V heads are read (and staged) once per
//    call and shared by their query heads.
//  - Attention. One task per (batch, head, query block) of 16 queries (a
//    whole number of vectors; the causal diagonal wastes 8 keys per query
//    on average). The block's scores and probabilities sit in per-task
//    scratch (two-pass softmax, 2 x 16 x max_seq x 4 bytes: 512 KiB at
//    4096 keys), stored with the query innermost so that the softmax
//    vectorises across queries. Q·Kᵀ and P·V are register-blocked
//    broadcast micro-kernels (chooseAttentionTiles). With a causal or
//    window mask the key loop of each query block is bounded, so fully
//    masked key blocks are never computed (skip_masked_blocks).
//  - Row kernels (layer_norm, rms_norm, softmax), elementwise kernels
//    (mul, rope) and the copy of each sequence's last position vectorise the
//    last dimension and run rows in parallel, unrolled when the width
//    allows. Rope's cos/sin table (head_dim/2 x S values) is computed once
//    per call by its kernel, not per row.
//
// GPU (CUDA)
//  - GEMM (and gated GEMM, whose two weights double the staged slice and
//    the accumulators the plan budgets): a thread block is one warp (Halide 14 keeps a thread's
//    accumulators in registers only when they are striped across the lanes
//    of a warp; otherwise every thread holds the whole block's tile in local
//    memory). Lane l computes columns j·32 + l (j < thread_n) of thread_m
//    rows: block_n = 32·thread_n, block_m = thread_m, staging block_k
//    slices of A and B in shared memory. We keep shared memory within half
//    the per-block limit and accumulators within the register budget, and
//    maximise the block's arithmetic intensity; a decode step (one row per
//    sequence) gets thread_m = 1.
//  - Attention: one warp per block of 32 queries, one query per lane,
//    online softmax (a two-pass score row of max_seq floats per query would
//    not fit in shared memory), K and V tiles of key_block rows staged in
//    shared memory, causal key blocks skipped.
//  - Elementwise and row kernels: one thread per element or per row slice.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "passes/target/TilePlan.h"
#include "support/Microkernels.h"

#include "mlir/IR/Builders.h"

namespace tfmc {
#define GEN_PASS_DEF_TILE
#include "passes/Passes.h.inc"
} // namespace tfmc

using namespace mlir;
using namespace tfmc::tfm;
using namespace tfmc::target;

namespace {

constexpr int64_t kFloatBytes = 4;

/// The fraction of `extent` that whole tiles of `tile` cover without
/// computing past the end (1 for a dynamic extent: nothing to prefer).
double utilization(int64_t extent, int64_t tile) {
  if (ShapedType::isDynamic(extent))
    return 1.0;
  int64_t padded = (extent + tile - 1) / tile * tile;
  return double(extent) / double(padded);
}

struct MicroTile {
  int64_t rows = 1;
  int64_t vectors = 1;
};

/// Attention's two register-blocked micro-kernels on a CPU. A block of
/// query_block queries is a whole number of vectors (qv = query_block /
/// lanes), and both kernels keep their accumulators in registers:
///  - Q·Kᵀ: qv vectors of queries x micro_k keys, one key value broadcast
///    per FMA: qv·micro_k accumulators + qv query vectors + 1 broadcast.
///  - P·V: pv_queries queries x pv_vectors vectors of the value head, one
///    probability broadcast per query: pv_queries·pv_vectors + pv_vectors
///    + 1 registers; per key it loads pv_vectors + pv_queries values for
///    pv_queries·pv_vectors FMAs.
struct AttentionTiles {
  int64_t queryBlock = 16, scoreKeys = 1, pvQueries = 1, pvVectors = 1;
};

AttentionTiles chooseAttentionTiles(const TargetDescription &target,
                                    int64_t valueHeadSize) {
  AttentionTiles tiles;
  int64_t lanes = target.vectorLanes;
  tiles.queryBlock = std::max<int64_t>(16, lanes);
  int64_t queryVectors = tiles.queryBlock / lanes;
  while (tiles.scoreKeys < 16 &&
         queryVectors * (tiles.scoreKeys + 1) + queryVectors + 1 <=
             target.vectorRegisters)
    ++tiles.scoreKeys;
  int64_t valueVectors =
      ShapedType::isDynamic(valueHeadSize) || valueHeadSize < lanes
          ? 1
          : valueHeadSize / lanes;
  double bestScore = 0;
  for (int64_t vectors = 1; vectors <= 4; ++vectors) {
    if (valueVectors % vectors != 0)
      continue;
    for (int64_t queries = 1; queries <= 8; queries *= 2) {
      if (tiles.queryBlock % queries != 0 ||
          queries * vectors + vectors + 1 > target.vectorRegisters)
        continue;
      double score = double(queries * vectors) / double(queries + vectors);
      if (score > bestScore + 1e-9 ||
          (score > bestScore - 1e-9 && vectors > tiles.pvVectors)) {
        bestScore = score;
        tiles.pvQueries = queries;
        tiles.pvVectors = vectors;
      }
    }
  }
  return tiles;
}

/// The micro tile of the dot-product GEMM: `rows` rows of x times
/// `columns` rows of W, one vector accumulator (along K) per output. Per
/// step it loads rows + columns vectors and does rows x columns FMAs, with
/// rows·columns + rows + columns registers live.
/// `registersPerColumn` is 1, or 2 when each column's W vector is widened
/// in registers (its scale or shift besides the vector). A gated linear has
/// `parts` = 2 weights: each column is two accumulators and two W vectors.
/// With `rowsDivide`, only row counts that divide maxRows (a decode step's
/// batch of max-batch rows then has no partial tile).
MicroTile chooseDotTile(const TargetDescription &target, int64_t n,
                        int64_t maxRows, int64_t registersPerColumn,
                        int64_t parts, bool rowsDivide = false,
                        int64_t registersPerOutput = 1) {
  MicroTile best;
  double bestScore = 0;
  for (int64_t rows = 1; rows <= maxRows; ++rows) {
    if (rowsDivide && maxRows % rows != 0)
      continue;
    for (int64_t columns = 1; columns <= 8; ++columns) {
      int64_t wVectors = parts * columns;
      if (registersPerOutput * rows * wVectors + rows +
              registersPerColumn * wVectors >
          target.vectorRegisters)
        continue;
      double fmasPerLoad = double(rows * wVectors) / double(rows + wVectors);
      double score = fmasPerLoad * utilization(n, columns);
      if (score > bestScore + 1e-9) {
        bestScore = score;
        best = {rows, columns};
      }
    }
  }
  return best;
}

/// The panel form's micro tile (a W stored in panels, tfm-weight-layout):
/// `rows` rows x `vectors` vectors of columns, each step one broadcast of x
/// per row and one W vector per column vector (parts of them for a gated
/// linear), rows·vectors·parts accumulators; registers: the accumulators,
/// the W vectors and a broadcast. The tile's columns must divide N (the
/// kernel computes whole tiles and the panels end at N), which a single
/// vector always does (N is a whole number of 16-row panels). With
/// `rowsDivide` (a decode step's rows, one per sequence), only row counts
/// that divide maxRows, and a tile of all maxRows rows where its loads per
/// FMA are within kWholeBatchScore of the best tile's.
MicroTile choosePanelTile(const TargetDescription &target, int64_t n,
                          int64_t maxRows, int64_t parts, bool rowsDivide) {
  MicroTile best, whole;
  double bestScore = 0, wholeScore = 0;
  const int64_t lanes = target.vectorLanes;
  for (int64_t rows = 1; rows <= maxRows; ++rows) {
    if (rowsDivide && maxRows % rows != 0)
      continue;
    for (int64_t vectors = 1; vectors <= 8; ++vectors) {
      int64_t wVectors = parts * vectors;
      if (n % (vectors * lanes) != 0 ||
          rows * wVectors + wVectors + 1 > target.vectorRegisters)
        continue;
      double score = double(rows * wVectors) / double(rows + wVectors);
      if (score > bestScore + 1e-9) {
        bestScore = score;
        best = {rows, vectors};
      }
      if (rows == maxRows && score > wholeScore + 1e-9) {
        wholeScore = score;
        whole = {rows, vectors};
      }
    }
  }
  // A decode step's batch in one tile streams each W block from memory
  // once, its loads overlapping the tile's FMAs; with tiles of fewer rows
  // the first waits for memory and the others re-read the block from
  // cache. GPT-2 small, --max-batch 8, decode step at batch 8, 2 threads,
  // Sapphire Rapids: AVX-512 8 x 3 (0.91 of 4 x 6's FMAs per load) took
  // the 768-wide linears 13.9 -> 9.5 ms a step and the 3072-wide 4.8 ->
  // 4.2 (the step 34.5 -> 30.4); AVX2's 8 x 1 (0.52 of 4 x 3's) was mixed:
  // 17.5 -> 16.7 and 6.0 -> 7.3 ms.
  constexpr double kWholeBatchScore = 0.75;
  if (rowsDivide && whole.rows > 0 && wholeScore >= kWholeBatchScore * bestScore)
    return whole;
  return best;
}

/// Whether `op` is in a decode step (a function the builder marked
/// tfm.decode_step): one row per sequence, its newest token.
bool inDecodeStep(Operation *op) {
  auto func = op->getParentOfType<func::FuncOp>();
  return func && func->hasAttr("tfm.decode_step");
}

/// Shapes of a GEMM: rows M (dynamic for activations), columns N, depth K,
/// and whether its rows are one per sequence (M is the batch, at most
/// `sequences`, the compiled max-batch): in a function marked
/// tfm.decode_step, or on a [B, 1, K] input such as a prefill's last
/// position (tfm.last_position).
struct GemmShape {
  int64_t m, n, k;
  bool rowPerSequence = false;
  int64_t sequences = 1;
  /// W is stored in bf16 or int8 (widened to f32 by the kernel).
  bool narrowWeight = false;
  /// Weights per output: 2 for a gated linear (gate and up), else 1.
  int64_t parts = 1;
  /// int8 activations (`tfm.activations = "int8"`): the integer form.
  bool integerProducts = false;
  /// bf16 activations (`tfm.activations = "bf16"`): bf16 pairs of x and W.
  bool bf16Products = false;
  /// W is stored as int4 blocks (GGUF's Q4_0) or K-quant super-blocks
  /// (the microkernel reads either as it is; neither has a one-row tile).
  bool int4Weight = false;
  /// W is stored in panels of this many rows (tfm-weight-layout), else 0.
  int64_t panel = 0;
  /// An int8 W's group (values per scale), else 0.
  int64_t group = 0;
};

/// The group of the int8 weight `value` reads, or 0.
int64_t groupOf(Value value) {
  WeightOp weight = sourceWeight(value);
  if (!weight || weightStorageOf(value) != WeightStorage::int8)
    return 0;
  return int64_t(weight.getGroup().value_or(0));
}

/// Rows per panel of the weight `value` reads (tfm-weight-layout), or 0.
int64_t panelOf(Value value) {
  WeightOp weight = sourceWeight(value);
  if (!weight)
    return 0;
  return int64_t(weight.getPanel().value_or(0));
}

/// The GEMM of a linear or of a gated linear (whose gate and up weights
/// share x and the output tile).
GemmShape gemmShape(Operation *op, int64_t maxBatch) {
  Value weightValue = isa<GatedLinearOp>(op)
                          ? cast<GatedLinearOp>(op).getGate()
                          : cast<LinearOp>(op).getWeight();
  auto weight = cast<RankedTensorType>(weightValue.getType());
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t m = 1;
  for (int64_t dim : input.getShape().drop_back())
    m = ShapedType::isDynamic(dim) || ShapedType::isDynamic(m)
            ? ShapedType::kDynamic
            : m * dim;
  // [B, 1, K] (a prefill's last position) or [B, K] (BERT's pooler on the
  // first position): one row per sequence.
  bool onePosition = (input.getRank() == 3 && input.getDimSize(1) == 1) ||
                     input.getRank() == 2;
  return {m,
          weight.getDimSize(0),
          weight.getDimSize(1),
          inDecodeStep(op) || onePosition,
          std::max<int64_t>(1, maxBatch),
          weightStorageOf(weightValue).has_value(),
          isa<GatedLinearOp>(op) ? 2 : 1,
          hasInt8Activations(op),
          hasBf16Activations(op),
          weightStorageOf(weightValue) == WeightStorage::int4 ||
              (weightStorageOf(weightValue) &&
               isKQuant(*weightStorageOf(weightValue))),
          panelOf(weightValue),
          groupOf(weightValue)};
}

// The measured figures below are the target's (TargetDescription::
// CpuTuning, Target.cpp: each entry says which machine measured them); the
// measurements behind them:
//  - decode_tile_rows: rows of a decode-step GEMM's micro tile at most. One
//    batch of B rows reads W once whatever the tile; more rows per tile save
//    loads of W from L1. GPT-2 small's decode step (2 threads, Xeon with
//    AVX-512, --max-batch 8), before the one-row tile: 1 row 18.1 ms at
//    batch 1; 2 rows 20.8 ms at batch 1, 36.0 ms at batch 8; 4 rows 24.6 ms
//    and 34.9 ms. A call of fewer rows than the tile now runs the plan's
//    one-row tile (one_row_*), so batch 1 no longer pays for the idle rows.
//  - packed_*: the packed form's micro tile is micro_m rows x
//    packed_column_vectors (2) vectors of columns, micro_m at most
//    packed_max_rows (8); rows go in blocks of about packed_block_rows (16, a
//    whole number of micro tiles), tasks are packed_task_rows (512, whole
//    blocks) x 2 micro tiles of columns, and K blocks are packed_depth_block
//    (256) deep. Measured on a 2-core Xeon (AVX-512, 2 threads, against
//    OpenBLAS in the same run): at 1024 x 3072 x 768, micro tiles 8x2
//    vectors 0.83-0.90x OpenBLAS, 12x2 0.79-0.85x, 6x4 0.49-0.56x, 8x3 0.73x,
//    14x2 0.68x; tasks of 64 columns 0.83-0.90x, 32 0.66x, 128 0.52-0.67x;
//    tasks of 256 rows 0.90x, 128 0.83x, 64 0.67x (a task packs its panel
//    once for its rows: a gather of W's columns, 18 % of the 3072-deep
//    linear's time at 256 rows); BERT-base at batch 8 x 128 (1024 rows),
//    770 / 759 ms with tasks of 256 rows, 727 / 722 with 512, 712 / 723 with
//    1024 (two runs each, Xeon, 2 threads); K blocks of 128-768 within
//    noise. Row blocks (accumulators of 16 rows, 4 KiB: L1) keep a short
//    input cheap: at 768 x 768, 5 rows took 0.19 ms with blocks of 16, 0.35
//    with 32, 0.45 with 64 and 1.1 ms with whole 256-row tasks (the dot form:
//    0.13); 1024 rows 5.8-6.0 ms with 16-64 (the dot form 7.5).
//  - packed_small_rows (32): rows below which a packed plan's kernel runs
//    its dot form: packing W costs about as much as streaming it ~8 times.
//    BERT-base's 768 x 768 linear: 5 rows 0.13 ms dot against 0.22-0.31
//    packed; 32 rows 0.55 against 0.29-0.37. GPT-2 small's prefill entry:
//    16 tokens 78 ms dot against 98 packed; 32 tokens within noise.

/// Tasks of a dot-form plan: enough for every core four times over when
/// there is one row (decode: the tiles along N are all the work);
/// otherwise tasks of about 8 tiles keep the dispatch cost small.
int64_t dotTilesPerTask(const TargetDescription &target, int64_t n,
                        int64_t columns) {
  if (ShapedType::isDynamic(n))
    return 8;
  int64_t tilesPerRow = (n + columns - 1) / columns;
  return std::clamp<int64_t>(tilesPerRow / (4 * target.cores), 1, 8);
}

/// Rows in blocks of block_m whose x rows (block_m·K floats) fill about
/// three quarters of L2, a whole number of micro tiles of `tileRows`: within
/// a block, each micro tile's columns of W (in L1 or L2) meet every row tile
/// of the block before the next ones are loaded, so W streams from memory
/// once per block instead of once per row tile. 0 for a dynamic K.
int64_t rowBlock(const TargetDescription &target, int64_t k,
                 int64_t tileRows) {
  if (ShapedType::isDynamic(k))
    return 0;
  int64_t rows = 3 * target.l2Bytes / 4 / (k * kFloatBytes);
  return std::max(tileRows, rows / tileRows * tileRows);
}

/// A GEMM of few rows whose W is stored in panels: the panel form
/// (Linear.cpp), micro tiles of columns that divide N. A decode step's tile
/// has up to packed_max_rows rows (the packed form's micro-kernel, bound by
/// registers only: GPT-2 small's decode step at batch 8 took 0.92x the time
/// with 4 x 3 tiles than with the dot form's 2-row limit's 2 x 4, EPYC AVX2,
/// 2 threads, medians of 5 alternating runs) and carries a one-row tile; rows
/// go in blocks (rowBlock).
CpuGemmPlan planCpuPanelGemm(const TargetDescription &target,
                             const GemmShape &shape) {
  int64_t maxRows = shape.rowPerSequence
                        ? std::min(shape.sequences, target.tuning.packedMaxRows)
                        : 8;
  MicroTile micro = choosePanelTile(target, shape.n, maxRows, shape.parts,
                                    /*rowsDivide=*/shape.rowPerSequence);
  int64_t columns = micro.vectors * target.vectorLanes;
  CpuGemmPlan plan;
  plan.vector = target.vectorLanes;
  plan.microM = micro.rows;
  plan.microN = columns;
  plan.tilesPerTask = dotTilesPerTask(target, shape.n, columns);
  plan.blockM = rowBlock(target, shape.k, micro.rows);
  if (shape.rowPerSequence && micro.rows > 1) {
    MicroTile oneRow =
        choosePanelTile(target, shape.n, 1, shape.parts, /*rowsDivide=*/true);
    plan.oneRowMicroN = oneRow.vectors * target.vectorLanes;
    plan.oneRowTilesPerTask =
        dotTilesPerTask(target, shape.n, plan.oneRowMicroN);
  }
  return plan;
}

CpuGemmPlan planCpuDotGemm(const TargetDescription &target, GemmShape shape) {
  // f32 panels (an int8 or int4 W in block panels runs the microkernel).
  if (shape.panel > 0 && !shape.narrowWeight)
    return planCpuPanelGemm(target, shape);
  // A decode step has one row per sequence: up to max-batch rows, so a
  // micro tile of more rows than that would only repeat rows; with a batch
  // of sequences, a micro tile of several rows reads each W vector once for
  // all of them (the GEMM of M = max-batch rows the decode step runs).
  // A narrow W is widened in registers only with one row; otherwise the
  // micro-kernel reads an f32 panel.
  // With int8 activations a row per sequence runs the integer form, which
  // reads W as it is (one register a column: its i16 values) and keeps two
  // vectors per output (a group's int32 sums, the f32 sum of groups); int4
  // W keeps one (its int32 sums are a block's, consumed at once): TinyLlama's
  // decode step, 1 thread, AVX2, 1 x 3 gated and 1 x 7 tiles 12.7 tokens/s
  // against 11.4 with the integer form's 1 x 2 and 1 x 5. More rows run the
  // dot form on dequantised x and the panel (LinearQuantized.cpp), except
  // where the target's microkernel has a form for many rows (below).
  // With bf16 activations on a target with the bf16 dot product every row
  // count runs the pair form, which reads W as it is stored (a vector of
  // bf16 pairs per column: one register, nothing to widen; Linear.cpp).
  // Elsewhere they run as bf16 weights do, on x rounded once per call.
  bool pairs = shape.bf16Products && target.hasBf16Dot();
  // Many rows with int8 activations run the integer form where the
  // target's microkernel has a form for them (its panels,
  // TargetDescription::integerPanels) and takes the weight
  // (int4, or int8 in groups of a multiple of 32).
  bool microkernelRows =
      shape.integerProducts && target.integerPanels &&
      (shape.int4Weight ||
       (shape.group > 0 && shape.group % tfmc::format::kMicrokernelGroupMultiple == 0));
  bool widenPanel =
      shape.narrowWeight && !shape.rowPerSequence && !pairs && !microkernelRows;
  bool integerForm = shape.integerProducts && !widenPanel;
  int64_t registersPerColumn =
      shape.narrowWeight && !widenPanel && !integerForm && !pairs ? 2 : 1;
  int64_t registersPerOutput = integerForm && !shape.int4Weight ? 2 : 1;
  MicroTile micro = chooseDotTile(
      target, shape.n,
      shape.rowPerSequence
          ? std::min(shape.sequences, target.tuning.decodeTileRows)
          : 8,
      registersPerColumn, shape.parts,
      /*rowsDivide=*/shape.rowPerSequence, registersPerOutput);
  int64_t tilesPerTask = dotTilesPerTask(target, shape.n, micro.vectors);
  // A row per sequence with tiles of several rows: batches smaller than a
  // tile (batch 1 above all) would compute the tile's idle rows, so the plan
  // also carries the best one-row tile, which the kernel runs for calls of
  // fewer rows than micro_m (docs/performance.md has the figures). Not for the integer and int4 forms
  // (LinearQuantized.cpp), whose decode tiles are one row wide at
  // max-batch 1 only.
  MicroTile oneRow{0, 0};
  if (shape.rowPerSequence && micro.rows > 1 && !integerForm &&
      !shape.int4Weight)
    oneRow = chooseDotTile(target, shape.n, 1, registersPerColumn,
                           shape.parts, /*rowsDivide=*/true,
                           registersPerOutput);
  // The microkernel's form for many rows computes panels of
  // kMicrokernelPanelOutputs outputs: tasks of whole panels, also for a
  // decode step whose batches may reach that form's rows, and for any W in
  // block panels (whose tasks must start on a whole panel).
  if (microkernelRows &&
      (!shape.rowPerSequence || shape.panel > 0 ||
       shape.sequences >= tfmc::format::kMicrokernelPanelRows)) {
    micro.vectors = tfmc::format::kMicrokernelPanelOutputs;
    tilesPerTask = dotTilesPerTask(target, shape.n, micro.vectors);
  }
  CpuGemmPlan plan;
  plan.vector = target.vectorLanes;
  plan.microM = micro.rows;
  plan.microN = micro.vectors;
  plan.blockM = rowBlock(target, shape.k, micro.rows);
  plan.tilesPerTask = tilesPerTask;
  plan.widenPanel = widenPanel;
  if (oneRow.vectors > 0) {
    plan.oneRowMicroN = oneRow.vectors;
    plan.oneRowTilesPerTask = dotTilesPerTask(target, shape.n, oneRow.vectors);
  }
  return plan;
}

/// A GEMM of many rows (prefill, an encoder): the packed outer-product form.
/// Each step of a micro tile holds parts·rows·vectors accumulators, the
/// parts·vectors panel vectors it loads and one broadcast of x.
CpuPackedGemmPlan planCpuPackedGemm(const TargetDescription &target,
                                    const GemmShape &shape) {
  const TargetDescription::CpuTuning &tuning = target.tuning;
  int64_t vectors = tuning.packedColumnVectors * shape.parts;
  int64_t rows = std::clamp<int64_t>(
      (target.vectorRegisters - 1 - vectors) / vectors, 1, tuning.packedMaxRows);
  CpuPackedGemmPlan plan;
  plan.vector = target.vectorLanes;
  plan.microM = rows;
  plan.microN = tuning.packedColumnVectors;
  plan.blockK = tuning.packedDepthBlock;
  plan.blockM = (tuning.packedBlockRows + rows - 1) / rows * rows;
  plan.taskM = tuning.packedTaskRows / plan.blockM * plan.blockM;
  plan.taskN = 2 * tuning.packedColumnVectors * target.vectorLanes;
  plan.smallRows = tuning.packedSmallRows;
  plan.dot = planCpuDotGemm(target, shape);
  // An f32 W in panels (int8 or bf16 products need a narrow W): the
  // target's f32 microkernel (runtime/ukernels/FloatPanels.h) computes each
  // task's outputs, with its own register tile and depth block; tasks of
  // whole tiles of rows, as many columns as the Halide form's.
  if (!target.floatMicrokernels.empty() && shape.panel > 0 &&
      !shape.narrowWeight) {
    const tfmc::format::FloatMicrokernelTile tile =
        tfmc::format::floatMicrokernelTile(target.floatMicrokernels);
    plan.microkernel = true;
    plan.microM = tile.rows;
    plan.microN = tile.vectors;
    plan.blockK = tile.depthBlock;
    plan.blockM = tile.rows;
    plan.taskM = std::max<int64_t>(1, tuning.packedTaskRows / tile.rows) * tile.rows;
  }
  return plan;
}

// packed_max_columns (16384): columns above which a GEMM keeps the dot
// form even with many rows: a vocabulary-sized output head. GPT-2 small's
// 128 x 50257 x 768 head took 136 ms packed against 62 ms in the dot form
// (2 threads, Xeon): each of its 786 column tasks packs its panel for only
// 128 rows, and the packed micro-kernels ran at ~84 GFLOP/s there against
// ~250 at N <= 3072. Its 3072-wide FFN linears were faster packed (3.6
// against 4.3 ms).

/// A GEMM's form: packed for many rows of an f32 W; the dot form for a row
/// per sequence (decode steps, a last or first position), fewer rows than a
/// packed micro tile (packing W would cost more than the FMAs it feeds), an
/// output head of more than packed_max_columns columns, or a bf16 or int8 W:
/// packing gathers W's columns, and narrow ones (int8 bytes with a scale
/// per group) made GPT-2 small's prefill of 128 tokens slower packed than
/// in the dot form with widen_panel (int8 164 against 120 ms, bf16 148
/// against 135; f32 144 against 165).
TilePlan planCpuGemmForm(const TargetDescription &target, GemmShape shape) {
  bool manyRows = !shape.rowPerSequence &&
                  (ShapedType::isDynamic(shape.m) ||
                   shape.m >= target.tuning.packedMaxRows);
  bool headSized = ShapedType::isDynamic(shape.n) ||
                   shape.n > target.tuning.packedMaxColumns;
  if (manyRows && !headSized && !shape.narrowWeight)
    return planCpuPackedGemm(target, shape);
  return planCpuDotGemm(target, shape);
}

/// A GEMM's row count when the plan cannot know it (batch x sequence):
/// planned as a 128-token prompt (longer ones have blocks to spare), or as
/// max-batch rows for a row per sequence (a decode step's batch).
constexpr int64_t kNominalGemmRows = 128;
/// One-warp blocks per multiprocessor below which a GEMM leaves the GPU
/// idle: an H100 ran GPT-2 small's 128 x 768 x 768 linears, tiled for
/// intensity alone into 24 blocks for 132 multiprocessors, at 0.8 TFLOP/s,
/// and its decode-step linears (3 blocks) at 25 GB/s.
constexpr int64_t kMinBlocksPerMultiprocessor = 4;

GpuGemmPlan planGpuGemm(const TargetDescription &target, GemmShape shape) {
  struct Candidate {
    int64_t threadM, threadN, blockK;
  };
  const int64_t warp = target.warpSize;
  const int64_t rows = !ShapedType::isDynamic(shape.m) ? shape.m
                       : shape.rowPerSequence      ? shape.sequences
                                                   : kNominalGemmRows;
  // The fraction of the GPU the grid of blocks can keep busy.
  auto occupancy = [&](int64_t blockM, int64_t blockN) {
    if (ShapedType::isDynamic(shape.n) || target.multiprocessors <= 0)
      return 1.0;
    int64_t blocks = ((rows + blockM - 1) / blockM) *
                     ((shape.n + blockN - 1) / blockN);
    return std::min(1.0, double(blocks) / double(kMinBlocksPerMultiprocessor *
                                                 target.multiprocessors));
  };
  Candidate best{1, 1, 8};
  double bestScore = 0;
  for (int64_t threadM : {1, 2, 4, 8, 16})
    for (int64_t threadN : {1, 2, 4, 8})
      for (int64_t blockK : {8, 16, 32}) {
        if (shape.rowPerSequence && threadM != 1)
          continue;
        int64_t blockM = threadM, blockN = warp * threadN;
        // A gated linear stages and accumulates both weights.
        int64_t wRows = shape.parts * blockN;
        int64_t shared = (blockM + wRows) * blockK * kFloatBytes;
        // Accumulators, one column of A and one row of B, addressing.
        int64_t registers = shape.parts * threadM * threadN + threadM +
                            shape.parts * threadN + 16;
        if (shared > target.sharedBytesPerBlock / 2 ||
            registers > target.registersPerThread)
          continue;
        double intensity =
            double(blockM * wRows) / double(blockM + wRows);
        // Deeper K slices halve the barriers per FLOP: a small tie-break.
        double score = intensity * utilization(shape.n, blockN) *
                       occupancy(blockM, blockN) *
                       (1.0 + 0.01 * double(blockK));
        if (score > bestScore + 1e-9) {
          bestScore = score;
          best = {threadM, threadN, blockK};
        }
      }
  GpuGemmPlan plan;
  plan.threadM = best.threadM;
  plan.threadN = best.threadN;
  plan.blockK = best.blockK;
  plan.sharedBytes = (best.threadM + shape.parts * warp * best.threadN) *
                    best.blockK * kFloatBytes;
  return plan;
}

TilePlan planAttention(const TargetDescription &target, AttentionOp attention,
                       int64_t maxSeq) {
  MaskAttr mask = attention.getMask();
  bool skipBlocks = mask.getCausal() || mask.getWindow() != 0;
  int64_t dHead = attention.getHeadSize();
  if (target.isGpu()) {
    GpuAttentionPlan plan;
    // One query per lane of one warp: the running softmax state stays in
    // registers only when striped across a warp's lanes (as GEMM's
    // accumulators).
    plan.queryBlock = target.warpSize;
    // K and V tiles of key_block rows in half the shared memory; each lane
    // also keeps key_block scores and probabilities, and more than 32 made
    // ptxas spill.
    plan.keyBlock = 32;
    while (plan.keyBlock > 8 && 2 * plan.keyBlock * dHead * kFloatBytes >
                                    target.sharedBytesPerBlock / 2)
      plan.keyBlock /= 2;
    plan.sharedBytes = 2 * plan.keyBlock * dHead * kFloatBytes;
    plan.skipMaskedBlocks = skipBlocks;
    return plan;
  }
  int64_t valueSize = attention.getValueHeadSize();
  AttentionTiles tiles = chooseAttentionTiles(target, valueSize);
  // A value head narrower than a vector is one narrower vector.
  int64_t pvWidth = tiles.pvVectors * target.vectorLanes;
  if (!ShapedType::isDynamic(valueSize))
    pvWidth = std::min(pvWidth, valueSize);
  CpuAttentionPlan plan;
  plan.vector = target.vectorLanes;
  plan.queryBlock = tiles.queryBlock;
  plan.microK = tiles.scoreKeys;
  plan.pvQueries = tiles.pvQueries;
  plan.pvWidth = pvWidth;
  // Keys and values are copied into contiguous per-head blocks once per
  // call (their rows are H·Dh floats apart, which maps a head onto a
  // fraction of L2's sets), except in a decode step, whose one query reads
  // each key once.
  plan.stageKv = !inDecodeStep(attention);
  // A decode step has one query per sequence and head: a block of more
  // would compute copies of it (the blocks' extents are fixed), which cost
  // a batch of 8 sequences 27% of GPT-2 small's decode step.
  if (inDecodeStep(attention))
    plan.queryBlock = plan.pvQueries = 1;
  // Grouped-query attention's decode step: the query heads that share a
  // K/V head are the block (one task reads each K/V row once for them all,
  // a vector of heads per key), instead of one task a head re-reading it.
  // TinyLlama shape (32 heads, 4 K/V heads), int8a8 --max-batch 8, decode at
  // batch 8 after 128 tokens, 2 threads, Sapphire Rapids: attention 7.0-7.5
  // ms a step with a task a head, 5.4-5.6 with the group as the block (0.93-
  // 0.99 -> 0.73-0.76 ms at batch 1; after 512 tokens at batch 8 21.1 ->
  // 17.4 ms).
  const int64_t heads = attention.getNumHeads(),
                kvHeads = attention.getNumKvHeads();
  if (inDecodeStep(attention) && kvHeads > 0 && kvHeads < heads &&
      heads % kvHeads == 0) {
    plan.headBlock = true;
    plan.queryBlock = heads / kvHeads;
    plan.pvQueries = std::min(tiles.pvQueries, plan.queryBlock);
  }
  plan.scratchBytes = 2 * plan.queryBlock * maxSeq * kFloatBytes;
  plan.skipMaskedBlocks = skipBlocks;
  return plan;
}

/// Kernels over rows of the last dimension: layer_norm reduces along it,
/// elementwise kernels just stream it.
TilePlan planRows(const TargetDescription &target, Operation *op,
                  bool reducesRows) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t width = type.getShape().back();
  if (target.isGpu()) {
    GpuRowsPlan plan;
    plan.threads = 256;
    if (reducesRows && !ShapedType::isDynamic(width))
      while (plan.threads > target.warpSize && plan.threads / 2 >= width)
        plan.threads /= 2;
    return plan;
  }
  int64_t lanes = target.vectorLanes;
  CpuRowsPlan plan;
  plan.vector = lanes;
  // Unroll by up to 4 vectors when the width is a whole number of them.
  plan.unroll = 1;
  for (int64_t factor : {4, 2})
    if (!ShapedType::isDynamic(width) && width % (factor * lanes) == 0) {
      plan.unroll = factor;
      break;
    }
  // Tasks of about 16 KB of output: big enough to amortise the dispatch,
  // small enough to balance over cores.
  plan.rowsPerTask = 1;
  if (!ShapedType::isDynamic(width))
    plan.rowsPerTask = std::max<int64_t>(1, 16 * 1024 / (width * kFloatBytes));
  return plan;
}

TilePlan planKernel(const TargetDescription &target, Operation *op,
                    KernelKind kind, int64_t maxSeq, int64_t maxBatch) {
  switch (kind) {
  case KernelKind::Linear:
  case KernelKind::GatedLinear: {
    GemmShape shape = gemmShape(op, maxBatch);
    if (target.isGpu())
      return planGpuGemm(target, shape);
    return planCpuGemmForm(target, shape);
  }
  case KernelKind::Attention:
    return planAttention(target, cast<AttentionOp>(op), maxSeq);
  default:
    // Every other kind is a row kernel (TilePlan.cpp's emptyPlanFor agrees);
    // a norm reduces each row.
    return planRows(target, op, /*reducesRows=*/isa<NormOpInterface>(op));
  }
}

struct TilePass : tfmc::impl::TileBase<TilePass> {
  using TileBase::TileBase;

  void runOnOperation() override {
    std::optional<tfmc::target::TargetDescription> description =
        tfmc::lookupTargetOrEmit(getOperation(), target);
    if (!description)
      return signalPassFailure();
    if (failed(tfmc::tileModule(getOperation(), *description, maxSeq,
                                maxBatch)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult tfmc::tileModule(ModuleOp module,
                               const TargetDescription &description,
                               int64_t maxSeq, int64_t maxBatch) {
  Builder builder(module.getContext());
  for (auto func : module.getOps<func::FuncOp>()) {
    int64_t seq = maxSeq;
    if (seq == 0)
      if (auto maxLen = func->getAttrOfType<IntegerAttr>("tfm.max_len"))
        seq = maxLen.getInt();
    if (seq <= 0) {
      func.emitError("tfm-tile needs a sequence bound: set max-seq or a "
                     "tfm.max_len attribute on the function");
      return failure();
    }
    func.walk([&](Operation *op) {
      if (std::optional<KernelKind> kind = kernelKindOf(op))
        op->setAttr("tfm.tile",
                    toDictionary(builder, description,
                                 planKernel(description, op, *kind, seq,
                                            maxBatch)));
    });
  }
  return success();
}
