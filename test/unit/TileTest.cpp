//===- TileTest.cpp - tfm-tile over synthetic target descriptions ---------===//
//
// The tile plans follow the target's description, not one machine: the
// same kernels planned for x86-64-avx2 and for copies of it with another
// L2 size, core count or measured tuning figure get the plans derived by
// hand below (passes/Tile.cpp's cost model; test/Passes/tile.mlir derives
// the registered targets' plans).
//
//===----------------------------------------------------------------------===//

#include "dialects/tfm/TfmDialect.h"
#include "passes/Passes.h"
#include "passes/target/Target.h"
#include "passes/target/TilePlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace mlir;
using namespace tfmc;
using namespace tfmc::target;

namespace {

// Five rows (fewer than a packed micro tile: the dot form) of a 768-deep
// GEMM with 768 and 200 columns, and a decode step's GEMM (one row per
// sequence) of 768 columns.
constexpr const char *kModule = R"mlir(
func.func @few_rows(%x: tensor<1x5x768xf32>) -> (tensor<1x5x768xf32>, tensor<1x5x200xf32>) attributes {tfm.max_len = 64 : i64} {
  %w = tfm.weight "w768" : tensor<768x768xf32>
  %y = tfm.linear %x, %w : (tensor<1x5x768xf32>, tensor<768x768xf32>) -> tensor<1x5x768xf32>
  %w200 = tfm.weight "w200" : tensor<200x768xf32>
  %z = tfm.linear %x, %w200 : (tensor<1x5x768xf32>, tensor<200x768xf32>) -> tensor<1x5x200xf32>
  return %y, %z : tensor<1x5x768xf32>, tensor<1x5x200xf32>
}
func.func @decode(%x: tensor<?x1x768xf32>) -> tensor<?x1x768xf32> attributes {tfm.max_len = 64 : i64, tfm.decode_step} {
  %w = tfm.weight "w768" : tensor<768x768xf32>
  %y = tfm.linear %x, %w : (tensor<?x1x768xf32>, tensor<768x768xf32>) -> tensor<?x1x768xf32>
  return %y : tensor<?x1x768xf32>
}
)mlir";

struct TileTest : ::testing::Test {
  TileTest() {
    DialectRegistry registry;
    tfm::registerDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// x86-64-avx2's description under another name (so that no plan can be
  /// mistaken for the registered target's).
  TargetDescription avx2Copy() {
    std::string error;
    std::optional<TargetDescription> avx2 = lookupTarget("x86-64-avx2", error);
    EXPECT_TRUE(avx2) << error;
    TargetDescription copy = *avx2;
    copy.name = "synthetic-avx2";
    return copy;
  }

  /// The CPU GEMM plans of the module's linears, in order, planned for
  /// `target` at `maxBatch`.
  std::vector<CpuGemmPlan> plans(const TargetDescription &target,
                                 int64_t maxBatch = 1) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModule, &context);
    EXPECT_TRUE(module);
    std::vector<CpuGemmPlan> result;
    if (!module || failed(tileModule(*module, target, 0, maxBatch)))
      return result;
    module->walk([&](tfm::LinearOp linear) {
      std::optional<TilePlan> plan = readTilePlan(linear, target);
      EXPECT_TRUE(plan && std::holds_alternative<CpuGemmPlan>(*plan));
      if (plan && std::holds_alternative<CpuGemmPlan>(*plan))
        result.push_back(std::get<CpuGemmPlan>(*plan));
    });
    return result;
  }

  MLIRContext context;
};

// x86-64-avx2 (16 registers, L2 512 KiB, 8 cores): the dot form's 3 x 3
// tile (tile.mlir derives it); block_m = 3/4 of L2 in rows of K = 768
// floats, a multiple of 3: 3·524288/4/3072 = 128 -> 126; tiles per task
// = clamp(tiles per row / (4 tasks · 8 cores), 1, 8): 768/3 = 256 -> 8;
// ceil(200/3) = 67 -> 2. The decode step at max-batch 1: one row, 1 x 7
// (7/8 FMAs per load, the best one-row tile), ceil(768/7) = 110 -> 3.
TEST_F(TileTest, RegisteredAvx2) {
  std::vector<CpuGemmPlan> got = plans(avx2Copy());
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].microM, 3);
  EXPECT_EQ(got[0].microN, 3);
  EXPECT_EQ(got[0].blockM, 126);
  EXPECT_EQ(got[0].tilesPerTask, 8);
  EXPECT_EQ(got[1].blockM, 126);
  EXPECT_EQ(got[1].tilesPerTask, 2);
  EXPECT_EQ(got[2].microM, 1);
  EXPECT_EQ(got[2].microN, 7);
  EXPECT_EQ(got[2].tilesPerTask, 3);
  EXPECT_EQ(got[2].oneRowMicroN, 0);
}

// Half the L2 (256 KiB): block_m = 3·262144/4/3072 = 64 -> 63; nothing
// else depends on it.
TEST_F(TileTest, L2SizeSetsTheRowBlock) {
  TargetDescription target = avx2Copy();
  target.l2Bytes = 256 * 1024;
  std::vector<CpuGemmPlan> got = plans(target);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].blockM, 63);
  EXPECT_EQ(got[1].blockM, 63);
  EXPECT_EQ(got[0].microM, 3);
  EXPECT_EQ(got[0].tilesPerTask, 8);
}

// 2 cores instead of 8: tiles per task = clamp(tiles / (4 · 2), 1, 8):
// 256/8 = 32 -> 8 (the cap, unchanged); 67/8 = 8 (was 2); the decode
// step's 110/8 = 13 -> 8 (was 3). Fewer cores, fewer and larger tasks.
TEST_F(TileTest, CoresSetTheTaskSize) {
  TargetDescription target = avx2Copy();
  target.cores = 2;
  std::vector<CpuGemmPlan> got = plans(target);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].tilesPerTask, 8);
  EXPECT_EQ(got[1].tilesPerTask, 8);
  EXPECT_EQ(got[2].tilesPerTask, 8);
  EXPECT_EQ(got[0].blockM, 126);
}

// A decode step at max-batch 8 with the registered tuning (decode tiles of
// at most 2 rows): rows 1..2 dividing 8, r·c + r + c <= 16: 2 x 4 (8/6 =
// 1.33 FMAs per load) beats 1 x 7 (0.875); 768/4 = 192 tiles -> 192/32 =
// 6 per task. Its one-row tile for batch 1 is the max-batch 1 plan's, 1 x
// 7 in tasks of 3. With decode tiles of at most 1 row (the tuning figure
// changed) the plan is that tile alone and has no one-row keys.
TEST_F(TileTest, DecodeTilesAndTheirOneRowTile) {
  TargetDescription target = avx2Copy();
  std::vector<CpuGemmPlan> got = plans(target, /*maxBatch=*/8);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].microM, 2);
  EXPECT_EQ(got[2].microN, 4);
  EXPECT_EQ(got[2].tilesPerTask, 6);
  EXPECT_EQ(got[2].oneRowMicroN, 7);
  EXPECT_EQ(got[2].oneRowTilesPerTask, 3);
  // Not a decode step: no one-row tile.
  EXPECT_EQ(got[0].oneRowMicroN, 0);

  target.tuning.decodeTileRows = 1;
  got = plans(target, /*maxBatch=*/8);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].microM, 1);
  EXPECT_EQ(got[2].microN, 7);
  EXPECT_EQ(got[2].oneRowMicroN, 0);
}

} // namespace
