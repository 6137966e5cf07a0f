//===- GpuKernelsTest.cpp - The GPU kernels' numbers, on the CPU ----------===//
//
// Every GPU kernel (compiler/codegen/kernels/) is built in host emulation: the
// same algorithm, splits, tails, bounds and compute_at levels as the CUDA
// kernel, with its block and thread loops serial. It is JIT-compiled for
// the host and compared with a plain C++ reference on odd sizes (tails in
// every tile), so the GPU algorithms (tiled GEMM, online-softmax attention
// with skipped key blocks, two-step layer_norm reductions) are checked on
// machines without a GPU. What only a GPU run checks: barriers, shared and
// register memory, the PTX itself.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Kernel.h"
#include "test/unit/KernelReference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace tfmc::codegen;
using namespace tfmc::test;

namespace {

/// Builds the emulated GPU kernel, binds `inputs` to its arguments in order
/// and computes `out`.
void runEmulated(const KernelSpec &spec, const std::vector<Buffer<>> &inputs,
                 Buffer<> out) {
  realizeKernel(buildGpuOnHost(spec), inputs, out);
}

KernelSpec gpuSpec(KernelKind kind, std::map<std::string, int64_t> plan) {
  KernelSpec spec;
  spec.kind = kind;
  spec.tile = planFromValues(kind, true, std::move(plan));
  return spec;
}

TEST(GpuKernels, LinearTilesWithTailsInEveryDimension) {
  // K = 37: the last K block is partial; N = 150, M = 45: several blocks
  // of (32 lanes x thread_n) columns and thread_m rows, partial ones last.
  const int M = 45, N = 150, K = 37;
  for (auto plan : std::vector<std::map<std::string, int64_t>>{
           {{"block_m", 32}, {"block_n", 32}, {"block_k", 16},
            {"thread_m", 4}, {"thread_n", 4}},
           {{"block_m", 64}, {"block_n", 32}, {"block_k", 8},
            {"thread_m", 8}, {"thread_n", 2}}}) {
    KernelSpec spec = gpuSpec(KernelKind::Linear, plan);
    spec.width = N;
    spec.inWidth = K;
    spec.hasBias = spec.hasResidual = true;
    spec.activation = ActivationFn::GeluTanh;
    Buffer<float> x = randomFloats({K, M}, 1), w = randomFloats({K, N}, 2),
                  bias = randomFloats({N}, 3), residual = randomFloats({N, M}, 4);
    Buffer<float> out(N, M);
    runEmulated(spec, {x, w, bias, residual}, out);
    Buffer<float> expected =
        referenceLinear(x, w, bias, residual, ActivationFn::GeluTanh);
    expectClose(out, expected);
  }
}

TEST(GpuKernels, LinearOneRow) {
  // A decode step: M = 1 in a 32-row block.
  const int M = 1, N = 70, K = 64;
  KernelSpec spec = gpuSpec(KernelKind::Linear,
                            {{"block_m", 32}, {"block_n", 64}, {"block_k", 32},
                             {"thread_m", 4}, {"thread_n", 8}});
  spec.width = N;
  spec.inWidth = K;
  Buffer<float> x = randomFloats({K, M}, 5), w = randomFloats({K, N}, 6);
  Buffer<float> out(N, M);
  runEmulated(spec, {x, w}, out);
  Buffer<float> expected =
      referenceLinear(x, w, Buffer<float>(), Buffer<float>(), ActivationFn::None);
  expectClose(out, expected);
}

TEST(GpuKernels, LinearNarrowWeights) {
  // bf16, int8 and int4 W widened as the warp stages it; K = 100 leaves a
  // partial scale group (int4: a padded block) and a partial K block.
  const int M = 9, N = 70, K = 100;
  for (auto [type, group] : std::vector<std::pair<WeightType, int>>{
           {WeightType::BF16, 0}, {WeightType::Int8, 64},
           {WeightType::Int4, 32}}) {
    KernelSpec spec = gpuSpec(KernelKind::Linear,
                              {{"block_k", 16}, {"thread_m", 4}, {"thread_n", 2}});
    spec.width = N;
    spec.inWidth = K;
    spec.weightType = type;
    spec.group = group;
    Buffer<float> x = randomFloats({K, M}, 7);
    NarrowWeight w = narrow(randomFloats({K, N}, 8), type, group);
    std::vector<Buffer<>> inputs{x};
    for (const Buffer<> &argument : w.arguments)
      inputs.push_back(argument);
    Buffer<float> out(N, M);
    runEmulated(spec, inputs, out);
    expectClose(out, referenceLinear(x, w.meaning, Buffer<float>(),
                                     Buffer<float>(), ActivationFn::None));
  }
}

TEST(GpuKernels, LinearInt8Activations) {
  // x quantised per group as on the CPU (docs/precision.md's contract), staged as
  // q · d: int8 W (groups of 64, K = 100: a short last group) and int4 W
  // (blocks of 32, a padded last block), a plain and a gated linear. Row 0
  // has a tie of x · (1/d) and an all-zero group; row M-1 a NaN, row M-2
  // an infinity: their outputs are NaN.
  const int M = 9, N = 70, K = 100;
  for (auto [type, group] : std::vector<std::pair<WeightType, int>>{
           {WeightType::Int8, 64}, {WeightType::Int4, 32}}) {
    for (bool gated : {false, true}) {
      SCOPED_TRACE(std::string(type == WeightType::Int4 ? "int4" : "int8") +
                   (gated ? ", gated" : ""));
      KernelSpec spec = gpuSpec(gated ? KernelKind::GatedLinear : KernelKind::Linear,
                                {{"block_k", 16}, {"thread_m", 4}, {"thread_n", 2}});
      spec.width = N;
      spec.inWidth = K;
      spec.weightType = type;
      spec.group = group;
      spec.integerProducts = true;
      spec.hasBias = true;
      spec.activation = gated ? ActivationFn::Silu : ActivationFn::None;
      Buffer<float> x = randomFloats({K, M}, 11, 2.0f);
      x(0, 0) = 4.0f;
      x(1, 0) = 4.0f * 0.5f / 127.0f * 3.0f;
      for (int k = group; k < 2 * group; ++k)
        x(k, 0) = 0.0f;
      x(K / 2, M - 1) = std::numeric_limits<float>::quiet_NaN();
      x(1, M - 2) = std::numeric_limits<float>::infinity();
      NarrowWeight w = narrow(randomFloats({K, N}, 12), type, group);
      NarrowWeight up = narrow(randomFloats({K, N}, 13), type, group);
      Buffer<float> bias = randomFloats({N}, 14), upBias = randomFloats({N}, 15);
      std::vector<Buffer<>> inputs{x};
      for (const Buffer<> &argument : w.arguments)
        inputs.push_back(argument);
      if (gated)
        for (const Buffer<> &argument : up.arguments)
          inputs.push_back(argument);
      inputs.push_back(bias);
      if (gated)
        inputs.push_back(upBias);
      Buffer<float> out(N, M);
      runEmulated(spec, inputs, out);
      Buffer<float> expected =
          gated ? referenceIntegerGatedLinear(x, w, up, group, bias, upBias,
                                              spec.activation)
                : referenceIntegerLinear(x, w, group, bias, Buffer<float>(),
                                         spec.activation);
      const float largest = largestFinite(expected);
      int nans = expectCloseWithNaNs(out, expected);
      EXPECT_EQ(nans, 2 * N);
      // The quantisation matters: with f32 x the outputs move by more than
      // the tolerance.
      if (!gated) {
        Buffer<float> widened = referenceLinear(x, w.meaning, bias,
                                                Buffer<float>(), ActivationFn::None);
        float moved = 0;
        for (int n = 0; n < N; ++n)
          moved = std::max(moved, std::abs(widened(n, 3) - out(n, 3)));
        EXPECT_GT(moved, 100 * 1e-5f * largest);
      }
    }
  }
}

struct AttentionCase {
  const char *name;
  int queries, keys;
  bool causal = false, padding = false;
  int window = 0;
};

TEST(GpuKernels, AttentionOnlineSoftmaxMatchesTheReference) {
  const int heads = 3, dim = 8, batch = 2;
  for (const AttentionCase &c : std::vector<AttentionCase>{
           {"full", 45, 45},
           {"causal", 45, 45, true},
           {"causal+padding", 45, 45, true, true},
           {"padding (cross)", 7, 30, false, true},
           {"causal window", 45, 45, true, false, 5},
           {"window", 45, 45, false, false, 4},
           {"one query (decode)", 1, 21},
       }) {
    SCOPED_TRACE(c.name);
    // Query blocks of 16 and key blocks of 8: several of each, partial
    // ones at the ends.
    KernelSpec spec = gpuSpec(KernelKind::Attention,
                              {{"query_block", 16}, {"key_block", 8}});
    spec.width = heads * dim;
    spec.heads = heads;
    spec.headDim = spec.valueHeadDim = dim;
    spec.attentionScale = 1.0 / std::sqrt(double(dim));
    spec.mask.causal = c.causal;
    spec.mask.padding = c.padding;
    spec.mask.window = c.window;
    Buffer<float> q = randomFloats({dim, heads, c.queries, batch}, 7, 2.0f);
    Buffer<float> k = randomFloats({dim, heads, c.keys, batch}, 8, 2.0f);
    Buffer<float> v = randomFloats({dim, heads, c.keys, batch}, 9);
    // Row 0 keeps its first keys; row 1 has every key masked (output 0).
    Buffer<int64_t> keep(c.keys, batch);
    for (int j = 0; j < c.keys; ++j) {
      keep(j, 0) = j < c.keys - 5 ? 1 : 0;
      keep(j, 1) = 0;
    }
    std::vector<Buffer<>> inputs{q, k, v};
    if (c.padding)
      inputs.push_back(keep);
    Buffer<float> out(dim, heads, c.queries, batch);
    runEmulated(spec, inputs, out);

    Buffer<float> expected = referenceAttention(
        q, k, v, keep, {c.causal, c.padding, c.window}, spec.attentionScale);
    expectClose(out, expected);
  }
}

TEST(GpuKernels, LayerNormReducesInTwoSteps) {
  for (auto [width, threads] : std::vector<std::pair<int, int>>{
           {37, 16}, {20, 32}, {64, 64}}) {
    SCOPED_TRACE(width);
    const int rows = 11;
    KernelSpec spec = gpuSpec(KernelKind::LayerNorm, {{"threads", threads}});
    spec.width = width;
    spec.eps = 1e-5;
    spec.hasResidual = true;
    Buffer<float> x = randomFloats({width, rows}, 10, 3.0f);
    Buffer<float> residual = randomFloats({width, rows}, 11);
    Buffer<float> gamma = randomFloats({width}, 12), beta = randomFloats({width}, 13);
    Buffer<float> out(width, rows);
    runEmulated(spec, {x, residual, gamma, beta}, out);
    Buffer<float> expected =
        referenceLayerNorm(x, residual, gamma, beta, spec.eps);
    expectClose(out, expected);
  }
}

TEST(GpuKernels, LastPositionOfEachSequence) {
  // Thread blocks wider than the width (tails along it) and a grid of
  // several rows of blocks; the sequence's coordinates starting past 0.
  for (int threads : {256, 32}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    const int width = 70, length = 6, batch = 9;
    KernelSpec spec = gpuSpec(KernelKind::LastPosition, {{"threads", threads}});
    spec.width = width;
    Buffer<float> x = randomFloats({width, length, batch}, 21);
    x.set_min(0, 3, 0);
    Buffer<float> out(width, batch);
    runEmulated(spec, {x}, out);
    Buffer<float> expected = referenceLastPosition(x);
    out.for_each_element([&](int d, int b) {
      EXPECT_EQ(out(d, b), expected(d, b)) << "at " << d << ", " << b;
    });
  }
}

TEST(GpuKernels, EmbeddingPositionsAndElementwise) {
  const int dim = 12, vocab = 9, length = 5, batch = 2;
  {
    KernelSpec spec = gpuSpec(KernelKind::Embedding, {{"threads", 256}});
    spec.width = dim;
    spec.vocab = vocab;
    Buffer<int64_t> ids(length, batch);
    ids.for_each_element([&](int s, int b) { ids(s, b) = (3 * s + 5 * b) % vocab; });
    Buffer<float> table = randomFloats({dim, vocab}, 14);
    Buffer<float> out(dim, length, batch);
    runEmulated(spec, {ids, table}, out);
    out.for_each_element([&](int d, int s, int b) {
      EXPECT_EQ(out(d, s, b), table(d, int(ids(s, b))));
    });
  }
  {
    // A decode step's positions: the sequence coordinate starts at P = 6.
    KernelSpec spec = gpuSpec(KernelKind::Positions, {{"threads", 256}});
    spec.width = dim;
    Buffer<float> x = randomFloats({dim, 1, batch}, 15);
    x.set_min(0, 6, 0);
    Buffer<float> out(dim, 1, batch);
    out.set_min(0, 6, 0);
    runEmulated(spec, {x}, out);
    Buffer<float> expected(dim, 1, batch);
    expected.set_min(0, 6, 0);
    expected.for_each_element([&](int d, int s, int b) {
      double angle = s * std::exp(double((d / 2) * 2) * -std::log(10000.0) / dim);
      expected(d, s, b) =
          x(d, s, b) + float(d % 2 == 0 ? std::sin(angle) : std::cos(angle));
    });
    expectClose(out, expected);

    spec.learnedPositions = true;
    Buffer<float> table = randomFloats({dim, 10}, 16);
    runEmulated(spec, {x, table}, out);
    out.for_each_element([&](int d, int s, int b) {
      EXPECT_EQ(out(d, s, b), x(d, s, b) + table(d, s));
    });
  }
  {
    const int width = 70, rows = 3;
    Buffer<float> a = randomFloats({width, rows}, 17), b = randomFloats({width, rows}, 18);
    Buffer<float> out(width, rows);
    KernelSpec scale = gpuSpec(KernelKind::Scale, {{"threads", 256}});
    scale.width = width;
    scale.scale = 0.125;
    runEmulated(scale, {a}, out);
    out.for_each_element([&](int w, int r) { EXPECT_EQ(out(w, r), a(w, r) * 0.125f); });
    KernelSpec add = gpuSpec(KernelKind::Add, {{"threads", 256}});
    add.width = width;
    runEmulated(add, {a, b}, out);
    out.for_each_element([&](int w, int r) { EXPECT_EQ(out(w, r), a(w, r) + b(w, r)); });
    KernelSpec relu = gpuSpec(KernelKind::Activation, {{"threads", 256}});
    relu.width = width;
    relu.activation = ActivationFn::Relu;
    runEmulated(relu, {a}, out);
    out.for_each_element([&](int w, int r) { EXPECT_EQ(out(w, r), std::max(a(w, r), 0.0f)); });
  }
}

// ---- The Llama family's kernels (issue 14) ---------------------------------

TEST(GpuKernels, GatedLinearStagesBothWeights) {
  // Blocks of (32 lanes x thread_n) columns and thread_m rows, K slices of
  // block_k: N = 70 and K = 37 (or 100, a partial int8 group) leave tails
  // in each; M = 1 is a decode step.
  struct GatedCase {
    int M, N, K;
    std::map<std::string, int64_t> plan;
  };
  for (const GatedCase &c : std::vector<GatedCase>{
           {9, 70, 37, {{"block_k", 16}, {"thread_m", 4}, {"thread_n", 2}}},
           {1, 70, 100, {{"block_k", 32}, {"thread_m", 1}, {"thread_n", 1}}}}) {
    for (auto [type, group] : std::vector<std::pair<WeightType, int>>{
             {WeightType::F32, 0}, {WeightType::BF16, 0},
             {WeightType::Int8, 64}, {WeightType::Int4, 32}}) {
      for (bool withBias : {false, true}) {
        SCOPED_TRACE(std::to_string(c.M) + " rows, weights " +
                     std::to_string(int(type)) + (withBias ? ", biases" : ""));
        KernelSpec spec = gpuSpec(KernelKind::GatedLinear, c.plan);
        spec.weightType = type;
        spec.group = group;
        spec.activation = ActivationFn::Silu;
        spec.hasBias = withBias;
        KernelCase in = gatedInputs(spec, c.M, c.N, c.K);
        Buffer<float> out(c.N, c.M);
        runEmulated(spec, in.inputs, out);
        expectClose(out, in.expected);
      }
    }
  }
}

TEST(GpuKernels, RmsNormReducesInTwoSteps) {
  for (auto [width, threads] : std::vector<std::pair<int, int>>{
           {37, 16}, {20, 32}, {64, 64}}) {
    for (bool withResidual : {false, true}) {
      SCOPED_TRACE(std::to_string(width) + (withResidual ? ", residual" : ""));
      const int rows = 11;
      KernelSpec spec = gpuSpec(KernelKind::RmsNorm, {{"threads", threads}});
      spec.width = width;
      spec.eps = 1e-6;
      spec.hasResidual = withResidual;
      KernelCase in = rmsNormInputs(width, rows, withResidual, spec.eps);
      Buffer<float> out(width, rows);
      runEmulated(spec, in.inputs, out);
      expectClose(out, in.expected);
    }
  }
}

TEST(GpuKernels, RopeRotatesHalvesAtEachPosition) {
  const int batch = 2;
  for (const RopeCase &c : ropeCases) {
    // Thread blocks narrower than a row and wider than one (tails).
    for (int threads : {32, 256}) {
      SCOPED_TRACE(describe(c) + ", " + std::to_string(threads) + " threads");
      KernelSpec spec =
          ropeSpec(gpuSpec(KernelKind::Rope, {{"threads", threads}}), c);
      KernelCase in = ropeInputs(c, batch);
      Buffer<float> out(int(spec.width), c.length, batch);
      out.set_min(0, c.first, 0);
      runEmulated(spec, in.inputs, out);
      expectClose(out, in.expected);
    }
  }
}

TEST(GpuKernels, SiluAndMul) {
  const int width = 70, rows = 3;
  Buffer<float> x(width, rows);
  // Far into both tails, where exp's argument is clamped.
  x.for_each_element([&](int w, int r) { x(w, r) = (w + width * r - 105) / 1.5f; });
  Buffer<float> out(width, rows), expected(width, rows);
  KernelSpec silu = gpuSpec(KernelKind::Activation, {{"threads", 32}});
  silu.width = width;
  silu.activation = ActivationFn::Silu;
  runEmulated(silu, {x}, out);
  expected.for_each_element([&](int w, int r) {
    expected(w, r) = float(referenceActivation(ActivationFn::Silu, x(w, r)));
  });
  expectCloseEach(out, expected);

  Buffer<float> a = randomFloats({width, rows}, 44), b = randomFloats({width, rows}, 45);
  KernelSpec mul = gpuSpec(KernelKind::Mul, {{"threads", 32}});
  mul.width = width;
  runEmulated(mul, {a, b}, out);
  out.for_each_element([&](int w, int r) { EXPECT_EQ(out(w, r), a(w, r) * b(w, r)); });
}

TEST(GpuKernels, GroupedQueryAttention) {
  const int batch = 2, dim = 8;
  for (const GroupedCase &c : groupedCases) {
    SCOPED_TRACE(c.name);
    // Query blocks of 16 and key blocks of 8: several of each, partial
    // ones at the ends, and blocks skipped by the causal and window bounds.
    KernelSpec spec = groupedSpec(
        gpuSpec(KernelKind::Attention, {{"query_block", 16}, {"key_block", 8}}),
        c, dim);
    KernelCase in = groupedInputs(c, dim, batch, spec.attentionScale);
    Buffer<float> out(dim, c.heads, c.queries, batch);
    runEmulated(spec, in.inputs, out);
    expectClose(out, in.expected);
  }
}

} // namespace
