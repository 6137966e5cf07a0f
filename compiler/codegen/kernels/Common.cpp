//===- Common.cpp - What the kernel files share ---------------------------===//

#include "compiler/codegen/kernels/Common.h"
#include "support/WeightFormat.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tfmc::codegen::kernels {

using namespace Halide;

Expr negativeInfinity() {
  return Expr(-std::numeric_limits<float>::infinity());
}

Expr storedAs(Type type, Expr value) {
  if (type == Float(32))
    return value;
  if (type == Float(16))
    return cast(type, value);
  if (type != BFloat(16))
    throw CompileError("a kernel output is stored as f32, bf16 or f16, not " +
                       type_to_c_type(type, false));
  // Round to nearest even: add just under half of the dropped 16 bits, and
  // one more when the kept part is odd. A NaN would carry into the sign or
  // the exponent: keep its top bits with a quiet bit instead.
  Expr bits = reinterpret<uint32_t>(value);
  Expr rounded = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
  Expr isNan = (bits & 0x7fffffff) > 0x7f800000;
  Expr kept = select(isNan, (bits >> 16) | 0x40, rounded);
  return reinterpret(BFloat(16), cast<uint16_t>(kept));
}

namespace {

/// erf for the exact GELU: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7),
/// since Halide 14 has no erf.
Expr erfApprox(Expr x) {
  Expr a = abs(x);
  Expr t = 1.0f / (1.0f + 0.3275911f * a);
  Expr poly =
      ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t -
        0.284496736f) *
           t +
       0.254829592f) *
      t;
  Expr y = 1.0f - poly * exp(-a * a);
  return select(x < 0, -y, y);
}

} // namespace

Expr activation(ActivationFn fn, Expr x) {
  switch (fn) {
  case ActivationFn::None:
    return x;
  case ActivationFn::Relu:
    return max(x, 0.0f);
  case ActivationFn::Gelu:
    return 0.5f * x * (1.0f + erfApprox(x * float(M_SQRT1_2)));
  case ActivationFn::GeluTanh: {
    // 0.5·x·(1 + tanh(u)) = x·sigmoid(2u) = x / (1 + exp(-2u)): Halide
    // inlines a vector exp, while its tanh is a scalar libm call per
    // element (which made the FFN's first linear 2.5x slower). exp's
    // argument is clamped so that it stays finite: x / 1.6e38 is 0 to f32.
    Expr u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return x / (1.0f + exp(min(-2.0f * u, 88.0f)));
  }
  case ActivationFn::Silu:
    // x · sigmoid(x), with exp's argument clamped as above.
    return x / (1.0f + exp(min(-x, 88.0f)));
  case ActivationFn::Tanh:
    // Only BERT's pooler (B x d elements) uses it: libm's tanh, exact to
    // an ulp, is cheap enough there.
    return tanh(x);
  }
  return x;
}

Expr softcap(Expr x, double cap) {
  // cap · tanh(x / cap), tanh(t) = 1 - 2 / (1 + exp(2t)): a vector exp, as
  // activation()'s gelu_tanh (Halide's tanh is a scalar libm call), its
  // argument clamped so that it stays finite (tanh is then 1 to f32). The
  // absolute error is a few ulps of 1, times cap.
  const float c = float(cap);
  Expr t = x * (1.0f / c);
  return c * (1.0f - 2.0f / (1.0f + exp(min(2.0f * t, 88.0f))));
}

Expr keyAllowed(const MaskSpec &mask, Expr query, Expr key, Expr keys,
                const ImageParam &keyPadding, Expr batch, bool keyMayPassEnd) {
  Expr allowed = keyMayPassEnd ? key < keys : cast<bool>(1);
  if (mask.causal)
    allowed = allowed && key <= query;
  if (mask.window > 0)
    allowed = allowed && (mask.causal ? query - key < int(mask.window)
                                      : abs(query - key) < int(mask.window));
  if (mask.padding)
    allowed = allowed && keyPadding(clamp(key, 0, keys - 1), batch) != 0;
  return allowed;
}

Var scheduleRows(Func out, Var w, Var r, const target::CpuRowsPlan &plan) {
  Var ro("ro"), ri("ri");
  int lanes = int(plan.vector);
  int unroll = int(plan.unroll);
  out.split(r, ro, ri, int(plan.rowsPerTask), TailStrategy::GuardWithIf)
      .parallel(ro);
  Var wo("wo"), wi("wi");
  out.split(w, wo, wi, lanes * unroll, TailStrategy::GuardWithIf)
      .vectorize(wi, lanes);
  if (unroll > 1)
    out.unroll(wi);
  return ri;
}

void scheduleTokenRows(Func out, const target::CpuRowsPlan &plan) {
  Var d("d"), s("s"), b("b"), sb("sb");
  out.fuse(s, b, sb);
  scheduleRows(out, d, sb, plan);
}

void scheduleOutputRows(BuiltKernel &kernel, const KernelSpec &spec) {
  scheduleRows(kernel.output, Var("w"), Var("r"),
               spec.plan<target::CpuRowsPlan>());
}

namespace {
thread_local bool emulating = false;

} // namespace

bool emulatingGpu() { return emulating; }

GpuEmulation::GpuEmulation(bool on) : saved(emulating) { emulating = on; }
GpuEmulation::~GpuEmulation() { emulating = saved; }

void inRegisters(Func f) {
  if (!emulating)
    f.store_in(MemoryType::Register);
}

void scheduleGrid(Func out, Var w, Var r, int64_t width, int threads) {
  // Threads along w: the smallest power of two covering the width, at most
  // `threads`.
  int tx = int(std::min<uint64_t>(
      threads, std::max<uint64_t>(1, llvm::PowerOf2Ceil(uint64_t(width)))));
  int ty = std::max(1, threads / tx);
  Var wo("wo"), ro("ro"), wi("wi"), ri("ri");
  if (emulating)
    out.tile(w, r, wo, ro, wi, ri, tx, ty, TailStrategy::GuardWithIf);
  else
    out.gpu_tile(w, r, wo, ro, wi, ri, tx, ty, TailStrategy::GuardWithIf);
}

void gridOverRows(BuiltKernel &kernel, const KernelSpec &spec) {
  scheduleGrid(kernel.output, Var("w"), Var("r"), spec.width,
               int(spec.plan<target::GpuRowsPlan>().threads));
}

void gridOverTokens(BuiltKernel &kernel, const KernelSpec &spec) {
  Var d("d"), s("s"), b("b"), sb("sb");
  kernel.output.fuse(s, b, sb);
  scheduleGrid(kernel.output, d, sb, spec.width,
               int(spec.plan<target::GpuRowsPlan>().threads));
}

WeightInput::WeightInput(const KernelSpec &spec, const std::string &name)
    : type(spec.weightType),
      groupSize(type == WeightType::Int8 || type == WeightType::Int4
                    ? spec.group
                    : 0),
      blockBytes(type == WeightType::Int4   ? format::kInt4BlockBytes
                 : type == WeightType::Int8 ? format::int8BlockBytes(spec.group)
                                            : 0),
      panel(type == WeightType::F32 ? spec.weightPanel : 0),
      flushesSubnormals(spec.gpu()),
      values(type == WeightType::Int8   ? Int(8)
             : type == WeightType::Int4 ? UInt(8)
             : type == WeightType::BF16 ? BFloat(16)
                                        : Float(32),
             panel > 0 ? 3 : 2, name),
      scale(scaleFunc(name + "_scale")) {}

Func WeightInput::scaleFunc(const std::string &name) const {
  Var g("g"), row("row");
  Func f(name);
  if (blockBytes == 0)
    return f; // f32, bf16: no scales, left undefined
  // The block's first two bytes, a little-endian f16, widened with integer
  // operations (Halide 14 emulates every f16 -> f32 cast with a longer
  // sequence, and a select between the normal and subnormal cases cost
  // TinyLlama's int4 decode ~20 %): the half's exponent and mantissa moved
  // to f32's places read as 2^-112 times its magnitude, normal or
  // subnormal, so one strict multiply by 2^112 widens it, exactly. A
  // subnormal half passes through an f32 subnormal: the runtime clears the
  // FTZ/DAZ flags while CPU kernels run (ModelExecute.cpp); CUDA kernels
  // flush, so there a subnormal half is its mantissa times 2^-24 (a normal
  // f32). An infinite or NaN scale becomes an infinity (below).
  Expr first = g * int(blockBytes);
  auto byte = [&](Expr at) {
    return cast<uint32_t>(reinterpret<uint8_t>(values(at, row)));
  };
  Expr bits = byte(first) | (byte(first + 1) << 8);
  Expr sign = (bits & 0x8000) << 16, magnitude = bits & 0x7fff;
  // The exponent 31 (an infinity or a NaN) moves 128 further up, so that
  // the multiply overflows to an infinity of the scale's sign: a
  // non-finite scale gives non-finite values, as an f32 weight's does.
  Expr beyond = ((magnitude + 0x400) & 0x8000) << 15;
  Expr moved = reinterpret<float>(sign | ((magnitude << 13) + beyond));
  if (!flushesSubnormals) {
    f(g, row) = strict_float(moved * 0x1p112f);
  } else {
    Expr small = reinterpret<float>(
        sign | reinterpret<uint32_t>(cast<float>(magnitude) * 0x1p-24f));
    f(g, row) = select(magnitude < 0x400, small, moved * 0x1p112f);
  }
  return f;
}

std::vector<ImageParam> WeightInput::arguments() const { return {values}; }

Expr WeightInput::int8Value(Expr j, Expr g, Expr row) const {
  return values(g * int(blockBytes) + int(format::kBlockScaleBytes) + j, row);
}

Expr WeightInput::int4Nibble(Expr j, Expr g, Expr row) const {
  Expr bits = values(g * int(format::kInt4BlockBytes) +
                         int(format::kBlockScaleBytes) + j % 16,
                     row);
  return select(j >= 16, bits >> 4, bits & 15);
}

Expr WeightInput::widenedInGroup(Expr j, Expr g, Expr row) const {
  if (type == WeightType::Int4)
    // Zero-extended and converted as 32-bit lanes (an i16 detour costs two
    // more instructions a vector).
    return (cast<float>(cast<int32_t>(int4Nibble(j, g, row))) -
            float(format::kInt4Zero)) *
           scale(g, row);
  return cast<float>(int8Value(j, g, row)) * scale(g, row);
}

Expr WeightInput::widened(Expr k, Expr row, Expr group) const {
  if (type == WeightType::Int4 || type == WeightType::Int8) {
    if (!group.defined())
      group = k / int(groupSize);
    return widenedInGroup(k - group * int(groupSize), group, row);
  }
  if (panel > 0)
    return values(row % int(panel), k, row / int(panel));
  Expr value = values(k, row);
  if (type == WeightType::F32)
    return value;
  // bf16 is the upper half of an f32. Written out, since Halide 14's own
  // bf16 conversion crashes LLVM's PTX backend ("Copy one register into
  // another with a different width"); on x86 both give a zero-extend and a
  // shift.
  return reinterpret<float>(cast<uint32_t>(reinterpret<uint16_t>(value))
                            << 16);
}

} // namespace tfmc::codegen::kernels
