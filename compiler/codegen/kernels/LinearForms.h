//===- LinearForms.h - What Linear.cpp's forms share ------------*- C++ -*-===//
//
// Linear.cpp holds the f32-activation forms of the linear kernel (dot,
// packed, GPU) and its registration; LinearQuantized.cpp the forms for
// integer weights that quantise or block their input (int8 activations,
// int4's nibble forms). This is what the two files share: the kernel's
// operands, the accumulator's start and epilogue, and the dot form's
// algorithm and tile schedule, which the quantized forms reuse.
//
//===----------------------------------------------------------------------===//

#ifndef TFMC_CODEGEN_KERNELS_LINEARFORMS_H
#define TFMC_CODEGEN_KERNELS_LINEARFORMS_H

#include "compiler/codegen/kernels/Common.h"

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace tfmc::codegen::kernels::linear {

using Halide::Expr;
using Halide::Float;
using Halide::Func;
using Halide::ImageParam;
using Halide::RDom;
using Halide::RVar;
using Halide::Stage;
using Halide::Var;
using target::CpuGemmPlan;

/// Func arguments with the gated linear's part dimension last.
inline std::vector<Expr> withPart(bool gated, std::vector<Expr> args,
                                  Expr part) {
  if (gated)
    args.push_back(part);
  return args;
}

/// A CPU kernel's inputs and its arguments in order: x, W (values, then
/// int8's scales), the gated linear's up weight, the biases, the residual.
/// Rows of a linear's x (M): its last dimension, the second of f32 (K, M),
/// the third of a tfm.quantize's bytes ((G, B / G, M) chunks).
inline Halide::Expr rowsOf(const Halide::ImageParam &x) {
  return x.dim(x.dimensions() - 1).extent();
}

struct Operands {
  explicit Operands(const KernelSpec &spec)
      : gated(spec.kind == KernelKind::GatedLinear),
        x(spec.quantisedInput ? Halide::Int(8) : Float(32),
          spec.quantisedInput ? 3 : 2, "x"),
        w(spec, "w"), up(spec, "w_up"), bias(Float(32), 1, "bias"),
        upBias(Float(32), 1, "bias_up"), residual(Float(32), 2, "residual") {
    arguments.push_back(x);
    for (const ImageParam &argument : w.arguments())
      arguments.push_back(argument);
    if (gated)
      for (const ImageParam &argument : up.arguments())
        arguments.push_back(argument);
    if (spec.hasBias) {
      arguments.push_back(bias);
      if (gated)
        arguments.push_back(upBias);
    }
    if (spec.hasResidual)
      arguments.push_back(residual);
  }

  /// Rows of x (M).
  Halide::Expr rows() const { return rowsOf(x); }

  /// A copy whose int8 scales are a Func of its own (`suffix` names it),
  /// so that each of two forms in one pipeline schedules its own.
  Operands withOwnScales(const std::string &suffix) const {
    Operands copy = *this;
    for (WeightInput *weight : {&copy.w, &copy.up}) {
      weight->scale = weight->scaleFunc(weight->scale.name() + suffix);
      weight->minimum = weight->minimumFunc(weight->minimum.name() + suffix);
    }
    return copy;
  }

  bool gated;
  ImageParam x;
  WeightInput w, up;
  ImageParam bias, upBias, residual;
  std::vector<ImageParam> arguments;
};

/// Defines the accumulator's initial value: the bias (gated: each part's),
/// or 0. `at` is its pure arguments but the part (n first).
void cpuAccumulatorStart(const KernelSpec &spec, const Operands &in, Func acc,
                         std::vector<Expr> at, Var n, Var p);

/// The name of the kernel's output Func: "linear" or "gated_linear".
std::string outputName(const KernelSpec &spec);

/// The output: act(acc) + residual (gated: act(gate) · up), with `at` the
/// accumulator's arguments of output (n, m) but the part. Stored as
/// spec.outputType when `name` is the kernel's output (outputName).
Func cpuEpilogue(const KernelSpec &spec, const Operands &in, Func acc,
                 std::vector<Expr> at, Var n, Var m, const std::string &name);

/// The end every CPU form but the packed one shares: acc(n, m) = bias +
/// Σ_lanes partial(lane, n, m[, part]) over `lanes` lanes (`prefix`acc,
/// `prefix`rl), then the epilogue `outName`.
struct LaneSums {
  Func acc, out;
  RDom rl;
};
LaneSums sumLanes(const KernelSpec &spec, const Operands &in, Func partial,
                  int lanes, const std::string &prefix,
                  const std::string &outName);

/// The dot form: acc(n, m) = Σ_lanes partial(lane, n, m). Stage names start
/// with `prefix`; x is read through `xSource` when it is defined.
BuiltKernel dotAlgorithm(const KernelSpec &spec, const CpuGemmPlan &plan,
                         const Operands &in, const std::string &prefix,
                         const std::string &name, Func xSource = Func());

/// The dot form's schedule (stages named with `prefix`), on `loops`: the
/// output's own definition, or one of its specializations.
void dotSchedule(BuiltKernel &kernel, const KernelSpec &spec,
                 const CpuGemmPlan &plan, const std::string &prefix,
                 Stage loops);

/// Tiles `out` (its definition `loops`, or a specialization of it) into
/// the plan's micro tiles, blocks and parallel tasks; returns the loop at
/// which one micro tile's accumulators live.
Var tileDotOutputs(Func out, Stage loops, const CpuGemmPlan &plan);

/// A micro tile's accumulators `acc` and `partial` (lane `lane`) at
/// `microTile`, their outputs (and a gated linear's parts) unrolled.
void scheduleTileAccumulators(Func out, Var microTile, Func acc, RDom rl,
                              Func partial, Var lane, const CpuGemmPlan &plan,
                              bool gated);

/// Prefetches, at each step of `steps` of `partial`'s update, the same lines
/// of the next micro tile's rows of W.
void prefetchNextTile(BuiltKernel &kernel, const CpuGemmPlan &plan,
                      Func partial, RVar steps, int stepsPerRow);

// --- LinearQuantized.cpp -------------------------------------------------------

/// int8 activations' quantisation (docs/precision.md, "int8 activations"), for every
/// target: each row of x per group g of G = spec.group features, the
/// weight's groups (a short last group when G does not divide K):
///   d(g, m) = max |x| / 127,  q(k, m) = clamp(rne(x(k, m) · (1 / d)), ±127)
/// (0 where d is 0), each operation in strict f32 so that any target rounds
/// it alike. A NaN or an infinity quantises as 0, and its row's flag
/// `nonFinite(row)` is 1.
struct QuantisedRows {
  /// q(j, g, row): element j of group g of a row in [-127, 127] (0 for j
  /// past the group or K), of the caller's type; scale(g, row): d.
  Func q, scale, nonFinite;
  /// Every stage by name (x_q, x_amax, x_scale, x_inverse, x_nonfinite).
  std::map<std::string, Func> stages;
};

/// x's rows quantised, the levels as `levels` (i16 for pmaddwd, i8 for
/// vpmaddubsw). `ragged`: q's j may pass the group or K (a step that does
/// not divide the group, a short last group), where it reads 0. With
/// spec.quantisedInput, x is a tfm.quantize's bytes and the Funcs read
/// them (stages x_q, x_scale and x_nonfinite only).
QuantisedRows quantiseRows(const KernelSpec &spec, const ImageParam &x,
                           bool ragged, Halide::Type levels);

/// The quantised rows as f32 values: values(k, row) = q · d, exact.
Func dequantisedRows(const QuantisedRows &rows, int group);

/// `value`, or NaN where `nonFinite` (its row's flag) is set, by integer
/// operations (Halide's fast-math flags let no NaN into a float operation).
Expr markNonFinite(Expr value, Expr nonFinite);

/// `value` with the outputs of rows that held a NaN or an infinity set to
/// NaN, by integer operations; stored as spec.outputType (a narrowed KV
/// cache slot's bf16 or f16, rounded to nearest even).
Func markNonFiniteRows(const KernelSpec &spec, Func value, Func nonFinite,
                       const std::string &name);
/// x's quantisation (quantiseRows' stages), once per call before the tiles
/// (M·K values; parallel over rows from kParallelQuantiseRows rows, serial
/// below, where each parallel loop cost more than its work), in tasks of
/// kQuantiseRowsPerTask rows: a task a row made each of its three parallel
/// loops cost more than its work too (GPT-2 small int8a8 prefill 128, 2
/// threads on a Sapphire Rapids: 31.7-33.0 ms with tasks of a row, 27.0-28.8
/// with 16, 27.8-28.8 with 32, 28.1-32.5 with 64).
void quantiseOnce(BuiltKernel &kernel, const KernelSpec &spec, int lanes);
/// A row reduction of quantiseRows (x_amax over `extent` values a group,
/// x_nonfinite over a row) in vectors of up to `lanes` partial results (an
/// rfactor computed at each row of `f`), then one horizontal reduction.
void vectorizeRowReduction(Func f, int64_t extent, int lanes);
constexpr int kParallelQuantiseRows = 16;
constexpr int kQuantiseRowsPerTask = 16;
/// Whether the kernel runs one of LinearQuantized.cpp's forms: int8
/// activations, or an int4 W widened in registers (a row per sequence).
bool usesQuantizedForm(const KernelSpec &spec);

/// That form's algorithm, its output named `name`.
BuiltKernel quantizedAlgorithm(const KernelSpec &spec, const Operands &in,
                               const std::string &name);

/// That form's schedule.
void quantizedSchedule(BuiltKernel &kernel, const KernelSpec &spec);

// --- LinearMicrokernel.cpp ------------------------------------------------------
/// Whether the integer products run the target's microkernel
/// (KernelSpec::integerMicrokernel): int8 activations over int4 W or int8 W
/// in groups of a multiple of 32, a row per sequence (not a widened
/// panel's plan).
bool usesMicrokernel(const KernelSpec &spec);
/// That form's algorithm (its output named `name`) and schedule.
BuiltKernel microkernelAlgorithm(const KernelSpec &spec, const Operands &in,
                                 const std::string &name);
void microkernelSchedule(BuiltKernel &kernel, const KernelSpec &spec);

/// A packed plan's many-rows form through the target's f32 microkernel
/// (CpuPackedGemmPlan::microkernel: an f32 W in panels): its algorithm
/// (output named `name`) and its schedule on the specialization `loops`.
BuiltKernel floatMicrokernelAlgorithm(const KernelSpec &spec,
                                      const Operands &in,
                                      const std::string &name);
void floatMicrokernelSchedule(BuiltKernel &kernel,
                              const target::CpuPackedGemmPlan &plan,
                              Halide::Stage loops);

} // namespace tfmc::codegen::kernels::linear

#endif // TFMC_CODEGEN_KERNELS_LINEARFORMS_H
