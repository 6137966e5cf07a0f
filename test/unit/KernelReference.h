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
#include "passes/target/Target.h"

#include "Halide.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>
#include <limits>
#include <map>
#include <random>
#include <string>
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

/// A typed tile plan for a kernel of `kind` (a gated linear takes a GEMM
/// plan, as a linear does) from `values` by attribute
/// name; a key left out takes the value the tests' cases were written for.
inline target::TilePlan planFromValues(codegen::KernelKind kind, bool gpu,
                                       std::map<std::string, int64_t> values) {
  auto get = [&](const char *key, int64_t fallback) {
    auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  };
  using codegen::KernelKind;
  if (gpu) {
    if (kind == KernelKind::Linear || kind == KernelKind::GatedLinear) {
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
  if ((kind == KernelKind::Linear || kind == KernelKind::GatedLinear) &&
      values.count("task_m")) {
    target::CpuPackedGemmPlan plan;
    plan.vector = get("vector", 8);
    plan.microM = get("micro_m", 8);
    plan.microN = get("micro_n", 2);
    plan.blockK = get("block_k", 256);
    plan.blockM = get("block_m", 16);
    plan.taskM = get("task_m", 256);
    plan.taskN = get("task_n", 32);
    // Below small_rows rows the dot form runs: 1 (the packed form always)
    // unless a case names it.
    plan.smallRows = get("small_rows", 1);
    plan.microkernel = get("microkernel", 0) != 0;
    plan.dot.vector = plan.vector;
    plan.dot.microM = get("dot_micro_m", 2);
    plan.dot.microN = get("dot_micro_n", 3);
    plan.dot.blockM = get("dot_block_m", 0);
    plan.dot.tilesPerTask = get("dot_tiles_per_task", 8);
    plan.dot.widenPanel = get("dot_widen_panel", 0) != 0;
    return plan;
  }
  if (kind == KernelKind::Linear || kind == KernelKind::GatedLinear) {
    target::CpuGemmPlan plan;
    plan.vector = get("vector", 8);
    plan.microM = get("micro_m", 3);
    plan.microN = get("micro_n", 3);
    plan.blockM = get("block_m", 0);
    plan.tilesPerTask = get("tiles_per_task", 8);
    plan.widenPanel = get("widen_panel", 0) != 0;
    plan.oneRowMicroN = get("one_row_micro_n", 0);
    plan.oneRowTilesPerTask = get("one_row_tiles_per_task", 0);
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
    plan.headBlock = get("head_block", 0) != 0;
    return plan;
  }
  target::CpuRowsPlan plan;
  plan.vector = get("vector", 8);
  plan.unroll = get("unroll", 1);
  plan.rowsPerTask = get("rows_per_task", 1);
  return plan;
}

/// A CPU kernel of `kind` with the tile plan of `plan`'s values.
inline codegen::KernelSpec cpuSpec(codegen::KernelKind kind,
                                   std::map<std::string, int64_t> plan) {
  codegen::KernelSpec spec;
  spec.kind = kind;
  spec.tile = planFromValues(kind, false, std::move(plan));
  return spec;
}

/// An attention kernel's spec under `plan`: `heads` query heads (`kvHeads`
/// K/V heads; 0: as many) of `dim` values, scaled by 1 / sqrt(dim).
inline codegen::KernelSpec cpuAttentionSpec(std::map<std::string, int64_t> plan,
                                            int heads, int kvHeads, int dim) {
  codegen::KernelSpec spec =
      cpuSpec(codegen::KernelKind::Attention, std::move(plan));
  spec.width = heads * dim;
  spec.heads = heads;
  spec.kvHeads = kvHeads;
  spec.headDim = spec.valueHeadDim = dim;
  spec.attentionScale = 1.0 / std::sqrt(double(dim));
  return spec;
}

/// The target the kernel tests JIT-compile for: HL_JIT_TARGET if set, else
/// the registry's Halide string for this CPU (what `tfmc --target host`
/// ships), never Halide 14's own host detection. That one enables features
/// from CPUID bits alone (AVX512_SapphireRapids, and with it AMX tile code,
/// wherever AVX-VNNI and AVX512-BF16 are reported, as on AMD Zen 5, which
/// has no AMX), so JIT code could use instructions no compiled program
/// uses, and a CPU may lack (SIGILL in LinearNarrowWeights on an AMD host).
inline Halide::Target kernelTestTarget() {
  static const Halide::Target target = [] {
    const char *environment = std::getenv("HL_JIT_TARGET");
    if (environment && *environment)
      return Halide::get_jit_target_from_environment();
    std::string error;
    std::optional<target::TargetDescription> host =
        target::lookupTarget("host", error);
    if (!host)
      throw std::runtime_error(error);
    return Halide::Target(host->halideTarget).with_feature(Halide::Target::JIT);
  }();
  return target;
}

/// Binds `inputs` to the kernel's arguments in order and computes `out`
/// with a JIT compile for this CPU (kernelTestTarget, or `target`).
inline void realizeKernel(codegen::BuiltKernel kernel,
                          const std::vector<Buffer<>> &inputs, Buffer<> out,
                          const Halide::Target &target = kernelTestTarget()) {
  ASSERT_EQ(kernel.arguments.size(), inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    kernel.arguments[i].set(inputs[i]);
  kernel.output.realize(out, target);
}

/// A weight (K, N) in a narrow storage: the kernel's arguments and the f32
/// values they mean, which the reference multiplies with; for int8 and
/// int4 also each value's integer level q (K, N) and each group's scale
/// (groups, N), meaning = q · scale.
struct NarrowWeight {
  std::vector<Buffer<>> arguments;
  Buffer<float> meaning;
  Buffer<int> q;
  Buffer<float> scale;
};

/// int4 (docs/precision.md's weight-file layout: GGUF's Q4_0 blocks), written from
/// ggml's reference quantiser, independently of the runtime's: per block of
/// 32 values along K (the last one padded with zeros), max the first value
/// of largest |w|, d = max / -8, id = 1 / d (0 for 0), level =
/// min(15, trunc(w · id + 8.5)), all in f32; the block is the f16 d, then
/// byte j = level_j | level_{j+16} << 4.
inline NarrowWeight narrowInt4(const Buffer<float> &w) {
  const int K = w.dim(0).extent(), N = w.dim(1).extent(), blocks = (K + 31) / 32;
  NarrowWeight result{{}, Buffer<float>(K, N), Buffer<int>(K, N),
                      Buffer<float>(blocks, N)};
  Buffer<uint8_t> bytes(18 * blocks, N);
  for (int n = 0; n < N; ++n)
    for (int b = 0; b < blocks; ++b) {
      float values[32], largest = 0, max = 0;
      for (int j = 0; j < 32; ++j) {
        values[j] = b * 32 + j < K ? w(b * 32 + j, n) : 0.0f;
        if (largest < std::abs(values[j])) {
          largest = std::abs(values[j]);
          max = values[j];
        }
      }
      float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
      Halide::float16_t half(d);
      bytes(18 * b, n) = uint8_t(half.to_bits() & 0xff);
      bytes(18 * b + 1, n) = uint8_t(half.to_bits() >> 8);
      int levels[32];
      for (int j = 0; j < 32; ++j)
        levels[j] = std::min(15, int(values[j] * id + 8.5f));
      for (int j = 0; j < 16; ++j)
        bytes(18 * b + 2 + j, n) = uint8_t(levels[j] | (levels[j + 16] << 4));
      result.scale(b, n) = float(half);
      for (int j = 0; j < 32 && b * 32 + j < K; ++j) {
        result.q(b * 32 + j, n) = levels[j] - 8;
        result.meaning(b * 32 + j, n) = float(levels[j] - 8) * float(half);
      }
    }
  result.arguments.push_back(bytes);
  return result;
}

/// Rounds `w` to bf16 (nearest even), to int8 with one f16 scale per
/// `group` values of each row along K (blocks of the scale and the values,
/// support/WeightFormat.h), or to int4 (narrowInt4), as the
/// docs/precision.md's weight-file layout says, written here independently of the
/// runtime's converter.
inline NarrowWeight narrow(const Buffer<float> &w, codegen::WeightType type,
                           int group) {
  if (type == codegen::WeightType::Int4)
    return narrowInt4(w);
  int K = w.dim(0).extent(), N = w.dim(1).extent();
  NarrowWeight result{{}, Buffer<float>(K, N), Buffer<int>(), Buffer<float>()};
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
  // int8: per row, blocks of the f16 scale (little-endian) and `group`
  // values, the last one padded with zeros.
  int groups = (K + group - 1) / group, blockBytes = 2 + group;
  Buffer<int8_t> bytes(blockBytes * groups, N);
  bytes.fill(0);
  result.q = Buffer<int>(K, N);
  result.scale = Buffer<float>(groups, N);
  for (int n = 0; n < N; ++n)
    for (int g = 0; g < groups; ++g) {
      int end = std::min(K, (g + 1) * group);
      float largest = 0;
      for (int k = g * group; k < end; ++k)
        largest = std::max(largest, std::abs(w(k, n)));
      Halide::float16_t scale(largest / 127.0f);
      bytes(blockBytes * g, n) = int8_t(scale.to_bits() & 0xff);
      bytes(blockBytes * g + 1, n) = int8_t(scale.to_bits() >> 8);
      float s = float(scale);
      result.scale(g, n) = s;
      for (int k = g * group; k < end; ++k) {
        float value = s == 0 ? 0.0f : std::nearbyint(w(k, n) / s);
        int8_t level = int8_t(std::clamp(value, -127.0f, 127.0f));
        bytes(blockBytes * g + 2 + (k - g * group), n) = level;
        result.q(k, n) = level;
        result.meaning(k, n) = float(level) * s;
      }
    }
  result.arguments.push_back(bytes);
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

/// |a - b| <= 1e-5 · max(1, |b|) at every element: for values over a
/// wide range, where expectClose's bound (relative to the largest value)
/// would hide errors in the small ones.
inline void expectCloseEach(const Buffer<float> &actual,
                            const Buffer<float> &expected) {
  int wrong = 0;
  actual.for_each_element([&](const int *pos) {
    float a = actual(pos), b = expected(pos);
    if (!(std::abs(a - b) <= 1e-5f * std::max(1.0f, std::abs(b))) && wrong++ < 5)
      ADD_FAILURE() << "at " << pos[0] << ", " << pos[1] << ": " << a
                    << " instead of " << b;
  });
  EXPECT_EQ(wrong, 0);
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
  case codegen::ActivationFn::Silu:
    return x / (1 + std::exp(-x));
  case codegen::ActivationFn::Tanh:
    return std::tanh(x);
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

/// int8 activations' quantisation of row m of x (docs/precision.md, "int8
/// activations"), written from the contract: in groups of `group`
/// features, d = max |x| / 127 and q = clamp(rne(x · (1 / d)), ±127) in f32
/// (0 where d is 0, and for a NaN or an infinity); `finite` whether the row
/// held neither.
struct ReferenceQuantisedRow {
  std::vector<int> q;
  std::vector<float> d;
  bool finite = true;
};
inline ReferenceQuantisedRow referenceQuantiseRow(const Buffer<float> &x,
                                                  int m, int group) {
  const int K = x.dim(0).extent(), groups = (K + group - 1) / group;
  ReferenceQuantisedRow row;
  row.q.assign(K, 0);
  row.d.assign(groups, 0.0f);
  for (int g = 0; g < groups; ++g) {
    int end = std::min(K, (g + 1) * group);
    float largest = 0;
    for (int k = g * group; k < end; ++k) {
      row.finite = row.finite && std::isfinite(x(k, m));
      if (std::isfinite(x(k, m)))
        largest = std::max(largest, std::abs(x(k, m)));
    }
    row.d[g] = largest / 127.0f;
    float inverse = row.d[g] == 0.0f ? 0.0f : 1.0f / row.d[g];
    for (int k = g * group; k < end; ++k) {
      float value = std::isfinite(x(k, m)) ? x(k, m) * inverse : 0.0f;
      row.q[k] = int(std::clamp(std::nearbyint(value), -127.0f, 127.0f));
    }
  }
  return row;
}

/// x's rows quantised once (tfm.quantize), as support/WeightFormat.h lays
/// them out: (B, M) bytes, B = quantisedRowBytes(K, group).
inline Buffer<int8_t> referenceQuantisedRows(const Buffer<float> &x,
                                             int group) {
  const int K = x.dim(0).extent(), M = x.dim(1).extent(),
            groups = (K + group - 1) / group;
  const int scalesAt = groups * group, flagAt = scalesAt + 4 * groups;
  const int bytes = (flagAt + group) / group * group;
  Buffer<int8_t> out(bytes, M);
  out.fill(0);
  for (int m = 0; m < M; ++m) {
    ReferenceQuantisedRow row = referenceQuantiseRow(x, m, group);
    for (int k = 0; k < K; ++k)
      out(k, m) = int8_t(row.q[k]);
    for (int g = 0; g < groups; ++g) {
      uint32_t bits;
      std::memcpy(&bits, &row.d[g], 4);
      for (int i = 0; i < 4; ++i)
        out(scalesAt + 4 * g + i, m) = int8_t(uint8_t(bits >> (8 * i)));
    }
    out(flagAt, m) = row.finite ? 0 : 1;
  }
  return out;
}

/// int8 activations, written from the contract: each row of x quantised
/// (referenceQuantiseRow); the int8 or int4 weight's levels and f16 scales
/// (narrow()'s q and scale); out(n, m) = bias + Σ_g f32(d · s) · Σ_{k∈g}
/// q_x · q_w, then the activation and the residual. A row with a NaN or an
/// infinity gives NaN outputs.
inline Buffer<float> referenceIntegerLinear(const Buffer<float> &x,
                                            const NarrowWeight &w, int group,
                                            const Buffer<float> &bias,
                                            const Buffer<float> &residual,
                                            codegen::ActivationFn fn) {
  const int K = x.dim(0).extent(), M = x.dim(1).extent(),
            N = w.meaning.dim(1).extent(), groups = (K + group - 1) / group;
  Buffer<float> out(N, M);
  for (int m = 0; m < M; ++m) {
    ReferenceQuantisedRow row = referenceQuantiseRow(x, m, group);
    const std::vector<int> &q = row.q;
    const std::vector<float> &d = row.d;
    for (int n = 0; n < N; ++n) {
      double acc = bias.defined() ? double(bias(n)) : 0.0;
      for (int g = 0; g < groups; ++g) {
        int64_t sum = 0;
        for (int k = g * group; k < std::min(K, (g + 1) * group); ++k)
          sum += int64_t(q[k]) * w.q(k, n);
        acc += double(d[g] * w.scale(g, n)) * double(sum);
      }
      acc = referenceActivation(fn, acc);
      if (residual.defined())
        acc += residual(n, m);
      out(n, m) = row.finite ? float(acc)
                             : std::numeric_limits<float>::quiet_NaN();
    }
  }
  return out;
}

/// int8 activations' gated linear: act(gate) · up, each as
/// referenceIntegerLinear computes it (NaN rows stay NaN).
inline Buffer<float> referenceIntegerGatedLinear(
    const Buffer<float> &x, const NarrowWeight &gate, const NarrowWeight &up,
    int group, const Buffer<float> &gateBias, const Buffer<float> &upBias,
    codegen::ActivationFn fn) {
  Buffer<float> out =
      referenceIntegerLinear(x, gate, group, gateBias, Buffer<float>(), fn);
  Buffer<float> upOut = referenceIntegerLinear(x, up, group, upBias,
                                               Buffer<float>(),
                                               codegen::ActivationFn::None);
  out.for_each_element([&](int n, int m) { out(n, m) *= upOut(n, m); });
  return out;
}

/// The largest finite |value| of `b`, at least 1.
inline float largestFinite(const Buffer<float> &b) {
  float largest = 1.0f;
  b.for_each_element([&](int n, int m) {
    if (std::isfinite(b(n, m)))
      largest = std::max(largest, std::abs(b(n, m)));
  });
  return largest;
}

/// A kernel's (N, M) outputs against a reference that has NaN rows (int8
/// activations): NaN exactly where it is NaN, elsewhere within 1e-5 of its
/// largestFinite. Returns how many NaNs the reference has.
inline int expectCloseWithNaNs(const Buffer<float> &actual,
                               const Buffer<float> &expected) {
  const float largest = largestFinite(expected);
  int wrong = 0, nans = 0;
  expected.for_each_element([&](int n, int m) {
    float a = actual(n, m), b = expected(n, m);
    bool ok = std::isnan(b) ? std::isnan(a) : std::abs(a - b) <= 1e-5f * largest;
    nans += std::isnan(b);
    if (!ok && wrong++ < 5)
      ADD_FAILURE() << "at " << n << ", " << m << ": " << a << " instead of "
                    << b;
  });
  EXPECT_EQ(wrong, 0);
  return nans;
}

/// A gated FFN's gate and up in one: out(n, m) = act(gate·x + bg) ·
/// (up·x + bu), gate and up (K, N); the biases may be empty buffers.
inline Buffer<float> referenceGatedLinear(const Buffer<float> &x,
                                          const Buffer<float> &gate,
                                          const Buffer<float> &up,
                                          const Buffer<float> &gateBias,
                                          const Buffer<float> &upBias,
                                          codegen::ActivationFn fn) {
  const int K = x.dim(0).extent(), M = x.dim(1).extent(),
            N = gate.dim(1).extent();
  Buffer<float> out(N, M);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double g = gateBias.defined() ? double(gateBias(n)) : 0.0;
      double u = upBias.defined() ? double(upBias(n)) : 0.0;
      for (int k = 0; k < K; ++k) {
        g += double(x(k, m)) * gate(k, n);
        u += double(x(k, m)) * up(k, n);
      }
      out(n, m) = float(referenceActivation(fn, g) * u);
    }
  return out;
}

/// RMSNorm over each row of (x + residual) (residual may be empty):
/// y = v / sqrt(mean(v²) + eps) · gamma, no mean subtracted, no bias.
inline Buffer<float> referenceRmsNorm(const Buffer<float> &x,
                                      const Buffer<float> &residual,
                                      const Buffer<float> &gamma, double eps,
                                      bool gainOffset = false) {
  const int width = x.dim(0).extent(), rows = x.dim(1).extent();
  Buffer<float> out(width, rows);
  for (int r = 0; r < rows; ++r) {
    std::vector<double> v(width);
    double squares = 0;
    for (int w = 0; w < width; ++w) {
      v[w] = double(x(w, r)) + (residual.defined() ? residual(w, r) : 0.0f);
      squares += v[w] * v[w];
    }
    double inverse = 1.0 / std::sqrt(squares / width + eps);
    for (int w = 0; w < width; ++w)
      out(w, r) = float(v[w] * inverse * (gainOffset ? 1.0 + gamma(w) : gamma(w)));
  }
  return out;
}

/// Rotary positions, Hugging Face Llama's "rotate half" layout, over x
/// (H·Dh, S, B) whose sequence coordinate is the token's position (a decode
/// step's buffer starts at P). As the contract and tfm.rope's
/// description say: inv_freq[i] = 1 / theta^(2i/Dh) and the angle
/// p·inv_freq[i] are f32 values (torch's LlamaRotaryEmbedding); the
/// rotation itself is in double.
/// Rope's frequency scaling (tfm.rope's #tfm.rope_scaling): kind 0 none,
/// 1 linear (inv_freq / factor), 2 Llama 3.1's, 3 longrope (inv_freq[i] /
/// factors[i], cos and sin times factor).
struct RopeScalingCase {
  int kind = 0;
  double factor = 1, lowFreqFactor = 1, highFreqFactor = 4;
  int64_t originalMaxLen = 0;
  std::vector<double> factors = {};
};

/// inv_freq[i] scaled as transformers' _compute_linear_scaling_rope_parameters
/// and _compute_llama3_parameters say, in f32 (plain divisions: torch's
/// reciprocal-then-multiply may differ in the last bit).
inline float referenceScaledFrequency(float inverse, int i,
                                      const RopeScalingCase &scaling) {
  const float factor = float(scaling.factor);
  if (scaling.kind == 0)
    return inverse;
  if (scaling.kind == 1)
    return inverse / factor;
  if (scaling.kind == 3)
    return inverse / float(scaling.factors.at(i));
  const double original = double(scaling.originalMaxLen);
  const float wavelength = float(2 * M_PI) / inverse;
  if (wavelength > float(original / scaling.lowFreqFactor))
    return inverse / factor;
  if (wavelength < float(original / scaling.highFreqFactor))
    return inverse;
  const float t = (float(original) / wavelength - float(scaling.lowFreqFactor)) /
                  float(scaling.highFreqFactor - scaling.lowFreqFactor);
  return (1 - t) * inverse / factor + t * inverse;
}

inline Buffer<float> referenceRope(const Buffer<float> &x, int heads,
                                   double theta,
                                   const RopeScalingCase &scaling = {}) {
  const int width = x.dim(0).extent(), headDim = width / heads,
            half = headDim / 2;
  Buffer<float> out(x.dim(0).extent(), x.dim(1).extent(), x.dim(2).extent());
  out.set_min(0, x.dim(1).min(), x.dim(2).min());
  std::vector<float> inverseFrequency(half);
  for (int i = 0; i < half; ++i) {
    float exponent = float(2 * i) / float(headDim);
    inverseFrequency[i] = referenceScaledFrequency(
        1.0f / std::pow(float(theta), exponent), i, scaling);
  }
  const double attention = scaling.kind == 3 ? scaling.factor : 1.0;
  out.for_each_element([&](int d, int s, int b) {
    int h = d / headDim, i = d % headDim, f = i % half;
    float angle = float(s) * inverseFrequency[f];
    double c = attention * std::cos(double(angle)),
           sn = attention * std::sin(double(angle));
    double self = x(d, s, b);
    if (i < half)
      out(d, s, b) = float(self * c - double(x(h * headDim + i + half, s, b)) * sn);
    else
      out(d, s, b) = float(self * c + double(x(h * headDim + i - half, s, b)) * sn);
  });
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

/// Each sequence's last (or first) position: x (D, S, B) -> (D, B),
/// out(d, b) = x(d, S - 1, b) (or x(d, 0, b)), whatever x's coordinates
/// start at.
inline Buffer<float> referenceLastPosition(const Buffer<float> &x,
                                           bool first = false) {
  const int width = x.dim(0).extent(),
            last = first ? x.dim(1).min() : x.dim(1).max(),
            batch = x.dim(2).extent();
  Buffer<float> out(width, batch);
  for (int b = 0; b < batch; ++b)
    for (int d = 0; d < width; ++d)
      out(d, b) = x(d, last, x.dim(2).min() + b);
  return out;
}

struct AttentionMask {
  bool causal = false, padding = false;
  int window = 0;
  /// Query i is at position Sk - Sq + i (a decode step's newest queries).
  bool queriesAtEnd = false;
};

/// Masked softmax attention per (batch, head): q (D, H, Sq, B), k and v
/// (D, Hkv, Sk, B) with Hkv dividing H (grouped-query attention: query head
/// h reads K/V head h / (H / Hkv)), keep (Sk, B) (padding only; 0 =
/// masked). Query i is at position i, or Sk - Sq + i with queriesAtEnd; key
/// j at position j. A query whose keys are all masked gets zeros. With
/// `softcap` c > 0 each scaled score s becomes c · tanh(s / c) (Gemma 2).
inline Buffer<float> referenceAttention(const Buffer<float> &q,
                                        const Buffer<float> &k,
                                        const Buffer<float> &v,
                                        const Buffer<int64_t> &keep,
                                        AttentionMask mask, double scale,
                                        double softcap = 0) {
  const int D = q.dim(0).extent(), H = q.dim(1).extent(),
            Sq = q.dim(2).extent(), B = q.dim(3).extent(),
            Sk = k.dim(2).extent(), Dv = v.dim(0).extent(),
            group = H / k.dim(1).extent();
  Buffer<float> out(Dv, H, Sq, B);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int query = 0; query < Sq; ++query) {
        const int i = mask.queriesAtEnd ? Sk - Sq + query : query,
                  hk = h / group;
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
            s += double(q(d, h, query, b)) * k(d, hk, j, b);
          p[j] = s * scale;
          if (softcap > 0)
            p[j] = softcap * std::tanh(p[j] / softcap);
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
            acc += p[j] * v(e, hk, j, b);
          out(e, h, query, b) = total > 0 ? float(acc / total) : 0.0f;
        }
      }
  return out;
}

// ---- Cases that the CPU and GPU kernel tests share -----------------------

struct RopeCase {
  int heads, headDim;
  double theta;
  int length, first; // positions first .. first + length - 1
  int lanes;
  RopeScalingCase scaling = {};
};

inline std::string describe(const RopeCase &c) {
  return std::to_string(c.heads) + " heads of " + std::to_string(c.headDim) +
         ", theta " + std::to_string(c.theta) + ", positions " +
         std::to_string(c.first) + ".." +
         std::to_string(c.first + c.length - 1) +
         (c.scaling.kind == 0   ? ""
          : c.scaling.kind == 1 ? ", linear scaling"
          : c.scaling.kind == 2 ? ", llama3 scaling"
                                : ", longrope scaling");
}

/// Rope's cases: head sizes whose half is and is not a whole number of
/// vectors, Llama's and Llama 3's theta, prompts from position 0 and
/// decode steps whose sequence coordinate starts at P > 0.
inline const std::vector<RopeCase> ropeCases{
    {3, 8, 10000.0, 5, 0, 8},      {2, 64, 10000.0, 7, 0, 16},
    {4, 6, 10000.0, 3, 5, 8},      {2, 64, 10000.0, 1, 37, 16},
    {1, 128, 500000.0, 3, 900, 16},
    // Scaled: linear; Llama 3.2's llama3 scaling, whose wavelengths at
    // head 64 and theta 500000 (6.3 to 2.1e6) fall in all three of its
    // ranges (below 8192 / 4, between, above 8192 / 1).
    {2, 64, 10000.0, 4, 300, 16, {1, 4.0}},
    {2, 64, 500000.0, 4, 3000, 16, {2, 32.0, 1.0, 4.0, 8192}},
    // Phi-3's longrope: a factor per frequency (each one different, so a
    // factor used at the wrong index shows), cos and sin times 1.19.
    {3, 16, 10000.0, 5, 4000, 8,
     {3, 1.19, 1.0, 4.0, 4096, {1.0, 1.5, 2.25, 3.0, 5.5, 8.0, 13.0, 21.0}}}};

struct GroupedCase {
  const char *name;
  int heads, kvHeads, queries, keys;
  AttentionMask mask;
};

/// Grouped-query attention's cases: K/V heads shared by 2 and by 4 query
/// heads under each mask, and a decode step's newest queries (Sq < Sk).
inline const std::vector<GroupedCase> groupedCases{
    {"ratio 2, causal", 4, 2, 37, 37, {true}},
    {"ratio 4, causal + padding", 8, 2, 37, 37, {true, true}},
    {"ratio 2, causal window", 4, 2, 45, 45, {true, false, 5}},
    {"ratio 4, window", 4, 1, 30, 30, {false, false, 4}},
    {"ratio 4, padding (cross)", 8, 2, 7, 30, {false, true}},
    {"decode, 1 query, causal", 4, 2, 1, 21, {true, false, 0, true}},
    {"decode, 1 query, causal window", 8, 2, 1, 21, {true, false, 6, true}},
    // What a decode step's self-attention is given: a window from the
    // newest position, no causal mask.
    {"decode, 1 query, window", 4, 2, 1, 21, {false, false, 6, true}},
    {"3 queries at the end, window", 4, 2, 3, 21, {false, false, 5, true}},
    {"3 queries at the end, causal", 4, 2, 3, 21, {true, false, 0, true}},
    {"3 queries at the end, causal window", 8, 2, 3, 40,
     {true, false, 6, true}},
    {"3 queries at the end, causal window + padding", 4, 1, 3, 40,
     {true, true, 7, true}},
};

/// A kernel's inputs, in argument order, and the reference's answer.
struct KernelCase {
  std::vector<Buffer<>> inputs;
  Buffer<float> expected;
};

/// Random inputs of a grouped case and the reference's answer.
inline KernelCase groupedInputs(const GroupedCase &c, int dim, int batch,
                                   double scale) {
  Buffer<float> q = randomFloats({dim, c.heads, c.queries, batch}, 50, 2.0f);
  Buffer<float> k = randomFloats({dim, c.kvHeads, c.keys, batch}, 51, 2.0f);
  Buffer<float> v = randomFloats({dim, c.kvHeads, c.keys, batch}, 52);
  // Sequence 0 pads its last 4 keys; sequence 1 its first 3 (left padding).
  Buffer<int64_t> keep(c.keys, batch);
  for (int j = 0; j < c.keys; ++j) {
    keep(j, 0) = j < c.keys - 4 ? 1 : 0;
    keep(j, 1) = j >= 3 ? 1 : 0;
  }
  KernelCase result{{q, k, v},
                       referenceAttention(q, k, v, keep, c.mask, scale)};
  if (c.mask.padding)
    result.inputs.push_back(keep);
  return result;
}

/// W (K, N) — rows of N along the outer dimension — in panels of `panel`
/// rows (support/WeightFormat.h): (j, k, p) is row p·panel + j, column k.
inline Buffer<float> inPanels(const Buffer<float> &w, int panel) {
  const int K = w.dim(0).extent(), N = w.dim(1).extent();
  Buffer<float> panels(panel, K, N / panel);
  panels.for_each_element(
      [&](int j, int k, int p) { panels(j, k, p) = w(k, p * panel + j); });
  return panels;
}

/// A gated linear's inputs and the reference's answer: x of M rows and
/// depth K, gate and up weights of N outputs stored as spec.weightType
/// (int8 with spec.group), both biases when spec.hasBias, spec.activation
/// on the gate. Sets spec's widths.
inline KernelCase gatedInputs(codegen::KernelSpec &spec, int M, int N,
                              int K) {
  spec.width = N;
  spec.inWidth = K;
  Buffer<float> x = randomFloats({K, M}, 30, 2.0f);
  Buffer<float> gate = randomFloats({K, N}, 31), up = randomFloats({K, N}, 32),
                gateBias, upBias;
  KernelCase result{{x}, {}};
  for (Buffer<float> *weight : {&gate, &up}) {
    if (spec.weightType == codegen::WeightType::F32) {
      result.inputs.push_back(spec.weightPanel > 0
                                  ? inPanels(*weight, int(spec.weightPanel))
                                  : *weight);
      continue;
    }
    NarrowWeight stored = narrow(*weight, spec.weightType, int(spec.group));
    for (const Buffer<> &argument : stored.arguments)
      result.inputs.push_back(argument);
    *weight = stored.meaning;
  }
  if (spec.hasBias) {
    gateBias = randomFloats({N}, 33);
    upBias = randomFloats({N}, 34);
    result.inputs.push_back(gateBias);
    result.inputs.push_back(upBias);
  }
  result.expected =
      referenceGatedLinear(x, gate, up, gateBias, upBias, spec.activation);
  return result;
}

/// `spec` (a CPU or GPU rows plan) for rope case `c`.
inline codegen::KernelSpec ropeSpec(codegen::KernelSpec spec,
                                    const RopeCase &c) {
  spec.width = c.heads * c.headDim;
  spec.heads = c.heads;
  spec.headDim = c.headDim;
  spec.ropeTheta = c.theta;
  using Scaling = codegen::KernelSpec::RopeScaling;
  spec.ropeScaling = c.scaling.kind == 0   ? Scaling::None
                     : c.scaling.kind == 1 ? Scaling::Linear
                     : c.scaling.kind == 2 ? Scaling::Llama3
                                           : Scaling::LongRope;
  spec.ropeFrequencyFactors = c.scaling.factors;
  spec.ropeFactor = c.scaling.factor;
  spec.ropeLowFreqFactor = c.scaling.lowFreqFactor;
  spec.ropeHighFreqFactor = c.scaling.highFreqFactor;
  spec.ropeOriginalMaxLen = c.scaling.originalMaxLen;
  return spec;
}

/// Rope case `c`'s input over `batch` sequences, its sequence coordinate
/// starting at the first position, and the reference's answer (the output
/// buffer must start there too).
inline KernelCase ropeInputs(const RopeCase &c, int batch) {
  Buffer<float> x =
      randomFloats({c.heads * c.headDim, c.length, batch}, 43, 2.0f);
  x.set_min(0, c.first, 0);
  return {{x}, referenceRope(x, c.heads, c.theta, c.scaling)};
}

/// Random inputs of an RMSNorm of `rows` rows of `width` (with a residual
/// or not) and the reference's answer. Every row is offset by 1.5: RMSNorm
/// subtracts no mean, so LayerNorm's answer would differ.
inline KernelCase rmsNormInputs(int width, int rows, bool withResidual,
                                double eps, bool gainOffset = false) {
  Buffer<float> x = randomFloats({width, rows}, 40, 3.0f), residual;
  x.for_each_element([&](int w, int r) { x(w, r) += 1.5f; });
  Buffer<float> gamma = randomFloats({width}, 41);
  KernelCase result{{x}, {}};
  if (withResidual) {
    residual = randomFloats({width, rows}, 42);
    result.inputs.push_back(residual);
  }
  result.inputs.push_back(gamma);
  result.expected = referenceRmsNorm(x, residual, gamma, eps, gainOffset);
  return result;
}

/// `spec` (a CPU or GPU attention plan) for case `c` with heads of `dim`.
inline codegen::KernelSpec groupedSpec(codegen::KernelSpec spec,
                                       const GroupedCase &c, int dim) {
  spec.width = c.heads * dim;
  spec.heads = c.heads;
  spec.kvHeads = c.kvHeads;
  spec.headDim = spec.valueHeadDim = dim;
  spec.attentionScale = 1.0 / std::sqrt(double(dim));
  spec.mask.causal = c.mask.causal;
  spec.mask.padding = c.mask.padding;
  spec.mask.window = c.mask.window;
  spec.mask.queriesAtEnd = c.mask.queriesAtEnd;
  return spec;
}

} // namespace tfmc::test

#endif // TFMC_TEST_UNIT_KERNELREFERENCE_H
