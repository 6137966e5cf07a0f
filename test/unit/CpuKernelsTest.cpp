//===- CpuKernelsTest.cpp - The CPU kernels' numbers on odd shapes --------===//
//
// Each CPU kernel (compiler/codegen/kernels/) with explicit tile plans, JIT-compiled
// for the host and compared with the plain references of KernelReference.h
// on sizes that leave a tail in every tile, block and vector: the paths that
// the E2E fixtures (a few dozen rows, head sizes of 8) never reach, such as
// several row blocks of a GEMM or query blocks cut by a causal bound.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Kernel.h"
#include "support/Microkernels.h"
#include "support/WeightFormat.h"
#include "test/unit/KernelReference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

using namespace tfmc::codegen;
using namespace tfmc::test;

namespace {

/// Builds the CPU kernel, binds `inputs` to its arguments in order and
/// computes `out`.
void run(const KernelSpec &spec, const std::vector<Buffer<>> &inputs,
         Buffer<> out) {
  realizeKernel(buildKernel(spec), inputs, out);
}

/// x's rows quantised once by the quantize kernel (tfm.quantize) with
/// `vector` lanes: (G, B / G, M) bytes, as a linear reads them.
Buffer<int8_t> quantiseOnce(const Buffer<float> &x, int group, int vector) {
  const int K = x.dim(0).extent(), M = x.dim(1).extent();
  const int bytes = int(tfmc::format::quantisedRowBytes(K, group));
  KernelSpec spec = cpuSpec(KernelKind::Quantize, {{"vector", vector}});
  spec.group = group;
  spec.inWidth = K;
  spec.width = bytes;
  Buffer<int8_t> chunks(group, bytes / group, M);
  run(spec, {x}, chunks);
  return chunks;
}

/// The (G, B / G, M) bytes `actual` against the reference's (B, M).
void expectSameBytes(const Buffer<int8_t> &actual,
                     const Buffer<int8_t> &expected) {
  const int group = actual.dim(0).extent();
  ASSERT_EQ(group * actual.dim(1).extent(), expected.dim(0).extent());
  ASSERT_EQ(actual.dim(2).extent(), expected.dim(1).extent());
  int wrong = 0;
  expected.for_each_element([&](int b, int m) {
    const int8_t got = actual(b % group, b / group, m);
    if (got != expected(b, m) && wrong++ < 5)
      ADD_FAILURE() << "byte " << b << " of row " << m << ": " << int(got)
                    << ", expected " << int(expected(b, m));
  });
  EXPECT_EQ(wrong, 0);
}

void expectSameBits(const Buffer<float> &actual, const Buffer<float> &expected) {
  int wrong = 0;
  expected.for_each_element([&](int n, int m) {
    if (std::memcmp(&actual(n, m), &expected(n, m), 4) != 0 && wrong++ < 5)
      ADD_FAILURE() << "output (" << n << ", " << m << "): " << actual(n, m)
                    << ", expected " << expected(n, m);
  });
  EXPECT_EQ(wrong, 0);
}

struct LinearCase {
  const char *name;
  int M, N, K;
  std::map<std::string, int64_t> plan;
};

/// Case `c` of the linear kernel against its reference: x, W (in panels of
/// `panel` rows when not 0), and with an activation also a bias and a
/// residual.
void checkLinear(const LinearCase &c, ActivationFn fn, int64_t panel = 0,
                 const std::string &floatMicrokernel = "",
                 const std::string &floatRowMicrokernel = "") {
  KernelSpec spec = cpuSpec(KernelKind::Linear, c.plan);
  spec.floatMicrokernel = floatMicrokernel;
  spec.floatRowMicrokernel = floatRowMicrokernel;
  spec.width = c.N;
  spec.inWidth = c.K;
  spec.weightPanel = panel;
  spec.activation = fn;
  spec.hasBias = spec.hasResidual = fn != ActivationFn::None;
  Buffer<float> x = randomFloats({c.K, c.M}, 1, 2.0f),
                w = randomFloats({c.K, c.N}, 2), bias, residual;
  std::vector<Buffer<>> inputs{x, panel > 0 ? inPanels(w, int(panel)) : w};
  if (spec.hasBias) {
    bias = randomFloats({c.N}, 3);
    residual = randomFloats({c.N, c.M}, 4);
    inputs.push_back(bias);
    inputs.push_back(residual);
  }
  Buffer<float> out(c.N, c.M);
  run(spec, inputs, out);
  expectClose(out, referenceLinear(x, w, bias, residual, fn));
}

/// A gated linear of `spec` against its reference (KernelReference.h's
/// gatedInputs: M rows, N outputs, depth K).
void checkGated(KernelSpec &spec, int M, int N, int K) {
  KernelCase in = gatedInputs(spec, M, N, K);
  Buffer<float> out(N, M);
  run(spec, in.inputs, out);
  expectClose(out, in.expected);
}

TEST(CpuKernels, LinearBlocksTilesAndTails) {
  for (const LinearCase &c : std::vector<LinearCase>{
           // Row blocks of 6 rows (2 tiles of 3): 45 rows = 7.5 blocks; N and
           // K not multiples of the tile or the vector.
           {"blocks of rows", 45, 29, 37,
            {{"vector", 8}, {"micro_m", 3}, {"micro_n", 4}, {"block_m", 6},
             {"tiles_per_task", 3}}},
           // 16 lanes, 5x4 tiles, one block larger than M.
           {"one block", 23, 40, 48,
            {{"vector", 16}, {"micro_m", 5}, {"micro_n", 4}, {"block_m", 320},
             {"tiles_per_task", 6}}},
           // A decode step: one row, matrix-vector tiles.
           {"one row", 1, 70, 64,
            {{"vector", 16}, {"micro_m", 1}, {"micro_n", 8}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           // A decode step's plan in a --max-batch program: 2-row tiles and
           // a one-row tile. One row runs the one-row form (1 x 7), ...
           {"decode plan, one row", 1, 70, 37,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 128},
             {"tiles_per_task", 3}, {"one_row_micro_n", 7},
             {"one_row_tiles_per_task", 2}}},
           // ... two or more rows the 2-row tiles (5: a partial row tile).
           {"decode plan, rows", 5, 70, 37,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 128},
             {"tiles_per_task", 3}, {"one_row_micro_n", 7},
             {"one_row_tiles_per_task", 2}}},
           {"decode plan, a tile", 2, 70, 37,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 128},
             {"tiles_per_task", 3}, {"one_row_micro_n", 7},
             {"one_row_tiles_per_task", 2}}},
           // No block_m: tiles walk along N first.
           {"no blocks", 13, 11, 9,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 3}}},
           // Packed form: N narrower than a task, K = 2 blocks + 5, 45 rows
           // = 3 tasks of 2 row blocks of 2 micro tiles of 3, + 9 rows.
           {"packed, tails", 45, 29, 37,
            {{"vector", 8}, {"micro_m", 3}, {"micro_n", 2}, {"block_k", 16},
             {"block_m", 6}, {"task_m", 12}, {"task_n", 32}}},
           // Packed, 16 lanes: 3 x 2 tasks of 3 row blocks, the last ones
           // partial in both M and N; K = 300 leaves a partial block.
           {"packed, tasks", 70, 100, 300,
            {{"vector", 16}, {"micro_m", 8}, {"micro_n", 2}, {"block_k", 256},
             {"block_m", 8}, {"task_m", 24}, {"task_n", 64}}},
           // Packed with one row: a micro tile of 8 rows guarded to 1.
           {"packed, one row", 1, 40, 20,
            {{"vector", 16}, {"micro_m", 8}, {"micro_n", 2}, {"block_k", 256},
             {"task_m", 256}, {"task_n", 64}}},
           // A packed plan's kernel with fewer than small_rows rows runs
           // its dot form (13 < 20; blocks of 6 rows, 3x4 tiles)...
           {"packed plan, few rows", 13, 29, 37,
            {{"vector", 8}, {"micro_m", 3}, {"micro_n", 2}, {"block_k", 16},
             {"block_m", 6}, {"task_m", 12}, {"task_n", 32}, {"small_rows", 20},
             {"dot_micro_m", 3}, {"dot_micro_n", 4}, {"dot_block_m", 6},
             {"dot_tiles_per_task", 3}}},
           // ... and with as many or more its packed form (the same plan).
           {"packed plan, many rows", 20, 29, 37,
            {{"vector", 8}, {"micro_m", 3}, {"micro_n", 2}, {"block_k", 16},
             {"block_m", 6}, {"task_m", 12}, {"task_n", 32}, {"small_rows", 20},
             {"dot_micro_m", 3}, {"dot_micro_n", 4}, {"dot_block_m", 6},
             {"dot_tiles_per_task", 3}}},
       }) {
    for (ActivationFn fn : {ActivationFn::None, ActivationFn::GeluTanh,
                            ActivationFn::Gelu, ActivationFn::Relu}) {
      SCOPED_TRACE(std::string(c.name) + ", activation " +
                   std::to_string(int(fn)));
      checkLinear(c, fn);
    }
  }
}

// An f32 W stored in panels of 16 rows (tfm-weight-layout): the packed form
// reads them in place, and fewer rows run the panel form (micro tiles of
// whole vectors of columns that divide N, accumulators over the whole depth).
// N is a whole number of panels; K and M leave tails.
TEST(CpuKernels, LinearWeightsInPanels) {
  const std::map<std::string, int64_t> packed{
      {"vector", 8}, {"micro_m", 3}, {"micro_n", 2}, {"block_k", 16},
      {"block_m", 6}, {"task_m", 12}, {"task_n", 32}, {"small_rows", 20},
      {"dot_micro_m", 4}, {"dot_micro_n", 16}, {"dot_block_m", 8},
      {"dot_tiles_per_task", 3}};
  const std::map<std::string, int64_t> decode{
      {"vector", 8}, {"micro_m", 4}, {"micro_n", 24}, {"block_m", 128},
      {"tiles_per_task", 2}, {"one_row_micro_n", 48},
      {"one_row_tiles_per_task", 1}};
  for (const LinearCase &c : std::vector<LinearCase>{
           // A decode step of one row: 1 x 3 vectors, 4 tiles of 24.
           {"one row", 1, 96, 37,
            {{"vector", 8}, {"micro_m", 1}, {"micro_n", 24}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           // 16 lanes, 3 x 2 vectors over 5 rows (a partial row tile).
           {"16 lanes", 5, 64, 50,
            {{"vector", 16}, {"micro_m", 3}, {"micro_n", 32}, {"block_m", 6},
             {"tiles_per_task", 1}}},
           // A --max-batch plan: 6 rows run the 4 x 3 tiles (a partial
           // row tile), 3 rows (fewer than a tile) the tile with an idle
           // row, one row the one-row tile of 6 vectors.
           {"decode plan, rows", 6, 96, 37, decode},
           {"decode plan, fewer rows than a tile", 3, 96, 37, decode},
           {"decode plan, one row", 1, 96, 37, decode},
           // A packed plan: 13 < small_rows rows run the panel form, 45 the
           // packed one reading the panels (N = 48: a task of 16 columns
           // at the end; K = 2 blocks + 5).
           {"packed plan, few rows", 13, 48, 37, packed},
           {"packed plan, many rows", 45, 48, 37, packed},
       }) {
    for (ActivationFn fn : {ActivationFn::None, ActivationFn::GeluTanh}) {
      SCOPED_TRACE(std::string(c.name) + ", activation " +
                   std::to_string(int(fn)));
      checkLinear(c, fn, /*panel=*/16);
    }
  }
  // A gated linear's gate and up, both in panels: two parts per tile.
  for (const LinearCase &c : std::vector<LinearCase>{
           {"gated, one row", 1, 32, 37,
            {{"vector", 8}, {"micro_m", 1}, {"micro_n", 16}, {"block_m", 256},
             {"tiles_per_task", 1}}},
           {"gated, few rows", 7, 48, 37, packed},
           {"gated, many rows", 33, 48, 37, packed}}) {
    for (bool withBias : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (withBias ? ", biases" : ""));
      KernelSpec spec = cpuSpec(KernelKind::GatedLinear, c.plan);
      spec.weightPanel = 16;
      spec.activation = ActivationFn::Silu;
      spec.hasBias = withBias;
      checkGated(spec, c.M, c.N, c.K);
    }
  }
}

// The packed plans' many-rows form through the f32 microkernel (an f32 W
// in panels; runtime/ukernels/FloatPanels.h), each ISA this CPU runs:
// tasks of rows and columns with tails in M, N (a task of one panel at the
// end) and K (a depth block of 256 and a chunk of 16), the bias,
// activation and residual around it; fewer than small_rows rows run the
// panel form of the same kernel; a gated linear calls it once per weight.
TEST(CpuKernels, LinearF32Microkernel) {
  // The one f32 microkernel (x86-64-avx2's): 8 lanes, its tile's rows.
  const std::string isa = "avx2";
  const int64_t rows = tfmc::format::floatMicrokernelTile(isa).rows;
  const std::map<std::string, int64_t> packed{
      {"vector", 8}, {"micro_m", rows}, {"micro_n", 2},
      {"microkernel", 1}, {"block_k", 256}, {"block_m", rows},
      {"task_m", 2 * rows}, {"task_n", 32}, {"small_rows", 20},
      {"dot_micro_m", 4}, {"dot_micro_n", 16}, {"dot_block_m", 8},
      {"dot_tiles_per_task", 3}};
  for (const LinearCase &c : std::vector<LinearCase>{
           {"many rows", 45, 48, 37, packed},
           {"a depth block and a tail", 27, 80, 300, packed},
           {"few rows", 13, 48, 37, packed}})
    for (ActivationFn fn : {ActivationFn::None, ActivationFn::GeluTanh}) {
      SCOPED_TRACE(std::string(c.name) + ", activation " +
                   std::to_string(int(fn)));
      checkLinear(c, fn, /*panel=*/16, isa);
    }
  for (bool withBias : {false, true}) {
    SCOPED_TRACE(std::string("gated") + (withBias ? ", biases" : ""));
    KernelSpec spec = cpuSpec(KernelKind::GatedLinear, packed);
    spec.floatMicrokernel = isa;
    spec.weightPanel = 16;
    spec.activation = ActivationFn::Silu;
    spec.hasBias = withBias;
    checkGated(spec, 33, 48, 37);
  }
}

// The f32 microkernels over W in rows (tfmc_uk_f32r) in a decode step's
// plan: one row (tiles of 4 outputs), a batch of 8 (one tile of rows with
// 8 lanes' registers, two with 4), 3 and 11 rows (tiles and a rest); N and
// K not multiples of a tile or a vector, tasks that end past N; a gated
// linear (one call per weight).
TEST(CpuKernels, LinearF32RowMicrokernel) {
  __builtin_cpu_init();
  const std::map<std::string, int64_t> decode{
      {"vector", 8}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 128},
      {"tiles_per_task", 3}, {"one_row_micro_n", 7},
      {"one_row_tiles_per_task", 2}};
  for (const std::string isa : {"avx2", "avx512"}) {
    if (isa == "avx512" && !__builtin_cpu_supports("avx512f"))
      continue;
    for (const LinearCase &c : std::vector<LinearCase>{
             {"one row", 1, 70, 37, decode},
             {"eight rows", 8, 301, 100, decode},
             {"three rows", 3, 45, 16, decode},
             {"eleven rows", 11, 29, 9, decode}})
      for (ActivationFn fn : {ActivationFn::None, ActivationFn::GeluTanh}) {
        SCOPED_TRACE(isa + ", " + c.name + ", activation " +
                     std::to_string(int(fn)));
        checkLinear(c, fn, /*panel=*/0, /*floatMicrokernel=*/"", isa);
      }
    SCOPED_TRACE(isa + ", gated");
    KernelSpec spec = cpuSpec(KernelKind::GatedLinear, decode);
    spec.floatRowMicrokernel = isa;
    spec.activation = ActivationFn::Silu;
    spec.hasBias = true;
    checkGated(spec, 6, 37, 41);
  }
}

TEST(CpuKernels, LinearNarrowWeights) {
  struct NarrowCase {
    const char *name;
    int M, N, K;
    std::map<std::string, int64_t> plan;
  };
  for (const NarrowCase &c : std::vector<NarrowCase>{
           // Prefill: an f32 panel per column tile of each row block; K
           // leaves a partial group (100 = 64 + 36) and a partial vector.
           {"panel", 45, 29, 100,
            {{"vector", 16}, {"micro_m", 3}, {"micro_n", 4}, {"block_m", 6},
             {"tiles_per_task", 3}, {"widen_panel", 1}}},
           // Decode: one row, widened in registers.
           {"one row", 1, 70, 200,
            {{"vector", 16}, {"micro_m", 1}, {"micro_n", 4}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           // Decode with whole groups and vectors (K = 3 x 64): each step
           // also prefetches the next tile's rows (prefetchNextRows), past
           // the end of W for the last tiles.
           {"one row, prefetched", 1, 70, 192,
            {{"vector", 16}, {"micro_m", 1}, {"micro_n", 4}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           // A plan of 2-row tiles (--max-batch > 1): one row runs the
           // prefetching specialization, 5 rows the other.
           {"2-row tiles, one row", 1, 70, 192,
            {{"vector", 16}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           {"2-row tiles, 5 rows", 5, 70, 192,
            {{"vector", 16}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           // With a one-row tile (1 x 5, prefetching), which one row runs,
           // and the 2-row tiles for 2 or more.
           {"2-row and one-row tiles, one row", 1, 70, 192,
            {{"vector", 16}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 256},
             {"tiles_per_task", 2}, {"one_row_micro_n", 5},
             {"one_row_tiles_per_task", 3}}},
           {"2-row and one-row tiles, 3 rows", 3, 70, 192,
            {{"vector", 16}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 256},
             {"tiles_per_task", 2}, {"one_row_micro_n", 5},
             {"one_row_tiles_per_task", 3}}},
           // 8 lanes, no blocks, widened in registers with several rows.
           {"registers", 13, 11, 72,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 3}}},
           // Packed: widened as the panel is packed; K blocks of 32 split
           // groups of 64, K = 100 leaves a partial block and group.
           {"packed", 45, 29, 100,
            {{"vector", 16}, {"micro_m", 3}, {"micro_n", 2}, {"block_k", 32},
             {"block_m", 6}, {"task_m", 12}, {"task_n", 32}}},
           // A packed plan's few-rows branch: the dot form's panel.
           {"packed plan, few rows", 13, 29, 100,
            {{"vector", 16}, {"micro_m", 3}, {"micro_n", 2}, {"block_k", 32},
             {"block_m", 6}, {"task_m", 12}, {"task_n", 32}, {"small_rows", 32},
             {"dot_micro_m", 3}, {"dot_micro_n", 4}, {"dot_block_m", 6},
             {"dot_tiles_per_task", 3}, {"dot_widen_panel", 1}}},
       }) {
    for (auto [type, group] : std::vector<std::pair<WeightType, int>>{
             {WeightType::BF16, 0},
             {WeightType::Int8, 64},
             {WeightType::Int8, 16},
             // Not a whole number of vectors: each lane reads its scale.
             {WeightType::Int8, 12},
             // Q4_0 blocks; K = 100 and 200 end in a padded block.
             {WeightType::Int4, 32}}) {
      SCOPED_TRACE(std::string(c.name) + ", " +
                   (type == WeightType::BF16   ? "bf16"
                    : type == WeightType::Int8 ? "int8"
                                               : "int4") +
                   " group " + std::to_string(group));
      // int4's decode form (LinearQuantized.cpp) has no one-row tile, and
      // Tile.cpp plans none for it.
      if (type == WeightType::Int4 && c.plan.count("one_row_micro_n"))
        continue;
      KernelSpec spec = cpuSpec(KernelKind::Linear, c.plan);
      spec.width = c.N;
      spec.inWidth = c.K;
      spec.weightType = type;
      spec.group = group;
      spec.activation = ActivationFn::GeluTanh;
      spec.hasBias = spec.hasResidual = true;
      Buffer<float> x = randomFloats({c.K, c.M}, 1, 2.0f),
                    w = randomFloats({c.K, c.N}, 2),
                    bias = randomFloats({c.N}, 3),
                    residual = randomFloats({c.N, c.M}, 4);
      NarrowWeight stored = narrow(w, type, group);
      std::vector<Buffer<>> inputs{x};
      for (const Buffer<> &argument : stored.arguments)
        inputs.push_back(argument);
      inputs.push_back(bias);
      inputs.push_back(residual);
      Buffer<float> out(c.N, c.M);
      run(spec, inputs, out);
      expectClose(out, referenceLinear(x, stored.meaning, bias, residual,
                                       ActivationFn::GeluTanh));
    }
  }
}

// int8 activations: the integer form against the contract's reference
// (referenceIntegerLinear), which quantises x exactly as the kernel must,
// so only f32 summation separates them (1e-5 of the largest output).
// Rounding by truncation, another group size for x, or the scales' product
// in another precision would each move outputs by ~1e-2 of it.
TEST(CpuKernels, LinearInt8Activations) {
  struct IntegerCase {
    const char *name;
    int M, N, K, group;
    bool gated;
    std::map<std::string, int64_t> plan;
    /// A plan only the microkernels run (Tile.cpp's tasks of whole
    /// 32-output panels for many rows).
    bool microkernelOnly = false;
  };
  const std::vector<IntegerCase> cases{
           // Decode: one row, whole groups of 64, 16 lanes (steps of 32).
           {"one row", 1, 70, 192, 64, false,
            {{"vector", 16}, {"micro_m", 1}, {"micro_n", 4}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           // 8 lanes; K = 100: a short last group (36), zeros past K.
           {"short last group", 5, 29, 100, 64, false,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 3}, {"block_m", 4},
             {"tiles_per_task", 3}}},
           // Groups of 16 (one step of 8 lanes) and of 12 (a step of 32
           // past the group: zeros).
           {"group 16", 13, 11, 80, 16, false,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 3}}},
           {"group 12", 7, 19, 60, 12, false,
            {{"vector", 16}, {"micro_m", 1}, {"micro_n", 2}}},
           // Many rows in blocks, and a gated linear (gate and up share x's
           // quantisation).
           {"rows in blocks", 45, 29, 128, 64, false,
            {{"vector", 8}, {"micro_m", 3}, {"micro_n", 2}, {"block_m", 6},
             {"tiles_per_task", 3}}},
           {"gated", 9, 21, 136, 64, true,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 2}, {"block_m", 4},
             {"tiles_per_task", 2}}},
           // Many rows with a panel plan: the dot form on dequantised x
           // (q · d) and W's f32 panel; K = 100 and a gated linear.
           {"panel", 45, 29, 100, 64, false,
            {{"vector", 16}, {"micro_m", 3}, {"micro_n", 4}, {"block_m", 6},
             {"tiles_per_task", 3}, {"widen_panel", 1}}},
           {"gated panel", 21, 19, 128, 64, true,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 2}, {"block_m", 4},
             {"tiles_per_task", 2}, {"widen_panel", 1}}},
           // Many rows as the microkernels' panels take them (tasks of 64
           // outputs: two panels, the last task's partial), and a gated
           // linear.
           {"microkernel panels", 45, 70, 192, 64, false,
            {{"vector", 16}, {"micro_m", 3}, {"micro_n", 32}, {"block_m", 6},
             {"tiles_per_task", 2}}, true},
           {"gated microkernel panels", 11, 40, 128, 64, true,
            {{"vector", 16}, {"micro_m", 3}, {"micro_n", 32}, {"block_m", 6},
             {"tiles_per_task", 1}}, true},
  };
  // Each case with int8 W and, where its groups are 64, with int4 W (Q4_0
  // blocks of 32: x is quantised per 32 features then).
  std::vector<std::pair<IntegerCase, WeightType>> runs;
  for (IntegerCase c : cases) {
    runs.push_back({c, WeightType::Int8});
    if (c.group == 64) {
      c.group = 32;
      runs.push_back({c, WeightType::Int4});
    }
  }
  // Each run also through each microkernel that takes it (support/
  // Microkernels.h: groups of a multiple of 32, no panel plan), called
  // from the JIT-compiled pipeline: the same contract.
  // (The avx512 one chooses vpdpbusd or the AVX2 code itself: safe on
  // any CPU with AVX2, which every host target has.)
  const std::vector<std::string> microkernels{"", "avx2", "avx512"};
  for (const auto &[c, type] : runs)
   for (const std::string &microkernel : microkernels) {
    if (!microkernel.empty() &&
        (c.plan.count("widen_panel") || c.group % 32 != 0))
      continue;
    if (microkernel.empty() && c.microkernelOnly)
      continue;
    SCOPED_TRACE(std::string(c.name) +
                 (type == WeightType::Int4 ? ", int4" : ", int8") +
                 (microkernel.empty() ? "" : ", microkernel " + microkernel));
    KernelSpec spec = cpuSpec(c.gated ? KernelKind::GatedLinear
                                      : KernelKind::Linear,
                              c.plan);
    spec.integerMicrokernel = microkernel;
    spec.width = c.N;
    spec.inWidth = c.K;
    spec.weightType = type;
    spec.group = c.group;
    spec.integerProducts = true;
    spec.activation = c.gated ? ActivationFn::Silu : ActivationFn::GeluTanh;
    spec.hasBias = true;
    spec.hasResidual = !c.gated;
    Buffer<float> x = randomFloats({c.K, c.M}, 1, 2.0f);
    // Ties of x · (1/d) and an all-zero group in row 0; a NaN in the last
    // row and an infinity in the one before it (when there are such rows).
    x(0, 0) = 4.0f;
    x(1, 0) = 4.0f * 0.5f / 127.0f * 3.0f;
    for (int k = std::min(c.K, c.group); k < std::min(c.K, 2 * c.group); ++k)
      x(k, 0) = 0.0f;
    if (c.M > 2) {
      x(c.K / 2, c.M - 1) = std::numeric_limits<float>::quiet_NaN();
      x(1, c.M - 2) = std::numeric_limits<float>::infinity();
    }
    Buffer<float> w = randomFloats({c.K, c.N}, 2), up = randomFloats({c.K, c.N}, 5),
                  bias = randomFloats({c.N}, 3), upBias = randomFloats({c.N}, 6),
                  residual = randomFloats({c.N, c.M}, 4);
    NarrowWeight stored = narrow(w, type, c.group);
    NarrowWeight storedUp = narrow(up, type, c.group);
    std::vector<Buffer<>> inputs{x};
    for (const Buffer<> &argument : stored.arguments)
      inputs.push_back(argument);
    if (c.gated)
      for (const Buffer<> &argument : storedUp.arguments)
        inputs.push_back(argument);
    inputs.push_back(bias);
    if (c.gated)
      inputs.push_back(upBias);
    else
      inputs.push_back(residual);
    Buffer<float> out(c.N, c.M), expected;
    run(spec, inputs, out);
    if (c.gated)
      expected = referenceIntegerGatedLinear(x, stored, storedUp, c.group, bias,
                                             upBias, ActivationFn::Silu);
    else
      expected = referenceIntegerLinear(x, stored, c.group, bias, residual,
                                        ActivationFn::GeluTanh);
    const float largest = largestFinite(expected);
    int nans = expectCloseWithNaNs(out, expected);
    EXPECT_EQ(nans, c.M > 2 ? 2 * c.N : 0);
    // x quantised once (tfm.quantize, tfm-quantise-once): the quantize
    // kernel writes the reference's bytes, and the same linear reading
    // them gives the same outputs, bit for bit (each form; of the
    // microkernels, whose Halide side is one, the avx512 one).
    if (microkernel == "avx2")
      continue;
    Buffer<int8_t> bytes = quantiseOnce(x, c.group, int(c.plan.at("vector")));
    expectSameBytes(bytes, referenceQuantisedRows(x, c.group));
    KernelSpec fromBytes = spec;
    fromBytes.quantisedInput = true;
    inputs.front() = bytes;
    Buffer<float> again(c.N, c.M);
    run(fromBytes, inputs, again);
    expectSameBits(again, out);
    // The quantisation matters: the same weights with f32 x are further
    // from the reference than the tolerance.
    Buffer<float> widened = referenceLinear(x, stored.meaning, bias, residual,
                                            ActivationFn::GeluTanh);
    if (!c.gated) {
      float moved = 0;
      expected.for_each_element([&](int n, int m) {
        if (std::isfinite(expected(n, m)))
          moved = std::max(moved, std::abs(widened(n, m) - expected(n, m)));
      });
      EXPECT_GT(moved, 1e-3f * largest);
    }
  }
}

// bf16 activations (tfmc --activations bf16): x rounded to bf16 by
// Halide's own bfloat16_t (nearest even), the bf16 weight's values, f64
// sums: only f32 summation separates the kernel from it (1e-5 of each
// output), while f32 x moves the outputs by more than that. Each case runs
// both forms: bf16 pairs (a target with the bf16 dot product) and f32
// products of the rounded x (the others), as the host's target compiles
// them (the pair sums as f32 products and adds); on a CPU with every
// feature of x86-64-avx512-bf16 the pairs also as that target compiles
// them, with vdpbf16ps.
TEST(CpuKernels, LinearBf16Activations) {
  const std::map<std::string, int64_t> kTwoRowPlan{
      {"vector", 16}, {"micro_m", 2}, {"micro_n", 4}, {"block_m", 256},
      {"tiles_per_task", 2}, {"one_row_micro_n", 5},
      {"one_row_tiles_per_task", 3}};
  struct Bf16Case {
    const char *name;
    int M, N, K;
    bool gated;
    std::map<std::string, int64_t> plan;
  };
  // clang-format off
  const std::vector<Bf16Case> cases{
      // Decode: one row, whole steps of 32 (16 lanes of pairs): each step
      // also prefetches the next tile's rows.
      {"one row", 1, 70, 192, false,
       {{"vector", 16}, {"micro_m", 1}, {"micro_n", 4}, {"block_m", 256},
        {"tiles_per_task", 2}}},
      // K = 100: a partial step, zeros past K on both sides.
      {"partial step", 1, 37, 100, false,
       {{"vector", 16}, {"micro_m", 1}, {"micro_n", 3}, {"tiles_per_task", 2}}},
      // A --max-batch plan: 2-row tiles with a one-row tile, run with one
      // row and with 3.
      {"2-row and one-row tiles, one row", 1, 70, 192, false, kTwoRowPlan},
      {"2-row and one-row tiles, 3 rows", 3, 70, 192, false, kTwoRowPlan},
      // Prefill: many rows in blocks, 8 lanes (steps of 16), K = 72.
      {"rows in blocks", 45, 29, 72, false,
       {{"vector", 8}, {"micro_m", 3}, {"micro_n", 2}, {"block_m", 6},
        {"tiles_per_task", 3}}},
      // Prefill as the tile pass plans it without pairs: W widened once per
      // row block into an f32 panel.
      {"panel", 45, 29, 100, false,
       {{"vector", 16}, {"micro_m", 3}, {"micro_n", 4}, {"block_m", 6},
        {"tiles_per_task", 3}, {"widen_panel", 1}}},
      // Gated: gate and up share x's rounding.
      {"gated", 9, 21, 136, true,
       {{"vector", 8}, {"micro_m", 2}, {"micro_n", 2}, {"block_m", 4},
        {"tiles_per_task", 2}}},
  };
  // clang-format on
  // x86-64-avx512-bf16's kernels, where this CPU can run them.
  std::optional<Halide::Target> bf16Dot;
  {
    std::string error;
    std::optional<tfmc::target::TargetDescription> t =
        tfmc::target::lookupTarget("x86-64-avx512-bf16", error);
    ASSERT_TRUE(t) << error;
    if (tfmc::target::hostHasFeatures(*t))
      bf16Dot = Halide::Target(t->halideTarget + t->bf16DotFeatures)
                    .with_feature(Halide::Target::JIT);
  }
  for (const Bf16Case &c : cases)
    for (bool pairs : {true, false}) {
      SCOPED_TRACE(std::string(c.name) +
                   (pairs ? ", pairs" : ", f32 products"));
      KernelSpec spec = cpuSpec(
          c.gated ? KernelKind::GatedLinear : KernelKind::Linear, c.plan);
      spec.width = c.N;
      spec.inWidth = c.K;
      spec.weightType = WeightType::BF16;
      spec.bf16Products = true;
      spec.bf16Pairs = pairs;
      spec.activation = c.gated ? ActivationFn::Silu : ActivationFn::GeluTanh;
      spec.hasBias = true;
      spec.hasResidual = !c.gated;
      Buffer<float> x = randomFloats({c.K, c.M}, 1, 2.0f),
                    w = randomFloats({c.K, c.N}, 2),
                    up = randomFloats({c.K, c.N}, 5),
                    bias = randomFloats({c.N}, 3),
                    upBias = randomFloats({c.N}, 6),
                    residual = randomFloats({c.N, c.M}, 4);
      Buffer<float> rounded(c.K, c.M);
      rounded.for_each_element([&](int k, int m) {
        rounded(k, m) = float(Halide::bfloat16_t(x(k, m)));
      });
      NarrowWeight stored = narrow(w, WeightType::BF16, 0),
                   storedUp = narrow(up, WeightType::BF16, 0);
      std::vector<Buffer<>> inputs{x, stored.arguments[0]};
      if (c.gated)
        inputs.push_back(storedUp.arguments[0]);
      inputs.push_back(bias);
      inputs.push_back(c.gated ? upBias : residual);
      auto reference = [&](const Buffer<float> &input) {
        return c.gated ? referenceGatedLinear(input, stored.meaning,
                                              storedUp.meaning, bias, upBias,
                                              ActivationFn::Silu)
                       : referenceLinear(input, stored.meaning, bias, residual,
                                         ActivationFn::GeluTanh);
      };
      Buffer<float> expected = reference(rounded);
      Buffer<float> out(c.N, c.M);
      run(spec, inputs, out);
      expectCloseEach(out, expected);
      if (bf16Dot && pairs) {
        SCOPED_TRACE("x86-64-avx512-bf16");
        Buffer<float> dot(c.N, c.M);
        realizeKernel(buildKernel(spec), inputs, dot, *bf16Dot);
        expectCloseEach(dot, expected);
      }
      // The rounding matters: f32 x moves some output by more than the
      // tolerance.
      Buffer<float> unrounded = reference(x);
      float moved = 0;
      expected.for_each_element([&](int n, int m) {
        moved = std::max(moved, std::abs(unrounded(n, m) - expected(n, m)) /
                                    std::max(1.0f, std::abs(expected(n, m))));
      });
      EXPECT_GT(moved, 1e-4f);
    }
}

/// An embedding kernel over a [V, D] table stored as `type`.
static KernelSpec narrowEmbeddingSpec(int D, int V, WeightType type,
                                      int group) {
  KernelSpec spec = cpuSpec(KernelKind::Embedding,
                            {{"vector", 16}, {"rows_per_task", 2}});
  spec.width = D;
  spec.vocab = V;
  spec.weightType = type;
  spec.group = group;
  return spec;
}

TEST(CpuKernels, EmbeddingNarrowTable) {
  const int D = 40, V = 9, S = 5, B = 2;
  for (auto [type, group] : std::vector<std::pair<WeightType, int>>{
           {WeightType::BF16, 0}, {WeightType::Int8, 16},
           {WeightType::Int4, 32}}) {
    KernelSpec spec = narrowEmbeddingSpec(D, V, type, group);
    NarrowWeight table = narrow(randomFloats({D, V}, 5), type, group);
    Buffer<int64_t> ids(S, B);
    ids.for_each_element([&](int s, int b) { ids(s, b) = (3 * s + 5 * b) % V; });
    std::vector<Buffer<>> inputs{ids};
    for (const Buffer<> &argument : table.arguments)
      inputs.push_back(argument);
    Buffer<float> out(D, S, B), expected(D, S, B);
    run(spec, inputs, out);
    expected.for_each_element([&](int d, int s, int b) {
      expected(d, s, b) = table.meaning(d, int(ids(s, b)));
    });
    expectClose(out, expected);
  }
}

// int4 and int8 block scales span f16's range, subnormals and zero
// included: the kernels widen them with integer operations
// (WeightInput::scaleFunc), which narrow()'s Halide::float16_t conversion
// checks. A scale that is an infinity or a NaN (a file's; the converters
// never write one) gives non-finite values for its whole block, as an f32
// weight that is one would: loading does not read the blocks to refuse it.
TEST(CpuKernels, BlockScalesOverF16Range) {
  const int D = 96, V = 9, S = 9, B = 1;
  Buffer<float> table = randomFloats({D, V}, 5);
  // Per row: ordinary, tiny (subnormal scales: max |w| / 8 < 2^-14),
  // tinier, zero, negative extremes, large; then three ordinary rows
  // whose block 1 gets the scale +inf, -inf and a NaN.
  const float factors[V] = {1.0f, 3e-5f, 1e-7f, 0.0f, -2.0f, 3000.0f,
                            1.0f, 1.0f, 1.0f};
  const uint16_t nonFinite[3] = {0x7c00, 0xfc00, 0x7e00};
  table.for_each_element([&](int d, int v) { table(d, v) *= factors[v]; });
  for (auto [type, group] : std::vector<std::pair<WeightType, int>>{
           {WeightType::Int4, 32}, {WeightType::Int8, 32}, {WeightType::Int8, 64}}) {
    SCOPED_TRACE((type == WeightType::Int4 ? "int4, group " : "int8, group ") +
                 std::to_string(group));
    KernelSpec spec = narrowEmbeddingSpec(D, V, type, group);
    NarrowWeight stored = narrow(table, type, group);
    const int blockBytes = type == WeightType::Int4 ? 18 : 2 + group;
    auto *bytes = static_cast<uint8_t *>(stored.arguments[0].data());
    const int rowBytes = stored.arguments[0].dim(0).extent();
    for (int i = 0; i < 3; ++i) {
      bytes[(6 + i) * rowBytes + blockBytes] = uint8_t(nonFinite[i] & 0xff);
      bytes[(6 + i) * rowBytes + blockBytes + 1] = uint8_t(nonFinite[i] >> 8);
    }
    Buffer<int64_t> ids(S, B);
    ids.for_each_element([&](int s, int b) { ids(s, b) = s; });
    std::vector<Buffer<>> inputs{ids};
    for (const Buffer<> &argument : stored.arguments)
      inputs.push_back(argument);
    Buffer<float> out(D, S, B);
    run(spec, inputs, out);
    out.for_each_element([&](int d, int s, int b) {
      if (s >= 6 && d / group == 1)
        ASSERT_FALSE(std::isfinite(out(d, s, b))) << d << ", " << s;
      else
        ASSERT_EQ(out(d, s, b), stored.meaning(d, int(ids(s, b))))
            << d << ", " << s;
    });
  }
}

TEST(CpuKernels, GeluTanhOverItsRange) {
  // x / (1 + exp(-2u)) against 0.5·x·(1 + tanh(u)) far into both tails,
  // where exp's argument is clamped.
  const int width = 64, rows = 40;
  Buffer<float> x(width, rows);
  x.for_each_element([&](int w, int r) { x(w, r) = (w + width * r - 1280) / 20.0f; });
  KernelSpec spec = cpuSpec(KernelKind::Activation, {{"vector", 16}});
  spec.width = width;
  spec.activation = ActivationFn::GeluTanh;
  Buffer<float> out(width, rows), expected(width, rows);
  run(spec, {x}, out);
  expected.for_each_element([&](int w, int r) {
    expected(w, r) = float(referenceActivation(ActivationFn::GeluTanh, x(w, r)));
  });
  expectCloseEach(out, expected);
}

TEST(CpuKernels, LayerNormRowSums) {
  // Widths that are and are not a whole number of vectors (the row sums
  // are vector partial sums only in the first case).
  for (auto [width, lanes] :
       std::vector<std::pair<int, int>>{{37, 8}, {64, 16}, {768, 16}, {20, 16}}) {
    for (bool withResidual : {false, true}) {
      SCOPED_TRACE(std::to_string(width) + " wide, " + std::to_string(lanes) +
                   " lanes" + (withResidual ? ", residual" : ""));
      const int rows = 11;
      KernelSpec spec = cpuSpec(KernelKind::LayerNorm,
                                {{"vector", lanes}, {"rows_per_task", 3}});
      spec.width = width;
      spec.eps = 1e-5;
      spec.hasResidual = withResidual;
      Buffer<float> x = randomFloats({width, rows}, 10, 3.0f), residual;
      Buffer<float> gamma = randomFloats({width}, 12),
                    beta = randomFloats({width}, 13);
      std::vector<Buffer<>> inputs{x};
      if (withResidual) {
        residual = randomFloats({width, rows}, 11);
        inputs.push_back(residual);
      }
      inputs.push_back(gamma);
      inputs.push_back(beta);
      Buffer<float> out(width, rows);
      run(spec, inputs, out);
      expectClose(out,
                  referenceLayerNorm(x, residual, gamma, beta, spec.eps));
    }
  }
}

struct AttentionCase {
  const char *name;
  int queries, keys, dim;
  AttentionMask mask;
};

TEST(CpuKernels, LastPositionOfEachSequence) {
  // Widths with a vector tail and without; batches that leave a partial
  // task of rows; one position (a one-token prompt) and several.
  for (auto [width, lanes, length, batch] :
       std::vector<std::array<int, 4>>{
           {37, 8, 5, 3}, {768, 16, 128, 1}, {20, 16, 1, 4}}) {
    for (bool first : {false, true}) {
      SCOPED_TRACE(std::to_string(width) + " wide, " +
                   std::to_string(length) + " positions, batch " +
                   std::to_string(batch) + (first ? ", first" : ", last"));
      KernelSpec spec = cpuSpec(
          first ? KernelKind::FirstPosition : KernelKind::LastPosition,
          {{"vector", lanes}, {"unroll", 2}, {"rows_per_task", 2}});
      spec.width = width;
      Buffer<float> x = randomFloats({width, length, batch}, 20);
      Buffer<float> out(width, batch);
      run(spec, {x}, out);
      Buffer<float> expected = referenceLastPosition(x, first);
      // A copy: exactly the input's values.
      out.for_each_element([&](int d, int b) {
        EXPECT_EQ(out(d, b), expected(d, b)) << "at " << d << ", " << b;
      });
    }
  }
}

TEST(CpuKernels, AttentionMicroTilesAndMasks) {
  const int heads = 3, batch = 2;
  for (const AttentionCase &c : std::vector<AttentionCase>{
           {"full", 45, 45, 8, {}},
           {"causal", 45, 45, 64, {true}},
           {"causal + padding", 37, 37, 16, {true, true}},
           {"padding (cross)", 7, 30, 8, {false, true}},
           {"causal window", 45, 45, 8, {true, false, 5}},
           {"window", 45, 45, 24, {false, false, 4}},
           {"one query (decode)", 1, 21, 64, {}},
       }) {
    // The AVX2 and AVX-512 plans' shapes: 16 queries a block, 6 or 16 keys
    // a Q·Kᵀ tile, 2x32 or 4x64 P·V tiles; keys and values staged or not.
    for (auto plan : std::vector<std::map<std::string, int64_t>>{
             {{"vector", 8}, {"query_block", 16}, {"micro_k", 6},
              {"pv_queries", 2}, {"pv_width", 32}},
             {{"vector", 16}, {"query_block", 16}, {"micro_k", 16},
              {"pv_queries", 4}, {"pv_width", 64}},
             // A decode step's plan: keys and values read in place.
             {{"vector", 16}, {"query_block", 16}, {"micro_k", 16},
              {"pv_queries", 4}, {"pv_width", 64}, {"stage_kv", 0}},
             // One query a block (the tile pass's decode plans): the head
             // dimension in vectors where it is a whole number of them
             // (64 and 16 at 8 or 16 lanes, 24 at 8), else scalar dots.
             {{"vector", 16}, {"query_block", 1}, {"micro_k", 16},
              {"pv_queries", 1}, {"pv_width", 64}, {"stage_kv", 0}},
             {{"vector", 8}, {"query_block", 1}, {"micro_k", 6},
              {"pv_queries", 1}, {"pv_width", 32}, {"stage_kv", 0}}}) {
      SCOPED_TRACE(std::string(c.name) + ", " +
                   std::to_string(plan["vector"]) + " lanes, " +
                   std::to_string(plan["query_block"]) + " queries a block" +
                   (plan.count("stage_kv") ? ", read in place" : ""));
      KernelSpec spec = cpuAttentionSpec(plan, heads, 0, c.dim);
      spec.mask.causal = c.mask.causal;
      spec.mask.padding = c.mask.padding;
      spec.mask.window = c.mask.window;
      Buffer<float> q = randomFloats({c.dim, heads, c.queries, batch}, 7, 2.0f);
      Buffer<float> k = randomFloats({c.dim, heads, c.keys, batch}, 8, 2.0f);
      Buffer<float> v = randomFloats({c.dim, heads, c.keys, batch}, 9);
      // Sequence 0 keeps its first keys; sequence 1 has every key masked
      // (its output is zeros).
      Buffer<int64_t> keep(c.keys, batch);
      for (int j = 0; j < c.keys; ++j) {
        keep(j, 0) = j < c.keys - 5 ? 1 : 0;
        keep(j, 1) = 0;
      }
      std::vector<Buffer<>> inputs{q, k, v};
      if (c.mask.padding)
        inputs.push_back(keep);
      Buffer<float> out(c.dim, heads, c.queries, batch);
      run(spec, inputs, out);
      expectClose(out, referenceAttention(q, k, v, keep, c.mask, spec.attentionScale));
    }
  }
}

// Grouped-query attention's decode plan (Tile.cpp: head_block): a task per
// K/V head whose block is the query heads sharing it, at each position.
// Groups of 4, 3 (a vector of 3 heads) and 8 (TinyLlama's), one query (a
// decode step) and two (a step of two tokens), causal from the end, with
// padding (sequence 1 wholly masked: zeros), head sizes 64 and 16, against
// the reference.
TEST(CpuKernels, AttentionGroupedQueryHeadsAsTheBlock) {
  const int batch = 2, keys = 37;
  struct Case {
    int heads, kvHeads, dim, queries;
    bool padding;
  };
  for (const Case &c : std::vector<Case>{{8, 2, 64, 1, false},
                                         {8, 2, 64, 2, true},
                                         {6, 2, 16, 1, true},
                                         {32, 4, 64, 1, false}}) {
    const int group = c.heads / c.kvHeads;
    for (auto plan : std::vector<std::map<std::string, int64_t>>{
             {{"vector", 16}, {"query_block", group}, {"head_block", 1},
              {"micro_k", 16}, {"pv_queries", std::min(4, group)},
              {"pv_width", 64}, {"stage_kv", 0}},
             {{"vector", 8}, {"query_block", group}, {"head_block", 1},
              {"micro_k", 6}, {"pv_queries", std::min(2, group)},
              {"pv_width", 32}, {"stage_kv", 0}}}) {
      SCOPED_TRACE(std::to_string(c.heads) + " heads, " +
                   std::to_string(c.kvHeads) + " K/V heads, " +
                   std::to_string(c.queries) + " queries, " +
                   std::to_string(plan["vector"]) + " lanes" +
                   (c.padding ? ", padding" : ""));
      KernelSpec spec = cpuAttentionSpec(plan, c.heads, c.kvHeads, c.dim);
      spec.mask.causal = spec.mask.queriesAtEnd = true;
      spec.mask.padding = c.padding;
      Buffer<float> q =
          randomFloats({c.dim, c.heads, c.queries, batch}, 27, 2.0f);
      Buffer<float> k =
          randomFloats({c.dim, c.kvHeads, keys, batch}, 28, 2.0f);
      Buffer<float> v = randomFloats({c.dim, c.kvHeads, keys, batch}, 29);
      Buffer<int64_t> keep(keys, batch);
      for (int j = 0; j < keys; ++j) {
        keep(j, 0) = j < 3 ? 0 : 1;
        keep(j, 1) = c.padding ? 0 : 1;
      }
      std::vector<Buffer<>> inputs{q, k, v};
      if (c.padding)
        inputs.push_back(keep);
      Buffer<float> out(c.dim, c.heads, c.queries, batch);
      run(spec, inputs, out);
      AttentionMask mask;
      mask.causal = mask.queriesAtEnd = true;
      mask.padding = c.padding;
      expectClose(out, referenceAttention(q, k, v, keep, mask,
                                          spec.attentionScale));
    }
  }
}

TEST(CpuKernels, AttentionLogitSoftcap) {
  // Gemma 2's soft-capping of the scaled scores, before the masks: a cap of
  // 2 where the scores reach about 8, with masked keys that must stay
  // masked (not -cap) and a window.
  const int heads = 2, batch = 2, dim = 16;
  for (AttentionMask mask : {AttentionMask{true, true}, AttentionMask{true, false, 5}}) {
    KernelSpec spec = cpuSpec(KernelKind::Attention,
                              {{"vector", 8}, {"query_block", 16}, {"micro_k", 6},
                               {"pv_queries", 2}, {"pv_width", 32}});
    spec.width = heads * dim;
    spec.heads = heads;
    spec.headDim = spec.valueHeadDim = dim;
    spec.attentionScale = 0.25;
    spec.softcap = 2.0;
    spec.mask.causal = mask.causal;
    spec.mask.padding = mask.padding;
    spec.mask.window = mask.window;
    const int length = 37;
    Buffer<float> q = randomFloats({dim, heads, length, batch}, 17, 2.0f);
    Buffer<float> k = randomFloats({dim, heads, length, batch}, 18, 2.0f);
    Buffer<float> v = randomFloats({dim, heads, length, batch}, 19);
    Buffer<int64_t> keep(length, batch);
    for (int j = 0; j < length; ++j)
      keep(j, 0) = keep(j, 1) = j < length - 4 ? 1 : 0;
    std::vector<Buffer<>> inputs{q, k, v};
    if (mask.padding)
      inputs.push_back(keep);
    Buffer<float> out(dim, heads, length, batch);
    run(spec, inputs, out);
    expectClose(out, referenceAttention(q, k, v, keep, mask, 0.25, 2.0));
  }
}

TEST(CpuKernels, SoftcapOnBothTails) {
  // The final logits' soft-capping: far into both tails (±cap), through
  // zero, and a vector tail.
  const int width = 70, rows = 5;
  Buffer<float> x(width, rows);
  x.for_each_element([&](int w, int r) { x(w, r) = (w + width * r - 175) / 4.0f; });
  KernelSpec spec = cpuSpec(KernelKind::Softcap, {{"vector", 16}});
  spec.width = width;
  spec.softcap = 30.0;
  Buffer<float> out(width, rows), expected(width, rows);
  run(spec, {x}, out);
  expected.for_each_element([&](int w, int r) {
    expected(w, r) = float(30.0 * std::tanh(double(x(w, r)) / 30.0));
  });
  expectCloseEach(out, expected);
}

// ---- The Llama family's kernels (issue 14) ---------------------------------

TEST(CpuKernels, GatedLinearBothWeightsOneTile) {
  struct GatedCase {
    const char *name;
    int M, N, K;
    std::map<std::string, int64_t> plan;
  };
  for (const GatedCase &c : std::vector<GatedCase>{
           // Blocks of 4 rows (2 tiles of 2) over 11 rows; N = 29 and
           // K = 37 leave tails in the 3-column tile and the vector.
           {"blocks of rows", 11, 29, 37,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 3}, {"block_m", 4},
             {"tiles_per_task", 3}}},
           // A decode step: one row, 16 lanes; K = 100 leaves a partial
           // int8 group and a partial vector.
           {"one row", 1, 70, 100,
            {{"vector", 16}, {"micro_m", 1}, {"micro_n", 5}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           // Decode with whole vectors and groups (K = 6 x 16): both
           // weights' next rows are prefetched.
           {"one row, prefetched", 1, 70, 96,
            {{"vector", 16}, {"micro_m", 1}, {"micro_n", 5}, {"block_m", 256},
             {"tiles_per_task", 2}}},
           // Packed: both weights' panels per K block, tails in M, N and K.
           {"packed", 11, 29, 37,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 2}, {"block_k", 16},
             {"block_m", 2}, {"task_m", 4}, {"task_n", 16}}},
           // A packed plan's few-rows branch (11 < 16): the dot form.
           {"packed plan, few rows", 11, 29, 37,
            {{"vector", 8}, {"micro_m", 2}, {"micro_n", 2}, {"block_k", 16},
             {"block_m", 2}, {"task_m", 4}, {"task_n", 16}, {"small_rows", 16},
             {"dot_micro_m", 2}, {"dot_micro_n", 2}, {"dot_block_m", 4},
             {"dot_tiles_per_task", 3}}},
       }) {
    for (auto [type, group] : std::vector<std::pair<WeightType, int>>{
             {WeightType::F32, 0}, {WeightType::BF16, 0},
             {WeightType::Int8, 16}, {WeightType::Int4, 32}}) {
      for (bool withBias : {false, true}) {
        // A narrow W with several rows is read from an f32 panel (the
        // planner's choice); f32 and one row widen in registers.
        bool panel = type != WeightType::F32 && c.M > 1;
        SCOPED_TRACE(std::string(c.name) + ", weights " +
                     std::to_string(int(type)) +
                     (withBias ? ", biases" : "") + (panel ? ", panel" : ""));
        std::map<std::string, int64_t> plan = c.plan;
        plan["widen_panel"] = plan["dot_widen_panel"] = panel;
        KernelSpec spec = cpuSpec(KernelKind::GatedLinear, plan);
        spec.weightType = type;
        spec.group = group;
        spec.activation = ActivationFn::Silu;
        spec.hasBias = withBias;
        checkGated(spec, c.M, c.N, c.K);
      }
    }
  }
}

TEST(CpuKernels, GatedLinearOtherActivations) {
  // The epilogue applies the activation to the gate only, never to up.
  const int M = 7, N = 13, K = 20;
  for (ActivationFn fn : {ActivationFn::Gelu, ActivationFn::Relu}) {
    SCOPED_TRACE(int(fn));
    KernelSpec spec = cpuSpec(KernelKind::GatedLinear,
                              {{"vector", 8}, {"micro_m", 3}, {"micro_n", 2}});
    spec.activation = fn;
    checkGated(spec, M, N, K);
  }
}

TEST(CpuKernels, RmsNormRowSums) {
  // Widths that are and are not a whole number of vectors.
  for (auto [width, lanes] :
       std::vector<std::pair<int, int>>{{37, 8}, {64, 16}, {20, 16}, {768, 16}}) {
    for (auto [withResidual, gainOffset] :
         std::vector<std::pair<bool, bool>>{{false, false}, {true, false}, {true, true}}) {
      SCOPED_TRACE(std::to_string(width) + " wide, " + std::to_string(lanes) +
                   " lanes" + (withResidual ? ", residual" : "") +
                   (gainOffset ? ", gain 1 + gamma (Gemma)" : ""));
      const int rows = 11;
      KernelSpec spec = cpuSpec(KernelKind::RmsNorm,
                                {{"vector", lanes}, {"rows_per_task", 3}});
      spec.width = width;
      spec.eps = 1e-6;
      spec.hasResidual = withResidual;
      spec.normGainOffset = gainOffset;
      KernelCase in =
          rmsNormInputs(width, rows, withResidual, spec.eps, gainOffset);
      Buffer<float> out(width, rows);
      run(spec, in.inputs, out);
      expectClose(out, in.expected);
    }
  }
}

TEST(CpuKernels, RopeRotatesHalvesAtEachPosition) {
  const int batch = 2;
  for (const RopeCase &c : ropeCases) {
    SCOPED_TRACE(describe(c));
    KernelSpec spec = ropeSpec(
        cpuSpec(KernelKind::Rope, {{"vector", c.lanes}, {"rows_per_task", 2}}),
        c);
    KernelCase in = ropeInputs(c, batch);
    Buffer<float> out(int(spec.width), c.length, batch);
    out.set_min(0, c.first, 0);
    run(spec, in.inputs, out);
    expectClose(out, in.expected);
  }
}

TEST(CpuKernels, TanhOnBothTails) {
  // BERT's pooler: the linear's epilogue. Far into both tails (±1) and
  // through zero, where a formula through exp would cancel.
  const int width = 70, rows = 5;
  Buffer<float> x(width, rows);
  x.for_each_element([&](int w, int r) { x(w, r) = (w + width * r - 175) / 20.0f; });
  KernelSpec tanhSpec = cpuSpec(KernelKind::Activation, {{"vector", 16}});
  tanhSpec.width = width;
  tanhSpec.activation = ActivationFn::Tanh;
  Buffer<float> out(width, rows), expected(width, rows);
  run(tanhSpec, {x}, out);
  expected.for_each_element([&](int w, int r) {
    expected(w, r) = float(referenceActivation(ActivationFn::Tanh, x(w, r)));
  });
  expectCloseEach(out, expected);
}

TEST(CpuKernels, SiluAndMul) {
  const int width = 70, rows = 5; // 70: a vector tail with 16 lanes
  Buffer<float> x(width, rows);
  // Far into both tails, where exp's argument is clamped.
  x.for_each_element([&](int w, int r) { x(w, r) = (w + width * r - 175) / 2.0f; });
  KernelSpec silu = cpuSpec(KernelKind::Activation, {{"vector", 16}});
  silu.width = width;
  silu.activation = ActivationFn::Silu;
  Buffer<float> out(width, rows), expected(width, rows);
  run(silu, {x}, out);
  expected.for_each_element([&](int w, int r) {
    expected(w, r) = float(referenceActivation(ActivationFn::Silu, x(w, r)));
  });
  expectCloseEach(out, expected);

  Buffer<float> a = randomFloats({width, rows}, 44),
                b = randomFloats({width, rows}, 45);
  KernelSpec mul = cpuSpec(KernelKind::Mul, {{"vector", 16}, {"rows_per_task", 2}});
  mul.width = width;
  run(mul, {a, b}, out);
  // One f32 product: exactly the C++ one.
  out.for_each_element([&](int w, int r) {
    EXPECT_EQ(out(w, r), a(w, r) * b(w, r)) << "at " << w << ", " << r;
  });
}

/// Each grouped case with heads of `dim` under each plan, for 2 sequences.
void checkGrouped(const std::vector<GroupedCase> &cases, int dim,
                  const std::vector<std::map<std::string, int64_t>> &plans) {
  const int batch = 2;
  for (const GroupedCase &c : cases) {
    for (const auto &plan : plans) {
      SCOPED_TRACE(std::string(c.name) + ", " +
                   std::to_string(plan.at("vector")) + " lanes");
      KernelSpec spec =
          groupedSpec(cpuSpec(KernelKind::Attention, plan), c, dim);
      KernelCase in = groupedInputs(c, dim, batch, spec.attentionScale);
      Buffer<float> out(dim, c.heads, c.queries, batch);
      run(spec, in.inputs, out);
      expectClose(out, in.expected);
    }
  }
}

TEST(CpuKernels, GroupedQueryAttention) {
  checkGrouped(groupedCases, 16,
               {{{"vector", 8}, {"query_block", 16}, {"micro_k", 6},
                 {"pv_queries", 2}, {"pv_width", 16}},
                // A decode step's plan: keys and values read in place.
                {{"vector", 16}, {"query_block", 16}, {"micro_k", 16},
                 {"pv_queries", 4}, {"pv_width", 16}, {"stage_kv", 0}}});
}

TEST(CpuKernels, GroupedQueryAttentionWideHeads) {
  // Heads of 64, the AVX2 and AVX-512 plans' P·V widths (32 and 64), 4
  // query heads per K/V head, a prompt (causal + padding) and a decode
  // step's one query after 40 keys with a window.
  checkGrouped({{"prompt", 8, 2, 37, 37, {true, true}},
                {"decode", 8, 2, 1, 40, {false, false, 16, true}}},
               64,
               {{{"vector", 8}, {"query_block", 16}, {"micro_k", 6},
                 {"pv_queries", 2}, {"pv_width", 32}},
                {{"vector", 16}, {"query_block", 16}, {"micro_k", 16},
                 {"pv_queries", 4}, {"pv_width", 64}, {"stage_kv", 0}}});
}

} // namespace
