//===- KernelReference.h - Plain C++ references for kernel tests -*- C++ -*-===//
//
// What the CPU and GPU kernel tests share: each kernel's meaning written as
// straightforward loops in double precision, random inputs, the E2E tests'
// tolerance, and running a built kernel on the host. Buffers use Halide's
// order (innermost first).
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_TEST_UNIT_KERNELREFERENCE_H
#define TFMC_TEST_UNIT_KERNELREFERENCE_H

#include "compiler/codegen/kernels/Kernel.h"

#include "Halide.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

namespace tfmc::test {

using Halide::Buffer;

inline Buffer<float> randomFloats(const std::vector<int> &extents,
                                  unsigned seed, float scale = 1.0f) {
  Buffer<float> buffer(extents);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-scale, scale);
  // for_each_element, not for_each_value: Halide 14's for_each_value steps
  // a pointer by an uninitialised stride after fusing dense dimensions
  // (UBSan: pointer overflow). Same order (dimension 0 innermost).
  buffer.for_each_element([&](const int *pos) { buffer(pos) = uniform(rng); });
  return buffer;
}

/// A typed tile plan for a kernel of `kind` from `values` by attribute
/// name; a key left out takes the value the tests' cases were written for.
inline target::TilePlan planFromValues(codegen::KernelKind kind, bool gpu,
                                       std::map<std::string, int64_t> values) {
  auto get = [&](const char *key, int64_t fallback) {
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  };
  using codegen::KernelKind;
  if (gpu) {
    if (kind == KernelKind::Linear) {
      target::GpuGemmPlan plan;
      plan.threadM = get("thread_m", 4);
      plan.threadN = get("thread_n", 4);
      plan.blockK = get("block_k", 16);
      return plan;
    }
    if (kind == KernelKind::Attention) {
      target::GpuAttentionPlan plan;
      plan.queryBlock = get("query_block", 32);
      plan.keyBlock = get("key_block", 32);
      return plan;
    }
    target::GpuRowsPlan plan;
    plan.threads = get("threads", 256);
    return plan;
  }
  if (kind == KernelKind::Linear) {
    target::CpuGemmPlan plan;
    plan.vector = get("vector", 8);
    plan.microM = get("micro_m", 3);
    plan.microN = get("micro_n", 3);
    plan.blockM = get("block_m", 0);
    plan.tilesPerTask = get("tiles_per_task", 8);
    plan.widenPanel = get("widen_panel", 0) != 0;
    return plan;
  }
  if (kind == KernelKind::Attention) {
    target::CpuAttentionPlan plan;
    plan.vector = get("vector", 8);
    plan.queryBlock = get("query_block", 16);
    plan.microK = get("micro_k", 6);
    plan.pvQueries = get("pv_queries", 4);
    plan.pvWidth = get("pv_width", 4 * plan.vector);
    plan.stageKv = get("stage_kv", 1) != 0;
    return plan;
  }
  target::CpuRowsPlan plan;
  plan.vector = get("vector", 8);
  plan.unroll = get("unroll", 1);
  plan.rowsPerTask = get("rows_per_task", 1);
  return plan;
}

/// Binds `inputs` to the kernel's arguments in order and computes `out`
/// with a JIT compile for the host.
inline void realizeKernel(codegen::BuiltKernel kernel,
                          const std::vector<Buffer<>> &inputs, Buffer<> out) {
  ASSERT_EQ(kernel.arguments.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    kernel.arguments[i].set(inputs[i]);
  kernel.output.realize(out, Halide::get_jit_target_from_environment());
}

/// A weight (K, N) in a narrow storage: the kernel's arguments and the f32
/// values they mean, which the reference multiplies with.
struct NarrowWeight {
  std::vector<Buffer<>> arguments;
  Buffer<float> meaning;
};

/// Rounds `w` to bf16 (nearest even) or to int8 with one f16 scale per
/// `group` values of each row along K, as the README's weight-file layout
/// says, written here independently of the runtime's converter.
inline NarrowWeight narrow(const Buffer<float> &w, codegen::WeightType type,
                           int group) {
  int K = w.dim(0).extent(), N = w.dim(1).extent();
  NarrowWeight result{{}, Buffer<float>(K, N)};
  if (type == codegen::WeightType::BF16) {
    Buffer<> bits(halide_type_t(halide_type_bfloat, 16), {K, N});
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) {
        Halide::bfloat16_t value(w(k, n));
        static_cast<uint16_t *>(bits.data())[n * K + k] = value.to_bits();
        result.meaning(k, n) = float(value);
      }
    result.arguments.push_back(bits);
    return result;
  }
  int groups = (K + group - 1) / group;
  Buffer<int8_t> q(K, N);
  Buffer<> scales(halide_type_t(halide_type_float, 16), {groups, N});
  for (int n = 0; n < N; ++n)
    for (int g = 0; g < groups; ++g) {
      int end = std::min(K, (g + 1) * group);
      float largest = 0;
      for (int k = g * group; k < end; ++k)
        largest = std::max(largest, std::abs(w(k, n)));
      Halide::float16_t scale(largest / 127.0f);
      static_cast<uint16_t *>(scales.data())[n * groups + g] = scale.to_bits();
      float s = float(scale);
      for (int k = g * group; k < end; ++k) {
        float value = s == 0 ? 0.0f : std::nearbyint(w(k, n) / s);
        q(k, n) = int8_t(std::clamp(value, -127.0f, 127.0f));
        result.meaning(k, n) = float(q(k, n)) * s;
      }
    }
  result.arguments.push_back(q);
  result.arguments.push_back(scales);
  return result;
}

/// max |a - b| <= 1e-4 * max(1, max |b|), as the E2E tests compare.
inline void expectClose(const Buffer<float> &actual,
                        const Buffer<float> &expected) {
  float largest = 1.0f, worst = 0.0f;
  expected.for_each_element([&](const int *pos) {
    largest = std::max(largest, std::abs(expected(pos)));
  });
  bool finite = true;
  actual.for_each_element([&](const int *pos) {
    float a = actual(pos), b = expected(pos);
    finite = finite && std::isfinite(a);
    worst = std::max(worst, std::abs(a - b));
  });
  EXPECT_TRUE(finite);
  EXPECT_LE(worst, 1e-4f * largest) << "max |diff| " << worst;
}

inline double referenceActivation(codegen::ActivationFn fn, double x) {
  switch (fn) {
  case codegen::ActivationFn::None:
    return x;
  case codegen::ActivationFn::Relu:
    return std::max(x, 0.0);
  case codegen::ActivationFn::Gelu:
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case codegen::ActivationFn::GeluTanh:
    return 0.5 * x *
           (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  }
  return x;
}

/// out(n, m) = act(bias(n) + Σ_k x(k, m)·w(k, n)) + residual(n, m); bias and
/// residual may be empty buffers.
inline Buffer<float> referenceLinear(const Buffer<float> &x,
                                     const Buffer<float> &w,
                                     const Buffer<float> &bias,
                                     const Buffer<float> &residual,
                                     codegen::ActivationFn fn) {
  const int K = x.dim(0).extent(), M = x.dim(1).extent(),
            N = w.dim(1).extent();
  Buffer<float> out(N, M);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = bias.defined() ? double(bias(n)) : 0.0;
      for (int k = 0; k < K; ++k)
        acc += double(x(k, m)) * w(k, n);
      acc = referenceActivation(fn, acc);
      if (residual.defined())
        acc += residual(n, m);
      out(n, m) = float(acc);
    }
  return out;
}

/// LayerNorm over each row of (x + residual) (residual may be empty).
inline Buffer<float> referenceLayerNorm(const Buffer<float> &x,
                                        const Buffer<float> &residual,
                                        const Buffer<float> &gamma,
                                        const Buffer<float> &beta,
                                        double eps) {
  const int width = x.dim(0).extent(), rows = x.dim(1).extent();
  Buffer<float> out(width, rows);
  auto in = [&](int w, int r) {
    return double(x(w, r)) + (residual.defined() ? residual(w, r) : 0.0f);
  };
  for (int r = 0; r < rows; ++r) {
    double mean = 0, variance = 0;
    for (int w = 0; w < width; ++w)
      mean += in(w, r);
    mean /= width;
    for (int w = 0; w < width; ++w)
      variance += (in(w, r) - mean) * (in(w, r) - mean);
    variance /= width;
    for (int w = 0; w < width; ++w)
      out(w, r) = float((in(w, r) - mean) / std::sqrt(variance + eps) *
                            gamma(w) +
                        beta(w));
  }
  return out;
}

struct AttentionMask {
  bool causal = false, padding = false;
  int window = 0;
};

/// Masked softmax attention per (batch, head): q (D, H, Sq, B), k and v
/// (D, H, Sk, B), keep (Sk, B) (padding only; 0 = masked). Query i is at
/// position i. A query whose keys are all masked gets zeros.
inline Buffer<float> referenceAttention(const Buffer<float> &q,
                                        const Buffer<float> &k,
                                        const Buffer<float> &v,
                                        const Buffer<int64_t> &keep,
                                        AttentionMask mask, double scale) {
  const int D = q.dim(0).extent(), H = q.dim(1).extent(),
            Sq = q.dim(2).extent(), B = q.dim(3).extent(),
            Sk = k.dim(2).extent(), Dv = v.dim(0).extent();
  Buffer<float> out(Dv, H, Sq, B);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < Sq; ++i) {
        std::vector<double> p(Sk, 0.0);
        std::vector<bool> allowed(Sk);
        double largest = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < Sk; ++j) {
          allowed[j] = (!mask.causal || j <= i) &&
                       (mask.window == 0 ||
                        (mask.causal ? i - j < mask.window
                                     : std::abs(i - j) < mask.window)) &&
                       (!mask.padding || keep(j, b) != 0);
          if (!allowed[j])
            continue;
          double s = 0;
          for (int d = 0; d < D; ++d)
            s += double(q(d, h, i, b)) * k(d, h, j, b);
          p[j] = s * scale;
          largest = std::max(largest, p[j]);
        }
        double total = 0;
        for (int j = 0; j < Sk; ++j) {
          p[j] = allowed[j] ? std::exp(p[j] - largest) : 0.0;
          total += p[j];
        }
        for (int e = 0; e < Dv; ++e) {
          double acc = 0;
          for (int j = 0; j < Sk; ++j)
            acc += p[j] * v(e, h, j, b);
          out(e, h, i, b) = total > 0 ? float(acc / total) : 0.0f;
        }
      }
  return out;
}

} // namespace tfmc::test

#endif // TFMC_TEST_UNIT_KERNELREFERENCE_H
