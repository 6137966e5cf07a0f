//===- Kernel.h - Kernels as Halide pipelines -------------------*- C++ -*-===//
//
// Each kernel kind is one file in this folder: its Halide algorithm (what
// each output element is), its CPU schedule and its GPU schedule, read from
// the kernel's typed tile plan (passes/target/TilePlan.h), kept apart as in
// Halide's generators. Schedules never change results. The registry below
// maps a kernel kind to its file's functions (each file registers itself);
// the plain C++ reference of
// each kind, which the kernel tests compare with, is
// test/unit/KernelReference.h. This layer knows nothing of MLIR:
// compiler/codegen/Lowering.cpp describes each kernel with a KernelSpec.
//
// Buffer conventions (Halide dimensions, innermost first; f32 unless noted):
//   embedding   ids i64 (S, B), table (D, V)                    -> (D, S, B)
//               (int8: table i8 (D, V), scales f16 (ceil(D/G), V); bf16: table bf16;
//               int4: table u8 (18·ceil(D/32), V), Q4_0 blocks)
//   positions   x (D, S, B) [, table (D, max_len)]              -> (D, S, B)
//   scale, activation   x (W, R)                                -> (W, R)
//   add         a (W, R), b (W, R)                              -> (W, R)
//   linear      x (K, M), w (K, N) [, bias (N)] [, residual (N, M)] -> (N, M)
//               (int8: w i8 (K, N), scales f16 (ceil(K/G), N); bf16: w bf16;
//               int4: w u8 (18·ceil(K/32), N), Q4_0 blocks (support/WeightFormat.h);
//               q4_k, q5_k, q6_k: w u8 (B·K/256, N), llama.cpp's super-blocks;
//               integerProducts: x quantised per row and group of G, int8 x int8
//               or int4; bf16Products: x rounded to bf16, bf16 x bf16 pairs)
//   gated_linear x (K, M), gate (K, N), up (K, N) [, bias_gate (N), bias_up (N)]
//               -> (N, M): act(x·gateᵀ + bg) · (x·upᵀ + bu)
//   mul         a (W, R), b (W, R)                              -> (W, R)
//   layer_norm  x (W, R) [, residual (W, R)], gamma (W), beta (W) -> (W, R)
//   rms_norm    x (W, R) [, residual (W, R)], gamma (W)         -> (W, R)
//   rope        x (H·Dh, S, B)                                  -> (H·Dh, S, B)
//   attention   q (Dh, H, Sq, B), k (Dh, Hkv, Sk, B), v (Dv, Hkv, Sk, B)
//               [, key_padding i64 (Sk, B)]                     -> (Dv, H, Sq, B)
//               (k, v bf16 or f16 when read from a narrowed KV cache)
// A linear's, gated linear's or rope's output is bf16 or f16 when it is
// written into a narrowed KV cache slot (KernelSpec::outputType).
//   quantize    x (K, R)                                        -> i8 (G, B/G, R):
//               each row's levels, scales and flag in chunks of a group
//               (support/WeightFormat.h's quantisedRowBytes B), which
//               integerProducts linears read as x, i8 (G, B/G, M)
//               (KernelSpec::quantisedInput)
//   last_position  x (D, S, B)                                  -> (D, B): x(d, S-1, b)
//   first_position x (D, S, B)                                  -> (D, B): x(d, 0, b)
// R and M are rows: the product of the leading (batch, sequence) dims.
//
// Tails: outputs are split with GuardWithIf, so a tile past the end of the
// output does no stores; intermediates may be computed over whole tiles, so
// every input is read through a clamped index and an over-computed element
// reads valid memory instead of failing Halide's bounds assertions.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_KERNELS_KERNEL_H
#define TFMC_CODEGEN_KERNELS_KERNEL_H

#include "passes/target/TilePlan.h"

#include "Halide.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tfmc::codegen {

using target::KernelKind;

enum class ActivationFn { None, Relu, Gelu, GeluTanh, Silu, Tanh };

/// How a linear's weight or an embedding's table is stored; the kernel
/// widens it to f32 (tfm-weight-storage).
enum class WeightType { F32, BF16, Int8, Int4, Q4K, Q5K, Q6K };

/// Whether `type` is one of llama.cpp's K-quants (support/WeightFormat.h).
inline bool isKQuant(WeightType type) {
  return type == WeightType::Q4K || type == WeightType::Q5K ||
         type == WeightType::Q6K;
}

/// Which keys a query may attend to.
struct MaskSpec {
  bool causal = false;
  bool padding = false; // a key_padding input (1 = token, 0 = padding)
  int64_t window = 0;   // 0: none; else |query - key| < window
  /// Query i is at position Sk - Sq + i (a decode step's self-attention),
  /// not at i.
  bool queriesAtEnd = false;
};

/// One kernel as codegen asks for it: its kind, shapes and attributes, and
/// its tile plan.
struct KernelSpec {
  KernelKind kind = KernelKind::Add;
  /// The plan for the target: a Cpu*Plan, or a Gpu*Plan for a CUDA kernel.
  target::TilePlan tile;
  int64_t width = 0; // the output's last dimension (D, N, W)

  // Embedding: rows of the table (ids are clamped into it).
  int64_t vocab = 0;
  // Linear's weight and embedding's table: their storage; int8's and int4's
  // group of consecutive columns sharing one scale (int4: 32); a K-quant's
  // 32, the group of its int8 activations (a q4_k or q5_k sub-block, two of
  // q6_k's).
  WeightType weightType = WeightType::F32;
  int64_t group = 0;
  // Linear (CPU): an f32 W stored in panels of weightPanel rows (tfm.weight's
  // `panel`, support/WeightFormat.h): panel p holds rows p·T .. p·T+T-1 with
  // the row innermost, [N/T, K, T] (T divides N). 0: [N, K] row-major.
  int64_t weightPanel = 0;
  // Linear with int8 or int4 weights: quantise each row of x per group (int8
  // activations, `tfm.activations = "int8"`) and multiply integers.
  bool integerProducts = false;
  // Integer products whose x comes quantised (tfm.quantize's bytes, i8
  // (G, B / G, M) chunks of a group, support/WeightFormat.h's
  // quantisedRowBytes B) instead of f32 (K, M).
  bool quantisedInput = false;
  // Integer products: the instruction set of the microkernel that computes
  // each task's sums (support/Microkernels.h; the target's
  // integerMicrokernels), where the form takes one (LinearMicrokernel.cpp);
  // empty: the Halide form.
  std::string integerMicrokernel;
  // A K-quant weight (q4_k, q5_k, q6_k) on a CPU target: the instruction
  // set of the microkernels over its super-blocks (support/Microkernels.h;
  // the target's integerMicrokernels), which a row per sequence runs with
  // f32 activations and every row count with int8 ones; empty on CUDA.
  std::string kQuantMicrokernel;
  // An int8 or int4 weight in rows on a CPU target: the instruction set of
  // the microkernel that widens it into f32 panels for many rows of f32 x
  // (support/Microkernels.h's tfmc_uk_q8fp; the target's
  // integerMicrokernels); empty on CUDA.
  std::string blockFloatMicrokernel;
  // A packed plan with `microkernel`: the instruction set of the f32
  // microkernel that computes each task's products (support/
  // Microkernels.h; the target's floatMicrokernels); empty otherwise.
  std::string floatMicrokernel;
  // An f32 weight in rows (no panels) on a CPU target: the instruction set
  // of the f32 microkernel that a dot plan's tasks (a row per sequence)
  // call for their products (support/Microkernels.h's tfmc_uk_f32r; the
  // target's floatMicrokernels); empty: Halide's dot form.
  std::string floatRowMicrokernel;
  // Linear with bf16 weights (CPU): round each input to bf16 (nearest even;
  // `tfm.activations = "bf16"`) and sum the exact products in f32; in pairs
  // (bf16Pairs: vdpbf16ps, on a target with the bf16 dot product, compiled
  // with its bf16DotFeatures) or as f32 FMAs of the rounded values (the same
  // numbers but for the order of the sums).
  bool bf16Products = false, bf16Pairs = false;
  // Positions: a learned table instead of sinusoids. Positions and rope:
  // each token's position read from a position_ids argument (else its
  // index in the sequence).
  bool learnedPositions = false;
  bool positionIds = false;
  // Sinusoids in Marian's layout: sin in the first half, cos in the second.
  bool sinusoidHalves = false;
  // Scale.
  double scale = 1.0;
  // Softcap, and attention's logit soft-capping: cap · tanh(x / cap) (0:
  // none).
  double softcap = 0.0;
  // Activation, and linear's epilogue.
  ActivationFn activation = ActivationFn::None;
  // Linear: depth K; layer_norm and linear: a residual input.
  int64_t inWidth = 0;
  bool hasBias = false, hasResidual = false;
  // Layer norm; RMSNorm's gain 1 + gamma with normGainOffset.
  double eps = 1e-5;
  bool normGainOffset = false;
  // Attention (and rope's heads and head width); kvHeads 0 means heads.
  int64_t heads = 0, kvHeads = 0, headDim = 0, valueHeadDim = 0;
  // Rope: inv_freq[i] = 1 / theta^(2i / headDim); pairs (2i, 2i + 1) with
  // ropeInterleaved (ggml's order), else (i, i + headDim / 2).
  double ropeTheta = 10000.0;
  bool ropeInterleaved = false;
  // Rope's scaling of inv_freq (tfm.rope's #tfm.rope_scaling; Rope.cpp).
  enum class RopeScaling { None, Linear, Llama3, LongRope };
  RopeScaling ropeScaling = RopeScaling::None;
  // LongRope: ropeFactor is the attention factor (cos and sin times it),
  // ropeFrequencyFactors each inv_freq's divisor.
  double ropeFactor = 1.0, ropeLowFreqFactor = 1.0, ropeHighFreqFactor = 4.0;
  int64_t ropeOriginalMaxLen = 0;
  std::vector<double> ropeFrequencyFactors;
  double attentionScale = 1.0;
  MaskSpec mask;
  // The KV cache's element type (`tfmc --kv-cache-dtype`): a kernel whose
  // output is a cache slot (a linear's or rope's) stores it as outputType,
  // rounded to the nearest even bf16 or f16 (storedAs, Common.h); attention
  // widens keys and values it reads from the cache. Float(32) by default.
  Halide::Type outputType = Halide::Float(32);
  Halide::Type keyType = Halide::Float(32), valueType = Halide::Float(32);
  /// Attention reads K and V from the runtime's paged KV cache: each is the
  /// whole block pool (head dim, head, pool row), and a `key_rows` input
  /// (key, sequence) gives the pool row of each key, -1 for none (CPU
  /// only; runtime/core/Plan.h).
  bool pagedCache = false;

  /// Leave the algorithm to Halide's Adams2019 autoscheduler instead of the
  /// tile plan (a benchmark peer for the tile pass).
  bool autoschedule = false;
  /// Autoscheduler only: the extents of each buffer (arguments, then the
  /// output), Halide order, at the largest batch and sequence.
  std::vector<std::vector<int64_t>> estimates;

  bool gpu() const {
    return std::holds_alternative<target::GpuGemmPlan>(tile) ||
           std::holds_alternative<target::GpuAttentionPlan>(tile) ||
           std::holds_alternative<target::GpuRowsPlan>(tile);
  }
  template <typename Plan> const Plan &plan() const {
    return std::get<Plan>(tile);
  }
};

/// A pipeline ready to compile: its output, its arguments in order, and the
/// intermediate Funcs and reduction domains a schedule needs, by name.
struct BuiltKernel {
  BuiltKernel(Halide::Func output, std::vector<Halide::ImageParam> arguments,
              std::map<std::string, Halide::Func> stages = {},
              std::map<std::string, Halide::RDom> domains = {})
      : output(std::move(output)), arguments(std::move(arguments)),
        stages(std::move(stages)), domains(std::move(domains)) {}

  Halide::Func output;
  std::vector<Halide::ImageParam> arguments;
  std::map<std::string, Halide::Func> stages;
  std::map<std::string, Halide::RDom> domains;
};

/// What one kernel kind's file provides.
struct KernelDefinition {
  /// The CPU algorithm, unscheduled (what the autoscheduler schedules).
  BuiltKernel (*algorithm)(const KernelSpec &);
  /// Applies the CPU plan's schedule to the algorithm's Funcs.
  void (*cpuSchedule)(BuiltKernel &, const KernelSpec &);
  /// The GPU kernel: an algorithm (the CPU one where it is the same) with
  /// the GPU plan's schedule.
  BuiltKernel (*gpu)(const KernelSpec &);
};

/// Adds a kernel file's definition to the registry for `kinds`: each kernel
/// file has one, at namespace scope, so adding a kernel kind touches no
/// list elsewhere in codegen.
struct KernelRegistration {
  KernelRegistration(std::initializer_list<KernelKind> kinds,
                     KernelDefinition definition);
};

/// The registry: the definition registered for `kind`, or null.
const KernelDefinition *kernelDefinition(KernelKind kind);

/// The kernel as codegen compiles it: its algorithm with the schedule of its
/// tile plan for the CPU or the GPU; unscheduled when spec.autoschedule.
BuiltKernel buildKernel(const KernelSpec &spec);

/// The GPU kernel with its GPU loops serial and its GPU memory types left to
/// Halide, runnable on the CPU: the same algorithm, loop structure, bounds
/// and compute_at levels, whose numbers the kernel tests check without a
/// GPU. Barriers, shared and register memory are what only a GPU run checks.
BuiltKernel buildGpuOnHost(const KernelSpec &spec);

/// AOT-compiles the kernel into `objectPath` as function `name` (and
/// Halide's `name_argv`) for `target`. Returns false with a one-line
/// `error`.
bool compileKernel(const KernelSpec &spec, const std::string &name,
                   const target::TargetDescription &target,
                   const std::string &objectPath, std::string &error);

/// Halide's runtime for `target`, once per binary.
bool compileRuntime(const target::TargetDescription &target,
                    const std::string &objectPath, std::string &error);

/// The kernel's lowered loop nest and schedule, as Halide prints it
/// (`tfmc --emit halide`). Throws Halide::Error when Halide cannot lower it.
std::string describeKernel(const KernelSpec &spec,
                           const target::TargetDescription &target);

} // namespace tfmc::codegen

#endif // TFMC_CODEGEN_KERNELS_KERNEL_H
