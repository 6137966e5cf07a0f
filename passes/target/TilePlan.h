//===- TilePlan.h - Typed tile plans, one struct per kernel family -*- C++ -*-===//
//
// The tiling pass (passes/Tile.cpp) chooses a plan for every kernel
// and records it on the op as a `tfm.tile` dictionary; codegen reads it back
// into the same struct and builds the kernel's Halide schedule from it. Each
// struct names its attributes once (its `fields` visitor), so the writer and
// the reader cannot drift, and a plan with a missing or extra key is an
// error, never a silent default.
//
// `fields` also gives each integer's valid range (FieldRange): a value
// outside it (a vector of 0 lanes would divide by zero in a schedule) is an
// error at the op as well.
//
// The structs are plain C++ (the kernels, which know nothing of MLIR, read
// them); only the dictionary conversions below touch MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_TARGET_TILEPLAN_H
#define TFMC_TARGET_TILEPLAN_H

#include "passes/target/Target.h"
#include "dialects/tfm/KernelKind.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

namespace mlir {
class Builder;
class DictionaryAttr;
class Operation;
} // namespace mlir

namespace tfmc::target {

/// The kernels tfmc compiles: each kernel op names its kind in the dialect
/// (tfm::kernelKindOf); the plans below are per family of kinds.
using tfm::KernelKind;

/// The values an integer field of a plan may take. By default a size, a
/// count or a factor: positive, and within the `int` the schedules use.
struct FieldRange {
  int64_t minimum = 1, maximum = INT32_MAX;
};
/// A budget in bytes, written for the reader (codegen schedules nothing
/// from it).
constexpr FieldRange kBytes{0, INT64_MAX};

// --- CPU plans ----------------------------------------------------------------

/// GEMM (linear) in dot-product form: a micro_m x micro_n tile of outputs,
/// each a vector accumulator along K; rows in blocks of block_m (0: one
/// block) walked row tiles first; tiles_per_task tiles per parallel task.
struct CpuGemmPlan {
  static constexpr const char *kFamily = "gemm";
  int64_t vector = 0, microM = 0, microN = 0, blockM = 0, tilesPerTask = 0;
  /// A bf16 or int8 weight: widened once per row block into an f32 panel
  /// of micro_n rows of W that every row tile of the block reads (true), or
  /// widened in registers as it is read (false; one row, decode).
  bool widenPanel = false;
  /// A decode step's tile of several rows (one row per sequence, up to
  /// max-batch) also has a one-row tile of one_row_micro_n columns in
  /// tasks of one_row_tiles_per_task tiles, which a call of fewer rows
  /// than micro_m runs instead (the kernel specializes on the row count:
  /// batch 1 computes no idle rows); both 0 when there is none. The keys
  /// exist only in plans of micro_m > 1.
  int64_t oneRowMicroN = 0, oneRowTilesPerTask = 0;
  template <typename Visit> void fields(Visit &&visit) {
    visit("vector", vector);
    visit("micro_m", microM);
    visit("micro_n", microN);
    visit("block_m", blockM, FieldRange{0, INT32_MAX});
    visit("tiles_per_task", tilesPerTask);
    visit("widen_panel", widenPanel);
    if (microM > 1) {
      visit("one_row_micro_n", oneRowMicroN, FieldRange{0, INT32_MAX});
      visit("one_row_tiles_per_task", oneRowTilesPerTask,
            FieldRange{0, INT32_MAX});
    }
  }
  /// The one-row tile's plan (oneRowMicroN > 0): the same plan with micro
  /// tiles of 1 x one_row_micro_n.
  CpuGemmPlan oneRowPlan() const {
    CpuGemmPlan plan = *this;
    plan.microM = 1;
    plan.microN = oneRowMicroN;
    plan.tilesPerTask = oneRowTilesPerTask;
    plan.oneRowMicroN = plan.oneRowTilesPerTask = 0;
    return plan;
  }
};

/// GEMM (linear) in packed outer-product form, for many rows (prefill,
/// encoders): parallel tasks of task_m rows x task_n columns; a task packs
/// its task_n columns of W (widened to f32) into a panel with the columns
/// innermost, then walks its rows in blocks of block_m, each with its own
/// accumulators; micro tiles of micro_m rows x micro_n vectors of columns
/// accumulate in registers across each block_k of depth: each step
/// broadcasts micro_m values of x and loads micro_n panel vectors. A call
/// with fewer than small_rows rows runs the dot form instead, with the
/// `dot_` fields (its vector is `vector`).
struct CpuPackedGemmPlan {
  static constexpr const char *kFamily = "packed_gemm";
  int64_t vector = 0, microM = 0, microN = 0, blockK = 0, blockM = 0,
          taskM = 0, taskN = 0, smallRows = 0;
  /// The many-rows form is the target's f32 microkernel (an f32 W in
  /// panels; TargetDescription::floatMicrokernels): each task calls it for
  /// its task_m x task_n outputs, whose tile (micro_m x micro_n) and depth
  /// block (block_k) are the microkernel's own; block_m is unused.
  bool microkernel = false;
  CpuGemmPlan dot;
  template <typename Visit> void fields(Visit &&visit) {
    visit("vector", vector);
    visit("micro_m", microM);
    visit("micro_n", microN);
    visit("block_k", blockK);
    visit("block_m", blockM);
    visit("task_m", taskM);
    visit("task_n", taskN);
    visit("small_rows", smallRows);
    visit("microkernel", microkernel);
    visit("dot_micro_m", dot.microM);
    visit("dot_micro_n", dot.microN);
    visit("dot_block_m", dot.blockM, FieldRange{0, INT32_MAX});
    visit("dot_tiles_per_task", dot.tilesPerTask);
    visit("dot_widen_panel", dot.widenPanel);
    dot.vector = vector; // one key for both forms
  }
};

/// Attention, two-pass softmax over a block of query_block queries per task:
/// Q·Kᵀ micro-kernel of query_block x micro_k, P·V of pv_queries x pv_width;
/// K and V staged per head when stage_kv; masked key blocks skipped when
/// skip_masked_blocks. scratch_bytes: the per-task score scratch (a budget
/// figure for the reader; codegen checks nothing against it).
struct CpuAttentionPlan {
  static constexpr const char *kFamily = "attention";
  int64_t vector = 0, queryBlock = 0, microK = 0, pvQueries = 0, pvWidth = 0,
          scratchBytes = 0;
  bool stageKv = true, skipMaskedBlocks = false;
  /// The query block is the query heads that share a K/V head (grouped-
  /// query attention's group, query_block of them) at one position: each
  /// K/V row is read once for the group (a decode step), not once a head.
  bool headBlock = false;
  template <typename Visit> void fields(Visit &&visit) {
    visit("vector", vector);
    visit("query_block", queryBlock);
    visit("head_block", headBlock);
    visit("micro_k", microK);
    visit("pv_queries", pvQueries);
    visit("pv_width", pvWidth);
    visit("stage_kv", stageKv);
    visit("scratch_bytes", scratchBytes, kBytes);
    visit("skip_masked_blocks", skipMaskedBlocks);
  }
};

/// Row (layer_norm) and elementwise kernels: the last dimension in vectors,
/// unrolled `unroll` times, rows_per_task rows per parallel task.
struct CpuRowsPlan {
  static constexpr const char *kFamily = "rows";
  int64_t vector = 0, unroll = 1, rowsPerTask = 1;
  template <typename Visit> void fields(Visit &&visit) {
    visit("vector", vector);
    visit("unroll", unroll);
    visit("rows_per_task", rowsPerTask);
  }
};

// --- GPU plans ----------------------------------------------------------------

/// GEMM on one warp per thread block: lane l computes columns j·32 + l
/// (j < thread_n) of thread_m rows, staging block_k slices of x and W in
/// shared memory (shared_bytes).
struct GpuGemmPlan {
  static constexpr const char *kFamily = "gemm";
  int64_t threadM = 0, threadN = 0, blockK = 0, sharedBytes = 0;
  template <typename Visit> void fields(Visit &&visit) {
    visit("thread_m", threadM);
    visit("thread_n", threadN);
    visit("block_k", blockK);
    visit("shared_bytes", sharedBytes, kBytes);
  }
};

/// Attention on one warp per block of query_block (= warp size) queries,
/// online softmax over key blocks of key_block keys staged in shared memory.
struct GpuAttentionPlan {
  static constexpr const char *kFamily = "attention";
  int64_t queryBlock = 0, keyBlock = 0, sharedBytes = 0;
  bool skipMaskedBlocks = false;
  template <typename Visit> void fields(Visit &&visit) {
    // One query per lane of a warp; each lane keeps key_block scores and
    // probabilities, and more than 32 made ptxas spill.
    visit("query_block", queryBlock, FieldRange{32, 32});
    visit("key_block", keyBlock, FieldRange{1, 32});
    visit("shared_bytes", sharedBytes, kBytes);
    visit("skip_masked_blocks", skipMaskedBlocks);
  }
};

/// Row and elementwise kernels: `threads` threads per block.
struct GpuRowsPlan {
  static constexpr const char *kFamily = "rows";
  int64_t threads = 0;
  template <typename Visit> void fields(Visit &&visit) {
    visit("threads", threads);
  }
};

using TilePlan =
    std::variant<CpuGemmPlan, CpuPackedGemmPlan, CpuAttentionPlan, CpuRowsPlan,
                 GpuGemmPlan, GpuAttentionPlan, GpuRowsPlan>;

/// The plan `tfm.tile` dictionary of a plan for `target`.
mlir::DictionaryAttr toDictionary(mlir::Builder &builder,
                                  const TargetDescription &target,
                                  const TilePlan &plan);

/// The plan of kernel `op` for `target`, read from its `tfm.tile`. Returns
/// nullopt after reporting an error at `op` when the dictionary is missing,
/// was planned for another target, does not have exactly the keys of the
/// plan its kernel kind and target kind call for, or has a value outside
/// its field's range.
std::optional<TilePlan> readTilePlan(mlir::Operation *op,
                                     const TargetDescription &target);

} // namespace tfmc::target

#endif // TFMC_TARGET_TILEPLAN_H
