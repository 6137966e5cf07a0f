//===- Rope.cpp - Rotary position embedding of queries or keys ------------===//
//
// Hugging Face Llama's "rotate half" layout: in each head of Dh features,
// feature i < Dh/2 turns with feature i + Dh/2 by the angle
// p · inv_freq[i], p the token's position. Interleaved (ggml's
// GGML_ROPE_TYPE_NORM, a llama GGUF file's order): feature 2i turns with
// 2i + 1 by the same angle. The numbers follow
// LlamaRotaryEmbedding's f32 arithmetic: inv_freq[i] = 1 / theta^(2i/Dh)
// rounded to f32, scaled as tfm.rope's #tfm.rope_scaling says (linear,
// Llama 3.1's, or Phi-3's longrope) (a table computed here, at compile time),
// the angle one f32 product, and cos and sin of that f32 angle rounded from
// double (so correctly rounded, as torch's are to within an ulp); longrope
// then multiplies both by its attention factor, in f32, as transformers'
// RotaryEmbedding does.
//
// In a decode step the sequence dimension starts at P, the number of cached
// tokens (the plan gives the buffers that min): positions P .. P+S-1.
//
// CPU: the cos and sin table of the call's positions is computed once per
// call (Dh/2 x S values, parallel over positions); the rotation then
// streams the rows as the other elementwise kernels do.
//
//===----------------------------------------------------------------------===//

#include "compiler/codegen/kernels/Common.h"

#include <cmath>

namespace tfmc::codegen::kernels {
namespace {

using namespace Halide;

/// inv_freq[i] as transformers computes it, in f32: the default
/// 1 / (base ** (arange(0, Dh, 2).float() / Dh)), then the scaling
/// (_compute_linear_scaling_rope_parameters, _compute_llama3_parameters,
/// _compute_longrope_parameters), each operation rounded to f32 as torch's
/// f32 tensors round it.
float ropeInverseFrequency(const KernelSpec &spec, int i) {
  const float exponent = float(2 * i) / float(spec.headDim);
  const float power =
      float(std::pow(double(float(spec.ropeTheta)), double(exponent)));
  const float inverse = 1.0f / power;
  const float factor = float(spec.ropeFactor);
  switch (spec.ropeScaling) {
  case KernelSpec::RopeScaling::None:
    return inverse;
  case KernelSpec::RopeScaling::Linear:
    return inverse / factor;
  case KernelSpec::RopeScaling::LongRope:
    // 1 / (ext_factors * base ** ...): the product, then its reciprocal.
    return 1.0f / (float(spec.ropeFrequencyFactors.at(i)) * power);
  case KernelSpec::RopeScaling::Llama3:
    break;
  }
  // The bounds are Python floats (double), compared with the f32 wavelength
  // as torch compares (the scalar rounded to f32). `scalar / tensor` is
  // torch's tensor.reciprocal() * scalar: two roundings.
  const double original = double(spec.ropeOriginalMaxLen);
  const float lowWavelength = float(original / spec.ropeLowFreqFactor);
  const float highWavelength = float(original / spec.ropeHighFreqFactor);
  const float wavelength = (1.0f / inverse) * float(2 * M_PI);
  if (wavelength > lowWavelength)
    return inverse / factor; // a low frequency
  if (wavelength < highWavelength)
    return inverse; // a high frequency
  const float smooth =
      ((1.0f / wavelength) * float(original) - float(spec.ropeLowFreqFactor)) /
      float(spec.ropeHighFreqFactor - spec.ropeLowFreqFactor);
  return (1.0f - smooth) * inverse / factor + smooth * inverse;
}

BuiltKernel algorithm(const KernelSpec &spec) {
  ImageParam x(Float(32), 3, "x");
  Var d("d"), s("s"), b("b"), f("f");
  const int headDim = int(spec.headDim), half = headDim / 2;

  Buffer<float> inverseFrequency(half, "inv_freq");
  for (int i = 0; i < half; ++i)
    inverseFrequency(i) = ropeInverseFrequency(spec, i);
  // Each token's position: its index (after the cache's P), or its
  // position_ids entry (left-padded batches): a table per (position, row).
  std::vector<ImageParam> arguments{x};
  Func angle("angle"), cosine("cosine"), sine("sine");
  if (spec.positionIds) {
    ImageParam ids(Int(64), 2, "position_ids");
    arguments.push_back(ids);
    angle(f, s, b) = cast<float>(ids(s, b)) * inverseFrequency(f);
  } else {
    angle(f, s, b) = cast<float>(s) * inverseFrequency(f);
  }
  Expr cosineValue = cast<float>(cos(cast<double>(angle(f, s, b))));
  Expr sineValue = cast<float>(sin(cast<double>(angle(f, s, b))));
  if (spec.ropeScaling == KernelSpec::RopeScaling::LongRope) {
    const float attention = float(spec.ropeFactor);
    cosineValue = cosineValue * attention;
    sineValue = sineValue * attention;
  }
  cosine(f, s, b) = cosineValue;
  sine(f, s, b) = sineValue;

  Expr within = d % headDim;
  // `first`: the feature that turns first of its pair (result = x cos - x'
  // sin); the other turns back (x cos + x' sin).
  Expr first, pair, frequency;
  if (spec.ropeInterleaved) {
    first = within % 2 == 0;
    pair = clamp(select(first, d + 1, d - 1), 0, x.dim(0).extent() - 1);
    frequency = clamp(within / 2, 0, half - 1);
  } else {
    first = within < half;
    pair = clamp(select(first, d + half, d - half), 0, x.dim(0).extent() - 1);
    // Clamped for bounds inference, which cannot see that both arms are in
    // [0, Dh/2).
    frequency = clamp(select(first, within, within - half), 0, half - 1);
  }
  Expr turned = select(first, -x(pair, s, b), x(pair, s, b));
  Func out("rope");
  out(d, s, b) = storedAs(spec.outputType,
                         x(d, s, b) * cosine(frequency, s, b) +
                             turned * sine(frequency, s, b));
  return {out, arguments, {{"cosine", cosine}, {"sine", sine}}};
}

void cpuSchedule(BuiltKernel &kernel, const KernelSpec &spec) {
  for (const char *name : {"cosine", "sine"})
    kernel.stages[name].compute_root().parallel(Var("s"));
  scheduleTokenRows(kernel.output, spec.plan<target::CpuRowsPlan>());
}

BuiltKernel gpu(const KernelSpec &spec) {
  // cos and sin are computed inline, per element, in double (as on the CPU).
  BuiltKernel kernel = algorithm(spec);
  gridOverTokens(kernel, spec);
  return kernel;
}

const KernelRegistration registration({KernelKind::Rope},
                                      {algorithm, cpuSchedule, gpu});

} // namespace

} // namespace tfmc::codegen::kernels
