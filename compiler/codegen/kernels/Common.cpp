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
                : isKQuant(type) ? kKQuantGroup
                                 : 0),
      blockBytes(type == WeightType::Int4   ? format::kInt4BlockBytes
                 : type == WeightType::Int8 ? format::int8BlockBytes(spec.group)
                 : type == WeightType::Q4K  ? format::kQ4KBlockBytes
                 : type == WeightType::Q5K  ? format::kQ5KBlockBytes
                 : type == WeightType::Q6K  ? format::kQ6KBlockBytes
                                            : 0),
      panel(type == WeightType::F32 ? spec.weightPanel : 0),
      flushesSubnormals(spec.gpu()),
      values(type == WeightType::Int8   ? Int(8)
             : type == WeightType::Int4 || isKQuant(type) ? UInt(8)
             : type == WeightType::BF16 ? BFloat(16)
                                        : Float(32),
             panel > 0 ? 3 : 2, name),
      scale(scaleFunc(name + "_scale")),
      minimum(minimumFunc(name + "_min")) {}

Func WeightInput::scaleFunc(const std::string &name) const {
  Var g("g"), row("row");
  Func f(name);
  if (groupSize == 0)
    return f; // f32, bf16: no scales, left undefined
  if (isKQuant(type)) {
    f(g, row) = kQuantScale(g, row, /*minimum=*/false);
    return f;
  }
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
  f(g, row) = widenedHalf(first, row);
  return f;
}

Expr WeightInput::widenedHalf(Expr at, Expr row) const {
  auto byte = [&](Expr at) {
    return cast<uint32_t>(reinterpret<uint8_t>(values(at, row)));
  };
  Expr bits = byte(at) | (byte(at + 1) << 8);
  Expr sign = (bits & 0x8000) << 16, magnitude = bits & 0x7fff;
  // The exponent 31 (an infinity or a NaN) moves 128 further up, so that
  // the multiply overflows to an infinity of the scale's sign: a
  // non-finite scale gives non-finite values, as an f32 weight's does.
  Expr beyond = ((magnitude + 0x400) & 0x8000) << 15;
  Expr moved = reinterpret<float>(sign | ((magnitude << 13) + beyond));
  if (!flushesSubnormals)
    return strict_float(moved * 0x1p112f);
  Expr small = reinterpret<float>(
      sign | reinterpret<uint32_t>(cast<float>(magnitude) * 0x1p-24f));
  return select(magnitude < 0x400, small, moved * 0x1p112f);
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
  if (isKQuant(type))
    return kQuantInGroup(j, g, row);
  if (type == WeightType::Int4)
    // Zero-extended and converted as 32-bit lanes (an i16 detour costs two
    // more instructions a vector).
    return (cast<float>(cast<int32_t>(int4Nibble(j, g, row))) -
            float(format::kInt4Zero)) *
           scale(g, row);
  return cast<float>(int8Value(j, g, row)) * scale(g, row);
}

Func WeightInput::minimumFunc(const std::string &name) const {
  Var g("g"), row("row");
  Func f(name);
  if (type == WeightType::Q4K || type == WeightType::Q5K)
    f(g, row) = kQuantScale(g, row, /*minimum=*/true);
  return f; // left undefined but for q4_k and q5_k
}

// K-quants (support/WeightFormat.h) are walked in groups of 32 values: a
// q4_k or q5_k sub-block, half of a q6_k's 64-value quarter. The loader
// refuses no non-finite d or dmin (it would read every page of the file);
// widenedHalf makes such a half an infinity, so that the values it reaches
// are not finite.
Expr WeightInput::kQuantScale(Expr g, Expr row, bool minimum) const {
  const int bytes = int(blockBytes);
  auto byte = [&](Expr at) { return cast<int32_t>(values(at, row)); };
  if (type == WeightType::Q6K) {
    // g: a 16-value sub-block, whose scale is a signed byte.
    Expr base = (g / 16) * bytes;
    Expr scale = cast<int32_t>(reinterpret<int8_t>(
        values(base + int(format::kQ6KScalesOffset) + g % 16, row)));
    return strict_float(widenedHalf(base + int(format::kQ6KScaleOffset), row) *
                        cast<float>(scale));
  }
  // q4_k, q5_k: sub-block s's 6-bit scale and minimum (format::
  // kQuantScaleMin): bytes s and s + 4 of `scales`, and for s >= 4 the top
  // bits of bytes s - 4 and s.
  Expr base = (g / 8) * bytes, s = g % 8;
  Expr scales = base + int(format::kKQuantScalesOffset);
  Expr a = byte(scales + s), b = byte(scales + s + 4),
       c = byte(scales + max(s - 4, 0));
  Expr value = minimum ? select(s < 4, b & 63, (b >> 4) | ((a >> 6) << 4))
                       : select(s < 4, a & 63, (b & 15) | ((c >> 6) << 4));
  return strict_float(widenedHalf(base + (minimum ? 2 : 0), row) *
                      cast<float>(value));
}

Expr WeightInput::kQuantInGroup(Expr j, Expr g, Expr row) const {
  const int bytes = int(blockBytes);
  auto byte = [&](Expr at) { return cast<int32_t>(values(at, row)); };
  if (type == WeightType::Q6K) {
    // Group g is values 32c + j of half h of its super-block: the low
    // (c < 2) or high nibble of ql[64h + 32 (c % 2) + j], bits 2c .. 2c + 1
    // of qh[32h + j] above it, times its 16-value sub-block's scale.
    Expr base = (g / 8) * bytes, h = (g % 8) / 4, c = g % 4;
    Expr low = byte(base + 64 * h + 32 * (c % 2) + j);
    low = select(c >= 2, low >> 4, low & 15);
    Expr high =
        (byte(base + int(format::kQ6KHighBitsOffset) + 32 * h + j) >> (2 * c)) &
        3;
    // The sub-block of 16 is uniform across a vector of j (the schedules'
    // vectors are at most 16 lanes and start on whole vectors).
    Expr scale = select(j < 16, this->scale(2 * g, row), this->scale(2 * g + 1, row));
    return strict_float(scale * cast<float>((low | (high << 4)) - 32));
  }
  // q4_k, q5_k: value j of sub-block s = g % 8 is the low (s even) or high
  // nibble of qs[32 (s / 2) + j] (q5_k: bit s of qh[j] its fifth bit),
  // times its scale, less its minimum.
  Expr base = (g / 8) * bytes, s = g % 8;
  const int qs = int(type == WeightType::Q4K ? format::kQ4KValuesOffset
                                             : format::kQ5KValuesOffset);
  Expr q = byte(base + qs + 32 * (s / 2) + j);
  q = select(s % 2 == 1, q >> 4, q & 15);
  if (type == WeightType::Q5K)
    q = q + (((byte(base + int(format::kQ5KHighBitsOffset) + j) >> s) & 1) << 4);
  return strict_float(scale(g, row) * cast<float>(q) - minimum(g, row));
}

Expr WeightInput::widened(Expr k, Expr row, Expr group) const {
  if (type == WeightType::Int4 || type == WeightType::Int8 || isKQuant(type)) {
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
